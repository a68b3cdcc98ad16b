"""`python -m evaluator.harness ...`: the command line scripts and operators know, kept as an
alias of `python -m verifier.core.judge` now that the verifier is its own package."""
import sys

from verifier.core.judge import main

if __name__ == "__main__":
    sys.exit(main())

"""Placeholder while the judge is written: the in-process harness's command line."""
import sys

from verifier.harness import main

if __name__ == "__main__":
    sys.exit(main())

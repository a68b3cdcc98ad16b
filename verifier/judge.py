"""``python -m verifier.judge``: an alias of ``python -m verifier.core.judge`` until the next
release (verifier/CHANGELOG.md, 2.9.1), the command line the README documented before the
shipped modules became the package verifier/core/. It runs the judge's module as
``python -m verifier.core.judge`` does, its start-up included (the caller's environment dropped
before torch, the runner started early). Not shipped in bundles, whose verify.py runs the new
command; use that one.
"""
import runpy

if __name__ == "__main__":
    runpy.run_module("verifier.core.judge", run_name="__main__", alter_sys=True)

"""The project's own H200 re-verifications, as signed records that `make demo` imports
(docs/verification_records.md): build_records.py makes them from the raw results."""

"""Parsers for profiler output (ncu, torch.profiler, clang-tidy), with no Django imports.

They turn raw tool output into the structures the AI CUDA Engineer Archive stores in its
NCU_Profile, Torch_Profile and Clang_Tidy columns, so imported and re-measured profiles
look the same. Malformed input raises ValueError saying what was expected.
"""
from verifier.profile_parsers.clang_tidy import count_by_check, parse_clang_tidy_output
from verifier.profile_parsers.ncu import (
    parse_ncu_details_csv,
    parse_ncu_details_text,
    parse_ncu_raw_csv,
    parse_ncu_raw_csv_launches,
)
from verifier.profile_parsers.torch_profile import parse_torch_profile_table

__all__ = [
    "count_by_check",
    "parse_clang_tidy_output",
    "parse_ncu_details_csv",
    "parse_ncu_details_text",
    "parse_ncu_raw_csv",
    "parse_ncu_raw_csv_launches",
    "parse_torch_profile_table",
]

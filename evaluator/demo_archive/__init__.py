"""The project's own demo archive: kernels the team wrote for a handful of KernelBench-style
tasks (honest slow and fast ones, and some of the cheat suite's cheats), with claims from a
naive KernelBench-style evaluator and re-measurements by the harness.  See docs/demo_archive.md."""

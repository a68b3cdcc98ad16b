"""The verifier: decides whether a machine-generated kernel is correct and how fast it is, and
catches the known ways kernels fake either. No Django here (docs/harness.md).

``core/`` is the verifier itself: what every verification bundle ships and what the worker runs
(``python -m verifier.core.judge``), hashed into ``versions.harness_sha256``. The rest of this
package is the site's tooling around it: bundle making (bundle.py; bundle_script.py, which a
bundle holds as its verify.py; bundle_run.py), the cheat suite and its campaign driver
(cheat_suite/, gpu_campaign.py), the profilers (ncu_profile.py, profile_driver.py, gpu_binary.py,
profile_parsers/) and the lint (clang_tidy_run.py); judge.py is the old command's alias.

This file ships beside core/, so that the package imports in a bundle, and is hashed with it: it
imports nothing.
"""

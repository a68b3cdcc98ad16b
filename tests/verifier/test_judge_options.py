"""The judge's command line (verifier/core/judge_options.py): seeds from --seed and --seeds, and a
malformed --seeds refused as a usage error naming it, before anything is built or run."""
import pytest

from verifier.core import judge_options


def _options(*argv):
    args = judge_options.parse(["--reference", "task.py", "--candidate", "kernel.cpp", *argv])
    return judge_options.from_args(args, candidate_src="", cuda_available=lambda: False)


def test_seeds_from_both_flags_in_order():
    assert _options("--seed", "7", "--seeds", "3, 4,").seeds == (7, 3, 4)
    assert _options().seeds == ()


@pytest.mark.parametrize("bad", ["1,x", "1.5", "seven"])
def test_a_malformed_seeds_list_is_a_usage_error_naming_it(bad, capsys):
    with pytest.raises(SystemExit) as exited:  # what judge.main's first step does with it
        _options("--seeds", bad)
    assert exited.value.code == 2
    assert "argument --seeds: comma-separated integers expected, got %r" % bad in capsys.readouterr().err

"""gpu_campaign's --only: the entries a GPU call runs, by name and by group, so that a call's
command names a whole part of the suite (`:timed`, `:untimed,-name`) instead of listing 25 names."""
import pytest

from verifier import gpu_campaign

ENTRIES = [{"name": "honest_a", "honest": True, "timing": True}, {"name": "cheat_b"},
           {"name": "attack_c", "attack": True, "timing": True}, {"name": "attack_d", "attack": True}]


def names(only):
    return [e["name"] for e in gpu_campaign.select(ENTRIES, only)]


def test_names_and_groups_select_in_the_manifests_order():
    assert names(None) == names("") == ["honest_a", "cheat_b", "attack_c", "attack_d"]
    assert names("attack_d,honest_a") == ["honest_a", "attack_d"]
    assert names(":timed") == ["honest_a", "attack_c"]
    assert names(":untimed") == ["cheat_b", "attack_d"]
    assert names(":attack,honest_a") == ["honest_a", "attack_c", "attack_d"]


def test_a_minus_leaves_an_entry_or_a_group_out():
    assert names(":timed,-honest_a") == ["attack_c"]
    assert names("-:attack") == ["honest_a", "cheat_b"]
    assert names(":untimed,-:attack") == ["cheat_b"]


def test_a_name_the_manifest_lacks_is_an_error():
    with pytest.raises(SystemExit, match="'nonesuch'"):
        gpu_campaign.select(ENTRIES, "honest_a,nonesuch")


def test_the_groups_split_the_real_manifest_between_them():
    cuda = [e for e in gpu_campaign.load_manifest() if "cuda" in e["devices"]]
    timed, untimed = gpu_campaign.select(cuda, ":timed"), gpu_campaign.select(cuda, ":untimed")
    assert len(timed) + len(untimed) == len(cuda) and timed and untimed
    assert not {e["name"] for e in timed} & {e["name"] for e in untimed}

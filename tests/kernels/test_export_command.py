"""manage.py export_dataset: filters, --archive-compatible, the card, atomic re-runs, and
--push-to-hub without a token."""
import datasets
import pandas as pd
import pytest
import yaml
from django.core.management import CommandError, call_command

from kernels.export import services
from kernels.export.schema import column_names

from .export_support import import_sample

pytestmark = pytest.mark.django_db


@pytest.fixture
def sample(archive_path, archive_rows):
    """The test archive imported; its rows."""
    import_sample(archive_path)
    return archive_rows


def export(out, *options):
    call_command("export_dataset", str(out), "--no-progress", *options)


def front_matter(card_text: str) -> dict:
    assert card_text.startswith("---\n")
    return yaml.safe_load(card_text.split("---\n")[1])


def test_level_and_correct_only_filters(tmp_path, sample):
    out = tmp_path / "l2"
    export(out, "--format", "parquet", "--level", "2", "--correct-only")
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "level_2.parquet"]
    frame = pd.read_parquet(out / "level_2.parquet")
    level_2 = [r for r in sample if r["Level_ID"] == 2]
    assert len(frame) == sum(r["Correct"] for r in level_2) < len(level_2)
    assert frame.Correct.all() and (frame.Level_ID == 2).all()


def test_archive_compatible_drops_the_sites_columns(tmp_path, sample):
    export(tmp_path / "plain", "--archive-compatible")
    export(tmp_path / "extended")
    plain = datasets.load_from_disk(str(tmp_path / "plain"))
    extended = datasets.load_from_disk(str(tmp_path / "extended"))
    assert plain["level_1"].column_names == column_names(archive_compatible=True)
    assert len(plain["level_1"].column_names) == 19
    assert extended["level_1"].column_names[:19] == plain["level_1"].column_names
    assert {"Kernel_ID", "Source_Archive", "Technique_Tags", "Verified", "Verification_Flags"} <= set(
        extended["level_1"].column_names)
    assert extended["level_1"][0]["Source_Archive"] == "sakana_sample"


def test_the_card_has_front_matter_splits_features_and_citations(tmp_path, sample):
    export(tmp_path / "hf")
    card = (tmp_path / "hf" / "README.md").read_text()
    meta = front_matter(card)
    assert meta["license"] == "cc-by-4.0"
    assert meta["configs"][0]["data_files"] == [
        {"split": f"level_{n}", "path": f"level_{n}/*.arrow"} for n in (1, 2, 3)]
    assert meta["dataset_info"]["splits"] == [
        {"name": f"level_{n}", "num_examples": sum(r["Level_ID"] == n for r in sample)} for n in (1, 2, 3)]
    assert [f["name"] for f in meta["dataset_info"]["features"]] == column_names(archive_compatible=False)
    assert "SakanaAI/AI-CUDA-Engineer-Archive" in card and "@article{lange2025aicudaengineer" in card
    assert "How the numbers were measured" in card and "`Verification_Flags`" in card
    assert f"- `sakana_sample`: {len(sample)} kernels" in card


def test_a_rerun_replaces_the_previous_export_and_leaves_nothing_behind(tmp_path, sample):
    out = tmp_path / "exports" / "export"
    export(out, "--format", "jsonl")
    export(out, "--format", "jsonl", "--level", "1")
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "level_1.jsonl"]
    assert [p.name for p in out.parent.iterdir()] == ["export"]  # no staging folder left


def test_a_failed_export_leaves_the_previous_one_untouched(tmp_path, sample, monkeypatch):
    out = tmp_path / "exports" / "export"
    export(out, "--format", "parquet")
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken_disk(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(services, "write_split_file", broken_disk)
    with pytest.raises(OSError, match="disk full"):
        export(out, "--format", "parquet", "--correct-only")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in out.parent.iterdir()] == ["export"]  # no staging folder left


def test_a_folder_that_is_not_an_export_is_never_replaced(tmp_path, sample):
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(CommandError, match="refusing to replace"):
        export(precious)
    assert [p.name for p in precious.iterdir()] == ["thesis.tex"]


def test_push_to_hub_without_a_token_fails_clearly_before_exporting(tmp_path, sample, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(services, "hub_token", lambda: None)
    monkeypatch.setattr("kernels.management.commands.export_dataset.hub_token", lambda: None)
    with pytest.raises(CommandError, match="HF_TOKEN"):
        export(tmp_path / "out", "--push-to-hub", "someone/kernels")
    assert not (tmp_path / "out").exists()
    with pytest.raises(services.HubPushError, match="HF_TOKEN"):
        services.push_export_to_hub(folder=tmp_path, repo_id="someone/kernels")


def test_progress_bar_and_summary(tmp_path, sample, capsys):
    call_command("export_dataset", str(tmp_path / "out"), "--format", "csv")
    captured = capsys.readouterr()
    n, level_3 = len(sample), sum(r["Level_ID"] == 3 for r in sample)
    assert f"{n}/{n}" in captured.err
    assert f"wrote {n} kernels as csv" in captured.out and f"level_3: {level_3}\n" in captured.out


def test_a_level_below_one_is_refused(tmp_path, sample):
    with pytest.raises(CommandError, match="level must be at least 1"):
        export(tmp_path / "out", "--level", "0")
    assert not (tmp_path / "out").exists()

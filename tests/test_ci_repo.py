"""`codeparse check` on a repository of model files as a project keeps them
(fixtures/repo, made by fixtures/generate_repo.py with real torch): what a CI user reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codeparse.cli import main

ROOT = Path(__file__).resolve().parent.parent
REPO = ROOT / "fixtures" / "repo"
CONFIGS = ["configs/train.yaml", "configs/model.json", "configs/sweep.toml", "train.py"]


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A copy of fixtures/repo as the working directory (the project root)."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy)
    monkeypatch.chdir(copy)
    return copy


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def reports(capsys, *args) -> tuple[int, dict[str, list[dict]]]:
    code, out, _ = run(capsys, "check", *args, "--output-format", "jsonl")
    found = {}
    for line in out.splitlines():
        item = json.loads(line)
        found[item["path"]] = item["findings"]
    return code, found


# ------------------------------------------------------- files named on the command line


def test_named_config_files_are_skipped_with_a_note_as_a_walk_skips_them(capsys, repo):
    code, out, err = run(capsys, "check", *CONFIGS)
    assert code == 0 and "CP101" not in out
    assert all(f"{name}: neither a model file nor TorchScript text; skipped" in err for name in CONFIGS)
    code, found = reports(capsys, *CONFIGS, "checkpoints/state_dict.pt", "models/classifier.script.pt")
    assert code == 0 and list(found) == ["checkpoints/state_dict.pt", "models/classifier.script.pt"]


def test_a_named_torchscript_text_is_checked_and_the_pre_commit_hook_stays_silent(capsys, repo):
    code_text = ROOT / "fixtures" / "archive_code" / "custom_model.script" / "__torch__.py"
    code, out, err = run(capsys, "check", code_text, "train.py", "--output-format", "jsonl")
    assert [(json.loads(line)["path"], json.loads(line)["kind"]) for line in out.splitlines()] \
        == [(str(code_text), "code")] and code == 0
    assert err == "codeparse: note: train.py: neither a model file nor TorchScript text; skipped\n"
    # the pre-commit hook passes every file: decided as a walk decides, without notes
    code, out, err = run(capsys, "check", "--skip-other", *CONFIGS, "-q")
    assert (code, out, err) == (0, "", "")


# ------------------------------------------------------------------ clean files are silent

CLEAN = ["checkpoints/state_dict.pt", "data/vocab.pkl", str(ROOT / "fixtures" / "files" / "exported.pt2")]


def test_clean_files_are_silent_in_table_concise_and_github(capsys, repo):
    code, out, err = run(capsys, "check", *CLEAN)
    assert (code, out, err) == (0, "3 input(s): 0 error(s), 0 warning(s), 3 info; fail on error; exit 0\n", "")
    for fmt in ("concise", "github"):
        assert run(capsys, "check", *CLEAN, "--output-format", fmt) == (0, "", "")
    # what each file is stays in JSON and in --statistics
    code, found = reports(capsys, *CLEAN)
    assert [[f["code"] for f in findings] for findings in found.values()] == [["CP323"], ["CP324"], ["CP325"]]
    code, out, _ = run(capsys, "check", *CLEAN, "--statistics")
    assert [line.split()[:2] for line in out.splitlines()] == [["1", "CP323"], ["1", "CP324"], ["1", "CP325"]]
    # a file with a finding beside its kind still shows that finding, and only that
    code, out, _ = run(capsys, "check", "misc/evil.pkl", "--output-format", "concise")
    assert code == 1 and [line.split()[1] for line in out.splitlines()] == ["CP330"]


# ----------------------------------------------------------------- short names in messages


def test_messages_name_types_short_and_json_keeps_the_full_names(capsys, repo):
    code, found = reports(capsys, "models/classifier.script.pt", "models/encoder.script.pt", "--include-library")
    findings = [f for fs in found.values() for f in fs]
    assert len(findings) > 100 and not [f["message"] for f in findings if "__torch__" in f["args"].get("sources", "")]
    assert not [f["message"] for f in findings if "___torch_mangle" in f["message"]]
    branch = next(f for f in found["models/classifier.script.pt"] if f["code"] == "CP201")
    assert "depends on self.block (BasicBlock), self.stem (Conv2d), x (Tensor), self.block.bn (BatchNorm2d)" \
        in branch["message"]
    full = {s["ref"]: s["type"] for s in branch["sources"]}
    assert full["self.block"] == "__torch__.BasicBlock"
    assert full["self.stem"].startswith("__torch__.torch.nn.modules.conv.") and full["self.stem"].endswith(".Conv2d")

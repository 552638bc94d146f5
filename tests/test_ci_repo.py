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


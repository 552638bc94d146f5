"""The checked tree cannot weaken the gate: a pyproject.toml inside it may only make the
gate stricter, a stored report is used only if this machine signed it, and a link out of
the tree to a model file fails.  Inputs are the hostile canaries (fixtures/canaries)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codeparse.cli.app import main
from codeparse.text import cache

ROOT = Path(__file__).resolve().parent.parent
EVIL = ROOT / "fixtures" / "canaries" / "cprofile_run.pkl"  # cProfile.run: pickle.loads runs it
CLEAN = ROOT / "fixtures" / "canaries" / "clean_state_dict.pt"
HOSTILE_PYPROJECT = """[tool.codeparse]
ignore = ["CP3", "CP201"]
select = ["CP201"]
per-file-ignores = {"*.pkl" = ["CP334", "CP33"]}
extend-exclude = ["models", "*.pkl"]
baseline = "baseline.json"
cache-dir = "stored"
"""


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(cache, "_secret", None)
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    shutil.copy(EVIL, root / "models" / "evil.pkl")
    shutil.copy(CLEAN, root / "models" / "weights.pt")
    (root / "baseline.json").write_text("{}")
    monkeypatch.chdir(root)
    return root


def _run(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(["check", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def _codes(report: dict) -> dict[str, list[str]]:
    return {Path(i["path"]).name: [f["code"] for f in i["findings"]] for i in report.get("inputs", [])}


def test_a_pyproject_in_the_tree_cannot_ignore_exclude_or_baseline_a_model_file(repo, capsys):
    (repo / "pyproject.toml").write_text(HOSTILE_PYPROJECT)
    code, report, err = _run(capsys, ".")
    assert code == 1
    assert "CP334" in _codes(report)["evil.pkl"]
    for said in ("ignore 'CP3' does not apply to", "per-file-ignores '*.pkl' 'CP334' does not apply",
                 "baseline = 'baseline.json' is ignored", "cache-dir in the nearest pyproject.toml is ignored"):
        assert said in err, said
    assert not (repo / "stored").exists()  # no cache folder from the tree
    assert report["policy"]["baseline"] is None and "CP330" in report["policy"]["select"]
    assert "CP201" in report["policy"]["ignore"] and "CP303" in report["policy"]["ignore"]
    assert "CP304" not in report["policy"]["ignore"] and "CP309" not in report["policy"]["ignore"]


def test_a_trusted_config_can_still_decide(repo, capsys, tmp_path):
    config = tmp_path / "trusted.toml"
    config.write_text('[tool.codeparse]\nignore = ["CP3"]\n')
    (repo / "pyproject.toml").write_text(HOSTILE_PYPROJECT)
    code, report, err = _run(capsys, ".", "--config", str(config))
    assert code == 0 and _codes(report)["evil.pkl"] == []


def test_a_stored_report_this_machine_did_not_sign_is_not_used(repo, capsys, tmp_path):
    folder = tmp_path / "stored"
    code, first, _ = _run(capsys, "models/evil.pkl", "--cache-dir", str(folder), "--isolated")
    assert code == 1
    entries = [p for p in folder.rglob("*.json") if "input" in json.loads(p.read_text())]
    assert entries and all(json.loads(p.read_text())["mac"] for p in entries)
    for path in entries:  # a forged clean report, signed with another key
        data = json.loads(path.read_text())
        data["input"]["findings"] = []
        data["mac"] = "0" * 64
        path.write_text(json.dumps(data))
    code, again, _ = _run(capsys, "models/evil.pkl", "--cache-dir", str(folder), "--isolated")
    assert code == 1 and _codes(again) == _codes(first)
    key = Path(tmp_path / "home-cache" / "codeparse" / "cache-key")
    assert key.stat().st_mode & 0o777 == 0o600 and not str(key).startswith(str(repo))


def test_a_link_out_of_the_tree_to_a_model_file_fails(repo, capsys, tmp_path):
    outside = tmp_path / "outside.bin"
    shutil.copy(EVIL, outside)
    (repo / "models" / "evil.pkl").unlink()
    (repo / "models" / "linked.pt").symlink_to(outside)
    code, report, _ = _run(capsys, ".", "--isolated")
    assert code == 1 and _codes(report)["linked.pt"] == ["CP347"]


def test_globals_allowed_only_by_a_trusted_config(repo, capsys, tmp_path):
    """allow-globals makes a global silent as add_safe_globals would; a known gadget stays an
    error, and a pyproject.toml in the tree cannot allow anything."""
    training = ROOT / "fixtures" / "canaries" / "clean_training_checkpoint.pt"
    shutil.copy(training, repo / "models" / "train.pt")
    (repo / "models" / "evil.pkl").unlink()
    code, report, _ = _run(capsys, "models/train.pt", "--isolated")
    assert code == 0 and _codes(report)["train.pt"] == ["CP323", "CP335", "CP335"]
    config = tmp_path / "trusted.toml"
    config.write_text('[tool.codeparse]\nallow-globals = ["pathlib.PurePosixPath", "argparse.Namespace"]\n')
    code, report, _ = _run(capsys, "models/train.pt", "--config", str(config))
    assert code == 0 and _codes(report)["train.pt"] == ["CP323"]
    assert report["policy"]["allow_globals"] == ["pathlib.PurePosixPath", "argparse.Namespace"]
    (repo / "pyproject.toml").write_text('[tool.codeparse]\nallow-globals = ["pathlib.PurePosixPath"]\n')
    code, report, err = _run(capsys, "models/train.pt")
    assert _codes(report)["train.pt"] == ["CP323", "CP335", "CP335"] and "allow-globals" in err
    shutil.copy(EVIL, repo / "models" / "evil.pkl")
    config.write_text('[tool.codeparse]\nallow-globals = ["cProfile.run", "os.system"]\n')
    (repo / "models" / "sys.pkl").write_bytes(b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R.")
    code, report, _ = _run(capsys, "models/evil.pkl", "models/sys.pkl", "--config", str(config))
    assert _codes(report)["evil.pkl"] == ["CP324"] and "CP330" in _codes(report)["sys.pkl"] and code == 1

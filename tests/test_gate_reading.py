"""What the gate reads of a file is what the loaders read: every pickle of a stream, whatever
the first one held; a pyproject.toml in the checked tree cannot turn reading off.  The files
are built here byte by byte (the helpers of scripts/make_canaries.py); the torch-marked
tests load them with the real loaders, in a subprocess, and see the canary appear."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codeparse.cli.app import main
from codeparse.text import cache

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import make_canaries as mk  # noqa: E402

EVIL = mk.pk(mk.call(mk.g("cProfile", "run"), mk.s(mk.PY)))
SYSTEM = mk.pk(mk.call(mk.g("os", "system"), mk.s(mk.SH)))


def _check(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["check", *argv, "--format", "json"])
    out, _err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}


def _codes(report: dict) -> dict[str, list[str]]:
    return {Path(i["path"]).name: [f["code"] for f in i["findings"]] for i in report.get("inputs", [])}


def _fires(path: Path, loader: str) -> bool:
    return mk.run_loaders([path], timeout=60.0, loaders=(loader,))[str(path)][loader]


# --------------------------------------------------------------------------- streams

def underscore_magic_stream() -> bytes:
    """The legacy stream whose magic number is a protocol 0 LONG spelled with an underscore
    (``int()`` reads it), the object pickle calling os.system."""
    digits = str(mk.MAGIC)
    magic = b"L" + (digits[0] + "_" + digits[1:]).encode() + b"L\n."
    return magic + b"M\xe9\x03." + b"}." + SYSTEM + b"]."


def test_a_legacy_stream_with_the_magic_number_spelled_otherwise_is_walked_whole(tmp_path, capsys):
    path = tmp_path / "underscore.pt"
    path.write_bytes(underscore_magic_stream())
    code, report = _check(capsys, str(path), "--isolated")
    assert code == 1
    assert "CP330" in _codes(report)["underscore.pt"]
    assert [p["entry"] for p in report["inputs"][0]["pickles"]] == [
        "underscore.pt", "underscore.pt#1", "underscore.pt#2", "underscore.pt#3", "underscore.pt#4"]


@pytest.mark.parametrize("first", [b"N.", b"K\x01.", b"\x80\x02}q\x00."])
def test_pickles_after_the_first_are_walked_whatever_it_held(tmp_path, capsys, first):
    path = tmp_path / "stream.pkl"
    path.write_bytes(first + EVIL)
    code, report = _check(capsys, str(path), "--isolated")
    assert code == 1 and "CP334" in _codes(report)["stream.pkl"]


def test_a_clean_stream_after_the_first_pickle_still_passes(tmp_path, capsys):
    path = tmp_path / "clean.pt"
    path.write_bytes(mk.legacy_stream(mk.CLEAN_DICT, mk.pk(b"]")))
    code, report = _check(capsys, str(path), "--isolated")
    assert code == 0 and _codes(report)["clean.pt"] == ["CP323"]


@pytest.mark.torch
def test_torch_load_runs_the_underscore_magic_stream(tmp_path, capsys):
    path = tmp_path / "underscore.pt"
    path.write_bytes(underscore_magic_stream())
    assert _fires(path, "torch_load")
    assert main(["check", str(path), "--isolated"]) == 1
    capsys.readouterr()


# ------------------------------------------------------------------ the tree's pyproject

@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(cache, "_secret", None)
    root = tmp_path / "tree"
    root.mkdir()
    (root / "model.pkl").write_bytes(SYSTEM)
    (root / "model.pt").write_bytes(mk.raw_zip(mk._checkpoint_entries(SYSTEM, root="model")))
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize("ignore", [
    'ignore = ["CP309"]',
    'ignore = ["CP30", "CP31"]',
    'per-file-ignores = {"*" = ["CP309", "CP344"]}',
    'select = ["CP2"]',
])
def test_a_tree_that_lowers_a_limit_cannot_hide_what_it_left_unread(tree, capsys, ignore):
    (tree / "pyproject.toml").write_text(f"[tool.codeparse]\nmax-entry-bytes = 16\n{ignore}\n")
    code, report = _check(capsys, ".")
    codes = _codes(report)
    assert code == 1
    assert "CP309" in codes["model.pkl"] and "CP309" in codes["model.pt"]


@pytest.mark.parametrize("code", ["CP308", "CP309", "CP310", "CP311", "CP312", "CP313", "CP344"])
def test_the_reading_limit_codes_are_safety_codes(tmp_path, code):
    from codeparse.gate.policy import load_policy

    path = tmp_path / "pyproject.toml"
    path.write_text(f'[tool.codeparse]\nignore = ["{code}"]\nper-file-ignores = {{"*" = ["{code}"]}}\n')
    notes: list[str] = []
    policy = load_policy(path, trusted=False, notes=notes)
    assert code not in policy.ignore and code not in policy.per_file_ignores["*"]
    assert any(code in note for note in notes)
    assert code in load_policy(path, trusted=True).ignore  # a trusted --config FILE still may


def test_the_tree_cannot_raise_a_limit(tree, capsys):
    (tree / "pyproject.toml").write_text("[tool.codeparse]\nmax-entry-bytes = 999999999999\n")
    code, report = _check(capsys, ".")
    assert code == 1 and report["policy"]["max_entry_bytes"] < 999999999999


@pytest.mark.torch
def test_the_tree_pickles_run_under_the_loaders(tree):
    assert _fires(tree / "model.pkl", "pickle")
    assert _fires(tree / "model.pt", "torch_load")


"""The library face of codeparse: typed, documented in one screen, every public
return type importable from `codeparse`, no private parameters, no hidden pyproject reads."""

from __future__ import annotations

import inspect
import subprocess
import sys
import tomllib
from pathlib import Path

import codeparse
from codeparse.contract.check import Policy

ROOT = Path(__file__).resolve().parent.parent
CUSTOM = ROOT / "fixtures" / "archives" / "custom_model.script.pt"


def test_typed_package_and_license_matching_the_metadata():
    assert (ROOT / "codeparse" / "py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "BSD-3-Clause" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License\n")


def test_help_is_short_and_names_the_entry_points():
    doc = codeparse.__doc__
    assert len(doc.splitlines()) <= 15
    for name in ("parse_text", "open_archive", "check", "diff", "capture", "from_module", "codeparse rule"):
        assert name in doc


def test_every_public_return_type_is_exported_lazily():
    names = ["Report", "InputReport", "Finding", "Policy", "Archive", "Branch", "CodeFile", "DiffReport",
             "CaptureReport", "PickleReport", "SourceLocation", "ModuleNode", "OperatorUse", "OperatorInfo"]
    for name in names:
        assert name in codeparse.__all__ and isinstance(getattr(codeparse, name), type), name
    code = ("import sys, codeparse; assert 'codeparse.trace.capture' not in sys.modules; "
            "codeparse.CaptureReport; assert 'codeparse.trace.capture' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


def test_no_private_parameters_in_public_signatures():
    for name in codeparse.__all__:
        value = getattr(codeparse, name)
        if inspect.isfunction(value):
            private = [p for p in inspect.signature(value).parameters if p.startswith("_")]
            assert not private, (name, private)


def test_check_reads_pyproject_only_when_asked(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.codeparse]\nignore = ["CP201"]\n')
    monkeypatch.chdir(tmp_path)
    codes = lambda report: {f.code for f in report.inputs[0].findings}  # noqa: E731
    assert "CP201" in codes(codeparse.check([CUSTOM]))
    assert "CP201" not in codes(codeparse.check([CUSTOM], pyproject=True))
    assert "CP201" not in codes(codeparse.check([CUSTOM], pyproject=tmp_path / "pyproject.toml"))
    assert codeparse.check([CUSTOM]).policy == Policy()


def test_branch_has_resolved_condition_and_sources():
    archive = codeparse.open_archive(CUSTOM)
    branch = next(b for b in archive.branches if b.condition == "torch.eq(branch_testing, True)")
    assert branch.resolved == "torch.eq(self.branch_testing, True)"
    assert [(s.ref, s.kind, s.type) for s in branch.sources] == [("self.branch_testing", "attribute", "bool")]

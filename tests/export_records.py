"""Shared by the tests that compare ``check --target export`` with a record of real
``torch.export.export`` runs (``tests/test_export_nn.py``, ``tests/test_export_paths.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BLOCKING = {"CP401", "CP402", "CP405"}


def lines(finding) -> set[tuple[str, int]]:
    """The original lines a finding names: its origin and its related lines."""
    out = {(r.path, r.line) for r in finding.related}
    if finding.origin is not None:
        out.add((finding.origin.path, finding.origin.line))
    return out


def blocking(item) -> list:
    """An input's CP401/CP402/CP405 findings, conditional ones included."""
    return [f for f in item.findings if f.code in BLOCKING]


def predicted_at(item, path: str, line: int) -> bool:
    """A blocking finding of ``item`` names ``path:line``."""
    return any((path, line) in lines(f) for f in blocking(item))


def recorder(name: str):
    """The recording script ``fixtures/<name>.py``, loaded as a module (it needs torch only
    when run)."""
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

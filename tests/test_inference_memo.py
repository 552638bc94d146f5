"""What inference skips gives the answers a full reading gives.

Over every code text of ``fixtures/text`` (printed by torch): the definitions
:meth:`~codeparse.infer.datadep.FunctionDataDependence.mutated_in_place` leaves unread (no
in-place call can be in their text) hold no in-place write.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import codeparse
from codeparse.infer import datadep
from codeparse.infer.datadep import FunctionDataDependence
from codeparse.text import extract

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted((ROOT / "fixtures" / "text").glob("*/script.code"))


@pytest.fixture(scope="module")
def inferences() -> list:
    """The Inference of every function of every fixture text, after its file is parsed."""
    made: list = []
    real = extract.Inference

    def keep(*args):
        inf = real(*args)
        made.append(inf)
        return inf

    extract.Inference = keep
    try:
        for path in TEXTS:
            codeparse.parse_file(path, as_dict=True)
    finally:
        extract.Inference = real
    return made


def test_the_definitions_left_unread_hold_no_in_place_write(inferences, monkeypatch):
    skipped = found = 0
    for inf in inferences:
        may_write = datadep._writer_finder(inf.sem, inf.reader.max_depth)
        skipped += sum(1 for defs in inf.facts.defs.values() for d in defs
                       if d.value is not None and not may_write(inf.text, *d.value))
        quick = FunctionDataDependence(inf).mutated_in_place()
        with monkeypatch.context() as m:
            m.setattr(datadep, "_writer_finder", lambda sem, depth: lambda text, start, end: True)
            full = FunctionDataDependence(inf).mutated_in_place()
        assert quick == full, inf.facts.owner
        found += len(full)
    assert skipped > 1000  # most definitions are no in-place call
    assert found >= 7  # `running_mean.add_`, `torch.add_(num_batches_tracked, 1)`, `_set_item`...

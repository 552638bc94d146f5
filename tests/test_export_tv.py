"""``check --target export`` on torchvision's detection models, against what ``torch.export``
really did with them (``fixtures/tv_detection/record.json``, written by
``fixtures/record_tv_detection.py`` with torch 2.14.1 and torchvision 0.29.1 in a second
environment: the package's own torch stays pinned, so no test here re-runs them).

Every model fails export on a data-dependent guard; the first failure's site must carry
a blocking finding (CP401/CP402/CP405) at that line; and where ``draft_export`` listed every
failure, the blocking findings that sit within two lines of one are counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import codeparse
from codeparse.gate.policy import policy_with
from export_records import blocking, lines, predicted_at

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "fixtures" / "tv_detection"
RECORD = json.loads((FOLDER / "record.json").read_text(encoding="utf-8"))
CASES = sorted(RECORD["cases"])
EXPORT = policy_with(codeparse.Policy(), target="export")


@pytest.fixture(scope="module")
def reports():
    report = codeparse.check([str(FOLDER / RECORD["cases"][c]["archive"]) for c in CASES], EXPORT)
    return dict(zip(CASES, report.inputs))


def test_every_first_failure_site_carries_a_blocking_finding(reports):
    missed = []
    for case in CASES:
        rec = RECORD["cases"][case]["export"]
        assert not rec["ok"] and rec["data_dependent"], case
        frame = rec["frame"]
        if not predicted_at(reports[case], frame["path"], frame["line"]):
            missed.append((case, frame["path"], frame["line"]))
        assert reports[case].export.verdict == "blocked", case
    assert missed == []


def test_blocking_findings_near_draft_export_failures(reports):
    """Where draft_export listed every failure: how many blocking findings sit within two
    lines of one (the figures the export guide quotes).  ``draft_export`` ran one example
    (an image, no targets, the eval model), so it lists the failures of that call; a
    conditional finding (a warning: "export fails only for calls that take that branch",
    such as the degenerate-box check under ``if targets is not None``) is a claim about other
    calls, counted apart from those the verdict rests on (errors)."""
    near = total = near_certain = certain = 0
    for case in CASES:
        draft = RECORD["cases"][case]["draft"]
        if not draft["complete"]:
            continue
        sites = {(f["frame"]["path"], f["frame"]["line"]) for f in draft["failures"] if f["frame"]}
        for f in blocking(reports[case]):
            hit = any(p == sp and abs(n - sn) <= 2 for p, n in lines(f) for sp, sn in sites)
            total += 1
            near += hit
            if f.severity == "error":
                certain += 1
                near_certain += hit
    assert {"all": (near, total), "certain": (near_certain, certain)} == FIGURES
    assert near_certain * 5 >= certain * 4  # at least four in five of those the verdict rests on


FIGURES = {"all": (16, 38), "certain": (16, 20)}

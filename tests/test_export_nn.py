"""``check --target export`` against what ``torch.export.export`` really does with every
scriptable ``torch.nn`` class.

``fixtures/nn_export/record.json`` (``fixtures/record_nn_export.py``) records, per class
(and a few variants with other saved attribute values), each ordinary input's export:
ok, or the exception and the innermost ``torch/nn/`` frame of the failure.  The archives
beside it are the same modules scripted and saved.  Two promises are checked here:

* no ``blocked`` verdict where torch exports some ordinary input;
* every real data-dependent failure is predicted at its line (a CP401/CP402/CP405 whose
  origin or related line is the failure's frame, conditional ones included).

The disagreements that remain are listed by name (``KNOWN_*``): the test fails when one
is mended without the list being shortened, as when a new one appears.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import codeparse
from codeparse.gate.policy import policy_with
from export_records import blocking as _blocking, predicted_at, recorder

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "fixtures" / "nn_export"
RECORD = json.loads((FOLDER / "record.json").read_text(encoding="utf-8"))
CASES = sorted(c for c, v in RECORD["cases"].items() if v["archive"])
EXPORT = policy_with(codeparse.Policy(), target="export")

# Blocked where torch exports: a blocker codeparse finds on a path no ordinary input takes.
KNOWN_BLOCKED_WHERE_TORCH_EXPORTS: set[str] = set()
# Real data-dependent failures no blocking finding names at their line: (case, input).
KNOWN_MISSED: set[tuple[str, str]] = set()


@pytest.fixture(scope="module")
def reports():
    report = codeparse.check([str(FOLDER / RECORD["cases"][c]["archive"]) for c in CASES], EXPORT)
    return dict(zip(CASES, report.inputs))


def measure(reports) -> dict:
    inputs = ok = failed = data_dependent = predicted = 0
    blocked_where_exports, missed = set(), set()
    for case in CASES:
        rec = RECORD["cases"][case]
        item = reports[case]
        exported = False
        for label, got in rec["inputs"].items():
            inputs += 1
            if got["ok"]:
                ok += 1
                exported = True
                continue
            failed += 1
            if got["data_dependent"]:
                data_dependent += 1
                frame = got["frame"]
                if frame is not None and predicted_at(item, frame["path"], frame["line"]):
                    predicted += 1
                else:
                    missed.add((case, label))
        if exported and item.export.verdict == "blocked":
            blocked_where_exports.add(case)
    return {"cases": len(CASES), "classes": len({RECORD["cases"][c]["class"] for c in CASES}), "inputs": inputs,
            "ok": ok, "failed": failed, "data_dependent": data_dependent, "predicted_at_line": predicted,
            "blocked_where_torch_exports": blocked_where_exports, "missed": missed}


def test_verdicts_hold_against_the_record(reports):
    got = measure(reports)
    assert got["blocked_where_torch_exports"] == KNOWN_BLOCKED_WHERE_TORCH_EXPORTS
    assert got["missed"] == KNOWN_MISSED
    # The figures the export guide quotes.
    assert {k: got[k] for k in ("cases", "classes", "inputs", "ok", "failed", "data_dependent", "predicted_at_line")} == {
        "cases": 136, "classes": 132, "inputs": 229, "ok": 219, "failed": 10, "data_dependent": 10,
        "predicted_at_line": 10}


def test_record_covers_every_scriptable_class():
    """Every class the IR oracle's corpus scripts is recorded here (containers with no
    ``forward`` aside), and every recorded archive is in the folder."""
    corpus = json.loads((ROOT / "fixtures" / "nn_corpus" / "manifest.json").read_text(encoding="utf-8"))
    recorded = {v["class"] for v in RECORD["cases"].values() if v["archive"]}
    no_forward = {"Container", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "RNNBase", "RNNCellBase"}
    assert set(corpus["scripted"]) - recorded == no_forward
    assert {p.name for p in FOLDER.glob("*.pt")} == {RECORD["cases"][c]["archive"] for c in CASES}
    assert RECORD["torch_version"].startswith("2.13.0")



@pytest.mark.torch
def test_torch_export_still_does_what_was_recorded():
    """Re-run torch.export.export on a sample (a clean class, and the three standard
    modules whose calls really block): a torch that changes behaviour shows here (then
    re-record with fixtures/record_nn_export.py)."""
    import torch

    rec = recorder("record_nn_export")
    root = rec._torch_root(torch)
    all_cases = rec.cases(rec._corpus(), torch)
    for case in RECORD["sample"]:
        name, kwargs, factory = all_cases[case]
        with rec.quiet():
            fresh = rec.record_case(torch, name, kwargs, factory, case, root, write=False)
        assert fresh == RECORD["cases"][case], case


def test_standard_modules_export_with_conditional_blockers(reports):
    """nn.LSTM, nn.TransformerEncoder and nn.Transformer export with ordinary inputs (the
    record says so); their blockers sit under a branch the call chooses (a PackedSequence's
    batch_sizes, a mask given without is_causal), so each verdict is `exports` and lists
    the branch in `blocked_when`, and each blocker is a warning that carries its guards."""
    lstm = reports["LSTM"]
    assert lstm.export.verdict == "exports" and lstm.export.blocked == []
    when = {(w.guard.condition, w.guard.kind, w.guard.path, w.guard.line, w.at.line) for w in lstm.export.blocked_when}
    assert ("torch.__isnot__(batch_sizes, None)", "argument", "torch/nn/modules/rnn.py", 336, 337) in when
    f = next(f for f in _blocking(lstm) if f.origin.line == 337)
    assert f.severity == "warning" and "reached only when `torch.__isnot__(batch_sizes, None)`" in f.message
    # Its own guard last, the call site's before it (check_forward_args is called under `if hx is None`).
    assert [(g.kind, g.branch, g.line) for g in f.guards] == [("argument", "then", 1124), ("argument", "then", 336)]
    for case in ("TransformerEncoder", "Transformer"):
        item = reports[case]
        assert item.export.verdict == "exports", case
        assert [(w.at.path, w.at.line, w.code) for w in item.export.blocked_when] == [
            ("torch/nn/modules/transformer.py", 1245, "CP405")], case
        assert all(f.severity == "warning" for f in _blocking(item))
    # The record: these export for every ordinary input but the one that takes the branch.
    for case, label in (("LSTM", "packed"), ("TransformerEncoder", "mask"), ("Transformer", "mask")):
        inputs = RECORD["cases"][case]["inputs"]
        assert [k for k, v in inputs.items() if not v["ok"]] == [label]
        frame = inputs[label]["frame"]
        assert predicted_at(reports[case], frame["path"], frame["line"]) or (case, label) in KNOWN_MISSED


def test_guards_follow_calls_and_else_branches(reports):
    """A blocker's guards include those of the call sites on the way from forward, and the
    side of each if (then/else)."""
    item = reports["TransformerEncoder"]
    f = next(f for f in _blocking(item) if f.origin.line == 1245)
    assert [(g.kind, g.branch, g.line) for g in f.guards] == [("argument", "then", 1236), ("tensor_shape", "then", 1244)]
    # `int(size * output_ratio[0])` under `if output_size is None`: a number made of a size and
    # an argument, no tensor's value (torch exports it with both inputs): no blocker at all.
    frac = reports["FractionalMaxPool2d"]
    assert all(v["ok"] for v in RECORD["cases"]["FractionalMaxPool2d"]["inputs"].values())
    assert frac.export.verdict == "exports" and not frac.export.blocked_when and not _blocking(frac)


def test_table_shows_library_blockers_that_decide_a_blocked_verdict():
    from codeparse.output.reporters import summarised
    from codeparse.contract.check import Finding

    def finding(code, severity):
        return Finding(code=code, name="n", severity=severity, message="m", path="a.pt!a/code/__torch__/torch/x.py",
                       library=True)

    assert not summarised(finding("CP405", "error"))  # decides `blocked`: always shown
    assert summarised(finding("CP405", "warning"))  # conditional: summarised with the library's findings
    assert summarised(finding("CP403", "info"))

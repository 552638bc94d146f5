"""``check --target export`` on the harder cases, against what ``torch.export.export`` really
does with each (``fixtures/export_paths/record.json``, written by
``fixtures/record_export_paths.py``; a torch-marked test re-runs every case in the same
test run): path conditions through calls, numbers read from tensors by ``item()``,
``tolist()`` loops, saved attribute values on both sides of a guard, and types that decide
conversions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import codeparse
from codeparse.gate.policy import policy_with
from export_records import blocking as _blocking, predicted_at, recorder

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "fixtures" / "export_paths"
RECORD = json.loads((FOLDER / "record.json").read_text(encoding="utf-8"))
CASES = sorted(RECORD["cases"])
EXPORT = policy_with(codeparse.Policy(), target="export")
MODELS = "fixtures/export_paths_models.py"

# Torch exports, codeparse says blocked.
KNOWN_BLOCKED_WHERE_TORCH_EXPORTS: set[str] = set()
# Real failures no blocking finding names at their line.
KNOWN_MISSED: set[str] = set()


@pytest.fixture(scope="module")
def reports():
    report = codeparse.check([str(FOLDER / RECORD["cases"][c]["archive"]) for c in CASES], EXPORT)
    return dict(zip(CASES, report.inputs))


def test_verdicts_hold_against_the_record(reports):
    blocked_where_exports, missed, predicted = set(), set(), 0
    for case in CASES:
        rec, item = RECORD["cases"][case], reports[case]
        if rec["ok"]:
            if item.export.verdict == "blocked":
                blocked_where_exports.add(case)
            continue
        assert rec["data_dependent"], case
        if predicted_at(item, rec["frame"]["path"], rec["frame"]["line"]):
            predicted += 1
        else:
            missed.add(case)
    assert blocked_where_exports == KNOWN_BLOCKED_WHERE_TORCH_EXPORTS
    assert missed == KNOWN_MISSED
    failed = sum(1 for c in CASES if not RECORD["cases"][c]["ok"])
    assert (len(CASES), failed, predicted) == (44, 24, 24)


def _verdict(item):
    return item.export.verdict


def test_numbers_read_by_item_are_blocked_at_their_line(reports):
    for case in ("item_arange", "item_zeros", "item_new_zeros", "item_view", "item_narrow", "item_slice",
                 "item_index", "item_range", "item_float"):
        item = reports[case]
        line = RECORD["cases"][case]["frame"]["line"]
        assert _verdict(item) == "blocked", case
        f = next(f for f in _blocking(item) if f.origin.line == line)
        assert f.code == "CP405" and f.severity == "error" and "torch._check_is_size" in f.message, case


def test_tolist_loops_count_the_list_not_its_values(reports):
    for case in ("tolist_count", "tolist_slice"):
        item = reports[case]
        assert _blocking(item) == [] and _verdict(item) != "blocked", case
        loop = next(f for f in item.findings if f.args.get("what") == "loop")
        assert loop.code == "CP403" and "lengths" in loop.message  # the trip count is the list's length
    branch = reports["tolist_branch"]
    assert [f.code for f in _blocking(branch)] == ["CP401"] and _verdict(branch) == "blocked"


def test_saved_attribute_values_decide_guards(reports):
    for on, off, value in (("attr_item_on", "attr_item_off", "self.use_item"),
                           ("training_item_train", "training_item_eval", "self.training"),
                           ("mode_item_exact", "mode_item_fast", "self.mode")):
        assert not RECORD["cases"][on]["ok"] and RECORD["cases"][off]["ok"]
        blocked, clean = reports[on], reports[off]
        assert _verdict(blocked) == "blocked", on
        f = _blocking(blocked)[0]
        assert f.severity == "error" and value in f.message and "saved in the archive" in f.message
        assert [g.decided for g in f.guards if g.decided] and value in f.guards[0].decided
        assert _verdict(clean) == "exports" and _blocking(clean) == [], off
        decided = [f for f in clean.findings if f.code == "CP404"]
        assert decided and "the saved module takes the else branch" in decided[0].message


def test_conditional_blockers_through_calls(reports):
    for case in ("guarded_helper_none", "guarded_helper_given"):  # one archive, two inputs
        item = reports[case]
        assert _verdict(item) != "blocked"
        (w,) = item.export.blocked_when
        assert (w.guard.kind, w.guard.path, w.at.path, w.at.line) == ("argument", MODELS, MODELS, 37)
        assert w.guard.condition == "torch.__isnot__(lengths, None)"
    assert RECORD["cases"]["guarded_helper_none"]["ok"] and not RECORD["cases"]["guarded_helper_given"]["ok"]
    assert _verdict(reports["unguarded_helper"]) == "blocked"
    assert _verdict(reports["flag_argument_default"]) != "blocked"


def test_data_dependence_crosses_calls(reports):
    """A helper's branch on the size of a parameter is CP402 where a caller passes a tensor
    made from tensor values (`x[x > 0.5]`), with the call and the producer as related
    lines; the same helper given the input itself only specializes."""
    (f,) = _blocking(reports["dd_argument"])
    assert (f.code, f.origin.line) == ("CP402", 228) and "passed by its caller" in f.message
    assert [r.line for r in f.related] == [236, 235]
    assert _blocking(reports["shape_argument"]) == []
    assert [f.code for f in reports["shape_argument"].findings] == ["CP403"]


def test_types_decide_conversions(reports):
    for case in ("sqrt_shape", "literal_tensor", "optional_targets", "list_len", "shape_argument"):
        assert RECORD["cases"][case]["ok"] and _blocking(reports[case]) == [], case


def test_lists_replaced_in_loops_optional_targets_and_numbers_made_of_sizes(reports):
    """torchvision's patterns in small.  A loop that replaces the elements of a List[Tensor]
    (`images[i] = image`) with what a method made from a number read out of a tensor of
    sizes: `len(images)` stays the list's length and `targets is not None` an argument
    condition (torch exports); the value branch on a given target is conditional, and is
    where torch fails when targets are given.  A number read from a tensor built from a
    size holds no data; a branch under `torch.jit.is_tracing()` never runs under export."""
    for case in ("replace_in_loop", "replace_in_loop_targets"):
        item = reports[case]
        assert item.export.verdict == "exports_with_specializations", case
        (f,) = _blocking(item)
        assert (f.code, f.severity, f.origin.line) == ("CP401", "warning", 296), case
        (w,) = item.export.blocked_when
        assert (w.guard.kind, w.guard.line, w.guard.condition) == ("argument", 294, "torch.__isnot__(targets0, None)")
        loops = {f.origin.line: f.code for f in item.findings if f.args.get("what") == "loop"}
        assert loops[279] == "CP404" and loops[299] == "CP404", case  # range(len(images))
    assert RECORD["cases"]["replace_in_loop"]["ok"]
    assert RECORD["cases"]["replace_in_loop_targets"]["frame"]["line"] == 296
    for case in ("size_scale", "tracing_only"):
        assert RECORD["cases"][case]["ok"] and _blocking(reports[case]) == [], case
    (decided,) = reports["tracing_only"].findings
    assert decided.code == "CP404" and decided.args["decided"] == "torch.jit._trace.is_tracing() is False under torch.export"
    assert "torch.export takes the else branch" in decided.message
    # Zeros written into from the input hold data: `float(t.sum())` is where torch fails.
    (f,) = _blocking(reports["written_into"])
    assert (f.code, f.severity, f.origin.line) == ("CP405", "error", RECORD["cases"]["written_into"]["frame"]["line"])


def test_lists_made_from_tensors(reports):
    """`len(x.nonzero().tolist())` is the nonzero result's size (CP402, the tolist line
    related: torch fails there); a number item() read and appended to a List[float] is printed
    `float(...)` where Python converts nothing (CP407), and the branch on it is where torch fails."""
    frame = RECORD["cases"]["tolist_nonzero_len"]["frame"]["line"]
    (f,) = _blocking(reports["tolist_nonzero_len"])
    assert (f.code, f.origin.line, [r.line for r in f.related]) == ("CP402", frame + 1, [frame])
    item = reports["item_appended"]
    line = RECORD["cases"]["item_appended"]["frame"]["line"]
    assert [(f.code, f.severity, f.origin.line) for f in item.findings] == [
        ("CP407", "warning", line - 1), ("CP401", "error", line)]
    assert _verdict(item) == "blocked"


def test_a_number_item_read_meeting_an_int_parameter(reports, tmp_path):
    """`n = i.item(); torch.zeros(n)` prints as `torch.zeros([int(n)])`, as a user's
    `int(n)` would; the debug info tells them apart (a user's call was printed from the
    range `int`, the inserted one from `torch.zeros`).  Inserted before a factory: no
    finding (torch exports); before another operator (`x.view(n, -1)`): CP407, cannot_tell
    (torch exports this one too); a user's `int(x.max().item())`: CP405, where torch fails.
    Without the debug info the text cannot tell: CP407 for both."""
    assert RECORD["cases"]["int_item_size"]["ok"] and RECORD["cases"]["int_item_view"]["ok"]
    assert _verdict(reports["int_item_size"]) == "exports" and reports["int_item_size"].findings == []
    (f,) = reports["int_item_view"].findings
    assert (f.code, f.severity, _verdict(reports["int_item_view"])) == ("CP407", "warning", "cannot_tell")
    assert "`view`" in f.message and f.origin.line == 337
    assert not RECORD["cases"]["item_zeros"]["ok"]
    assert [f.code for f in reports["item_zeros"].findings] == ["CP405"]
    import zipfile

    stripped = {}
    for case in ("int_item_size", "item_zeros"):
        stripped[case] = tmp_path / f"{case}.pt"
        with zipfile.ZipFile(FOLDER / f"{case}.pt") as src, zipfile.ZipFile(stripped[case], "w") as dst:
            for info in src.infolist():
                if not info.filename.endswith(".debug_pkl"):
                    dst.writestr(info, src.read(info))
    report = codeparse.check([str(stripped["int_item_size"]), str(stripped["item_zeros"])], EXPORT)
    (bare,) = report.inputs[0].findings
    assert bare.code == "CP407" and "no debug info" in bare.message
    assert report.inputs[0].export.verdict == "cannot_tell"
    assert [f.code for f in report.inputs[1].findings] == ["CP405"]  # int(torch.item(...)): the user's


def test_a_model_around_nn_lstm(reports):
    """The guide's example: nn.LSTM's blocker is conditional (a PackedSequence input), the
    model's own branch is decided by its saved attribute; torch exports it."""
    item = reports["tagger"]
    assert RECORD["cases"]["tagger"]["ok"] and item.export.verdict == "exports"
    assert {(w.at.path, w.at.line) for w in item.export.blocked_when} == {
        ("torch/nn/modules/rnn.py", 337), ("torch/nn/modules/rnn.py", 1017)}
    own = [f for f in item.findings if not f.library]
    assert [(f.code, f.args.get("decided")) for f in own] == [
        ("CP404", "self.calibrate = False (saved in the archive)")]
    assert item.export.specializations == 0 and item.export.library_specializations == 16



@pytest.mark.torch
def test_torch_export_still_does_what_was_recorded(monkeypatch):
    """Every case exported again, live: the record (and so every test above) is what torch does."""
    monkeypatch.chdir(ROOT)
    fresh, version = recorder("record_export_paths").run(write=False)
    assert version == RECORD["torch_version"]
    for case in CASES:
        assert fresh[case] == RECORD["cases"][case], case


def test_data_dependence_per_dimension(reports):
    """`kept = x[mask]` has a data-dependent size in dimension 0 alone: a branch on
    `kept.size(1)`, and a helper's on `list(t.shape[1:])` given `kept.relu()`, only
    specialize (torch exports); a branch on `kept.size(0)` is CP402 where torch fails, and so
    is one on dimension 1 of the differences of every kept row with every other (a tensor
    operand broadcasts: the dimension is not followed)."""
    assert RECORD["cases"]["kept_columns"]["ok"]
    item = reports["kept_columns"]
    assert _blocking(item) == [] and _verdict(item) == "exports_with_specializations"
    assert sorted(f.code for f in item.findings) == ["CP403", "CP403"]
    for case in ("kept_rows", "kept_pairs"):
        rec = RECORD["cases"][case]
        assert not rec["ok"] and rec["data_dependent"], case
        (f,) = _blocking(reports[case])
        assert (f.code, f.severity, f.origin.line) == ("CP402", "error", rec["frame"]["line"]), case


def test_branches_the_saved_values_rule_out_define_nothing(reports):
    """`rows` is `kept` (data-dependent in dimension 0 alone) or, in training mode, every kept
    row against every other (dimension 1 too); a helper branches on `list(t.shape[1:])`.
    Saved in eval mode, the training branch never runs: its definition leaves the
    helper's argument alone, the branch only specializes (torch exports); saved in train
    mode, it is CP402 where torch fails, the definition among its producers."""
    eval_, train = RECORD["cases"]["training_rows_eval"], RECORD["cases"]["training_rows_train"]
    assert eval_["ok"] and not train["ok"] and train["data_dependent"]
    item = reports["training_rows_eval"]
    assert _blocking(item) == [] and _verdict(item) == "exports_with_specializations"
    assert sorted(f.code for f in item.findings) == ["CP403", "CP404"]
    item = reports["training_rows_train"]
    (f,) = _blocking(item)
    assert (f.code, f.severity, f.origin.line) == ("CP402", "error", train["frame"]["line"])
    assert _verdict(item) == "blocked"


def _code_texts(tmp_path) -> dict[str, Path]:
    """The code file torch wrote into each case's archive (those with one), as a code text."""
    import zipfile

    out = {}
    for case in CASES:
        with zipfile.ZipFile(FOLDER / RECORD["cases"][case]["archive"]) as z:
            code = [n for n in z.namelist() if "/code/" in n and n.endswith(".py")]
            if len(code) != 1:
                continue
            (tmp_path / case).mkdir()
            out[case] = tmp_path / case / "__torch__.py"
            out[case].write_bytes(z.read(code[0]))
    return out


def test_a_code_text_is_read_as_its_archive_is(reports, tmp_path):
    """A code text checked with `--target export` takes the archive's path: path conditions
    (a blocker under an argument's branch is conditional), runtime predicates torch.export
    knows, conditions read again for what they rest on (a tensor built from sizes holds no
    data), data dependence through calls and per dimension.  Only what the text alone cannot
    tell differs: no saved attribute values (a blocker under `if self.training:` stays
    conditional) and no debug info (`int(n)` of an `item()` number: CP407, cannot tell).
    Never blocked where torch exports: for `training_rows_eval`, without the saved mode, the
    training branch's definition of the helper's argument counts, but only that side of
    `if self.training:` defines what makes the size data-dependent, so the CP402 is
    conditional on it (torch fails for the same module in train mode, `training_rows_train`,
    whose archive decides the guard: there it blocks)."""
    texts = _code_texts(tmp_path)
    report = codeparse.check([str(p) for p in texts.values()], EXPORT)
    differ, blocked_where_exports = {}, set()
    for case, item in zip(texts, report.inputs):
        rec, archive = RECORD["cases"][case], reports[case]
        if rec["ok"] and item.export.verdict == "blocked":
            blocked_where_exports.add(case)
        mine = sorted((f.code, f.severity, f.span.line) for f in item.findings)
        if mine != sorted((f.code, f.severity, f.span.line) for f in archive.findings):
            differ[case] = item
    assert blocked_where_exports == set()
    assert (len(texts), len(texts) - len(differ)) == (42, 32)  # the other two archives hold more files
    saved = {"attr_item_on", "attr_item_off", "mode_item_exact", "mode_item_fast", "training_item_eval",
             "training_item_train", "training_rows_eval", "training_rows_train"}
    assert set(differ) == saved | {"int_item_size", "item_index"}
    for case in saved:  # the saved value decided the archive's guard; the text leaves it to the call
        assert any(f.args.get("decided") for f in reports[case].findings), case
        assert not any(f.args.get("decided") for f in differ[case].findings), case
        assert differ[case].export.verdict != "blocked", case
    # The guard of the definition, not of the finding, makes the text's CP402 conditional.
    for case in ("training_rows_eval", "training_rows_train"):
        (f,) = [f for f in differ[case].findings if f.code == "CP402"]
        assert (f.severity, f.span.line) == ("warning", 24), case
        assert [(g.condition, g.branch, g.line) for g in f.guards] == [("self.training", "then", 12)], case
        assert [w.when for w in differ[case].export.blocked_when] == ["when `self.training`"], case
    for case in ("int_item_size", "item_index"):
        assert [f.code for f in differ[case].findings] == ["CP407"] and differ[case].export.verdict == "cannot_tell"
    # The archive's path before: kept_rows-style cross-call and per-dimension answers hold for texts too.
    found = dict(zip(texts, report.inputs))
    (f,) = _blocking(found["dd_argument"])
    assert (f.code, f.span.line) == ("CP402", 12)
    assert _blocking(found["size_scale"]) == [] and found["size_scale"].export.verdict == "exports"
    assert found["replace_in_loop"].export.verdict == "exports_with_specializations"

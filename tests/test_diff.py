"""`codeparse diff`: script versus trace, on texts printed by torch 2.13 (fixtures/).

The known_* cases (fixtures/models.py) and the diff_* cases (fixtures/models_diff.py) have
known answers: fixtures/record_truth.py recorded, with sys.settrace while torch traced each
case, the branch every Python `if` really took (`recorded` in fixtures/diff_expected.json).
Archive answers are matched to those `if`s through the archives' .debug_pkl (`IfDiff.origin`);
answers on the top-level .code texts through the same `if` of the archive, in textual order.
Lost calls and loops of the known_* cases are hand-written there, from how the models were built.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from codeparse.contract.errors import InputError
from codeparse.cli.app import main
from codeparse.trace.compare import diff_paths
from codeparse.trace.sides import load_side
from codeparse.contract.diff import DiffReport

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "diff_expected.json").read_text(encoding="utf-8"))["cases"]
KNOWN = sorted(c for c in EXPECTED if c.startswith("known_"))
# Every case whose truth `fixtures/record_truth.py` recorded: the suite checks them all.
TRUTH_CASES = sorted(c for c in EXPECTED if "recorded" in EXPECTED[c])


def _record_truth():
    import importlib.util

    spec = importlib.util.spec_from_file_location("record_truth", FIXTURES / "record_truth.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORDER = _record_truth()  # its `norm` and `watched`: the test reads the record as it was written


def text_pair(case: str) -> tuple[str, str]:
    return str(FIXTURES / "text" / case / "script.code"), str(FIXTURES / "text" / case / "trace.code")


def dir_pair(case: str) -> tuple[str, str]:
    return str(FIXTURES / "archive_code" / f"{case}.script"), str(FIXTURES / "archive_code" / f"{case}.trace")


def archive_pair(case: str) -> tuple[str, str]:
    return str(FIXTURES / "archives" / f"{case}.script.pt"), str(FIXTURES / "archives" / f"{case}.trace.pt")


def ifs_by_module(report: DiffReport) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = defaultdict(list)
    for i in report.ifs:
        out[i.module].append([i.kind, i.taken])
    return dict(out)


def loops_by_module(report: DiffReport) -> dict[str, list]:
    out: dict[str, list] = defaultdict(list)
    for lp in report.unrolled_loops:
        out[lp.module].append("kept" if lp.kept else lp.iterations)
    return dict(out)


def only_top(mapping: dict) -> dict:
    return {k: v for k, v in mapping.items() if k == "self"}


def test_every_known_case_has_generated_fixtures():
    manifest = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))["cases"]
    assert set(EXPECTED) <= set(manifest)
    assert len(KNOWN) == 14 and TRUTH_CASES == sorted(EXPECTED) and len(TRUTH_CASES) >= 116
    for case in EXPECTED:
        assert manifest[case]["skipped"] is None and manifest[case]["trace"]["error"] is None


# ------------------------------------------------------------ recorded truth


def recorded_truth(case: str, origin, module: str = "self") -> object:
    """What Python did at the `if` of ``origin`` while tracing, in the module instance ``module``:
    the branch of each run, ``scripted`` (it ran as TorchScript inside the trace), or None (no
    known answer: a line holding a conditional expression, and/or or an assert, or a file the
    recorder does not watch, such as the compiler's own ``<string>`` builtins)."""
    entry = EXPECTED[case]
    path = RECORDER.norm(origin.path)
    key = f"{path}:{origin.line}"
    if key in entry.get("untracked", []) or not RECORDER.watched(path):
        return None
    for scripted in entry.get("scripted", []):
        file, _, span = scripted.rpartition(":")
        first, last = map(int, span.split("-"))
        if path == file and first <= origin.line <= last:
            return "scripted"
    if key in entry.get("instances", {}):  # a line run in several module instances: this one's runs
        return entry["instances"][key].get(module, [])
    return entry["recorded"].get(key, [])


def verdict(answer, truth) -> str:
    """``right``, ``abstained`` (``ambiguous``/``unknown``), ``wrong`` (a confident false answer),
    or ``unscored`` (no recorded answer to compare with)."""
    if truth is None:
        return "unscored"
    if answer.taken in ("ambiguous", "unknown"):
        return "abstained"
    if truth == "scripted":
        return "right" if answer.taken == "kept" else "wrong"
    if answer.taken in ("then", "else"):
        return "right" if truth and all(t == answer.taken for t in truth) else "wrong"
    if answer.taken == "mixed":
        return "right" if list(answer.executions) == list(truth) else "wrong"
    if answer.taken == "neither":
        return "right" if not truth else "wrong"
    return "wrong"  # kept, yet Python ran it


@functools.lru_cache(maxsize=None)
def archive_report(case: str) -> DiffReport:
    return diff_paths(*archive_pair(case))


@functools.lru_cache(maxsize=None)
def scored(case: str, form: str) -> list[tuple]:
    """(answer, truth, verdict) for every `if` the diff reports, in one input form."""
    archive = archive_report(case)
    if form == "archive":
        pairs = [(i, i.origin) for i in archive.ifs]
    else:  # the top-level .code texts: the same ifs as the archive's root forward, in order
        root_fn = archive.modules[0].script_function
        script, trace = text_pair(case)
        if not Path(script).exists():  # a module with overloads only (nn.LSTM): the one the trace ran
            script = str(Path(script).with_name(f"script.{root_fn.rsplit('.', 1)[-1]}.code"))
        text = diff_paths(script, trace)
        root = [i for i in archive.ifs if i.module == "self" and i.function == root_fn]
        assert len(text.ifs) == len(root)
        # the same ifs, of the same kinds (but where a callee's body is in the archive only: a
        # user's own `__torch__.is_scripting()` is runtime by its name in the text)
        assert all(i.kind == j.kind or "__torch__." in i.resolved for i, j in zip(text.ifs, root))
        pairs = [(i, j.origin) for i, j in zip(text.ifs, root)]
    # an `if` the compiler made (no source line in .debug_pkl) has no recorded answer
    truths = [recorded_truth(case, o, i.module) if o is not None else None for i, o in pairs]
    return [(i, t, verdict(i, t)) for (i, _), t in zip(pairs, truths)]


def accuracy() -> tuple[dict[str, int], dict[str, int]]:
    """Over every recorded fixture, in both input forms: the answers ``right``, ``wrong``
    (confidently wrong), ``abstained`` and ``unscored``; and the abstentions by ``taken (reason)``."""
    counts = {"right": 0, "abstained": 0, "wrong": 0, "unscored": 0}
    reasons: dict[str, int] = defaultdict(int)
    for case in TRUTH_CASES:
        for form in ("archive", "code"):
            for answer, _, v in scored(case, form):
                counts[v] += 1
                if v == "abstained":
                    reasons[f"{answer.taken} ({answer.reason})"] += 1
    return counts, dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))


def accuracy_line() -> str:
    """The accuracy figure as docs/diff.md states it."""
    counts, reasons = accuracy()
    by_reason = ", ".join(f"{k} {n}" for k, n in reasons.items())
    return (f"{counts['right']} right, {counts['wrong']} confidently wrong, {counts['abstained']} abstentions "
            f"({by_reason}); {counts['unscored']} more answers have no recorded truth")


@pytest.mark.parametrize("case", TRUTH_CASES)
@pytest.mark.parametrize("form", ["code", "archive"])
def test_never_confidently_wrong(case, form):
    """No fixture gets a confident then/else (or neither, mixed, kept) that is false; every
    abstention carries a reason code."""
    for answer, truth, v in scored(case, form):
        assert v != "wrong", (answer.module, answer.line, answer.condition, answer.taken, answer.reason, truth)
        if v == "abstained":
            assert answer.reason in ("indistinguishable", "tie", "no_evidence", "mixed", "loop_passes", "not_described")


def test_accuracy_figures_in_the_docs():
    counts, _ = accuracy()
    line = accuracy_line()
    page = (FIXTURES.parent / "docs" / "diff.md").read_text(encoding="utf-8")
    assert counts["wrong"] == 0
    assert line in page, line
    assert f"all {len(TRUTH_CASES)} recorded fixtures" in page
    readme = " ".join((FIXTURES.parent / "README.md").read_text(encoding="utf-8").split())
    assert (f"On the {len(TRUTH_CASES)} fixtures whose real branches torch recorded while tracing: "
            f"{counts['right']} right, {counts['wrong']} confidently wrong, "
            f"{counts['abstained']} abstentions") in readme


@pytest.mark.parametrize("case", KNOWN)
@pytest.mark.parametrize("form", ["archive_code", "archive"])
def test_known_answers_with_submodules(case, form):
    script, trace = (dir_pair if form == "archive_code" else archive_pair)(case)
    report = diff_paths(script, trace)
    want = EXPECTED[case]
    assert ifs_by_module(report) == want["ifs"]
    assert sorted(c.call for c in report.lost_calls) == sorted(want["lost_calls"])
    assert all(c.module == "self" for c in report.lost_calls)
    assert loops_by_module(report) == want["loops"]


@pytest.mark.parametrize("case", KNOWN)
def test_known_answers_from_top_level_code_texts(case):
    report = diff_paths(*text_pair(case))
    want = EXPECTED[case]
    assert ifs_by_module(report) == only_top(want["ifs"])
    assert sorted(c.call for c in report.lost_calls) == sorted(want["lost_calls"])
    assert loops_by_module(report) == {k: v for k, v in only_top(want["loops"]).items()}
    assert [m.module for m in report.modules] == ["self"]  # a bare method text has no classes to follow


def test_custom_model_evidence_and_lines():
    report = diff_paths(*text_pair("custom_model"))
    tensor, flag, cond = report.ifs
    assert (tensor.line, tensor.condition, tensor.kind, tensor.taken, tensor.reason) == (
        6, "_2", "tensor_value", "else", "absent")
    assert tensor.evidence == []
    assert [(m.call, m.script_line, m.trace_line) for m in tensor.missing] == [("self.custom_layer.forward", 8, None)]
    assert (flag.line, flag.condition, flag.taken) == (12, "torch.eq(branch_testing, True)", "then")
    assert [(e.call, e.script_line, e.trace_line) for e in flag.evidence] == [("self.custom_layer1.forward", 14, 9)]
    assert [(e.call, e.script_line, e.trace_line) for e in cond.evidence] == [("self.condition_func1.forward", 29, 11)]
    assert [(c.call, c.line, c.inside) for c in report.lost_calls] == [
        ("self.custom_layer.forward", 8, "then of if at line 6"),
        ("self.custom_layer2.forward", 17, "else of if at line 12"),
        ("self.condition_func2.forward", 32, "else of if at line 27"),
    ]
    assert report.modules[0].matched == 6 and report.modules[0].trace_only == []


def test_mixed_inputs_archive_against_code_text():
    script, _ = archive_pair("custom_model")
    _, trace = text_pair("custom_model")
    report = diff_paths(script, trace)
    assert [(i.module, i.taken) for i in report.ifs] == [("self", "else"), ("self", "then"), ("self", "then")] + [
        ("self.condition_func2", "neither")] * 5  # F.log_softmax's ifs: the trace never calls condition_func2
    assert report.ifs[0].path.endswith("custom_model.script.pt!custom_model.script/code/__torch__.py")


def test_unrolled_loop_evidence_and_baked_loop_index():
    report = diff_paths(*text_pair("tutorial_rnn_loop"))
    (loop,) = report.unrolled_loops
    assert (loop.line, loop.loop, loop.iterations, loop.executions) == (
        7, "for i in range(torch.size(xs, 0))", 10, [10])
    assert [e.call for e in loop.evidence] == ["aten::select", "self.cell.forward"]
    selects = [b for b in report.baked_constants if b.operator == "aten::select"]
    assert [(b.argument, b.script, b.trace, b.kind) for b in selects] == [
        ("2", "i", str(n), "literal") for n in range(10)]
    assert [b.trace_line for b in selects] == list(range(5, 25, 2))


def test_baked_attribute_value_becomes_a_tensor_constant():
    report = diff_paths(*text_pair("cond_attribute"))
    assert [(b.operator, b.script, b.trace, b.kind, b.script_line) for b in report.baked_constants] == [
        ("aten::add", "threshold0", "CONSTANTS.c1", "tensor_constant", 22)]


def test_loops_fixture_scalar_work_is_not_matched_against_tensor_ops():
    """`for k in range(3): squares.append(k * k)` is Python int work: no trace shows it.  Nor does
    `for j in [1, 2, 3]: ... total += j` (a `while` over a list of ints once compiled), which
    ran 3 times: its pass count is unknown, not 0, and its ifs abstain."""
    report = diff_paths(*text_pair("loops"))
    assert [(lp.line, lp.iterations) for lp in report.unrolled_loops] == [(7, 3), (18, 3), (27, None), (45, None)]
    assert [(i.line, i.taken, i.reason) for i in report.ifs] == [
        (29, "unknown", "no_evidence"), (32, "unknown", "no_evidence"), (37, "unknown", "no_evidence")]


def test_condition_only_and_scalar_events_are_weak():
    from codeparse.trace.events import FunctionTree

    side = load_side(text_pair("custom_model")[0])
    fn, unit, _ = side.top()
    tree = FunctionTree(fn, unit, "self")
    weak = [e.label for e in tree.events if e.weak]
    # the tensor-value condition's selects/remainder/eq/bool and the flag comparisons
    assert weak == ["aten::select"] * 4 + ["aten::remainder", "aten::eq", "aten::Bool", "aten::eq", "aten::eq"]


def test_json_output_has_the_contract_fields():
    from io import StringIO
    import contextlib

    out = StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["diff", *text_pair("known_flags_off"), "--format", "json"])
    assert status == 0
    data = json.loads(out.getvalue())
    assert {"ifs", "lost_calls", "unrolled_loops", "baked_constants"} <= set(data)
    first = data["ifs"][0]
    assert {"line", "condition", "kind", "taken", "evidence"} <= set(first)
    assert (first["condition"], first["kind"], first["taken"]) == ("use_norm", "attribute", "else")
    assert DiffReport.model_validate_json(out.getvalue()).ifs[1].taken == "else"


def test_table_output(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    status = main(["diff", *dir_pair("known_cell_gate_else"), "--no-color"])
    out = capsys.readouterr().out
    assert status == 0
    assert "self.dg" in out and "bool(torch.gt(torch.sum(x), 0))" in out
    assert "aten::neg (26→23)" in out


def test_unreadable_input_is_one_line_and_exit_2(capsys, tmp_path):
    missing = str(tmp_path / "nope.code")
    assert main(["diff", missing, text_pair("custom_model")[1]]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"{missing}: CP301 no such file or directory"]
    with pytest.raises(InputError):
        diff_paths(missing, missing)


def test_diff_never_imports_torch():
    code = (
        "import sys; import codeparse; "
        f"r = codeparse.diff({text_pair('known_range_loop')[0]!r}, {text_pair('known_range_loop')[1]!r}); "
        f"r2 = codeparse.diff({archive_pair('known_wrap_rnn')[0]!r}, {archive_pair('known_wrap_rnn')[1]!r}); "
        "assert 'torch' not in sys.modules, 'torch imported'; print(r.unrolled_loops[0].iterations)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "5"


def test_package_names_are_lazy_and_callable():
    code = (
        "import sys, codeparse.cli.app; "
        "assert 'codeparse.trace.compare' not in sys.modules and 'codeparse.trace.capture' not in sys.modules; "
        "from codeparse.trace.compare import diff_paths; import codeparse; "
        f"r = codeparse.diff({text_pair('known_argument')[0]!r}, {text_pair('known_argument')[1]!r}); "
        "print([i.taken for i in r.ifs], callable(codeparse.capture))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['then', 'then'] True"


# ------------------------------------------------------- one test per rule


def both(case: str) -> list[DiffReport]:
    return [diff_paths(*text_pair(case)), diff_paths(*archive_pair(case))]


def top_ifs(report: DiffReport) -> list[tuple]:
    fn = report.modules[0].script_function
    return [(i.taken, i.reason) for i in report.ifs if i.module == "self" and i.function == fn]


def test_nested_optional_branch_is_chosen_when_every_path_of_the_other_tells():
    for report in both("diff_nested_optional"):  # 2-D input: neither flatten nor unsqueeze ran
        assert top_ifs(report) == [("else", "absent"), ("else", "absent")]
    for report in both("diff_nested_optional_3d"):
        assert top_ifs(report) == [("else", "present"), ("then", "present")]


def test_compiled_function_is_evidence_without_its_body():
    text, archive = both("diff_functional_dropout")
    (ans,) = text.ifs  # .code mode: __torch__.torch.nn.functional.dropout has no body here
    assert (ans.taken, ans.reason) == ("then", "present")
    assert [(e.call, e.trace_line) for e in ans.evidence] == [("__torch__.torch.nn.functional.dropout", 3)]
    assert top_ifs(archive)[0] == ("then", "present")
    assert top_ifs(diff_paths(*text_pair("diff_functional_relu"))) == [("else", "present")]


def test_device_move_is_not_matched_to_a_dtype_conversion():
    # x.cpu() traces as torch.to(x, dtype=6, layout=0, device=torch.device("cpu"))
    for report in both("diff_device_cpu"):
        (ans,) = report.ifs
        assert (ans.taken, ans.reason) == ("then", "present")
        assert [e.call for e in ans.evidence] == ["aten::cpu"]
    for report in both("diff_device_dtype"):  # torch.to(x, 7): a dtype conversion
        assert [(i.taken, [e.call for e in i.evidence]) for i in report.ifs] == [("else", ["aten::to"])]
    # x.to("cpu") prints as torch.to(x, torch.device("cpu")) and traces as x.cpu() does
    for report in both("diff_device_to_cpu"):
        (ans,) = report.ifs
        assert (ans.taken, ans.reason) == ("then", "present")
        assert [e.call for e in ans.evidence] == ["aten::device", "aten::to"]
        assert [m.call for m in ans.missing] == ["aten::to"]  # the else's dtype conversion: not in the trace


def test_a_value_dead_on_the_taken_path_costs_nothing():
    # z = exp(x) feeds only the then branch; on the else path the tracer drops it
    for report in both("diff_path_dead_else"):
        (ans,) = report.ifs
        assert (ans.taken, ans.reason) == ("else", "present")
    for report in both("diff_path_dead_then"):
        assert [(i.taken, i.reason) for i in report.ifs] == [("then", "present")]


def test_a_tie_is_ambiguous_with_both_costs():
    # the branches differ only in a literal the trace holds as CONSTANTS.c0
    for report in both("diff_literal_tie"):
        (ans,) = report.ifs
        assert (ans.taken, ans.reason) == ("ambiguous", "tie")
        assert ans.costs["then"] == ans.costs["else"] and ans.costs["then"] > 0
        assert ans.executions == []


def test_tracing_predicates_and_unused_stubs():
    for report in both("diff_tracing_predicates"):
        # is_tracing() (its then branch calls an @torch.jit.unused stub: a raise that is no
        # evidence), not is_tracing(), torchvision's _is_tracing()
        assert top_ifs(report) == [("then", "tracing_predicate"), ("else", "tracing_predicate"),
                                   ("then", "tracing_predicate")]
        assert sorted(c.call for c in report.lost_calls) == ["self.a.forward", "self.b.forward"]
        # a user's copy of torchvision's helper, `__torch__._is_tracing()` (its compiled body is
        # `return False`), reads runtime state as torch's own predicate does: not a constant
        assert [i.kind for i in report.ifs if i.module == "self"] == ["runtime"] * 3
    # a user's own `is_scripting()` with real logic (its body reads a tensor): user code, decided
    # by the trace's evidence.  In .code mode its body is not in the text: the name decides.
    text, archive = both("diff_own_predicate")
    assert [(i.kind, i.taken, i.reason) for i in archive.ifs] == [("tensor_value", "else", "present")]
    assert [(i.kind, i.taken, i.reason) for i in text.ifs] == [("runtime", "else", "tracing_predicate")]
    for report in both("diff_tracing_comparisons"):  # is_tracing() == False, is_tracing() != False
        assert top_ifs(report) == [("else", "tracing_predicate"), ("then", "tracing_predicate")]
        assert [c.call for c in report.lost_calls] == ["self.a.forward"]
        # `if not torch.jit.is_scripting()` is compiled away by the script: self.c runs in the trace only
        assert [e.call for e in report.modules[0].trace_only] == ["self.c.forward"]


def test_inlined_submodule_method_counts_runs_per_call_and_is_not_lost():
    text, archive = both("diff_inlined_method")
    assert text.lost_calls == [] and archive.lost_calls == []  # the trace inlines self.proj.project
    (ans,) = archive.ifs
    assert (ans.module, ans.taken, ans.reason, ans.runs, ans.executions) == (
        "self", "then", "present", 2, ["then", "then"])
    assert ans.function.endswith("Projector.project")


def test_scripted_helper_inside_a_trace_is_kept():
    report = diff_paths(*archive_pair("diff_scripted_helper"))
    (ans,) = report.ifs
    assert (ans.function, ans.taken, ans.reason) == ("__torch__.clamp_or_relu", "kept", "kept")
    assert report.modules[0].matched == 2  # the linear call and the helper's call itself
    # .code mode: the helper's body is not in the text; its call is matched, not lost
    text = diff_paths(*text_pair("diff_scripted_helper"))
    assert (text.ifs, text.lost_calls, text.modules[0].matched) == ([], [], 2)


def test_overloaded_forward_is_paired_by_signature():
    report = diff_paths(*archive_pair("diff_lstm"))
    lstm = [m for m in report.modules if m.module == "self.lstm"]
    assert [(m.script_function.rsplit(".", 1)[-1], m.trace_function.rsplit(".", 1)[-1]) for m in lstm] == [
        ("forward__0", "forward")]
    assert report.lost_calls == []
    # an archive of the LSTM alone: its forward__0, never an unrelated free function
    from codeparse.trace.sides import pick_overload
    side = load_side(archive_pair("diff_lstm")[0])
    cls, _ = side.classes["__torch__.torch.nn.modules.rnn.LSTM"]
    trace_side = load_side(archive_pair("diff_lstm")[1])
    t_cls, _ = trace_side.classes[next(n for n in trace_side.classes if n.endswith("LSTM"))]
    t_forward = trace_side.method_of(t_cls, "forward")
    overloads = [m for m in cls.methods if m.name.startswith("forward__")]
    assert pick_overload(overloads, t_forward).name == "forward__0"


def test_if_inside_a_loop_is_mixed_with_per_pass_answers():
    for report in both("diff_loop_if"):
        (ans,) = report.ifs
        assert (ans.taken, ans.reason, ans.runs) == ("mixed", "mixed", 4)
        assert ans.executions == ans.passes == ["then", "else", "then", "else"]


def test_loop_carried_flag_is_else_whenever_another_pass_followed():
    for report in both("diff_loop_break"):  # breaks on the second of 4 passes
        (ans,) = report.ifs
        assert (ans.taken, ans.reason, ans.runs, ans.passes) == ("ambiguous", "no_evidence", 2, ["else", "unknown"])
        assert [lp.iterations for lp in report.unrolled_loops] == [2]


def test_mismatched_inputs_are_cp224_in_one_line(capsys):
    report = diff_paths(text_pair("custom_model")[0], text_pair("diff_lstm")[1])
    assert [d.code for d in report.diagnostics] == ["CP224"]
    assert main(["diff", text_pair("custom_model")[0], text_pair("diff_lstm")[1]]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines() == [
        f"{text_pair('diff_lstm')[1]}: CP224 only 0 of 1 trace calls (0%) match the script: "
        "the script and the trace are not of the same model (or the trace is of a wrapper)"]
    assert diff_paths(*text_pair("custom_model")).diagnostics == []


def test_rows_name_the_original_source_line_and_resolved_condition(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    report = diff_paths(*archive_pair("custom_model"))
    first = report.ifs[0]
    assert (first.origin.path, first.origin.line) == ("fixtures/models.py", 65)
    assert first.condition == "_2" and first.resolved.startswith("bool(torch.eq(torch.remainder(")
    assert main(["diff", *archive_pair("custom_model"), "--no-color"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1].startswith("4 ifs: ") or "ifs: " in lines[1]  # the summary comes first
    assert "models.py:65" in out and "bool(torch.eq(torch.remainder(" in out


def test_only_and_module_filters(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["diff", *archive_pair("custom_model"), "--only", "lost", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ifs"] == [] and len(data["lost_calls"]) == 3 and data["summary"]["lost_calls"] == 3
    assert main(["diff", *archive_pair("known_cell_gate_else"), "--module", "self.dg", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {i["module"] for i in data["ifs"]} == {"self.dg"}
    assert main(["diff", *archive_pair("custom_model"), "--only", "frozen", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {i["taken"] for i in data["ifs"]} <= {"then", "else", "mixed"} and data["lost_calls"] == []


def test_library_internals_repeated_per_instance_are_grouped(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    report = diff_paths(*archive_pair("custom_model"))
    # F.relu's `if inplace:` runs in two ReLU instances: two answers in the report, one table row
    relu = [(i.module, i.taken, i.reason) for i in report.ifs if i.origin and i.origin.line == 1768]
    assert relu == [("self.layer1.1", "else", "present"), ("self.layer2.2", "else", "present")]
    main(["diff", *archive_pair("custom_model"), "--no-color"])
    out = capsys.readouterr().out
    rows = [ln.split() for ln in out.splitlines() if " alike)" in ln]
    assert ["self.layer1.1", "(+1", "alike)", "3", "functional.py:1768", "argument", "else"] in [r[:7] for r in rows], out
    assert not any(ln.lstrip().startswith("self.layer2.2 ") for ln in out.splitlines())


def test_diff_tables_are_the_grammar_data_file():
    """SCALAR_OPERATORS, TRACE_EQUIVALENTS and MUTATORS are grammars/tracediff.toml, read as is."""
    import tomllib

    from codeparse.grammar.engine import grammar_dir
    from codeparse.trace import events

    data = tomllib.loads((grammar_dir() / "tracediff.toml").read_text(encoding="utf-8"))
    assert set(data) == {"scalar_operators", "trace_equivalents", "mutators"}
    assert events.SCALAR_OPERATORS == frozenset(data["scalar_operators"]["operators"])
    assert events.MUTATORS == frozenset(data["mutators"]["operators"])
    assert events.TRACE_EQUIVALENTS == {k: frozenset(v) for k, v in data["trace_equivalents"].items()}
    assert "aten::size" in events.SCALAR_OPERATORS and "aten::conv2d" in events.TRACE_EQUIVALENTS["aten::_convolution"]


# --------------------------------------------- where the text alone misleads (rules_* cases)


def test_unconditional_script_call_the_trace_lacks_abstains_in_its_region(capsys, monkeypatch):
    """`torch.jit.is_scripting()` is folded by the compiler: the script subtracts (calls self.a)
    unconditionally, the trace ran the eager branch's add (self.b), which the earlier tensor-value
    `if` could explain.  The `if` before that call abstains, and the summary says why."""
    for case in ("rules_folded_scripting", "rules_folded_scripting_module"):
        for report in both(case):
            assert top_ifs(report) == [("unknown", "not_described")]
            assert report.summary["not_described"] == 1
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["diff", *text_pair("rules_folded_scripting"), "--no-color"]) == 0
    assert "1 ifs abstain (not_described): the script makes calls there" in capsys.readouterr().out
    # cond_runtime has the same fold (x + 1 scripted, x - 1 traced): its ifs abstain too, but for
    # the tracing predicate, whose value a trace fixes whatever the alignment
    assert top_ifs(diff_paths(*text_pair("cond_runtime"))) == [
        ("unknown", "not_described"), ("unknown", "not_described"), ("then", "tracing_predicate")]


def test_literal_only_branches_are_ambiguous_in_code_text_and_read_from_archive_constants():
    # `mode == "a"`: x * 2, `mode == "b"`: x * 3; the trace holds torch.mul(x, CONSTANTS.c0)
    for case in ("rules_literal_a", "rules_literal_b"):
        text = diff_paths(*text_pair(case))
        assert [i.taken for i in text.ifs][0] == "ambiguous"
    a = diff_paths(*archive_pair("rules_literal_a"))
    assert [(i.taken, i.reason) for i in a.ifs] == [("then", "constant"), ("neither", "not_run")]
    assert a.ifs[0].evidence[0].call == "aten::mul"
    b = diff_paths(*archive_pair("rules_literal_b"))
    assert [(i.taken, i.reason) for i in b.ifs] == [("else", "constant"), ("then", "present")]
    assert top_ifs(diff_paths(*archive_pair("rules_literal_half"))) == [("then", "constant")]
    assert top_ifs(diff_paths(*archive_pair("rules_literal_quarter"))) == [("else", "constant")]
    assert top_ifs(diff_paths(*text_pair("rules_literal_half"))) == [("ambiguous", "tie")]


def test_archive_constants_are_read_without_running_anything(tmp_path):
    from codeparse.archive.constants import archive_constants

    assert {k: (c.storage, c.shape, c.values) for k, c in archive_constants(archive_pair("cond_runtime")[1]).items()} == {
        "c0": ("LongStorage", (), (2,)), "c1": ("LongStorage", (), (1,))}
    assert archive_constants(archive_pair("rules_literal_quarter")[1])["c0"].scalar == 0.25
    assert archive_constants(archive_pair("tutorial_rnn_loop")[1]) == {}
    # a constants.pkl that names another global is refused, never called
    import zipfile

    marker = tmp_path / "ran"
    evil = b"\x80\x02cos\nsystem\nq\x00X" + len(f"touch {marker}").to_bytes(4, "little") \
        + f"touch {marker}".encode() + b"\x85R\x85."
    path = tmp_path / "m.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("m/constants.pkl", evil)
        z.writestr("m/data.pkl", b"\x80\x02N.")
    assert archive_constants(str(path)) == {} and not marker.exists()


def test_reached_if_with_no_evidence_is_unknown_not_neither():
    # `if y is None:` (its zeros_like dead, dropped by the tracer) and an early return
    for report in both("rules_optional_default"):
        assert top_ifs(report)[0] == ("unknown", "no_evidence")
    for report in both("rules_optional_skip"):
        assert top_ifs(report) == [("then", "absent")]


def test_if_on_a_loop_counter_answers_the_passes_it_sees():
    # `for i in range(self.n): if x.size(0) > i: x = x * 2`, 4 passes, 2 rows: the passes that took
    # the silent else leave nothing, so the trace shows 2 passes of 4
    for report in both("rules_loop_counter"):
        (ans,) = report.ifs
        assert (ans.taken, ans.reason, ans.passes, ans.executions) == (
            "unknown", "loop_passes", ["then", "then"], [])
    for report in both("rules_loop_counter_every"):  # range(3): the header fixes the passes
        (ans,) = report.ifs
        assert (ans.taken, ans.reason, ans.executions) == ("then", "present", ["then"] * 3)


def test_flow_model_with_inlined_helpers_is_compared_not_refused():
    """A RAFT-like model: in .code text the script's helpers (`__torch__.lookup`, `upsample_flow`)
    have no body and the trace inlines them; what both texts show is compared, no CP224."""
    for case in ("rules_flow_convex", "rules_flow_bilinear"):
        text, archive = both(case)
        assert text.diagnostics == [] and archive.diagnostics == []
        assert [lp.iterations for lp in archive.unrolled_loops if lp.module == "self"] == [
            3 if case == "rules_flow_convex" else 2]
    assert top_ifs(diff_paths(*archive_pair("rules_flow_convex"))) == [("then", "present")]
    assert top_ifs(diff_paths(*archive_pair("rules_flow_bilinear"))) == [("else", "present")]
    # a pair that really differs keeps CP224 (test_mismatched_inputs_are_cp224_in_one_line)
    report = diff_paths(text_pair("rules_flow_convex")[0], text_pair("custom_model")[1])
    assert [d.code for d in report.diagnostics] == ["CP224"]


def test_ifs_of_a_submodule_never_called_are_neither():
    report = diff_paths(*archive_pair("rules_skipped_off"))
    assert [(i.module, i.function.rsplit(".", 1)[-1], i.taken, i.reason) for i in report.ifs] == [
        ("self", "forward", "else", "absent"),
        ("self", "clip", "neither", "inlined"), ("self", "clip", "neither", "inlined"),
        ("self.refiner", "forward", "neither", "not_called"), ("self.refiner", "forward", "neither", "not_called")]
    on = diff_paths(*archive_pair("rules_skipped_on"))
    assert {i.reason for i in on.ifs} == {"present"}



def test_literal_arguments_of_an_inlined_function_decide_its_ifs():
    """nn.Embedding calls F.embedding with its constants printed as literals (padding_idx=None,
    max_norm=None): the inlined function's `if padding_idx is not None` is else, and the ifs
    inside its then branch were not reached.  A branch whose calls are in the trace reads present."""
    report = diff_paths(*archive_pair("nn_embedding"))
    assert [(i.line, i.taken, i.reason) for i in report.ifs] == [
        (9, "else", "call_argument"), (11, "neither", "inlined"), (13, "neither", "inlined"),
        (19, "neither", "inlined"), (21, "neither", "inlined"), (33, "else", "call_argument")]
    softmax = diff_paths(*archive_pair("nn_softmax"))  # F.softmax(x, 1, _stacklevel=5): dim is not None
    assert [(i.function.rsplit(".", 1)[-1], i.taken, i.reason) for i in softmax.ifs][-2:] == [
        ("softmax", "else", "call_argument"), ("softmax", "then", "present")]


if __name__ == "__main__":  # the figure docs/diff.md states: PYTHONPATH=. python tests/test_diff.py
    print(accuracy_line())

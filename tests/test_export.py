"""``check --target export``: known answers from real ``torch.export`` runs.

``fixtures/export_expected.json`` records what ``torch.export.export`` and
``draft_export`` did with each model of ``fixtures/models_export.py``
(``fixtures/record_export.py``).  Recall: every recorded data-dependent failure
whose innermost user frame is in archived code is matched by a CP401/CP402/CP405
at that line (its origin or a related line).  Precision: every CP401/CP402/CP405
has a recorded failure at its origin or related lines.  Both are 100 %.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import codeparse
from codeparse.gate.run import check
from codeparse.gate.policy import policy_with
from codeparse.contract.check import Policy

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXPECTED = json.loads((FIXTURES / "export_expected.json").read_text(encoding="utf-8"))
CASES = sorted(EXPECTED["cases"])
BLOCKING = {"CP401", "CP402", "CP405"}
EXPORT = policy_with(Policy(), target="export")


@pytest.fixture(scope="module")
def reports():
    paths = [str(FIXTURES / "archives" / f"{case}.script.pt") for case in CASES]
    report = check(paths, EXPORT)
    return {case: item for case, item in zip(CASES, report.inputs)}


def _lines(finding) -> set[tuple[str, int]]:
    out = {(r.path, r.line) for r in finding.related}
    if finding.origin is not None:
        out.add((finding.origin.path, finding.origin.line))
    return out


def _failures(case: str) -> list[tuple[str, int]]:
    """Innermost user frame of each recorded data-dependent failure (export and draft_export)."""
    rec = EXPECTED["cases"][case]
    out = []
    if rec["export"]["data_dependent"] and rec["export"]["frames"]:
        f = rec["export"]["frames"][-1]
        out.append((f["path"], f["line"]))
    for failure in rec["draft_export"]["failures"]:
        if failure["type"] == "DATA_DEPENDENT_ERROR" and failure["frames"]:
            f = failure["frames"][-1]
            out.append((f["path"], f["line"]))
    return out


def test_recall_and_precision_are_100_percent(reports):
    failures = matched = 0
    predicted = confirmed = 0
    missed, wrong = [], []
    for case in CASES:
        blocking = [f for f in reports[case].findings if f.code in BLOCKING]
        lines = set().union(*(_lines(f) for f in blocking)) if blocking else set()
        recorded = set(_failures(case))
        for frame in _failures(case):
            failures += 1
            if frame in lines:
                matched += 1
            else:
                missed.append((case, frame))
        for f in blocking:
            predicted += 1
            if _lines(f) & recorded:
                confirmed += 1
            else:
                wrong.append((case, f.code, f.origin))
    assert (failures, predicted) == (38, 19)  # the figures in docs/export.md and the README
    assert missed == [] and matched == failures
    assert wrong == [] and confirmed == predicted


def test_verdicts(reports):
    verdicts = {case: reports[case].export.verdict for case in CASES}
    for case in CASES:
        rec = EXPECTED["cases"][case]["export"]
        if rec["data_dependent"]:
            assert verdicts[case] == "blocked", case
        else:
            assert verdicts[case] in ("exports", "exports_with_specializations"), case
    assert verdicts["export_plain"] == "exports"
    assert verdicts["export_shape_static"] == "exports_with_specializations"
    # A named Dim on the branch's dimension: export fails with a constraint violation, which
    # CP403 says (info), not a data-dependent block.
    assert EXPECTED["cases"]["export_shape_named_dim"]["export"]["exception"] == "UserError"
    named = reports["export_shape_named_dim"]
    assert [f.code for f in named.findings] == ["CP403"] and "named Dim" in named.findings[0].message


def test_codes_per_construct(reports):
    def codes(case):
        return [f.code for f in reports[case].findings if f.code.startswith("CP4")]

    assert codes("export_value_if_forward") == ["CP401"]
    assert codes("export_nonzero_size_branch") == ["CP402"]
    assert codes("export_for_nonzero_size") == ["CP402"]
    assert codes("export_while_value") == ["CP401"]
    assert codes("export_int_as_size") == ["CP405"]
    assert codes("export_item_size_branch") == ["CP402"]  # the int(t) is related, not CP405
    assert codes("export_for_range_size") == ["CP403"]
    assert codes("export_training_branch")[0] == "CP404"
    assert codes("export_nonzero_no_branch") == [] and codes("export_masked_no_branch") == []
    f = reports["export_value_bool_above"].findings[0]
    assert (f.origin.line, [r.line for r in f.related]) == (101, [99])  # the if, and the bool() above it
    f = reports["export_nonzero_other_method"].findings[0]
    assert f.origin.line == 133 and 129 in [r.line for r in f.related]  # nonzero in select()


def test_data_dependent_shape_flag_and_loop_conditions():
    archive = codeparse.open_archive(FIXTURES / "archives" / "export_nonzero_other_method.script.pt")
    fn = archive.functions["__torch__.NonzeroOtherMethod.forward"]
    assert fn.ifs[0].condition.kind == "tensor_shape" and fn.ifs[0].condition.data_dependent_shape
    archive = codeparse.open_archive(FIXTURES / "archives" / "export_shape_static.script.pt")
    assert not archive.functions["__torch__.ShapeBranch.forward"].ifs[0].condition.data_dependent_shape
    archive = codeparse.open_archive(FIXTURES / "archives" / "export_for_nonzero_size.script.pt")
    loop = archive.functions["__torch__.ForNonzeroSize.forward"].loops[0]
    assert (loop.condition.kind, loop.condition.data_dependent_shape) == ("tensor_shape", True)
    archive = codeparse.open_archive(FIXTURES / "archives" / "export_while_value.script.pt")
    assert archive.functions["__torch__.WhileValue.forward"].loops[0].condition.kind == "tensor_value"


def test_trace_archive_cannot_tell_and_unknown_warns(tmp_path):
    report = check([str(FIXTURES / "archives" / "export_plain.trace.pt")], EXPORT)
    assert report.inputs[0].export.verdict == "cannot_tell"
    assert "torch.jit.trace" in report.inputs[0].export.reason
    code = tmp_path / "u.code"
    code.write_text("def h(x: int) -> int:\n  if y:\n    return x\n  else:\n    return 1\n")
    item = check([str(code)], EXPORT).inputs[0]
    assert [f.code for f in item.findings] == ["CP406"] and item.export.verdict == "cannot_tell"


def test_target_default_is_trace_and_pyproject_key(tmp_path):
    path = str(FIXTURES / "archives" / "export_value_if_forward.script.pt")
    item = check([path], Policy()).inputs[0]
    assert item.export is None and {f.code for f in item.findings} == {"CP201"}
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.codeparse]\ntarget = "export"\n')
    from codeparse.gate.policy import PolicyError, load_policy

    assert load_policy(pyproject).target == "export"
    pyproject.write_text('[tool.codeparse]\ntarget = "jit"\n')
    with pytest.raises(PolicyError):
        load_policy(pyproject)


def test_cli_table_json_sarif(capsys):
    from codeparse.cli.app import main

    path = str(FIXTURES / "archives" / "export_nonzero_other_method.script.pt")
    assert main(["check", "--target", "export", "--no-color", path]) == 1
    out = capsys.readouterr().out
    assert "export verdict for" in out and "blocked at fixtures/models_export.py:133" in out
    assert main(["check", "--target", "export", "--format", "json", path]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["inputs"][0]["export"]["verdict"] == "blocked"
    assert main(["check", "--target", "export", "--format", "sarif", path]) == 1
    sarif = json.loads(capsys.readouterr().out)
    run = sarif["runs"][0]
    assert run["properties"]["export"][path]["blocked"] == [{"path": "fixtures/models_export.py", "line": 133}]
    assert any(r["message"]["text"] == "decides it" for r in run["results"][0]["relatedLocations"])


def test_every_export_code_is_produced(reports, tmp_path):
    from codeparse.contract.codes import CODES

    produced = {f.code for item in reports.values() for f in item.findings}
    code = tmp_path / "u.code"
    code.write_text("def h(x: int) -> int:\n  if y:\n    return x\n  else:\n    return 1\n")
    produced |= {f.code for f in check([str(code)], EXPORT).inputs[0].findings}  # CP406
    view = ROOT / "fixtures" / "export_paths" / "int_item_view.pt"
    produced |= {f.code for f in check([str(view)], EXPORT).inputs[0].findings}  # CP407
    mine = {c for c in CODES if "CP401" <= c <= "CP419"}
    assert mine <= produced


@pytest.mark.torch
def test_torch_export_still_does_what_was_recorded(monkeypatch):
    """Re-run torch.export.export and draft_export on every fixture model: a torch that
    changes behaviour shows here (then re-record with fixtures/record_export.py)."""
    import sys

    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.chdir(ROOT)
    saved = sys.modules.get("__main__")
    try:
        import record_export

        fresh = json.loads(record_export.dump(record_export.run_all()))
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
    for case in CASES:
        assert fresh["cases"][case] == EXPECTED["cases"][case], case


def test_check_reads_the_archive_as_plain_data_and_finds_what_the_model_path_finds():
    """`check --target export` resolves each archive on plain data (no CodeFile, no
    Archive): for a third of the fixture archives and every legacy archive, its report is
    the one the model path gives (`read_archive`, the rules reading the CodeFile models),
    origins, related lines and verdict included.  The archives share one content cache, as
    in a worker process: debug info met before is taken from it, with its line map."""
    from codeparse.archive.torchscript import read_archive
    from codeparse.text.cache import EntryCache
    from codeparse.gate.run import archive_report, input_data
    from codeparse.contract.records import limits_of

    cache = EntryCache()

    legacy = FIXTURES / "legacy"  # real archives saved by older PyTorch versions
    paths = sorted(str(p) for p in (FIXTURES / "archives").glob("*.pt"))[::3] + sorted(str(p) for p in legacy.glob("*.pt"))
    compared = 0
    for path in paths:
        plain = input_data(path, limits_of(EXPORT), cache=cache)
        if not plain["readable"]:
            continue
        extras: dict = {}
        archive = read_archive(path, EXPORT, extras=extras)
        if any(f.code in ("CP314", "CP315", "CP343") for f in archive.findings):
            continue  # broken debug info: check reports it only for the files it reads
        del extras["files"]  # the rules read the models, dumped
        assert archive_report(path, archive, extras, EXPORT).model_dump(mode="json") == plain, path
        compared += 1
    assert compared == 124  # every readable one (99 fixture archives, 25 of the 26 legacy ones)


def test_check_export_imports_no_pydantic(tmp_path):
    """`check --target export` writes its report from plain data, as the trace target does."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    archive = FIXTURES / "archives" / "export_nonzero_other_method.script.pt"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "codeparse", "check", str(archive), "--isolated",
                           "--target", "export", "--format", "json"], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=120)
    assert proc.returncode == 1 and '"verdict":"blocked"' in proc.stdout.replace(" ", "")
    modules = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
               if line.startswith("import time:") and "|" in line}
    assert "codeparse" in modules and "pydantic" not in modules and "pydantic_core" not in modules


def test_code_texts_take_the_archives_path():
    """A `.code` text under `--target export` is read as an archive's file is: a blocker under
    an argument's branch is conditional (`blocked_when`, as nn.LSTM's archive says for
    `batch_sizes is not None`), a runtime predicate torch.export knows decides its branch."""
    text = FIXTURES / "text"
    paths = [text / "nn_lstm_bare" / "script.get_expected_hidden_size.code", text / "nested_ifs" / "script.code",
             text / "diff_tracing_comparisons" / "script.code"]
    hidden, nested, tracing = check([str(p) for p in paths], EXPORT).inputs
    assert [(f.code, f.severity, f.span.line) for f in hidden.findings] == [("CP404", "info", 4), ("CP405", "warning", 6)]
    (w,) = hidden.export.blocked_when
    assert (w.guard.condition, w.guard.kind, w.guard.line, w.code, w.at.line) == (
        "torch.__isnot__(batch_sizes, None)", "argument", 4, "CP405", 6)
    assert hidden.export.verdict == "exports_with_specializations"
    (f,) = [f for f in nested.findings if f.code in BLOCKING]
    assert (f.code, f.severity, f.span.line, f.args["when"]) == ("CP401", "warning", 13, "when `flag`")
    assert nested.export.verdict == "exports_with_specializations" and nested.export.blocked == []
    assert [f.args.get("decided") for f in tracing.findings] == ["torch.jit._trace.is_tracing() is False under torch.export"] * 2
    assert tracing.export.verdict == "exports" and tracing.export.specializations == 0


def test_an_attribute_the_function_sets_is_not_read_as_saved_state():
    """`self.seen = int(torch.sum(x1))` then `if self.seen > 0:` rests on a tensor's value:
    the condition keeps inference's kind (CP401), in the archive and in its method's text,
    where reading it again took it for an attribute (CP404)."""
    archive, text = check([str(FIXTURES / "archives" / "rule_module_state_set.script.pt"),
                           str(FIXTURES / "text" / "rule_module_state_set" / "script.code")], EXPORT).inputs
    assert [(f.code, f.origin.line) for f in archive.findings if f.args.get("condition") == "torch.gt(self.seen, 0)"] == [
        ("CP401", 140)]
    assert [f.code for f in text.findings if f.span.line == 18] == ["CP401"]


def test_a_blocker_whose_value_only_a_guarded_side_defines_is_conditional():
    """`if not (self.training and self.layer_drop > 0 and torch.rand(1).item() <= self.layer_drop)`,
    as TorchScript prints it: `_20 = torch.le(torch.item(torch.rand([1])), p)` only under
    `if _19:` (else `_20 = False`), `_19` set from `self.training`.  The CP401 at
    `if torch.__not__(_20):` is met on every call, but its value rests on a tensor's only on
    that side: conditional on `_19` (its line the model's), the verdict not `blocked`
    (the module was saved in eval mode: torch.export never draws the random number)."""
    (item,) = check([str(FIXTURES / "archives" / "deep_encoder.script.pt")], EXPORT).inputs
    blockers = [f for f in item.findings if f.code in BLOCKING]
    assert len(blockers) == 12 and {f.severity for f in blockers} == {"warning"}
    for f in blockers:
        (g,) = f.guards
        assert (g.kind, g.branch, g.path, g.line, g.decided) == ("attribute", "then", "fixtures/models_deep.py", 131, None)
        assert f.args["when"] == f"when `{g.condition}`" and "data-dependent only when" in f.message
    assert item.export.verdict == "exports_with_specializations" and item.export.blocked == []
    assert len(item.export.blocked_when) == 12

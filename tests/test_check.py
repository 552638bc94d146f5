"""``codeparse check`` and ``codeparse.check``: every fixture archive, the policy from
pyproject.toml and the command line, output formats, ``--jobs``, exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codeparse.gate.policy import SAFETY_CODES

import codeparse
from codeparse.gate.policy import PolicyError, load_policy
from codeparse.cli.app import main
from codeparse.contract.check import InputReport, Policy, Report

ROOT = Path(__file__).resolve().parent.parent
ARCHIVES = ROOT / "fixtures" / "archives"
LEGACY = ROOT / "fixtures" / "legacy"  # real archives saved by older PyTorch versions (its README)
PYTORCH1 = LEGACY / "torch-js__torch-js__test_model-7f2acda.pt"
CUSTOM_SCRIPT = ARCHIVES / "custom_model.script.pt"
CUSTOM_TRACE = ARCHIVES / "custom_model.trace.pt"
CONDITION_CODES = {"CP201", "CP202", "CP203", "CP204", "CP205", "CP206", "CP207", "CP208"}
# Informational findings any archive may give: a lite-interpreter `bytecode.pkl`.
INFO_CODES = {"CP351"}
# Findings that real fixtures are expected to give besides condition findings.
EXPECTED_OTHER = {
    # an empty code file for the C++ custom-class namespace `torch.classes.torchtext`
    "pytorch__text__jit_pipeline-3b47de6.pt": {"CP109"},
    # a loop carrying a value through 2000 unrolled layers: past the depth limit (CP113)
    "deep_loop_too_long.script.pt": {"CP113"},
}


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def no_pyproject(tmp_path, monkeypatch):
    """Run in an empty folder, so that the repo's pyproject.toml gives no policy."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_fixture_archive_exits_0_without_unexpected_findings(capsys, no_pyproject):
    paths = [ARCHIVES, *(p for p in sorted(LEGACY.glob("*")) if p.is_file() and p.suffix != ".md" and p != PYTORCH1)]
    code, out, err = run(capsys, "check", "--format", "jsonl", *paths)
    assert code == 0, err
    reports = [InputReport.model_validate_json(line) for line in out.splitlines()]
    assert len(reports) == len(list(ARCHIVES.rglob("*.pt"))) + (len(paths) - 1)
    for report in reports:
        assert report.readable and report.files > 0, report.path
        other = {f.code for f in report.findings} - CONDITION_CODES - INFO_CODES
        assert other <= EXPECTED_OTHER.get(Path(report.path).name, set()), (report.path, other)


def test_custom_model_script_and_trace(capsys, no_pyproject):
    code, out, _ = run(capsys, "check", "--format", "json", CUSTOM_SCRIPT, CUSTOM_TRACE)
    assert code == 0  # a tensor-value branch is a warning; the default fails on errors
    report = Report.model_validate_json(out)
    script, trace = report.inputs
    [value] = [f for f in script.findings if f.code == "CP201"]
    assert value.path == f"{CUSTOM_SCRIPT}!custom_model.script/code/__torch__.py"
    assert (value.span.line, value.origin.path, value.origin.line) == (22, "fixtures/models.py", 65)
    assert trace.branches == 0 and trace.findings == []


def test_table_shows_code_and_original_lines(capsys, no_pyproject):
    code, out, _ = run(capsys, "check", CUSTOM_SCRIPT, "--select", "CP201")
    assert code == 0
    line = next(l for l in out.splitlines() if "CP201" in l)
    assert "custom_model.script/code/__torch__.py:22:5" in line
    assert "← fixtures/models.py:65" in line
    assert out.rstrip().endswith("exit 0")


def test_fail_on_warning_from_cli(capsys, no_pyproject):
    code, _, _ = run(capsys, "check", CUSTOM_SCRIPT, "--fail-on", "warning", "--format", "jsonl")
    assert code == 1
    code, _, _ = run(capsys, "check", CUSTOM_TRACE, "--fail-on", "info", "--format", "jsonl")
    assert code == 0  # the trace has no ifs at all


def test_policy_from_pyproject_and_cli_wins(capsys, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.codeparse]\nfail-on = "warning"\nignore = ["CP205"]\nselect = ["CP2"]\n')
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)  # found by searching upward
    policy = load_policy()
    # Found in the checked tree: its selection always keeps the pickle and container codes.
    assert (policy.fail_on, policy.ignore, policy.select) == ("warning", ["CP205"], ["CP2", *SAFETY_CODES])
    code, out, _ = run(capsys, "check", CUSTOM_SCRIPT, "--format", "jsonl")
    assert code == 1
    [report] = [InputReport.model_validate_json(l) for l in out.splitlines()]
    codes = {f.code for f in report.findings}
    assert "CP205" not in codes and "CP201" in codes and all(c.startswith("CP2") for c in codes)
    code, _, _ = run(capsys, "check", CUSTOM_SCRIPT, "--format", "jsonl", "--fail-on", "error")
    assert code == 0  # the command line wins
    code, _, _ = run(capsys, "check", CUSTOM_SCRIPT, "--format", "jsonl", "--ignore", "CP201")
    assert code == 0


def test_bad_policy_is_one_line_exit_2(capsys, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.codeparse]\nfail-onn = "warning"\n')
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "check", CUSTOM_SCRIPT)
    assert code == 2 and err.count("\n") == 1 and "unknown key 'fail-onn'" in err
    code, _, err = run(capsys, "check", CUSTOM_SCRIPT, "--config", os.devnull, "--select", "XX9")
    assert code == 2 and "'XX9' matches no finding code" in err
    with pytest.raises(PolicyError):
        load_policy(tmp_path / "pyproject.toml")


def test_jobs_give_the_same_report(no_pyproject):
    paths = [str(p) for p in sorted(ARCHIVES.glob("nn_*.pt"))[:24]] + [str(CUSTOM_SCRIPT)]
    policy = Policy()
    one = codeparse.check(paths, policy)
    two = codeparse.check(paths, policy, jobs=2)
    assert one == two
    assert [r.path for r in two.inputs] == paths


def test_library_check_and_open_archive(no_pyproject):
    report = codeparse.check([CUSTOM_SCRIPT], Policy(fail_on="warning", select=["CP201"]))
    assert isinstance(report, codeparse.Report)
    assert report.exit_code == 1 and report.counts == {"error": 0, "warning": 1, "info": 0}
    assert isinstance(codeparse.open_archive(CUSTOM_SCRIPT), codeparse.Archive)


def test_directories_are_walked_and_code_files_checked(capsys, no_pyproject):
    tree = no_pyproject / "models"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "m.pt").write_bytes(CUSTOM_SCRIPT.read_bytes())
    (tree / "a" / "x.code").write_text((ROOT / "fixtures" / "text" / "custom_model" / "script.code").read_text())
    (tree / "a" / "notes.txt").write_text("ignored")
    (tree / "a" / "other.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)  # a zip without code: listed
    code, out, _ = run(capsys, "check", tree, "--format", "jsonl", "--select", "CP201")
    reports = [InputReport.model_validate_json(l) for l in out.splitlines()]
    assert [(Path(r.path).name, r.kind) for r in reports] == [("m.pt", "archive"), ("other.zip", "other"),
                                                              ("x.code", "code")]
    assert [len(r.findings) for r in reports] == [1, 0, 1]
    assert code == 0


def test_missing_input_exit_2_and_others_still_checked(capsys, no_pyproject):
    code, out, err = run(capsys, "check", "/nonexistent.pt", CUSTOM_TRACE, "--format", "jsonl")
    assert code == 2
    assert err.strip() == "/nonexistent.pt: CP301 cannot read input: no such file or directory"
    assert [json.loads(l)["readable"] for l in out.splitlines()] == [False, True]


def test_no_progress_bar_when_not_a_terminal(capsys, no_pyproject):
    code, _, err = run(capsys, "check", CUSTOM_SCRIPT, CUSTOM_TRACE, "--format", "jsonl")
    assert code == 0 and err == ""


def _pid(_index: int) -> int:
    return os.getpid()


def test_workers_are_reused_across_inputs_and_start_from_a_ready_parent():
    import importlib

    budget = importlib.import_module("codeparse.gate.budget")
    grammar = importlib.import_module("codeparse.grammar.engine")
    checker = importlib.import_module("codeparse.gate.run")

    def run(jobs: int) -> list[int]:
        return budget.run_bounded([(i,) for i in range(6)], _pid, jobs=jobs, timeout=60, max_memory=1024,
                                  over_budget=lambda index, reason: reason)

    one = run(1)
    assert len(set(one)) == 1 and os.getpid() not in one  # six inputs, one worker process
    assert 1 <= len(set(run(2))) <= min(2, budget.cpu_count())
    # check() readies its own process before forking (imports, grammar, operator tables),
    # so its workers do not each start cold; the parse itself ran in a worker.
    report = codeparse.check([str(ROOT / "fixtures" / "text" / "custom_model" / "script.code")], Policy())
    assert report.inputs[0].readable and checker._warmed
    assert grammar._load_by_id.cache_info().currsize >= 1
    # The text it parses to get ready reads without a diagnostic (else it readies less).
    assert codeparse.parse_text(checker._WARM_UP_TEXT, "code/__torch__.py", as_dict=True)["diagnostics"] == []


def test_inputs_read_in_this_process_collect_as_workers_do_and_the_caller_keeps_its_settings(monkeypatch):
    import gc
    import importlib

    budget = importlib.import_module("codeparse.gate.budget")
    checker = importlib.import_module("codeparse.gate.run")
    seen = []
    real = checker._check_safely

    def reading(*args, **kwargs):
        seen.append((gc.get_threshold(), gc.get_freeze_count() > 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(budget, "available", lambda: False)  # no fork: the inputs read here
    monkeypatch.setattr(checker, "_check_safely", reading)
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        script = str(ROOT / "fixtures" / "text" / "custom_model" / "script.code")
        report = codeparse.check([script, script], Policy())
        assert [i.readable for i in report.inputs] == [True, True]
        assert seen == [((100_000, 50, 100), True)] * 2  # the workers' thresholds, the caller's heap frozen
        assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*before)


def test_a_report_with_no_json_form_still_comes_back_from_its_worker(tmp_path):
    import gc

    # A file name that is not UTF-8: its path holds a lone surrogate, which JSON cannot carry.
    name = os.fsdecode(b"bad\xff.code")
    source = ROOT / "fixtures" / "text" / "custom_model" / "script.code"
    (tmp_path / name).write_bytes(source.read_bytes())
    good = codeparse.check([str(source)], Policy())
    report = codeparse.check([str(tmp_path / name), str(source)], Policy())
    assert [i.path for i in report.inputs] == [str(tmp_path / name), str(source)]
    assert [f.code for f in report.inputs[0].findings] == [f.code for f in good.inputs[0].findings]
    assert report.inputs[1] == good.inputs[0]
    assert gc.get_freeze_count() == 0  # the heap frozen for the workers is given back to the collector


# ------------------------------------------------------------------------- plain data


def test_the_plain_policy_has_the_model_fields_defaults_and_checks():
    """`check` reads its policy as checkdata.Limits (no pydantic): the same fields, in the
    same order, with the same defaults, and policy_with gives the same values either way."""
    from codeparse.gate.policy import policy_with
    from codeparse.contract.defaults import POLICY_DEFAULTS
    from codeparse.contract.records import Limits, dumps, limits_of, policy_model

    assert list(POLICY_DEFAULTS) == list(Policy.model_fields)
    assert Limits().model_dump() == Policy().model_dump() == POLICY_DEFAULTS
    changes = {"select": "cp2, CP301", "ignore": ["cp205"], "fail_on": "warning", "max_entries": 7,
               "timeout_per_input": 5, "target": "export", "exclude": "a/*, b", "per_file_ignores": {"x/*": ["CP2"]},
               "include_library": True}
    plain, model = policy_with(Limits(), **changes), policy_with(Policy(), **changes)
    assert isinstance(plain, Limits) and isinstance(model, Policy)
    assert dumps(plain.model_dump()) == model.model_dump_json()  # 5 -> 5.0, codes upper-cased
    assert limits_of(model) == plain and policy_model(plain) == model
    for field, bad in (("max_entries", 0), ("timeout_per_input", float("nan")), ("fail_on", "sometimes"),
                       ("select", ["XX9"])):
        with pytest.raises(PolicyError):
            policy_with(Limits(), **{field: bad})


def _shape_of(ann):
    """The checkdata shape of a model field's annotation (as INPUT_SHAPE writes it)."""
    import typing

    from pydantic import BaseModel

    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Union and type(None) in args:
        return ("opt", _shape_of(next(a for a in args if a is not type(None))))
    if origin is typing.Literal:
        return frozenset(args)
    if origin is list:
        return [_shape_of(args[0])]
    if origin is dict:
        return ("map", _shape_of(args[1]))
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return {name: _shape_of(info.annotation) for name, info in ann.model_fields.items()}
    return ann


def test_the_shape_a_stored_input_report_is_checked_against_is_the_models():
    """The parent checks an input report read back from a cache folder against
    checkdata.INPUT_SHAPE: exactly the fields, order and types of InputReport."""
    from codeparse.contract.records import INPUT_SHAPE, input_report_ok
    from codeparse.contract.check import InputReport

    assert INPUT_SHAPE == _shape_of(InputReport)
    report = codeparse.check([str(ROOT / "fixtures")], Policy(target="export"))
    for item in report.inputs:
        assert input_report_ok(item.model_dump(mode="json"), item.path)
        assert not input_report_ok(item.model_dump(mode="json"), item.path + "x")


def _plain_and_model(paths: list[str], policy: Policy):
    import importlib

    from codeparse.contract.records import dumps, limits_of, report_model

    checker = importlib.import_module("codeparse.gate.run")
    data = checker.check_data(paths, limits_of(policy))
    return data, report_model(data), dumps


@pytest.fixture(scope="module")
def plain_trace():
    """check's plain report over every fixture and legacy fixture (trace target), its models."""
    return _plain_and_model([str(ROOT / "fixtures")], Policy())  # fixtures/legacy included


@pytest.mark.parametrize("target", ["trace", "export"])
def test_plain_reports_are_the_model_reports_byte_for_byte(request, target):
    """The CLI writes JSON from plain data with json.dumps: over every fixture (archives,
    code files, checkpoints, pickles, legacy archives), the text is the one pydantic writes
    for the models validated from that data, for the report and each input; the models
    codeparse.check builds from it without validating equal the validated ones."""
    if target == "trace":
        data, model, dumps = request.getfixturevalue("plain_trace")
    else:  # a sample (tests/test_export.py compares every archive's export report with the model path's)
        paths = [str(ROOT / "fixtures" / "files"), str(ROOT / "fixtures" / "text" / "custom_model" / "script.code"),
                 str(ROOT / "fixtures" / "missing.pt"), *sorted(str(p) for p in ARCHIVES.glob("*.pt"))[::8]]
        data, model, dumps = _plain_and_model(paths, Policy(target=target))
    assert len(data["inputs"]) > (250 if target == "trace" else 40) and any(not i["readable"] for i in data["inputs"])
    assert {i["kind"] for i in data["inputs"]} >= {"archive", "code", "checkpoint", "pickle", "pt2", "other"}
    validated = Report.model_validate(data)  # the data is what the models hold: built without validation, equal
    assert validated == model
    assert dumps(data, indent=2) == model.model_dump_json(indent=2) == validated.model_dump_json(indent=2)
    for item, built in zip(data["inputs"], model.inputs):
        assert dumps(item) == built.model_dump_json()
    from codeparse.contract.records import input_model

    # Each class's builder (one function per class, written from its fields) against pydantic:
    # equal models with the same fields set, also where a field is left to its default.
    some = next(i for i in data["inputs"] if i["findings"] and i["pickles"])
    assert input_model(some) == InputReport.model_validate(some) == model.inputs[data["inputs"].index(some)]
    assert input_model(some).findings[0].model_fields_set == InputReport.model_validate(some).findings[0].model_fields_set
    short = {"path": "x.pt", "kind": "archive", "readable": True,
             "findings": [{k: v for k, v in f.items() if k not in ("args", "origin", "sources", "related", "library")}
                          for f in some["findings"]]}
    assert input_model(short) == InputReport.model_validate(short)
    assert input_model(short).model_dump_json() == InputReport.model_validate(short).model_dump_json()


def test_the_check_path_gives_the_findings_of_the_archive_model(plain_trace):
    """`check` resolves an archive on plain data; the model path (`open_archive`, every
    `CodeFile` a model) gives the same findings, origins included, for every fixture archive."""
    from codeparse.archive.torchscript import read_archive
    from codeparse.gate.run import archive_report

    data = plain_trace[0]
    compared = 0
    for item in data["inputs"]:
        if item["kind"] != "archive" or not item["readable"] or Path(item["path"]).parent != ARCHIVES:
            continue
        archive = read_archive(item["path"], Policy())
        if any(f.code in ("CP314", "CP315", "CP343") for f in archive.findings):
            continue  # broken debug info: check reports it only for the files it reads
        from_model = archive_report(item["path"], archive, {}, Policy()).model_dump(mode="json")
        # (check marks torch's library code afterwards, for every input alike)
        assert from_model["findings"] == [dict(f, library=False) for f in item["findings"]], item["path"]
        assert (from_model["files"], from_model["branches"]) == (item["files"], item["branches"])
        compared += 1
    assert compared > 200


def test_plain_json_is_what_json_dumps_writes():
    """The report's indented JSON is written by checkdata's own indenter: the text
    json.dumps(indent=2, ensure_ascii=False) gives; a lone surrogate (no UTF-8 form, pydantic
    has no text) is written as its JSON escape, which loads back as the same string."""
    from codeparse.contract.records import dumps, indented_json

    cases = [{}, [], {"a": []}, {"a": {}}, {"x": [{"y": [[]]}]}, {"n": None, "t": True, "f": False},
             [1, -7, 2.5, -0.0, 1e16, 1e-7, 60.0, "é\n\"\\\x1f\u2028\U0001F600"], float("nan"), {1: 2}, "a\ud800b"]
    for case in cases:
        try:
            expected = json.dumps(case, indent=2, ensure_ascii=False)
            expected.encode("utf-8")
        except UnicodeEncodeError:
            expected = json.dumps(case, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace").decode()
            assert expected == '"a\\ud800b"' and json.loads(expected) == case
        assert dumps(case, indent=2) == expected, case
        assert indented_json(case) == json.dumps(case, indent=2), case  # ASCII, as SARIF is written

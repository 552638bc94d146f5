"""The command line: exit codes, outputs, and never a traceback.

Tests call ``main([...])`` in-process (capsys holds stdout/stderr); two tests run
``python -m codeparse`` in a subprocess to check start-up (no torch import).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import codeparse
from codeparse.output import render
from codeparse.cli.app import main
from codeparse.grammar.engine import GrammarError
from codeparse.contract.text import CodeFile, Diagnostic, Span

ROOT = Path(__file__).resolve().parent.parent
TEXT = ROOT / "fixtures" / "text"
CUSTOM_SCRIPT = TEXT / "custom_model" / "script.code"
CUSTOM_TRACE = TEXT / "custom_model" / "trace.code"


def _need(path: Path) -> Path:
    assert path.exists(), f"fixture {path.relative_to(ROOT)} is missing: run python fixtures/generate.py"
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def load_array(out: str) -> list[CodeFile]:
    data = json.loads(out)
    assert isinstance(data, list)
    # extra="forbid": every field printed is a field of the model, and back again.
    return [CodeFile.model_validate(item) for item in data]


def load_lines(out: str) -> list[CodeFile]:
    return [CodeFile.model_validate_json(line) for line in out.splitlines()]


def code_files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".code", ".py"))


# --------------------------------------------------------------------- parse json


def test_json_custom_model_script(capsys):
    path = _need(CUSTOM_SCRIPT)
    code, out, err = run(capsys, "parse", path, "--format", "json")
    assert code == 0, err
    assert err == ""
    [cf] = load_array(out)
    assert cf.path == str(path)
    assert cf.diagnostics == []
    [fn] = cf.functions
    assert fn.name == "forward"
    assert [i.condition.kind for i in fn.ifs] == ["tensor_value", "attribute", "attribute"]


def test_json_trace_has_no_ifs(capsys):
    path = _need(CUSTOM_TRACE)
    code, out, err = run(capsys, "parse", path, "--format", "json")
    assert code == 0, err
    [cf] = load_array(out)
    assert [len(f.ifs) for f in cf.functions] == [0] * len(cf.functions)
    assert cf.functions


def test_json_is_indented_array(capsys):
    path = _need(CUSTOM_SCRIPT)
    _, out, _ = run(capsys, "parse", path, "--format", "json")
    assert out.startswith("[\n  {\n")
    assert out.endswith("\n]\n")


def test_directory_gives_one_code_file_per_file(capsys):
    folder = _need(CUSTOM_SCRIPT).parent
    code, out, err = run(capsys, "parse", folder, "--format", "json")
    assert code == 0, err
    files = load_array(out)
    assert [cf.path for cf in files] == [str(p) for p in code_files_under(folder)]


def test_jsonl_one_line_per_file_in_input_order(capsys):
    _need(CUSTOM_SCRIPT)
    expected = code_files_under(TEXT)
    code, out, err = run(capsys, "parse", TEXT, "--format", "jsonl")
    assert code in (0, 1), err
    lines = out.splitlines()
    assert len(lines) == len(expected)
    files = load_lines(out)
    assert [cf.path for cf in files] == [str(p) for p in expected]


def test_jsonl_keeps_argument_order(capsys):
    script, trace = _need(CUSTOM_SCRIPT), _need(CUSTOM_TRACE)
    code, out, _ = run(capsys, "parse", trace, script, "--format", "jsonl")
    assert code == 0
    assert [cf.path for cf in load_lines(out)] == [str(trace), str(script)]


def test_json_and_jsonl_agree(capsys):
    path = _need(CUSTOM_SCRIPT)
    _, out_json, _ = run(capsys, "parse", path, "--format", "json")
    _, out_jsonl, _ = run(capsys, "parse", path, "--format", "jsonl")
    assert load_array(out_json) == load_lines(out_jsonl)


def test_round_trip_every_fixture(capsys):
    _need(CUSTOM_SCRIPT)
    code, out, err = run(capsys, "parse", TEXT, "--format", "json")
    assert code in (0, 1), err
    for cf in load_array(out):
        again = CodeFile.model_validate_json(cf.model_dump_json())
        assert again == cf


def test_stdin(capsys, monkeypatch):
    text = _need(CUSTOM_SCRIPT).read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text), encoding="utf-8"))
    code, out, err = run(capsys, "parse", "-", "--format", "json")
    assert code == 0, err
    [cf] = load_array(out)
    assert cf.path == "-"
    assert [i.condition.kind for i in cf.functions[0].ifs] == ["tensor_value", "attribute", "attribute"]


def test_stdin_binary(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"def f(\x00)\n"), encoding="utf-8"))
    code, out, err = run(capsys, "parse", "-", "--format", "jsonl")
    assert code == 2
    assert out == ""
    assert err.startswith("-: CP302 binary input")


# ------------------------------------------------------------------ exit codes


def test_missing_file_exit_2_and_other_inputs_continue(capsys, tmp_path):
    path = _need(CUSTOM_SCRIPT)
    missing = tmp_path / "nope.code"
    code, out, err = run(capsys, "parse", missing, path, "--format", "json")
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1
    assert lines[0] == f"{missing}: CP301 no such file or directory"
    [cf] = load_array(out)  # the array is still complete and well formed
    assert cf.path == str(path)


def test_only_missing_file_gives_empty_array(capsys, tmp_path):
    code, out, err = run(capsys, "parse", tmp_path / "nope.code", "--format", "json")
    assert code == 2
    assert json.loads(out) == []
    assert len(err.splitlines()) == 1


def test_binary_file_exit_2(capsys, tmp_path):
    path = tmp_path / "blob.code"
    path.write_bytes(b"def forward(self):\n  return \x00\x01\x02\n")
    code, out, err = run(capsys, "parse", path, "--format", "jsonl")
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"{path}: CP302 binary input (NUL byte at offset 28)")


def _broken_fixture(tmp_path: Path) -> tuple[Path, int]:
    lines = _need(CUSTOM_SCRIPT).read_text(encoding="utf-8").split("\n")
    number = next(i for i, line in enumerate(lines, 1) if line.strip() == "layer1 = self.layer1")
    lines[number - 1] = "  x = = 1"
    path = tmp_path / "broken.code"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path, number


@pytest.mark.parametrize("fmt", ["json", "jsonl", "table"])
def test_unparsable_line_exit_1_with_caret(capsys, tmp_path, monkeypatch, fmt):
    monkeypatch.setenv("COLUMNS", "200")
    path, number = _broken_fixture(tmp_path)
    code, out, err = run(capsys, "parse", path, "--format", fmt)
    assert code == 1
    lines = err.splitlines()
    head = f"{path}:{number}:3: CP101 "
    index = next(i for i, line in enumerate(lines) if line.startswith(head))
    assert lines[index + 1] == "    x = = 1"
    assert lines[index + 2] == "    ^^^^^^^"
    if fmt == "json":
        [cf] = load_array(out)
    elif fmt == "jsonl":
        [cf] = load_lines(out)
    else:
        assert "tensor_value" in out
        return
    assert [d.code for d in cf.diagnostics] == ["CP101"]
    # The rest of the file is still read: the other ifs are reported.
    assert [i.condition.kind for i in cf.functions[0].ifs] == ["tensor_value", "attribute", "attribute"]


def test_unparsable_line_on_stdin_has_caret(capsys, tmp_path, monkeypatch):
    path, number = _broken_fixture(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes()), encoding="utf-8"))
    code, _, err = run(capsys, "parse", "-", "--format", "jsonl")
    assert code == 1
    assert f"-:{number}:3: CP101 " in err
    assert "    ^^^^^^^" in err.splitlines()


def test_unknown_grammar_exit_2(capsys):
    path = _need(CUSTOM_SCRIPT)
    code, out, err = run(capsys, "parse", path, "--grammar", "torchscript-v99", "--format", "json")
    assert code == 2
    assert out == ""
    assert "torchscript-v99" in err
    assert len(err.splitlines()) == 1


def test_grammar_option_accepts_shipped_grammar(capsys):
    path = _need(CUSTOM_SCRIPT)
    code, out, _ = run(capsys, "parse", path, "--grammar", "torchscript-v2", "--format", "jsonl")
    assert code == 0
    assert load_lines(out)[0].grammar == "torchscript-v2"


def test_grammar_error_while_parsing_exit_2(capsys, monkeypatch):
    path = _need(CUSTOM_SCRIPT)

    def broken(*args, **kwargs):
        raise GrammarError("grammars/torchscript-v2.toml: rule 'if': unknown piece {IDNT}")

    monkeypatch.setattr(codeparse, "parse_file", broken)
    code, out, err = run(capsys, "parse", path, path, "--format", "json")
    assert code == 2
    assert json.loads(out) == []
    assert err.splitlines() == ["codeparse: error: grammars/torchscript-v2.toml: rule 'if': unknown piece {IDNT}"]


def test_internal_error_is_one_line_and_continues(capsys, monkeypatch):
    script, trace = _need(CUSTOM_SCRIPT), _need(CUSTOM_TRACE)
    real = codeparse.parse_file

    def flaky(path, *args, **kwargs):
        if str(path) == str(script):
            raise RuntimeError("boom\nsecond line")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(codeparse, "parse_file", flaky)
    code, out, err = run(capsys, "parse", script, trace, "--format", "jsonl")
    assert code == 2
    [line] = err.splitlines()
    assert line.startswith(f"{script}: internal error: RuntimeError: boom")
    assert [cf.path for cf in load_lines(out)] == [str(trace)]


def test_usage_errors_exit_2(capsys):
    code, _, err = run(capsys, "parse", "--format", "xml", "x.code")
    assert code == 2
    assert "xml" in err
    code, _, err = run(capsys, "parse")
    assert code == 2
    assert "PATH" in err
    code, _, err = run(capsys, "frobnicate")
    assert code == 2
    assert "frobnicate" in err


def test_help_and_version(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "parse" in out and "schema" in out and "grammars" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.startswith("codeparse ")


def test_directory_without_code_exit_2(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    code, out, err = run(capsys, "parse", tmp_path, "--format", "json")
    assert code == 2
    assert json.loads(out) == []
    assert err.startswith(f"{tmp_path}: CP301 directory holds no")
    assert len(err.splitlines()) == 1


# ------------------------------------------------------------------------ table


def test_table_output(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")
    path = _need(CUSTOM_SCRIPT)
    code, out, err = run(capsys, "parse", path)
    assert code == 0, err
    assert err == ""
    assert str(path) in out
    assert "forward(self, x: Tensor) -> Tensor" in out
    assert "self.branch_testing (attribute, bool)" in out
    assert "self.custom_layer1.forward" in out
    assert "self.custom_layer2.forward" in out
    for kind in ("tensor_value", "attribute"):
        assert kind in out
    assert "\x1b[" not in out  # not a terminal: no colour codes


def test_table_trace_says_no_ifs(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "parse", _need(CUSTOM_TRACE), "--format", "table")
    assert code == 0
    assert "no if statements" in out


def test_table_narrow_layout(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "parse", _need(CUSTOM_SCRIPT))
    assert code == 0
    # The header and signature lines are soft-wrapped by the terminal; the ifs fit.
    assert max(len(line.rstrip()) for line in out.splitlines()[2:]) <= 80
    assert "self.branch_testing (attribute, bool)" in out
    assert "self.custom_layer2.forward" in out
    assert "resolved" in out and "then calls" in out and "else calls" in out


def test_table_color_flag(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, _ = run(capsys, "parse", _need(CUSTOM_SCRIPT), "--color")
    assert code == 0
    assert "\x1b[" in out


def test_short_calls_dedupe_and_cap():
    path = _need(CUSTOM_SCRIPT)
    cf = codeparse.parse_file(path)
    calls = list(cf.functions[0].calls)
    names = render.short_calls(calls + calls, cap=100)
    assert len(names) == len(set(names))
    assert "self.custom_layer1.forward" in names
    capped = render.short_calls(calls, cap=2)
    if len(set(render.short_calls(calls, cap=100))) > 2:
        assert len(capped) == 3 and capped[-1].startswith("… +")


def test_broken_pipe_returns_exit_code(capsys, monkeypatch):
    import errno

    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    path = _need(CUSTOM_SCRIPT)
    monkeypatch.setattr(sys, "stdout", Closed())
    code = main(["parse", str(path), "--format", "jsonl"])
    assert code == 1


def test_invalid_utf8_is_a_diagnostic_with_caret(capsys, tmp_path):
    path = tmp_path / "latin1.code"
    path.write_bytes(b'def forward(self,\n    x: Tensor) -> Tensor:\n  y = "\xff"\n  return x\n')
    code, out, err = run(capsys, "parse", path, "--format", "jsonl")
    assert code == 1
    [cf] = load_lines(out)
    assert [d.code for d in cf.diagnostics] == ["CP110"]
    lines = err.splitlines()
    assert lines[0].startswith(f"{path}:3:8: CP110 ")
    assert lines[2] == "         ^"


# -------------------------------------------------------------- schema, grammars


def test_schema(capsys):
    code, out, _ = run(capsys, "schema")
    assert code == 0
    schema = json.loads(out)
    assert schema["title"] == "CodeFile"
    assert {"classes", "functions", "diagnostics", "path", "grammar"} <= set(schema["properties"])
    assert schema == CodeFile.model_json_schema()


def test_schema_other_model(capsys):
    code, out, _ = run(capsys, "schema", "--model", "IfStatement")
    assert code == 0
    assert json.loads(out)["title"] == "IfStatement"
    code, _, err = run(capsys, "schema", "--model", "Nope")
    assert code == 2


def test_grammars_json(capsys):
    code, out, _ = run(capsys, "grammars", "--format", "json")
    assert code == 0
    data = json.loads(out)
    ids = [g["id"] for g in data]
    assert "torchscript-v2" in ids
    for g in data:
        assert {"id", "title", "torch_versions", "version_records", "detect", "path"} <= set(g)


def test_grammars_table(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "grammars")
    assert code == 0
    assert "torchscript-v2" in out


# ---------------------------------------------------------------- renderers


def _span(text: str, start: int, end: int) -> Span:
    def pos(offset: int) -> tuple[int, int]:
        line = text.count("\n", 0, offset) + 1
        return line, offset - (text.rfind("\n", 0, offset) + 1) + 1

    (line, col), (end_line, end_col) = pos(start), pos(end)
    return Span(start=start, end=end, line=line, column=col, end_line=end_line, end_column=end_col)


def _diag(text: str, start: int, end: int, code: str = "CP101") -> Diagnostic:
    return Diagnostic(
        code=code, name="x", severity="error", message="msg", path="f.code", span=_span(text, start, end)
    )


def test_render_diagnostic_caret():
    text = "def f():\n  x = = 1\n  return 1\n"
    start = text.index("x = = 1")
    got = render.render_diagnostic(_diag(text, start, start + 7), text)
    assert got.split("\n") == ["f.code:2:3: CP101 msg", "    x = = 1", "    ^^^^^^^"]


def test_render_diagnostic_multiline_carets_to_end_of_first_line():
    text = "def f(a,\n    b):\n  pass\n"
    got = render.render_diagnostic(_diag(text, 4, text.index("b)") + 2), text)
    assert got.split("\n") == ["f.code:1:5: CP101 msg", "  def f(a,", "      ^^^^"]


def test_render_diagnostic_tabs_and_empty_span():
    text = "\tif x:\n"
    got = render.render_diagnostic(_diag(text, 4, 4), text)
    assert got.split("\n")[1:] == ["  \tif x:", "  \t   ^"]


def test_render_diagnostic_without_span_or_text():
    diag = Diagnostic(code="CP109", name="empty_input", severity="warning", message="the input holds no code", path="e.code")
    assert render.render_diagnostic(diag) == "e.code: CP109 the input holds no code"
    text = "a\n"
    assert render.render_diagnostic(_diag(text, 0, 1)) == "f.code:1:1: CP101 msg"


# ---------------------------------------------------------------- subprocess


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_python_m_codeparse(tmp_path):
    path = _need(CUSTOM_SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-m", "codeparse", "parse", str(path), "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(load_array(proc.stdout)) == 1
    proc = subprocess.run(
        [sys.executable, "-m", "codeparse", "parse", str(tmp_path / "missing.code")],
        capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


# The process's own command line, in a fresh process, as `python -m codeparse` (runpy) and
# the console script (`main()` without arguments) run it, with a look at the collector when
# the interpreter ends (atexit handlers run after sys.exit, before its last collection).
_ENTRY = """
import atexit, gc, sys
atexit.register(lambda: print("at exit", gc.get_threshold(), gc.get_freeze_count() > 0))
how, sys.argv = sys.argv[1], ["codeparse", *sys.argv[2:]]
if how == "module":
    import runpy
    runpy.run_module("codeparse", run_name="__main__")
else:
    from codeparse.cli import main
    sys.exit(main())
print("not reached")
"""


@pytest.mark.parametrize("how", ["module", "script"])
@pytest.mark.parametrize("argv, code", [(["rule", "CP201"], 0), (["rule", "CP999"], 2), (["check", "--no-such-option"], 2)])
def test_the_process_command_line_exits_with_its_code_its_heap_frozen(tmp_path, how, argv, code):
    """`python -m codeparse` and the console script end the process with the command's
    exit code; the process collects garbage as a worker does and leaves its heap frozen for
    the interpreter's end.  `main(argv)` (tests, embedding) leaves the collector alone."""
    proc = subprocess.run([sys.executable, "-c", _ENTRY, how, *argv], capture_output=True, text=True, cwd=tmp_path,
                          env=_env(), timeout=120)
    assert proc.returncode == code, proc.stderr
    assert "not reached" not in proc.stdout and "Traceback" not in proc.stderr
    assert proc.stdout.splitlines()[-1] == "at exit (100000, 50, 100) True"


def test_main_with_arguments_leaves_the_collector_alone(capsys):
    import gc

    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    assert main(["rule", "CP201"]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == (thresholds, frozen)
    assert "CP201" in capsys.readouterr().out


def _imported(tmp_path: Path, *argv: str, full: bool = False) -> set[str]:
    """The top-level packages a ``codeparse`` process imports (``-X importtime``); with
    ``full``, the modules by their dotted names."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codeparse", *argv],
        capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    modules = {
        line.split("|")[-1].strip() if full else line.split("|")[-1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "codeparse" in modules  # the -X importtime listing is read correctly
    return modules


# Needed only for what a command is asked for: models (pydantic), the HTML report (jinja2,
# pygments), live modules (torch, numpy), worker processes (multiprocessing, ctypes).
HEAVY = {"pydantic", "pydantic_core", "torch", "numpy", "jinja2", "pygments", "markupsafe", "multiprocessing", "ctypes"}


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_start_up_imports_neither_pydantic_nor_torch_nor_numpy(tmp_path, fmt):
    """The parse path writes JSON and tables from plain data (no pydantic);
    JSON needs no rich either."""
    modules = _imported(tmp_path, "parse", str(_need(CUSTOM_SCRIPT)), "--format", fmt)
    assert not modules & HEAVY
    assert ("rich" in modules) == (fmt == "table")


@pytest.mark.parametrize("fmt", ["json", "jsonl", "sarif", "table"])
def test_check_start_up_imports_no_pydantic_and_rich_only_for_a_table(tmp_path, fmt):
    """`check` on an archive writes its report from plain data: no pydantic, torch, numpy
    or report modules; rich only when a table is asked for (the worker process needs
    ctypes; it is forked without multiprocessing)."""
    archive = ROOT / "fixtures" / "archives" / "custom_model.script.pt"
    modules = _imported(tmp_path, "check", str(_need(archive)), "--isolated", "--format", fmt)
    assert not modules & (HEAVY - {"ctypes"})
    assert ("rich" in modules) == (fmt == "table")


def test_a_check_answered_from_the_cache_folder_imports_no_parser_and_starts_no_worker(tmp_path):
    """A second `check --cache-dir` over unchanged archives takes their reports from the
    folder: neither the parser (`codeparse.parse.statements`, the grammar engine, `regex`) nor a
    worker process (its `ctypes`, which asks to die with its parent) is imported, and the
    output is the first run's."""
    archives = [str(_need(ROOT / "fixtures" / "archives" / name)) for name in ("custom_model.script.pt", "params.script.pt")]
    argv = ["check", *archives, "--isolated", "--format", "jsonl", "--cache-dir", str(tmp_path / "cache")]
    parser_and_worker = {"codeparse.parse.statements", "codeparse.grammar.engine", "ctypes"}
    assert parser_and_worker <= _imported(tmp_path, *argv, full=True)
    assert not _imported(tmp_path, *argv, full=True) & (parser_and_worker | {"regex", "multiprocessing", "pydantic",
                                                                           "torch"})
    again = [a.replace(str(tmp_path / "cache"), str(tmp_path / "other")) for a in argv]  # cold, then warm
    runs = [subprocess.run([sys.executable, "-m", "codeparse", *again], capture_output=True, cwd=tmp_path, env=_env(),
                           timeout=120) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.count(b"\n") == 2


_COMMAND_MODULES_LOADED = """
import sys
from codeparse.cli.app import main
code = main(sys.argv[1:])
loaded = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m in ("codeparse.cli.check", "codeparse.cli.diff",
                                                                   "codeparse.cli.report"))
sys.stderr.write("loaded " + " ".join(loaded) + "\\n")
sys.exit(code)
"""


@pytest.mark.parametrize("argv, loaded", [
    (["parse", str(CUSTOM_SCRIPT), "--format", "json"], ""),
    (["check", str(ROOT / "fixtures" / "archives" / "params.script.pt"), "--isolated", "--format", "json"], "check"),
    (["which", "torch.add", "--source", "table"], "diff"),
    (["rule", "CP201"], "check"),
    (["--help"], "check diff report"),
    (["chek"], "check diff report"),
])
def test_a_command_imports_only_the_module_that_defines_it(tmp_path, argv, loaded):
    """Commands defined in other modules of the command line are registered when asked for
    (click's lazy subcommands): a command's process imports no other command's module;
    the help lists every command, and a mistyped one is told the closest of all."""
    proc = subprocess.run([sys.executable, "-c", _COMMAND_MODULES_LOADED, *argv], capture_output=True, text=True,
                          cwd=tmp_path, env=_env(), timeout=120)
    assert proc.returncode in ((2,) if argv == ["chek"] else (0, 1)), proc.stderr[-2000:]
    assert proc.stderr.splitlines()[-1].rstrip() == f"loaded {loaded}".rstrip()
    if argv == ["--help"]:
        listed = [line.split()[0] for line in proc.stdout.split("Commands:")[1].splitlines() if line.strip()]
        assert listed == sorted(listed) and {"check", "scan", "diff", "capture", "ops", "which", "report", "parse",
                                             "grammars", "schema"} <= set(listed)
    if argv == ["chek"]:
        assert "(Did you mean one of: 'check', 'schema'?)" in proc.stderr


_COMMANDS_LISTED = """
import sys
import click
from codeparse.cli.app import cli
print(" ".join(cli.list_commands(click.Context(cli))))
print(" ".join(sorted(m for m in sys.modules if m.startswith("codeparse.cli."))))
from codeparse.cli.reference import cli as documented
print(documented is cli, " ".join(documented.commands))
"""


def test_the_group_lists_every_command_and_the_documented_one_holds_them_in_their_order(tmp_path):
    """The group names every command without loading a command's module (click's
    ``list_commands``); the group the documentation reads (``codeparse.cli.reference``) is the
    same group with every command registered, in the order they are registered."""
    proc = subprocess.run([sys.executable, "-c", _COMMANDS_LISTED], capture_output=True, text=True, cwd=tmp_path,
                          env=_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed, modules, documented = proc.stdout.splitlines()
    every = ["parse", "schema", "grammars", "check", "scan", "rule", "diff", "capture", "ops", "which", "report"]
    assert listed.split() == sorted(every)
    assert modules.split() == ["codeparse.cli.app", "codeparse.cli.output"]
    assert documented.split() == ["True", *every]


_CLI_REFERENCE = """
import sys
import click
import markdown
sys.path.insert(0, sys.argv[1])
import docs_site
from codeparse.cli.app import cli
html = markdown.markdown(docs_site.cli_page(), extensions=["mkdocs-click", "tables"])
print(" ".join(n for n in cli.list_commands(click.Context(cli)) if f"<h3>{n}</h3>" in html))
"""


def test_the_cli_reference_documents_every_command(tmp_path):
    """The site's CLI reference, as mkdocs-click writes it from the page's directive in a fresh
    process (nothing asked for a command before): a section for every command."""
    proc = subprocess.run([sys.executable, "-c", _CLI_REFERENCE, str(ROOT / "scripts")], capture_output=True,
                          text=True, cwd=tmp_path, env=_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["capture", "check", "diff", "grammars", "ops", "parse", "report", "rule", "scan",
                                   "schema", "which"]


def test_the_parser_for_tools_has_every_command():
    from codeparse.cli.app import create_parser

    from codeparse.cli.app import _COMMAND_MODULES

    commands = create_parser().commands
    assert {"check", "scan", "diff", "capture", "ops", "which", "report", "parse", "rule"} <= set(commands)
    assert set(_COMMAND_MODULES) == set(commands) - {"parse", "schema", "grammars"}  # the map names every one

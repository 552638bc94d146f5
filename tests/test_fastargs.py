"""``codeparse check`` read without click (codeparse.cli.fastargs) gives the command what
click gives it, or leaves the line to click: the option table is click's, option by
option; on generated command lines the parameters (values and order) are click's
wherever the fast reader answers, and it never answers where click refuses the line;
the command run either way prints the same bytes and exits the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import given, settings, strategies as st

from codeparse.cli import fastargs
from codeparse.cli.app import create_parser, main
from codeparse.cli.fastargs import CHECK_OPTIONS, check_params

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "fixtures" / "archives" / "custom_model.script.pt"
CODE = ROOT / "fixtures" / "archive_code"
COMMAND = create_parser().commands["check"]


def click_params(argv: list[str]):
    """The parameters click gives ``check`` for ``argv`` (from ``check``), in order, or the error."""
    try:
        ctx = COMMAND.make_context("check", list(argv[1:]))
    except (click.ClickException, click.exceptions.Exit) as exc:  # Exit: --help
        return exc
    return list(ctx.params.items())


def test_the_table_is_the_click_command_option_by_option():
    options = [p for p in COMMAND.params if isinstance(p, click.Option)]
    assert [p.name for p in options] == [name for name, _, _, _ in CHECK_OPTIONS]
    assert [p.name for p in COMMAND.params if isinstance(p, click.Argument)] == ["paths"]
    for param, (name, words, kind, default) in zip(options, CHECK_OPTIONS):
        assert tuple(param.opts + param.secondary_opts) == words, name
        assert param.default == default, name
        assert not param.multiple and param.nargs == 1 and param.envvar is None and not param.is_eager, name
        if isinstance(kind, tuple) and kind[0] == "flag":
            assert param.is_flag and len(kind[1]) == len(words), name
            for word, value in zip(words, kind[1]):
                assert COMMAND.make_context("check", [word, "p"]).params[name] is value, word
        elif isinstance(kind, tuple):
            assert isinstance(param.type, click.Choice) and tuple(param.type.choices) == kind[1], name
            assert param.type.case_sensitive, name
        elif kind == "int":
            assert isinstance(param.type, click.IntRange), name
            assert (param.type.min, param.type.max, param.type.min_open, param.type.clamp) == (1, None, False, False)
        elif kind == "seconds":
            assert isinstance(param.type, click.FloatRange), name
            assert (param.type.min, param.type.max, param.type.min_open, param.type.max_open) == (0, 1e9, True, False)
        else:
            assert kind == "str" and param.type is click.STRING and not param.is_flag, name
    assert COMMAND.context_settings == {} and create_parser().context_settings == {"help_option_names": ["-h", "--help"]}


# Words of generated command lines: every option word, values good and bad for each kind,
# paths, and what only click reads.
_WORDS = [w for _, words, _, _ in CHECK_OPTIONS for w in words]
_VALUES = ["a.pt", "dir/", "-", "", "CP2,CP301", "0", "1", "2", "007", " 3", "+4", "1_0", "-1", "2.5", ".5", "5.",
           "1e3", "1000000001", "table", "jsonl", "sarif", "JSON", "parquet", "trace", "export", "warning", "never",
           "local", "x=y", "--", "-h", "--help", "-q", "-j2", "-qj", "-oout.json", "--no-such", "--format=jsonl",
           "--jobs=2", "--quiet=1", "--select=", "--color=1", "²"]
_TOKENS = st.sampled_from(_WORDS + _VALUES)


@settings(max_examples=600, deadline=None)
@given(st.lists(_TOKENS, max_size=8))
def test_generated_command_lines_read_as_click_reads_them(words):
    argv = ["check", *words]
    fast = check_params(argv)
    clicked = click_params(argv)
    if fast is None:
        return  # left to click
    assert not isinstance(clicked, Exception), (argv, clicked)
    assert list(fast.items()) == clicked, argv


@pytest.mark.parametrize("argv", [
    ["check", "a.pt"],
    ["check", "--format", "jsonl", "--config", "/dev/null", "--max-entry-bytes", "1073741824", "a.pt", "b.pt"],
    ["check", "-q", "--no-color", "a.pt", "-j", "2", "--select=CP2", "--ignore", "CP205", "-o", "-"],
    ["check", "--target", "export", "--timeout-per-input", "2.5", "--include-library", "-", "--fail-on", "never"],
    ["check", "--cache-dir", "c", "--dask", "local", "--output-format", "parquet", "--exit-zero", "--statistics",
     "--skip-other", "--isolated", "--baseline", "b.json", "--write-baseline", "w.json", "--source-root", "src",
     "--exclude", "x/*", "--extend-exclude", "y/*", "--max-entries", "5", "--max-total-bytes", "9",
     "--max-ratio", "3", "--max-debug-chars", "7", "--max-memory", "64", "p"],
])
def test_usual_command_lines_are_read_without_click(argv):
    assert list(check_params(argv).items()) == click_params(argv)


@pytest.mark.parametrize("argv", [
    ["check"], ["check", "-h"], ["check", "--help", "a.pt"], ["check", "--", "-a.pt"], ["check", "a.pt", "-j2"],
    ["check", "a.pt", "--select", "x", "--select", "y"], ["check", "a.pt", "--jobs", "0"], ["check", "a.pt", "--jobs"],
    ["check", "a.pt", "--format", "JSON"], ["check", "a.pt", "--select", "-q"], ["parse", "a.py"], ["--version"],
    ["check", "a.pt", "--timeout-per-input", "1e3"], ["check", "a.pt", "--quiet=1"], [],
])
def test_other_command_lines_are_left_to_click(argv):
    assert check_params(argv) is None


def test_shell_completion_is_left_to_click(monkeypatch):
    monkeypatch.setenv("_CODEPARSE_COMPLETE", "bash_complete")
    assert check_params(["check", "a.pt"]) is None


def _run(capsys, argv: list[str], use_click: bool, monkeypatch) -> tuple[int, str, str]:
    with monkeypatch.context() as patch:
        if use_click:
            patch.setattr(fastargs, "check_params", lambda args: None)
        code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", [
    ["check", "--format", "jsonl", "--isolated", str(ARCHIVE)],
    ["check", "--format", "json", "--isolated", "--target", "export", str(ARCHIVE), str(CODE)],
    ["check", "--isolated", "--format", "concise", "-q", str(CODE)],
    ["check", "--isolated", str(ARCHIVE), "missing-file.pt"],
    ["check", "--isolated", "--select", "CP9", str(ARCHIVE)],  # a policy error
    ["check", "--isolated", "-o", "/proc/no-such-dir/out.json", str(ARCHIVE)],  # a usage error from the command
])
def test_the_command_prints_and_exits_the_same_either_way(argv, capsys, monkeypatch):
    assert _run(capsys, argv, False, monkeypatch) == _run(capsys, argv, True, monkeypatch)


def test_a_check_process_never_imports_click():
    code = ("import sys, io, contextlib\n"
            "from codeparse.cli.app import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['check', '--isolated', '--format', 'jsonl', {str(ARCHIVE)!r}])\n"
            "assert 'click' not in sys.modules, 'click imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("raised", [KeyboardInterrupt(), EOFError(), BrokenPipeError(32, "Broken pipe"),
                                    OSError(5, "Input/output error"), RuntimeError("boom")])
def test_what_the_command_raises_ends_the_same_either_way(raised, capsys, monkeypatch):
    import codeparse.cli.check as check_module

    def fails(*_args, **_kwargs):
        raise raised

    monkeypatch.setattr(check_module, "check_main", fails)
    real_out, real_err = sys.stdout, sys.stderr
    try:
        fast = _run(capsys, ["check", "a.pt"], False, monkeypatch)
        sys.stdout, sys.stderr = real_out, real_err  # a closed pipe wraps them (as click does)
        slow = _run(capsys, ["check", "a.pt"], True, monkeypatch)
    finally:
        sys.stdout, sys.stderr = real_out, real_err
    assert fast == slow

"""The ``codeparse`` command: a thin shell over the public API.

The commands read inputs, call :func:`codeparse.parse_file` / :func:`codeparse.parse_text`,
pick a renderer from :mod:`codeparse.output.render` and decide where its output goes (results on
stdout, diagnostics and errors on stderr).  Nothing else happens here.

Exit codes: 0 every input was read and understood; 1 some text was read
with diagnostics; 2 an input could not be read at all, the grammar could not be loaded,
the command line was wrong, or codeparse failed internally.  No traceback is ever
printed: unexpected errors become one line naming the input.

:func:`main` returns the exit code, so tests call ``main([...])`` and the console script
(``codeparse = codeparse.cli:main``) and ``python -m codeparse`` pass it to ``sys.exit``.
"""

from __future__ import annotations

import click
import codeparse
import os
import sys
from typing import Any, Optional, Sequence, TextIO

from ..contract.views import view
from ..gate.budget import WORKER_THRESHOLDS, Terminated
from ..output import render
from ..output.escaping import for_text
from .output import opened, output_options

__all__ = ["main", "create_parser", "EXIT_OK", "EXIT_DIAGNOSTICS", "EXIT_ERROR"]

EXIT_OK = 0
EXIT_DIAGNOSTICS = 1
EXIT_ERROR = 2

PROG = "codeparse"


class _Fatal(Exception):
    """Stops a command: its message is already printed; carries the exit code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _version() -> str:
    version = getattr(codeparse, "__version__", None)
    if version:
        return str(version)
    try:
        from importlib.metadata import PackageNotFoundError, version as dist_version

        return dist_version("codeparse")
    except (ImportError, PackageNotFoundError):
        return "unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"{PROG} {_version()}")
    ctx.exit(EXIT_OK)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _input_error(err: TextIO, exc: "codeparse.InputError", fallback: str) -> None:
    path = getattr(exc, "path", None) or fallback
    code = getattr(exc, "code", "CP301")
    err.write(f"{for_text(path)}: {code} {for_text(getattr(exc, 'message', str(exc)))}\n")


def _internal_error(err: TextIO, path: Optional[str], exc: BaseException) -> None:
    from ..contract.errors import missing_extra

    missing = missing_extra(exc, "this command")
    if missing is not None:  # an optional dependency, not a bug: which extra, and how to install it
        err.write(f"{PROG}: error: {for_text(missing)}\n")
        return
    where = f"{for_text(path)}: " if path else ""
    err.write(f"{where}internal error: {for_text(_one_line(exc))} (this is a bug in codeparse; please report it)\n")


class OutputError(Exception):
    """Writing the results failed (disk full, closed or broken stream): ``main`` prints one
    line and exits 2.  Never a bug in codeparse, so never reported as one."""


class _Output:
    """Standard output while a command runs: a failed write or flush is an :class:`OutputError`
    (a closed pipe stays a ``BrokenPipeError``: ``main`` ends quietly)."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            raise OutputError(_io_reason(exc)) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            raise OutputError(_io_reason(exc)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _io_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return _one_line(exc)


# ----------------------------------------------------------------------- reading


def _read_stdin() -> bytes:
    stream = sys.stdin
    if stream is None:
        raise codeparse.InputError("-", "standard input is closed")
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return buffer.read()
    data = stream.read()
    return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data


def _parse_stdin(grammar_id: Optional[str]) -> tuple[Any, str]:
    """Parse standard input as path ``-``; returns the CodeFile's plain data and the text read."""
    from ..text.reader import decode_text

    data = _read_stdin()
    return codeparse.parse_bytes(data, "-", grammar_id, as_dict=True), decode_text(data)


def _is_archive(path: str) -> bool:
    from ..files.zipread import is_archive_path

    return is_archive_path(path)


def _source_text(path: str) -> Optional[str]:
    """The text a file's spans index into, read again only to show source lines."""
    from ..text.reader import decode_text

    try:
        with open(path, "rb") as handle:
            return decode_text(handle.read())
    except OSError:
        return None


# ------------------------------------------------------------------------- parse


def run_parse(
    paths: Sequence[str],
    fmt: str,
    grammar_id: Optional[str],
    out: TextIO,
    err: TextIO,
    color: Optional[bool] = None,
) -> int:
    """The ``parse`` command, with its streams given: returns the exit code."""
    from ..grammar.engine import GrammarError, load_grammar

    if grammar_id is not None:
        try:
            load_grammar(grammar_id)
        except GrammarError as exc:
            err.write(f"{PROG}: error: {exc}\n")
            return EXIT_ERROR

    status = EXIT_OK
    array = render.JsonArrayWriter(out) if fmt == "json" else None

    def emit(code_file: Any, text: Optional[str], source_path: str) -> None:
        # `code_file` is a CodeFile's plain data (code text: no pydantic on this path)
        # or a CodeFile (archive entries); JSON is the same bytes for both.
        nonlocal status
        if isinstance(code_file, dict):
            code_file = view(code_file) if fmt == "table" else code_file
        if fmt == "jsonl":
            out.write(render.render_jsonl_line(code_file) + "\n")
        elif array is not None:
            array.write(code_file)
        else:
            render.render_code_table(code_file, out, color=color)
        diagnostics = view(code_file["diagnostics"]) if isinstance(code_file, dict) else code_file.diagnostics
        if diagnostics:
            status = max(status, EXIT_DIAGNOSTICS)
            if text is None and source_path != "-":
                text = _source_text(source_path)
            out.flush()
            err.write(render.render_diagnostics(diagnostics, text))
            err.flush()

    try:
        for arg in paths:
            skipped: list[dict] = []
            try:
                files = [arg] if arg == "-" else codeparse.iter_inputs([arg], skipped=skipped)
            except codeparse.InputError as exc:
                _input_error(err, exc, arg)
                status = EXIT_ERROR
                continue
            except OutputError:
                raise
            except Exception as exc:  # noqa: BLE001 - never a traceback
                _internal_error(err, arg, exc)
                status = EXIT_ERROR
                continue
            for link in skipped:  # symbolic links out of the walked tree: reported, not read
                err.write(f"{for_text(link['path'])}: {link['code']} {for_text(link['message'])}\n")
                status = max(status, EXIT_DIAGNOSTICS)
            if not files:
                err.write(f"{for_text(arg)}: warning: no .code or .py files found\n")
                continue
            for path in files:
                try:
                    if path == "-":
                        code_file, text = _parse_stdin(grammar_id)
                    elif _is_archive(path):  # one CodeFile per code entry, in stored order
                        from ..archive.torchscript import archive_code_files

                        for code_file, text in archive_code_files(path, grammar_id):
                            emit(code_file, text, path)
                        continue
                    else:
                        code_file, text = codeparse.parse_file(path, grammar=grammar_id, as_dict=True), None
                    emit(code_file, text, path)
                except codeparse.InputError as exc:
                    _input_error(err, exc, path)
                    status = EXIT_ERROR
                except GrammarError as exc:  # the grammar is broken: every input would fail
                    err.write(f"{PROG}: error: {exc}\n")
                    raise _Fatal(EXIT_ERROR) from None
                except (BrokenPipeError, OutputError):  # main() ends quietly / with one line
                    raise
                except Exception as exc:  # noqa: BLE001 - never a traceback
                    _internal_error(err, path, exc)
                    status = EXIT_ERROR
    except _Fatal as stop:
        status = stop.code
    finally:
        if array is not None:
            array.close()
        out.flush()
    return status


# ----------------------------------------------------------------------- commands


# Commands defined in other modules, by name: each `codeparse/cli/<module>.py` named here
# has a `register(group)` function adding its commands.  Those modules import their heavy
# dependencies inside the commands, and a command's module is imported only when that
# command is asked for (or the help that shows every command).
_COMMAND_MODULES: dict[str, str] = {
    "check": "check", "scan": "check", "rule": "check",
    "diff": "diff", "capture": "diff", "ops": "diff", "which": "diff",
    "report": "report",
}


class _LazyGroup(click.Group):
    """The command group, its commands from other modules loaded lazily (click's documented
    way: ``list_commands`` names every command, ``get_command`` imports the module that
    registers the one asked for), so that a command's process imports no other command's
    module.  A name not found registers them all (a command missing from the map is still
    found; a mistyped name is told the closest of all).  ``commands`` holds the commands
    registered so far: a tool that reads it whole (mkdocs-click) reads the group of
    :mod:`codeparse.cli.reference`, which has every command."""

    def __init__(self, *args: Any, lazy: Optional[dict[str, str]] = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})  # command name -> the module of this package that registers it

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        module = self.lazy.get(cmd_name)
        if module is not None:
            self._load(module)
        found = super().get_command(ctx, cmd_name)
        if found is None and self.lazy:
            self.load_all()
            found = super().get_command(ctx, cmd_name)
        return found

    def load_all(self) -> None:
        """Register every command now."""
        for module in sorted(set(self.lazy.values())):
            self._load(module)

    def _load(self, module: str) -> None:
        import importlib

        for name in [n for n, m in self.lazy.items() if m == module]:
            del self.lazy[name]
        importlib.import_module(f".{module}", __package__).register(self)


@click.group(
    name=PROG,
    cls=_LazyGroup,
    lazy=_COMMAND_MODULES,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """Read TorchScript code text: signatures, if-statements and what their
    conditions depend on, self references and calls."""


@cli.command("parse")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@output_options(render.FORMATS, "table", "table for people; json (one array) or jsonl (one CodeFile per line) for tools.")
@click.option("--grammar", "grammar_id", metavar="ID", default=None, help="Force a grammar (see `codeparse grammars`).")
@click.option("--color/--no-color", default=None, help="Colour the table (default: when writing to a terminal).")
def parse_command(paths: tuple[str, ...], fmt: str, output_file: Optional[str], grammar_id: Optional[str],
                  color: Optional[bool]) -> int:
    """Parse code text files, directories of them (.code, .py), or - for stdin.

    Exit status: 0 all read and understood, 1 diagnostics, 2 an input could not be read.
    """
    with opened(output_file) as out:
        return run_parse(paths, fmt, grammar_id, out, sys.stderr, color=color if output_file is None else False)


def _model_names() -> list[str]:
    from ..contract import public_models
    from ..contract.text import Node

    return [name for name, value in public_models().items() if isinstance(value, type) and issubclass(value, Node)]


class _ModelChoice(click.Choice):
    """The model names, listed when the option is used (the models import pydantic,
    which the other commands' start-up does without)."""

    def __init__(self) -> None:
        super().__init__((), case_sensitive=True)

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(_model_names())

    @choices.setter
    def choices(self, _value) -> None:
        pass


@cli.command("schema")
@click.option(
    "--model",
    "model_name",
    type=_ModelChoice(),
    default="CodeFile",
    show_default=True,
    help="Which model's JSON Schema to print.",
)
def schema_command(model_name: str) -> int:
    """Print the JSON Schema of the output (a CodeFile by default)."""
    from ..contract import public_models

    sys.stdout.write(render.render_schema(public_models()[model_name]) + "\n")
    return EXIT_OK


@cli.command("grammars")
@output_options(("table", "json"), "table")
@click.option("--color/--no-color", default=None)
def grammars_command(fmt: str, output_file: Optional[str], color: Optional[bool]) -> int:
    """List the grammars shipped: id, torch versions, version records, detection."""
    from ..grammar.engine import GrammarError, available_grammars, load_grammar

    try:
        infos = available_grammars()
        for info in infos:  # listing a grammar checks all of it (patterns compile lazily)
            load_grammar(info.id).compile_all()
    except GrammarError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_ERROR
    with opened(output_file) as out:
        if fmt == "json":
            out.write(render.render_grammars_json(infos) + "\n")
        else:
            render.render_grammars_table(infos, out, color=color if output_file is None else False)
    return EXIT_OK


def create_parser() -> click.Group:
    """The click command group (for documentation tools and embedding), every command registered."""
    cli.load_all()
    return cli


# --------------------------------------------------------------------------- main


def _silence_stdout() -> None:
    """After a closed pipe (``codeparse parse ... | head``), drop further output quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _output_failed(reason: str) -> int:
    try:
        sys.stderr.write(f"{PROG}: error: cannot write output: {for_text(reason)}\n")
    except Exception:  # noqa: BLE001 - stderr itself is gone
        pass
    _silence_stdout()  # what is still buffered goes nowhere, not to an error at exit
    return EXIT_ERROR


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Output that cannot be written (disk full, standard output closed) is one line on
    standard error and exit 2, never "a bug in codeparse".

    Without ``argv`` this is the process's own command line (the ``codeparse`` console
    script, ``python -m codeparse``), and the process ends when it returns; the garbage
    collector is set for that:

    * it runs as in a check's workers (:data:`codeparse.gate.budget.WORKER_THRESHOLDS`):
      young garbage is collected per 100,000 new objects, not per 700, so the imports
      (some two hundred thousand objects that live until the end) are not walked again
      and again (``python -m codeparse`` sets this before it imports the command line);
    * when the command is done, every object left is frozen out of the collector
      (``gc.freeze``): the interpreter's last collection at exit does not walk the heap
      that is freed with the process anyway (some 8 ms of a 170 ms ``check``).
    """
    if argv is not None:
        return _main(list(argv))
    import gc

    gc.set_threshold(*WORKER_THRESHOLDS)
    try:
        return _main(sys.argv[1:])
    finally:
        gc.freeze()


def _main(args: list[str]) -> int:
    if sys.stdout is None:
        return _output_failed("standard output is closed")
    real = sys.stdout
    sys.stdout = _Output(real)  # type: ignore[assignment]
    try:
        result = cli.main(args=args, prog_name=PROG, standalone_mode=False)
        sys.stdout.flush()
    except OutputError as exc:
        return _output_failed(str(exc))
    except click.UsageError as exc:
        exc.show()
        return EXIT_ERROR
    except click.ClickException as exc:
        exc.show()
        return EXIT_ERROR
    except (click.Abort, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
        return 130
    except Terminated:  # SIGTERM while inputs were read: workers are gone, no output file written
        sys.stderr.write("terminated\n")
        return 143
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_DIAGNOSTICS
    except SystemExit as exc:  # click exits 1 itself when stdout is a closed pipe
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or EXIT_OK
        sys.stderr.write(f"{exc.code}\n")
        return EXIT_ERROR
    except OSError as exc:  # a stream outside the guarded one
        return _output_failed(_io_reason(exc))
    except Exception as exc:  # noqa: BLE001 - never a traceback
        try:
            _internal_error(sys.stderr, None, exc)
        except Exception:  # noqa: BLE001 - stderr itself is gone
            pass
        return EXIT_ERROR
    finally:
        sys.stdout = real
    if isinstance(result, int):
        return result
    return EXIT_OK

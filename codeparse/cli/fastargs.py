"""``codeparse check ...`` read without click: the usual command lines of a CI gate.

Importing click (and the modules it brings: ``inspect``, ``uuid``, ``platform``,
``gettext``) is a good part of a short check's start-up.  :func:`check_params` reads the
command lines whose every word is plain (``check``, then paths and the options of
:data:`CHECK_OPTIONS`, each at most once, ``--name value``, ``--name=value`` or the
short ``-o``, ``-j``, ``-q``, values that convert as click converts them) into the
parameters click would give the command, by the same names and in the same order
(click's: the options in the order given, then the paths, then the others as declared).
Any other word (``--help``, ``--``, an unknown or repeated option, ``-j2``, a value
starting with ``-`` but ``-`` itself, a number out of range, a choice not offered, no
path) gives None, and click reads the line, with its errors and help.  The table is
checked against the click command option by option (tests/test_fastargs.py).
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, Callable, Optional, Sequence

__all__ = ["CHECK_OPTIONS", "check_params", "run_check_fast"]

FORMATS = ("table", "concise", "json", "jsonl", "sarif", "github", "parquet")

# (parameter, option words, kind, default), in click's declaration order; kinds: "str",
# ("choice", choices), "int" (>= 1), "seconds" (0 < x <= 1e9), ("flag", the value of each word).
CHECK_OPTIONS: tuple[tuple[str, tuple[str, ...], Any, Any], ...] = (
    ("fmt", ("--output-format", "--format"), ("choice", FORMATS), "table"),
    ("output_file", ("--output-file", "-o"), "str", None),
    ("jobs", ("--jobs", "-j"), "int", 1),
    ("select", ("--select",), "str", None),
    ("ignore", ("--ignore",), "str", None),
    ("fail_on", ("--fail-on",), ("choice", ("error", "warning", "info", "never")), None),
    ("exclude", ("--exclude",), "str", None),
    ("extend_exclude", ("--extend-exclude",), "str", None),
    ("baseline", ("--baseline",), "str", None),
    ("write_baseline", ("--write-baseline",), "str", None),
    ("source_root", ("--source-root",), "str", None),
    ("include_library", ("--include-library", "--no-include-library"), ("flag", (True, False)), None),
    ("exit_zero", ("--exit-zero",), ("flag", (True,)), False),
    ("statistics", ("--statistics",), ("flag", (True,)), False),
    ("quiet", ("--quiet", "-q"), ("flag", (True, True)), False),
    ("skip_other", ("--skip-other",), ("flag", (True,)), False),
    ("config", ("--config",), "str", None),
    ("isolated", ("--isolated",), ("flag", (True,)), False),
    ("color", ("--color", "--no-color"), ("flag", (True, False)), None),
    ("max_entries", ("--max-entries",), "int", None),
    ("max_entry_bytes", ("--max-entry-bytes",), "int", None),
    ("max_total_bytes", ("--max-total-bytes",), "int", None),
    ("max_ratio", ("--max-ratio",), "int", None),
    ("max_debug_chars", ("--max-debug-chars",), "int", None),
    ("target", ("--target",), ("choice", ("trace", "export")), None),
    ("dask_scheduler", ("--dask",), "str", None),
    ("cache_dir", ("--cache-dir",), "str", None),
    ("timeout_per_input", ("--timeout-per-input",), "seconds", None),
    ("max_memory", ("--max-memory",), "int", None),
)
# option word -> (parameter, kind, value of a flag word)
_BY_WORD: dict[str, tuple[str, Any, Any]] = {
    word: (name, kind, kind[1][i] if isinstance(kind, tuple) and kind[0] == "flag" else None)
    for name, words, kind, _ in CHECK_OPTIONS for i, word in enumerate(words)
}
_COMPLETE = "_CODEPARSE_COMPLETE"  # click's shell-completion switch for this program


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _value(kind: Any, text: str) -> Any:
    """``text`` converted as click converts it for ``kind``, or None where click might
    convert it otherwise or refuse it."""
    if kind == "str":
        return text
    if kind == "int":
        return int(text) if _digits(text) and int(text) >= 1 else None
    if kind == "seconds":  # digits with at most one point: float() reads them as click does
        whole, point, part = text.partition(".")
        if not (whole or part) or (whole and not _digits(whole)) or (part and not _digits(part)):
            return None
        seconds = float(text)
        return seconds if 0 < seconds <= 1e9 else None
    if kind[0] == "choice":
        return text if text in kind[1] else None
    return None


def check_params(args: Sequence[str]) -> Optional[dict[str, Any]]:
    """The parameters of the ``check`` command for ``args`` (the whole command line, from
    ``check``), as click gives them to the command, or None when click is to read it."""
    if not args or args[0] != "check" or _COMPLETE in os.environ:
        return None
    given: dict[str, Any] = {}
    paths: list[str] = []
    words = list(args[1:])
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "-" or (word and not word.startswith("-")):
            paths.append(word)
            continue
        name, equals, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        found = _BY_WORD.get(name)
        if found is None or found[0] in given:
            return None
        param, kind, flag_value = found
        if isinstance(kind, tuple) and kind[0] == "flag":
            if equals:
                return None
            given[param] = flag_value
            continue
        if equals:
            text = attached
        elif i < len(words):
            text = words[i]
            i += 1
        else:
            return None
        if not text or (text.startswith("-") and text != "-"):
            return None
        value = _value(kind, text)
        if value is None:
            return None
        given[param] = value
    if not paths:
        return None
    params = dict(given)
    params["paths"] = tuple(paths)
    for name, _words, _kind, default in CHECK_OPTIONS:
        params.setdefault(name, default)
    return params


def run_check_fast(args: Sequence[str], prog: str, parser: Callable[[], Any]) -> Optional[int]:
    """Run ``check`` for a command line :func:`check_params` reads, as click's ``main``
    (``standalone_mode=False``) would run it: its exit code, and what click does with an
    interrupt, a closed pipe or a usage error on the way (``parser()`` gives the click
    group, built then only).  None when click is to read the line."""
    params = check_params(args)
    if params is None:
        return None
    from .check import check_main

    try:
        return check_main(**params)
    except (EOFError, KeyboardInterrupt) as exc:  # a blank line closes the ^C echo, then Abort
        import click

        click.echo(file=sys.stderr)
        raise click.Abort() from exc
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        from click.utils import _PacifyFlushWrapper

        sys.stdout = _PacifyFlushWrapper(sys.stdout)  # type: ignore[assignment]
        sys.stderr = _PacifyFlushWrapper(sys.stderr)  # type: ignore[assignment]
        raise SystemExit(1) from None
    except Exception as exc:
        click = sys.modules.get("click")
        if click is not None and isinstance(exc, click.UsageError) and exc.ctx is None:
            exc.ctx = _context(args, prog, parser())  # the command it names, as click's invoke sets it
        raise


def _context(args: Sequence[str], prog: str, group: Any) -> Any:
    """The click context of ``check`` for ``args``, as click's ``main`` makes it."""
    import click

    parent = click.Context(group, info_name=prog, **group.context_settings)
    return group.commands["check"].make_context("check", list(args[1:]), parent=parent)

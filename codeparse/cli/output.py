"""The output switches every printing command shares: ``--output-format`` (``--format``
kept as an alias) and ``--output-file``/``-o``.

``output_options(choices, default)`` adds both to a click command as the parameters
``fmt`` and ``output_file``; :func:`opened` gives the stream to write to (standard
output, or the file, created with its folders, written as UTF-8, closed at the end).
"""

from __future__ import annotations

import click
import contextlib
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence, TextIO

__all__ = ["output_options", "opened"]


def output_options(choices: Sequence[str], default: str, help_text: str = "") -> Callable[[Any], Any]:
    """``--output-format/--format`` among ``choices`` and ``--output-file/-o FILE``."""

    def decorate(command: Any) -> Any:
        command = click.option(
            "--output-file", "-o", "output_file", default=None, metavar="FILE",
            help="Write the results to FILE instead of standard output (diagnostics stay on standard error).",
        )(command)
        command = click.option(
            "--output-format", "--format", "fmt", type=click.Choice(list(choices)), default=default,
            show_default=True, help=help_text or None,
        )(command)
        return command

    return decorate


@contextlib.contextmanager
def opened(output_file: Optional[str]) -> Iterator[TextIO]:
    """Standard output, or ``output_file`` opened for writing (its folder created)."""
    if output_file is None or output_file == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    import os
    import tempfile

    path = Path(output_file)
    try:  # written whole or not at all: a temporary file beside it, renamed when complete
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".codeparse-", suffix=".tmp", dir=path.parent)
        handle = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
    except OSError as exc:
        raise click.UsageError(f"cannot write --output-file {output_file}: {exc.strerror or exc}") from None
    try:
        with handle:
            yield handle
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise

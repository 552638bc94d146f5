"""The ``codeparse`` click group: ``parse``, ``schema``, ``grammars``, and the commands of
the modules :data:`_COMMAND_MODULES` names (each has ``register(group)``).

Imported by :func:`codeparse.cli.app.main` for every command line but a ``check`` that
:mod:`codeparse.cli.fastargs` reads without click (click and its imports are a good part
of a short check's start-up).
"""

from __future__ import annotations

import sys
from typing import Optional

import click

from ..output import render
from .about import PROG, version
from .app import EXIT_ERROR, EXIT_OK, run_parse
from .output import opened, output_options

__all__ = ["cli"]


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"{PROG} {version()}")
    ctx.exit(EXIT_OK)


@click.group(
    name=PROG,
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


# Commands defined in other modules: each `codeparse/cli/<module>.py` named here has a
# `register(group)` function.  Those modules import their heavy dependencies inside
# the commands, so registering them keeps start-up small.
_COMMAND_MODULES: tuple[str, ...] = (
    "check",  # check, scan
    "diff",  # diff, capture, ops
    "report",
)


def _register_commands() -> None:
    import importlib

    for name in _COMMAND_MODULES:
        importlib.import_module(f".{name}", __package__).register(cli)


_register_commands()

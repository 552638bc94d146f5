"""``codeparse report PATH... -o report.html``: the HTML report (registered by :mod:`codeparse.cli.app`).

Jinja2 and Pygments (the ``report`` extra) are imported inside the command only, so
registering it adds nothing to the start-up of ``parse`` and ``check``.
"""

from __future__ import annotations

import click
import sys
from typing import Optional

__all__ = ["register"]


def register(group: click.Group) -> None:
    """Add ``report`` to the ``codeparse`` command group."""

    @group.command("report")
    @click.argument("paths", nargs=-1, metavar="PATH...")
    @click.option("-o", "--output-file", "--output", "output", required=True, metavar="FILE",
                  help="Where to write the HTML page (one self-contained file); `-` for standard output.")
    @click.option("--script", default=None, metavar="SCRIPT", help="Script side of a pair (.code, directory or archive).")
    @click.option("--trace", default=None, metavar="TRACE", help="Trace side of the pair.")
    @click.option("--target", type=click.Choice(["trace", "export"]), default=None,
                  help="What condition findings are about, as in `check`: trace (CP2xx) or export (CP4xx, "
                       "with each input's export verdict in its summary). Default: pyproject's target, else trace.")
    @click.option("--config", default=None, metavar="PYPROJECT",
                  help="Read [tool.codeparse] from this file instead of the nearest pyproject.toml.")
    @click.option("--title", default=None, help="Page title (default: the inputs).")
    def report_command(paths: tuple[str, ...], output: str, script: Optional[str], trace: Optional[str],
                       target: Optional[str], config: Optional[str], title: Optional[str]) -> int:
        """Write one self-contained HTML page about archives, .code files and directories
        (and a --script/--trace pair): summary, module tree, highlighted code with every
        if and loop marked by kind, findings with filters, script and trace side by side.

        Exit status: 0 written, 1 written and the pair's diff has diagnostics (two
        unrelated models: as `codeparse diff` exits), 2 an input could not be read (the
        page says why) or the command line is wrong.
        """
        if bool(script) != bool(trace):
            raise click.UsageError("--script and --trace go together")
        if not paths and not script:
            raise click.UsageError("give PATH... and/or --script A --trace B")
        try:
            from ..report.page import write_report
        except ImportError as exc:
            from ..contract.errors import MissingExtra, missing_extra

            missing = missing_extra(exc, "codeparse report") or MissingExtra("report", exc.name or "?",
                                                                             "codeparse report")
            sys.stderr.write(f"codeparse: error: {missing}\n")
            return 2
        from ..gate.policy import PolicyError, load_policy, policy_with

        try:
            policy = load_policy(config, plain=True) if config else load_policy(plain=True)
            policy = policy_with(policy, target=target)
        except PolicyError as exc:
            sys.stderr.write(f"codeparse: error: {exc}\n")
            return 2
        options = {"script": script, "trace": trace, "policy": policy, "title": title}
        if output == "-":  # as `check --output-file -`: the page itself on standard output
            from .output import opened
            from ..report.page import build_report

            html, code = build_report(list(paths), **options)
            with opened(output) as out:  # lone surrogates of a non-UTF-8 name as `\udcff` text, as write_report
                out.write(html.encode("utf-8", "backslashreplace").decode("utf-8"))
            return code
        try:
            code = write_report(output, list(paths), **options)
        except OSError as exc:
            sys.stderr.write(f"{output}: cannot write: {exc.strerror or exc}\n")
            return 2
        sys.stdout.write(f"wrote {output}\n")
        return code

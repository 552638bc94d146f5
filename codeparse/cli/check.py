"""``codeparse check PATH...``: the CI command (registered by :mod:`codeparse.cli.app`).

Checks archives, ``.code`` files and directories of them (recursively), prints the
findings the policy selects (``--format table|json|jsonl|sarif``) and exits 0 clean,
1 findings at or above the failing severity, 2 an input could not be read (or the
command line / policy is wrong).  The policy comes from ``[tool.codeparse]`` in the
nearest ``pyproject.toml``; options given here win.  A progress bar is drawn on
standard error only when it is a terminal.

Everything heavy (the checker, pydantic models, rich) is imported inside the
command, so registering it costs nothing at start-up.
"""

from __future__ import annotations

import click
import json
import sys
from typing import Any, Optional, TextIO

__all__ = ["register", "run_check", "FORMATS", "render_table"]

FORMATS = ("table", "concise", "json", "jsonl", "sarif", "github")


def _progress(total: int, err: TextIO):
    """A rich progress bar on a terminal; else None."""
    if total < 2 or not getattr(err, "isatty", lambda: False)():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(file=err), transient=True)
    return bar


def render_table(report: Any, out: TextIO, color: Optional[bool] = None, width: Optional[int] = None,
                 include_library: bool = False, quiet: bool = False) -> None:
    """Findings as ``path:line:col`` rows, with the original source line when known.

    Every string from the input (paths, messages, origins) passes
    :func:`codeparse.output.escaping.for_text` and is wrapped in a ``Text``, never parsed as markup.
    """
    from rich.table import Table
    from rich.text import Text

    from ..output.escaping import for_text
    from ..output.render import console as log_console

    console = log_console(out, color, width)
    from ..output.reporters import library_summary, shown, summarised

    style = {"error": "bold red", "warning": "yellow", "info": "dim"}
    for item in report.inputs:
        findings = shown(item.findings, include_library)
        if not findings and item.readable and item.kind in ("checkpoint", "pickle", "pt2"):
            continue  # a clean file is silent
        if quiet and not findings:
            continue
        head = f"{item.path} ({item.kind}"
        if not item.readable:
            head += ", unreadable)"
        elif item.kind in ("archive", "code") and not item.pickles:
            head += f", {item.files} code files, {item.branches} ifs)"
        elif item.kind in ("archive", "checkpoint", "pickle", "pt2"):
            head += f", {len(item.pickles)} pickle(s) scanned)"
        elif item.kind == "other":
            head += ": not a model file; not checked)"
        else:
            head += ")"
        console.print(Text(for_text(head), style="bold"))
        if not findings:
            if item.kind != "other":
                hidden = sum(1 for f in item.findings if summarised(f))
                console.print(f"  {hidden} finding(s) in torch's library code" if hidden else "  no findings")
            continue
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False, padding=(0, 1))
        table.add_column("where", overflow="fold")
        table.add_column("code")
        table.add_column("severity")
        table.add_column("message", overflow="fold")
        table.add_column("source", overflow="fold")
        for f in findings:
            where = f.path
            if f.path.startswith(item.path + "!"):
                where = f.path[len(item.path) + 1:]
            if f.span is not None:
                where += f":{f.span.line}:{f.span.column}"
            source = f"← {f.origin.path}:{f.origin.line}" if f.origin else ""
            if f.related:
                source += ("; " if source else "") + "decided at " + ", ".join(f"{r.path}:{r.line}" for r in f.related[:3])
            table.add_row(Text(for_text(where)), f.code, Text(f.severity, style=style[f.severity]),
                          Text(for_text(f.message)), Text(for_text(source)))
        console.print(table)
    for item in report.inputs:
        if item.export is not None:
            from ..output.escaping import for_text
            from ..rules.export import verdict_line

            console.print(Text(for_text(verdict_line(item.path, item.export)), style="bold"))
    summary = None if include_library else library_summary(report)
    if summary:
        console.print(Text(summary, style="dim"))
    if quiet:
        return
    counts = report.counts
    console.print(
        f"{len(report.inputs)} input(s): {counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['info']} info; fail on {report.policy.fail_on}; exit {report.exit_code}"
    )


def _write_report(data: dict, fmt: str, out: TextIO, color: Optional[bool], statistics: bool,
                  quiet: bool) -> None:
    """Write the report (plain data, :func:`codeparse.gate.run.check_data`) in ``fmt``: the
    bytes the models would write, without building them."""
    from ..contract.records import Record, dumps

    report = Record(data)
    policy = report.policy
    if statistics:
        from ..output.reporters import render_statistics, statistics as stats

        if fmt in ("json", "jsonl", "sarif"):
            out.write(json.dumps(stats(report), indent=2) + "\n")
        else:
            render_statistics(report, out)
        return
    if fmt == "json":
        out.write(dumps(data, indent=2) + "\n")
    elif fmt == "jsonl":
        for item in data["inputs"]:
            out.write(dumps(item) + "\n")
    elif fmt == "sarif":
        from .app import _version
        from ..output.sarif import to_sarif

        from ..contract.records import indented_json

        out.write(indented_json(to_sarif(report, _version(), source_root=policy.source_root,
                                         include_library=policy.include_library)) + "\n")
    elif fmt == "concise":
        from ..output.reporters import render_concise

        render_concise(report, out, policy.source_root, policy.include_library, quiet)
    elif fmt == "github":
        from ..output.reporters import render_github

        render_github(report, out, policy.source_root, policy.include_library, quiet)
    else:
        render_table(report, out, color=color, include_library=policy.include_library, quiet=quiet)


def run_check(paths: list[str], fmt: str, options: dict[str, Any], jobs: int, config: Optional[str],
              out: TextIO, err: TextIO, color: Optional[bool] = None, scan_only: bool = False,
              output_file: Optional[str] = None, exit_zero: bool = False, statistics: bool = False,
              quiet: bool = False, write_baseline: Optional[str] = None, skip_other: bool = False,
              cache_dir: Optional[str] = None, dask: Optional[str] = None, isolated: bool = False) -> int:
    """The ``check`` (or, with ``scan_only``, ``scan``) command with its streams given:
    returns the exit code.

    ``config`` names a trusted pyproject.toml; without it the nearest one is read as
    untrusted (it may only lower limits); ``isolated`` reads none (ruff's ``--isolated``).
    """
    from ..contract.records import Limits
    from ..gate.baseline import BaselineError
    from ..gate.budget import cpu_count
    from ..gate.inputs import expand_inputs
    from ..gate.policy import PolicyError, load_cache_dir, load_policy, policy_with
    from ..gate.run import check_data
    from ..output.escaping import for_text
    from .output import opened

    notes: list[str] = []
    try:
        if isolated:
            policy = Limits()
        else:
            policy = (load_policy(config, plain=True) if config
                      else load_policy(notes=notes, plain=True))
        # Exclude globs of a pyproject.toml found in the checked tree cannot exclude a model file.
        untrusted = [] if config or isolated else [*policy.exclude, *policy.extend_exclude]
        policy = policy_with(policy, **options)
        if cache_dir is None and not scan_only:
            if config:
                cache_dir = load_cache_dir(config)
            elif not isolated and load_cache_dir() is not None:
                notes.append("cache-dir in the nearest pyproject.toml is ignored: a folder of stored reports "
                             "comes only from --cache-dir or --config FILE")
    except PolicyError as exc:
        err.write(f"codeparse: error: {for_text(exc)}\n")
        return 2
    for note in notes:
        err.write(f"codeparse: warning: {for_text(note)}\n")
    cpus = cpu_count()
    if jobs > cpus:
        err.write(f"codeparse: warning: --jobs {jobs} is more than the {cpus} CPU(s) available; using {cpus}\n")
        jobs = cpus
    if write_baseline:
        policy = policy.model_copy(update={"baseline": None})
    if fmt == "parquet" and (dask is None or output_file is None):
        err.write("codeparse: error: --output-format parquet needs --dask and --output-file DIR\n")
        return 2
    if dask is not None:
        return _run_dask(paths, fmt, policy, dask, cache_dir, output_file, out, err, color, statistics, quiet,
                         exit_zero)
    skipped: list[str] = []
    inputs = expand_inputs(paths, models_only=scan_only, exclude=[*policy.exclude, *policy.extend_exclude],
                           skip_other=skip_other, untrusted=untrusted, notes=skipped)
    if not quiet:
        for note in skipped:
            err.write(f"codeparse: note: {for_text(note)}\n")
    bar = _progress(len(inputs), err)
    task = None
    if bar is not None:
        bar.start()
        task = bar.add_task("check", total=len(inputs))

    def advance(_report: dict) -> None:
        if bar is not None:
            bar.advance(task)

    try:
        report = check_data(paths, policy, jobs=jobs, progress=advance, scan_only=scan_only,
                            skip_other=skip_other, cache_dir=cache_dir, once=True, untrusted_exclude=untrusted)
    except BaselineError as exc:
        err.write(f"codeparse: error: {exc}\n")
        return 2
    finally:
        if bar is not None:
            bar.stop()
    _unreadable(report, err)
    if write_baseline:
        from ..gate.baseline import write_baseline as write
        from ..contract.records import Record

        count = write(Record(report), write_baseline, policy.source_root)
        err.write(f"codeparse: wrote {count} finding(s) to the baseline {write_baseline}\n")
        return 2 if report["exit_code"] == 2 else 0
    with opened(output_file) as stream:
        _write_report(report, fmt, stream, color if output_file is None else False, statistics, quiet)
        stream.flush()
    if exit_zero and report["exit_code"] == 1:
        return 0
    return report["exit_code"]


def _unreadable(report: dict, err: TextIO) -> None:
    """One line on standard error per input that could not be read."""
    from ..output.escaping import for_text

    for item in report["inputs"]:
        if not item["readable"]:
            reason = item["findings"][0] if item["findings"] else None
            err.write(f"{for_text(item['path'])}: {reason['code']} {for_text(reason['message'])}\n" if reason
                      else f"{for_text(item['path'])}: unreadable\n")


def _run_dask(paths: list[str], fmt: str, policy: Any, scheduler: str, cache_dir: Optional[str],
              output_file: Optional[str], out: TextIO, err: TextIO, color: Optional[bool], statistics: bool,
              quiet: bool, exit_zero: bool) -> int:
    """``check --dask``: the same report as ``--jobs``, or a Parquet dataset (codeparse.gate.scale)."""
    from .output import opened
    from ..output.escaping import for_text
    from ..gate.scale import ScaleError, check_dask

    if "-" in paths:
        err.write("codeparse: error: --dask reads files, not standard input\n")
        return 2
    try:
        from ..contract.records import policy_model

        result = check_dask(paths, policy_model(policy), scheduler, cache_dir=cache_dir,
                            parquet_dir=output_file if fmt == "parquet" else None)
    except ScaleError as exc:
        err.write(f"codeparse: error: {exc}\n")
        return 2
    if fmt != "parquet":
        data = result.model_dump(mode="json")
        _unreadable(data, err)
        with opened(output_file) as stream:
            _write_report(data, fmt, stream, color if output_file is None else False, statistics, quiet)
            stream.flush()
        return 0 if exit_zero and result.exit_code == 1 else result.exit_code
    for row in result.rows:
        if not row["readable"]:
            err.write(f"{for_text(row['path'])}: {for_text(row['reason'] or 'unreadable')}\n")
    counts = result.counts
    folder = for_text(result.folder)
    out.write(f"wrote {folder}/findings and {folder}/inputs (Parquet); {len(result.rows)} input(s): "
              f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info; "
              f"fail on {policy.fail_on}; exit {result.exit_code}\n")
    out.flush()
    return 0 if exit_zero and result.exit_code == 1 else result.exit_code


_FORMAT_HELP = ("table for people; concise (path:line:col: CODE message); json (one Report); jsonl (one "
                "InputReport per line); sarif (2.1.0); github (workflow-command annotations).")


def _policy_options(command: Any) -> Any:
    """The policy switches ``check`` and ``scan`` share (each mirrors a [tool.codeparse] key)."""
    options = [
        click.option("--select", default=None, metavar="CODES", help="Comma-separated codes or prefixes to report."),
        click.option("--ignore", default=None, metavar="CODES", help="Comma-separated codes or prefixes never reported."),
        click.option("--fail-on", "fail_on", type=click.Choice(["error", "warning", "info", "never"]), default=None,
                     help="Lowest severity that fails (default: error, or pyproject's fail-on)."),
        click.option("--exclude", default=None, metavar="GLOBS",
                     help="Comma-separated globs: paths not walked, entries and origins whose findings are dropped."),
        click.option("--extend-exclude", "extend_exclude", default=None, metavar="GLOBS",
                     help="Globs added to exclude."),
        click.option("--baseline", default=None, metavar="FILE", help="Report only findings not recorded in FILE."),
        click.option("--write-baseline", "write_baseline", default=None, metavar="FILE",
                     help="Record every finding reported now in FILE, and exit 0."),
        click.option("--source-root", "source_root", default=None, metavar="DIR",
                     help="Show original source files relative to DIR (default: the working directory)."),
        click.option("--include-library/--no-include-library", "include_library", default=None,
                     help="List findings in torch's own library code one by one (text outputs summarise them)."),
        click.option("--exit-zero", is_flag=True, default=False, help="Exit 0 even when findings fail the check."),
        click.option("--statistics", is_flag=True, default=False, help="Print the count of findings per code instead."),
        click.option("--quiet", "-q", is_flag=True, default=False,
                     help="Print findings only: no summary line, no inputs without findings."),
        click.option("--skip-other", "skip_other", is_flag=True, default=False,
                     help="Files named that are no model file (by their bytes) and no .code are passed over, "
                          "as in a directory walk (the pre-commit hook)."),
        click.option("--config", default=None, metavar="PYPROJECT",
                     help="Read [tool.codeparse] from this file (trusted) instead of the nearest pyproject.toml "
                          "(which may only lower limits)."),
        click.option("--isolated", is_flag=True, default=False, help="Ignore every configuration file."),
        click.option("--color/--no-color", default=None, help="Colour the table (default: when writing to a terminal)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


_POLICY_KEYS = ("select", "ignore", "fail_on", "exclude", "extend_exclude", "baseline", "source_root", "include_library")


def register(group: click.Group) -> None:
    """Add ``check`` and ``scan`` to the ``codeparse`` command group."""
    from .output import output_options

    @group.command("check")
    @click.argument("paths", nargs=-1, required=True, metavar="PATH...")
    @output_options(FORMATS + ("parquet",), "table",
                    _FORMAT_HELP[:-1] + "; parquet (with --dask: a Parquet dataset in the folder --output-file names).")
    @click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Check inputs in this many processes (same results as one).")
    @_policy_options
    @click.option("--max-entries", type=click.IntRange(min=1), default=None, help="Most zip entries per archive.")
    @click.option("--max-entry-bytes", type=click.IntRange(min=1), default=None,
                  help="Most bytes one archive entry read may inflate to.")
    @click.option("--max-total-bytes", type=click.IntRange(min=1), default=None,
                  help="Most bytes all entries read from one archive may inflate to.")
    @click.option("--max-ratio", type=click.IntRange(min=1), default=None,
                  help="Highest inflated/stored size ratio of an entry read.")
    @click.option("--max-debug-chars", type=click.IntRange(min=1), default=None,
                  help="Most characters of distinct source text one .debug_pkl may rebuild (CP315).")
    @click.option("--target", type=click.Choice(["trace", "export"]), default=None,
                  help="Condition findings for torch.jit.trace (CP2xx, the default) or torch.export "
                       "(CP4xx and a verdict per input).")
    @click.option("--dask", "dask_scheduler", default=None, metavar="SCHEDULER_ADDRESS|local",
                  help="Map the check over the inputs on a Dask cluster (the 'scale' extra); "
                       "'local' starts a 2-worker cluster on this machine.")
    @click.option("--cache-dir", default=None, metavar="DIR",
                  help="Keep parsed entries in this folder (JSON) and reuse them on later runs "
                       "(default: pyproject's cache-dir; off when neither is given).")
    @click.option("--timeout-per-input", "timeout_per_input", type=click.FloatRange(min=0, min_open=True, max=1e9),
                  default=None, metavar="SECONDS", help="Stop an input after this many seconds (CP340; default 60).")
    @click.option("--max-memory", "max_memory", type=click.IntRange(min=1), default=None, metavar="MB",
                  help="Most memory one worker process may add while reading an input (CP340; default 1024).")
    def check_command(paths: tuple[str, ...], fmt: str, output_file: Optional[str], jobs: int, config: Optional[str],
                      color: Optional[bool], exit_zero: bool, statistics: bool, quiet: bool,
                      write_baseline: Optional[str], skip_other: bool, dask_scheduler: Optional[str],
                      cache_dir: Optional[str], isolated: bool, **options: Any) -> int:
        """Check model files: saved TorchScript archives (.pt, .ptl, .zip, torch.package, any
        name: the bytes decide), torch.save checkpoints, .pt2 and pickles (their pickles
        scanned), .code files, directories of them, or - for standard input.

        Exit status: 0 clean, 1 findings at or above the failing severity, 2 an input
        could not be read.
        """
        return run_check(list(paths), fmt, options, jobs, config, sys.stdout, sys.stderr, color=color,
                         output_file=output_file, exit_zero=exit_zero, statistics=statistics, quiet=quiet,
                         write_baseline=write_baseline, skip_other=skip_other, cache_dir=cache_dir,
                         dask=dask_scheduler, isolated=isolated)

    @group.command("scan")
    @click.argument("paths", nargs=-1, required=True, metavar="PATH...")
    @output_options(FORMATS, "table", _FORMAT_HELP)
    @_policy_options
    def scan_command(paths: tuple[str, ...], fmt: str, output_file: Optional[str], config: Optional[str],
                     color: Optional[bool], exit_zero: bool, statistics: bool, quiet: bool,
                     write_baseline: Optional[str], skip_other: bool, isolated: bool, **options: Any) -> int:
        """Scan the pickles of model files (TorchScript archives, torch.save checkpoints, .pt2,
        plain pickles) for the globals they name, without unpickling: CP330 dangerous,
        CP331 unknown, CP332 unreadable.  Directories are walked; the bytes decide.
        """
        return run_check(list(paths), fmt, options, 1, config, sys.stdout, sys.stderr, color=color, scan_only=True,
                         output_file=output_file, exit_zero=exit_zero, statistics=statistics, quiet=quiet,
                         write_baseline=write_baseline, skip_other=skip_other, isolated=isolated)

    @group.command("rule")
    @click.argument("code", required=False)
    @click.option("--all", "all_codes", is_flag=True, default=False, help="Every code, in table order.")
    @output_options(("text", "markdown", "json"), "text")
    def rule_command(code: Optional[str], all_codes: bool, fmt: str, output_file: Optional[str]) -> int:
        """Explain a finding code (CP201): meaning, why it matters for trace and export, how to
        fix it, an example.  `rule --all --output-format markdown` is docs/rules.md."""
        from .output import opened
        from ..contract.codes import CODES
        from ..rules.explain import render_json, render_markdown, render_text

        if all_codes == (code is not None):
            sys.stderr.write("codeparse rule: give one CODE or --all\n")
            return 2
        codes = list(CODES) if all_codes else [code.strip().upper()]
        unknown = [c for c in codes if c not in CODES]
        if unknown:
            sys.stderr.write(f"codeparse rule: {unknown[0]} is not a finding code (see codeparse rule --all)\n")
            return 2
        with opened(output_file) as out:
            if fmt == "markdown":
                out.write(render_markdown(codes))
            elif fmt == "json":
                out.write(render_json(codes) + "\n")
            else:
                out.write("\n".join(render_text(c) for c in codes))
        return 0


"""The ``diff``, ``capture``, ``ops`` and ``which`` commands, and their renderers.

Registered into the ``codeparse`` group by :func:`register`.  Nothing heavy is imported
at module level (start-up of ``codeparse parse`` must stay small): the diff, operator
and capture modules are imported inside the commands, torch only by ``capture`` and by
live operator lookups.  As everywhere in the CLI: results on stdout, findings and errors
on stderr, one line per error, never a traceback; exit 0 clean, 1 findings, 2 an input
could not be read.
"""

from __future__ import annotations

import click
import json
import sys
from typing import TYPE_CHECKING, Any, Optional, TextIO

if TYPE_CHECKING:
    from ..contract.diff import DiffReport, OperatorInfo, OperatorUse

__all__ = ["register", "render_diff_table", "filter_report", "render_capture_table", "render_ops_table", "render_which"]

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SOURCES = ("auto", "table", "live")
_EVIDENCE_CAP = 4  # calls listed per cell before "+N more"


# -------------------------------------------------------------------- renderers


def _console(stream: TextIO, color: Optional[bool], width: Optional[int] = None):
    from rich.console import Console

    return Console(file=stream, force_terminal=color, no_color=(color is False), highlight=False,
                   soft_wrap=False, width=width)


def _cell(value: object, style: str = ""):
    """A table cell of input-derived text: a rich ``Text`` (never markup), controls escaped."""
    from rich.text import Text

    from ..output.escaping import for_text

    return Text(for_text(value), style=style)


def _calls(calls: list, line_of: str, cap: int = _EVIDENCE_CAP) -> list[str]:
    items = []
    for c in calls:
        where = getattr(c, line_of)
        items.append(f"{c.call} ({where})" if line_of == "script_line" else
                     f"{c.call} ({c.script_line}→{c.trace_line})")
    if len(items) > cap:
        items = items[:cap] + [f"+{len(items) - cap} more"]
    return items


def _lines_cell(items: list[str]):
    """One cell of input-derived items, one per line, each escaped on its own."""
    from rich.text import Text

    from ..output.escaping import for_text

    return Text("\n".join(for_text(item) for item in items))


_MANGLE = "___torch_mangle_"
ONLY = ("all", "frozen", "lost")


def _short_origin(origin) -> str:
    if origin is None:
        return "-"
    return f"{origin.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{origin.line}"


def _unmangled(name: str) -> str:
    """``__torch__.torch.nn.modules.linear.___torch_mangle_3.Linear.forward`` -> without the mangle part."""
    return ".".join(p for p in name.split(".") if not p.startswith(_MANGLE))


def _taken_cell(i):
    from rich.text import Text

    taken = Text(i.taken, style="bold")
    taken.append(f"\n({i.reason})", style="dim")
    if i.taken == "mixed" or (i.passes and len(i.passes) > 1):
        shown = ",".join(i.passes or i.executions)
        taken.append(f"\n{shown}", style="dim")
    if i.runs > 1:
        taken.append(f"\n{i.runs} runs", style="dim")
    if i.costs is not None and i.taken == "ambiguous":
        taken.append(f"\ncost then {i.costs['then']} = else {i.costs['else']}", style="dim")
    return taken


def filter_report(report: "DiffReport", only: str = "all", module: Optional[str] = None) -> "DiffReport":
    """The report restricted to one module path (and its submodules) and to ``only``:
    ``frozen`` keeps the ifs a trace decided (then, else, mixed), ``lost`` keeps lost calls."""
    def in_module(m: str) -> bool:
        return module is None or m == module or m.startswith(module + ".")

    ifs = [i for i in report.ifs if in_module(i.module)]
    lost = [c for c in report.lost_calls if in_module(c.module)]
    loops = [lp for lp in report.unrolled_loops if in_module(lp.module)]
    baked = [b for b in report.baked_constants if in_module(b.module)]
    if only == "frozen":
        ifs, lost, loops, baked = [i for i in ifs if i.taken in ("then", "else", "mixed")], [], [], []
    elif only == "lost":
        ifs, loops, baked = [], [], []
    from ..trace.compare import summarize

    return report.model_copy(update={
        "ifs": ifs, "lost_calls": lost, "unrolled_loops": loops, "baked_constants": baked,
        "modules": [m for m in report.modules if in_module(m.module)],
        "summary": summarize(ifs, lost, loops, baked),
    })


def _grouped_ifs(ifs: list) -> list[tuple]:
    """Rows of the ifs table: library code (``__torch__.torch.*``) repeated per module instance is
    one row with its count when every copy answered alike; user code row by row."""
    groups: dict[tuple, list] = {}
    order: list[tuple] = []
    for i in ifs:
        if i.function.startswith("__torch__.torch."):
            key = (_unmangled(i.function), i.condition, i.taken, i.reason, tuple(i.executions))
        else:
            key = (id(i),)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(i)
    return [(groups[k][0], len(groups[k])) for k in order]


def render_diff_table(report: "DiffReport", stream: TextIO, color: Optional[bool] = None,
                      width: Optional[int] = None) -> None:
    """The diff for people: a summary first, then ifs, lost calls, unrolled loops, baked
    constants (every input string passes :mod:`codeparse.output.escaping` and reaches rich as
    ``Text``, never as markup)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from ..output.render import KIND_STYLE, console as log_console

    console = log_console(stream, color, width)
    head = Text()
    head.append_text(_cell(f"script {report.script}", style="bold"))
    head.append("  vs  ")
    head.append_text(_cell(f"trace {report.trace}", style="bold"))
    console.print(head, soft_wrap=True)
    n = report.summary
    if n:
        console.print(Text(
            f"{n['ifs']} ifs: {n['frozen']} frozen, {n['kept']} kept, {n['ambiguous']} ambiguous, "
            f"{n['not_run']} not run, {n['mixed']} mixed; {n['lost_calls']} lost calls, "
            f"{n['unrolled_loops']} unrolled loops, {n['baked_constants']} baked constants"), soft_wrap=True)
        if n.get("not_described"):
            console.print(Text(
                f"{n['not_described']} ifs abstain (not_described): the script makes calls there, unconditionally, "
                "that the trace lacks, so the script text does not describe the traced run"), soft_wrap=True)
    if report.ifs:
        sources = any(i.origin is not None for i in report.ifs)  # archives with debug info
        table = Table(title="ifs", box=box.SIMPLE_HEAD, show_lines=False, title_justify="left")
        for col in ("module", "line") + (("source",) if sources else ()) + (
                "kind", "taken", "condition", "evidence (script→trace line)"):
            table.add_column(col, overflow="fold")
        for i, count in _grouped_ifs(report.ifs):
            evidence = _calls(i.evidence, "trace_line") or (
                ["missing:"] + _calls(i.missing, "script_line") if i.missing else ["-"])
            module = i.module if count == 1 else f"{i.module} (+{count - 1} alike)"
            where = [_cell(_short_origin(i.origin))] if sources else []
            table.add_row(_cell(module), str(i.line), *where,
                          Text(i.kind, style=KIND_STYLE.get(i.kind, "")), _taken_cell(i),
                          _cell(i.resolved or i.condition), _lines_cell(evidence))
        console.print(table)
    elif not report.lost_calls:
        console.print(Text("no ifs in the script", style="dim"))
    if report.lost_calls:
        sources = any(c.origin is not None for c in report.lost_calls)
        lost = Table(title="lost calls (the trace never makes them)", box=box.SIMPLE_HEAD, title_justify="left")
        for col in ("module", "line") + (("source",) if sources else ()) + ("call", "inside"):
            lost.add_column(col, overflow="fold")
        for c in report.lost_calls:
            where = [_cell(_short_origin(c.origin))] if sources else []
            lost.add_row(_cell(c.module), str(c.line), *where, _cell(c.call), _cell(c.inside or "-"))
        console.print(lost)
    if report.unrolled_loops:
        loops = Table(title="loops", box=box.SIMPLE_HEAD, title_justify="left")
        for col in ("module", "line", "loop", "iterations", "body calls repeated"):
            loops.add_column(col, overflow="fold")
        for lp in report.unrolled_loops:
            its = "kept" if lp.kept else ("?" if lp.iterations is None else str(lp.iterations))
            loops.add_row(_cell(lp.module), str(lp.line), _cell(lp.loop), its,
                          _cell(", ".join(c.call for c in lp.evidence) or "-"))
        console.print(loops)
    if report.baked_constants:
        baked = Table(title="baked constants", box=box.SIMPLE_HEAD, title_justify="left")
        for col in ("module", "lines", "operator", "arg", "script", "trace"):
            baked.add_column(col, overflow="fold")
        for b in report.baked_constants:
            baked.add_row(_cell(b.module), f"{b.script_line}→{b.trace_line}", _cell(b.operator),
                          _cell(b.argument), _cell(b.script), _cell(b.trace))
        console.print(baked)
    if report.modules:
        console.print(Text("functions compared", style="italic"))
    for m in report.modules:
        console.print(_cell(f"  {m.module}: {m.script_function} ↔ {m.trace_function} "
                            f"({m.matched} events matched, {len(m.trace_only)} only in the trace)", style="dim"),
                      soft_wrap=True)


def render_ops_table(uses: list["OperatorUse"], stream: TextIO, color: Optional[bool] = None,
                     locations: int = 3, width: Optional[int] = None) -> None:
    """One block per operator: name, count, spellings, first places, then its schemas."""
    from rich.text import Text

    console = _console(stream, color, width)
    total = sum(u.count for u in uses)
    console.print(Text(f"{len(uses)} operators, {total} calls", style="dim"))
    for u in uses:
        head = Text()
        head.append_text(_cell(u.operator, style="bold" if u.known else "bold red"))
        head.append_text(_cell(f"  ×{u.count}  as {', '.join(u.callees)}"))
        console.print(head, soft_wrap=True)
        where = u.locations[:locations] + ([f"+{len(u.locations) - locations} more"] if len(u.locations) > locations else [])
        console.print(_cell("  at " + ", ".join(where), style="dim"), soft_wrap=True)
        if not u.known:
            console.print(Text("  unknown operator: no schema in torch", style="red"), soft_wrap=True)
        for schema in u.schemas:
            console.print(_cell("  " + schema), soft_wrap=True)


def render_capture_table(report: Any, out: TextIO, color: Optional[bool] = None,
                         width: Optional[int] = None) -> None:
    """A capture for people: failures, TracerWarnings, the diff, the files saved."""
    from ..output.escaping import for_text

    out.write(f"{for_text(report.module)}\n")
    if getattr(report, "outputs_wrapped", None):
        out.write(f"  outputs wrapped ({report.outputs_wrapped}) for the trace\n")
    for kind, err in (("script", report.script_error), ("trace", report.trace_error)):
        if err is not None:
            where = f" at {for_text(err.file)}:{err.line}" if err.file else ""
            out.write(f"  {kind} failed{where}: {for_text(err.message)}\n")
    for w in report.tracer_warnings:
        out.write(f"  TracerWarning {for_text(w.file)}:{w.line}: {for_text(w.message)}\n")
    if report.diff is not None:
        render_diff_table(report.diff, out, color, width)
    for path in report.saved:
        out.write(f"  saved {for_text(path)}\n")


def render_which(name: str, operator: str, info: Optional["OperatorInfo"], stream: TextIO) -> None:
    from ..output.escaping import for_text

    stream.write(f"{for_text(name)} → {for_text(operator)}\n")
    if info is None:
        stream.write("  not a registered operator: TorchScript cannot call it\n")
        return
    stream.write(f"  TorchScript: {'supported' if info.scriptable else 'not supported'} "
                 f"(schemas from {'the installed torch' if info.source == 'live' else 'the bundled table'}"
                 f", torch {info.torch_version})\n")
    stream.write("  Python: " + ", ".join(info.bindings) + "\n")
    stream.write(f"  overloads ({len(info.schemas)}):\n")
    for s in info.schemas:
        stream.write(f"    {s}\n")


# --------------------------------------------------------------------- commands


def _fail(message: str) -> int:
    sys.stderr.write(message.rstrip("\n") + "\n")
    return EXIT_ERROR


def _dump(model: Any) -> str:
    return model.model_dump_json(indent=2)


def _diagnostics(diags: list) -> None:
    from ..output.render import render_diagnostics

    if diags:
        sys.stderr.write(render_diagnostics(diags))


def register(group: click.Group) -> None:
    """Add ``diff``, ``capture``, ``ops`` and ``which`` to the ``codeparse`` group."""

    from .output import opened, output_options

    @group.command("diff")
    @click.argument("script")
    @click.argument("trace")
    @output_options(("table", "json"), "table")
    @click.option("--method", default="forward", show_default=True, help="The method to compare.")
    @click.option("--only", type=click.Choice(ONLY), default="all", show_default=True,
                  help="frozen: only the ifs the trace decided; lost: only the lost calls.")
    @click.option("--module", "module_path", metavar="PATH", default=None,
                  help="Only this module path and its submodules (self.layer1).")
    @click.option("--color/--no-color", default=None)
    def diff_command(script: str, trace: str, fmt: str, output_file: Optional[str], method: str, only: str,
                     module_path: Optional[str],
                     color: Optional[bool]) -> int:
        """Compare the script and the trace of one module: which branch each `if` took in the
        trace, the submodule calls it lost, the loops it unrolled, the values it baked in.

        SCRIPT and TRACE are .code files, directories of archive code, or archives.
        """
        from ..contract.errors import InputError
        from ..trace.compare import diff_paths

        try:
            report = diff_paths(script, trace, method)
        except InputError as exc:
            return _fail(f"{exc.path}: {exc.code} {exc.message}")
        except Exception as exc:  # noqa: BLE001 - never a traceback
            return _fail(f"codeparse diff: internal error: {type(exc).__name__}: {exc}".splitlines()[0])
        if any(d.code == "CP224" for d in report.diagnostics):  # not one model: no table of nonsense
            _diagnostics([d for d in report.diagnostics if d.code == "CP224"])
            return EXIT_FINDINGS
        report = filter_report(report, only, module_path)
        with opened(output_file) as out:
            if fmt == "json":
                out.write(_dump(report) + "\n")
            else:
                render_diff_table(report, out, color if output_file is None else False)
        _diagnostics(report.diagnostics)
        return EXIT_FINDINGS if report.diagnostics else EXIT_OK

    @group.command("capture")
    @click.argument("target", metavar="FILE.py:FACTORY")
    @click.option("--save", "save_dir", metavar="DIR", default=None,
                  help="Write script.code, trace.code, script.pt and trace.pt there.")
    @output_options(("table", "json"), "table")
    @click.option("--check-trace/--no-check-trace", default=True, show_default=True)
    @click.option("--export", "export", is_flag=True, default=False,
                  help="Instead: run torch.export.export and draft_export with the factory's dynamic_shapes "
                       "and check codeparse's CP401/CP402/CP405 predictions against them (exit 1 on disagreement).")
    @click.option("--color/--no-color", default=None)
    def capture_command(target: str, save_dir: Optional[str], fmt: str, output_file: Optional[str],
                        check_trace: bool, export: bool, color: Optional[bool]) -> int:
        """Script and trace a live module (needs torch) and compare them.

        FACTORY() in FILE.py (whose folder goes first on sys.path) returns (module, inputs)
        or a dict {module, inputs, dynamic_shapes?, check_inputs?, wrap_outputs?}:
        check_inputs go to torch.jit.trace; wrap_outputs (or, when the outputs hold lists or
        dicts, a wrapper flattening them) lets such a model be traced.  Exit 1 when scripting
        or tracing failed or the trace raised TracerWarnings.
        """
        from ..contract.errors import InputError
        from ..infer.operators import torch_available

        if not torch_available():
            return _fail("codeparse capture: torch is not installed (pip install torch)")
        from ..trace.capture import capture, load_factory

        if export:
            from ..trace.exportcheck import check_export, render_export_check

            run = lambda: check_export(load_factory(target))  # noqa: E731
            render = render_export_check
            status = lambda report: EXIT_OK if report.agrees else EXIT_FINDINGS  # noqa: E731
        else:
            run = lambda: capture(load_factory(target), save_dir=save_dir, check_trace=check_trace)  # noqa: E731
            render = lambda report, out: render_capture_table(  # noqa: E731
                report, out, color if output_file is None else False)
            status = lambda report: EXIT_FINDINGS if report.diagnostics else EXIT_OK  # noqa: E731
        # One error rule for both modes: a coded input error, or one line naming the exception.
        try:
            report = run()
        except InputError as exc:
            return _fail(f"{exc.path}: {exc.code} {exc.message}")
        except Exception as exc:  # noqa: BLE001
            return _fail(f"codeparse capture: {type(exc).__name__}: {exc}".splitlines()[0])
        with opened(output_file) as out:
            if fmt == "json":
                out.write(_dump(report) + "\n")
            else:
                render(report, out)
        return status(report)

    @group.command("ops")
    @click.argument("paths", nargs=-1, required=True, metavar="PATH...")
    @output_options(("table", "json"), "table")
    @click.option("--source", type=click.Choice(SOURCES), default="auto", show_default=True,
                  help="Schemas from the installed torch (live), the bundled table, or live when torch is installed.")
    @click.option("--color/--no-color", default=None)
    def ops_command(paths: tuple[str, ...], fmt: str, output_file: Optional[str], source: str,
                    color: Optional[bool]) -> int:
        """List every operator the code calls, with counts, places and schemas.

        PATH is a .code file, a directory of code, or an archive.  Unknown operators are
        findings (CP220, exit 1).
        """
        from ..contract.errors import InputError
        from ..trace.sides import load_side
        from ..infer.operators import inventory, torch_available

        if source == "live" and not torch_available():
            return _fail("codeparse ops: --source live needs torch, which is not installed")
        files = []
        for path in paths:
            try:
                files.extend(u.code_file for u in load_side(path).units)
            except InputError as exc:
                return _fail(f"{exc.path}: {exc.code} {exc.message}")
        try:
            uses, diags = inventory(files, source)
        except (OSError, ValueError) as exc:  # the bundled table is missing or damaged
            return _fail(f"codeparse ops: cannot read the operator table: {exc}".splitlines()[0])
        with opened(output_file) as out:
            if fmt == "json":
                out.write(json.dumps([u.model_dump(mode="json") for u in uses], indent=2) + "\n")
            else:
                render_ops_table(uses, out, color if output_file is None else False)
        _diagnostics(diags)
        return EXIT_FINDINGS if diags else EXIT_OK

    @group.command("which")
    @click.argument("name")
    @output_options(("text", "json"), "text")
    @click.option("--source", type=click.Choice(SOURCES), default="auto", show_default=True)
    def which_command(name: str, fmt: str, output_file: Optional[str], source: str) -> int:
        """Show the operator behind NAME (torch.add, torch._C._nn.linear, aten::add.Tensor):
        its overload schemas, the Python names that reach it, whether TorchScript supports it."""
        from ..infer.operators import lookup, torch_available

        if source == "live" and not torch_available():
            return _fail("codeparse which: --source live needs torch, which is not installed")
        from ..grammar.engine import GrammarError

        try:
            operator, info = lookup(name, source)
        except (OSError, ValueError, GrammarError) as exc:
            return _fail(f"codeparse which: cannot read the operator table: {exc}".splitlines()[0])
        if operator is None:
            return _fail(f"codeparse which: {name!r} does not name an operator")
        with opened(output_file) as out:
            if fmt == "json":
                payload = {"name": name, "operator": operator,
                           "info": info.model_dump(mode="json") if info is not None else None}
                out.write(json.dumps(payload, indent=2) + "\n")
            else:
                render_which(name, operator, info, out)
        return EXIT_OK if info is not None else EXIT_FINDINGS

"""A script and its trace side by side: which branch the trace took at each if."""

from __future__ import annotations

from .data import FileView, KINDS, LineView, Mark, PairView, _find_function

__all__ = ["collect_pair"]


# How a script `if` fared in the trace, as the pair view labels it.
TAKEN = {
    "then": ("frozen (then)", "frozen"),
    "else": ("frozen (else)", "frozen"),
    "kept": ("kept", "kept"),
    "ambiguous": ("ambiguous", "ambiguous"),
    "unknown": ("ambiguous", "ambiguous"),
    "mixed": ("mixed (loop passes differ)", "ambiguous"),
    "neither": ("not run", "notrun"),
}


def collect_pair(pair_id: str, script: str, trace: str, highlight) -> PairView:
    """The script and trace texts side by side, each script ``if`` labelled by the diff."""
    from ..contract.errors import InputError
    from ..trace.compare import diff
    from ..trace.sides import load_side

    view = PairView(id=pair_id, script=script, trace=trace)
    try:
        s_side, t_side = load_side(script), load_side(trace)
        report = diff(s_side, t_side)
    except InputError as exc:
        view.error = f"{exc.code} {exc.message}" if getattr(exc, "code", None) else str(exc)
        return view
    s_units = {u.code_file.path: u for u in s_side.units}
    t_units = {u.code_file.path: u for u in t_side.units}
    ifs_at = {(d.path, d.line): d for d in report.ifs}
    lost_at = {(c.path, c.line): c for c in report.lost_calls}
    loops_at = {(lp.path, lp.line): lp for lp in report.unrolled_loops}
    view.lost, view.unrolled, view.baked, view.ifs = (report.lost_calls, report.unrolled_loops,
                                                      report.baked_constants, report.ifs)
    summary = getattr(report, "summary", None) or {}
    if summary:  # diff's own counts (kept / frozen / ambiguous / not run / mixed)
        names = {"kept": "kept", "frozen": "frozen", "ambiguous": "ambiguous", "not_run": "not run",
                 "mixed": "mixed"}
        view.counts = [(label, summary[key]) for key, label in names.items() if summary.get(key)]
    else:
        tally: dict[str, int] = {}
        for d in report.ifs:
            label = TAKEN.get(d.taken, (d.taken, "ambiguous"))[0]
            tally[label] = tally.get(label, 0) + 1
        view.counts = sorted(tally.items())
    view.diagnostics = [f"{d.code} {d.message}" for d in report.diagnostics if d.code == "CP224"]
    view.diff_diagnostics = len(report.diagnostics)

    def function_view(fid: str, unit, fn, side: str) -> FileView:
        lines_all = highlight(unit.text)
        first, last = fn.span.line, fn.span.end_line
        lines = [LineView(number=i, html=lines_all[i - 1]) for i in range(first, min(last, len(lines_all)) + 1)]
        view_ = FileView(id=fid, path=unit.code_file.path, name=unit.code_file.path, grammar=unit.code_file.grammar,
                         lines=lines)
        by_number = {lv.number: lv for lv in lines}
        if side == "script":
            for if_ in fn.ifs:
                lv = by_number.get(if_.span.line)
                if lv is None:
                    continue
                d = ifs_at.get((unit.code_file.path, if_.span.line))
                cond = if_.condition
                mark = Mark(id=f"{fid}i{lv.number}", what="if", kind=cond.kind,
                            label=f"if · {KINDS[cond.kind][0]}", text=cond.text,
                            resolved=cond.resolved if cond.resolved != cond.text else None,
                            sources=[(s.ref, s.kind, s.type) for s in cond.sources], function=fn.qualified_name)
                if d is not None:
                    label, css = TAKEN.get(d.taken, (d.taken, "ambiguous"))
                    mark.diff, mark.diff_class = label, css
                    why = f"reason: {d.reason}"
                    costs = getattr(d, "costs", None)
                    if costs:
                        why += f"; alignment cost with the if forced to then {costs.get('then')}, " \
                               f"to else {costs.get('else')}"
                    if d.evidence:
                        why += "; evidence: " + ", ".join(
                            f"{c.call} ({c.script_line}→{c.trace_line})" for c in d.evidence[:4])
                    if d.missing:
                        why += "; missing from the trace: " + ", ".join(c.call for c in d.missing[:4])
                    mark.note = why
                else:
                    mark.diff, mark.diff_class = "not compared", "notrun"
                lv.mark = mark
            for loop in fn.loops:
                lv = by_number.get(loop.span.line)
                u = loops_at.get((unit.code_file.path, loop.span.line))
                if lv is None or u is None:
                    continue
                lv.css += " unrolled"
                times = "?" if u.iterations is None else str(u.iterations)
                lv.note = "loop kept by the trace" if u.kept else f"unrolled: the trace repeats its body {times} times"
            for call in fn.calls:
                c = lost_at.get((unit.code_file.path, call.span.line))
                lv = by_number.get(call.span.line)
                if c is not None and lv is not None and "lost" not in lv.css:
                    lv.css += " lost"
                    lv.note = f"lost: the trace never calls {c.call}"
        return view_

    k = 0
    for md in report.modules:
        s_unit, t_unit = s_units.get(md.script_path), t_units.get(md.trace_path)
        if s_unit is None or t_unit is None:
            continue
        s_fn = _find_function(s_unit.code_file, md.script_function)
        t_fn = _find_function(t_unit.code_file, md.trace_function)
        if s_fn is None or t_fn is None:
            continue
        evidence = {c.trace_line for d in report.ifs if d.module == md.module for c in d.evidence if c.trace_line}
        evidence |= {c.trace_line for lp in report.unrolled_loops if lp.module == md.module
                     for c in lp.evidence if c.trace_line}
        s_view = function_view(f"{pair_id}s{k}", s_unit, s_fn, "script")
        t_view = function_view(f"{pair_id}t{k}", t_unit, t_fn, "trace")
        for lv in t_view.lines:
            if lv.number in evidence:
                lv.css += " evidence"
        view.rows.append({"module": md.module, "script": s_view, "trace": t_view, "cost": md.cost,
                          "matched": md.matched})
        k += 1
    return view

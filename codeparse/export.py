"""``check --target export``: what ``torch.export`` will meet, and a verdict per input.

Every ``if`` and loop reachable from ``forward`` is judged by its condition
(:class:`codeparse.models.Condition`, with ``data_dependent_shape`` from
:mod:`codeparse.datadep`); conversions of tensor values outside conditions are judged
on their own:

======  =====================================  ========  ===============================================
code    name                                   severity  when
======  =====================================  ========  ===============================================
CP401   export_data_dependent_branch           error     the condition is ``tensor_value``
CP402   export_data_dependent_shape_branch     error     ``tensor_shape`` with ``data_dependent_shape``
CP403   export_shape_specialization            info      any other ``tensor_shape``
CP404   export_specialization                  info      ``attribute``, ``argument``, ``runtime``
CP405   export_tensor_to_scalar                error     ``int``/``float``/``bool`` of a tensor's value
                                                         outside a condition
CP406   export_unknown_branch                  warning   the condition's kind is ``unknown``
======  =====================================  ========  ===============================================

Constant conditions give nothing.  Each finding carries ``origin`` and ``related``
(the original lines of the conversions and producers the condition rests on; an
archive's ``.debug_pkl`` maps them at the offset, so a conversion inlined into the
``if`` line from the line above gets its own line).

The verdict (:class:`codeparse.models.ExportVerdict`): ``blocked`` when any CP401,
CP402 or CP405 is found (certain, whatever else is); else ``cannot_tell`` when a
condition is ``unknown`` or the archive was saved by ``torch.jit.trace`` (a trace
dropped its branches, so the text cannot show what export would meet); else
``exports_with_specializations`` when any CP403/CP404; else ``exports``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from .codes import diagnostic
from .models import ExportVerdict, Finding, SourceLocation

__all__ = ["EXPORT_CODES", "BLOCKING", "archive_export", "code_file_export", "verdict_line"]

EXPORT_CODES = ("CP401", "CP402", "CP403", "CP404", "CP405", "CP406")
BLOCKING = frozenset({"CP401", "CP402", "CP405"})
_VALUE_ADVICE = {
    "branch": "rewrite it as torch.cond(pred, true_fn, false_fn, operands)",
    "loop": "rewrite it as torch._higher_order_ops.while_loop(cond_fn, body_fn, carried_inputs), or bound "
            "the trip count with torch._check(...)",
}
_EXCERPT = 80

Locate = Callable[[str, int, int], Optional[tuple[str, int]]]


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[:_EXCERPT - 1] + "…"


def _sources(cond: Any) -> str:
    shown = [s for s in cond.sources if s.kind == cond.kind] or list(cond.sources)
    text = ", ".join(f"{s.ref} ({s.type})" for s in shown[:4]) or "nothing"
    if len(shown) > 4:
        text += f" and {len(shown) - 4} more"
    return text


def _finding(code: str, path: str, span: Any, origin: Optional[tuple[str, int]],
             related: list[tuple[str, int]], **args: Any) -> Finding:
    data = diagnostic(code, path, span.model_dump(), **args)
    if origin is not None:
        data["origin"] = {"path": origin[0], "line": origin[1]}
    seen: set[tuple[str, int]] = set()
    out = []
    for r in related:
        if r not in seen and r != origin:
            seen.add(r)
            out.append({"path": r[0], "line": r[1]})
    data["related"] = out
    return Finding.model_validate(data)


def _condition_finding(path: str, function: str, what: str, span: Any, cond: Any, locate: Locate) -> Optional[Finding]:
    kind = cond.kind
    if kind == "constant":
        return None
    origin = locate(path, span.start, span.line)
    related = [r for r in (locate(path, s.start, s.line) for s in cond.related) if r is not None]
    shown = _excerpt(cond.resolved or cond.text)
    common = {"condition": shown, "function": function, "kind": kind, "what": what}
    if kind == "tensor_value":
        return _finding("CP401", path, span, origin, related, sources=_sources(cond), advice=_VALUE_ADVICE[what], **common)
    if kind == "tensor_shape" and cond.data_dependent_shape:
        made = [f"{p}:{n}" for p, n in dict.fromkeys(related)]
        producers = "made at " + ", ".join(made[:3]) if made else "made in this condition"
        return _finding("CP402", path, span, origin, related, producers=producers, **common)
    if kind == "tensor_shape":
        return _finding("CP403", path, span, origin, related, sources=_sources(cond), **common)
    if kind == "unknown":
        return _finding("CP406", path, span, origin, related, **common)
    return _finding("CP404", path, span, origin, related, sources=_sources(cond), **common)


def _function_findings(path: str, fn: Any, locate: Locate) -> list[Finding]:
    out: list[Finding] = []
    covered: list[tuple[int, int]] = []  # conditions' tests and the conversions they rest on
    for if_ in fn.ifs:
        f = _condition_finding(path, fn.qualified_name, "branch", if_.span, if_.condition, locate)
        if f is not None:
            out.append(f)
        covered.append((if_.span.start, if_.span.end))
        covered.extend((s.start, s.end) for s in if_.condition.related)
    for loop in fn.loops:
        if loop.condition is None:
            continue
        f = _condition_finding(path, fn.qualified_name, "loop", loop.span, loop.condition, locate)
        if f is not None:
            out.append(f)
        covered.append((loop.span.start, loop.span.end))
        covered.extend((s.start, s.end) for s in loop.condition.related)
    for conv in fn.scalar_conversions:
        if any(a <= conv.start < b for a, b in covered):
            continue
        origin = locate(path, conv.start, conv.line)
        text = _excerpt(_conversion_text(fn, conv))
        out.append(_finding("CP405", path, conv, origin, [], conversion=text, function=fn.qualified_name))
    return out


def _conversion_text(fn: Any, span: Any) -> str:
    for call in fn.calls:
        if call.span.start == span.start:
            return f"{call.callee}(…)"
    return "int(…)"


def verdict(findings: Iterable[Finding], traced: bool = False) -> ExportVerdict:
    blocked: list[SourceLocation] = []
    specializations = unknown = 0
    for f in findings:
        if f.code in BLOCKING:
            if f.origin is not None:
                loc = f.origin
            else:
                loc = SourceLocation(path=f.path, line=f.span.line if f.span else 0)
            if loc not in blocked:
                blocked.append(loc)
        elif f.code in ("CP403", "CP404"):
            specializations += 1
        elif f.code == "CP406":
            unknown += 1
    if blocked:
        kind, reason = "blocked", "a construct export cannot trace is reachable from forward"
    elif traced:
        kind = "cannot_tell"
        reason = "saved by torch.jit.trace: its branches were dropped when tracing, so the text cannot show what export would meet"
    elif unknown:
        kind, reason = "cannot_tell", "a reachable condition depends on something codeparse cannot tell"
    elif specializations:
        kind, reason = "exports_with_specializations", "export fixes some branches to the ones the example takes"
    else:
        kind, reason = "exports", "no reachable branch, loop or conversion stands in the way"
    return ExportVerdict(verdict=kind, blocked=blocked, specializations=specializations, unknown=unknown, reason=reason)


def archive_export(archive: Any, extras: Optional[dict] = None) -> tuple[list[Finding], ExportVerdict]:
    """CP401-CP406 for the functions of an :class:`Archive` reachable from ``forward``, and the verdict.

    ``extras`` is what :func:`codeparse.archive.read_archive` filled in (offset maps, traced).
    """
    extras = extras or {}
    offset_maps = {p: (m, t, t.isascii()) for p, (m, t) in (extras.get("offset_maps") or {}).items()}
    source_map = archive.source_map

    def locate(path: str, start: int, line: int) -> Optional[tuple[str, int]]:
        found = offset_maps.get(path)
        if found is not None:
            line_map, text, ascii_only = found
            byte = start if ascii_only else len(text[:start].encode("utf-8"))
            at = line_map.at(byte)
            if at is not None:
                return at
        origin = source_map.get(path, {}).get(line)
        if origin is not None:
            return origin.path, origin.line
        return path, line

    reachable = set(archive.reachable)
    reach_all = not reachable
    findings: list[Finding] = []
    for cf in archive.files:
        fns = [m for c in cf.classes for m in c.methods] + list(cf.functions)
        per_file: list[Finding] = []
        for fn in fns:
            if reach_all or fn.qualified_name in reachable:
                per_file.extend(_function_findings(cf.path, fn, locate))
        per_file.sort(key=lambda f: f.span.start if f.span else -1)
        findings.extend(per_file)
    return findings, verdict(findings, traced=bool(extras.get("traced")))


def code_file_export(code_file: Any) -> tuple[list[Finding], ExportVerdict]:
    """CP401-CP406 for every function of a code file (no module tree: all count), and the verdict."""
    path = code_file.path

    findings: list[Finding] = []
    for fn in [m for c in code_file.classes for m in c.methods] + list(code_file.functions):
        findings.extend(_function_findings(path, fn, _code_locate))
    findings = [f.model_copy(update={"origin": None}) for f in findings]
    findings.sort(key=lambda f: f.span.start if f.span else -1)
    return findings, verdict(findings)


def _code_locate(path: str, start: int, line: int) -> Optional[tuple[str, int]]:
    return path, line


def verdict_line(path: str, v: ExportVerdict, limit: int = 8) -> str:
    """``export: blocked at fixtures/m.py:12, fixtures/m.py:20`` (plain text; escape before rendering)."""
    text = f"export verdict for {path}: {v.verdict}"
    if v.blocked:
        shown = ", ".join(f"{b.path}:{b.line}" for b in v.blocked[:limit])
        if len(v.blocked) > limit:
            shown += f" and {len(v.blocked) - limit} more"
        text += f" at {shown}"
    elif v.verdict == "exports_with_specializations":
        text += f" ({v.specializations} specialization{'s' if v.specializations != 1 else ''})"
    elif v.verdict == "cannot_tell":
        text += f" ({v.reason})"
    return text

"""``check --target export``: what ``torch.export`` will meet, and a verdict per input.

Every ``if`` and loop reachable from ``forward`` is judged by its condition
(:class:`codeparse.contract.text.Condition`, with ``data_dependent_shape`` from
:mod:`codeparse.infer.datadep`); conversions of tensor values outside conditions are judged
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
CP407   export_unknown_conversion              warning   ``int(n)`` of a number ``item()`` read that the
                                                         text cannot tell from a call Python never makes
======  =====================================  ========  ===============================================

Constant conditions give nothing.  Each finding carries ``origin`` and ``related``
(the original lines of the conversions and producers the condition rests on; an
archive's ``.debug_pkl`` maps them at the offset, so a conversion inlined into the
``if`` line from the line above gets its own line).

Each finding carries its guards (:mod:`codeparse.rules.pathguards`): the branches that enclose
it, in its function and at the call sites on the way from ``forward``.  A CP401, CP402
or CP405 under a guard the call chooses (an argument, an optional input, an attribute)
is conditional: a warning that says when export fails, listed in the verdict's
``blocked_when``.

The verdict (:class:`codeparse.contract.check.ExportVerdict`): ``blocked`` when a CP401, CP402
or CP405 is reached on every call (certain, whatever else is); else ``cannot_tell`` when a
condition is ``unknown`` (or a conversion, CP407) or the archive was saved by ``torch.jit.trace`` (a trace
dropped its branches, so the text cannot show what export would meet); else
``exports_with_specializations`` when any CP403/CP404 in the model's own code (those in
torch's library code are counted apart, ``library_specializations``); else ``exports``.

The rules read the code files as plain data (``CodeFile.model_dump(mode="json")``) and
give findings and the verdict as plain data (:mod:`codeparse.contract.records`), so ``check``
builds no model (:func:`archive_export_data`, :func:`code_file_export_data`);
:func:`archive_export` gives an :class:`Archive`'s as models.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Iterable, Optional

from ..contract.codes import diagnostic
from ..contract.records import finding as _plain_finding
from ..text.program import condition_excerpt, excerpt, sources_text

__all__ = ["EXPORT_CODES", "BLOCKING", "archive_export", "archive_export_data", "code_file_export_data",
           "verdict_data", "archive_locate", "verdict_line"]

EXPORT_CODES = ("CP401", "CP402", "CP403", "CP404", "CP405", "CP406", "CP407")
BLOCKING = frozenset({"CP401", "CP402", "CP405"})
_VALUE_ADVICE = {
    "branch": "rewrite it as torch.cond(pred, true_fn, false_fn, operands)",
    "loop": "rewrite it as torch._higher_order_ops.while_loop(cond_fn, body_fn, carried_inputs), or bound "
            "the trip count with torch._check(...)",
}

# (code file path, character offset, code line) -> the original (file, line), if known.
Locate = Callable[[str, int, int], Optional[tuple[str, int]]]


def _finding(code: str, path: str, span: dict, origin: Optional[tuple[str, int]],
             related: list[tuple[str, int]], **args: Any) -> dict:
    data = diagnostic(code, path, span, **args)
    seen: set[tuple[str, int]] = set()
    out = []
    for r in related:
        if r not in seen and r != origin:
            seen.add(r)
            out.append({"path": r[0], "line": r[1]})
    data["related"] = out
    return _plain_finding(data, {"path": origin[0], "line": origin[1]} if origin is not None else None)


def _condition_finding(path: str, function: str, what: str, span: dict, cond: dict, locate: Locate) -> Optional[dict]:
    kind = cond["kind"]
    if kind == "constant":
        return None
    origin = locate(path, span["start"], span["line"])
    related = [r for r in (locate(path, s["start"], s["line"]) for s in cond["related"]) if r is not None]
    common = {"condition": condition_excerpt(cond), "function": function, "kind": kind, "what": what}
    if kind == "tensor_value":
        return _finding("CP401", path, span, origin, related, sources=sources_text(cond), advice=_VALUE_ADVICE[what], **common)
    if kind == "tensor_shape" and cond["data_dependent_shape"]:
        made = [f"{p}:{n}" for p, n in dict.fromkeys(related)]
        producers = "made at " + ", ".join(made[:3]) if made else "made in this condition"
        return _finding("CP402", path, span, origin, related, producers=producers, **common)
    if kind == "tensor_shape":
        return _finding("CP403", path, span, origin, related, sources=sources_text(cond), **common)
    if kind == "unknown":
        return _finding("CP406", path, span, origin, related, **common)
    return _finding("CP404", path, span, origin, related, sources=sources_text(cond), **common)


# (qualified function, offset) -> the guards of that position (plain), or None when the
# saved module state never runs it.
class _Plain:
    """What the rules know beyond one function when there is no program: no guards, no
    saved values, no callers."""

    def of(self, qualified: str, offset: int) -> Optional[list[dict]]:
        """The guards of a position (:meth:`codeparse.pathguards.PathGuards.of`)."""
        return []

    def decide(self, path: str, fn: dict, if_: dict) -> Optional[tuple[str, str]]:
        """The side the saved values take at an ``if``, and why (see :func:`decider`)."""
        return None

    def user_site(self, qualified: str) -> Optional[tuple[str, int]]:
        """The user's line that calls a compiled helper (:meth:`~codeparse.pathguards.PathGuards.user_site`)."""
        return None

    def public(self, guards: list[dict]) -> list[dict]:
        """Guards as a finding carries them (:meth:`~codeparse.pathguards.PathGuards.public`)."""
        return []

    def data_dependent_argument(self, qualified: str, cond: dict) -> list[tuple[str, int]]:
        """Where callers pass a data-dependent tensor (:meth:`~codeparse.pathguards.PathGuards.data_dependent_argument`)."""
        return []

    def condition(self, path: str, fn: dict, block: dict) -> dict:
        """The condition as export sees it (:meth:`~codeparse.pathguards.PathGuards.condition`)."""
        return block["condition"]

    def conversion_holds_no_data(self, qualified: str, span: dict) -> bool:
        """(:meth:`~codeparse.pathguards.PathGuards.conversion_holds_no_data`)"""
        return False

    def number_conversion(self, qualified: str, span: dict) -> Optional[str]:
        """(:meth:`~codeparse.pathguards.PathGuards.number_conversion`)"""
        return None

    def definition_guard(self, qualified: str, offset: int, blocks: Callable[[], bool]) -> Optional[dict]:
        """(:meth:`~codeparse.pathguards.PathGuards.definition_guard`)"""
        return None


_PLAIN = _Plain()


def _guarded(f: dict, guards: list[dict], paths: Any, again: Optional[Callable[[], bool]] = None,
             offset: int = 0) -> dict:
    """The finding with its guards; a blocker under a guard the call chooses is a warning
    that says when export fails.  So is a blocker (``again()`` asks whether it still
    blocks) whose data-dependent value only one side of such a guard defines
    (:meth:`~codeparse.pathguards.PathGuards.definition_guard`): that guard joins its guards."""
    from .pathguards import conditional, guard_text

    defined = None
    if again is not None and f["code"] in BLOCKING and not conditional(guards):
        defined = paths.definition_guard(f["args"]["function"], offset, again)
        if defined is not None:
            guards = guards + [defined]
    f["guards"] = paths.public(guards)
    decided = [g["decided"] for g in guards if g["decided"]]
    if f["code"] in BLOCKING and decided and not conditional(guards):
        f["message"] += f"; the saved module reaches it on every call: {', '.join(dict.fromkeys(decided))}"
    if f["code"] in BLOCKING and conditional(guards):
        chosen = [g for g in f["guards"] if g["kind"] in ("argument", "attribute") and g["decided"] is None][-1]
        f["severity"] = "warning"
        reached = "data-dependent only" if defined is not None else "reached only"
        f["message"] += (f"; {reached} {guard_text(chosen)} ({chosen['kind']}, {chosen['path']}:{chosen['line']}), "
                         "so export fails only for calls that take that branch")
        f["args"]["when"] = guard_text(chosen)
    return f


def _at_user_line(f: dict, qualified: str, paths: Any) -> dict:
    """A finding whose origin is a compiled helper (``<string>``) is located at the user's
    line that calls the helper; the helper's line stays as related."""
    origin = f["origin"]
    if origin is not None and origin["path"].startswith("<"):
        site = paths.user_site(qualified)
        if site is not None:
            f["related"] = [origin] + [r for r in f["related"] if r != origin]
            f["origin"] = {"path": site[0], "line": site[1]}
    return f


def _function_findings(path: str, fn: dict, locate: Locate, paths: Any = _PLAIN) -> list[dict]:
    out: list[dict] = []
    covered: list[tuple[int, int]] = []  # conditions' tests and the conversions they rest on
    name = fn["qualified_name"]
    for what, blocks in (("branch", fn["ifs"]), ("loop", fn["loops"])):
        for block in blocks:
            if block["condition"] is None:  # a loop with no test
                continue
            cond = paths.condition(path, fn, block)
            span = block["span"]
            covered.append((span["start"], span["end"]))
            covered.extend((s["start"], s["end"]) for s in cond["related"])
            guards = paths.of(name, span["start"])
            if guards is None:  # a branch the saved state never runs
                continue
            f = _block_finding(path, fn, what, block, cond, locate, paths)
            if f is None:
                continue
            taken = (paths.decide(path, fn, block)
                     if what == "branch" and cond["kind"] in ("attribute", "runtime") else None)
            if taken is not None:  # the saved values fix the branch: nothing for export to choose
                f["args"]["decided"] = taken[1]
                who = "torch.export" if cond["kind"] == "runtime" else "the saved module"
                f["message"] += f"; {who} takes the {taken[0]} branch: {taken[1]}"
            again = partial(_still_blocks, path, fn, what, block, locate, paths)
            out.append(_at_user_line(_guarded(f, guards, paths, again, span["start"]), name, paths))
    for conv in fn["scalar_conversions"]:
        start = conv["start"]
        if any(a <= start < b for a, b in covered):
            continue
        guards = paths.of(name, start)
        if guards is None or paths.conversion_holds_no_data(name, conv):
            continue
        origin = locate(path, start, conv["line"])
        text = excerpt(_conversion_text(fn, start))
        code, args = _number_conversion(path, name, conv, text, locate, paths)
        if code is None:
            continue
        f = _finding(code, path, conv, origin, [], conversion=text, function=name, **args)
        again = partial(_conversion_blocks, name, conv, paths)
        out.append(_at_user_line(_guarded(f, guards, paths, again, start), name, paths))
    return out


def _block_finding(path: str, fn: dict, what: str, block: dict, cond: dict, locate: Locate,
                   paths: Any) -> Optional[dict]:
    """The finding of an ``if`` or loop condition (as export sees it: ``cond``): CP403 turns
    CP402 when a caller passes a tensor of data-dependent size for the size it reads."""
    name, span = fn["qualified_name"], block["span"]
    f = _condition_finding(path, name, what, span, cond, locate)
    if f is not None and f["code"] == "CP403":
        passed = paths.data_dependent_argument(name, cond)
        if passed:  # a caller passes a tensor made from tensor values for the size it reads
            made = [f"{p}:{n}" for p, n in dict.fromkeys(passed)]
            f = _finding("CP402", path, span, f["origin"] and (f["origin"]["path"], f["origin"]["line"]),
                         list(passed), producers="passed by its caller, made at " + ", ".join(made[:3]),
                         condition=f["args"]["condition"], function=name, kind=cond["kind"], what=what)
    return f


def _still_blocks(path: str, fn: dict, what: str, block: dict, locate: Locate, paths: Any) -> bool:
    """The condition's finding, asked again (as :func:`_guarded` assumes a branch away), blocks."""
    f = _block_finding(path, fn, what, block, paths.condition(path, fn, block), locate, paths)
    return f is not None and f["code"] in BLOCKING


def _conversion_blocks(qualified: str, conv: dict, paths: Any) -> bool:
    """A conversion's finding, asked again, stands (its tensor may hold data)."""
    return not paths.conversion_holds_no_data(qualified, conv)


def _number_conversion(path: str, qualified: str, conv: dict, text: str, locate: Locate,
                       paths: Any) -> tuple[Optional[str], dict]:
    """The code of a conversion: CP405, but for ``int(n)`` of a number ``item()`` read
    (``n = i.item()``), which TorchScript prints alike for a user's ``int(n)`` (export fails
    there) and where the number meets an ``int`` parameter (Python calls nothing): the
    archive's debug info tells them apart (the range a user's call was printed from is
    ``int``; an inserted one's is the call it feeds), and one that is no operator's argument
    (``n = int(torch.item(t))``) is the user's.  Inserted: no finding for a factory
    that takes a data-dependent size (``torch.zeros(n)``), CP407 for another operator;
    no debug info: CP407."""
    consumer = paths.number_conversion(qualified, conv)
    if consumer is None:
        return "CP405", {}
    source_text = getattr(locate, "source_text", None)
    written = source_text(path, conv["start"]) if source_text is not None else None
    called = text.partition("(")[0]
    if written is not None and written.strip() == called:
        return "CP405", {}  # the user's own int(...)
    if written is None and not consumer:
        return "CP405", {}  # no operator's argument: TorchScript inserts conversions only there
    if written is None:
        return "CP407", {"reason": "TorchScript prints the same text for a user's int() of a number item() read "
                                   "(export fails there) and for that number meeting an int parameter (Python "
                                   "calls nothing), and no debug info in the archive tells them apart"}
    from ..infer.datadep import export_table

    if consumer in export_table().unbacked_size_factories:
        return None, {}  # a tensor of a data-dependent size: export goes on
    shown = f"`{consumer}`" if consumer else "its use"
    return "CP407", {"reason": f"TorchScript converts the number item() read where it meets an int parameter of "
                               f"{shown} (Python passes the number itself); whether {shown} takes a data-dependent "
                               "number without a guard, the text does not tell"}


def _conversion_text(fn: dict, start: int) -> str:
    for call in fn["calls"]:
        if call["span"]["start"] == start:
            return f"{call['callee']}(…)"
    return "int(…)"


def _file_findings(cf: dict, live: Optional[set[str]], locate: Locate, paths: Any = _PLAIN) -> list[dict]:
    """The findings of one code file's functions (those in ``live``; all with None), by position."""
    path = cf["path"]
    out: list[dict] = []
    for fns in [c["methods"] for c in cf["classes"]] + [cf["functions"]]:
        for fn in fns:
            if live is None or fn["qualified_name"] in live:
                out.extend(_function_findings(path, fn, locate, paths))
    out.sort(key=lambda f: f["span"]["start"] if f["span"] else -1)
    return out


def verdict_data(findings: Iterable[dict], traced: bool = False) -> dict:
    """The :class:`~codeparse.contract.check.ExportVerdict` of these findings (plain data, in its field order)."""
    from .pathguards import guard_text

    blocked: list[dict] = []
    blocked_when: list[dict] = []
    specializations = library_specializations = unknown = 0
    for f in findings:
        code = f["code"]
        if code in BLOCKING:
            loc = f["origin"]
            if loc is None:
                loc = {"path": f["path"], "line": f["span"]["line"] if f["span"] else 0}
            if f["severity"] != "error":  # conditional: only calls that take a branch meet it
                guard = [g for g in f["guards"] if g["kind"] in ("argument", "attribute") and g["decided"] is None][-1]
                entry = {"when": guard_text(guard), "guard": guard, "at": loc, "code": code}
                if entry not in blocked_when:
                    blocked_when.append(entry)
            elif loc not in blocked:
                blocked.append(loc)
        elif code in ("CP403", "CP404"):
            if f["args"].get("decided"):
                continue  # the saved module's values fix it: no choice left for the example
            if _in_library(f):
                library_specializations += 1
            else:
                specializations += 1
        elif code in ("CP406", "CP407"):
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
    if kind == "exports" and blocked_when:
        reason = "a construct export cannot trace is reached only under a branch the call chooses"
    return {"verdict": kind, "blocked": blocked, "specializations": specializations, "unknown": unknown,
            "reason": reason, "blocked_when": blocked_when, "library_specializations": library_specializations}


def _in_library(f: dict) -> bool:
    from ..contract.records import is_library

    return is_library(f)


def archive_locate(offset_map: Callable[[str], Optional[tuple[Any, str]]], origins: Callable[[str], Any]) -> Locate:
    """Where an archive's code offset was printed from: its ``.debug_pkl`` range at that
    offset (``offset_map(path)``: the file's ``(LineMap, text)``, or None), else the
    original line of its code line (``origins(path)``: code line -> ``(file, line)`` by
    ``.get``, or None), else the code line itself.  Each is asked for a file when one of
    its findings is located, once."""
    maps: dict[str, tuple] = {}

    def found_map(path: str) -> tuple:
        found = maps.get(path)
        if found is None:
            got = offset_map(path)
            found = maps[path] = (got[0], got[1], got[1].isascii()) if got is not None else ()
        return found

    def source_text(path: str, start: int) -> Optional[str]:
        """The original text of the range the code at ``start`` was printed from, or None."""
        found = found_map(path)
        if not found:
            return None
        line_map, text, ascii_only = found
        return line_map.source_text(start if ascii_only else len(text[:start].encode("utf-8")))

    def locate(path: str, start: int, line: int) -> Optional[tuple[str, int]]:
        found = found_map(path)
        if found:
            line_map, text, ascii_only = found
            byte = start if ascii_only else len(text[:start].encode("utf-8"))
            at = line_map.at(byte)
            if at is not None:
                return at
        lines = origins(path)
        origin = lines.get(line) if lines is not None else None
        return origin if origin is not None else (path, line)

    locate.source_text = source_text  # type: ignore[attr-defined]
    return locate


def archive_export_data(files: list[dict], reachable: Iterable[str], locate: Locate,
                        traced: bool = False, analysis: Any = None,
                        text: Optional[Callable[[str], Optional[str]]] = None,
                        saved: Optional[Callable[[], Any]] = None,
                        callee: Optional[Callable[[str], Any]] = None) -> tuple[list[dict], dict]:
    """CP401-CP406 for the functions reachable from ``forward`` (all when nothing is
    reachable) of an archive's code files (plain data, ``CodeFile.model_dump(mode="json")``),
    and the verdict: plain data, as ``check`` reports them.

    With ``analysis`` (:class:`codeparse.text.program.Analysis`: its call sites and entry
    points) and ``text`` (a code file's text by path), each finding carries its guards
    (:mod:`codeparse.rules.pathguards`); ``saved`` gives the archive's saved attribute values
    (:class:`codeparse.rules.saved.SavedValues`, or None), asked once, when a guard on an
    attribute is met: a branch they rule out gives no finding; ``callee`` gives a
    function's inference (:meth:`codeparse.archive.torchscript.OpenedArchive.callee`), to
    tell whether a caller passes a tensor of data-dependent size."""
    live = set(reachable) or None
    paths: Any = _PLAIN
    if analysis is not None:
        from .pathguards import PathGuards, functions_of

        from .saved import decider

        paths = PathGuards(functions_of(files, live), analysis.sites, analysis.entry_points,
                           text or (lambda path: None), locate, condition_excerpt,
                           decider(saved, export_runtime=True), callee)
    findings = [f for cf in files for f in _file_findings(cf, live, locate, paths)]
    return findings, verdict_data(findings, traced)


def archive_export(archive: Any, extras: Optional[dict] = None) -> tuple[list[Any], Any]:
    """CP401-CP406 for the functions of an :class:`Archive` reachable from ``forward``, and the verdict
    (models; :func:`archive_export_data` gives the same as plain data).

    ``extras`` is what :func:`codeparse.archive.torchscript.read_archive` filled in (offset maps,
    traced, the code files as plain data).
    """
    from ..contract.check import ExportVerdict, Finding

    extras = extras or {}
    source_map = archive.source_map

    def origins(path: str) -> Optional[dict]:
        found = source_map.get(path)
        return None if found is None else _Origins(found)

    from ..text.program import analyse

    files = extras.get("files")
    if files is None:
        files = [cf.model_dump(mode="json") for cf in archive.files]
    analysis = analyse(files, archive.root_class, condition_findings=False)  # its call sites
    saved = extras.get("saved")
    found, verdict = archive_export_data(files, archive.reachable,
                                         archive_locate((extras.get("offset_maps") or {}).get, origins),
                                         bool(extras.get("traced")), analysis, extras.get("text"), lambda: saved,
                                         extras.get("callee"))
    return [Finding.model_validate(f) for f in found], ExportVerdict.model_validate(verdict)


class _Origins:
    """An :class:`Archive`'s ``source_map`` of one code file read as ``line -> (file, line)``."""

    __slots__ = ("_lines",)

    def __init__(self, lines: dict):
        self._lines = lines

    def get(self, line: int) -> Optional[tuple[str, int]]:
        found = self._lines.get(line)
        return None if found is None else (found.path, found.line)


def code_file_export_data(code_file: dict, callee: Optional[Callable[[str], Any]] = None) -> tuple[list[dict], dict]:
    """CP401-CP406 for every function of a code file (plain data; no module tree: all
    count), and the verdict, as plain data.  Read as an archive's files are
    (:func:`archive_export_data`: path conditions, the runtime predicates torch.export
    knows, conditions read again for what their value rests on, data dependence through
    calls), with no saved values; ``callee`` gives a function's inference by qualified name
    (the text's own functions, as the parser registered them), without which conditions
    stay as inferred."""
    from ..text.program import analyse

    analysis = analyse([code_file], None, condition_findings=False)  # its call sites
    text = _text_of(code_file, callee)
    findings, _ = archive_export_data([code_file], (), _code_locate, False, analysis, lambda path: text, None, callee)
    for f in findings:
        f["origin"] = None
    return findings, verdict_data(findings)


def _text_of(code_file: dict, callee: Optional[Callable[[str], Any]]) -> Optional[str]:
    """A code file's text, as its spans index it: the one its functions were inferred on."""
    if callee is None:
        return None
    for fns in [c["methods"] for c in code_file["classes"]] + [code_file["functions"]]:
        for fn in fns:
            found = callee(fn["qualified_name"])
            if found is not None:
                return found.inference.text
    return None


def _code_locate(path: str, start: int, line: int) -> Optional[tuple[str, int]]:
    return path, line


def verdict_line(path: str, v: Any, limit: int = 8) -> str:
    """``export: blocked at fixtures/m.py:12, fixtures/m.py:20`` (plain text; escape before rendering)
    for an :class:`~codeparse.contract.check.ExportVerdict` or its plain data read by attribute."""
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
    when = v.blocked_when
    if when and not v.blocked:
        parts = [f"{w.when} ({w.guard.kind}, {w.guard.path}:{w.guard.line}): {w.code} at {w.at.path}:{w.at.line}"
                 for w in when[:limit]]
        if len(when) > limit:
            parts.append(f"and {len(when) - limit} more")
        text += "; blocked only " + "; ".join(parts)
    if v.library_specializations:
        n = v.library_specializations
        text += f"; {n} specialization{'s' if n != 1 else ''} in torch's library code"
    return text

"""Saved attribute values decide branches: ``if self.training:``, ``if self.mode == "exact":``.

A scripted module saves its plain attributes (``bool``, ``int``, ``float``, ``str``, ``None``
and tuples of them) in the archive's ``data.pkl`` (:mod:`codeparse.archive.attributes` reads
them, per class, into :class:`SavedValues`).  :func:`branch_taken` evaluates a condition as
printed and resolved (``torch.eq(self.mode, "exact")``, ``torch.__not__(self.training)``,
literals) with those values: ``True``/``False`` when they decide it, else None.  A value
that is not known (a tensor, an object, instances that disagree, an unreadable pickle) or
that the code may overwrite before the read (an attribute any code text assigns:
:func:`assigned_attributes`) leaves the condition undecided, never guessed.

:func:`decider` gives the export rules the side an ``if`` takes; :func:`saved_branches`
tells the trace target's findings which branch a trace of the saved module bakes in.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, Optional

__all__ = ["SavedValues", "UNKNOWN", "known", "branch_taken", "value_text", "decider", "saved_branches",
           "assigned_attributes"]

_MAX_DEPTH = 64
#: A value the archive does not tell.
UNKNOWN = object()
_UNKNOWN = UNKNOWN


class SavedValues:
    """Per archive class (qualified name): attribute name -> its saved plain value, for the
    attributes every instance saves alike."""

    def __init__(self, classes: dict[str, dict[str, Any]]):
        self.classes = classes

    def get(self, owner: str, attr: str) -> Any:
        """The value, or :data:`UNKNOWN` (see :func:`known`)."""
        return self.classes.get(owner, {}).get(attr, _UNKNOWN)

    def without(self, names: set[str]) -> "SavedValues":
        """These values but the attributes named ``names``, in every class: an attribute
        the code assigns (``self.seen = int(x.sum())``, ``sub.flag = n`` on an alias of a
        submodule) holds at a read what the code put there, not what was saved."""
        if not names:
            return self
        return SavedValues({owner: {k: v for k, v in values.items() if k not in names}
                            for owner, values in self.classes.items()})


def assigned_attributes(texts: list[str], grammar: Optional[str] = None,
                        statements: Optional[list[Optional[list]]] = None) -> set[str]:
    """The names of every attribute some code text assigns (``obj.attr = v``, also as one of
    several targets) outside a constructor (``__init__``, which only TorchScript classes have
    in code), whatever the receiver: where the receiver is a module's state cannot always be
    told from the text (an alias of ``self.sub``), so a name assigned anywhere counts for
    every class.  Read with the grammar's statement rules and expression reader.

    ``statements``, when given, holds for each text its top-level statements as
    :func:`codeparse.parse.statements.parse_statements` read them from that very text with
    this grammar (the program's parse), or None: those texts are not read again."""
    from ..grammar.engine import load_grammar
    from ..parse.expressions import Attr, ExpressionReader, Seq
    from ..parse.source import SourceText
    from ..parse.statements import parse_statements

    g = load_grammar(grammar)
    names: set[str] = set()
    for index, text in enumerate(texts):
        if "." not in text:
            continue
        reader = ExpressionReader(text, g)
        read = statements[index] if statements is not None else None
        stack = list(read if read is not None else parse_statements(SourceText(text, ""), g).body)
        while stack:
            stmt = stack.pop()
            if stmt.kind == "def" and stmt.group("name") == "__init__":
                continue  # a TorchScript class's constructor sets its own object's fields
            stack.extend(stmt.body)
            if stmt.orelse:
                stack.extend(stmt.orelse)
            if stmt.kind != "assign" or not stmt.rule.captures("targets"):
                continue
            start, end = stmt.span_of("targets")
            if text.find(".", start, end) == -1:
                continue
            try:
                node = reader.read(start, end)
            except Exception:  # noqa: BLE001 - targets the reader cannot take: none named
                continue
            for target in (node.items if isinstance(node, Seq) else [node]):
                if isinstance(target, Attr):
                    names.add(target.attr)
    return names


def known(value: Any) -> bool:
    return value is not _UNKNOWN


def value_text(value: Any) -> str:
    return repr(value)


def branch_taken(node: Any, text: str, owner: Optional[str], saved: Optional[SavedValues],
                 used: list[str], export_runtime: bool = False) -> Optional[bool]:
    """The truth of a condition (an expression tree of ``text``) with the saved values of
    ``owner``'s attributes, or None when something in it is not known.  ``used`` receives
    ``self.attr = value`` for each saved value read.  With ``export_runtime``, the runtime
    predicates whose value torch.export knows (``_is_tracing()``: False) are read too."""
    value = _evaluate(node, text, owner, saved, used, 0, export_runtime)
    if value is _UNKNOWN:
        return None
    if isinstance(value, (bool, int, float, str, tuple)) or value is None:
        return bool(value)
    return None


_COMPARE = {
    "eq": lambda a, b: a == b, "__eq__": lambda a, b: a == b,
    "ne": lambda a, b: a != b, "__ne__": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "gt": lambda a, b: a > b, "le": lambda a, b: a <= b, "ge": lambda a, b: a >= b,
}


def _evaluate(node: Any, text: str, owner: Optional[str], saved: Optional[SavedValues], used: list[str],
              depth: int, export_runtime: bool = False) -> Any:
    from ..parse.expressions import Attr, CallExpr, Const, Name

    if depth > _MAX_DEPTH:
        return _UNKNOWN
    if isinstance(node, Name):
        return {"True": True, "False": False, "None": None}.get(node.id, _UNKNOWN)
    if isinstance(node, Const):
        try:
            value = ast.literal_eval(node.text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return _UNKNOWN
        return value if isinstance(value, (bool, int, float, str)) else _UNKNOWN
    if isinstance(node, Attr):
        if isinstance(node.value, Name) and node.value.id == "self" and owner is not None and saved is not None:
            value = saved.get(owner, node.attr)
            if value is not _UNKNOWN:
                shown = f"self.{node.attr} = {value_text(value)}"
                if shown not in used:
                    used.append(shown)
            return value
        return _UNKNOWN
    if not isinstance(node, CallExpr):
        return _UNKNOWN
    called = text[node.func.start:node.func.end]
    if export_runtime and not node.args and not node.keywords:
        known_value = _export_runtime_value(called)
        if known_value is not _UNKNOWN:
            shown = f"{called.removeprefix('__torch__.')}() is {known_value} under torch.export"
            if shown not in used:
                used.append(shown)
            return known_value
    name = called.rsplit(".", 1)[-1]
    args = [_evaluate(a, text, owner, saved, used, depth + 1, export_runtime) for a in node.args]
    if node.keywords or any(a is _UNKNOWN for a in args):
        return _UNKNOWN
    try:
        if name == "__not__" and len(args) == 1:
            return not args[0]
        if name == "bool" and len(args) == 1:
            return bool(args[0])
        if name in ("__is__", "__isnot__") and len(args) == 2:
            if args[0] is not None and args[1] is not None:
                return _UNKNOWN
            same = args[0] is args[1]
            return same if name == "__is__" else not same
        if name in ("__and__", "__or__") and len(args) == 2 and all(isinstance(a, bool) for a in args):
            return (args[0] and args[1]) if name == "__and__" else (args[0] or args[1])
        if name in _COMPARE and len(args) == 2:
            return _COMPARE[name](args[0], args[1])
    except TypeError:  # comparing values of other types (`None < 1`)
        return _UNKNOWN
    return _UNKNOWN


def _export_runtime_value(called: str) -> Any:
    """The value torch.export sees for a runtime predicate called by this printed name
    (``[export] export_runtime_values``), or :data:`UNKNOWN`."""
    from ..infer.datadep import export_table

    values = export_table().runtime_values
    root = "__torch__."
    name = called[len(root):] if called.startswith(root) else called
    return values.get(name, _UNKNOWN)


def decider(saved: Optional[Callable[[], Any]],
            export_runtime: bool = False) -> Callable[[str, dict, dict], Optional[tuple[str, str]]]:
    """``decide(path, function, if_)``: the side (``then``/``else``) an ``if`` on
    attributes or literals takes with the saved values, and the values that decide it;
    with ``export_runtime``, on the runtime predicates torch.export knows too."""
    from ..grammar.engine import load_grammar
    from ..parse.expressions import ExpressionReader

    state: dict[str, Any] = {}

    def values() -> Any:
        if "saved" not in state:
            state["saved"] = saved() if saved is not None else None
        return state["saved"]

    def decide(path: str, fn: dict, if_: dict) -> Optional[tuple[str, str]]:
        cond = if_["condition"]
        text = cond["resolved"] or cond["text"]
        if "grammar" not in state:
            state["grammar"] = load_grammar()
        try:
            node = ExpressionReader(text, state["grammar"]).read(0, len(text))
        except Exception:  # noqa: BLE001 - a condition the reader cannot take: undecided
            return None
        used: list[str] = []
        owner = fn["qualified_name"].rpartition(".")[0]
        taken = branch_taken(node, text, owner, values() if cond["kind"] == "attribute" else None, used,
                             export_runtime)
        if taken is None:
            return None
        saved_used = [u for u in used if not u.endswith("under torch.export")]
        runtime_used = [u for u in used if u.endswith("under torch.export")]
        parts = ([", ".join(saved_used) + " (saved in the archive)"] if saved_used else []) + runtime_used
        why = ", ".join(parts) if parts else "a constant condition"
        return ("then" if taken else "else"), why

    return decide


_STATE_CODES = ("CP203", "CP204")


def saved_branches(per_file: list[tuple[str, list[dict]]],
                   saved: Callable[[], Optional[SavedValues]]) -> list[tuple[str, list[dict]]]:
    """The trace target's findings of each file (diagnostic dicts): a branch on module
    state (CP203, CP204) that the saved values decide says which branch a trace of this
    saved module bakes in.  ``saved`` is asked only when there is such a branch; the
    condition is read from the finding (an excerpt cut short is left undecided)."""
    if not any(d["code"] in _STATE_CODES for _, found in per_file for d in found):
        return per_file
    decide = decider(saved)
    out = []
    for display, found in per_file:
        kept = []
        for d in found:
            condition = d["args"].get("condition", "")
            if d["code"] in _STATE_CODES and condition and not condition.endswith("…"):
                cond = {"resolved": condition, "text": condition, "kind": "attribute"}
                taken = decide(display, {"qualified_name": d["args"].get("function", "")}, {"condition": cond})
                if taken is not None:
                    d = dict(d, args=dict(d["args"], decided=taken[1]),
                             message=d["message"] + f"; a trace of this saved module takes the {taken[0]} branch: "
                                                    f"{taken[1]}")
            kept.append(d)
        out.append((display, kept))
    return out

"""Types of literals, container elements and operator results, from the text alone and the
bundled operator schemas (``grammars/operators.json.gz``)."""

from __future__ import annotations

import functools
from typing import Any, Optional

from ..parse.expressions import Const, Expr, Name
from .semantics import Semantics


def literal_type(node: Expr, sem: Semantics) -> Optional[str]:
    kind = type(node)
    if kind is Name:
        return sem.literals.get(node.id)
    if kind is Const:
        if node.kind == "string":
            return "str"
        t = node.text
        if t.endswith("j"):
            return "complex"
        for c in _FLOAT_MARKS:
            if c in t:
                return "float"
        return "int"
    return None


_FLOAT_MARKS = ".eEn"  # a number literal holding one of these is a float (`1.`, `1e-05`, `inf`, `nan`)


def _split_top(text: str) -> list[str]:
    """``Dict[str, Tensor], int`` -> [``Dict[str, Tensor]``, ``int``]."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def element_type(typ: Optional[str], index: Optional[int] = None) -> Optional[str]:
    """The type of ``x[i]`` for ``x`` of type ``typ``: ``List[T]`` -> T, ``Dict[K, V]`` -> V,
    ``Tuple[A, B]`` with a literal index -> that element, ``Tensor`` -> ``Tensor``."""
    if not typ:
        return None
    if typ.startswith("Optional[") and typ.endswith("]"):
        typ = typ[len("Optional["):-1]
    if typ == "Tensor":
        return "Tensor"
    if typ == "str":
        return "str"
    head, _, rest = typ.partition("[")
    if not rest.endswith("]"):
        return None
    parts = _split_top(rest[:-1])
    if head == "List" and len(parts) == 1:
        return parts[0]
    if head == "Dict" and len(parts) == 2:
        return parts[1]
    if head == "Tuple" and index is not None and 0 <= index < len(parts):
        return parts[index]
    return None


_SCHEMA_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str", "complex": "complex",
                   "Tensor": "Tensor", "ScalarType": "int", "Device": "Device", "Layout": "int",
                   "SymInt": "int", "MemoryFormat": "int"}


def _schema_type(text: str) -> str:
    """An operator schema's type (``Tensor(a!)``, ``int[]``, ``Tensor?``) in printed form."""
    text = text.strip()
    paren = text.find("(")
    if paren != -1:
        close = text.find(")", paren)
        text = text[:paren] + text[close + 1:]
    optional = text.endswith("?")
    text = text.rstrip("?")
    if text.endswith("[]"):
        inner = _schema_type(text[:-2])
        text = f"List[{inner}]"
    else:
        text = _SCHEMA_SCALARS.get(text, text)
    return f"Optional[{text}]" if optional else text


@functools.cache
def _overloads(name: str) -> tuple[tuple[list[str], int, Optional[str]], ...]:
    """Operator ``name``'s overloads: (positional parameter types, required count, return
    type) each, from the bundled table ``grammars/operators.json.gz`` (read on first use).
    Parsed per operator when first asked for: a text uses a few dozen of the table's
    thousands, and parsing them all cost more than the rest of a small file's parse."""
    from .operators import load_table

    found = load_table()["operators"].get(name)
    if found is None:
        return ()
    entries = []
    for suffix in found[0]:
        open_ = suffix.find("(")
        arrow = suffix.rfind(") -> ")
        if open_ == -1 or arrow == -1:
            continue
        params, required = [], 0
        for part in _split_top(suffix[open_ + 1:arrow]):
            if part == "*":
                break
            if part == "...":
                params = None
                break
            typ, _, rest = part.rpartition(" ")
            params.append(_schema_type(typ))
            if "=" not in rest:
                required = len(params)
        if params is None:
            continue
        ret = suffix[arrow + len(") -> "):].strip()
        returns = None if ret.startswith("(") or ret == "()" else _schema_type(ret)
        entries.append((params, required, returns))
    return tuple(entries)


def _accepts(param: str, arg: Optional[str]) -> bool:
    if arg is None or param in ("t", "Any", "t1", "t2"):
        return True
    if param.startswith("Optional["):
        return arg == "NoneType" or _accepts(param[len("Optional["):-1], arg)
    if param == "Tensor":
        return arg == "Tensor"
    if param == "Scalar" or param == "number":
        return arg in ("int", "float", "bool", "complex")
    if param == "float":
        return arg in ("float", "int")
    if param == "complex":
        return arg in ("complex", "float", "int")
    if param in ("int", "bool", "str"):
        return arg == param
    if param.startswith("List["):
        return arg.startswith("List[")
    return arg == param


def operator_return_types(op: str) -> frozenset:
    """Every type an overload of operator ``op`` returns (None for a tuple or nothing)."""
    return frozenset(returns for _, _, returns in _overloads(op))


def operator_return_type(op: str, arg_types: list[Optional[str]]) -> Optional[str]:
    """The return type of operator ``op`` called with positional arguments of these types,
    when every overload that accepts them agrees (``aten::div`` on two floats: ``float``)."""
    return _return_type(op, tuple(arg_types))


@functools.lru_cache(maxsize=4096)
def _return_type(op: str, arg_types: tuple) -> Optional[str]:
    # The overloads that accept the arguments, and among them those that match the most
    # argument types exactly (``div(float, float)`` is ``div.float``, not ``div.complex``).
    best, found = -1, set()
    for params, required, returns in _overloads(op):
        if not (required <= len(arg_types) <= len(params)):
            continue
        if all(_accepts(p, a) for p, a in zip(params, arg_types)):
            # With an argument of unknown type every accepting overload counts.
            score = 0 if None in arg_types else sum(1 for p, a in zip(params, arg_types) if p == a)
            if score > best:
                best, found = score, {returns}
            elif score == best:
                found.add(returns)
    if len(found) == 1:
        return found.pop()
    return None

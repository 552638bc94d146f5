"""Saved attribute values: what an archive's ``data.pkl`` says about its modules' plain attributes.

A scripted module saves its state in ``data.pkl``: each module object is a class of the
archive (``__torch__.M``) given a dictionary of attributes, submodules nested in it.
Attributes of plain types (``bool``, ``int``, ``float``, ``str``, ``None`` and tuples of
them: ``training``, ``use_item``, ``mode``) decide branches (:mod:`codeparse.rules.saved`).

The pickle is read with :class:`codeparse.pickles.safepickle.OpaqueUnpickler`: nothing is
imported or run, every class and every tensor storage is an inert placeholder, and the
work is bounded.  A value is known for a class only when every instance of that class in
the archive saves the same plain value; a tensor, an object, two instances that disagree,
or a pickle that cannot be read leave it unknown.
"""

from __future__ import annotations

from typing import Any, Optional

from ..pickles.safepickle import Opaque, OpaqueUnpickler, PickleLimit
from ..rules.saved import UNKNOWN as _UNKNOWN
from ..rules.saved import SavedValues

__all__ = ["read_saved_values"]

#: Objects a ``data.pkl`` may build while its attributes are read; a module of a few
#: thousand tensors builds about ten per tensor.
MAX_OBJECTS = 2_000_000
MAX_GLOBALS = 10_000
_MAX_DEPTH = 64


def _plain(value: Any, depth: int = 0) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple) and depth < 4:
        items = tuple(_plain(v, depth + 1) for v in value)
        return _UNKNOWN if any(v is _UNKNOWN for v in items) else items
    return _UNKNOWN


def read_saved_values(data: bytes) -> Optional[SavedValues]:
    """The plain attribute values of the modules in ``data.pkl``, or None when it cannot be read."""
    try:
        root = OpaqueUnpickler(data, MAX_OBJECTS, MAX_GLOBALS).load()
    except (PickleLimit, RecursionError, Exception):  # noqa: BLE001 - a hostile or broken pickle: nothing known
        return None
    seen: dict[str, dict[str, Any]] = {}
    stack = [(root, 0)]
    visited: set[int] = set()
    while stack:
        obj, depth = stack.pop()
        if id(obj) in visited or depth > _MAX_DEPTH or not isinstance(obj, Opaque):
            continue
        visited.add(id(obj))
        state = obj.state
        if not isinstance(state, dict):
            continue
        values = {}
        for key, value in state.items():
            if not isinstance(key, str):
                continue
            if isinstance(value, Opaque):
                stack.append((value, depth + 1))
            values[key] = _plain(value)
        owner = type(obj).qualified
        if owner in seen:
            before = seen[owner]
            for key in set(before) | set(values):
                if before.get(key, _UNKNOWN) != values.get(key, _UNKNOWN) or \
                        type(before.get(key)) is not type(values.get(key)):
                    before[key] = _UNKNOWN
        else:
            seen[owner] = values
    return SavedValues({owner: {k: v for k, v in values.items() if v is not _UNKNOWN}
                        for owner, values in seen.items()})

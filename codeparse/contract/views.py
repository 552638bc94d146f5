"""Plain data read like the models: attribute access over the dicts of the parse path.

``parse_text(..., as_dict=True)`` returns a dict equal to ``CodeFile.model_dump(mode="json")``,
built without pydantic.  Renderers written against the models (``cf.functions[0].ifs[0]
.condition.kind``) read that dict through :func:`view`, so the ``parse`` command writes
tables and JSON without importing pydantic.  A view is read-only and builds nothing up
front: each attribute read wraps one value.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Data", "view", "record"]


class Data:
    """Read-only attribute access to one dict of plain data (``d.span.line``); the fields
    named in ``_mappings`` stay dicts (subclasses name them)."""

    __slots__ = ("_data",)
    _mappings: frozenset = frozenset()

    def __init__(self, data: dict):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._data[name]
        except KeyError:
            raise AttributeError(name) from None
        return value if name in self._mappings else view(value, type(self))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def model_dump(self, mode: str = "python") -> dict:
        """The plain data itself (what ``model_dump`` of the matching model returns)."""
        return self._data


def view(value: Any, kind: type = Data) -> Any:
    """``value`` with its dicts readable by attribute (as ``kind``, a :class:`Data` class);
    lists become lists of views."""
    if isinstance(value, dict):
        return kind(value)
    if isinstance(value, list):
        return [view(v, kind) for v in value]
    return value


def record(name: str, fields: tuple[str, ...]):
    """A maker of plain dicts with these keys, in this order: ``make(*values)``.

    Each dict is the ``__dict__`` of a throwaway instance, so every dict of one maker
    shares a single key table (PEP 412): an ordinary ``dict``, equal to the literal one,
    in about half its memory.  The parse path makes thousands of them per file (spans,
    calls, references, parameters).
    """
    cls = type(name, (), {"__doc__": f"Plain {name} data."})
    args = ", ".join(fields)
    sets = "".join(f"    o.{f} = {f}\n" for f in fields)
    namespace: dict = {"_new": object.__new__, "_cls": cls}
    # Generated like a dataclass's __init__: one call per dict, the field names are ours.
    exec(f"def make({args}):\n    o = _new(_cls)\n{sets}    return o.__dict__\n", namespace)  # noqa: S102
    make = namespace["make"]
    make.__doc__ = f"A plain {name} dict: {args}."
    # The class, for a hot loop that makes its records inline, without a call:
    # `o = object.__new__(make.cls)`, every field set in the order above, `o.__dict__`.
    make.cls = cls
    return make

"""The two inputs of a diff: parsed code texts, their classes and top-level functions.

A :class:`Side` is read from a ``.code`` file, a directory of code, an archive (through
:mod:`codeparse.archive.torchscript`, which bounds what it inflates), or texts captured from a live module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from ..contract.check import SourceLocation
from ..contract.errors import InputError
from ..contract.text import ClassDef, CodeFile, Function
from ..files.zipread import is_archive_path
from ..text.reader import decode_text, iter_inputs, parse_text

__all__ = ["Unit", "Side", "load_side", "side_from_texts", "overload_base", "pick_overload"]

# A scripted overloaded method is compiled once per overload: `forward__0`, `forward__1`.
_OVERLOAD = "__"


def overload_base(method: str) -> str:
    """``forward__1`` -> ``forward`` (an overload of a scripted method); other names unchanged."""
    base, sep, number = method.rpartition(_OVERLOAD)
    return base if sep and base and number.isdigit() else method


@dataclass
class Unit:
    """One parsed code text and the text its spans index into."""

    code_file: CodeFile
    text: str
    _statements: Optional[list] = field(default=None, repr=False)

    def statements(self, grammar) -> list:
        """The text's statement tree (parsed once, shared by every function of the unit)."""
        if self._statements is None:
            from ..parse.statements import parse_statements
            from ..parse.source import SourceText

            self._statements = parse_statements(SourceText(self.text, self.code_file.path), grammar).body
        return self._statements


@dataclass
class Side:
    """One input of the diff: its parsed texts, its classes, its top function."""

    path: str
    units: list[Unit]
    classes: dict[str, tuple[ClassDef, Unit]] = field(default_factory=dict)
    root: Optional[str] = None  # qualified name of the top module class
    functions: list[tuple[Function, Unit]] = field(default_factory=list)  # top-level defs
    # code file path -> line -> original source line (archives with debug info)
    origins: dict[str, dict[int, SourceLocation]] = field(default_factory=dict)
    # CONSTANTS.cN -> its stored value (archives: codeparse.archive.constants)
    constants: dict = field(default_factory=dict)

    def index(self) -> "Side":
        for unit in self.units:
            for cls in unit.code_file.classes:
                self.classes.setdefault(cls.qualified_name, (cls, unit))
            for fn in unit.code_file.functions:
                self.functions.append((fn, unit))
        self.root = _root_class(self)
        return self

    def top(self, method: str = "forward", like: Optional[Function] = None
            ) -> Optional[tuple[Function, Unit, Optional[ClassDef]]]:
        """The function to compare: the root class's ``method`` (or, for a scripted overloaded
        method such as ``LSTM.forward__0``/``forward__1``, the overload whose signature is most
        like ``like``), else a top-level def of that name, else the only function of a bare text.
        Never an unrelated function."""
        if self.root is not None:
            cls, unit = self.classes[self.root]
            found = self.method_of(cls, method, like)
            if found is not None:
                return found, unit, cls
        named = [(fn, unit) for fn, unit in self.functions if fn.name == method]
        if not named:
            named = [(fn, unit) for fn, unit in self.functions if overload_base(fn.name) == method]
        if named:
            fn = pick_overload([f for f, _ in named], like)
            return fn, next(u for f, u in named if f is fn), None
        if not self.classes and len(self.functions) == 1:  # one bare method text
            fn, unit = self.functions[0]
            return fn, unit, None
        return None

    def method_of(self, cls: ClassDef, name: str, like: Optional[Function] = None) -> Optional[Function]:
        for m in cls.methods:
            if m.name == name:
                return m
        overloads = [m for m in cls.methods if overload_base(m.name) == name and m.name != name]
        return pick_overload(overloads, like) if overloads else None

    def function(self, qualified_name: str) -> Optional[tuple[Function, Unit]]:
        """A top-level function by its qualified name."""
        for fn, unit in self.functions:
            if fn.qualified_name == qualified_name:
                return fn, unit
        return None

    def attribute_class(self, cls: ClassDef, attr: str) -> Optional[ClassDef]:
        for a in cls.attributes:
            if a.name == attr and a.type in self.classes:
                return self.classes[a.type][0]
        return None


def _params(fn: Function) -> list[Optional[str]]:
    return [p.annotation for p in fn.signature.params if p.name != "self"]


def pick_overload(candidates: list[Function], like: Optional[Function]) -> Function:
    """The candidate whose parameters are most like ``like``'s (same annotations in order, then
    the nearest count of parameters); the first when nothing tells them apart."""
    if like is None or len(candidates) == 1:
        return candidates[0]
    want = _params(like)

    def score(fn: Function) -> tuple[int, int]:
        have = _params(fn)
        same = sum(1 for a, b in zip(have, want) if a == b or (a and b and (a in b or b in a)))
        return same, -abs(len(have) - len(want))

    return max(candidates, key=score)


def _root_class(side: Side) -> Optional[str]:
    modules = [name for name, (c, _) in side.classes.items() if c.kind == "module"]
    referenced = {a.type for c, _ in side.classes.values() for a in c.attributes if a.type}
    roots = [name for name in modules if name not in referenced]
    for name in roots:  # a user's model lives in code/__torch__.py
        if side.classes[name][1].code_file.path.replace("\\", "/").endswith("__torch__.py"):
            return name
    return roots[0] if roots else (modules[0] if modules else None)


def _archive_side(path: str) -> Side:
    """An archive's code entries, through the archive reader (:mod:`codeparse.archive.torchscript`):
    it bounds what it inflates and names the root class from ``data.pkl`` (never unpickled)."""
    from ..archive.constants import archive_constants
    from ..archive.torchscript import archive_code_files, open_archive

    units = [Unit(cf, text) for cf, text in archive_code_files(path)]
    side = Side(path, units).index()
    archive = open_archive(path)
    if archive.root_class in side.classes:
        side.root = archive.root_class
    side.origins = archive.source_map
    side.constants = archive_constants(path)
    return side


def load_side(path: str) -> Side:
    """Read one diff input: a ``.code``/``.py`` file, a directory of them, or an archive."""
    p = Path(path)
    texts: list[tuple[str, str]] = []
    if p.is_dir():
        for f in iter_inputs([path]):
            texts.append((f, decode_text(Path(f).read_bytes())))
    elif is_archive_path(path):
        return _archive_side(path)
    elif p.is_file():
        data = p.read_bytes()
        if b"\x00" in data:
            raise InputError(path, "binary input, not code text or an archive", "CP302")
        texts = [(path, decode_text(data))]
    else:
        raise InputError(path, "no such file or directory")
    return side_from_texts(path, texts)


def side_from_texts(path: str, texts: Iterable[tuple[str, str]], owner: Optional[str] = None) -> Side:
    units = [Unit(parse_text(text, shown, owner=owner), text) for shown, text in texts]
    return Side(path, units).index()



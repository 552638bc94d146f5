"""The two inputs of a diff: parsed code texts, their classes and top-level functions.

A :class:`Side` is read from a ``.code`` file, a directory of code, an archive (through
:mod:`codeparse.archive`, which bounds what it inflates), or texts captured from a live module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from .api import InputError, decode_text, iter_inputs, parse_text
from .archive import is_archive_path
from .models import ClassDef, CodeFile, Function

__all__ = ["Unit", "Side", "load_side", "side_from_texts"]


@dataclass
class Unit:
    """One parsed code text and the text its spans index into."""

    code_file: CodeFile
    text: str


@dataclass
class Side:
    """One input of the diff: its parsed texts, its classes, its top function."""

    path: str
    units: list[Unit]
    classes: dict[str, tuple[ClassDef, Unit]] = field(default_factory=dict)
    root: Optional[str] = None  # qualified name of the top module class
    functions: list[tuple[Function, Unit]] = field(default_factory=list)  # top-level defs

    def index(self) -> "Side":
        for unit in self.units:
            for cls in unit.code_file.classes:
                self.classes.setdefault(cls.qualified_name, (cls, unit))
            for fn in unit.code_file.functions:
                self.functions.append((fn, unit))
        self.root = _root_class(self)
        return self

    def top(self, method: str = "forward") -> Optional[tuple[Function, Unit, Optional[ClassDef]]]:
        """The function to compare: the root class's ``method``, else a top-level def."""
        if self.root is not None:
            cls, unit = self.classes[self.root]
            for m in cls.methods:
                if m.name == method:
                    return m, unit, cls
        for fn, unit in self.functions:
            if fn.name == method:
                return fn, unit, None
        if self.functions:
            fn, unit = self.functions[0]
            return fn, unit, None
        return None

    def method_of(self, cls: ClassDef, name: str) -> Optional[Function]:
        for m in cls.methods:
            if m.name == name:
                return m
        return None

    def attribute_class(self, cls: ClassDef, attr: str) -> Optional[ClassDef]:
        for a in cls.attributes:
            if a.name == attr and a.type in self.classes:
                return self.classes[a.type][0]
        return None


def _root_class(side: Side) -> Optional[str]:
    modules = [name for name, (c, _) in side.classes.items() if c.kind == "module"]
    referenced = {a.type for c, _ in side.classes.values() for a in c.attributes if a.type}
    roots = [name for name in modules if name not in referenced]
    for name in roots:  # a user's model lives in code/__torch__.py
        if side.classes[name][1].code_file.path.replace("\\", "/").endswith("__torch__.py"):
            return name
    return roots[0] if roots else (modules[0] if modules else None)


def _archive_side(path: str) -> Side:
    """An archive's code entries, through the archive reader (:mod:`codeparse.archive`):
    it bounds what it inflates and names the root class from ``data.pkl`` (never unpickled)."""
    from .archive import archive_code_files, open_archive

    units = [Unit(cf, text) for cf, text in archive_code_files(path)]
    side = Side(path, units).index()
    root = open_archive(path).root_class
    if root in side.classes:
        side.root = root
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



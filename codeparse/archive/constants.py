"""The values of a TorchScript archive's small tensor constants, read without running anything.

A trace holds the Python numbers it met as tensor constants (``torch.mul(x, CONSTANTS.c0)``):
``constants.pkl`` lists them (a tuple of ``torch._utils._rebuild_tensor_v2`` calls on persistent
storage ids), and ``constants/<key>`` holds each storage's raw bytes.  :func:`read_constants`
reads the pickle with the project's bounded unpickler (:mod:`codeparse.pickles.safepickle`),
admitting only those globals (the rebuild function, the storage types, ``OrderedDict``) as
inert stand-ins, and decodes the bytes of storages of at most :data:`MAX_ELEMENTS` elements
with :mod:`struct`.  Nothing is imported from the archive and no code of it runs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["Constant", "read_constants", "archive_constants", "MAX_ELEMENTS"]

MAX_ELEMENTS = 64  # elements of a constant read; larger ones are left unread
MAX_PICKLE_BYTES = 1 << 20  # constants.pkl larger than this is left unread
MAX_CONSTANTS = 4096

# storage type -> (struct format character, bytes per element)
_STORAGES = {
    "DoubleStorage": ("d", 8), "FloatStorage": ("f", 4), "HalfStorage": ("e", 2),
    "LongStorage": ("q", 8), "IntStorage": ("i", 4), "ShortStorage": ("h", 2),
    "CharStorage": ("b", 1), "ByteStorage": ("B", 1), "BoolStorage": ("?", 1),
}
_REBUILD = ("torch._utils", "_rebuild_tensor_v2")
_ORDERED_DICT = ("collections", "OrderedDict")


@dataclass(frozen=True)
class Constant:
    """One tensor constant: its storage type, shape and element values in row-major order."""

    storage: str
    shape: tuple[int, ...]
    values: tuple[Any, ...]

    @property
    def scalar(self) -> Optional[Any]:
        """The value of a one-element constant (``tensor(2)``, ``tensor([0.5])``), else None."""
        return self.values[0] if len(self.values) == 1 else None


@dataclass(frozen=True)
class _Storage:
    kind: str
    key: str
    numel: int


@dataclass(frozen=True)
class _Tensor:
    storage: _Storage
    offset: int
    shape: tuple
    stride: tuple


def _rebuild(storage: Any, offset: Any, shape: Any, stride: Any, *_: Any) -> _Tensor:
    return _Tensor(storage, offset, shape, stride)


def _ordered_dict(*_: Any) -> dict:
    return {}


def _int(value: Any, high: int = 1 << 40) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= high


def _unpickler():
    from ..pickles.safepickle import BoundedUnpickler, PickleLimit

    class ConstantsUnpickler(BoundedUnpickler):
        """Admits the rebuild function, the storage types and ``OrderedDict`` (as stand-ins)."""

        def find_class(self, module: str, name: str) -> Any:  # noqa: D102 - pickle API
            if (module, name) == _REBUILD:
                return _rebuild
            if (module, name) == _ORDERED_DICT:
                return _ordered_dict
            if module == "torch" and name in _STORAGES:
                return name
            raise PickleLimit(f"global {module}.{name} is not one a constant names")

        def persistent_load(self, pid: Any) -> Any:  # noqa: D102 - pickle API
            if (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and pid[1] in _STORAGES
                    and isinstance(pid[2], str) and len(pid[2]) <= 32 and _int(pid[4])):
                return _Storage(pid[1], pid[2], pid[4])
            raise PickleLimit("a persistent id that is not a storage")

    return ConstantsUnpickler, PickleLimit


def _values(tensor: _Tensor, data: bytes, order: str) -> Optional[tuple]:
    """The elements of ``tensor`` from its storage's bytes, or None when they do not fit."""
    code, size = _STORAGES[tensor.storage.kind]
    shape, stride, offset = tensor.shape, tensor.stride, tensor.offset
    if not (isinstance(shape, tuple) and isinstance(stride, tuple) and len(shape) == len(stride) <= 8
            and all(_int(n) for n in shape + stride) and _int(offset)):
        return None
    count = 1
    for n in shape:
        count *= n
    if count > MAX_ELEMENTS or len(data) != tensor.storage.numel * size:
        return None
    elements = struct.unpack(f"{order}{tensor.storage.numel}{code}", data)
    out = []
    for flat in range(count):
        index, rest = offset, flat
        for n, step in zip(reversed(shape), reversed(stride)):
            index += (rest % n) * step
            rest //= n
        if index >= len(elements):
            return None
        out.append(elements[index])
    return tuple(out)


def read_constants(reader: Any) -> dict[str, Constant]:
    """``c0`` -> :class:`Constant` for each small tensor constant of an open archive
    (a :class:`~codeparse.files.zipread.ZipReader`); constants that cannot be read (too
    large, missing or malformed storages) are left out, and an unreadable ``constants.pkl``
    gives none: a reader of the result treats a missing value as unknown."""
    from ..files.zipread import EntryRefused

    root = reader.root
    name = f"{root}/constants.pkl"
    if root is None or name not in reader or reader.size(name) > MAX_PICKLE_BYTES:
        return {}
    unpickler, limit = _unpickler()
    try:
        data = reader.read(name)
        value = unpickler(data, max_objects=8 * len(data) + 4096).load()
    except (EntryRefused, limit, RecursionError):
        return {}
    except Exception:  # noqa: BLE001 - a malformed pickle: no constants known
        return {}
    if not isinstance(value, tuple) or len(value) > MAX_CONSTANTS:
        return {}
    order = "<"
    if f"{root}/byteorder" in reader:
        try:
            order = ">" if reader.read(f"{root}/byteorder", 16).strip() == b"big" else "<"
        except EntryRefused:
            return {}
    out: dict[str, Constant] = {}
    for k, tensor in enumerate(value):
        if not isinstance(tensor, _Tensor) or not isinstance(tensor.storage, _Storage):
            continue
        entry = f"{root}/constants/{tensor.storage.key}"
        size = _STORAGES[tensor.storage.kind][1]
        if entry not in reader or tensor.storage.numel > MAX_ELEMENTS:
            continue
        try:
            raw = reader.read(entry, MAX_ELEMENTS * size)
        except EntryRefused:
            continue
        values = _values(tensor, raw, order)
        if values is not None:
            out[f"c{k}"] = Constant(tensor.storage.kind, tensor.shape, values)
    return out


def archive_constants(path: str) -> dict[str, Constant]:
    """:func:`read_constants` of the archive at ``path`` (none when it cannot be opened)."""
    from ..contract.check import Policy
    from ..contract.errors import InputError
    from ..files.zipread import open_zip

    try:
        reader, _ = open_zip(path, Policy())
    except InputError:
        return {}
    try:
        return read_constants(reader)
    finally:
        reader._zf.close()
        fp = getattr(reader._zf, "fp", None)
        if fp is not None:
            fp.close()

"""Source mapping: read a ``.debug_pkl`` without trusting it, and map code lines back.

PyTorch writes, next to each archive code file, a pickle of *source ranges*
(``torch/csrc/jit/serialization/source_range_serialization.cpp``): a run-length
table saying "from byte offset N of the code file on, the code was printed from this
range of the original Python source".  Three layouts exist (DESIGN.md §7):

1. a tuple of ``(byte_offset, ((text, filename, starting_line), start, end))``;
2. a tuple of 3-tuples, ``(offset, tag, range)`` in some releases and
   ``(offset, range, tag)`` in newer ones: whichever element is a tuple is the range;
3. ``("FORMAT_WITH_STRING_TABLE", text_table, rows)`` where each row is a 2- or
   3-tuple as above and a source is ``(line-text indices, filename index, starting_line)``.

The unpickler admits only the list builders of ``torch.jit._pickle`` (and
``restore_type_tag``, which returns its value); any other global raises
:class:`ForbiddenGlobal`, so nothing in the pickle can run code.  Persistent ids are
refused too.  ``starting_line`` is 1-based, as PyTorch prints it in error messages.
"""

from __future__ import annotations

import io
import pickle
from bisect import bisect_right
from typing import Any, Optional

__all__ = ["ForbiddenGlobal", "DebugInfoError", "LineMap", "read_debug_pkl", "line_origins"]

STRING_TABLE_TAG = "FORMAT_WITH_STRING_TABLE"
MAX_SOURCE_CHARS = 32 << 20  # source text rebuilt from a string table, in all


def _as_list(*args: Any) -> list:
    return list(args[0]) if len(args) == 1 else list(args)


def _identity(value: Any, *_: Any) -> Any:
    return value


# The only globals a source-range pickle names (``torch/jit/_pickle.py``).
ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch.jit._pickle", "build_intlist"): _as_list,
    ("torch.jit._pickle", "build_tensorlist"): _as_list,
    ("torch.jit._pickle", "build_doublelist"): _as_list,
    ("torch.jit._pickle", "build_boollist"): _as_list,
    ("torch.jit._pickle", "build_genericlist"): _as_list,
    ("torch.jit._pickle", "restore_type_tag"): _identity,
}


class ForbiddenGlobal(Exception):
    """The pickle names a global outside :data:`ALLOWED_GLOBALS`."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class DebugInfoError(Exception):
    """The pickle is not a source-range table codeparse understands."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:  # noqa: D102 - pickle API
        found = ALLOWED_GLOBALS.get((module, name))
        if found is None:
            raise ForbiddenGlobal(f"{module}.{name}")
        return found

    def persistent_load(self, pid: Any) -> Any:  # noqa: D102 - pickle API
        raise ForbiddenGlobal(f"persistent id {str(pid)[:40]}")


# One row: (code byte offset, source text, filename, starting line, range start, range end).
Row = tuple[int, str, Optional[str], int, int, int]


class LineMap:
    """Byte offset of the code text -> (original file, original line)."""

    def __init__(self, rows: list[Row]):
        rows = sorted(rows, key=lambda r: r[0])
        self._offsets = [r[0] for r in rows]
        self._rows = rows
        self._line_cache: dict[tuple[int, int], int] = {}
        self._source_lines: Optional[dict[tuple[str, int], str]] = None

    def __len__(self) -> int:
        return len(self._rows)

    def at(self, byte_offset: int) -> Optional[tuple[str, int]]:
        """The original ``(file, line)`` the code byte at ``byte_offset`` was printed from."""
        i = bisect_right(self._offsets, byte_offset) - 1
        return self._origin(i) if i >= 0 else None

    def line(self, start: int, end: int) -> Optional[tuple[str, int]]:
        """The original ``(file, line)`` of code bytes ``[start, end)`` (one code line).

        The range in force at the line's first byte is the statement; of the ranges
        nested in it that start on the line, the narrowest decides: on
        ``x0 = (layer).forward(x, )`` inside an ``if`` that is the call, not the ``if``.
        Ranges outside it (a shared constant printed from elsewhere) are ignored.
        """
        first = bisect_right(self._offsets, start) - 1
        hi = bisect_right(self._offsets, end - 1)
        if first < 0 or not self._rows[first][2]:
            # Nothing (or an empty source) in force at the line's start: the first
            # range with a file that starts on the line decides.
            first = next((i for i in range(max(first + 1, 0), hi) if self._rows[i][2]), None)
            if first is None:
                return None
        _, text0, _, _, s0, e0 = self._rows[first]
        best, best_width = first, e0 - s0
        for i in range(first + 1, hi):
            _, text, filename, _, rs, re_ = self._rows[i]
            if text is text0 and filename and s0 <= rs and re_ <= e0 and re_ - rs < best_width:
                best, best_width = i, re_ - rs
        return self._origin(best)

    def source_line(self, filename: str, line: int) -> Optional[str]:
        """The text of ``line`` (1-based) of the original file ``filename``, as the debug
        info stores it (each source holds the original text of the function it printed),
        without its line ending; None when no stored source covers that line."""
        if self._source_lines is None:
            lines: dict[tuple[str, int], str] = {}
            seen: set[int] = set()
            for _, text, name, start_line, _, _ in self._rows:
                if not name or id(text) in seen:
                    continue
                seen.add(id(text))
                for k, row in enumerate(text.splitlines()):
                    lines.setdefault((name, start_line + k), row)
            self._source_lines = lines
        return self._source_lines.get((filename, line))

    def _origin(self, i: int) -> Optional[tuple[str, int]]:
        _, text, filename, start_line, start, _ = self._rows[i]
        if not filename:
            return None
        key = (id(text), start)
        line = self._line_cache.get(key)
        if line is None:
            line = self._line_cache[key] = start_line + text.count("\n", 0, max(0, start))
        return filename, line


def _source(src: Any, table: Optional[list], max_chars: int = MAX_SOURCE_CHARS) -> tuple[str, Optional[str], int]:
    if not isinstance(src, tuple) or len(src) != 3:
        raise DebugInfoError("a source is not a 3-tuple")
    text, filename, start_line = src
    if table is not None:
        try:
            if not isinstance(text, (list, tuple)) or sum(len(table[i]) for i in text) > max_chars:
                raise DebugInfoError(f"a source text is too long (over {max_chars} characters, --max-debug-chars) "
                                     "or not a list of lines")
            text = "".join(table[i] for i in text)
            filename = table[filename] if filename is not None else None
        except (IndexError, TypeError) as exc:
            raise DebugInfoError(f"string table index out of range ({exc})") from None
    if not isinstance(text, str) or not isinstance(start_line, int):
        raise DebugInfoError("a source has no text or line")
    if filename is not None and not isinstance(filename, str):
        raise DebugInfoError("a source file name is not a string")
    return text, filename, start_line


def _source_key(src: Any) -> Any:
    """Sources equal in content share one entry: a trace writes the same call stack
    (string-table indices) once per row, and torch itself builds each text once."""
    try:
        if isinstance(src, tuple) and len(src) == 3:
            text = src[0]
            return (tuple(text) if isinstance(text, list) else text, src[1], src[2])
        return id(src)
    except TypeError:  # an unhashable part: not a real source; _source says why
        return id(src)


def _rows(raw: Any, table: Optional[list], max_rows: Optional[int],
          max_chars: int = MAX_SOURCE_CHARS) -> list[Row]:
    if not isinstance(raw, (tuple, list)):
        raise DebugInfoError("the ranges are not a tuple")
    if max_rows is not None and len(raw) > max_rows:
        raise DebugInfoError(f"{len(raw)} ranges for {max_rows - 1} bytes of code")
    sources: dict[Any, tuple[str, Optional[str], int]] = {}
    budget = max_chars  # characters of distinct source text built, over all sources
    out: list[Row] = []
    for item in raw:
        if not isinstance(item, tuple) or len(item) not in (2, 3) or not isinstance(item[0], int):
            raise DebugInfoError("a row is not (offset, range[, tag])")
        rng = item[1]
        if len(item) == 3 and not isinstance(rng, tuple):
            rng = item[2]  # (offset, tag, range)
        if not isinstance(rng, tuple) or len(rng) != 3:
            raise DebugInfoError("a row has no source range")
        src, start, end = rng
        key = _source_key(src)
        if key not in sources:
            sources[key] = _source(src, table, max_chars)
            budget -= len(sources[key][0])
            if budget < 0:
                raise DebugInfoError(f"the source texts are too long (over {max_chars} characters, --max-debug-chars)")
        text, filename, start_line = sources[key]
        start = start if isinstance(start, int) else 0
        out.append((item[0], text, filename, start_line, start, end if isinstance(end, int) else start))
    return out


def read_debug_pkl(data: bytes, max_rows: Optional[int] = None, max_chars: int = MAX_SOURCE_CHARS) -> LineMap:
    """Read a ``.debug_pkl`` (any layout); ``max_rows`` caps the ranges (one per code byte at most),
    ``max_chars`` the distinct source text rebuilt (``Policy.max_debug_chars``).

    Raises :class:`ForbiddenGlobal` if it names a global it should not, and
    :class:`DebugInfoError` if it is not a source-range table.
    """
    try:
        value = _Restricted(io.BytesIO(data)).load()
    except (ForbiddenGlobal, DebugInfoError):
        raise
    except RecursionError:
        raise DebugInfoError("nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - any malformed pickle is one finding
        raise DebugInfoError(f"{type(exc).__name__}: {str(exc)[:80]}") from None
    if isinstance(value, tuple) and len(value) == 3 and value[0] == STRING_TABLE_TAG:
        table = value[1]
        if not isinstance(table, (tuple, list)) or not all(isinstance(s, str) for s in table):
            raise DebugInfoError("the string table holds non-strings")
        return LineMap(_rows(value[2], list(table), max_rows, max_chars))
    return LineMap(_rows(value, None, max_rows, max_chars))


def line_origins(text: str, line_map: LineMap) -> dict[int, tuple[str, int]]:
    """For each 1-based line of ``text`` that debug info covers: its original (file, line)."""
    out: dict[int, tuple[str, int]] = {}
    byte = 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        size = len(line.encode("utf-8"))
        if line.strip():
            found = line_map.line(byte, byte + size)
            if found is not None:
                out[number] = found
        byte += size
    return out

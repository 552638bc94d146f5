"""Source mapping: read a ``.debug_pkl`` without trusting it, and map code lines back.

PyTorch writes, next to each archive code file, a pickle of *source ranges*
(``torch/csrc/jit/serialization/source_range_serialization.cpp``): a run-length
table saying "from byte offset N of the code file on, the code was printed from this
range of the original Python source".  Three layouts exist:

1. a tuple of ``(byte_offset, ((text, filename, starting_line), start, end))``;
2. a tuple of 3-tuples, ``(offset, tag, range)`` in some releases and
   ``(offset, range, tag)`` in newer ones: whichever element is a tuple is the range;
3. ``("FORMAT_WITH_STRING_TABLE", text_table, rows)`` where each row is a 2- or
   3-tuple as above and a source is ``(line-text indices, filename index, starting_line)``.

The unpickler admits only the list builders of ``torch.jit._pickle`` (and
``restore_type_tag``, which returns its value); any other global raises
:class:`ForbiddenGlobal`, so nothing in the pickle can run code.  Persistent ids are
refused too.  ``starting_line`` is 1-based, as PyTorch prints it in error messages.

It is a :class:`codeparse.pickles.safepickle.BoundedUnpickler`: memo indices, objects built
and integers are bounded (:class:`~codeparse.pickles.safepickle.PickleLimit`), and the
offsets, line numbers and ranges read must lie in ``[0, 2**31)``, so that every
number that reaches an output is one a JSON reader keeps.  Shared references (one
source tuple or line list named by thousands of rows) are walked once.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any, Iterator, Optional

from ..pickles.safepickle import BoundedUnpickler, NotPlain, PickleLimit, load_plain, safe_int

__all__ = ["ForbiddenGlobal", "DebugInfoError", "PickleLimit", "LineMap", "LineOrigins", "read_debug_pkl",
           "line_origins"]

STRING_TABLE_TAG = "FORMAT_WITH_STRING_TABLE"
MAX_SOURCE_CHARS = 32 << 20  # source text rebuilt from a string table, in all
_NEWLINE = re.compile("\n")
MAX_NUMBER = (1 << 31) - 1  # offsets, line numbers and range ends read from a pickle


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


class _Restricted(BoundedUnpickler):
    def find_class(self, module: str, name: str) -> Any:  # noqa: D102 - pickle API
        found = ALLOWED_GLOBALS.get((module, name))
        if found is None:
            raise ForbiddenGlobal(f"{module}.{name}")
        if found is _as_list:
            def build(*args: Any) -> list:  # a list copied from a shared one counts its elements
                out = _as_list(*args)
                self.count(len(out))
                return out
            return build
        return found

    def persistent_load(self, pid: Any) -> Any:  # noqa: D102 - pickle API
        raise ForbiddenGlobal(f"persistent id {str(pid)[:40]}")


# One row: (code byte offset, source text, filename, starting line, range start, range end).
Row = tuple[int, str, Optional[str], int, int, int]


class LineMap:
    """Byte offset of the code text -> (original file, original line)."""

    def __init__(self, rows: list[Row]):
        rows = sorted(rows, key=itemgetter(0))  # stable: rows of one offset keep their order
        self._offsets = [r[0] for r in rows]
        self._rows = rows
        self._breaks: dict[int, list[int]] = {}
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

    def source_text(self, byte_offset: int) -> Optional[str]:
        """The original source text of the range the code byte at ``byte_offset`` was printed
        from (``int`` for a user's ``int(...)``; the calling expression for a conversion the
        compiler inserted), or None where no range with a file is in force."""
        i = bisect_right(self._offsets, byte_offset) - 1
        if i < 0:
            return None
        _, text, filename, _, start, end = self._rows[i]
        return text[start:end] if filename else None

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
        breaks = self._breaks.get(id(text))
        if breaks is None:  # newline offsets of each text, found once: a lookup costs log(lines)
            breaks = self._breaks[id(text)] = [m.start() for m in _NEWLINE.finditer(text)]
        return filename, start_line + bisect_left(breaks, start)


def _source(src: Any, table: Optional[list], texts: dict[int, str],
            max_chars: int = MAX_SOURCE_CHARS) -> tuple[str, Optional[str], int]:
    """One source ``(text, filename, starting_line)``; ``texts`` caches the text joined
    from a string table per line list, so a list shared by many sources is joined once."""
    if not isinstance(src, tuple) or len(src) != 3:
        raise DebugInfoError("a source is not a 3-tuple")
    text, filename, start_line = src
    if table is not None:
        try:
            if not isinstance(text, (list, tuple)):
                raise DebugInfoError("a source text is not a list of lines")
            key = id(text)
            joined = texts.get(key)
            if joined is None:
                if sum(len(table[i]) for i in text) > max_chars:
                    raise DebugInfoError(f"a source text is too long (over {max_chars} characters, "
                                         "--max-debug-chars)")
                joined = texts[key] = "".join(table[i] for i in text)
            text = joined
            filename = table[filename] if filename is not None else None
        except (IndexError, TypeError) as exc:
            raise DebugInfoError(f"string table index out of range ({exc})") from None
    if not isinstance(text, str) or not isinstance(start_line, int):
        raise DebugInfoError("a source has no text or line")
    if not safe_int(start_line, 0, MAX_NUMBER):
        raise PickleLimit(f"a starting line number out of range ({_digits(start_line)})")
    if filename is not None and not isinstance(filename, str):
        raise DebugInfoError("a source file name is not a string")
    return text, filename, start_line


def _digits(value: int) -> str:
    """A number as shown in a reason: whole when short, else its sign and digit count."""
    if -10**12 < value < 10**12:
        return str(value)
    return f"{'-' if value < 0 else ''}{value.bit_length() * 30103 // 100000 + 1}-digit number"


class _SourceKeys:
    """Sources equal in content share one entry: a trace writes the same call stack
    (string-table indices) once per row, and torch itself builds each text once.  A line
    list is turned into its content key once per list object (a list shared by reference
    by thousands of rows is hashed once, not once per row)."""

    def __init__(self) -> None:
        self._lists: dict[int, int] = {}  # id(list) -> content number
        self._contents: dict[tuple, int] = {}
        self._keep: list[Any] = []  # the lists whose ids are keys stay alive

    def __call__(self, src: Any) -> Any:
        try:
            if isinstance(src, tuple) and len(src) == 3:
                text = src[0]
                if isinstance(text, list):
                    number = self._lists.get(id(text))
                    if number is None:
                        number = self._lists[id(text)] = self._contents.setdefault(tuple(text), len(self._contents))
                        self._keep.append(text)
                    text = ("list", number)
                key = (text, src[1], src[2])
                hash(key)
                return key
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
    texts: dict[int, str] = {}
    counted: set[int] = set()
    source_key = _SourceKeys()
    budget = max_chars  # characters of source text built, over all distinct texts
    keys: dict[int, Any] = {}  # id(source object) -> its key: rows share source objects (memo references)
    resolved: dict[int, tuple[str, Optional[str], int]] = {}  # id(source object) -> its source, once checked
    out: list[Row] = []
    append = out.append
    for item in raw:
        # The rows torch writes, one dictionary lookup each: a tuple (offset, range[, tag]) or
        # (offset, tag, range) whose range names a source already checked, numbers in range.
        # Any other row takes the full path below, which checks it and says what is wrong.
        if type(item) is tuple and 2 <= len(item) <= 3:
            rng = item[1]
            if type(rng) is not tuple and len(item) == 3:
                rng = item[2]
            if type(rng) is tuple and len(rng) == 3:
                src, start, end = rng
                found = resolved.get(id(src))
                offset = item[0]
                if (found is not None and type(offset) is int and type(start) is int  # noqa: E721 - not bool
                        and type(end) is int and 0 <= offset <= MAX_NUMBER  # noqa: E721
                        and 0 <= start <= MAX_NUMBER and 0 <= end <= MAX_NUMBER):
                    text, filename, start_line = found
                    append((offset, text, filename, start_line, start, end))
                    continue
        if not isinstance(item, tuple) or len(item) not in (2, 3) or not isinstance(item[0], int):
            raise DebugInfoError("a row is not (offset, range[, tag])")
        rng = item[1]
        if len(item) == 3 and not isinstance(rng, tuple):
            rng = item[2]  # (offset, tag, range)
        if not isinstance(rng, tuple) or len(rng) != 3:
            raise DebugInfoError("a row has no source range")
        src, start, end = rng
        key = keys.get(id(src))  # every source object stays alive in `raw`: ids are not reused
        if key is None:
            key = keys[id(src)] = source_key(src)
        if key not in sources:
            sources[key] = _source(src, table, texts, max_chars)
            text_key = id(sources[key][0])
            if text_key not in counted:
                counted.add(text_key)
                budget -= len(sources[key][0])
                if budget < 0:
                    raise DebugInfoError(f"the source texts are too long (over {max_chars} characters, "
                                         "--max-debug-chars)")
        resolved[id(src)] = sources[key]
        text, filename, start_line = sources[key]
        start = start if isinstance(start, int) else 0
        end = end if isinstance(end, int) else start
        offset = item[0]
        if not (type(offset) is int and type(start) is int and type(end) is int  # noqa: E721 - not bool
                and 0 <= offset <= MAX_NUMBER and 0 <= start <= MAX_NUMBER and 0 <= end <= MAX_NUMBER):
            for number in (offset, start, end):
                if not safe_int(number, 0, MAX_NUMBER):
                    raise PickleLimit(f"an offset out of range ({_digits(number)})")
        append((offset, text, filename, start_line, start, end))
    return out


def read_debug_pkl(data: bytes, max_rows: Optional[int] = None, max_chars: int = MAX_SOURCE_CHARS) -> LineMap:
    """Read a ``.debug_pkl`` (any layout); ``max_rows`` caps the ranges (one per code byte at most),
    ``max_chars`` the distinct source text rebuilt (``Policy.max_debug_chars``).

    Raises :class:`ForbiddenGlobal` if it names a global it should not,
    :class:`PickleLimit` if it exceeds a bound (memo, objects, numbers), and
    :class:`DebugInfoError` if it is not a source-range table.
    """
    max_objects = 8 * len(data) + 4096
    try:
        try:
            value = load_plain(data, max_objects, ALLOWED_GLOBALS, (_as_list,))
        except NotPlain:  # the unpickler decides: the value, or why not
            value = _Restricted(data, max_objects=max_objects).load()
    except (ForbiddenGlobal, DebugInfoError, PickleLimit):
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


class LineOrigins:
    """:func:`line_origins` one line at a time: ``get(line)`` maps a line on its first ask
    (a finding's line), ``items()`` all of them; for files whose findings need a few lines."""

    __slots__ = ("_text", "_map", "_bounds", "_memo")

    def __init__(self, text: str, line_map: LineMap):
        self._text = text
        self._map = line_map
        self._bounds: Optional[list[tuple[int, int, bool]]] = None  # per line: bytes [start, end), not blank
        self._memo: dict[int, Optional[tuple[str, int]]] = {}

    @property
    def parts(self) -> tuple[LineMap, str]:
        """The line map and the code text it maps (:mod:`codeparse.rules.export` reads offsets)."""
        return self._map, self._text

    def get(self, number: int, default: Any = None) -> Any:
        if number in self._memo:
            found = self._memo[number]
        else:
            if self._bounds is None:
                self._bounds = list(_line_bounds(self._text))
            found = None
            if 1 <= number <= len(self._bounds):
                start, end, content = self._bounds[number - 1]
                if content:
                    found = self._map.line(start, end)
            self._memo[number] = found
        return default if found is None else found

    def items(self):  # noqa: ANN201 - a dict's items view
        return line_origins(self._text, self._map).items()


def line_origins(text: str, line_map: LineMap) -> dict[int, tuple[str, int]]:
    """For each 1-based line of ``text`` that debug info covers: its original (file, line)."""
    out: dict[int, tuple[str, int]] = {}
    for number, (start, end, content) in enumerate(_line_bounds(text), start=1):
        if content:
            found = line_map.line(start, end)
            if found is not None:
                out[number] = found
    return out


def _line_bounds(text: str) -> Iterator[tuple[int, int, bool]]:
    """Per line of ``text``: its bytes [start, end) in UTF-8 and whether it is not blank
    (debug info maps byte ranges; a blank line has no origin)."""
    byte = 0
    for line in text.splitlines(keepends=True):
        size = len(line.encode("utf-8"))
        yield byte, byte + size, bool(line.strip())
        byte += size

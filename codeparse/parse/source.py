"""Source text and positions: offsets in, 1-based lines and columns out.

One convention for the whole package (see :class:`codeparse.contract.text.Span`): offsets
are indices into the decoded ``str`` (code points), ``end`` exclusive; lines and
columns are 1-based.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

from ..contract.views import record

# The fields of a Span, in the model's order, as a key-sharing plain dict (plain.record):
# a file's data holds thousands of spans.  Callers that know the line and column already
# call it directly: span_data(start, end, line, column, end_line, end_column).
span_data = record("Span", ("start", "end", "line", "column", "end_line", "end_column"))

__all__ = ["SourceText", "span_data"]

_PLUS_ONE = (1).__add__
_new, _SPAN = object.__new__, span_data.cls


class SourceText:
    """A text with a line index, able to turn offsets into :class:`Span` data."""

    __slots__ = ("text", "path", "line_starts")

    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        # Each line starts one past the end of the one before: the running sums of the
        # lines' lengths plus one, counted in C (no bytecode per line); the last sum is
        # one past the text's end.
        starts = list(accumulate(map(_PLUS_ONE, map(len, text.split("\n"))), initial=0))
        starts.pop()
        self.line_starts = starts  # the offset each line starts at, in order (line 1 first)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of an offset."""
        index = bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def span(self, start: int, end: int) -> dict:
        """A :class:`Span` as a plain dict (a key-sharing one: see :func:`codeparse.contract.views.record`)."""
        starts = self.line_starts
        line = bisect_right(starts, start)
        o = _new(_SPAN)  # span_data(start, end, line, column, end_line, end_column), inline
        o.start = start
        o.end = end
        o.line = line
        o.column = start - starts[line - 1] + 1
        if line < len(starts) and end >= starts[line]:
            end_line = bisect_right(starts, end)
            o.end_line = end_line
            o.end_column = end - starts[end_line - 1] + 1
        else:  # on the same line, as most spans are
            o.end_line = line
            o.end_column = end - starts[line - 1] + 1
        return o.__dict__

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
        index = bisect_right(starts, start) - 1
        line_start = starts[index]
        if index + 1 < len(starts) and end >= starts[index + 1]:
            end_line, end_column = self.position(end)
        else:  # on the same line, as most spans are
            end_line, end_column = index + 1, end - line_start + 1
        return span_data(start, end, index + 1, start - line_start + 1, end_line, end_column)

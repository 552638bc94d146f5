"""Source text and positions: offsets in, 1-based lines and columns out.

One convention for the whole package (see :class:`codeparse.models.Span`): offsets
are indices into the decoded ``str`` (code points), ``end`` exclusive; lines and
columns are 1-based.
"""

from __future__ import annotations

from bisect import bisect_right

__all__ = ["SourceText"]


class SourceText:
    """A text with a line index, able to turn offsets into :class:`Span` data."""

    __slots__ = ("text", "path", "_line_starts")

    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        self._line_starts = starts

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of an offset."""
        index = bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def span(self, start: int, end: int) -> dict:
        """A :class:`Span` as a plain dict (validated later, with the whole file)."""
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return {
            "start": start, "end": end, "line": line, "column": column,
            "end_line": end_line, "end_column": end_column,
        }

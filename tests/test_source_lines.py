"""SourceText's line index (counted in C) against the offsets ``str.find`` gives line by
line, on every fixture text and on random texts of line breaks and look-alikes."""

from __future__ import annotations

import random
from pathlib import Path

from codeparse.parse.source import SourceText

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted((ROOT / "fixtures" / "text").glob("*/*.code")) + sorted((ROOT / "fixtures" / "archive_code").rglob("*.py"))


def _line_starts_by_find(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def test_line_starts_on_every_fixture_text():
    assert len(TEXTS) > 500
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        assert SourceText(text, str(path)).line_starts == _line_starts_by_find(text), path


def test_line_starts_on_random_texts():
    # Only "\n" ends a line: "\r", "\u2028", "\x0b", "\x0c", "\x1c" (str.splitlines breaks) do not.
    rnd = random.Random(7)
    texts = ["", "\n", "\n\n", "a", "a\n", "\na", "a\r\nb\u2028c\x0bd\x0c\x1ce\n"]
    texts += ["".join(rnd.choice("ab \n\r\u2028\x0b\x0c\x1c\x85") for _ in range(rnd.randrange(40))) for _ in range(2000)]
    for text in texts:
        source = SourceText(text, "-")
        assert source.line_starts == _line_starts_by_find(text), repr(text)
        for offset in range(len(text) + 1):
            line, column = source.position(offset)
            assert text.rfind("\n", 0, offset) + 1 + column - 1 == offset and line == text.count("\n", 0, offset) + 1

"""Escape at the boundary, once: every string that comes from an input passes here
before a text renderer (terminal tables, concise lines, caret output, GitHub
annotations) shows it.

Two layers, so that each renderer takes exactly what it needs:

* :func:`for_text` makes a string safe for any plain-text output: control
  characters (C0, DEL, C1), line and paragraph separators and the bidi
  overrides are shown as escapes (``\\n``, ``\\x1b``, ``\\u202e``), so an input
  cannot start a new output line, move the cursor or recolour the terminal.
* :func:`for_rich` additionally escapes rich's console markup, so ``[h, w]`` or
  ``"[/bold]"`` in a condition prints as written.

JSON, JSONL and SARIF keep the true strings (their encoders escape for their
own syntax); only text renderers call these functions.
"""

from __future__ import annotations

import re

# C0 controls except none (tab included: it moves the cursor), DEL, C1 controls,
# the Unicode line/paragraph separators, and bidi embedding/override/isolate marks.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: "re.Match[str]") -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


def for_text(value: object) -> str:
    """``str(value)`` with every control or direction-changing character escaped."""
    text = value if isinstance(value, str) else str(value)
    if _UNSAFE.search(text) is None:
        return text
    # A literal backslash stays as it is: the escapes above are for display, never parsed back.
    return _UNSAFE.sub(_escape_char, text)


def for_rich(value: object) -> str:
    """:func:`for_text`, then rich's markup escaped (``[`` that could open a tag)."""
    from rich.markup import escape

    return escape(for_text(value))

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
* :func:`for_layout` escapes the same characters but tab, line feed and carriage
  return, for the HTML report, whose code keeps its lines (HTML escaping is autoescape's).

JSON, JSONL and SARIF keep the true strings (their encoders escape for their
own syntax); only text renderers call these functions.
"""

from __future__ import annotations

import re

# DEL, C1 controls, the Unicode line/paragraph separators, and bidi embedding/override/
# isolate marks; for_text adds every C0 control (tab included: it moves the cursor),
# HIDDEN those but the tab, line feed and carriage return that lay out code text.
_INVISIBLE = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f{_INVISIBLE}]")
HIDDEN = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_INVISIBLE}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_char(match: "re.Match[str]") -> str:
    """The escape of the one character ``match`` found (``\\n``, ``\\x1b``, ``\\u202e``)."""
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
    return _UNSAFE.sub(escape_char, text)


def for_layout(value: str) -> str:
    """``value`` with the characters of :data:`HIDDEN` escaped: for renderers that keep
    line layout (the HTML report), where tab, line feed and carriage return are text."""
    if HIDDEN.search(value) is None:
        return value
    return HIDDEN.sub(escape_char, value)


def for_rich(value: object) -> str:
    """:func:`for_text`, then rich's markup escaped (``[`` that could open a tag)."""
    from rich.markup import escape

    return escape(for_text(value))

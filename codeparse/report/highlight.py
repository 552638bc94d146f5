"""Highlight TorchScript text with Pygments, as tokens for the templates.

TorchScript's printer writes a subset of Python (DESIGN.md §1: ``def``, ``if``/``else``,
``for``/``while``, calls, literals, annotations), so Pygments' ``PythonLexer`` is the
lexer: every printed construct is Python syntax.  Its token types are turned into the
short CSS class names Pygments' own stylesheets use (``k``, ``nf``, ``s2``...), and the
text is split into lines of ``(class, text)`` pairs.  No HTML is made here: the
template writes each pair into a ``<span>`` through Jinja2's autoescape.
"""

from __future__ import annotations

import functools

__all__ = ["highlight_lines", "style_css"]


@functools.cache
def _lexer():
    from pygments.lexers.python import PythonLexer

    return PythonLexer(stripnl=False, ensurenl=False, tabsize=0)


@functools.cache
def _css_class(ttype) -> str:
    from pygments.token import STANDARD_TYPES

    while ttype is not None:
        name = STANDARD_TYPES.get(ttype)
        if name is not None:
            return name
        ttype = ttype.parent
    return ""


def highlight_lines(text: str) -> list[list[tuple[str, str]]]:
    """``text`` as lines (no line ends), each a list of ``(css class, text)`` tokens."""
    lines: list[list[tuple[str, str]]] = [[]]
    current = lines[0]
    for ttype, value in _lexer().get_tokens(text):
        cls = _css_class(ttype)
        if cls in ("w", "") or value.isspace():
            cls = ""
        parts = value.split("\n")
        for k, part in enumerate(parts):
            if k:
                current = []
                lines.append(current)
            if not part:
                continue
            if current and current[-1][0] == cls:
                current[-1] = (cls, current[-1][1] + part)
            else:
                current.append((cls, part))
    if text.endswith("\n") and not lines[-1]:
        lines.pop()
    return lines


@functools.cache
def style_css(scope: str = ".code") -> str:
    """The Pygments stylesheet for token classes under ``scope`` (a colour-blind-safe style)."""
    from pygments.formatters.html import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(scope)

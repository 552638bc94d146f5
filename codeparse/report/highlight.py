"""Highlight TorchScript text with Pygments, as tokens and as HTML for the templates.

:class:`TorchScriptLexer` is a Pygments lexer whose rules are data
(``grammars/highlight.toml``: one pattern and one Pygments token type per rule, tried in
order).  It runs them as one alternation in a single scan, which is an order of
magnitude faster than Pygments' general ``PythonLexer`` on this text (the report of a
large archive highlights tens of thousands of lines).  Token types map to the short CSS
class names of Pygments' stylesheets (``k``, ``nf``, ``s2``...) and the stylesheet comes
from Pygments' ``default`` style.

:func:`highlight_lines` gives lines of ``(css class, text)`` pairs; tokens whose class
the stylesheet does not colour (names, punctuation, whitespace) are merged into plain
text, which keeps the page small.  :func:`highlight_html` writes each line as the code
view shows it (a ``<span>`` per coloured token), every token's text escaped by
``markupsafe.escape``, the function Jinja2's autoescape applies: the same bytes the
template would write token by token, at a fraction of the cost (a large archive's code
views are most of its page).
"""

from __future__ import annotations

import functools
import re
import tomllib
from pygments.lexer import Lexer
from pygments.token import STANDARD_TYPES, _TokenType, string_to_tokentype
from typing import Iterator

from ..grammar.locations import grammar_dir
from ..output.escaping import HIDDEN, escape_char, for_layout

__all__ = ["TorchScriptLexer", "highlight_lines", "highlight_html", "style_css", "shown_text"]

STYLE = "default"


@functools.cache
def _rules() -> tuple[re.Pattern, tuple[_TokenType, ...]]:
    path = grammar_dir() / "highlight.toml"
    with open(path, "rb") as handle:
        rules = tomllib.load(handle)["rules"]
    types = tuple(string_to_tokentype(r["token"]) for r in rules)
    for rule, ttype in zip(rules, types):
        if ttype not in STANDARD_TYPES:
            raise ValueError(f"{path}: unknown Pygments token type {rule['token']!r}")
    master = re.compile("|".join(f"(?P<r{i}>{r['pattern']})" for i, r in enumerate(rules)))
    return master, types


class TorchScriptLexer(Lexer):
    """TorchScript text (the printer's Python-like syntax), rules from grammars/highlight.toml."""

    name = "TorchScript"
    aliases = ["torchscript"]
    filenames = ["*.code"]

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, _TokenType, str]]:
        master, types = _rules()
        for m in master.finditer(text):
            yield m.start(), types[m.lastindex - 1], m.group()


@functools.cache
def _styled() -> frozenset[str]:
    """The CSS classes that the Pygments stylesheet colours (inherited styles included)."""
    from pygments.formatters.html import HtmlFormatter

    styled = {cls for cls, (style, _ttype, _level) in HtmlFormatter(style=STYLE).class2style.items() if style}
    styled.discard("w")  # whitespace stays plain text
    return frozenset(styled)


@functools.cache
def _css_class(ttype: _TokenType) -> str:
    while ttype is not None:
        name = STANDARD_TYPES.get(ttype)
        if name is not None:
            return name if name in _styled() else ""
        ttype = ttype.parent
    return ""


def highlight_lines(text: str) -> list[list[tuple[str, str]]]:
    """``text`` as lines (no line ends), each a list of ``(css class, text)`` tokens."""
    master, types = _rules()
    classes = [_css_class(t) for t in types]
    lines: list[list[tuple[str, str]]] = [[]]
    current = lines[0]
    for m in master.finditer(text):
        cls = classes[m.lastindex - 1]
        value = m.group()
        if "\n" in value:
            parts = value.split("\n")
            for k, part in enumerate(parts):
                if k:
                    current = []
                    lines.append(current)
                if part:
                    current.append((cls, part))
            continue
        if current and current[-1][0] == cls:
            current[-1] = (cls, current[-1][1] + value)
        else:
            current.append((cls, value))
    if text.endswith("\n") and not lines[-1]:
        lines.pop()
    return lines


_SPECIAL = re.compile("[&<>'\"]").search  # what markupsafe.escape changes
# Characters a reader cannot see or that reorder what is shown (escaping.HIDDEN: controls
# but tab, LF and CR, the line separators, the bidi embeddings, overrides and isolates): an
# archive could make its code read differently from what it is ("Trojan Source").  The
# page shows each as its escape, as the text outputs do: in the code view in a marked span.
def shown_text(value: object) -> object:
    """Jinja2's ``finalize``: a string from an input with each character of
    ``escaping.HIDDEN`` as its escape (then autoescaped as any text); markup and other
    values as they are."""
    return for_layout(value) if type(value) is str else value


def _shown(match: "re.Match[str]") -> str:
    return f'<span class="ctrl" title="an invisible character">{escape_char(match)}</span>'


def highlight_html(text: str) -> list:
    """``text`` as lines of HTML (``markupsafe.Markup``, no line ends): the tokens of
    :func:`highlight_lines`, each coloured one in a ``<span class="...">``, all escaped;
    an invisible or direction-changing character as its escape in ``<span class="ctrl">``."""
    from markupsafe import Markup, escape

    opened = {cls: f'<span class="{escape(cls)}">' for cls in _styled()}
    out = []
    for line in highlight_lines(text):
        parts = []
        for cls, value in line:
            if _SPECIAL(value):
                value = escape(value)
            if HIDDEN.search(value):
                value = HIDDEN.sub(_shown, value)
            parts.append(f"{opened[cls]}{value}</span>" if cls else value)
        out.append(Markup("".join(parts)))
    return out


@functools.cache
def style_css(scope: str = ".code") -> str:
    """The Pygments stylesheet for token classes under ``scope``."""
    from pygments.formatters.html import HtmlFormatter

    return HtmlFormatter(style=STYLE).get_style_defs(scope)



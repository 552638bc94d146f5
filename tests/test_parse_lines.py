"""The parser's one pass over physical lines (`[lines].head`) reads each line as the
grammar's `physical`, `blank` and `identifier` patterns and the bracket nesting check do."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeparse.grammar.engine import GrammarError, available_grammars, load_grammar, load_grammar_file
from codeparse.parse import statements as parser
from codeparse.parse.source import SourceText

GRAMMARS = [g.id for g in available_grammars()]
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# Characters that decide a line's parts: indentation, blanks, comments, words, brackets, quotes.
LINE_ALPHABET = st.sampled_from(list("()[]{} \t\f\r\n#\"'a_Z9.,:=") + ["\u00e9"])


def _heads(text: str, grammar_id: str, with_head: bool) -> list[tuple]:
    """Each line's parts as the parser reads them: with `[lines].head`, or one by one."""
    r = parser._Reading(load_grammar(grammar_id))
    lines = r.head(text) if with_head else parser._physical_heads(r, text)
    return [(m.span(), m.end(1), m.group(2), m.end(3) == m.end()) for m in lines]


@settings(max_examples=800, deadline=None)
@given(st.text(LINE_ALPHABET, max_size=60), st.sampled_from(GRAMMARS))
def test_head_reads_each_line_as_its_parts_do(text, grammar_id):
    """Every line whose text `blank` does not match whole, and no other; its indentation and
    text as `physical` reads them; the first word as `identifier` reads it; `nested` reaching
    the text's end where the bracket nesting check (`statements.nesting`) reaches it."""
    assert _heads(text, grammar_id, True) == _heads(text, grammar_id, False)


@pytest.mark.parametrize("grammar_id", GRAMMARS)
def test_head_reads_every_fixture_line_as_its_parts_do(grammar_id):
    paths = [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py"), *FIXTURES.glob("legacy/**/*.py")]
    checked = 0
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        heads = _heads(text, grammar_id, True)
        assert heads == _heads(text, grammar_id, False), path
        checked += len(heads)
    assert checked > 30_000


def _tree(stmts) -> list:
    return [(s.rule.name, s.start, s.end, s.column, s.block_end, s.after_unparsed, s.match.span(),
             [(n, s.span_of(n)) for n in s.rule.group_names() if n not in ("bracketed", "type_expr")],
             _tree(s.body), None if s.orelse is None else _tree(s.orelse)) for s in stmts]


def _parsed(text: str, grammar, with_head: bool) -> tuple:
    r = parser._reading(grammar)
    kept = r.head
    if not with_head:
        r.head = None
    try:
        result = parser.parse_statements(SourceText(text, "t"), grammar)
    finally:
        r.head = kept
    return _tree(result.body), result.diagnostics


def test_a_grammar_without_head_parses_alike():
    """A grammar without `[lines].head` reads its lines part by part: the same statements,
    blocks and diagnostics (fixture texts, and lines that open, close and break blocks)."""
    g = load_grammar("torchscript-v2")
    texts = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("text/*/*.code"))[:60]]
    texts += ["def f(x,\n    y):\n  if x:\n    pass\n  else:\n  return y\n   z = (1\n", "  x = 1\n\tif (:\n",
              "class A:\n  x : Tensor\n  # only a comment\n\n  def g(self):\n    return None\nelse:\n"]
    for text in texts:
        assert _parsed(text, g, True) == _parsed(text, g, False)


def test_a_head_with_other_groups_is_a_grammar_error(tmp_path):
    source = (Path(__file__).resolve().parent.parent / "grammars" / "torchscript-v2.toml").read_text(encoding="utf-8")
    assert source.count("(?P<word>{IDENT})?+") == 1
    path = tmp_path / "torchscript-v2.toml"
    path.write_text(source.replace("(?P<word>{IDENT})?+", "(?:{IDENT})?+"), encoding="utf-8")
    with pytest.raises(GrammarError, match=r"\[lines\]\.head"):
        parser.parse_statements(SourceText("x = 1\n", "t"), load_grammar_file(path))

"""The expression reader's counted item split and the scan's counted receivers agree with the grammars' patterns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeparse.parse.expressions import (FALLBACK, ExpressionReader, split_items, split_list, string_structure_finder,
                                         structure_finder)
from codeparse.grammar.engine import grammar_ids, load_grammar


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from(list("()[]{}a, =.")), max_size=30))
def test_counted_items_agree_with_the_grammars_items_pattern(grammar_id, text):
    """On text without quotes or line breaks, split_items gives what ``items`` gives after
    an opening bracket: the item spans, the trailing comma, and the closer (None where
    ``items`` stops short of one); where brackets inside do not nest it defers to ``items``."""
    _agrees(grammar_id, "f(" + text, fallback_allowed=True)


def _agrees(grammar_id: str, text: str, fallback_allowed: bool, strings: bool = False) -> None:
    """split_items after the ``f(`` that starts ``text`` gives what the grammar's ``items``
    gives there (or defers to it, where ``fallback_allowed``); with ``strings``, split by
    the finder that reads string literals."""
    g = load_grammar(grammar_id)
    finder, openers, _quotes = (string_structure_finder if strings else structure_finder)(g)
    found = split_items(text, 2, len(text), finder, openers)
    if found is FALLBACK and fallback_allowed:
        return
    assert found is not FALLBACK
    m = g.expression["items"].match(text, 2, len(text))
    close = m.end()
    if close >= len(text) or text[close] not in ")]}":
        close = None
    assert found[2] == close
    if close is not None:
        assert (found[0], found[1]) == (m.spans("item"), m.group("trailing") is not None)


def test_split_items_on_printed_calls():
    g = load_grammar("torchscript-v2")
    finder, openers, _quotes = structure_finder(g)
    text = "torch.add(torch.size(x, 0), [1, 2], alpha=3, )"
    spans, trailing, close = split_items(text, 10, len(text), finder, openers)
    assert [text[a:b] for a, b in spans] == ["torch.size(x, 0)", "[1, 2]", "alpha=3"]
    assert trailing and close == len(text) - 1
    assert split_items("f(a, , b)", 2, 9, finder, openers)[2] is None  # an empty item: no closer
    assert split_items("f(a, (b]", 2, 8, finder, openers) is FALLBACK  # brackets that do not nest
    # With strings, read whole by the finder that reads them: their brackets and commas do not count.
    finder, openers, _quotes = string_structure_finder(g)
    text = 'f(getattr(self, "a,(b"), \'c]\', d=", ")'
    spans, trailing, close = split_items(text, 2, len(text), finder, openers)
    assert [text[a:b] for a, b in spans] == ['getattr(self, "a,(b")', "'c]'", 'd=", "']
    assert not trailing and close == len(text) - 1
    assert split_items('f(a, "b)', 2, 8, finder, openers) is FALLBACK  # a quote that starts no string
    node = ExpressionReader(text, g).read(0, len(text))
    assert [type(a).__name__ for a in node.args] == ["CallExpr", "Const"]
    assert node.keywords[0][0] == "d" and node.keywords[0][1].text == '", "'


_LEAF = st.text(st.sampled_from(list("a =.")), max_size=3)
_SEP = st.sampled_from([",", ", ", " ,", "", ",  ", ",,"])


def _bracketed(inner):
    def build(pair, parts, seps):
        return pair[0] + "".join(p + s for p, s in zip(parts, seps)) + pair[1]
    return st.builds(build, st.sampled_from(["()", "[]", "{}"]), st.lists(inner, max_size=4),
                     st.lists(_SEP, min_size=4, max_size=4))


_NESTED = st.recursive(_LEAF, _bracketed, max_leaves=12)


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_NESTED, max_size=5), seps=st.lists(_SEP, min_size=5, max_size=5))
def test_counted_items_agree_with_the_grammars_items_pattern_on_nested_brackets(grammar_id, parts, seps):
    """The same on brackets that nest (most printed code): a call whose arguments hold
    brackets, empty items, trailing and doubled separators."""
    _agrees(grammar_id, "f(" + "".join(p + s for p, s in zip(parts, seps)) + ")", fallback_allowed=False)


# Strings as the printer writes them (escapes included), with brackets, separators and
# quotes inside that must not count.
_STRING = st.sampled_from(['"a"', "'b'", '""', '"(,"', "'[)'", '"x\\"]"', "'\\'{'", '"a" "b"', '"{}"'])
_STRING_LEAF = st.one_of(_LEAF, _STRING, st.builds(lambda a, b: a + b, _LEAF, _STRING))
_NESTED_STRINGS = st.recursive(_STRING_LEAF, _bracketed, max_leaves=12)


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from(list("()[]{}a, =.\"'\\")), max_size=30))
def test_counted_items_with_quotes_agree_with_the_grammars_items_pattern(grammar_id, text):
    """The finder that reads string literals splits text holding quotes as ``items`` does
    (strings whole, their brackets and commas not counted), or defers to ``items`` (a quote
    that starts no string)."""
    _agrees(grammar_id, "f(" + text, fallback_allowed=True, strings=True)


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_NESTED_STRINGS, max_size=5), seps=st.lists(_SEP, min_size=5, max_size=5))
def test_counted_items_agree_with_the_grammars_items_pattern_on_strings_in_brackets(grammar_id, parts, seps):
    """Brackets that nest, holding well-formed strings: counted, never deferred, and as ``items``."""
    _agrees(grammar_id, "f(" + "".join(p + s for p, s in zip(parts, seps)) + ")", fallback_allowed=False,
            strings=True)


def _list_agrees(grammar_id: str, text: str) -> None:
    """split_list over ``text`` gives what a full match of the grammar's ``expr_items``
    gives (None where it does not match), or defers to it."""
    g = load_grammar(grammar_id)
    finder, openers, _quotes = structure_finder(g)
    found = split_list(text, 0, len(text), finder, openers)
    if found is FALLBACK:
        return
    m = g.fragments["expr_items"].fullmatch(text)
    assert found == (m.spans("item") if m is not None else None), text


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=200, deadline=None)
@given(text=st.text(st.sampled_from(list("()[]{}a, =.")), max_size=30))
def test_counted_lists_agree_with_the_grammars_expr_items_pattern(grammar_id, text):
    """Tuple targets and values (`a, b = x, y`) are split by counting where the text holds
    no quote or line break: the same spans as ``expr_items``, the same failures."""
    _list_agrees(grammar_id, text)


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_NESTED, max_size=5), seps=st.lists(_SEP, min_size=5, max_size=5))
def test_counted_lists_agree_with_the_grammars_expr_items_pattern_on_nested_brackets(grammar_id, parts, seps):
    text = "".join(p + s for p, s in zip(parts, seps))
    _list_agrees(grammar_id, text)
    g = load_grammar(grammar_id)
    finder, openers, _quotes = structure_finder(g)
    assert split_list(text, 0, len(text), finder, openers) is not FALLBACK  # brackets nest: counted


def test_split_list_on_printed_targets():
    g = load_grammar("torchscript-v2")
    finder, openers, _quotes = structure_finder(g)
    text = "_0, _1, = torch.split(x, [1, 2])"
    assert split_list(text, 0, 7, finder, openers) == [(0, 2), (4, 6)]
    assert split_list(text, 10, len(text), finder, openers) == [(10, len(text))]
    assert split_list("a,, b", 0, 5, finder, openers) is None
    assert split_list("a, (b]", 0, 6, finder, openers) is FALLBACK


_RECEIVER_INSIDE = st.text(st.sampled_from(list("()[]{}ab, .\"'\n")), max_size=14)


def _receiver(grammar_id: str, text: str):
    """The scan's receiver finder over ``text`` (a whole text, read to its end)."""
    from codeparse.infer.semantics import shared_semantics
    from codeparse.parse.source import SourceText
    from codeparse.text.extract import Extractor

    return Extractor(SourceText(text, "-"), load_grammar(grammar_id), shared_semantics(), None)._receiver_finder(len(text))


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=300, deadline=None)
@given(inside=_RECEIVER_INSIDE, after=st.sampled_from([").m(", ").m", ").(", ") .m(", ").m_1(x)", ")", "", ").m(("]))
def test_counted_receiver_agrees_with_the_grammars_receiver_pattern(grammar_id, inside, after):
    """The scan finds a method call's receiver by counting where the parenthesis closes on
    its line with no quote or separator inside: the same spans as ``[scan].receiver``, the
    same failures, whatever the text."""
    text = "y = (" + inside + after + "\n"
    m = load_grammar(grammar_id).scan["receiver"].match(text, 4, len(text))
    assert _receiver(grammar_id, text)(4) == (None if m is None else (*m.span("receiver"), *m.span("method")))


def test_counted_receiver_on_printed_method_calls():
    text = 'x = (self.layers[0]).forward((torch.cat([a, b], 1)).view(-1), "s")\n'
    receiver = _receiver("torchscript-v2", text)
    rs, re_, ms, me = receiver(text.index("("))
    assert (text[rs:re_], text[ms:me]) == ("self.layers[0]", "forward")
    rs, re_, ms, me = receiver(text.index("(torch"))
    assert (text[rs:re_], text[ms:me]) == ("torch.cat([a, b], 1)", "view")  # a separator inside: `receiver` reads it
    assert receiver(text.index("(-1")) is None

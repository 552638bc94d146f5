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


def _full(node) -> tuple:
    """A tree as nested tuples: every field of every node, spans included."""
    kind = type(node).__name__
    if kind == "Name":
        return (kind, node.id, node.start, node.end)
    if kind == "Const":
        return (kind, node.kind, node.text, node.start, node.end)
    if kind == "Opaque":
        return (kind, node.reason, node.start, node.end)
    if kind == "Attr":
        return (kind, _full(node.value), node.attr, node.start, node.end)
    if kind == "CallExpr":
        return (kind, _full(node.func), [_full(a) for a in node.args],
                [(k, _full(v)) for k, v in node.keywords], node.start, node.end)
    if kind == "Index":
        return (kind, _full(node.value), [_full(a) for a in node.items], node.start, node.end)
    assert kind == "Seq", kind
    return (kind, node.kind, [_full(a) for a in node.items], node.start, node.end)


def _reads_agree(text: str, grammar, spans) -> None:
    """The reader (tokens first) gives, span by span, the tree and depth diagnostic that the
    ``atom``/``trailer``/``items`` matches alone give."""
    fast, general = ExpressionReader(text, grammar), ExpressionReader(text, grammar)
    general._tokens = general._flat_call = None
    for start, end in spans:
        assert _full(fast.read(start, end)) == _full(general.read(start, end)), text[start:end]
    assert fast.too_deep == general.too_deep


# Pieces of printed expressions, and of what is not one: names, keywords (with and without
# spaces), numbers (`.5`, `1e-05`, `-inf`, `1.+2.j`), strings (adjacent, escaped, holding
# brackets), brackets, separators, spaces, line breaks, operators the printer never writes.
_PIECES = st.sampled_from([
    "x", "self.a", "torch.add", "_1", "inf", "a.b.c", "dim=", "k = ", "1", "-2.5", ".5", "1e-05", "-inf",
    "1.+2.j", "0x", '"s"', "'t'", '"a" "b"', '"(,"', '"x\\"]"', '"', "(", ")", "[", "]", "{", "}", ", ", ",",
    " ", ".b", ".5", ":", ": ", "\n", "==", "+", "-", ".", "=",
])


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=24), cut=st.integers(0, 3))
def test_token_reads_agree_with_the_matches_on_random_text(grammar_id, pieces, cut):
    """Any text, well-formed or not: the token read gives the matches' tree or leaves the
    text to them."""
    text = "".join(pieces)
    _reads_agree(text, load_grammar(grammar_id), [(0, len(text)), (min(cut, len(text)), len(text))])


_OPERAND = st.sampled_from(["x", "self.w", "_2", "1", "-1.5", "inf", '"a"', "'b'", '"(]"', '"p" "q"', "None"])


def _expressions(inner):
    """Calls (positional, keyword, trailing comma), indexes, attributes after brackets,
    parentheses, tuples, lists and dicts of ``inner``."""
    items = st.lists(st.tuples(st.sampled_from(["", "", "dim=", "k = "]), inner), max_size=4)
    trailing = st.sampled_from(["", "", ", ", ","])

    def join(pairs, tail, keywords=True):
        return ", ".join((k if keywords else "") + v for k, v in pairs) + (tail if pairs else "")

    return st.one_of(
        st.builds(lambda f, a, t: f + "(" + join(a, t) + ")", st.sampled_from(["f", "torch.add", "(x).m"]), items, trailing),
        st.builds(lambda v, a: v + "[" + join(a, "", False) + "]", inner, items),
        st.builds(lambda v, attr: "(" + v + ")" + attr, inner, st.sampled_from(["", ".y", ".forward", ".a.b"])),
        st.builds(lambda o, c, a, t: o + join(a, t, False) + c, st.sampled_from(["(", "[", "{"]),
                  st.sampled_from([")", "]", "}"]), items, trailing),
    )


_EXPRESSIONS = st.recursive(_OPERAND, _expressions, max_leaves=16)


@pytest.mark.parametrize("grammar_id", grammar_ids())
@settings(max_examples=300, deadline=None)
@given(text=_EXPRESSIONS, at=st.integers(0, 200), piece=_PIECES, action=st.sampled_from(["keep", "insert", "delete"]))
def test_token_reads_agree_with_the_matches_on_expressions(grammar_id, text, at, piece, action):
    """Printed expressions nested at random, kept or broken by one insertion or deletion
    (closers that are not the opener's included)."""
    at = at % (len(text) + 1)
    if action == "insert":
        text = text[:at] + piece + text[at:]
    elif action == "delete":
        text = text[:at] + text[at + len(piece):]
    _reads_agree(text, load_grammar(grammar_id), [(0, len(text))])


def test_token_reads_agree_with_the_matches_past_the_depth_limit():
    """Nesting to the depth limit and past it: the same trees, and the same offset where
    the limit was hit (CP106)."""
    g = load_grammar("torchscript-v2")
    limit = int(g.limits["max_expression_depth"])
    for depth in (limit - 1, limit, limit + 1, limit + 5):
        for opener, closer in (("f(", ")"), ("[", "]"), ("(", ")")):
            text = opener * depth + "x" + closer * depth
            _reads_agree(text, g, [(0, len(text))])


def test_token_reads_agree_with_the_matches_on_every_read_of_the_fixtures(monkeypatch):
    """Every expression parsing the fixture texts reads (conditions, definitions, receivers,
    mutated arguments), in every grammar."""
    from pathlib import Path

    from codeparse import parse_text

    root = Path(__file__).resolve().parent.parent / "fixtures"
    texts = sorted(p.read_text(encoding="utf-8") for p in (root / "text").glob("*/*.code"))
    texts += sorted(p.read_text(encoding="utf-8") for p in (root / "archive_code").glob("*.script/__torch__.py"))
    reads: dict[str, list[tuple[int, int]]] = {}
    read = ExpressionReader.read

    def spy(self, start, end):
        reads.setdefault(self.text, []).append((start, end))
        return read(self, start, end)

    monkeypatch.setattr(ExpressionReader, "read", spy)
    for text in texts:
        parse_text(text, as_dict=True)
    monkeypatch.undo()
    assert sum(map(len, reads.values())) > 5000
    for grammar_id in grammar_ids():
        g = load_grammar(grammar_id)
        for text, spans in reads.items():
            _reads_agree(text, g, spans)


@pytest.mark.parametrize("text", [
    "(x, )", "(x,)", "()", "(x)", "((x))", "((x), )", "f(a, )", "f(a=1, b)", "f(a, b=(c, ))", "f(dim=-1, )",
    "x[0][1].y(z)", "(_1).forward(x, )", "(x).a.b[0]", "{}", "{a}", "{a, }", '{"a": 1}', "[]", "[a, [b, ()]]",
    'getattr(self, "a,(b")', '"a" "b"', '"a"(b)', "f()()", "f(x)[0](y)", "1.+2.j", "-inf", "inf(x)",
    "f(a==b)", "f(a.b=1)", "f(a=b=c)", "x[k=1]", "(k=1)", "f(k=)", "f( x)", "f(x )", "f(x ,y)", "(a]", "f(a]",
    "g(f(a], b)", "x.5", "x .y", "1.real", "f(x))", "f(x", "x)", "x{}", "f(a, , b)", "f(, )", "-x", "a b",
    "(g).more(n, ), x12", "f(\n  x)", "f(x,\n y)", "",
    "f(a=1)", "f(a=b, c)", "torch.add(x, 1, alpha=2)", "(x).a.b(1)", "f(1 )", "f(x,)", "f(x,  )", "f(\"a\" \"b\", 'c')",
    "f(-inf, .5, 1e-05, 1.+2.j)", "f(a.b.c, d)", "f(a = 1)", "f(a=1, b=c.d, )", "(x)(y)", "(x).f", "((x)).f(y)",
    "f(x)(y)", "f.g(h)", "(x, y).f(z)", "f(1a)", "f(a1)", 'f(1"s")', 'f(a, 1"s")', 'f(a, b, c, 1"s")', "f(a, b, c, d=1, e)",
    "f(a, b, c, d, )", "f(a,b,c,d,e,f)", "f(a, b, c, d, e, ,)", "(r).m(a, b, k=1, c, d)", "f(x, inf, nan, -nan)",
])
def test_token_reads_agree_with_the_matches_on_printed_and_broken_forms(text):
    """Trailing commas, parentheses that make no tuple, keywords, closers that are not the
    opener's, text the matches leave unread, line breaks: the same trees in every grammar."""
    for grammar_id in grammar_ids():
        _reads_agree(text, load_grammar(grammar_id), [(0, len(text))])


def _module_name_part_by_part(path, root="__torch__"):
    """``module_name_for`` as it read the path before: every part in turn."""
    if not path or path == "-" or root not in path:
        return None
    parts = [p for p in path.replace("\\", "/").split("!", 1)[-1].split("/") if p and p != "."]
    for i, part in enumerate(parts):
        if part == root and i < len(parts) - 1:
            rest = list(parts[i + 1:])
            rest[-1] = rest[-1].rsplit(".", 1)[0]
            return ".".join([root, *rest])
        if i == len(parts) - 1 and part.rsplit(".", 1)[0] == root:
            return root
    return None


_PATH_PART = st.sampled_from(["__torch__", "torch", "nn", "conv.py", "__torch__.py", "x.y", ".", "", "..", "a!b",
                              "code", "__torch__.code", "m\\n"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(_PATH_PART, max_size=8), st.sampled_from(["/", "\\", "!"]), st.sampled_from(
    ["__torch__", "torch", "x.y", "", "."]))
def test_module_name_for_reads_a_path_as_reading_it_part_by_part_does(parts, sep, root):
    """The module name of a path (the parts after the first ``root`` part, or ``root`` for a
    last part named so) is what reading every part in turn gives, on paths of any shape."""
    from codeparse.text.reader import module_name_for

    path = sep.join(parts)
    assert module_name_for(path, root) == _module_name_part_by_part(path, root)
    assert module_name_for(path) == _module_name_part_by_part(path)


def test_module_name_for_every_fixture_path():
    from pathlib import Path

    from codeparse.text.reader import module_name_for

    root = Path(__file__).resolve().parent.parent / "fixtures"
    paths = [str(p) for p in root.rglob("*.py")] + [str(p.relative_to(root)) for p in root.rglob("*.py")]
    named = [module_name_for(p) for p in paths]
    assert named == [_module_name_part_by_part(p) for p in paths]
    assert sum(n is not None and n.startswith("__torch__.") for n in named) > 500

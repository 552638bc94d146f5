"""Property-based: mutated real fixture text never makes an exception escape."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pydantic import BaseModel

from codeparse import CodeFile, Span, parse_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCES = sorted(
    [p.read_text(encoding="utf-8") for p in (FIXTURES / "text").glob("*/*.code")]
    + [p.read_text(encoding="utf-8") for p in (FIXTURES / "archive_code").glob("*.script/__torch__.py")]
)
# Characters that matter to the grammar, plus some that never appear in printed code.
ALPHABET = st.sampled_from(list('()[]{}.,:="\'\\ \n\t#-_0123456789aezTx') + ["\u00e9", "\u2028", "\x7f"])


@st.composite
def mutated(draw) -> str:
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 6))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        action = draw(st.sampled_from(["delete", "insert", "replace", "duplicate_line", "drop_line", "indent"]))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)):]
        elif action == "insert":
            text = text[:at] + draw(st.text(ALPHABET, min_size=1, max_size=8)) + text[at:]
        elif action == "replace":
            text = text[:at] + draw(ALPHABET) + text[at + 1:]
        else:
            lines = text.splitlines(keepends=True)
            i = at % len(lines)
            if action == "duplicate_line":
                lines.insert(i, lines[i])
            elif action == "drop_line":
                del lines[i]
            else:
                lines[i] = "  " + lines[i]
            text = "".join(lines)
    return text


def spans(model):
    """Every Span inside a model, recursively."""
    if isinstance(model, list):
        for item in model:
            yield from spans(item)
        return
    if not isinstance(model, BaseModel):
        return
    if isinstance(model, Span):
        yield model
        return
    for name in type(model).model_fields:
        yield from spans(getattr(model, name))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_text_never_raises_and_spans_stay_in_bounds(text):
    cf = parse_text(text, "mutated.code")
    assert isinstance(cf, CodeFile)
    for span in spans(cf):
        assert 0 <= span.start <= span.end <= len(text)
    # The result is valid against the public contract, through JSON and back.
    assert CodeFile.model_validate_json(cf.model_dump_json()) == cf


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from(list("()[]{}a, \n")), max_size=40), st.integers(0, 39))
def test_bracket_counting_agrees_with_the_grammars_balanced_on_text_without_quotes(text, at):
    """Text without quotes has its brackets matched by counting (parser.bracket_end, the
    fast path of call extents); it must give the grammar's `balanced` answer."""
    from codeparse.grammar.engine import load_grammar
    from codeparse.parse.statements import bracket_end, bracket_finder

    g = load_grammar("torchscript-v2")
    opens = [i for i, ch in enumerate(text) if ch in "([{"]
    if not opens:
        return
    pos = opens[at % len(opens)]
    m = g.scan["balanced"].match(text, pos, len(text))
    assert bracket_end(text, pos, len(text), dict(g.bracket_pairs), bracket_finder(g)) == (m.end() if m else None)


@settings(max_examples=600, deadline=None)
@given(st.text(st.sampled_from(list("()[]{}a.m, \n\"'")), max_size=40), st.integers(0, 39),
       st.sampled_from(["torchscript-v2", "torchscript-v1.3", "torchscript-v1.0"]))
def test_the_scans_receivers_and_shallow_groups_agree_with_the_recursive_patterns(text, at, grammar_id):
    """The scan reads a receiver `(recv).m(` with `recv` (in `re`, brackets on one line
    nested three deep) where `receiver` (`regex`, recursive) reads one, and sends every
    other parenthesis where `receiver` may read one to `paren`; `balanced_line` reads the
    group `balanced` reads wherever it matches."""
    from codeparse.grammar.engine import load_grammar

    g = load_grammar(grammar_id)
    opens = [i for i, ch in enumerate(text) if ch in "([{"]
    if not opens:
        return
    pos = opens[at % len(opens)]
    shallow = g.scan["balanced_line"].match(text, pos, len(text))
    if shallow is not None:
        assert shallow.span() == g.scan["balanced"].match(text, pos, len(text)).span()
    if text[pos] != "(" or text.startswith("(", pos + 1):  # a receiver never starts with `(`
        return
    found = next((m for m in g.scan["references"].finditer(text, pos, len(text)) if m.start() == pos), None)
    group = found.lastgroup if found is not None else None
    r = g.scan["receiver"].match(text, pos, len(text))
    if group == "recv":
        assert r is not None
        assert (found.span("receiver"), found.span("method")) == (r.span("receiver"), r.span("method"))
    elif group != "paren":
        assert r is None


@settings(max_examples=600, deadline=None)
@given(st.text(st.sampled_from(list("()[]{}a.m, \n\"'")), max_size=40),
       st.sampled_from(["torchscript-v2", "torchscript-v1.3", "torchscript-v1.0"]))
def test_the_scans_call_extents_agree_with_balanced_and_with_counting(text, grammar_id):
    """Where the scan's `call` (a call's parenthesis) or `method_call` (a receiver's method's)
    reads a call to its closer, that closer is the one `balanced` (`regex`, recursive) finds
    on the call's line, and the one bracket counting finds where no quote follows the
    parenthesis on its line (the two answers call extents took before)."""
    from codeparse.grammar.engine import load_grammar
    from codeparse.parse.statements import bracket_end, bracket_finder

    g = load_grammar(grammar_id)
    for m in g.scan["references"].finditer(text):
        for group in ("call", "method_call"):
            at, close = m.span(group)
            if at < 0:
                continue
            stop = text.find("\n", at)
            stop = len(text) if stop < 0 else stop
            assert close <= stop
            assert g.scan["balanced"].match(text, at, stop).end() == close
            if all(text.find(q, at, stop) < 0 for q in "\"'"):
                assert bracket_end(text, at, stop, dict(g.bracket_pairs), bracket_finder(g)) == close


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from(list("(([[a\n]")), max_size=60), st.integers(0, 6), st.integers(0, 60),
       st.integers(0, 60))
def test_the_first_crowded_line_is_the_first_line_holding_more_openers_than_the_limit(text, limit, at, to):
    """The scan leaves out lines nested past the expression limit; only a line holding more
    openers than the limit can be one.  `_first_crowded` (counts over halved stretches)
    names the first such line of a stretch, as a count line by line does."""
    from codeparse.text.extract import _first_crowded

    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    start = starts[at % len(starts)]
    end = start + to % (len(text) - start + 1)
    expected = None
    for line_start in starts:
        if start <= line_start < end:
            line_end = text.find("\n", line_start, end)
            line_end = end if line_end < 0 else line_end
            if text.count("(", line_start, line_end) + text.count("[", line_start, line_end) > limit:
                expected = line_start
                break
    assert _first_crowded(text, start, end, limit) == expected


def _references(pattern, text: str, start: int, end: int) -> list[tuple]:
    """The references a scan pattern finds in ``text[start:end]``: the group that closed
    last and the span of every group (strings, `skip` and `end` left out: the scan skips
    them), without the whole match's span (`references_run` passes text over inside it)."""
    names = {number: name for name, number in pattern.groupindex.items()}
    found = []
    for m in pattern.finditer(text, start, end):
        if names[m.lastindex] in ("string", "skip", "end"):
            continue
        found.append((names[m.lastindex], tuple(m.span(name) for name in sorted(pattern.groupindex)
                                                if name not in ("string", "skip", "end"))))
    return found


def _run_agrees(text: str, start: int, end: int) -> None:
    from codeparse.grammar.engine import load_grammar

    for grammar_id in ("torchscript-v2", "torchscript-v1.3", "torchscript-v1.0"):
        scan = load_grammar(grammar_id).scan
        assert _references(scan["references_run"], text, start, end) == \
            _references(scan["references"], text, start, end)
        # The scan stops at the first `end` (Extractor._scan): only `end` follows it.
        run = scan["references_run"]
        names = {number: name for name, number in run.groupindex.items()}
        closed = [names[m.lastindex] for m in run.finditer(text, start, end)]
        assert "end" in closed and set(closed[closed.index("end"):]) == {"end"}


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(list("()[]{}ab_1.m, \n\"'\\") + ["getattr(", "getattr(a, \"b\")", ").m(", "x.y"]),
                max_size=40).map("".join), st.integers(0, 80), st.integers(0, 80))
@example('.getattr(a, "b") 1getattr(a, "b")', 0, 99)  # `getattr(` where no call starts
@example("x.(a).m(b) ().m(c) ((d)).m(e) (f, g).m(h)", 0, 99)  # parentheses that start no receiver
@example('x = "(a).m(" + b_1.c(d)\n  e', 0, 99)
def test_the_scans_run_pattern_finds_what_references_finds_on_random_text(text, at, to):
    """`[scan].references_run` passes the text between references over inside its match;
    it finds the same references, with the same groups, as `references` (which starts a
    match at every character), in every grammar, from any start to any end."""
    start = at % (len(text) + 1)
    _run_agrees(text, start, min(len(text), max(start, to)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_the_scans_run_pattern_finds_what_references_finds_on_mutated_fixtures(text):
    _run_agrees(text, 0, len(text))


def test_the_scans_run_pattern_finds_what_references_finds_on_every_fixture_text():
    for text in SOURCES:
        _run_agrees(text, 0, len(text))


def _shape(node) -> tuple:
    """A tree as nested tuples: node type, spans and fields."""
    from codeparse.parse.expressions import Attr, Name

    if isinstance(node, Name):
        return ("Name", node.id, node.start, node.end)
    if isinstance(node, Attr):
        return ("Attr", _shape(node.value), node.attr, node.start, node.end)
    return (type(node).__name__, node.start, node.end)


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from(list("ab_1. ")), max_size=16), st.integers(0, 4),
       st.sampled_from(["torchscript-v2", "torchscript-v1.3", "torchscript-v1.0"]))
def test_a_dotted_name_reads_as_its_atom_and_trailers_read_it(body, pad, grammar_id):
    """The expression reader splits a name or dotted name (the `dotted` fragment) at its
    dots; the tree is the one the `atom` and `trailer` matches build."""
    from codeparse.grammar.engine import load_grammar
    from codeparse.parse.expressions import ExpressionReader

    g = load_grammar(grammar_id)
    text = " " * pad + body + " x"
    fast, general = ExpressionReader(text, g), ExpressionReader(text, g)
    general._dotted = general._tokens = general._flat_call = None  # the matches, part by part
    assert _shape(fast.read(pad, pad + len(body))) == _shape(general.read(pad, pad + len(body)))


def _statement_lines() -> list[str]:
    """Signatures (over several lines as printed) and declarations of the fixture texts."""
    import re

    found = set()
    for text in SOURCES:
        for m in re.finditer(r"(?m)^ *(def [^\n]*(?:\n    [^\n]*)*?:|[A-Za-z_]\w* ?: [^\n]*)$", text):
            found.add(m.group(1))
    return sorted(found)


STATEMENTS = _statement_lines()


@st.composite
def mutated_statement(draw) -> str:
    text = draw(st.sampled_from(STATEMENTS))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "replace"]))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 6)):]
        elif action == "insert":
            text = text[:at] + draw(st.text(st.sampled_from(list("()[]{},:= \nxT1.\"'")), min_size=1, max_size=6)) + text[at:]
        else:
            text = text[:at] + draw(st.sampled_from(list("()[]{},:= xT\"'"))) + text[at + 1:]
    return text


@settings(max_examples=500, deadline=None)
@given(mutated_statement())
def test_unrolled_rules_match_as_the_recursive_ones_on_mutated_statements(text):
    """Where the parser uses a rule's `re` form (no quote, brackets nested at most 3 deep; or
    on one line, strings read whole and the brackets outside them nested as shallow:
    `[lines].nested_strings`), it matches as the rule's `regex` pattern does on real
    statements with brackets, separators, quotes and line breaks inserted, deleted or
    replaced: where, how far, every group, every parameter."""
    from codeparse.grammar.engine import load_grammar
    from codeparse.parse.statements import RepeatedMatch, nesting

    g = load_grammar("torchscript-v2")
    simple = nesting(g)(text, 0, len(text)).end() == len(text) and '"' not in text and "'" not in text
    if not simple and ("\n" in text or g.lines["nested_strings"].match(text).end() != len(text)):
        return
    for rule in g.statements:
        if rule.plain is None:
            continue
        want, got = rule.pattern.match(text), rule.plain.match(text)
        assert (got is None) == (want is None), (rule.name, text)
        if want is None:
            continue
        if rule.repeat:
            got = RepeatedMatch(got, rule.repeat, len(text))
            for name in rule.repeat:
                assert got.spans(name) == want.spans(name), (rule.name, text)
        names = [n for n in rule.group_names() if n not in g.raw["recursive"]]
        assert got.span() == want.span(), (rule.name, text)
        assert [got.span(n) for n in names] == [want.span(n) for n in names], (rule.name, text)

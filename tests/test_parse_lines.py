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


# Characters that change how lines are classified: brackets, quotes, blocks, keywords' edges.
EDIT_ALPHABET = st.sampled_from(list("()[]{}\"':=,.#\\ \n\t_x0") + ["    ", "\n    ", "else:", "if x:", "elif y:",
                                                                      "def f(", "):", "return ", " = ", "class A:"])


@st.composite
def _edited(draw) -> str:
    """A fixture text with a few random edits (brackets, quotes, indentation, keywords)."""
    text = draw(st.sampled_from(_SMALL_TEXTS))
    for _ in range(draw(st.integers(1, 6))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        action = draw(st.sampled_from(["delete", "insert", "copy", "cut"]))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 12)):]
        elif action == "insert":
            text = text[:at] + draw(EDIT_ALPHABET) + text[at:]
        elif action == "copy":
            source = draw(st.integers(0, len(text) - 1))
            text = text[:at] + text[source:source + draw(st.integers(1, 80))] + text[at:]
        else:
            text = text[:at]
    return text


_SMALL_TEXTS = sorted(p.read_text(encoding="utf-8") for p in FIXTURES.glob("text/*/*.code")
                      if p.stat().st_size < 6_000)


def _found_inline(plan: tuple, text: str, pos: int, endpos: int):
    """`Master.find` as the parser does it inline from `Master.alternations()`."""
    own, own_at, generic, generic_at, generic_first = plan
    index = m = None
    if own is not None:
        m = own(text, pos, endpos)
        if m is not None:
            index = own_at[m.lastindex]
    if generic is not None and (index is None or index > generic_first):
        other = generic(text, pos, endpos)
        if other is not None and (index is None or generic_at[other.lastindex] < index):
            index, m = generic_at[other.lastindex], other
    return None if index is None else (index, m.span(), m.lastindex)


def _found(master, text: str, pos: int, endpos: int):
    found = master.find(text, pos, endpos)
    return None if found is None else (found[0], found[1].span(), found[1].lastindex)


def _lines_of(text: str, grammar_id: str) -> list[tuple[int, int, str]]:
    return [(m.end(1), m.end(), m.group(2)) for m in parser._Reading(load_grammar(grammar_id)).head(text)]


def _check_alternations(text: str, grammar_id: str) -> int:
    grammar = load_grammar(grammar_id)
    checked = 0
    for start, end, word in _lines_of(text, grammar_id):
        masters = {grammar.master(word), grammar.master(None)}
        for master in masters:
            plan = master.alternations()
            # to each line's end and (as for a statement over several lines) to the text's
            for stop in (end, len(text)):
                assert _found_inline(plan, text, start, stop) == _found(master, text, start, stop), (text[start:end], stop)
                checked += 1
    return checked


@pytest.mark.parametrize("grammar_id", GRAMMARS)
def test_master_alternations_find_what_find_finds_on_every_fixture_line(grammar_id):
    """The parser's inline `Master.find` (from `Master.alternations()`) names the same rule
    and match as `find` on every line of every fixture text, for the line's first word's
    master and the generic one."""
    paths = [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py")]
    checked = sum(_check_alternations(p.read_text(encoding="utf-8"), grammar_id) for p in paths[::7])
    assert checked > 5_000


@settings(max_examples=150, deadline=None)
@given(_edited(), st.sampled_from(GRAMMARS))
def test_master_alternations_find_what_find_finds_on_edited_text(text, grammar_id):
    _check_alternations(text, grammar_id)


def _block_end(stmt) -> int:
    """The end of the last statement inside ``stmt``'s block and else chain (or its own)."""
    end = stmt.end
    for inner in stmt.body:
        end = max(end, _block_end(inner))
    if stmt.else_stmt is not None:
        end = max(end, _block_end(stmt.else_stmt))
    return end


def _check_block_ends(stmts) -> int:
    checked = 0
    for stmt in stmts:
        assert stmt.block_end == _block_end(stmt), stmt
        checked += 1 + _check_block_ends(stmt.body)
        if stmt.else_stmt is not None:
            checked += _check_block_ends([stmt.else_stmt])
    return checked


@settings(max_examples=200, deadline=None)
@given(_edited(), st.sampled_from(GRAMMARS))
def test_block_end_is_the_end_of_the_last_statement_inside(text, grammar_id):
    """`block_end` (set at once, extended by the else linking, whose list end is its last
    statement's) is the end of the last statement inside the block and its else chain,
    on texts with broken blocks, dangling elses and statements over several lines."""
    _check_block_ends(parser.parse_statements(SourceText(text, "t"), load_grammar(grammar_id)).body)


def test_block_end_on_every_fixture_text():
    g = load_grammar("torchscript-v2")
    checked = sum(_check_block_ends(parser.parse_statements(SourceText(p.read_text(encoding="utf-8"), "t"), g).body)
                  for p in FIXTURES.glob("text/*/*.code"))
    assert checked > 8_000


def _link_else_after(stmts, found: list) -> int:
    """The else linking as a pass over the finished tree (what the parser did before it
    linked each `else:`/`elif` as it read it): attach each to the `if` before it in its
    list, removing it from the list, extend `block_end` of each statement with a block (and
    of the if/elif chain an else extends) to its last statement's; a dangling one stays
    and is noted in ``found`` (CP108), its block before it."""
    chain = None
    members: list = []
    attached = set()
    for stmt in stmts:
        if stmt.body:
            inner = _link_else_after(stmt.body, found)
            if inner > stmt.block_end:
                stmt.block_end = inner
        kind = stmt.kind
        if kind == "else" or kind == "elif":
            if chain is None or chain.orelse is not None:
                if not stmt.after_unparsed:
                    found.append((stmt.start, stmt.end, stmt.rule.name))
                chain = None
                continue
            chain.orelse = stmt.body if kind == "else" else [stmt]
            chain.else_stmt = stmt
            chain = None if kind == "else" else stmt
            for member in members:
                member.block_end = max(member.block_end, stmt.block_end)
            members.append(stmt)
            attached.add(id(stmt))
        elif kind == "if":
            chain, members = stmt, [stmt]
        else:
            chain = None
    last = stmts[-1].block_end if stmts else -1
    stmts[:] = [stmt for stmt in stmts if id(stmt) not in attached]
    return last


def _unlinked(stmts) -> None:
    """Undo the else linking: each chain's else/elif statements back in the list after their
    `if`, no `orelse`, `block_end` back to each statement's end."""
    out = []
    for stmt in stmts:
        member = stmt
        while member is not None:
            out.append(member)
            if member.body:
                _unlinked(member.body)
            member.block_end = member.end
            member.orelse, member.else_stmt, member = None, None, member.else_stmt
    stmts[:] = out


def _check_linking(text: str, grammar) -> None:
    linked = parser.parse_statements(SourceText(text, "t"), grammar)
    again = parser.parse_statements(SourceText(text, "t"), grammar)
    _unlinked(again.body)
    found: list = []
    _link_else_after(again.body, found)
    assert _tree(linked.body) == _tree(again.body)
    assert [(d["span"]["start"], d["span"]["end"], d["args"]["statement"]) for d in linked.diagnostics
            if d["code"] == "CP108"] == found
    assert [d for d in linked.diagnostics if d["code"] != "CP108"] == [d for d in again.diagnostics
                                                                       if d["code"] != "CP108"]
    assert all(d["code"] == "CP108" for d in linked.diagnostics[len(linked.diagnostics) - len(found):])


@settings(max_examples=300, deadline=None)
@given(_edited(), st.sampled_from(GRAMMARS))
def test_else_linked_as_read_as_by_a_pass_after(text, grammar_id):
    """The parser links each `else:`/`elif` to its `if` as it reads it (and extends block
    ends as blocks close): the same trees, block ends and CP108 diagnostics (last, in the
    order the blocks end) as a linking pass over the finished tree, on texts with broken
    blocks, dangling and repeated elses."""
    _check_linking(text, load_grammar(grammar_id))


@pytest.mark.parametrize("grammar_id", GRAMMARS)
def test_else_linked_as_read_on_every_fixture_text(grammar_id):
    grammar = load_grammar(grammar_id)
    texts = [p.read_text(encoding="utf-8") for p in FIXTURES.glob("text/*/*.code")]
    for text in texts:
        _check_linking(text, grammar)
    _check_linking("if a:\n  x = 1\nelif b:\n  y = 2\nelse:\n  z = 3\nelse:\n  q = 1\nelif c:\n"
                   "  if d:\n    pass\n  else:\n    pass\n  else:\n    pass\n", grammar)
    assert len(texts) > 300


def _paired_prefix(text: str, start: int, end: int, pairs: tuple, depth: int) -> int:
    """Where ``statements.nesting``'s match from ``start`` ends, by a stack: the last place
    (from ``start`` to ``end``) where every bracket before it paired up, nested at most
    ``depth`` deep, before the first bracket that breaks that."""
    closers = {o: c for o, c in pairs}
    stack: list[str] = []
    last = start
    for i in range(start, end):
        ch = text[i]
        if ch in closers:
            if len(stack) == depth:
                break
            stack.append(closers[ch])
        elif ch in closers.values():
            if not stack or stack.pop() != ch:
                break
        if not stack:
            last = i + 1
    return last


NEST_ALPHABET = st.sampled_from(list("()[]{}\"' \nx,"))


@settings(max_examples=600, deadline=None)
@given(st.text(NEST_ALPHABET, max_size=40), st.sampled_from(GRAMMARS))
def test_nesting_ends_where_brackets_stop_pairing_up(text, grammar_id):
    """`nesting` (runs of other characters between pairs) ends where a bracket stack says."""
    g = load_grammar(grammar_id)
    assert parser.nesting(g)(text, 0, len(text)).end() == _paired_prefix(text, 0, len(text), g.bracket_pairs,
                                                                        parser._NEST_DEPTH)


def _nested_strings_as_choices(grammar_id: str):
    """`[lines].nested_strings` written as a repeated choice (other characters, a string, a
    bracketed stretch), as it was before its runs form."""
    from codeparse.grammar.engine import _Compiler
    import re

    g = load_grammar(grammar_id)
    comp = _Compiler(g.path, g.raw["patterns"], g.raw.get("recursive", {}))
    return re.compile(comp.expand('''(?:[^()\\[\\]{}"'\\n]++|{STRING}|(?:{LINE_BRACKETED_3}))*+''', "test")).match


@settings(max_examples=600, deadline=None)
@given(st.text(NEST_ALPHABET, max_size=40), st.sampled_from(GRAMMARS))
def test_nested_strings_runs_form_matches_as_the_choices_form(text, grammar_id):
    g = load_grammar(grammar_id)
    assert g.lines["nested_strings"].match(text).end() == _nested_strings_as_choices(grammar_id)(text).end()


def test_nested_strings_runs_form_on_every_fixture_line():
    g = load_grammar("torchscript-v2")
    new, old = g.lines["nested_strings"].match, _nested_strings_as_choices("torchscript-v2")
    checked = 0
    for path in FIXTURES.glob("text/*/*.code"):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert new(line).end() == old(line).end(), line
            checked += 1
    assert checked > 8_000


def _check_shortcuts(text: str, grammar_id: str) -> int:
    """Where a rule's shortcut matches a line, the rule's own pattern matches it too, with
    every group at the same place (bounded to the line's end and to the text's)."""
    grammar = load_grammar(grammar_id)
    rules = [rule for rule in grammar.statements if rule.shortcut is not None]
    checked = 0
    for start, end, _word in _lines_of(text, grammar_id):
        for rule in rules:
            for stop in (end, len(text)):
                short = rule.shortcut.match(text, start, stop)
                if short is None:
                    continue
                full = rule.pattern.match(text, start, stop)
                assert full is not None, (rule.name, text[start:end])
                assert short.span() == full.span(), (rule.name, text[start:end])
                for name in short.re.groupindex:
                    assert short.span(name) == full.span(name), (rule.name, name, text[start:end])
                checked += 1
    return checked


@pytest.mark.parametrize("grammar_id", GRAMMARS)
def test_shortcuts_match_as_their_rules_on_every_fixture_line(grammar_id):
    paths = [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py")]
    assert sum(_check_shortcuts(p.read_text(encoding="utf-8"), grammar_id) for p in paths[::3]) > 1_000


SHORTCUT_LINE = st.lists(st.sampled_from(["x", "_0", " ", ":", "=", "Final", "[", "]", "Tensor", ".", "int", ",",
                                          "__annotations__", '"a"', "(", ")", "Optional", "1", "#", "'"]),
                         max_size=14).map("".join)


@settings(max_examples=600, deadline=None)
@given(SHORTCUT_LINE, st.sampled_from(GRAMMARS))
def test_shortcuts_match_as_their_rules_on_random_lines(line, grammar_id):
    _check_shortcuts(line, grammar_id)


@settings(max_examples=100, deadline=None)
@given(_edited(), st.sampled_from(GRAMMARS))
def test_shortcuts_match_as_their_rules_on_edited_text(text, grammar_id):
    _check_shortcuts(text, grammar_id)


def test_a_shortcut_with_other_groups_is_a_grammar_error(tmp_path):
    source = (Path(__file__).resolve().parent.parent / "grammars" / "torchscript-v2.toml").read_text(encoding="utf-8")
    line = "shortcut = '(?P<name>{IDENT})[ ]*+:[ ]*+(?P<type>{TYPE_SHORT})'"
    assert source.count(line) == 1
    path = tmp_path / "torchscript-v2.toml"
    path.write_text(source.replace(line, "shortcut = '(?P<name>{IDENT})[ ]*+:[ ]*+{TYPE_SHORT}'"), encoding="utf-8")
    with pytest.raises(GrammarError, match="shortcut captures other groups"):
        load_grammar_file(path)


def _excess_by_counts(text: str, start: int, end: int, pairs) -> tuple[int, bool]:
    total, even = 0, True
    for o, c in pairs:
        d = text.count(o, start, end) - text.count(c, start, end)
        if d:
            total, even = total + d, False
    return total, even


@settings(max_examples=500, deadline=None)
@given(st.text(LINE_ALPHABET, max_size=80), st.integers(0, 80), st.integers(0, 80), st.sampled_from(GRAMMARS))
def test_excess_counts_brackets_as_counts_per_pair_do(text, a, b, grammar_id):
    """The bracket excess of a stretch (its brackets found in one pass) is what counting
    each pair's opener and closer gives: the total, and whether every pair evens out."""
    r = parser._Reading(load_grammar(grammar_id))
    assert r.bracket_signs is not None
    start, end = min(a, b), max(a, b)
    assert parser._excess(r, text, start, end) == _excess_by_counts(text, start, end, r.pairs)


def test_excess_on_every_fixture_line():
    r = parser._Reading(load_grammar("torchscript-v2"))
    checked = 0
    for path in [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py")][::2]:
        text = path.read_text(encoding="utf-8")
        for line in r.head(text):
            start, end = line.end(1), line.end()
            assert parser._excess(r, text, start, end) == _excess_by_counts(text, start, end, r.pairs)
            checked += 1
    assert checked > 10_000


def _logical_end_counted_twice(r, text: str, start: int, end: int, column: int, timeout: float) -> tuple[int, bool]:
    """The statement's end as the parser found it before it counted each pair once per
    line: extended line by line, and the whole statement counted again afterwards."""
    depth, even = parser._excess(r, text, start, end)
    if even:
        return end, True
    if depth <= 0 or (r.may_quote(text, start, end) and parser._balanced(r, text, start, end, timeout) is not None):
        return end, False
    size = len(text)
    while depth > 0 and end < size:
        nxt = r.physical(text, end + 1)
        if nxt.end(r.indent) - (end + 1) <= column:
            break
        line_start, end = end + 1, nxt.end(r.text)
        depth += parser._excess(r, text, line_start, end)[0]
    return end, parser._excess(r, text, start, end)[1]


def _check_logical_ends(r, text: str) -> int:
    checked = 0
    for line in r.head(text):
        start, end = line.end(1), line.end()
        column = start - line.start()
        got = parser._logical_end(r, text, start, end, column, 1.0)
        assert got == _logical_end_counted_twice(r, text, start, end, column, 1.0), (text, start)
        checked += 1
    return checked


@settings(max_examples=500, deadline=None)
@given(st.text(LINE_ALPHABET, max_size=120), st.sampled_from(GRAMMARS))
def test_logical_end_counts_each_line_once_as_counting_twice_does(text, grammar_id):
    """A statement over several lines is known even by count from its lines' counts, as a
    second count of the whole statement tells (the parser then skips that count)."""
    _check_logical_ends(parser._Reading(load_grammar(grammar_id)), text)


def test_logical_end_on_every_fixture_line():
    checked = 0
    for grammar_id in GRAMMARS:
        r = parser._Reading(load_grammar(grammar_id))
        for path in [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py")][::3]:
            checked += _check_logical_ends(r, path.read_text(encoding="utf-8"))
    assert checked > 30_000


def _expr_as_choices(grammar_id: str):
    """`EXPR` as it was before its prefixes were written as runs of characters: an operand
    a choice within the choice of operand or closer, `SEQ_PREFIX` and `FIRST_PREFIX` as
    repeated groups of an opening bracket and its spaces."""
    from codeparse.grammar.engine import _Compiler
    import re

    g = load_grammar(grammar_id)
    comp = _Compiler(g.path, g.raw["patterns"], g.raw.get("recursive", {}))
    operand_or_close = "(?:(?:{IDENT}|{NUMBER}|{STRING}(?:[ ]*+{STRING})*+)|{CLOSE})"
    seq_prefix = "(?:{OPEN}[ ]*+|{SEP})(?:{OPEN}[ ]*+)*+"
    first_prefix = "(?:(?:{OPEN}[ ]*+)++|(?!{CLOSE}))"
    old = (f"(?>{first_prefix}{operand_or_close}(?:\\.{{IDENT}}|{{CLOSE}}|(?:{seq_prefix}|(?::[ ]*+|=(?!=))"
           f"{first_prefix}){operand_or_close})*+)")
    return re.compile(comp.expand(old, "test")).match, re.compile(comp.expand("{EXPR}", "test")).match


EXPR_ALPHABET = st.sampled_from(list("()[]{} ,.:=\"'x_1-\\e\n") + ["ab", "1.5", "inf", " = ", "==", '"s"', "'t'"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(EXPR_ALPHABET, max_size=14).map("".join), st.sampled_from(GRAMMARS))
def test_expr_runs_form_matches_as_the_choices_form(text, grammar_id):
    old, new = _expr_as_choices(grammar_id)
    a, b = old(text), new(text)
    assert (a and a.span()) == (b and b.span())


@pytest.mark.parametrize("grammar_id", GRAMMARS)
def test_expr_runs_form_from_every_place_of_fixture_lines(grammar_id):
    old, new = _expr_as_choices(grammar_id)
    checked = 0
    for path in [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py")][::9]:
        for line in path.read_text(encoding="utf-8").splitlines():
            for at in range(len(line)):
                a, b = old(line, at), new(line, at)
                assert (a and a.span()) == (b and b.span()), (line, at)
                checked += 1
    assert checked > 50_000


def _targets_forms(grammar_id: str):
    """`TARGETS` and the form it shortens (`{EXPR}(?:,)?+`), each followed by what the
    rules put after it (a space and `in`/`as`/`=`, or the line's end), compiled."""
    from codeparse.grammar.engine import _Compiler
    import re

    g = load_grammar(grammar_id)
    comp = _Compiler(g.path, g.raw["patterns"], g.raw.get("recursive", {}))
    return [tuple(re.compile(comp.expand(f"(?P<t>{form}){after}", "test")).match
                  for form in ("{TARGETS}", "{EXPR}(?:,)?+"))
            for after in ("", "[ ]*+=(?!=)", "[ ]++in[ ]++", "[ ]*+$")]


@settings(max_examples=1500, deadline=None)
@given(st.lists(EXPR_ALPHABET, max_size=12).map("".join), st.sampled_from(GRAMMARS))
def test_targets_match_as_expr_with_its_comma(text, grammar_id):
    for new, old in _targets_forms(grammar_id):
        a, b = new(text), old(text)
        assert (a and (a.span(), a.span("t"))) == (b and (b.span(), b.span("t")))


@pytest.mark.parametrize("grammar_id", GRAMMARS)
def test_targets_match_as_expr_with_its_comma_on_fixture_lines(grammar_id):
    forms = _targets_forms(grammar_id)
    checked = 0
    for path in [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py")][::5]:
        for line in path.read_text(encoding="utf-8").splitlines():
            at = len(line) - len(line.lstrip(" "))
            for start in (at, line.find(" ", at) + 1):
                for new, old in forms:
                    a, b = new(line, start), old(line, start)
                    assert (a and (a.span(), a.span("t"))) == (b and (b.span(), b.span("t"))), line
                    checked += 1
    assert checked > 45_000  # lines of every fifth fixture file (the sample moves as fixtures are added)


def _check_spanning_ends(r, text: str) -> tuple[int, int]:
    """Where a statement continues past its first line and ``_spanning_end`` answers, its
    end is ``_logical_end``'s (known even), its text holds no quote character and its
    brackets nest as ``nesting`` reads them (what ``_exact`` would check)."""
    answered = asked = 0
    for line in r.head(text):
        start, end = line.end(1), line.end()
        if line.end(3) == end:  # the first line nests: the parser asks neither
            continue
        column = start - line.start()
        stop = parser._spanning_end(r, text, start, end, column)
        asked += parser._logical_end(r, text, start, end, column, 1.0)[0] > end  # over several lines
        if stop < 0:
            continue
        answered += 1
        assert (stop, True) == parser._logical_end(r, text, start, end, column, 1.0), (text, start)
        assert r.nested(text, start, stop).end() == stop and not r.may_quote(text, start, stop), (text, start)
    return answered, asked


@settings(max_examples=800, deadline=None)
@given(st.text(LINE_ALPHABET, max_size=120), st.sampled_from(GRAMMARS))
def test_spanning_end_is_the_logical_end_where_it_answers(text, grammar_id):
    _check_spanning_ends(parser._Reading(load_grammar(grammar_id)), text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["def f(", "a", ", ", ",\n", "\n", "    ", "  ", "(", ")", "[", "]", "{", "}", ":",
                                 " -> T", '"', "x: T", "\n  return x"]), max_size=16).map("".join),
       st.sampled_from(GRAMMARS))
def test_spanning_end_on_signature_like_text(text, grammar_id):
    _check_spanning_ends(parser._Reading(load_grammar(grammar_id)), text)


def test_spanning_end_on_every_fixture_line():
    answered = asked = 0
    for grammar_id in GRAMMARS:
        r = parser._Reading(load_grammar(grammar_id))
        for path in [*FIXTURES.glob("text/*/*.code"), *FIXTURES.glob("archive_code/**/*.py")]:
            a, b = _check_spanning_ends(r, path.read_text(encoding="utf-8"))
            answered, asked = answered + a, asked + b
    # It answers for most statements over several lines (signatures; not those with strings).
    assert answered > 3_000 and answered > 0.9 * asked


@pytest.mark.parametrize("grammar_id", GRAMMARS)
def test_attribute_shortcut_reads_bracketed_types_of_fixture_lines(grammar_id):
    """The attribute declarations with a bracketed type (`_is_full_backward_hook :
    Optional[bool]`, in most archived classes) are read by the shortcut (TYPE_SHORT), as
    their rule reads them (test_shortcuts_match_as_their_rules_on_every_fixture_line)."""
    rule = next(rule for rule in load_grammar(grammar_id).statements if rule.name == "attribute_decl")
    read = 0
    for path in FIXTURES.glob("archive_code/**/*.py"):
        text = path.read_text(encoding="utf-8")
        for start, end, _word in _lines_of(text, grammar_id):
            if "[" in text[start:end] and rule.pattern.fullmatch(text, start, end):
                read += rule.shortcut.fullmatch(text, start, end) is not None
    assert read > 500

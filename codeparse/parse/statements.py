"""The parser: code text to a tree of statements, by indentation.

One ``finditer`` of the grammar's ``[lines].head`` pattern over the whole text gives
each physical line that is not blank with its indentation, its first word and whether its
brackets pair up on it (a grammar without that pattern reads them with its ``physical``,
``blank`` and ``identifier`` patterns); the text is matched against the grammar's
statement rules, first rule in file order wins: one match of the grammar's master pattern (an ``re``
alternation of the rules, see :class:`codeparse.grammar.engine.Master`) names the rule, every
match bounded to the statement's logical line.  A rule the master names by a looser
``classify`` pattern is then matched exactly: by its ``re`` form (recursion unrolled) where
the line holds no string and its brackets nest shallow, or, on one line, where the grammar's
``[lines].nested_strings`` reads its strings whole and its brackets as shallow; else by its
``regex`` pattern.  Lines longer than the grammar's
``timeout_line_length`` are matched rule by rule with ``regex`` under ``match_timeout``.  A rule may consume several
physical lines (a ``def`` with its parameters on continuation lines).  Blocks follow
indentation, as in CPython's tokenizer: an indent opens the block of the statement
before it, a dedent closes blocks back to a matching column.

Nothing here raises on bad input: a line no rule matches becomes a
``CP101`` diagnostic with its span, and parsing goes on with the next line.  Depth, line length and match time are bounded by the grammar's
``[limits]``, each with its own code.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from ..contract.codes import diagnostic
from ..grammar.engine import Grammar, GrammarError, Statement, char_class
from .source import SourceText

__all__ = ["Stmt", "ParseResult", "RepeatedMatch", "parse_statements", "quoted", "bracket_end", "nesting"]

_NO_BODY: Any = ()  # the body of every statement whose rule opens no block
_EXCERPT = 60  # characters of an unparsed line quoted in its message
# Brackets nested this deep or less are paired by one `re` match (see `nesting`); the
# pattern grows threefold per level (three pairs), 1,000 characters at 3.
_NEST_DEPTH = 3


class Stmt:
    """One statement: the rule that matched it, its offsets, and its named groups.

    Offsets are into the whole source text.  ``group(name)`` and ``span_of(name)`` read
    the rule's named groups; ``match`` is a match object for them: the rule's own match, a
    master pattern's match that holds the rule's groups under their names (its
    ``re.groupindex`` knows no other rule's names but ``_<i>`` ones), or a view of the
    master's match where the rule's groups were renamed.  ``rule.group_names()`` lists
    what a rule captures.  A hot loop reads a group's span without a call as
    ``raw.span(name if numbers is None else numbers[name])``."""

    __slots__ = ("rule", "kind", "raw", "numbers", "start", "end", "column", "body", "orelse", "else_stmt",
                 "block_end", "after_unparsed")

    def __init__(self, rule: Statement, match: Any, start: int, end: int, column: int,
                 groups: Optional[dict] = None):
        self.rule = rule
        self.kind = rule.emits
        self.raw = match  # over the whole source text
        self.numbers = groups  # group name -> number in `raw`, or None: `raw` names the rule's groups
        self.start = start  # offset of the statement's first character (after indentation)
        self.end = end  # offset just past its last character
        self.column = column  # indentation width
        # The statements of its block; a rule without a block has none, and shares one
        # empty tuple (tens of thousands of empty lists cost the garbage collector).
        self.body: list[Stmt] = [] if rule.block else _NO_BODY
        # For `if`: the statements of its `else:` block (or the `elif` chained to it).
        self.orelse: Optional[list[Stmt]] = None
        self.else_stmt: Optional[Stmt] = None
        self.block_end = -1  # offset just past the last statement inside, or `end`
        # An `else:` that follows an unparsed line (most likely the `if` it belongs to):
        # not reported again as dangling.
        self.after_unparsed = False

    def __repr__(self) -> str:
        return f"Stmt({self.rule.name!r}, {self.start}, {self.end})"

    def group(self, name: str) -> Optional[str]:
        g = self.numbers
        return self.raw.group(name if g is None else _number(g, name))

    def span_of(self, name: str) -> tuple[int, int]:
        g = self.numbers
        return self.raw.span(name if g is None else _number(g, name))

    @property
    def match(self) -> Any:
        return self.raw if self.numbers is None else _RuleMatch(self.raw, self.numbers)


def _number(groups: dict, name: str) -> int:
    number = groups.get(name)
    if number is None:
        raise IndexError("no such group")
    return number


class _MatchView:
    """A match read through another (``_m``): ``start``, ``end`` and ``string`` from the
    view's own ``span``."""

    __slots__ = ("_m",)

    def span(self, name: Any = 0) -> tuple[int, int]:
        raise NotImplementedError

    def start(self, name: Any = 0) -> int:
        return self.span(name)[0]

    def end(self, name: Any = 0) -> int:
        return self.span(name)[1]

    @property
    def string(self) -> str:
        return self._m.string


class _RuleMatch(_MatchView):
    """One rule's named groups within a master pattern's match, read like the rule's own
    match (``group``, ``span``, ``start``, ``end``, ``groupdict``, ``re.groupindex``)."""

    __slots__ = ("_g",)

    def __init__(self, match: Any, groups: dict):
        self._m = match
        self._g = groups

    def group(self, name: Any = 0) -> Optional[str]:
        number = 0 if name == 0 else self._g.get(name)
        if number is None:
            raise IndexError("no such group")
        return self._m.group(number)

    def span(self, name: Any = 0) -> tuple[int, int]:
        number = 0 if name == 0 else self._g.get(name)
        if number is None:
            raise IndexError("no such group")
        return self._m.span(number)

    def groupdict(self, default: Any = None) -> dict:
        m = self._m
        return {name: m.group(number) if m.start(number) >= 0 else default for name, number in self._g.items()}

    @property
    def re(self) -> "_RuleNames":
        return _RuleNames(self._g)


class _RuleNames:
    """What ``match.re`` tells of a rule: its group names (``groupindex``)."""

    __slots__ = ("groupindex",)

    def __init__(self, groups: dict):
        self.groupindex = groups


class RepeatedMatch(_MatchView):
    """An ``re`` match of a rule whose group repeats, read as ``regex``'s match of the rule
    reads: ``spans(name)`` and ``captures(name)`` give every capture of a repeated group, in
    order, and ``group``/``span`` its last one.  ``re`` keeps the group's first capture; the
    rule's ``repeat`` pattern for the group matches each further one from the end of the one
    before (as the rule's own loop does), up to ``stop``, when first asked."""

    __slots__ = ("_repeat", "_stop", "_found")

    def __init__(self, match: Any, repeat: dict, stop: int):
        self._m = match
        self._repeat = repeat
        self._stop = stop
        self._found: Optional[dict[str, list[tuple[int, int]]]] = None  # made when first asked

    def _all(self, name: str) -> list[tuple[int, int]]:
        known = self._found
        if known is None:
            known = self._found = {}
        found = known.get(name)
        if found is None:
            m = self._m
            first = m.span(name)
            found = []
            if first[0] >= 0:
                found.append(first)
                more = self._repeat[name].get().match
                text, pos, stop = m.string, first[1], self._stop
                r = more(text, pos, stop)
                while r is not None and r.end() > pos:
                    found.append(r.span(name))
                    pos = r.end()
                    r = more(text, pos, stop)
            known[name] = found
        return found

    def spans(self, name: Any = 0) -> list[tuple[int, int]]:
        if name in self._repeat:
            return list(self._all(name))
        span = self._m.span(name)
        return [span] if span[0] >= 0 else []

    def captures(self, name: Any = 0) -> list[str]:
        text = self._m.string
        return [text[a:b] for a, b in self.spans(name)]

    def span(self, name: Any = 0) -> tuple[int, int]:
        if name in self._repeat:
            found = self._all(name)
            return found[-1] if found else (-1, -1)
        return self._m.span(name)

    def group(self, name: Any = 0) -> Optional[str]:
        if name in self._repeat:
            start, end = self.span(name)
            return self._m.string[start:end] if start >= 0 else None
        return self._m.group(name)

    def groupdict(self, default: Any = None) -> dict:
        return {name: (value if (value := self.group(name)) is not None else default)
                for name in self._m.re.groupindex}

    @property
    def re(self) -> Any:
        return self._m.re


class ParseResult:
    """The top-level statements of a text, and its diagnostics (text the grammar does not
    cover).  (A plain class: creating a dataclass costs start-up time.)"""

    __slots__ = ("body", "diagnostics")

    def __init__(self, body: list[Stmt], diagnostics: list[dict]):
        self.body = body
        self.diagnostics = diagnostics


class _Block:
    """An open block: its column, its list of statements, the statement it is the block of
    (None: the root, or lines read on after an unparsed line), and for an ``else:``/``elif``
    block the ``if`` whose chain it ends (its blocks reach as far)."""

    __slots__ = ("column", "stmts", "owner", "chain")


def quoted(grammar: Grammar):
    """``has(text, start, end)``: whether ``text[start:end]`` may hold a string literal
    (one of the grammar's ``[lines].string_quotes`` occurs in it).  Where none does,
    brackets pair up by counting alone; a grammar without the key is always asked."""
    quotes = grammar.string_quotes
    if not quotes:
        return lambda text, start, end: True
    if len(quotes) == 2:
        q0, q1 = quotes
        return lambda text, start, end: text.find(q0, start, end) != -1 or text.find(q1, start, end) != -1
    return lambda text, start, end: any(text.find(q, start, end) != -1 for q in quotes)


def bracket_end(text: str, open_pos: int, stop: int, closers: dict, brackets) -> Optional[int]:
    """The offset just past the bracket that closes ``text[open_pos]`` before ``stop``,
    or None when the brackets do not nest (for text without strings: the grammar's
    ``balanced`` answer, found by counting).  ``closers`` maps each opener to its closer;
    ``brackets`` finds any bracket (an ``re`` character class built from the pairs)."""
    stack = []
    for m in brackets(text, open_pos, stop):
        ch = m.group()
        closer = closers.get(ch)
        if closer is not None:
            stack.append(closer)
        elif not stack or stack.pop() != ch:
            return None
        if not stack:
            return m.end()
    return None


def nesting(grammar: Grammar, depth: int = _NEST_DEPTH):
    """The ``match`` of an ``re`` pattern built from the grammar's bracket pairs: brackets
    that pair up, nested at most ``depth`` deep, and any other text (strings are not
    considered).  One C-level match answers what counting does in a Python loop:

    * ``nested.fullmatch``-like use, ``m = nested(text, start, end)`` with
      ``m.end() == end``: every bracket of ``text[start:end]`` pairs up (so each pair's
      counts are equal); otherwise they do not, or nest deeper;
    * from just past an opener, ``m.end()`` is where the first bracket not paired within
      the stretch stands: when that is the opener's closer, the group ends just past it
      (:func:`bracket_end`'s answer); otherwise ask :func:`bracket_end`.

    A grammar without pairs gets a pattern that matches any text."""
    chars = "".join(o + c for o, c in grammar.bracket_pairs)
    return _nesting(chars, depth)


@functools.cache
def _nesting(chars: str, depth: int):
    import re

    from ..grammar.compiled import compile_re

    if not chars:
        return compile_re("(?s:.)*+").match
    pairs = [(re.escape(chars[i]), re.escape(chars[i + 1])) for i in range(0, len(chars), 2)]
    other = "[^" + re.escape(chars) + "]"
    # Runs of other characters between pairs (`a*(?:(?:pair)a*)*`): the same matches as a
    # repeated choice of either, in fewer steps.
    inner = other + "*+"  # inside the innermost group: no bracket
    for _ in range(depth - 1):
        inner = other + "*+(?:(?:" + "|".join(o + inner + c for o, c in pairs) + ")" + other + "*+)*+"
    group = "|".join(o + inner + c for o, c in pairs)
    return compile_re(other + "*+(?:(?:" + group + ")" + other + "*+)*+").match


def bracket_finder(grammar: Grammar, method: str = "finditer"):
    """A method (``finditer``, ``search``) of an ``re`` class of every bracket of the
    grammar's pairs, or None when the grammar names no pairs."""
    chars = "".join(o + c for o, c in grammar.bracket_pairs)
    return getattr(char_class(chars), method) if chars else None


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


class _Reading:
    """What :func:`parse_statements` reads from one grammar, looked up once per grammar
    (a file of two lines paid as much for the lookups as for its lines)."""

    __slots__ = ("grammar", "lines", "physical_pattern", "physical", "indent", "text", "blank", "pairs",
                 "bracket_signs", "find_brackets", "nested", "may_quote", "first_word", "by_keyword", "generic",
                 "generic_master", "exacts", "nested_strings", "head", "plans", "generic_plan", "directs",
                 "shortcuts", "loose_else", "spanning")

    def __init__(self, grammar: Grammar):
        self.grammar = grammar
        self.lines = grammar.lines
        self.physical_pattern = grammar.lines["physical"]
        self.physical = self.physical_pattern.match
        self.indent = self.physical_pattern.groupindex["indent"]
        self.text = self.physical_pattern.groupindex["text"]
        self.blank = grammar.lines["blank"].fullmatch
        self.pairs = grammar.bracket_pairs
        # Where no character is in two pairs (or both sides of one), each bracket
        # character -> (its pair's index, +1 for an opener, -1 for a closer), and a `findall`
        # of every bracket: counted in one pass; else (None) by counts per pair.
        chars = "".join(o + c for o, c in self.pairs)
        self.bracket_signs = None if not chars or len(set(chars)) != len(chars) else {
            ch: (index, sign) for index, pair in enumerate(self.pairs) for ch, sign in zip(pair, (1, -1))}
        self.find_brackets = bracket_finder(grammar, "findall")
        self.nested = nesting(grammar)
        self.may_quote = quoted(grammar)
        # `[lines].spanning` (optional): a statement over several lines whose brackets pair
        # up shallow, without a quote character (a signature), read to its end in one match.
        self.spanning = grammar.lines["spanning"].match if "spanning" in grammar.lines else None
        self.first_word = grammar.fragments["identifier"].match
        self.by_keyword = grammar.rules_by_keyword
        self.generic = grammar.generic_rules
        self.generic_master = grammar.master(None)
        self.exacts: dict = {}  # rule -> its `fast` pattern and its `plain` one (or None), compiled
        self.shortcuts = _Shortcuts()  # rule -> its shortcut's `match`, or None
        # `[lines].nested_strings` (optional): a line with strings whose brackets nest shallow.
        self.nested_strings = grammar.lines["nested_strings"].match if "nested_strings" in grammar.lines else None
        # The first word of a line (None: none) -> what matches its rules (`_plan_of` its
        # master); a keyword's is filled when first asked (None until then).
        self.plans: dict = dict.fromkeys(self.by_keyword)
        self.generic_plan = self._plan_of(self.generic_master)
        # Keywords whose own rule comes first and needs `regex`: matched exactly at once.
        self.directs = frozenset(k for k, rules in self.by_keyword.items()
                                 if rules[0].keyword == k and rules[0].classify is not None)
        # An `else:`/`elif` rule that opens no block (the parser checks else linking on
        # the statements of rules with a block, unless the grammar has such a rule).
        self.loose_else = any(rule.emits in ("else", "elif") and not rule.block for rule in grammar.statements)
        # `[lines].head` (optional): each physical line's parts in one match of one pass.
        self.head = None
        if "head" in grammar.lines:
            head = grammar.lines["head"]
            if head.groups != len(_HEAD_GROUPS) or any(head.groupindex.get(name) != number for number, name in
                                                        enumerate(_HEAD_GROUPS, 1)):
                raise GrammarError(f"{grammar.path}: [lines].head: its groups are {', '.join(_HEAD_GROUPS)}, "
                                   "in this order, and no others")
            self.head = head.finditer

    @staticmethod
    def _plan_of(master: Any) -> tuple:
        """``Master.alternations()`` and the master's ``rules`` and ``maps``: what the parser
        needs to do :meth:`Master.find` inline."""
        return (*master.alternations(), master.rules, master.maps)

    def plan(self, keyword: str) -> tuple:
        """The plan of a keyword's lines (compiling its master pattern), kept."""
        found = self.plans[keyword] = self._plan_of(self.grammar.master(keyword))
        return found

    def exact(self, rule: Statement) -> tuple:
        """A rule's own `re` (or `regex`) pattern and its unrolled `re` form (or None), kept."""
        found = self.exacts[rule] = (rule.fast, rule.plain)
        return found


class _Shortcuts(dict):
    """rule -> ``rule.shortcut.match`` (None: the rule has no shortcut), each looked up when
    first asked."""

    def __missing__(self, rule: Statement) -> Any:
        shortcut = rule.shortcut
        found = self[rule] = None if shortcut is None else shortcut.match
        return found


_READINGS: dict[int, _Reading] = {}
# The groups of `[lines].head`, in order (the parser reads them by number).
_HEAD_GROUPS = ("indent", "word", "nested")


class _PhysicalHead:
    """One physical line read as ``[lines].head`` reads it (``span``, ``start``, ``end`` and
    ``group`` of its groups by number), for a grammar without that pattern: its
    ``physical``, ``blank`` and ``identifier`` patterns and the bracket nesting check."""

    __slots__ = ("_spans", "_word")

    def __init__(self, spans: tuple, word: Optional[str]):
        self._spans = spans
        self._word = word

    def span(self, group: int = 0) -> tuple[int, int]:
        return self._spans[group]

    def start(self, group: int = 0) -> int:
        return self._spans[group][0]

    def end(self, group: int = 0) -> int:
        return self._spans[group][1]

    def group(self, group: int) -> Optional[str]:
        return self._word  # the first word (group 2), the only group the parser reads

    __getitem__ = group


def _physical_heads(r: "_Reading", text: str):
    """The physical lines of ``text`` that are not blank, as ``[lines].head`` gives them."""
    indent_group, text_group = r.indent, r.text
    blank, first_word, nested = r.blank, r.first_word, r.nested
    for line in r.physical_pattern.finditer(text):
        start, end = line.span(text_group)
        if blank(text, start, end):
            continue
        word = first_word(text, start, end)
        yield _PhysicalHead(((line.start(), end), line.span(indent_group), word.span() if word else (-1, -1),
                             (start, nested(text, start, end).end())), word.group() if word else None)


def _reading(grammar: Grammar) -> _Reading:
    found = _READINGS.get(id(grammar))
    if found is None or found.grammar is not grammar:
        if len(_READINGS) >= 64:  # grammars loaded from files by tests: bounded
            _READINGS.clear()
        found = _READINGS[id(grammar)] = _Reading(grammar)
    return found


def _excess(r: _Reading, text: str, start: int, end: int) -> tuple[int, bool]:
    """Opening minus closing brackets in ``text[start:end]``, and whether every pair's
    counts are equal (see :func:`_pair_excess`)."""
    differences = [0] * len(r.pairs)
    total = _pair_excess(r, text, start, end, differences)
    return total, not any(differences)


def _balanced(r: _Reading, text: str, start: int, end: int, timeout: float) -> Any:
    # Compiled when first needed (a line with a quote and unequal bracket counts): many
    # texts never ask, and compiling it is start-up time.
    return r.lines["balanced"].fullmatch(text, start, end, timeout=timeout)


def _unbalanced(r: _Reading, text: str, start: int, end: int, timeout: float) -> bool:
    # Equal counts per pair settle it cheaply; unequal counts may still come from brackets
    # inside strings, which the grammar's `balanced` pattern skips.
    if _excess(r, text, start, end)[1]:
        return False
    return not r.may_quote(text, start, end) or _balanced(r, text, start, end, timeout) is None


def _pair_excess(r: _Reading, text: str, start: int, end: int, differences: list[int]) -> int:
    """Opening minus closing brackets in ``text[start:end]``, each pair's difference added
    into ``differences`` (one item per pair): where no character is in two pairs, one
    C-level ``findall`` of every bracket read in one pass (one search when the line has no
    bracket at all, as many lines have not); else one count per bracket character."""
    signs = r.bracket_signs
    total = 0
    if signs is not None:
        for ch in r.find_brackets(text, start, end):
            pair, sign = signs[ch]
            differences[pair] += sign
            total += sign
        return total
    count = text.count
    for index, (o, c) in enumerate(r.pairs):
        d = count(o, start, end) - count(c, start, end)
        differences[index] += d
        total += d
    return total


def _spanning_end(r: _Reading, text: str, start: int, end: int, column: int) -> int:
    """:func:`_logical_end` of a statement that continues past its first line (which ends at
    ``end``), found by one match where that is its whole answer, or -1.

    Where the statement's text holds no quote character and its brackets pair up, nested
    at most three deep, with its line breaks all inside brackets (the grammar's
    ``[lines].spanning`` reads it to a line break outside them or the text's end), and
    every line after the first is indented past ``column``, :func:`_logical_end` extends
    it line by line to that same line (the brackets are open at every line break inside,
    closed at the one after) and finds every pair's counts equal.  Its brackets then nest
    as the grammar's ``re`` forms need, with no string (what :func:`_exact` would check
    again)."""
    spanning = r.spanning
    if spanning is None:
        return -1
    stop = spanning(text, start).end()
    if stop <= end or (stop < len(text) and text[stop] != "\n"):
        return -1
    physical, indent_group = r.physical, r.indent
    at = end  # a line break inside brackets: the next line must be indented past `column`
    while at != -1 and at < stop:
        if physical(text, at + 1).end(indent_group) - (at + 1) <= column:
            return -1
        at = text.find("\n", at + 1, stop)
    return stop


def _logical_end(r: _Reading, text: str, start: int, end: int, column: int, timeout: float) -> tuple[int, bool]:
    """The end of the statement starting at ``start`` on the line ending at ``end``, and
    whether every pair's counts are equal over the statement's lines (the answer
    :func:`_unbalanced` would count again).

    A statement continues on the next physical lines while its brackets are open and
    those lines are indented past it (a signature's parameters); the extension stops at
    the first line that is not, so it stays linear.  Each line's brackets are counted
    once, per pair: a statement over several lines (a ``def``'s signature) whose pairs
    close is known balanced by count without a second pass."""
    differences = [0] * len(r.pairs)
    depth = _pair_excess(r, text, start, end, differences)
    if not any(differences):
        return end, True
    if depth <= 0 or (r.may_quote(text, start, end) and _balanced(r, text, start, end, timeout) is not None):
        return end, False
    physical, indent_group, text_group = r.physical, r.indent, r.text
    size = len(text)
    while depth > 0 and end < size:
        nxt = physical(text, end + 1)
        if nxt.end(indent_group) - (end + 1) <= column:
            break
        line_start, end = end + 1, nxt.end(text_group)
        depth += _pair_excess(r, text, line_start, end, differences)
    return end, not any(differences)


def _exact(r: _Reading, text: str, rules: tuple, first: int, last: int, indent_end: int, text_end: int, stop: int,
           nests: bool, unrolled: bool, simple: Optional[bool] = None) -> tuple:
    """The first of ``rules[first:last]`` that matches the statement at ``indent_end`` by its
    own pattern, and its match; or ``(None, None)``.  ``unrolled``: the grammar's `re` forms
    with recursion unrolled (Statement.plain) serve where brackets nest less deep than they
    are unrolled (``nesting`` proves at most _NEST_DEPTH; a call is at most one deeper).
    ``simple``: True where the statement is known to hold no string and its brackets to nest
    so (:func:`_spanning_end`); else found here when first needed."""
    exacts = r.exacts
    for index in range(first, last):
        rule = rules[index]
        pattern, plain = exacts.get(rule) or r.exact(rule)
        if plain is not None and unrolled:
            if simple is None:  # no string, brackets nested less deep than unrolled
                simple = ((nests if stop == text_end else r.nested(text, indent_end, stop).end() == stop)
                          and not r.may_quote(text, indent_end, stop))
                if not simple and stop == text_end and r.nested_strings is not None:
                    # or strings read whole, and brackets outside them nested as shallow
                    simple = r.nested_strings(text, indent_end, stop).end() == stop
            if simple:
                m = plain.match(text, indent_end, stop)
                if m is not None:
                    return rule, (RepeatedMatch(m, rule.repeat, stop) if rule.repeat else m)
        m = pattern.match(text, indent_end, stop)
        if m is not None:
            return rule, m
    return None, None


def _close(block: _Block, last_end: int) -> None:
    """A block ends: its statement's ``block_end`` reaches ``last_end`` (the end of the last
    statement made, which is inside), and so does that of the ``if``/``elif`` statements of
    the chain it ends (an ``else:``/``elif`` block extends the whole chain)."""
    owner = block.owner
    if owner is not None and last_end > owner.block_end:
        owner.block_end = last_end
        member = block.chain
        while member is not None and member is not owner:
            if last_end > member.block_end:
                member.block_end = last_end
            member = member.else_stmt


def parse_statements(source: SourceText, grammar: Grammar) -> ParseResult:
    """Read ``source`` into top-level statements with nested blocks."""
    text = source.text
    path = source.path
    r = _READINGS.get(id(grammar))
    if r is None or r.grammar is not grammar:
        r = _reading(grammar)
    physical = r.physical
    by_keyword = r.by_keyword
    generic = r.generic
    limits = grammar.limits  # read per text: the limits are data a caller may change
    max_depth = int(limits["max_block_depth"])
    max_len = int(limits["max_line_length"])
    fast_len = int(limits.get("timeout_line_length", 10_000))
    timeout = float(limits["match_timeout"])  # grammar.timeout(), inline
    shortcuts = r.shortcuts
    unrolled = int(limits.get("unroll_depth", 0)) > _NEST_DEPTH

    diagnostics: list[dict] = []
    root: list[Stmt] = []
    top = _new_block(_Block)  # the innermost open block
    top.column, top.stmts, top.owner, top.chain = 0, root, None, None
    stack = [top]
    pending: Optional[Stmt] = None  # a statement whose block has not started yet
    too_deep_column = -1  # while >= 0, lines indented past it are skipped
    # Column of the last unparsed line while no statement followed it at that column:
    # it probably opened a block, so its body is read (into the enclosing block)
    # without reporting every line of it as an unexpected indent.
    recovering = -1
    skip_to = 0  # lines that start before it belong to a statement read already
    last_end = -1  # the end of the last statement made
    dangling: Optional[list[Stmt]] = None  # `else:`/`elif` statements no `if` takes (CP108)
    pending_chain: Optional[Stmt] = None  # the `if` whose chain `pending` ends, if any

    top_column, top_stmts = 0, root
    head = r.head
    if head is None:  # a grammar without `[lines].head`: its parts found one by one
        head = functools.partial(_physical_heads, r)
    plans = r.plans
    generic_plan = r.generic_plan
    # The rules without a keyword form the generic plan's one alternation (it has no other).
    generic_own, generic_own_at, _, _, _, generic_rules, generic_maps = generic_plan
    directs = r.directs
    new_stmt = object.__new__
    loose_else = r.loose_else
    # The physical lines that are not blank, one `finditer` over the text; a statement that
    # ends on a later line (a signature over several lines) moves `skip_to` past that line,
    # and the lines before it are passed over.
    for line in head(text):
        start, text_end = line.span()
        if start < skip_to:  # within a statement that began on an earlier line
            continue
        indent_end = line.end(1)
        column = indent_end - start
        if too_deep_column >= 0:
            if column > too_deep_column:
                continue
            too_deep_column = -1
        if text_end - indent_end > max_len:
            _report(diagnostics, source, "CP105", indent_end, text_end, length=text_end - indent_end, limit=max_len)
            continue

        # Indentation decides which block the statement belongs to.
        if pending is not None:
            if column > top_column:
                if len(stack) > max_depth:
                    _report(diagnostics, source, "CP104", indent_end, text_end, limit=max_depth)
                    too_deep_column = top_column
                    pending = None
                    continue
                top = _new_block(_Block)
                top.column, top.stmts, top.owner, top.chain = column, pending.body, pending, pending_chain
                stack.append(top)
                top_column, top_stmts = column, top.stmts
            elif not pending.rule.empty_block:
                _report(diagnostics, source, "CP103", pending.start, pending.end, statement=pending.rule.name)
            pending = None
        elif column != top_column:
            if column > top_column:
                if recovering == top_column:
                    top = _new_block(_Block)
                    top.column, top.stmts, top.owner, top.chain = column, top_stmts, None, None
                    stack.append(top)
                    top_column = column
                else:
                    _report(diagnostics, source, "CP102", start, indent_end, expected=top_column + 1)
            else:
                while column < top.column:
                    _close(stack.pop(), last_end)
                    top = stack[-1]
                top_column, top_stmts = top.column, top.stmts
                if column != top_column:
                    _report(diagnostics, source, "CP111", start, indent_end, column=column + 1)

        key = line[2]  # the first word
        # Every match is bounded to the statement's logical line, so a failing rule
        # never reads (or searches for a literal) past it: cost per byte is flat.  A line
        # whose brackets nest (most lines) ends where it is.
        nests = line.end(3) == text_end
        simple = None
        if nests:
            stop, even = text_end, True
        else:
            stop = _spanning_end(r, text, indent_end, text_end, column)
            if stop >= 0:  # over several lines, known even, and simple for _exact
                even = simple = True
            else:
                stop, even = _logical_end(r, text, indent_end, text_end, column, timeout)
        m = rule = groups = None
        if stop - indent_end <= fast_len:
            if key in directs:
                # The keyword's own rule comes first and needs `regex` (a `def`): matched
                # exactly at once (its shortcut first), not classified first (its looser
                # pattern matches wherever it does); where it fails, as any other line.
                rule = by_keyword[key][0]
                shortcut = shortcuts[rule]
                if shortcut is None or (m := shortcut(text, indent_end, stop)) is None:
                    rule, m = _exact(r, text, by_keyword[key], 0, 1, indent_end, text_end, stop, nests, unrolled,
                                     simple)
            if m is None:  # Master.find, inline
                plan = plans.get(key, generic_plan)
                if plan is generic_plan:  # a line of no keyword: the rules without one, one alternation
                    index = None
                    if generic_own is not None:
                        m = generic_own(text, indent_end, stop)
                        if m is not None:
                            index = generic_own_at[m.lastindex]
                    rules, maps = generic_rules, generic_maps
                else:
                    own, own_at, generic_match, generic_at, generic_first, rules, maps = plan or r.plan(key)
                    index = None
                    if own is not None:
                        m = own(text, indent_end, stop)
                        if m is not None:
                            index = own_at[m.lastindex]
                    if generic_match is not None and (index is None or index > generic_first):
                        other = generic_match(text, indent_end, stop)
                        if other is not None:
                            other_index = generic_at[other.lastindex]
                            if index is None or other_index < index:
                                index, m = other_index, other
                if index is not None:
                    rule = rules[index]
                    groups = maps[index]
                    if groups is False:
                        # Classified by a looser pattern: the rule (its shortcut first) may
                        # still fail, and then the rules after it are tried in order.
                        groups = None
                        shortcut = shortcuts[rule]
                        if shortcut is None or (m := shortcut(text, indent_end, stop)) is None:
                            rule, m = _exact(r, text, rules, index, len(rules), indent_end, text_end, stop, nests,
                                             unrolled, simple)
        else:
            rules = by_keyword.get(key, generic) if key else generic
            try:
                for rule in rules:
                    m = rule.pattern.match(text, indent_end, stop, timeout=timeout)
                    if m is not None:
                        break
            except TimeoutError:
                _report(diagnostics, source, "CP107", indent_end, text_end, grammar=grammar.id, seconds=timeout)
                continue
        if m is None or ((end := m.end()) != stop or not even) and _unbalanced(r, text, indent_end, end, timeout):
            if m is None:
                _report(diagnostics, source, "CP101", indent_end, text_end, grammar=grammar.id,
                        excerpt=_excerpt(text[indent_end:text_end]))
            else:
                _report(diagnostics, source, "CP112", indent_end, text_end, excerpt=_excerpt(text[indent_end:text_end]))
            recovering = column
            continue
        stmt = new_stmt(Stmt)  # Stmt(rule, m, indent_end, end, column, groups), without the call
        stmt.rule = rule
        stmt.kind = kind = rule.emits
        stmt.raw = m
        stmt.numbers = groups
        stmt.start = indent_end
        stmt.end = last_end = end
        stmt.column = column
        stmt.orelse = stmt.else_stmt = None
        stmt.block_end = end  # extended when its block, or the else chain it ends, closes
        stmt.after_unparsed = False
        if column <= recovering:
            if column == recovering:
                stmt.after_unparsed = kind == "else" or kind == "elif"
            recovering = -1
        if rule.block:
            stmt.body = []
            pending = stmt
            pending_chain = None
            if kind == "else" or kind == "elif":
                pending_chain = _link(stmt, kind, top_stmts)
                if pending_chain is None:
                    dangling = _dangle(stmt, top_stmts, dangling)
            else:
                top_stmts.append(stmt)
        else:
            stmt.body = _NO_BODY
            if loose_else and (kind == "else" or kind == "elif"):
                if _link(stmt, kind, top_stmts) is None:
                    dangling = _dangle(stmt, top_stmts, dangling)
            else:
                top_stmts.append(stmt)
        if end > text_end:  # continue after the line on which the statement ended
            skip_to = physical(text, end).end()
    if pending is not None and not pending.rule.empty_block:
        _report(diagnostics, source, "CP103", pending.start, pending.end, statement=pending.rule.name)
    while len(stack) > 1:
        _close(stack.pop(), last_end)
    if dangling is not None:
        _report_dangling(root, {id(s) for s in dangling}, diagnostics, source)
    return ParseResult(root, diagnostics)


_new_block = object.__new__


def _link(stmt: Stmt, kind: str, stmts: list[Stmt]) -> Optional[Stmt]:
    """Attach an ``else:``/``elif`` statement to the ``if`` that is the last statement of
    ``stmts`` (its block), or to that ``if``'s last ``elif``, and extend the block ends of
    that chain to it; return the ``if``, or None where there is none to take it (the
    statement dangles)."""
    chain = stmts[-1] if stmts else None
    if chain is None or chain.kind != "if":
        return None
    last = chain
    while last.else_stmt is not None:
        last = last.else_stmt
    if last.kind == "else":
        return None
    last.orelse = stmt.body if kind == "else" else [stmt]
    last.else_stmt = stmt
    end = stmt.end
    member = chain
    while member is not stmt:  # the chain's blocks reach this statement
        if end > member.block_end:
            member.block_end = end
        member = member.else_stmt
    return chain


def _dangle(stmt: Stmt, stmts: list[Stmt], dangling: Optional[list[Stmt]]) -> Optional[list[Stmt]]:
    """An ``else:``/``elif`` no ``if`` takes stays in its block; it is reported (CP108, once
    the tree is read) unless it follows an unparsed line."""
    stmts.append(stmt)
    if not stmt.after_unparsed:
        if dangling is None:
            dangling = []
        dangling.append(stmt)
    return dangling


def _report(diagnostics: list, source: SourceText, code: str, start: int, end: int, **args: object) -> None:
    diagnostics.append(diagnostic(code, source.path, source.span(start, end), **args))


def _report_dangling(stmts: list[Stmt], dangling: set, diagnostics: list, source: SourceText) -> None:
    """CP108 for each ``else:``/``elif`` no ``if`` takes (ids in ``dangling``), in the order
    the blocks end: a statement's block (and its else chain's) before the statement itself,
    statements in order."""
    for stmt in stmts:
        member: Optional[Stmt] = stmt
        while member is not None:
            if member.body:
                _report_dangling(member.body, dangling, diagnostics, source)
            if id(member) in dangling:
                _report(diagnostics, source, "CP108", member.start, member.end, statement=member.rule.name)
            member = member.else_stmt

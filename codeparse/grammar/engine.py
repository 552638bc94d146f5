"""Loading, checking and compiling the versioned grammars in ``grammars/``.

A grammar is data (``grammars/torchscript-v2.toml``); this module is the engine that
turns it into compiled patterns: the standard library's ``re`` where a pattern needs
no ``regex`` feature (it is several times faster, to compile and to match), ``regex``
where it does (recursive sub-patterns, repeated captures, a match timeout).  The
statement rules of a line are tried through one *master pattern* per keyword bucket:
an ``re`` alternation of every rule (in file order), each rule as itself or, when it
needs ``regex``, as its ``classify`` pattern (a looser ``re`` pattern that matches every
line the rule matches); ``lastgroup`` names the first rule that can match.  Pieces in ``[patterns]`` are UPPER_SNAKE
names composed by ``{NAME}`` references; an all-caps name can never be a regex
quantifier, so ``{NAME}`` is unambiguous.  Sub-patterns in ``[recursive]`` are called
with ``(?&name)``; each compiled pattern gets a ``(?(DEFINE)...)`` block holding every
sub-pattern it needs.

Everything is checked when the grammar loads: each reference resolves, no reference
cycle, every pattern compiles, no statement pattern matches the empty string, rule
names are unique and ``emits`` names a known statement node.  Errors name the grammar
file and the rule, as ``GrammarError("grammars/torchscript-v2.toml: rule 'if': ...")``.
"""

from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path
from typing import Any, NamedTuple, Optional

from .compiled import REGEX_VERSION0, compile_re, compile_regex, known_not_re, read_toml, regex_error
from .locations import _grammar_dir, grammar_dir  # noqa: F401 - re-exported: where the grammar files are

__all__ = [
    "GrammarError",
    "Grammar",
    "Statement",
    "GrammarInfo",
    "grammar_dir",
    "available_grammars",
    "grammar_ids",
    "load_grammar",
    "load_grammar_file",
    "load_semantics",
    "load_tracediff",
    "DEFAULT_GRAMMAR",
]

DEFAULT_GRAMMAR = "torchscript-v2"

# The statement nodes the parser knows how to build; a grammar's `emits` must be one.
STATEMENT_NODES = frozenset(
    {
        "class", "def", "if", "elif", "else", "for", "while", "with", "return", "pass",
        "break", "continue", "raise", "assert", "del", "parameters_decl", "buffers_decl",
        "annotation_decl", "final_decl", "attribute_decl", "assign", "expr", "header",
    }
)
# Sections every grammar must have, with the keys the engine reads from them.
REQUIRED = {
    "grammar": ("id", "title", "statement_end"),
    "limits": ("max_block_depth", "max_line_length", "max_expression_depth", "match_timeout"),
    "lines": ("physical", "blank", "balanced", "binary"),
    "fragments": ("param", "string_item", "expr_items", "string_body"),
    "scan": ("references", "receiver", "balanced"),
    "expression": ("atom", "trailer", "items", "keyword", "dict_entry"),
}
_PIECE_REF = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")
_RECURSIVE_CALL = re.compile(r"\(\?&([a-z_][a-z0-9_]*)\)")
_FLAGS = REGEX_VERSION0


class GrammarError(Exception):
    """A grammar file is malformed; the message names the file and the rule."""


class _Lazy:
    """A pattern whose references are resolved; compiled (and checked) on first use.

    Start-up matters (``codeparse parse x.code`` should take well under 0.15 s) and
    the `regex` compiler is slow, so a text pays only for the rules it uses, and
    :meth:`get` gives the standard library's ``re`` pattern whenever the source
    compiles there (possessive quantifiers and atomic groups do since Python 3.11).
    :meth:`get_regex` always gives the ``regex`` pattern (match timeouts).
    ``Grammar.compile_all()`` compiles everything: ``load_grammar_file``,
    ``codeparse grammars`` and the test suite call it.
    """

    __slots__ = ("source", "where", "path", "non_empty", "_compiled", "_regex")

    def __init__(self, source: str, where: str, path: Path, non_empty: bool = False):
        self.source, self.where, self.path, self.non_empty = source, where, path, non_empty
        self._compiled = None
        self._regex = None

    def get(self) -> Any:
        """The ``re`` pattern when the source needs no ``regex`` feature, else the ``regex`` one."""
        compiled = self._compiled
        if compiled is None:
            try:
                if known_not_re(self.source):
                    raise re.error("needs `regex`")
                compiled = compile_re(self.source)
            except (re.error, RecursionError, OverflowError):
                compiled = self.get_regex()
            self._check(compiled)
            self._compiled = compiled
        return compiled

    def get_regex(self) -> Any:
        compiled = self._regex
        if compiled is None:
            try:
                compiled = compile_regex(self.source, _FLAGS)
            except regex_error() as exc:
                raise GrammarError(f"{self.path}: {self.where}: uncompilable pattern: {exc}") from None
            self._check(compiled)
            self._regex = compiled
        return compiled

    def _check(self, compiled: Any) -> None:
        if self.non_empty and compiled.fullmatch("") is not None:
            raise GrammarError(f"{self.path}: {self.where}: pattern matches the empty string")


class _LazySection(dict):
    """A grammar section's patterns by name, each compiled when first looked up."""

    def __getitem__(self, key: str) -> Any:
        return dict.__getitem__(self, key).get()

    def compile_all(self) -> None:
        for lazy in self.values():
            lazy.get()
            lazy.get_regex()


_NAMED_GROUP = re.compile(r"\(\?P<([A-Za-z_][A-Za-z0-9_]*)>")


class Statement:
    """One statement rule; its patterns are compiled on first use.

    ``pattern`` is the ``regex`` pattern (matched with a timeout on very long lines);
    ``fast`` the same rule as ``re`` compiles it when it can (else the ``regex`` one);
    ``classify`` the source of the rule's alternative in the master pattern when the rule
    needs ``regex`` (else the rule stands there as itself, with its captures).
    """

    __slots__ = ("name", "emits", "keyword", "block", "empty_block", "_lazy", "classify", "index", "_groups",
                 "_plain_source", "_plain", "repeat", "_shortcut")

    def __init__(self, name: str, emits: str, keyword: Optional[str], block: bool,
                 empty_block: bool, lazy: _Lazy, classify: Optional[str] = None, index: int = 0,
                 plain: Optional[str] = None, repeat: Optional[dict[str, "_Lazy"]] = None,
                 shortcut: Optional[_Lazy] = None):
        self.name = name
        self.emits = emits
        self.keyword = keyword  # tried only on lines whose first word is this
        self.block = block
        self.empty_block = empty_block  # the block may be empty (a class with no body)
        self._lazy = lazy
        self.classify = classify  # an `re` source matching every line the rule matches
        self.index = index  # position in the grammar file
        self._groups: Optional[tuple[str, ...]] = None
        self._plain_source = plain
        self._plain: Any = False  # compiled on first use; None: the rule has no `re` form
        # Group name -> the `re` pattern that matches each further capture of a group the
        # rule repeats (`[[statements]].repeat`), from the end of the one before.
        self.repeat = repeat or {}
        self._shortcut = shortcut

    @property
    def pattern(self) -> Any:
        return self._lazy.get_regex()

    @property
    def fast(self) -> Any:
        return self._lazy.get()

    @property
    def plain(self) -> Any:
        """The rule in ``re`` with its recursive sub-patterns unrolled ``[limits].unroll_depth``
        deep (a call below that depth fails), or None (the rule needs no recursion, or needs
        another ``regex`` feature).  It matches as :attr:`pattern` does on a statement whose
        brackets nest less deep than that and that holds no string (the parser checks): no
        call there goes deeper.  A repeated group keeps its first capture; the rule's
        ``repeat`` patterns find the others."""
        plain = self._plain
        if plain is False:
            plain = None
            if self._plain_source is not None:
                try:
                    plain = compile_re(self._plain_source)
                except (re.error, RecursionError, OverflowError):
                    plain = None
                if plain is not None:
                    self._lazy._check(plain)
            self._plain = plain
        return plain

    @property
    def shortcut(self) -> Any:
        """The rule's ``shortcut`` (``re``, compiled on first use), or None: a pattern that
        matches only where the rule's pattern matches, and as it does (each group at the
        same place), its common case in ``re``.  Where it matches, the rule needs no match
        of its own; where it does not, the rule may still match."""
        return None if self._shortcut is None else self._shortcut.get()

    def master_source(self, prefix: str) -> str:
        """This rule's alternative in a master pattern: its ``classify`` pattern when it
        has one, else itself with each group ``name`` renamed ``<prefix>name`` (kept as it
        is without a prefix)."""
        if self.classify is not None:
            return _NAMED_GROUP.sub("(?:", self.classify)  # its groups are never read
        if not prefix:
            return self._lazy.source
        return _NAMED_GROUP.sub(lambda m: f"(?P<{prefix}{m.group(1)}>", self._lazy.source)

    def group_names(self) -> tuple[str, ...]:
        """The names of the rule's groups, in order (read from its source once)."""
        groups = self._groups
        if groups is None:
            groups = self._groups = tuple(dict.fromkeys(_NAMED_GROUP.findall(self._lazy.source)))
        return groups

    def captures(self, name: str) -> bool:
        """Whether the rule has a group ``name`` (the rules emitting one node differ: an
        ``assign`` may capture a ``type``)."""
        return name in self.group_names()


class Master:
    """The statement rules of one keyword bucket, classified by ``re`` alternations.

    The rules with this bucket's keyword form one alternation; the rules without a
    keyword form another, compiled once per grammar and shared by every bucket; of the
    two answers the earlier rule in file order wins.  :meth:`find` gives that rule's
    index in ``rules`` and the alternation's match.  A rule that compiles with ``re``
    stands in its alternation as itself, so that match is the rule's match: ``maps[i]``
    names its groups (a dict of group name to group number when they are renamed, or
    None when the match has them under their own names: the first rule with groups of an
    alternation keeps them).  A rule that needs ``regex`` stands there as its
    ``classify`` pattern (``maps[i]`` is False): it is then matched exactly, and so are
    the rules after it when it does not match.
    """

    __slots__ = ("rules", "maps", "_own", "_own_index", "_generic", "_generic_index", "_path")

    def __init__(self, rules: tuple[Statement, ...], path: Path, generic: Optional["Master"] = None):
        self.rules = rules
        self._path = path
        own = tuple(i for i, r in enumerate(rules) if generic is None or r.keyword is not None)
        self._own_index = own
        self._own = _Alternation(tuple(rules[i] for i in own), path) if own else None
        self._generic = generic._own if generic is not None else None
        self._generic_index = tuple(i for i, r in enumerate(rules) if r.keyword is None) if generic else ()
        self.maps: list = [False] * len(rules)

    def find(self, text: str, pos: int, endpos: int) -> Optional[tuple[int, Any]]:
        """``(index, match)`` of the first rule whose alternative matches, or None."""
        found = None
        own = self._own
        if own is not None:
            m = own.match(text, pos, endpos)
            if m is not None:
                found = self._own_index[0 if own.single else own.position[m.lastindex]]
                found_m = m
        generic = self._generic
        if generic is not None and (found is None or found > self._generic_index[0]):
            m = generic.match(text, pos, endpos)
            if m is not None:
                index = self._generic_index[0 if generic.single else generic.position[m.lastindex]]
                if found is None or index < found:
                    found, found_m = index, m
        return None if found is None else (found, found_m)

    def alternations(self) -> tuple:
        """What :meth:`find` does, for a caller that does it inline:
        ``(own, own_at, generic, generic_at, generic_first)``.  ``own`` matches this
        bucket's alternation (``match(text, pos, endpos)``; None: the bucket has none) and
        ``own_at[m.lastindex]`` is the index in ``rules`` of the rule its match names;
        ``generic`` and ``generic_at`` are the same for the rules without a keyword
        (None when this master has none apart), the first of which is ``rules[generic_first]``.
        :meth:`find` asks ``generic`` only when ``own`` found no rule before that one, and
        of two answers takes the earlier rule.  Compiles the alternations."""
        self.pattern()
        own, own_at = self._at(self._own, self._own_index)
        generic, generic_at = self._at(self._generic, self._generic_index)
        return own, own_at, generic, generic_at, self._generic_index[0] if self._generic_index else len(self.rules)

    @staticmethod
    def _at(alternation: Optional["_Alternation"], indexes: tuple) -> tuple:
        if alternation is None:
            return None, None
        compiled = alternation.pattern()
        # `lastindex` (None: the match closed no group) -> index in `rules`
        at = {None: indexes[0]} if alternation.single else {}
        for number in range(1, compiled.groups + 1):
            at[number] = indexes[0 if alternation.single else alternation.position[number]]
        return compiled.match, at

    def first(self, text: str, pos: int, endpos: int) -> Optional[int]:
        """The index in ``rules`` of the first rule whose alternative matches, or None."""
        found = self.find(text, pos, endpos)
        return None if found is None else found[0]

    def pattern(self) -> None:
        """Compile (and check) the alternations now, and name each rule's groups."""
        for alternation, indexes in ((self._own, self._own_index), (self._generic, self._generic_index)):
            if alternation is not None:
                alternation.pattern()
                for i, mapping in zip(indexes, alternation.maps):
                    self.maps[i] = mapping


class _Alternation:
    """Rules as one ``re`` alternation, one named group ``_<i>`` per rule (see :class:`Master`).

    One rule without a ``classify`` pattern is its own alternation (``single``): its
    compiled pattern serves, so it is not compiled a second time (compiling is most
    of a small file's start-up).  ``match`` compiles on first use; ``position`` gives a
    rule's place in ``rules`` by the number of the group that closed last."""

    __slots__ = ("rules", "_pattern", "_path", "single", "position", "maps", "match")

    def __init__(self, rules: tuple[Statement, ...], path: Path):
        self.rules = rules
        self._pattern = None
        self._path = path
        self.single = len(rules) == 1 and rules[0].classify is None
        self.position: list = []
        self.maps: list = []
        self.match = self._first_match

    def _first_match(self, text: str, pos: int, endpos: int) -> Any:
        return self.pattern().match(text, pos, endpos)

    def pattern(self) -> Any:
        compiled = self._pattern
        if compiled is not None:
            return compiled
        if self.single:
            compiled = self.rules[0].fast
            if isinstance(compiled, re.Pattern):
                self.position = [0] * (compiled.groups + 1)
                self.maps = [None]
                return self._set(compiled)
            compiled = None  # it needs `regex`: the error below names the rule
        # The first rule with groups keeps their names (its statements' match is the
        # alternation's match itself, and the only other names that match knows are the
        # `_<i>` ones and renamed ones: `"type" in match.re.groupindex` asks about that
        # rule); the groups of any later rule are renamed `_<i>_<name>`, read through `maps`.
        outer = {f"_{i}" for i in range(len(self.rules))}
        kept = False
        prefixes = []
        for i, rule in enumerate(self.rules):
            names = rule.group_names() if rule.classify is None else []
            keep = bool(names) and not kept and outer.isdisjoint(names)
            prefixes.append("" if keep or not names else f"_{i}_")
            kept = kept or keep
        source = "|".join(f"(?P<_{i}>{rule.master_source(prefix)})"
                          for i, (rule, prefix) in enumerate(zip(self.rules, prefixes)))
        try:
            compiled = compile_re(source)
        except re.error as exc:
            bad = next((r.name for r, prefix in zip(self.rules, prefixes) if not _compiles(r.master_source(prefix))), "?")
            raise GrammarError(
                f"{self._path}: rule '{bad}': the master pattern needs every rule in `re` "
                f"(give a rule that needs `regex` a `classify` pattern): {exc}"
            ) from None
        index = compiled.groupindex
        position = [0] * (compiled.groups + 1)
        maps = []
        for i, (rule, prefix) in enumerate(zip(self.rules, prefixes)):
            position[index[f"_{i}"]] = i
            maps.append(False if rule.classify is not None else None if not prefix else
                        {name: index[prefix + name] for name in rule.group_names()})
        self.position = position
        self.maps = maps
        return self._set(compiled)

    def _set(self, compiled: Any) -> Any:
        self._pattern = compiled
        self.match = compiled.match
        return compiled


def _compiles(source: str) -> bool:
    try:
        compile_re(source)
    except re.error:
        return False
    return True


class GrammarInfo(NamedTuple):
    """What ``codeparse grammars`` lists about a grammar.

    (A named tuple, not a frozen dataclass: creating a dataclass costs most of a
    millisecond of every process that loads a grammar.)"""

    id: str
    title: str
    path: str
    torch_versions: str
    version_records: tuple[int, ...]
    detect: str
    statements: int


class Grammar:
    """A loaded, checked and compiled grammar.

    (A plain class, not a dataclass: creating a dataclass costs about a millisecond of
    every process's start.)"""

    def __init__(self, id: str, path: Path, info: GrammarInfo, limits: dict[str, Any],
                 statements: tuple[Statement, ...], rules_by_keyword: dict[str, tuple[Statement, ...]],
                 generic_rules: tuple[Statement, ...], lines: "_LazySection", fragments: "_LazySection",
                 scan: "_LazySection", expression: "_LazySection", bracket_pairs: tuple[tuple[str, str], ...] = (),
                 string_quotes: tuple[str, ...] = (), detect_absent: tuple[Any, ...] = (),
                 detect_present: tuple[Any, ...] = (), raw: Optional[dict[str, Any]] = None,
                 text_present: tuple[Any, ...] = (), text_absent: tuple[Any, ...] = ()):
        self.id = id
        self.path = path
        self.info = info
        self.limits = limits
        self.statements = statements
        # Rules to try, in file order, for a line whose first word is the key; lines
        # whose first word is no rule's keyword try `generic_rules`.
        self.rules_by_keyword = rules_by_keyword
        self.generic_rules = generic_rules
        self.lines = lines
        self.fragments = fragments
        self.scan = scan
        self.expression = expression
        self.bracket_pairs = bracket_pairs
        # The characters a string literal begins with (`[lines].string_quotes`); none: a
        # string may be anywhere, so brackets are never paired by counting.
        self.string_quotes = string_quotes
        self.detect_absent = detect_absent
        self.detect_present = detect_present
        # What makes a file not named `.code` TorchScript text ([detect] text_present/text_absent).
        self.text_present = text_present
        self.text_absent = text_absent
        self.raw = raw if raw is not None else {}
        # Keyword (None: no keyword) -> the master of its rules, filled by `master`.
        self.masters: dict[Optional[str], Master] = {}

    def __repr__(self) -> str:
        return f"Grammar({self.id!r}, {str(self.path)!r})"

    def timeout(self) -> float:
        return float(self.limits["match_timeout"])

    def master(self, keyword: Optional[str]) -> Master:
        """The master pattern of the rules a line starting with ``keyword`` tries (compiled)."""
        found = self.masters.get(keyword)
        if found is None:
            generic = self.masters.get(None)
            if generic is None:
                generic = Master(self.generic_rules, self.path)
                generic.pattern()
                self.masters[None] = generic
            if keyword not in self.rules_by_keyword:
                return generic  # any other first word (not kept: they are many)
            found = Master(self.rules_by_keyword[keyword], self.path, generic if self.generic_rules else None)
            found.pattern()
            self.masters[keyword] = found
        return found

    def compile_all(self) -> "Grammar":
        """Compile and check every pattern now (they are otherwise compiled on first use)."""
        for rule in self.statements:
            rule.pattern
            rule.fast
            rule.shortcut
            if rule.plain is not None:
                for more in rule.repeat.values():
                    more.get()
        for keyword in (None, *self.rules_by_keyword):
            self.master(keyword).pattern()
        for section in (self.lines, self.fragments, self.scan, self.expression):
            section.compile_all()
        return self


class _Compiler:
    """Expands ``{PIECE}`` references and attaches ``(?(DEFINE)...)`` blocks."""

    def __init__(self, path: Path, pieces: dict[str, str], recursive: dict[str, str]):
        self.path = path
        self.pieces = pieces
        self.expanded: dict[str, str] = {}
        self.recursive: dict[str, str] = {}
        for name in pieces:
            self._expand_piece(name, ())
        for name, text in recursive.items():
            self.recursive[name] = self.expand(text, f"recursive '{name}'")

    def _fail(self, where: str, what: str) -> GrammarError:
        return GrammarError(f"{self.path}: {where}: {what}")

    def _expand_piece(self, name: str, stack: tuple[str, ...]) -> str:
        if name in self.expanded:
            return self.expanded[name]
        if name in stack:
            raise self._fail(f"piece {{{name}}}", "reference cycle " + " -> ".join(stack + (name,)))
        if name not in self.pieces:
            where = f"piece {{{stack[-1]}}}" if stack else "pattern"
            raise self._fail(where, f"unknown piece {{{name}}}")
        text = self.pieces[name]
        out = _PIECE_REF.sub(lambda m: self._expand_piece(m.group(1), stack + (name,)), text)
        self.expanded[name] = out
        return out

    def expand(self, text: str, where: str) -> str:
        def sub(m: Any) -> str:
            name = m.group(1)
            if name not in self.pieces:
                raise self._fail(where, f"unknown piece {{{name}}}")
            return self._expand_piece(name, ())

        return _PIECE_REF.sub(sub, text)

    def _needed(self, text: str, where: str) -> list[str]:
        """Recursive sub-patterns ``text`` calls, directly or through each other."""
        order: list[str] = []
        todo = list(_RECURSIVE_CALL.findall(text))
        while todo:
            name = todo.pop()
            if name in order:
                continue
            if name not in self.recursive:
                raise self._fail(where, f"unknown recursive sub-pattern (?&{name})")
            order.append(name)
            todo.extend(_RECURSIVE_CALL.findall(self.recursive[name]))
        return sorted(order)

    def unrolled(self, text: str, depth: int, where: str) -> str:
        """``text`` with each recursive call replaced by the sub-pattern it calls, ``depth``
        calls deep; a call deeper than that fails (``(?!)``).  ``re`` compiles the result
        when nothing else in it needs ``regex``."""
        def sub(level: int):
            def call(m: Any) -> str:
                name = m.group(1)
                if name not in self.recursive:
                    raise self._fail(where, f"unknown recursive sub-pattern (?&{name})")
                if level >= depth:
                    return "(?!)"
                return "(?:" + _RECURSIVE_CALL.sub(sub(level + 1), self.recursive[name]) + ")"
            return call

        return _RECURSIVE_CALL.sub(sub(0), text)

    def with_defines(self, text: str, where: str) -> str:
        needed = self._needed(text, where)
        if not needed:
            return text
        # Each sub-pattern is wrapped non-verbose so that a (?x) in the body pattern
        # does not change how the definitions read.
        defines = "".join(f"(?P<{n}>(?-x:{self.recursive[n]}))" for n in needed)
        return f"(?:{text})(?(DEFINE){defines})"

    def lazy(self, text: str, where: str, non_empty: bool = False) -> _Lazy:
        """Resolve every reference now; compile on first use."""
        return _Lazy(self.with_defines(self.expand(text, where), where), where, self.path, non_empty)

    def compile(self, text: str, where: str) -> Any:
        return self.lazy(text, where).get()


def _require(path: Path, data: dict[str, Any]) -> None:
    for section, keys in REQUIRED.items():
        table = data.get(section)
        if not isinstance(table, dict):
            raise GrammarError(f"{path}: missing section [{section}]")
        for key in keys:
            if key not in table:
                raise GrammarError(f"{path}: [{section}] lacks '{key}'")
    if not isinstance(data.get("statements"), list) or not data["statements"]:
        raise GrammarError(f"{path}: no [[statements]] rules")


def _first_only(source: str, names: Any) -> str:
    """``source`` with every group named in ``names`` captured at its first occurrence only
    (``re`` allows one group per name; the later ones become non-capturing)."""
    for name in names:
        head = f"(?P<{name}>"
        first = source.find(head)
        if first != -1:
            cut = first + len(head)
            source = source[:cut] + source[cut:].replace(head, "(?:")
    return source


def _compile_statements(path: Path, data: dict[str, Any], comp: _Compiler):
    end = comp.expand(data["grammar"]["statement_end"], "grammar.statement_end")
    depth = data["limits"].get("unroll_depth")
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
        raise GrammarError(f"{path}: [limits].unroll_depth: a positive integer")
    rules: list[Statement] = []
    seen: set[str] = set()
    for index, raw in enumerate(data["statements"]):
        name = raw.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise GrammarError(f"{path}: statement #{index + 1} has no valid snake_case name")
        where = f"rule '{name}'"
        if name in seen:
            raise GrammarError(f"{path}: {where}: duplicate rule name")
        seen.add(name)
        emits = raw.get("emits")
        if emits not in STATEMENT_NODES:
            raise GrammarError(f"{path}: {where}: unknown emits {emits!r}")
        if "pattern" not in raw:
            raise GrammarError(f"{path}: {where}: no pattern")
        keyword = raw.get("keyword")
        if keyword is not None and not raw["pattern"].startswith(keyword):
            raise GrammarError(f"{path}: {where}: pattern does not begin with its keyword {keyword!r}")
        source = comp.expand(f"(?:{raw['pattern']}){end}", where)
        pattern = _Lazy(comp.with_defines(source, where), where, path, non_empty=True)
        repeat = raw.get("repeat", {})
        if not isinstance(repeat, dict) or not all(isinstance(v, str) for v in repeat.values()):
            raise GrammarError(f"{path}: {where}: repeat: a table of group name to pattern")
        plain = more = None
        if depth is not None and _RECURSIVE_CALL.search(source):
            plain = _first_only(comp.unrolled(source, depth, where), repeat)
            more = {name: _Lazy(comp.unrolled(comp.expand(text, f"{where} repeat"), depth, where),
                                f"{where} repeat.{name}", path, non_empty=True)
                    for name, text in repeat.items()}
        shortcut = None
        if "shortcut" in raw:
            shortcut_source = comp.expand(f"(?:{raw['shortcut']}){end}", where + " shortcut")
            if not _compiles(shortcut_source):
                raise GrammarError(f"{path}: {where}: its shortcut does not compile with `re`")
            if set(_NAMED_GROUP.findall(shortcut_source)) != set(_NAMED_GROUP.findall(source)):
                raise GrammarError(f"{path}: {where}: its shortcut captures other groups than its pattern")
            shortcut = _Lazy(shortcut_source, f"{where} shortcut", path, non_empty=True)
        classify = None
        if "classify" in raw:
            classify = comp.with_defines(comp.expand(f"(?:{raw['classify']}){end}", where + " classify"), where)
            if not _compiles(classify):
                raise GrammarError(f"{path}: {where}: its classify pattern does not compile with `re`")
        rules.append(
            Statement(name, emits, keyword, bool(raw.get("block", False)),
                      bool(raw.get("empty_block", False)), pattern, classify, index, plain, more, shortcut)
        )
    # One match per rule, in file order (one combined alternation would be slower:
    # `regex` saves every capture group on each recursive call).
    generic = tuple(r for r in rules if r.keyword is None)
    by_keyword = {
        kw: tuple(r for r in rules if r.keyword in (kw, None))
        for kw in {r.keyword for r in rules if r.keyword}
    }
    return tuple(rules), by_keyword, generic


def load_grammar_file(path: str | Path) -> Grammar:
    """Load, check and compile every pattern of one grammar file (not cached)."""
    grammar = _load(Path(path))
    grammar.compile_all()
    return grammar


def _load(path: Path) -> Grammar:
    try:
        data = read_toml(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise GrammarError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise GrammarError(f"{path}: invalid TOML: {exc}") from None
    _require(path, data)
    pieces = data.get("patterns", {})
    for name in pieces:
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            raise GrammarError(f"{path}: piece '{name}': piece names are UPPER_SNAKE")
    comp = _Compiler(path, pieces, data.get("recursive", {}))

    def section(name: str) -> _LazySection:
        return _LazySection(
            {k: comp.lazy(v, f"{name}.{k}") for k, v in data[name].items() if isinstance(v, str)}
        )

    pairs = data["lines"].get("bracket_pairs", [])
    if not isinstance(pairs, list) or not all(isinstance(p, str) and len(p) == 2 for p in pairs):
        raise GrammarError(f"{path}: [lines].bracket_pairs: each entry is an opener and its closer")
    quotes = data["lines"].get("string_quotes", [])
    if not isinstance(quotes, list) or not all(isinstance(q, str) and len(q) == 1 for q in quotes):
        raise GrammarError(f"{path}: [lines].string_quotes: each entry is one character")

    statements, by_keyword, generic = _compile_statements(path, data, comp)
    detect = data.get("detect", {})
    meta = data["grammar"]
    info = GrammarInfo(
        id=meta["id"],
        title=meta["title"],
        path=str(path),
        torch_versions=str(meta.get("torch_versions", "")),
        version_records=tuple(meta.get("version_records", ())),
        detect=str(detect.get("description", "")),
        statements=len(statements),
    )
    return Grammar(
        id=meta["id"],
        path=path,
        info=info,
        limits=dict(data["limits"]),
        statements=statements,
        rules_by_keyword=by_keyword,
        generic_rules=generic,
        lines=section("lines"),
        bracket_pairs=tuple((p[0], p[1]) for p in pairs),
        string_quotes=tuple(quotes),
        fragments=section("fragments"),
        scan=section("scan"),
        expression=section("expression"),
        # Compiled once per process (the grammar is cached per id): `re` when it can.
        detect_absent=tuple(
            comp.lazy(p, "detect.requires_absent").get() for p in detect.get("requires_absent", ())
        ),
        detect_present=tuple(
            comp.lazy(p, "detect.requires_present").get() for p in detect.get("requires_present", ())
        ),
        raw=data,
        text_present=tuple(comp.lazy(p, "detect.text_present") for p in detect.get("text_present", ())),
        text_absent=tuple(comp.lazy(p, "detect.text_absent") for p in detect.get("text_absent", ())),
    )


def _grammar_files() -> dict[str, Path]:
    return _grammar_files_in(grammar_dir())



@functools.cache
def char_class(chars: str) -> re.Pattern:
    """The ``re`` pattern of one character among ``chars`` (brackets, separators), compiled
    once per process: the parser's and the expression reader's counting scans."""
    return re.compile("[" + re.escape(chars) + "]")

@functools.cache
def _grammar_files_in(folder: Path) -> dict[str, Path]:
    """The grammar files of a folder, read once per process (every parse detects a grammar)."""
    return {path.stem: path for path in sorted(folder.glob("torchscript-*.toml"))}


def _version_key(grammar_id: str) -> tuple:
    """Sort key of a grammar id, versions compared as numbers (``-v1.10`` after ``-v1.3``)."""
    family, _, version = grammar_id.rpartition("-v")
    parts = version.split(".")
    if not family or not all(p.isdigit() for p in parts):
        return (grammar_id, ())
    return (family, tuple(int(p) for p in parts))


def available_grammars() -> list[GrammarInfo]:
    """Every grammar shipped, newest first.

    Detection tries them in this order and takes the first whose text features
    match, so an older grammar's ``[detect]`` may leave to a newer one what that one
    takes (``torchscript-v1.0`` takes whatever ``-v1.3`` leaves of the text with an
    ``op_version_set`` header).  Versions compare as numbers, not as strings.
    """
    return [load_grammar(gid).info for gid in grammar_ids()]


def grammar_ids() -> list[str]:
    """The ids of the grammars shipped, newest first (the order of
    :func:`available_grammars`), without loading any: detection loads a grammar only
    when it gets to it, so reading today's text loads one grammar, not all."""
    return list(_ids_in(grammar_dir()))


@functools.cache
def _ids_in(folder: Path) -> tuple[str, ...]:
    """:func:`grammar_ids` of a folder, sorted once per process (every parse detects a grammar)."""
    return tuple(sorted(_grammar_files_in(folder), key=_version_key, reverse=True))


def load_grammar(grammar_id: str | None = None) -> Grammar:
    """Load and compile a grammar by id (``torchscript-v2``); cached per id."""
    return _load_by_id(grammar_id or DEFAULT_GRAMMAR)


@functools.cache
def _load_by_id(gid: str) -> Grammar:
    files = _grammar_files()
    if gid not in files:
        supported = ", ".join(sorted(files)) or "none found in " + str(grammar_dir())
        raise GrammarError(f"grammar {gid!r} is not supported; supported: {supported}")
    grammar = _load(files[gid])
    if grammar.id != gid:
        raise GrammarError(f"{files[gid]}: [grammar].id is {grammar.id!r}, expected {gid!r}")
    return grammar


def load_data_table(name: str) -> dict[str, Any]:
    """A data table of ``grammars/`` (TOML) read as a dict; a file that cannot be read or
    parsed is a :class:`GrammarError` naming it.  Callers cache what they keep."""
    path = grammar_dir() / name
    try:
        return read_toml(path)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise GrammarError(f"{path}: cannot load: {exc}") from None


@functools.cache
def load_tracediff() -> dict[str, Any]:
    """The tables of ``codeparse diff`` (``grammars/tracediff.toml``): operators a trace never
    records, trace operators that stand for script ones, operators that change their operands."""
    return load_data_table("tracediff.toml")


@functools.cache
def load_semantics() -> dict[str, Any]:
    """The meaning of names (``grammars/semantics.toml``), shared by every grammar."""
    return load_data_table("semantics.toml")

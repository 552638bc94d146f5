"""Extraction: from the statement tree to the plain data of classes and functions.

Builds, for each class and function, the plain data of :mod:`codeparse.contract.text`
(``parse_text(as_dict=True)`` returns it; the models are built from it once per file):
signatures, class declarations, ifs with their conditions, loops, self references and
calls.  In two halves, so that an archive's files can all be walked before any condition
is read (:mod:`codeparse.text.reader`):

* :meth:`Extractor.start` reads each class's declarations (``__parameters__``,
  ``__buffers__``, attribute annotations) and walks each function's statements once,
  recursing into blocks (:class:`_Walk`): every binding becomes a definition of its names
  (tuple targets split by counting brackets), every if and loop is recorded with the
  scopes that enclose it, and the function's :class:`~codeparse.infer.conditions.Inference`
  and :class:`~codeparse.infer.callees.Callee` are made.
* :meth:`Extractor.finish` scans each function body left to right for calls and attribute
  reads with one ``finditer`` of the grammar's ``[scan].references_run`` (one match per
  reference, the text between passed over inside it, strings too; no expression tree): a
  call's extent is counted from its parenthesis to the closer on its line (:func:`~codeparse.parse.statements.nesting`, the grammar's
  ``balanced`` where a string follows), a method call's receiver ``(recv).m(`` found the
  same way (the grammar's ``receiver`` where counting cannot decide).  Then each if's and
  loop's condition is answered by :mod:`codeparse.infer` (which reads the expressions it
  needs into trees, :mod:`codeparse.parse.expressions`), and roles the class does not
  declare are filled in from use.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from typing import Any, Optional

from ..contract.views import record
from ..grammar.engine import Grammar
from ..infer.callees import Callee
from ..infer.conditions import Inference
from ..infer.datadep import FunctionDataDependence
from ..infer.facts import Definition, FunctionFacts, Scope
from ..infer.memo import DEEPEST_CYCLE
from ..infer.names import dotted, unquote
from ..infer.semantics import Semantics
from ..parse.expressions import FALLBACK, ExpressionReader, split_list, structure_finder
from ..parse.source import SourceText, span_data
from ..parse.statements import Stmt, bracket_end, bracket_finder, nesting

__all__ = ["Extractor"]

_BLOCKS = ("if", "elif", "for", "while", "with", "def", "else", "class")
# What follows a receiver's closer before the method name (`(x).m(`), and what separates
# items: the grammars' `[scan].receiver` and `SEP`.
_ATTRIBUTE_DOT = "."
_SEPARATOR = ","
# A path from `self` shorter than this is kept whole by `Names.expr_path` (which gives up
# on paths of a thousand characters): the scan may hand such a path on as read.
_SHORT_PATH = 256

# The plain dicts of the models built most often, each kind sharing one key table
# (:func:`codeparse.contract.views.record`); keys in the models' field order.
_call = record("Call", ("kind", "receiver", "method", "target", "callee", "span"))
_self_ref = record("SelfRef", ("path", "role", "declared_type", "span"))
_param = record("Param", ("name", "annotation", "default", "span"))
_if = record("IfStatement", ("span", "block_span", "depth", "condition", "then_calls", "else_calls", "has_else"))
_attribute = record("ClassAttribute", ("name", "type", "final", "value", "span"))
_signature = record("Signature", ("params", "returns"))
_condition = record("Condition", ("text", "resolved", "kind", "sources", "none_check", "data_dependent_shape",
                                  "related"))
_source = record("ConditionSource", ("ref", "kind", "type"))
_function = record("Function", ("name", "qualified_name", "signature", "ifs", "loops", "self_refs", "calls",
                                "scalar_conversions", "span"))


# (grammar id, a parameter as printed) -> (name, annotation, default), or None when the
# grammar's `param` does not read it.  Signatures repeat (`self`, `x: Tensor`,
# `input: Tensor`) across the methods and files of a run, and `param` is a `regex`
# match (recursive types) that costs tens of microseconds; bounded, cleared when full.
_PARAMS: dict[tuple[str, str], Optional[tuple[str, Optional[str], Optional[str]]]] = {}
_PARAMS_MAX = 8192

# (grammar id, what, text) -> the strings a class statement's list reads to (`_strings`:
# `__parameters__`/`__buffers__`, `_split`: bases): these lines repeat across the classes
# and files of a run, and both are `regex` matches.  Bounded, cleared when full.
_LISTS: dict[tuple[str, str, str], tuple[str, ...]] = {}


def _remember(key: tuple[str, str, str], items: tuple[str, ...]) -> tuple[str, ...]:
    if len(_LISTS) >= _PARAMS_MAX:
        _LISTS.clear()
    _LISTS[key] = items
    return items


def _deeper_than(text: str, start: int, end: int, limit: int) -> Optional[int]:
    """The offset where brackets in ``text[start:end]`` nest deeper than ``limit``, or None
    (one pass; quoted text is skipped)."""
    depth = 0
    quote = ""
    i = start
    while i < end:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
            if depth > limit:
                return i
        elif ch in ")]}":
            depth -= 1
        i += 1
    return None


def _first_crowded(text: str, start: int, end: int, limit: int) -> Optional[int]:
    """The start of the first line of ``text[start:end]`` (``start`` at a line's start)
    holding more than ``limit`` of the openers :meth:`Extractor._reference_ranges` counts
    (``(`` and ``[``), or None.  A stretch holding no more than ``limit`` holds no such
    line; else it is halved at a line break and the halves asked in order (``str.count``
    reads the text, not a Python loop per line)."""
    count = text.count
    if count("(", start, end) + count("[", start, end) <= limit:
        return None
    half = text.find("\n", (start + end) // 2, end)
    if half < 0:
        half = text.rfind("\n", start, (start + end) // 2)
        if half < 0:
            return start  # one line
    found = _first_crowded(text, start, half, limit)
    if found is None:
        found = _first_crowded(text, half + 1, end, limit)
    return found


_MATCHERS: dict[int, tuple] = {}
# The groups of `[scan].references` that close last in a call, a method call's receiver
# parenthesis, an attribute chain and a `getattr` (a string closes `string`: skipped), and
# the groups the scan reads, and `references_run`'s `end` (the end of the text read, after
# which the scan stops).  A grammar without `recv` (receivers read by the pattern) asks
# `receiver` at every `paren`.
_SCAN_GROUPS = ("call_open", "attr_chain", "recv", "paren", "getattr", "receiver", "method", "callee", "attr_base",
                "getattr_obj", "getattr_name", "call", "method_call", "end")
# The scan's pattern: `[scan].references_run` (what lies between two references passed
# over inside one match), or `references` where a grammar has no `references_run` (the
# same references and groups, one match started at every character).
_SCAN_PATTERNS = ("references_run", "references")


def _matchers(grammar: Grammar) -> tuple:
    """What an :class:`Extractor` reads from its grammar, looked up once per grammar (an
    extractor is made per text): the scan's finditer (:data:`_SCAN_PATTERNS`), the string quotes,
    the bracket finder, :func:`nesting`, closers by opener, the ``param``, ``expr_items``
    and ``identifier`` full matchers, :func:`structure_finder`'s answer (brackets and
    separators: :meth:`Extractor.list_items`), the numbers of the groups of
    the scan's pattern that :meth:`Extractor._scan` dispatches on, and which statement
    rules capture a declared ``type`` (an assignment's annotation, read by the walk)."""
    found = _MATCHERS.get(id(grammar))
    if found is None or found[0] is not grammar:
        if len(_MATCHERS) >= 64:  # grammars loaded from files by tests: bounded
            _MATCHERS.clear()
        frag = grammar.fragments
        references = grammar.scan[next(name for name in _SCAN_PATTERNS if name in grammar.scan)]
        found = _MATCHERS[id(grammar)] = (grammar, (
            references.finditer, grammar.string_quotes, bracket_finder(grammar), nesting(grammar),
            dict(grammar.bracket_pairs), frag["param"].fullmatch, frag["expr_items"].fullmatch,
            structure_finder(grammar), frag["identifier"].fullmatch,
            tuple(references.groupindex.get(name, -1) for name in _SCAN_GROUPS),
            {rule: rule.captures("type") for rule in grammar.statements}))
    return found[1]


_MUTATORS: dict[int, tuple[Semantics, dict[str, bool]]] = {}
_MUTATORS_MAX = 8192


def _mutators(sem: Semantics) -> dict[str, bool]:
    """Callee as printed -> whether it is a list mutator (rule 2), shared by the extractors
    of one :class:`Semantics`: the answer is the semantics' operator table's alone, and
    the walk asks it at every assignment whose value is a call (a new file would otherwise
    ask each of its callees again).  Bounded, cleared when full."""
    found = _MUTATORS.get(id(sem))
    if found is None or found[0] is not sem:
        if len(_MUTATORS) >= 16:
            _MUTATORS.clear()
        found = _MUTATORS[id(sem)] = (sem, {})
    table = found[1]
    if len(table) >= _MUTATORS_MAX:
        table.clear()
    return table


class Extractor:
    """Turns the statements of one file into class and function data."""

    def __init__(self, source: SourceText, grammar: Grammar, sem: Semantics, module: Optional[str],
                 owner: Optional[str] = None, types=None, functions=None):
        self.source = source
        # Optional: qualified name -> Callee of the functions of other files of an archive
        # (codeparse.text.program), consulted after this file's own functions (rule 3).
        self.functions = functions
        self.callees: dict[str, Callee] = {}
        self._active: set = getattr(functions, "active", None) or set()
        # The hook's `register` (an archive's table of callees), if it has one: each
        # function is registered as it is prepared.
        self._register = getattr(functions, "register", None) if functions is not None else None
        # Optional: qualified class name -> (class kind, declared attributes) of the
        # other classes of an archive (codeparse.text.program); None outside archives.
        self.types = types
        self.owner = owner  # the class that bare method text belongs to, if known
        self.text = source.text
        self.grammar = grammar
        self.sem = sem
        self.module = module  # `__torch__.a.b` for an archive file, else None
        self.reader = ExpressionReader(source.text, grammar)
        # One object per distinct string of this file's data (callees, targets, names, types):
        # a file repeats them hundreds of times.
        pool: dict[str, str] = {}
        self._keep = pool.setdefault  # keep(s, s): the pooled string equal to s
        self.too_deep: Optional[int] = None  # offset of the first condition past the depth limit (CP113)
        self._operators: dict[str, Optional[str]] = {}  # callee as printed -> operator, for this file
        self._mutators = _mutators(sem)  # callee as printed -> is it a list mutator (rule 2)
        # callee as printed -> the scan's answer for an intrinsic (None) or an operator
        # (kind, target, callee), the same in every function of this file (_call_kind)
        self._fixed_kinds: dict[str, Optional[tuple[str, Optional[str], str]]] = {}
        # `receiver` and `balanced` are compiled when a text first needs them (`regex`
        # compiles slowly, and many texts never ask): see _scan and _call_spans.
        # `string_item` (`__parameters__` lists) is looked up when used: method text
        # has none, and compiling costs start-up.
        (self._references, self._quotes, self._brackets, self._nested, self._closers, self._param, self._items,
         self._structure, self._identifier, self._scan_groups, self._typed_rules) = _matchers(grammar)

    # -- files and classes -------------------------------------------------------
    def start(self, body: list[Stmt]) -> tuple[list[dict], list]:
        """Every function prepared (definitions, returns) before any condition is read,
        so that calls to functions later in the text, or in other files, are followed too."""
        classes, functions = [], []
        for stmt in body:
            if stmt.kind == "class":
                classes.append(self.class_def(stmt))
            elif stmt.kind == "def":
                functions.append(self._prepare(stmt, self.owner, None))
        return classes, functions

    def limit_diagnostics(self, path: str) -> list[dict]:
        """The limits met while extracting, once each: an expression nested past the
        reader's depth (CP106), a condition whose definitions cycle past the depth limit
        (CP113)."""
        if self.reader.too_deep is None and self.too_deep is None:
            return []
        from ..contract.codes import diagnostic

        out = []
        span = self.source.span
        if self.reader.too_deep is not None:
            at = self.reader.too_deep
            out.append(diagnostic("CP106", path, span(at, at + 1), limit=self.reader.max_depth))
        if self.too_deep is not None:
            out.append(diagnostic("CP113", path, span(self.too_deep, self.too_deep + 1), limit=DEEPEST_CYCLE))
        return out

    def finish(self, started: tuple[list[dict], list]) -> tuple[list[dict], list[dict]]:
        classes, functions = started
        for cls in classes:
            cls["methods"] = [self._finish(m) for m in cls["methods"]]
        return classes, [self._finish(f) for f in functions]

    def declarations(self, body: list[Stmt]) -> dict:
        """The classes (declarations only) and the function names of a file: the archive pre-pass."""
        classes, functions = [], []
        for stmt in body:
            if stmt.kind == "class":
                head = self._class_head(stmt)
                classes.append({
                    "qualified_name": head["qualified_name"], "kind": head["kind"],
                    "parameters": head["parameters"], "buffers": head["buffers"],
                    "attributes": [{"name": a["name"], "type": a["type"], "final": a["final"]}
                                   for a in head["attributes"]],
                })
                functions.extend(f"{head['qualified_name']}.{d.group('name')}" for d in head["defs"])
            elif stmt.kind == "def":
                functions.append(self._qualified(stmt, self.owner))
        return {"classes": classes, "functions": functions}

    def operator(self, callee: str) -> Optional[str]:
        """``Semantics.operator``, remembered per callee for this file (a file calls the
        same operators over and over)."""
        ops = self._operators
        found = ops.get(callee, False)
        if found is False:
            found = ops[callee] = self.sem.operator(callee)
        return found

    def lookup(self, qualified: str) -> Optional[Callee]:
        """A callee whose body is available: in this text first, then in the archive."""
        found = self.callees.get(qualified)
        if found is None and self.functions is not None:
            found = self.functions(qualified)
        return found

    def class_def(self, stmt: Stmt) -> dict:
        head = self._class_head(stmt)
        qualified, parameters, buffers, attributes = (
            head["qualified_name"], head["parameters"], head["buffers"], head["attributes"])
        declared = self._declared(parameters, buffers, attributes)
        methods = [self._prepare(d, qualified, declared) for d in head["defs"]]
        return {
            "name": head["name"],
            "qualified_name": qualified,
            "kind": head["kind"],
            "bases": head["bases"],
            "parameters": parameters,
            "buffers": buffers,
            "attributes": attributes,
            "methods": methods,
            "span": self.source.span(stmt.start, stmt.block_end),
        }

    def _class_head(self, stmt: Stmt) -> dict:
        """Name, kind, bases and declarations of a class statement, and its ``def`` children."""
        name = stmt.group("name")
        qualified = f"{self.module}.{name}" if self.module else name
        bases = self._split(stmt.span_of("bases")) if stmt.group("bases") else []
        kind = "class"
        for base in bases:
            if base in self.sem.class_kinds:
                kind = self.sem.class_kinds[base]
                break
        parameters: list[str] = []
        buffers: list[str] = []
        attributes: list[dict] = []
        defs: list[Stmt] = []
        keep = self._keep
        span = self.source.span
        for child in stmt.body:
            k = child.kind
            if k == "def":
                defs.append(child)
                continue
            # Groups read without a call: `raw.group(name if numbers is None else numbers[name])`.
            raw, numbers = child.raw, child.numbers
            if k == "parameters_decl" or k == "buffers_decl":
                names = self._strings(raw.span("names" if numbers is None else numbers["names"]))
                if k == "parameters_decl":
                    parameters = names
                else:
                    buffers = names
                continue
            if k == "attribute_decl" or k == "final_decl" or k == "annotation_decl":
                if numbers is None:
                    raw_name, typ = raw.group("name", "type")
                else:
                    raw_name, typ = raw.group(numbers["name"]), raw.group(numbers["type"])
                value = None
                if k == "final_decl":
                    value = raw.group("value" if numbers is None else numbers["value"])
                elif k == "annotation_decl":
                    raw_name = unquote(raw_name)
                final = k == "final_decl"
                typ = typ if typ is None else keep(typ, typ)
            elif k == "assign":  # enum members, `RED = 1`
                if numbers is None:
                    raw_name, value = raw.group("targets", "value")
                else:
                    raw_name, value = raw.group(numbers["targets"]), raw.group(numbers["value"])
                typ = child.group("type") if child.rule.captures("type") else None
                final = False
            else:
                continue
            attributes.append(_attribute(raw_name, typ, final, value, span(child.start, child.end)))
        return {"name": name, "qualified_name": qualified, "kind": kind, "bases": bases,
                "parameters": parameters, "buffers": buffers, "attributes": attributes, "defs": defs}

    def _declared(self, parameters, buffers, attributes) -> dict[str, tuple[str, Optional[str]]]:
        """Role and type of every attribute the class declares."""
        params, bufs = set(parameters), set(buffers)
        out: dict[str, tuple[str, Optional[str]]] = {}
        for attr in attributes:
            name, typ = attr["name"], attr["type"]
            if name in params:
                role = "parameter"
            elif name in bufs:
                role = "buffer"
            elif attr["final"]:
                role = "constant"
            elif typ and typ.startswith(self.sem.custom_classes):
                role = "attribute"  # a C++ custom class object (`torch.classes.ns.Cls`), not a module
            elif typ and typ.startswith(self.sem.root + "."):
                role = "submodule"
            else:
                role = "attribute"
            out[name] = (role, typ)
        for name in params | bufs:
            out.setdefault(name, ("parameter" if name in params else "buffer", None))
        if self.types is not None:  # an attribute typed with a non-module class is no submodule
            for name, (role, typ) in out.items():
                found = self.types(typ) if role == "submodule" and typ else None
                if found is not None and found[0] != "module":
                    out[name] = ("attribute", typ)
        return out

    def _attribute_types(self, qualified: str):
        found = self.types(qualified)
        return found[1] if found is not None else None

    def _strings(self, span: tuple[int, int]) -> list[str]:
        """The strings of a ``__parameters__``/``__buffers__`` list (a new list each time)."""
        key = (self.grammar.id, "strings", self.text[span[0]:span[1]])
        found = _LISTS.get(key)
        if found is None:
            pattern = self.grammar.fragments["string_item"]
            found = _remember(key, tuple(unquote(m.group("item")) for m in pattern.finditer(self.text, *span)))
        return list(found)

    def list_items(self, start: int, end: int) -> Optional[list[tuple[int, int]]]:
        """The item spans of a comma-separated list (``a, b``), as a full match of the
        grammar's ``expr_items`` gives them, or None where it does not match.  Text without
        quotes or line breaks is split by counting brackets (:func:`split_list`)."""
        text = self.text
        structure = self._structure
        if structure is not None and text.find("\n", start, end) == -1:
            finder, openers, quotes = structure
            for quote in quotes:
                if text.find(quote, start, end) != -1:
                    break
            else:
                found = split_list(text, start, end, finder, openers)
                if found is not FALLBACK:
                    return found
        m = self._items(text, start, end)
        return m.spans("item") if m is not None else None

    def _split(self, span: tuple[int, int]) -> list[str]:
        """The items of a comma-separated list as the grammar's ``expr_items`` captures
        them, or the whole text where it does not match (a new list each time)."""
        text = self.text[span[0]:span[1]]
        key = (self.grammar.id, "items", text)
        found = _LISTS.get(key)
        if found is None:
            m = self._items(self.text, *span)
            found = _remember(key, (text,) if m is None else tuple(m.captures("item")))
        return list(found)

    # -- functions -----------------------------------------------------------------
    def function(self, stmt: Stmt, owner: Optional[str], declared) -> dict:
        return self._finish(self._prepare(stmt, owner, declared))

    def _qualified(self, stmt: Stmt, owner: Optional[str]) -> str:
        """The qualified name :meth:`_prepare` gives a ``def`` (without walking its body)."""
        name = stmt.group("name")
        if owner:
            return f"{owner}.{name}"
        if self.module:
            return f"{self.module}.{name}"
        spans = stmt.match.spans("param")
        if spans:
            p = self._param(self.text, *spans[0])
            if p and p.group("name") == self.sem.self_name and p.group("annotation"):
                return f"{p.group('annotation')}.{name}"
        return name

    def _prepare(self, stmt: Stmt, owner: Optional[str], declared):
        text = self.text
        src = self.source
        keep = self._keep
        signature = stmt.match  # the def's name, its parameters (every capture) and return type
        name = signature.group("name")
        returns = signature.group("returns")
        params = []
        annotations: dict[str, Optional[str]] = {}
        gid = self.grammar.id
        for start, end in signature.spans("param"):
            key = (gid, text[start:end])
            read = _PARAMS.get(key, False)
            if read is False:
                p = self._param(text, start, end)
                read = (p.group("name"), p.group("annotation"), p.group("default")) if p else None
                if len(_PARAMS) >= _PARAMS_MAX:
                    _PARAMS.clear()
                _PARAMS[key] = read
            if read is None:
                pname, ann, default = key[1], None, None
            else:
                pname, ann, default = read
            params.append(_param(keep(pname, pname), ann if ann is None else keep(ann, ann), default,
                                 src.span(start, end)))
            annotations[pname] = ann
        self_type = params[0]["annotation"] if params and params[0]["name"] == self.sem.self_name else None
        if owner:
            qualified = f"{owner}.{name}"
        elif self.module:
            qualified = f"{self.module}.{name}"
        elif self_type:
            qualified = f"{self_type}.{name}"
        else:
            qualified = name

        class_owner = owner or self_type or (qualified.rpartition(".")[0] if "." in qualified else None)
        facts = FunctionFacts(params=annotations, declared=declared, self_name=self.sem.self_name,
                              types=self._attribute_types if self.types is not None else None,
                              owner=class_owner if params and params[0]["name"] == self.sem.self_name else None,
                              functions=self.lookup, active=self._active)
        defs = facts.defs
        at = stmt.start
        for pname, ann in annotations.items():
            d = _new(Definition)  # Definition(pname, "param", None, None, (), ann, at)
            d.name = pname
            d.kind = "param"
            d.value = d.element = None
            d.scopes = ()
            d.annotation = ann
            d.start = at
            defs[pname] = [d]  # a parameter's name is its own (annotations' keys are unique)
        walk = _Walk(self, facts, text.find(_NEW, stmt.start, stmt.block_end) != -1)
        walk.block(stmt.body, 0, ())
        inference = Inference(text, self.reader, facts, self.sem)
        callee = Callee(qualified, inference, [(p["name"], p["default"] is not None) for p in params], returns,
                        self._active)
        self.callees.setdefault(qualified, callee)
        if self._register is not None:
            self._register(qualified, callee)
        return stmt, name, qualified, params, facts, walk, inference, declared, returns

    def _finish(self, state) -> dict:
        stmt, name, qualified, params, facts, walk, inference, declared, returns = state
        src = self.source

        body_start = stmt.body[0].start if stmt.body else stmt.end
        calls, self_refs, receivers = self._scan(body_start, stmt.block_end, inference, walk.target_spans)
        dd = FunctionDataDependence(inference)
        ifs = []
        if walk.ifs:
            # The calls of a block: those from its first statement's start to its last
            # statement's block end (a block's statements are in text order, each one's
            # block ending before the next starts).
            starts = [c["span"]["start"] for c in calls]
            for if_stmt, depth, scopes in walk.ifs:
                body, orelse = if_stmt.body, if_stmt.orelse
                ifs.append(_if(
                    src.span(if_stmt.start, if_stmt.end),
                    src.span(if_stmt.start, if_stmt.block_end),
                    depth,
                    self._condition(inference, dd, if_stmt.span_of("test"), scopes),
                    calls[bisect_left(starts, body[0].start):bisect_left(starts, body[-1].block_end)] if body else [],
                    calls[bisect_left(starts, orelse[0].start):bisect_left(starts, orelse[-1].block_end)]
                    if orelse else [],
                    if_stmt.else_stmt is not None,
                ))
        for loop, (test, scopes) in zip(walk.loops, walk.loop_tests):
            loop["condition"] = self._condition(inference, dd, test, scopes)
        conversions = [src.span(*s) for s in dd.conversions(calls)]
        if self_refs:  # (without references there is no role to fill)
            self._fill_roles(self_refs, receivers, declared, ifs)
        return _function(name, qualified, _signature(params, returns), ifs, walk.loops, self_refs,
                         calls, conversions, src.span(stmt.start, stmt.block_end))

    def _condition(self, inference: Inference, dd: FunctionDataDependence, test: tuple[int, int], scopes) -> dict:
        """``inference.condition`` plus the data-dependence fields of :mod:`codeparse.infer.datadep`."""
        cond = inference.condition(test, scopes)
        if "too_deep" in cond and self.too_deep is None:
            self.too_deep = test[0]
        related = None
        kind = cond["kind"]
        if kind == "tensor_shape":
            related = dd.shape(inference.tree(test))
        elif kind == "tensor_value":
            related = dd.value_conversions(inference.tree(test))
        keep = self._keep
        sources = []
        for s in cond["sources"]:
            o = _new(_SOURCE_CLASS)  # _source(ref, kind, type), inline
            ref, typ = s["ref"], s["type"]
            o.ref = keep(ref, ref)
            o.kind = s["kind"]
            o.type = keep(typ, typ)
            sources.append(o.__dict__)
        return _condition(
            cond["text"], cond["resolved"], kind, sources,
            cond["none_check"], kind == "tensor_shape" and related is not None,
            [self.source.span(*s) for s in sorted(related)
             if not test[0] <= s[0] < test[1]] if related else [])

    def _reference_ranges(self, start: int, end: int):
        """The stretches of ``text[start:end]`` the reference scan reads: lines nested
        deeper than the expression limit left out (and reported once, CP106): on them the
        scan's look-aheads would match from every bracket to the end of the nesting
        (quadratic, 9 s for a 4 KB line of 2,000 parentheses); finding them is one linear
        pass.  A stretch is given when the scan asks for it (after the stretches before it
        are read), so the limit is reported in the order the text is read."""
        text = self.text
        if text.count("(", start, end) + text.count("[", start, end) <= self.reader.max_depth:
            return ((start, end),)  # no line can nest deeper
        return self._reference_ranges_lines(start, end)

    def _reference_ranges_lines(self, start: int, end: int):
        """:meth:`_reference_ranges` line by line: :func:`_first_crowded` finds the next
        line with more openers than the limit (only such a line can nest deeper)."""
        text = self.text
        limit = self.reader.max_depth
        pos = start
        while pos < end:
            if pos == start:  # the first line, from the body's first statement on
                line_start = pos
                line_end = text.find("\n", pos, end)
                line_end = end if line_end == -1 else line_end
                if text.count("(", pos, line_end) + text.count("[", pos, line_end) <= limit:
                    pos = line_end + 1
                    continue
            else:
                line_start = _first_crowded(text, pos, end, limit)
                if line_start is None:
                    break
                line_end = text.find("\n", line_start, end)
                line_end = end if line_end == -1 else line_end
            deep = _deeper_than(text, line_start, line_end, limit)
            if deep is not None:
                if line_start > start:
                    yield start, line_start
                if self.reader.too_deep is None:
                    self.reader.too_deep = deep
                start = line_end
            pos = line_end + 1
        if start < end:
            yield start, end

    def _scan(self, start: int, end: int, inference: Inference, targets: list[tuple[int, int]]):
        """Calls and self references in ``text[start:end]``, in textual order.

        One ``re`` pass of ``[scan].references_run``, dispatched on the number of the group
        that closed last (a reference's start read from its groups).  At a parenthesis that may start a receiver, ``(recv).m(``,
        brackets are counted on its line (:meth:`_receiver_finder`).  A call's span comes
        from :meth:`_call_spans`.  What a function repeats is answered once: a callee's
        kind and target, a receiver's path, a path's declared role and type.

        A receiver named by a local bound once to ``getattr(obj, "name")`` (the printer's
        ``_0 = getattr(self.layers, "0")``) takes the path the scan read from that
        ``getattr`` on the definition's line (what the path of its value is, without
        reading the value into a tree)."""
        text = self.text
        calls: list[dict] = []
        refs: list[dict] = []
        receivers: set[str] = set()
        keep = self._keep  # the string pool: keep(s, s)
        receiver_at = None
        dot_after = -1
        call_span = None  # made when a call first needs it (most calls' extents are read by the pattern)
        declared = inference.declared
        name_path = inference.name_path
        line_starts = self.source.line_starts
        target_starts = sorted(targets)
        find = text.find
        (call_g, attr_g, recv_g, paren_g, getattr_g, receiver_g, method_g, callee_g, base_g, obj_g,
         name_g, extent_g, method_extent_g, end_g) = self._scan_groups
        # A call whose extent the pattern read (`call`, `method_call`) is on one line: its
        # span comes from the line index.  Once a receiver spans lines, every call asks
        # call_span (which remembers each line's answer from the first call that asks).
        spanned = extent_g < 0 or method_extent_g < 0
        # Callee text -> (kind, target, callee), interned, or None (an intrinsic: no call),
        # within this function: the answer depends on the text alone (an operator's by
        # its name, `Inference.callee_target` reads its dotted name).
        call_kinds: dict[str, Optional[tuple[str, Optional[str], str]]] = {}
        # `(recv).method` -> (kind, receiver's path, method, itself), interned.
        method_calls: dict[str, tuple[str, Optional[str], str, str]] = {}
        getattr_paths = inference.names.getattr_paths  # span of `getattr(obj, "n")` -> its path
        ref_data: dict[str, tuple[str, str, Optional[str]]] = {}  # path -> (path, role, type), interned

        references = self._references
        identifier, single_def, self_name = self._identifier, inference.single_def, self.sem.self_name
        fixed_kinds = self._fixed_kinds
        # Records made inline (see codeparse.contract.views.record): each field set in order.
        new, span_class, call_class, ref_class = _new, span_data.cls, _call.cls, _self_ref.cls
        for stretch in self._reference_ranges(start, end):
            for m in references(text, *stretch):
                group = m.lastindex
                if group == call_g:
                    at, open_pos = m.span(callee_g)  # the call's parenthesis follows its callee
                    callee = text[at:open_pos]
                    found = call_kinds.get(callee, False)
                    if found is False:
                        found = fixed_kinds.get(callee, False)  # an intrinsic or an operator: the file's answer
                        if found is False:
                            found = self._call_kind(inference, callee, (at, open_pos))
                        call_kinds[callee] = found
                    if found is None:
                        continue
                    close = -1 if spanned else m.end(extent_g)
                elif group == recv_g or group == paren_g:
                    at = m.start(group)
                    close = -1
                    if group == recv_g:
                        rs, re_ = m.span(receiver_g)
                        method_start, open_pos = m.span(method_g)
                        if not spanned:
                            close = m.end(method_extent_g)
                    else:
                        if dot_after < at:  # a receiver is followed by `).`: the next one, if any
                            dot_after = find(").", at, end)
                            if dot_after < 0:
                                dot_after = end
                        if dot_after == end:
                            continue
                        if receiver_at is None:
                            receiver_at = self._receiver_finder(end)
                        r = receiver_at(at)
                        if r is None:
                            continue
                        rs, re_, method_start, open_pos = r
                        if not spanned and find("\n", at, open_pos) != -1:
                            spanned = True
                    callee = text[at:open_pos]  # `(recv).method`
                    found = method_calls.get(callee)
                    if found is None:  # the same text reads the same path within a function
                        method = text[method_start:open_pos]
                        # The call's kind and its receiver's path (interned): a receiver that
                        # is one name takes the path the scan read on its definition's line
                        # when that is a getattr, else the name's path; a path from self is a
                        # submodule unless declared otherwise (it joins `receivers`).
                        if identifier(text, rs, re_):
                            name = text[rs:re_]
                            d = single_def(name)
                            path = getattr_paths.get(d.value, False) if d is not None and d.element is None else False
                            if path is False:
                                path = name_path(name)
                        else:
                            path = inference.expr_path(inference.tree((rs, re_)))
                        if path == self_name:
                            kind = "self_method"
                        elif path is not None:
                            receivers.add(path)
                            kind = "method" if declared(path)[0] in _NOT_SUBMODULES else "submodule"
                            path = keep(path, path)
                        else:
                            kind = "method"
                        found = method_calls[callee] = (kind, path, keep(method, method), keep(callee, callee))
                elif group == attr_g or group == getattr_g:
                    if group == attr_g:
                        at = m.start(base_g)
                        if target_starts:
                            i = bisect_left(target_starts, (at + 1,)) - 1
                            if i >= 0 and target_starts[i][0] <= at < target_starts[i][1]:
                                continue
                        base = name_path(m.group(base_g))
                        if not base:
                            continue
                        pos = m.end(base_g)
                        chain = m.group(attr_g)[1:].split(".")
                    else:
                        # `getattr(layer1, "0")`, or with a dotted object: `getattr(self.first_layer, "8000")`.
                        at = m.start(obj_g)
                        head, *chain = m.group(obj_g).split(".")
                        base = name_path(head)
                        if not base:
                            continue
                        pos = at + len(head)
                        chain.append(None)  # then the getattr's own reference, over its whole span
                    line = bisect_right(line_starts, at)  # a reference is on one line
                    before = line_starts[line - 1] - 1
                    # One reference per attribute of the chain, each from `at` (self._ref(...) inline).
                    for attr in chain:
                        if attr is None:
                            path = f"{base}.{unquote(m.group(name_g))}"
                            ref_start, ref_end = span = m.span(getattr_g)
                            if len(path) < _SHORT_PATH:
                                getattr_paths[span] = path
                        else:
                            base = path = f"{base}.{attr}"
                            pos += 1 + len(attr)
                            ref_start, ref_end = at, pos
                        found = ref_data.get(path)
                        if found is None:
                            found = self._ref_data(ref_data, declared, path)
                        where = span_data(ref_start, ref_end, line, ref_start - before, line, ref_end - before)
                        o = new(ref_class)  # _self_ref(path, role, type, where) inline
                        o.path, o.role, o.declared_type = found
                        o.span = where
                        refs.append(o.__dict__)
                    continue
                else:  # a string (`references`), or text passed over (`skip`, `end`)
                    if group == end_g:  # the stretch's end: only `end` again could follow
                        break
                    continue
                # A call, `callee(` or `(recv).method(`, from `at` to the closer of its
                # parenthesis at `open_pos`: `close` when the pattern read it (on one line).
                if close < 0:
                    if call_span is None:
                        call_span = self._call_spans(end)
                    where = call_span(at, open_pos)
                else:  # span_data(at, close, line, column, line, end column), inline
                    line = bisect_right(line_starts, at)
                    line_start = line_starts[line - 1] - 1
                    o = new(span_class)
                    o.start = at
                    o.end = close
                    o.line = line
                    o.column = at - line_start
                    o.end_line = line
                    o.end_column = close - line_start
                    where = o.__dict__
                o = new(call_class)  # _call(kind, receiver, method, target, callee, where), inline
                o.kind = found[0]
                if group == call_g:
                    o.receiver = o.method = None
                    o.target = found[1]
                    o.callee = found[2]
                else:
                    o.receiver = found[1]
                    o.method = found[2]
                    o.target = None
                    o.callee = found[3]
                o.span = where
                calls.append(o.__dict__)
        return calls, refs, receivers

    def _ref_data(self, ref_data: dict, declared, path: str) -> tuple[str, str, Optional[str]]:
        """(path, role, type) of a path the function has not answered yet, interned and kept
        in ``ref_data``."""
        keep = self._keep
        role, typ = declared(path)
        found = ref_data[path] = (keep(path, path), role or "unknown", typ if typ is None else keep(typ, typ))
        return found

    def _call_kind(self, inference: Inference, callee: str,
                   span: tuple[int, int]) -> Optional[tuple[str, Optional[str], str]]:
        """A callee's (kind, target, callee), interned, or None (an intrinsic: no call)."""
        if callee in self.sem.intrinsics:
            self._fixed_kinds[callee] = None
            return None
        keep = self._keep
        op = self.operator(callee)
        if op is not None:  # the same answer in every function of the file
            found = self._fixed_kinds[callee] = ("operator", keep(op, op), keep(callee, callee))
            return found
        kind, target = inference.callee_target(inference.tree(span))
        if kind == "intrinsic":
            return None
        return kind, target if target is None else keep(target, target), keep(callee, callee)

    def _receiver_finder(self, end: int):
        """``receiver(at)``: the spans of the receiver and the method name of a method call
        ``(recv).method(`` whose parenthesis opens at ``at`` (the method's parenthesis opens
        where the name ends), or None: what the grammar's ``[scan].receiver`` matches there
        (it reads up to ``end``).

        Where the parenthesis closes on its line, with no quote, separator or deeper
        nesting inside, brackets pair up by one ``re`` match of :func:`nesting` and the
        answer follows from the characters after the closer (the receiver is then the
        whole inside, an item ending at that closer); elsewhere ``receiver`` (a ``regex``
        pattern, several times slower) is matched."""
        text = self.text
        nested, quotes, closers = self._nested, self._quotes, self._closers
        identifier = self.grammar.fragments["identifier"].match
        find = text.find
        regex_receiver = None
        separator = _SEPARATOR
        counted = bool(quotes)

        def receiver(at: int) -> Optional[tuple[int, int, int, int]]:
            nonlocal regex_receiver
            if counted:
                line_end = find("\n", at, end)
                if line_end < 0:
                    line_end = end
                close = nested(text, at + 1, line_end).end()
                if close < line_end and text[close] == closers.get(text[at]) \
                        and all(find(q, at, close) < 0 for q in quotes):
                    dot = close + 1
                    # Whatever the inside holds, `receiver` ends its item at this closer
                    # or before it (at a separator): without a `.` after it, no method call.
                    if close == at + 1 or dot >= end or text[dot] != _ATTRIBUTE_DOT:
                        return None
                    if find(separator, at, close) < 0:
                        name = identifier(text, dot + 1, end)
                        if name is None:
                            return None
                        method_end = name.end()
                        if method_end >= end or text[method_end] != text[at]:  # opens as the receiver did
                            return None
                        return at + 1, close, dot + 1, method_end
            if regex_receiver is None:
                regex_receiver = self.grammar.scan["receiver"].match
            r = regex_receiver(text, at, end)
            if r is None:
                return None
            return (*r.span("receiver"), *r.span("method"))

        return receiver

    def _call_spans(self, end: int):
        """``call_span(start, open_pos)``: the span from ``start`` to the end of the call
        whose parenthesis opens at ``open_pos``, both on one line.  The call ends on its
        line and before ``end`` (a call in a body never spans lines, only a signature
        does, and an unclosed one must not scan the rest of the body); one past its
        parenthesis when its brackets do not nest.

        Where the rest of the line holds no quote character, brackets pair up by counting
        (:func:`codeparse.parse.statements.bracket_end`), most often answered by one ``re`` match
        of :func:`codeparse.parse.statements.nesting` from just past the parenthesis; else the
        grammar's ``balanced_line`` (``re``; brackets nested shallow) or ``balanced`` pattern
        reads the call (strings may hold brackets).  Line, column and where the line's last
        quote is are found once per line."""
        text = self.text
        scan = self.grammar.scan
        brackets, closers, nested, quotes = self._brackets, self._closers, self._nested, self._quotes
        find, rfind = text.find, text.rfind
        starts = self.source.line_starts
        lines: dict[int, tuple[int, int, int]] = {}  # line end -> (line number, line start, counted from)
        # `balanced` in `re` where brackets nest shallow (it reads the same group there).
        shallow = scan["balanced_line"].match if "balanced_line" in scan else None

        def call_span(start: int, open_pos: int) -> dict:
            stop = find("\n", open_pos, end)
            if stop < 0:
                stop = end
            line = lines.get(stop)
            if line is None:
                number = bisect_right(starts, start)
                line_start = starts[number - 1]
                # Past the line's last quote character, brackets are counted (a grammar
                # without `string_quotes` may hold a string anywhere: never counted).
                counted = stop + 1
                if brackets is not None and quotes:
                    counted = line_start
                    for q in quotes:
                        at = rfind(q, line_start, stop) + 1
                        if at > counted:
                            counted = at
                line = lines[stop] = (number, line_start, counted)
            number, line_start, counted = line
            if open_pos >= counted:
                # The brackets after the parenthesis pair up to its closer, most often.
                close = nested(text, open_pos + 1, stop).end()
                if close < stop and text[close] == closers.get(text[open_pos]):
                    close += 1
                else:
                    close = bracket_end(text, open_pos, stop, closers, brackets)
                    if close is None:
                        close = open_pos + 1
            else:
                b = shallow(text, open_pos, stop) if shallow is not None else None
                if b is None:
                    b = scan["balanced"].match(text, open_pos, stop)
                close = b.end() if b else open_pos + 1
            return span_data(start, close, number, start - line_start + 1, number, close - line_start + 1)

        return call_span

    def _fill_roles(self, refs: list[dict], receivers: set[str], declared, ifs: list[dict]) -> None:
        """Roles the class does not declare, inferred from use.

        A path called like a module, or one whose own attributes are submodules, is a
        submodule; without declarations, a path a condition reads is an attribute.
        """
        for ref in refs:
            if ref["role"] == "unknown":
                break
        else:  # every role declared (most methods of a class): nothing to fill
            return
        paths = {ref["path"] for ref in refs}
        parents = {p.rsplit(".", 1)[0] for p in paths | receivers if p.count(".") > 1}
        read_by_conditions = {
            s["ref"] for if_ in ifs for s in if_["condition"]["sources"]
            if s["ref"].startswith(self.sem.self_name + ".")
        }
        for ref in refs:
            if ref["role"] != "unknown":
                continue
            path = ref["path"]
            if path in receivers or path in parents:
                ref["role"] = "submodule"
            elif declared is None and path in read_by_conditions:
                ref["role"] = "attribute"

    def release(self) -> None:
        """Free this file's functions without the cyclic collector: each one's inference
        drops its back-links (:meth:`~codeparse.infer.conditions.Inference.release`), and
        the callee table, which their facts reached through :meth:`lookup`, is emptied.
        Only once every function is finished and no other file can call into them."""
        for callee in self.callees.values():
            callee.inference.release()
        self.callees.clear()


_NOT_SUBMODULES = ("attribute", "parameter", "buffer", "constant")  # roles of a receiver that is no submodule
_SOURCE_CLASS = _source.cls  # _source records made inline (see views.record)
_NEW = ".__new__("  # `obj = T.__new__(T)`: an object built in the code (its `__init__` call follows)
# The walk makes a Definition of every binding (tens of thousands a corpus pass), the
# most frequent (a one-name assignment) without its constructor call: `_new(Definition)`
# and every field set (tests/test_walk_definitions checks them against the dataclass's fields).
_new = object.__new__
_INIT = "__init__"


class _Walk:
    """One pass over a function body: definitions, ifs, loops, assignment targets."""

    def __init__(self, ex: Extractor, facts: FunctionFacts, builds: bool = True):
        self.ex = ex
        self.builds = builds  # whether the body may build an object (holds `.__new__(`)
        self.facts = facts
        self.text = ex.text
        self._identifier = ex._identifier
        self.ifs: list[tuple[Stmt, int, tuple[Scope, ...]]] = []
        self.loops: list[dict] = []
        self.loop_tests: list[tuple[tuple[int, int], tuple[Scope, ...]]] = []  # test span, enclosing scopes
        # Targets that are not one name (`a, b`, `self.x`): the scan reads no attribute
        # chain inside them (one name holds no chain).
        self.target_spans: list[tuple[int, int]] = []
        self.objects: set[str] = set()  # names bound to an object built in the code (`T.__new__(T)`)

    def bind(self, span: tuple[int, int], kind: str, value, scopes, start: int, annotation=None) -> None:
        text = self.text
        if self._identifier(text, *span):  # one name, as most targets are
            name = text[span[0]:span[1]]
            found = self.facts.defs.get(name)
            d = Definition(name, kind, value, None, scopes, annotation, start)
            if found is None:
                self.facts.defs[name] = [d]
            else:
                found.append(d)
            return
        self.target_spans.append(span)
        ex = self.ex
        items = ex.list_items(*span)
        if items is None:
            items = [span]
        many = len(items) > 1
        values: list = []
        if many and value is not None and kind == "assign" and text.count(_SEPARATOR, *value) >= len(items) - 1:
            # `a, b = x, y` binds each name to its own element (a value with fewer commas
            # than the items less one is no list of as many items).
            values = ex.list_items(*value) or []
            if len(values) != len(items):
                values = []
        identifier = self._identifier
        defs = self.facts.defs
        for index, (s, e) in enumerate(items):
            if identifier(text, s, e):
                name = text[s:e]
                d = _new(Definition)  # Definition(name, kind, bound, element, scopes, annotation, start)
                d.name = name
                d.kind = kind
                if values:
                    d.value, d.element = values[index], None
                else:
                    d.value, d.element = value, (index if many else None)
                d.scopes = scopes
                d.annotation = annotation
                d.start = start
                found = defs.get(name)
                if found is None:
                    defs[name] = [d]
                else:
                    found.append(d)

    def mutation(self, span: tuple[int, int], scopes, start: int) -> None:
        """``torch.append(l, v)``: a definition of ``l`` (rule 2)."""
        text = self.text
        if self.objects and text.startswith("(", span[0]) and self.method_call(span, scopes, start):
            return
        paren = text.find("(", span[0], span[1])
        if paren == -1:
            return
        ex = self.ex
        callee = text[span[0]:paren]
        mutates = ex._mutators.get(callee)
        if mutates is None:
            op = ex.operator(callee)
            mutates = ex._mutators[callee] = op is not None and op.rpartition(":")[2] in ex.sem.mutators
        if not mutates:
            return
        from ..parse.expressions import CallExpr, Name

        node = ex.reader.read(*span)
        if isinstance(node, CallExpr) and node.args and isinstance(node.args[0], Name):
            name = node.args[0].id
            if name in self.facts.defs:
                self.facts.defs[name].append(Definition(name, "mutate", span, None, scopes, None, start))

    def method_call(self, span: tuple[int, int], scopes, start: int) -> bool:
        """``(obj).__init__(a, b)`` or ``(obj).m(a)`` on an object built in the code: a
        definition of ``obj`` (``init``; ``call``, which inference keeps only when the
        method may set an attribute of its object).  False when ``span`` is no such call."""
        text = self.text
        close = text.find(")", span[0], span[1])
        name = text[span[0] + 1:close] if close != -1 else None
        if name not in self.objects:
            return False
        from ..parse.expressions import Attr, CallExpr, Name

        node = self.ex.reader.read(*span)
        if not (isinstance(node, CallExpr) and isinstance(node.func, Attr) and isinstance(node.func.value, Name)):
            return False
        kind = "init" if node.func.attr == _INIT else "call"
        self.facts.defs[name].append(Definition(name, kind, span, None, scopes, None, start))
        return True

    def attribute_set(self, targets: tuple[int, int], value: tuple[int, int], scopes, start: int) -> None:
        """``obj.attr = v``: a definition of the object ``obj`` a local holds (one built in
        the code, a function's result, an ``unchecked_cast`` of an Optional one; never a
        parameter or ``self``), by ``v``; ``self.attr = v`` marks the function as one that
        sets an attribute of its object.  A local that stands for a path from ``self``
        keeps its path (:meth:`~codeparse.infer.names.Names.name_path`).  ``self.attr = v`` is
        also recorded under its path (``FunctionFacts.self_sets``): a later read holds ``v``."""
        from ..parse.expressions import Attr, Name

        node = self.ex.reader.read(*targets)
        if isinstance(node, Attr) and isinstance(node.value, Name):
            name = node.value.id
            defs = self.facts.defs.get(name)
            if name == self.facts.self_name:
                self.facts.sets_self = True
                path = f"{name}.{node.attr}"
                self.facts.self_sets.setdefault(path, []).append(
                    Definition(path, "setattr", value, None, scopes, None, start))
            elif defs and all(d.kind != "param" for d in defs):
                defs.append(Definition(name, "setattr", value, None, scopes, None, start))

    def block(self, stmts: list[Stmt], depth: int, scopes: tuple[Scope, ...]) -> None:
        typed = self.ex._typed_rules
        text = self.text
        identifier = self._identifier
        defs = self.facts.defs
        mutators = self.ex._mutators
        find = text.find
        builds = self.builds
        new = _new
        for s in stmts:
            k = s.kind
            if k == "assign":
                raw, numbers = s.raw, s.numbers  # span_of() and group() inline
                start = s.start
                if numbers is None:
                    value, target = raw.span("value"), raw.span("targets")
                else:
                    value, target = raw.span(numbers["value"]), raw.span(numbers["targets"])
                has_type = typed[s.rule]  # does its rule capture a declared type?
                annotation = raw.group("type" if numbers is None else numbers["type"]) if has_type else None
                t0, t1 = target
                v0, v1 = value
                # mutation(), unless the value calls a callee known to mutate nothing (a
                # receiver's parenthesis, `(x).m(`, names no callee: only a method call on
                # an object built in the code may define one)
                paren = find("(", v0, v1)
                mutates = paren != -1 and (mutators.get(text[v0:paren]) is not False or (paren == v0 and self.objects))
                if identifier(text, t0, t1):  # one name, as most targets are: bind() inline
                    name = text[t0:t1]
                    d = new(Definition)  # Definition(name, "assign", value, None, scopes, annotation, start)
                    d.name = name
                    d.kind = "assign"
                    d.value = value
                    d.element = None
                    d.scopes = scopes
                    d.annotation = annotation
                    d.start = start
                    found = defs.get(name)
                    if found is None:
                        defs[name] = [d]
                    else:
                        found.append(d)
                    if mutates:
                        self.mutation(value, scopes, start)
                    if builds and find(_NEW, v0, v1) != -1:
                        self.objects.add(name)
                else:
                    self.bind(target, "assign", value, scopes, start, annotation)
                    if mutates:
                        self.mutation(value, scopes, start)
                    if find(".", t0, t1) != -1:
                        self.attribute_set(target, value, scopes, start)
            elif k == "expr":
                value = s.span_of("value")
                v0, v1 = value
                # as for an assignment's value: no call of a callee known to mutate nothing
                paren = find("(", v0, v1)
                if paren != -1 and (mutators.get(text[v0:paren]) is not False or (paren == v0 and self.objects)):
                    self.mutation(value, scopes, s.start)
            elif k == "return":
                if s.group("value"):
                    self.facts.returns.append((s.span_of("value"), scopes))
            elif k in ("if", "elif"):
                test = s.span_of("test")
                self.ifs.append((s, depth, scopes))
                self.block(s.body, depth + 1, scopes + (Scope("if", "then", test, s.start),))
                if s.orelse:
                    self.block(s.orelse, depth + 1, scopes + (Scope("if", "else", test, s.start),))
            elif k in ("for", "while"):
                test = s.span_of("iter") if k == "for" else s.span_of("test")
                scope = Scope(k, "body", test, s.start)
                if k == "for":
                    self.bind(s.span_of("target"), "for", test, scopes + (scope,), s.start)
                self.loops.append({
                    "kind": k,
                    "target": s.group("target") if k == "for" else None,
                    "iter": self.text[test[0]:test[1]],
                    "depth": depth,
                    "span": self.ex.source.span(s.start, s.end),
                })
                self.loop_tests.append((test, scopes))
                self.block(s.body, depth + 1, scopes + (scope,))
            elif k == "with":
                scope = Scope("with", "body", s.span_of("item"), s.start)
                if s.group("target"):
                    self.bind(s.span_of("target"), "with", s.span_of("item"), scopes, s.start)
                self.block(s.body, depth + 1, scopes + (scope,))
            elif k in ("def", "else", "class") and s.body:
                self.block(s.body, depth + 1, scopes)

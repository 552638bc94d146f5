"""Condition kinds: what each ``if`` condition of a function depends on.

Takes a condition's span and the scopes around it, in a function read by
:class:`~codeparse.infer.names.Names` (def-use, paths from ``self``), typed by
:class:`~codeparse.infer.valuetypes.ValueTypes`, with calls followed by
:class:`~codeparse.infer.callees.Calls`.  Gives the condition's kind, its sources (each a
name with its kind and type), its resolved text (:mod:`~codeparse.infer.resolved`) and
whether it is a None check.  How: a depth-first visit from the condition down to its
sources, memoized per name use, per definition, per enclosing test and per function
summary (:mod:`~codeparse.infer.memo`: cycles settled, depth bounded); each visit gives
(sources, pins) (:mod:`~codeparse.infer.sources`).  The sources are classified by these
rules (docs/how-it-works.md "What a condition depends on"; the tables are
``grammars/semantics.toml`` ``[conditions]``, which ``tests/ir_oracle.py`` reads too):

1. runtime readers (operators by name, compiled helpers by fully qualified name) are
   sources of kind ``runtime``, reached directly or through a local bound to them;
2. a marking operator over a Tensor keeps its mark when nothing beneath it is a named
   source (the operand's text is the source); list mutators (``torch.append(l, v)``)
   are definitions of the list, at the uses they can run before (earlier in the text, or
   in a loop around both: a later pass); so are, for an object built in the code, its
   ``__init__`` call, the attributes set on it (``box.y = v``) and a call of a method that
   may set one (its body sets an attribute of its object, or is not available);
3. calls are followed: a receiver rooted at ``self`` is a source, and where the
   callee's body is available (same text, or any file of an archive through the
   ``functions`` hook) the call depends on what the callee's return values depend on,
   mapped from its parameters to the call's arguments (:mod:`~codeparse.infer.callees`);
   without the body, on its arguments;
4. only operators are marked by name (``__torch__.*`` functions are user code);
5. conversions mark ``tensor_value`` only on a Tensor; types come from declarations,
   casts, container element types, operator schemas and return annotations
   (:mod:`~codeparse.infer.valuetypes`); ``bool(op(...))`` converts a Tensor when the
   operator returns nothing else besides a bool;
6. ``lengths.tolist()`` on a local is a method call on ``lengths``;
7. inside a loop only what changes from pass to pass depends on the loop's test or
   iterable: the counter and elements (through the iterable a ``for`` target is bound
   to), a value carried into a use from an earlier pass (a definition after the use in
   the loop: the back edge, :meth:`~codeparse.infer.names.Names.carried`) and what is
   computed from them, a container mutated in the loop, and the loop's outputs read
   after it; a value computed in the body from what does not change keeps its own kind.
   A value defined inside an ``if`` and used outside it depends on its condition;
8. walking down from the condition, the first marking operator met (the one nearest
   the condition) decides the kind of everything beneath it;
9. sources are listed deciding source first, then by kind priority, then by position
   in the resolved text.

A chain too long to visit even by resuming (:class:`~codeparse.infer.memo.DepthLimit`)
makes the condition ``unknown`` with ``too_deep`` set (CP113), never an internal error.
:class:`Inference` is the one object per function the other stages hold: it builds the
parts and answers for them.
"""

from __future__ import annotations

from typing import Optional

from ..parse.expressions import Attr, CallExpr, Const, Expr, ExpressionReader, Index, Name, Opaque, Seq
from .callees import Calls
from .facts import LOOPS, MUTATIONS, Definition, FunctionFacts, Scope
from .memo import DEEPEST_CYCLE, EMPTY, DepthLimit, Memo, TooDeep, depth, drive, driving, nesting
from .names import MAX_RESOLVE_DEPTH, Names, dotted
from .resolved import Resolver
from .semantics import Semantics
from .sources import RANK, VALUE_MARKS, SourceBits
from .types import literal_type
from .valuetypes import ValueTypes

__all__ = ["Inference"]

_MAX_REF = 60  # characters of an operand's text used as a source's name


class Inference:
    """Def-use resolution and condition classification for one function: the parts
    (names, types, calls, resolved text, memo) built over one shared :class:`Names`, and
    the visits that classify conditions."""

    def __init__(self, text: str, reader: ExpressionReader, facts: FunctionFacts, sem: Semantics):
        self.text = text
        self.reader = reader
        self.facts = facts
        self.sem = sem
        names = self.names = Names(text, reader, facts, sem)
        # The answers of the names part that the reference scan reads (every function asks
        # them); the other parts are built when a question first needs them (_build).
        self.tree = names.tree
        self.value_of = names.value_of
        self.single_def = names.single_def
        self.name_path = names.name_path
        self.expr_path = names.expr_path
        self.callee_target = names.callee_target
        self.declared = names.declared
        self.value_spans = names.value_spans
        self._bits: Optional[SourceBits] = None  # the visits' sources; set with the other parts

    # The answers of the parts past the names that other stages ask: the first call builds
    # the parts, whose binding of the part's own answer (an instance attribute) then
    # answers every later one.
    def expr_type(self, node: Expr, depth: int = 0) -> Optional[str]:
        self._build()
        return self.expr_type(node, depth)

    def name_type(self, name: str) -> Optional[str]:
        self._build()
        return self.name_type(name)

    def method_operator(self, node: CallExpr) -> Optional[str]:
        self._build()
        return self.method_operator(node)

    def callee_of(self, node: CallExpr):
        self._build()
        return self.callee_of(node)

    def _build(self) -> None:
        """Build the parts past the names (types, calls, memo, resolved text) and bind their
        answers: most functions (small modules' methods without if or loop) are asked only
        the reference scan's questions, which the names part answers."""
        if self._bits is not None:
            return
        names = self.names
        types = self.types = ValueTypes(names)
        calls = self.calls = Calls(names, types, self._visit_sets)
        types.callee_of = calls.callee_of
        memo = self._memo_entries = Memo()
        memo.warm = self._read_ahead
        self._memo_id = id(memo)  # the first part of the keys the depth limit names (see memo.enter)
        # The parts' answers, bound once: these are read on every visit.
        self._local_receiver = names.local_receiver
        self._defs_before = names.defs_before
        self._controls = names.controls
        self._carried = names.carried
        self.expr_type = types.expr_type
        self.name_type = types.name_type
        self.method_operator = types.method_operator
        self._is_tensor = types.is_tensor
        self._converts_tensor = types.converts_tensor
        self._listed = types.listed
        self._ref_type = types.ref_type
        self.callee_of = self._callee_of = calls.callee_of
        self._follow = calls.follow
        self.resolved = Resolver(names).resolved
        self._memo_results = memo.results
        self._enter = memo.enter
        self._leaves: dict[str, object] = {}  # name -> _leaf(name)
        self._attributes: dict[str, tuple] = {}  # path from self -> its visit as a source (see _attribute_source)
        self._through: dict[str, Optional[tuple]] = {}  # name -> _passed_through(name)
        self._bits = SourceBits()  # the visits' sources

    def _read_ahead(self) -> None:
        """Read every definition's value (but a ``getattr`` whose path the reference scan read:
        names.getattr_paths answers for it) and type every name bound to a path from ``self``:
        what a walk through a long chain of definitions would do at each link, done by
        drive on a shallow stack once such a walk first stops at the depth limit (deep in
        the stack each new frame may cost the interpreter a fresh block of memory)."""
        tree = self.tree
        known = self.names.getattr_paths
        for defs in self.facts.defs.values():
            for d in defs:
                if d.value is not None and d.value not in known:
                    tree(d.value)
        self.types.type_paths()

    # -- conditions ------------------------------------------------------------
    # A visit returns the sources beneath a node, each (ref, mark, natural kind, type):
    # `mark` is the marking operator nearest the condition above the source inside the
    # node (None if none); an outer mark replaces it (rule 8); and the pins.  Results are
    # ints (sources.SourceBits: a union is `|`), memoized per name use and per definition
    # (see memo).

    def condition(self, test: tuple[int, int], scopes: tuple[Scope, ...]) -> dict:
        node = self.tree(test)
        try:
            answer = self._answer(node, scopes)
        except DepthLimit:
            text = self.text[test[0]:test[1]]
            return {"text": text, "resolved": self.resolved(node), "kind": "unknown",
                    "sources": [{"ref": text[:_MAX_REF], "kind": "unknown", "type": "unknown"}],
                    "none_check": self.none_check(node), "too_deep": DEEPEST_CYCLE}
        found, pins = self._bits.listed(answer)
        pins = dict(pins)
        if isinstance(node, (Name, Attr)):
            # The whole condition is this value: it is a bool.
            ref, declared = self._ref_type(node)
            if ref and not declared:
                pins.setdefault(ref, "bool")
        # One entry per source, with the highest-priority kind it reaches the condition by.
        best: dict[str, tuple[str, Optional[str]]] = {}
        for ref, mark, natural, typ in found:
            kind = mark or natural
            had = best.get(ref)
            if had is None or RANK[kind] < RANK[had[0]]:
                best[ref] = (kind, typ or (had[1] if had is not None else None))
            elif typ and not had[1]:
                best[ref] = (had[0], typ)
        resolved = self.resolved(node)
        # Rule 9: the deciding source first, then by kind priority, then by position.
        if len(best) > 1:
            order = sorted(best, key=lambda ref: (RANK[best[ref][0]], _position(resolved, ref), ref))
        else:
            order = best
        sources = []
        for ref in order:
            kind, typ = best[ref]
            sources.append({"ref": ref, "kind": kind, "type": typ or pins.get(ref) or "unknown"})
        kind = sources[0]["kind"] if sources else "constant"
        return {
            "text": self.text[test[0]:test[1]],
            "resolved": resolved,
            "kind": kind,
            "sources": sources,
            "none_check": self.none_check(node),
        }

    def sources_of(self, node: Expr, scopes: tuple[Scope, ...]) -> tuple[frozenset, frozenset]:
        """(sources, pins) of an expression: a depth-first visit, memoized, resumed where
        it goes too deep (see drive); raises DepthLimit when even that cannot answer."""
        answer = self._answer(node, scopes)
        return self._bits.sets(answer)

    def _answer(self, node: Expr, scopes: tuple[Scope, ...]) -> int:
        """:meth:`sources_of` as bits."""
        if self._bits is None:
            self._build()
        if driving[0]:
            return self._visit(node, scopes)
        return drive(lambda: self._visit(node, scopes))

    def _visit_sets(self, node: Expr, scopes: tuple[Scope, ...]) -> tuple[frozenset, frozenset]:
        """The visit of ``node`` as sets (what calls.Calls maps onto a call)."""
        return self._bits.sets(self._visit(node, scopes))

    def _visit(self, node: Expr, scopes: tuple[Scope, ...]):
        """(sources, pins) beneath ``node``, used at ``scopes``."""
        kind = type(node)
        if kind is Name:
            name = node.id
            leaf = self._leaves.get(name, False)
            if leaf is False:
                leaf = self._leaves[name] = self._leaf(name)
            if type(leaf) is int:
                return leaf
            single, mutated, looped = leaf
            # Rule 7: the loops that carry a value of the name into this use.
            carried = self._carried(name, node.start, scopes) if scopes and looped else ()
            if mutated:
                kept = self._defs_before(name, node.start, scopes)
                if kept is not None:  # a mutation after this use defines nothing here
                    key = ("before", name, scopes, tuple(id(d) for d in kept), carried)
                    found = self._memo_results.get(key)
                    if found is not None:
                        return found
                    return self._enter(key, self._visit_some, (name, scopes, kept, carried))
            # A use of the name (see memo for the other kinds of entry).
            key = (name, scopes, carried) if carried else (name, scopes)
            found = self._memo_results.get(key)
            if found is not None:
                return found
            if single is not None:
                return self._visit_single(name, single, key)
            if not carried:
                through = self._through.get(name, False)
                if through is False:
                    through = self._through[name] = self._passed_through(name)
                if through is not None:
                    for scope in through[1]:
                        if scope not in scopes:
                            break
                    else:  # every if or loop around the definition is around this use too
                        return self._visit_single(name, through[0], key, False)
            return self._enter(key, self._visit_name, (name, scopes, carried))
        if kind is CallExpr:
            return self._visit_call(node, scopes)
        if kind is Const:
            return EMPTY
        sem = self.sem
        if isinstance(node, Opaque):
            return self._bits.source(self.text[node.start:node.end][:_MAX_REF], None, "unknown", None)
        if isinstance(node, Attr):
            path = self.expr_path(node)
            if path:
                return self._attribute(path, node.start, scopes)
            root = node
            while isinstance(root, Attr):
                root = root.value
            if isinstance(root, Name) and root.id in (sem.constants_object, "torch", sem.root):
                return EMPTY  # CONSTANTS.c0, torch.float32, __torch__.Color.RED: fixed values
            return self._visit(node.value, scopes)
        if isinstance(node, (Index, Seq)):
            return self._visit_all(node.children(), scopes)
        return EMPTY

    def _leaf(self, name: str):
        """The visit of a name that no definition of this function decides (a literal,
        ``self``, a parameter, an unknown name); else (its definition when it has one and no
        if or loop encloses it (see _visit_single), else None; whether a mutation defines
        it (:data:`~codeparse.infer.facts.MUTATIONS`); whether it has a definition inside a
        loop (a use may see the value of an earlier pass))."""
        facts = self.facts
        if name in self.sem.literals or name == facts.self_name:
            return EMPTY
        if name in facts.params:
            return self._bits.source(name, None, "argument", facts.params[name])
        defs = facts.defs.get(name)
        if not defs:
            return self._bits.source(name, None, "unknown", None)
        if len(defs) == 1:
            single = defs[0]
            looped = False
            for scope in single.scopes:
                if scope.kind in LOOPS:
                    looped = True
                    break
                if scope.kind == "if":
                    single = None
            return (None if looped else single), defs[0].kind in MUTATIONS, looped
        mutated = looped = False
        for d in defs:
            if d.kind in MUTATIONS:
                mutated = True
            if not looped:
                for scope in d.scopes:
                    if scope.kind in LOOPS:
                        looped = True
                        break
        return None, mutated, looped

    def _passed_through(self, name: str) -> Optional[tuple]:
        """The definition of a name with one and no path from ``self``, with the ifs and
        loops around it: at a use those all enclose (no loop carrying the name into it),
        the use's entry would only pass that definition's result through (see
        _visit_name), so _visit_single answers it.  None for any other name."""
        defs = self.facts.defs[name]
        if len(defs) != 1:
            return None
        path = self.name_path(name)
        if path and path != self.facts.self_name:
            return None
        return defs[0], tuple([scope for scope, _ in self._controls(name)])

    def _visit_single(self, name: str, d: Definition, key, bound: bool = True):
        """A use of a name whose entry would only pass its one definition's result through:
        no if or loop around the definition (most of them, see _leaf), or only ones that
        enclose the use too (see _passed_through).

        Its use entry would only pass the definitions entry's result through (no control
        dependence; a union of one part), so that answers it directly (see _single_def),
        with the depth check the use entry would make, in the same order; the result is
        remembered for the use once the definition's entry is closed.  (``bound``: the
        name may stand for a path from ``self``, read as such.)"""
        memo = self._memo_results
        if bound:
            path = self.name_path(name)
            if path and path != self.facts.self_name:
                found = self._attribute(path, d.start, d.scopes)
                if path not in self.facts.self_sets:  # else the sets' entry has it (it may be open)
                    memo[key] = found
                return found
        found = memo.get(name)
        if found is None:
            # The use entry's depth check, then (one deeper) the definitions entry's, as
            # _single_def makes it (a resumed entry is memoized).
            entry = id(d)
            found = memo.get(entry)
            level = nesting[0]
            if level > depth[0] or (found is None and level >= depth[0]):
                raise TooDeep(lambda: self._single_def(name, d), (self._memo_id, entry))
            if found is None:
                nesting[0] = level + 2  # inside the use entry and the definitions entry
                try:
                    found = self._enter(entry, self._visit_def, (d,))
                finally:
                    nesting[0] = level
                if memo.get(entry) is None:
                    return found  # open: part of a cycle still settling
            memo[name] = found
        memo[key] = found
        return found

    def _single_def(self, name: str, d: Definition):
        """The definitions entry of a name with one definition: it would only pass that
        definition's result through (a union of one part), so the definition's entry
        answers it, with the depth check the definitions entry would make; remembered for
        the name once the definition's entry is closed.  (A pass-through entry changes no
        result, not even around a cycle: it sits next to the definition's entry on the
        component stack, so each round of a fixpoint reads the same values without it.)"""
        memo = self._memo_results
        entry = id(d)
        found = memo.get(entry)
        if found is None:
            if nesting[0] > depth[0]:  # the definitions entry's check
                raise TooDeep(lambda: self._single_def(name, d), (self._memo_id, id(d)))
            nesting[0] += 1  # inside the definitions entry
            try:
                found = self._enter(entry, self._visit_def, (d,))
            finally:
                nesting[0] -= 1
            if memo.get(entry) is None:
                return found  # open: part of a cycle still settling
        memo[name] = found
        return found

    def _visit_all(self, nodes: list, scopes: tuple[Scope, ...]) -> int:
        """The union of the visits of ``nodes``."""
        visit = self._visit
        found = 0
        for node in nodes:
            found |= visit(node, scopes)
        return found

    def _visit_name(self, name: str, scopes: tuple[Scope, ...], carried: tuple[Scope, ...]):
        path = self.name_path(name)
        if path and path != self.facts.self_name:
            return self._alias_attribute(name, path, scopes)
        # What the definitions compute does not depend on the use: one entry per name.
        defs = self._memo_results.get(name)  # the entry of a name's definitions is the name itself
        if defs is None:
            found = self.facts.defs[name]
            if len(found) == 1:
                defs = self._single_def(name, found[0])
            else:
                defs = self._enter(name, self._visit_defs, (name,))
        found = defs
        # Control dependence: the ifs and loops around a definition that do not also
        # surround the use (a loop's outputs depend on its trip count), and the loops that
        # carry a definition into the use (rule 7).
        for scope, def_scopes in self._controls(name):
            if scope not in scopes or scope in carried:
                key = ("test", scope, def_scopes)
                test = self._memo_results.get(key)
                if test is None:
                    test = self._enter(key, self._visit_test, (scope, def_scopes))
                found |= test
        return found

    def _visit_some(self, name: str, scopes: tuple[Scope, ...], kept: tuple[Definition, ...],
                    carried: tuple[Scope, ...]):
        """A use of a name that only some of its definitions reach (see _defs_before): as
        _visit_name, over those definitions and the ifs and loops around them."""
        path = self.name_path(name)
        if path and path != self.facts.self_name:
            return self._alias_attribute(name, path, scopes)
        memo = self._memo_results
        parts = 0
        controls: dict = {}
        for d in kept:
            found = memo.get(id(d))
            parts |= found if found is not None else self._enter(id(d), self._visit_def, (d,))
            for scope in d.scopes:
                if scope.kind in ("if", "for", "while"):
                    controls.setdefault((scope, d.scopes), None)
        for scope, def_scopes in controls:
            if scope not in scopes or scope in carried:
                key = ("test", scope, def_scopes)
                found = memo.get(key)
                if found is None:
                    found = self._enter(key, self._visit_test, (scope, def_scopes))
                parts |= found
        return parts

    def _attribute(self, path: str, start: int, scopes: tuple[Scope, ...]):
        """A read of ``path`` from ``self`` at ``start``: the attribute, and where the
        function sets it (``self.y = v``) before the read or in a loop around both, what
        it sets and the ifs and loops around the set (the saved value is kept: a set that
        does not run leaves it).  The sets a read reaches are one memo entry (a set's value
        may read the attribute again, at another place: a cycle, settled as any other)."""
        found = self._attribute_source(path)
        sets = self.facts.self_sets.get(path)
        if not sets:
            return found
        kept = tuple(d for d in sets if d.start < start or any(
            scope.kind in LOOPS and scope in scopes for scope in d.scopes))
        if not kept:
            return found
        key = ("sets", path, tuple(id(d) for d in kept))
        got = self._memo_results.get(key)
        if got is not None:
            return got
        return self._enter(key, self._visit_self_sets, (found, kept))

    def _visit_self_sets(self, found: int, sets: tuple[Definition, ...]):
        """``found`` (an attribute as a source) with what ``sets`` set it to and the ifs and
        loops around them."""
        for d in sets:
            found |= self._visit(self.tree(d.value), d.scopes)
            for scope in d.scopes:
                if scope.kind in ("if", "for", "while"):
                    found |= self._visit_test(scope, d.scopes)
        return found

    def _alias_attribute(self, name: str, path: str, scopes: tuple[Scope, ...]):
        """A use of a local that stands for ``path`` from ``self``: read where it is bound."""
        d = self.single_def(name)
        if d is None:
            return self._attribute_source(path)
        return self._attribute(path, d.start, d.scopes)

    def _attribute_source(self, path: str):
        """The visit of ``path`` from ``self`` as a source (its declared type), once per path."""
        found = self._attributes.get(path)
        if found is None:
            found = self._attributes[path] = self._bits.source(path, None, "attribute", self.declared(path)[1])
        return found

    def _visit_defs(self, name: str):
        memo = self._memo_results
        parts = 0
        for d in self.facts.defs[name]:
            key = id(d)  # the entry of one definition: its identity
            found = memo.get(key)
            parts |= found if found is not None else self._enter(key, self._visit_def, (d,))
        return parts

    def _visit_test(self, scope: Scope, scopes: tuple[Scope, ...]):
        return self._visit(self.tree(scope.test), scopes)

    def _visit_def(self, d: Definition):
        if d.value is None:
            return EMPTY
        value = self.value_of(d)
        if value is None:
            return EMPTY
        if d.kind == "mutate" and isinstance(value, CallExpr):
            # `torch.append(l, v)` defines `l` by what it adds.
            return self._visit_all(value.args[1:], d.scopes)
        if d.kind in ("init", "call") and isinstance(value, CallExpr):
            # `(obj).__init__(a, b)` defines `obj` by what it is built from; `(obj).m(a)` too,
            # unless the method's body is available and sets no attribute of its object.
            if d.kind == "call":
                callee = self._callee_of(value)
                if callee is not None and not callee.inference.facts.sets_self:
                    return EMPTY
            return self._visit_all(value.args + [v for _, v in value.keywords], d.scopes)
        return self._visit(value, d.scopes)


    def _visit_call(self, node: CallExpr, scopes):
        sem = self.sem
        func = node.func
        args = node.args
        operands = args + [v for _, v in node.keywords] if node.keywords else args
        # `(receiver).method(...)` and `name.method(...)` on a local: method calls.
        if type(func) is Attr:
            receiver = self._local_receiver(func)
            if receiver is not None:
                if self._is_tensor(receiver):  # a Tensor method: the operator of that name (method_operator)
                    return self._visit_operator(node, f"aten::{func.attr}", [receiver, *operands], scopes,
                                                [receiver, *args])
                path = self.expr_path(receiver)
                # Rule 3: a receiver rooted at self is a source; any other receiver is followed.
                found = self._attribute_source(path) if path else self._visit(receiver, scopes)
                callee = self._callee_of(node)
                if callee is not None:
                    return found | self._bits.of_sets(self._follow(callee, node, receiver, scopes))
                visit = self._visit
                for a in operands:
                    found |= visit(a, scopes)
                return found
        kind, target = self.callee_target(func)
        if kind == "intrinsic":
            if target == "getattr":
                path = self.expr_path(node)
                if path:
                    return self._attribute(path, node.start, scopes)
            if target in sem.value_intrinsics and args:
                operands = [args[-1]]
            elif target == "uninitialized":
                return EMPTY
            return self._visit_all(operands, scopes)
        if kind == "function":
            if target and sem.is_runtime_function(target):
                # Rule 1: by its full name, wherever it is reached (an alias included).
                return self._bits.source(target, None, "runtime", "bool")
            callee = self._callee_of(node)
            if target and not node.args and target.rpartition(".")[2] in sem.runtime_copies and (
                    callee is None or not callee.summary()):
                # a copy of a tracing predicate (torchvision's `_is_tracing` in user code)
                return self._bits.source(target, None, "runtime", "bool")
            if callee is not None:
                return self._bits.of_sets(self._follow(callee, node, None, scopes))
            return self._visit_all(operands, scopes)
        return self._visit_operator(node, target, operands, scopes, args)

    def _visit_operator(self, node: CallExpr, target: Optional[str], operands: list, scopes, args: list):
        mark, name, role = self.sem.operator_facts(target) if target else (None, "", None)
        if mark == "runtime":
            text = dotted(node.func) or target
            typ = "bool" if name.startswith(("is_", "has_", "are_", "_is_")) else None
            return self._bits.source(text, None, "runtime", typ)
        pins = 0
        if role is not None:
            if role == "tensor_only":
                # `len(t)`, and `len(t.tolist())`: the list's length is t's size, not its values.
                mark = "tensor_shape" if (args and (self._is_tensor(args[0]) or self._listed(args[0]))) else None
            elif role == "conversion":
                mark = "tensor_value" if (args and self._converts_tensor(name, args[0])) else None
            elif len(args) == 2:  # a comparison
                pins = self._pins(args)
        if mark in VALUE_MARKS and args:
            ref, declared = self._ref_type(args[0])
            if ref and not declared:
                pins |= self._bits.pin(ref, "Tensor")
        visit = self._visit
        found = 0
        for a in operands:
            found |= visit(a, scopes)
        if mark:
            bits = self._bits
            if not (found & ~bits.pins) and mark in VALUE_MARKS and args and not self._hold_back():
                # Rule 2: the operator reads a Tensor that no named source produced.
                operand = self.resolved(args[0])[:_MAX_REF]
                self._memo_entries.rule2_made |= bits.value_marked(operand, "unknown", "Tensor")  # (see memo)
                found = (found & bits.pins) | bits.source(operand, mark, "unknown", "Tensor")
            else:
                found = bits.remark(found, mark)
        return found | pins

    def _hold_back(self) -> bool:
        """Whether rule 2 is held back here (a cycle settling its named sources first),
        noted on the memo when it is (see memo.Memo._settle)."""
        memo = self._memo_entries
        if memo.named_only:
            memo.held_back = True
            return True
        return False

    def _pins(self, args: list) -> int:
        """`torch.eq(x, True)`: the literal pins the other operand's type."""
        out = 0
        for this, other in ((args[0], args[1]), (args[1], args[0])):
            typ = literal_type(other, self.sem)
            # An int literal does not pin: `torch.lt(is_float, 0)` compares a float.
            if typ and typ not in ("NoneType", "int"):
                ref, declared = self._ref_type(this)
                if ref and not declared:
                    out |= self._bits.pin(ref, typ)
        return out

    def none_check(self, node: Expr) -> bool:
        seen = 0
        while isinstance(node, Name) and seen < MAX_RESOLVE_DEPTH:
            d = self.single_def(node.id)
            if d is None:
                return False
            value = self.value_of(d)
            if value is None:
                return False
            node, seen = value, seen + 1
        if not isinstance(node, CallExpr):
            return False
        kind, target = self.callee_target(node.func)
        if kind != "operator" or target not in self.sem.none_checks:
            return False
        return any(isinstance(a, Name) and a.id == "None" for a in node.args)

    def release(self) -> None:
        """Drop the links that make this function's parts a reference cycle (its calls
        visit through it, its memo reads ahead through it, its types ask its calls, its
        facts look callees up through their extractor), so that they are freed as soon as
        the last reference goes, not by the cyclic collector (which would walk every tree,
        definition and memo entry of the file first).  For a function no one will ask
        again: the parse of its file is finished and no other file calls into it."""
        if self._bits is not None:  # (else the parts were never built: nothing links them)
            self.calls.visit = None
            self._memo_entries.warm = None
            self.types.callee_of = None
        self.facts.functions = None



def _position(text: str, ref: str) -> int:
    at = text.find(ref)
    return at if at != -1 else len(text)

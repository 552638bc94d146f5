"""Names: what the names of one function stand for, by def-use over its printed text.

Takes a function's text, its :class:`~codeparse.infer.facts.FunctionFacts` (every
definition of every name with the ifs and loops around it, parameters, returns, declared
attributes) and the semantic tables.  Gives, per function and memoized:

* the expression tree of a span (read once by the expression reader) and the value a
  definition binds (the tuple element, when it binds one);
* the single definition of a name, when there is exactly one and it is an assignment;
* the path from ``self`` a name or expression reads: the printed text is close to SSA
  (every value bound once to a name, ``_2``, ``x0``), so ``conv = layer1.conv`` after
  ``layer1 = self.layer1`` is ``self.layer1.conv``, followed through single definitions
  (a cycle guard and a depth bound stop ``y = y`` and chains of thousands); a name bound
  to ``getattr(obj, "n")`` takes the path the reference scan read there
  (:attr:`Names.getattr_paths`), so its value's tree is not read for it;
* the declared role and type of such a path (``self.x``: parameter, buffer, submodule...),
  through the owners' declared attributes;
* the kind and qualified target of a callee (an intrinsic, an operator by its schema
  name, a function of the program, reached directly or through a local bound to it), and
  whether ``name.method`` has a local receiver (a method call on a value, not a module
  path);
* for control dependence: the ifs and loops around a name's definitions, the
  definitions that can run before a use (a mutation later in the text, with no loop
  around both, cannot), and the loops that carry a value of a name from one pass into a
  use (see :meth:`Names.carried`).

Nothing here classifies: :mod:`~codeparse.infer.conditions` reads these answers.
"""

from __future__ import annotations

from typing import Optional

from ..parse.expressions import Attr, CallExpr, Const, Expr, ExpressionReader, Name, Seq, names_in
from .facts import LOOPS, MUTATIONS, Definition, FunctionFacts, Scope
from .semantics import Semantics

#: Definitions of an object: its ``__init__`` call, an attribute set on it, a method call.
_OBJECT_DEFS = ("init", "setattr", "call")
MAX_RESOLVE_DEPTH = 24  # single definitions followed from one name (`y = y` in broken text stops)
# Characters of a path from `self` (`self.a.b...`); a longer one is no module path (a chain of
# 32,000 `a_i = a_{i-1}.b` is none; kept, its paths would be 1 GB).
_MAX_PATH = 1000


class Names:
    """Def-use answers for one function, each memoized: the state the other parts of the
    inference of that function (types, callees, conditions, resolved text) share."""

    def __init__(self, text: str, reader: ExpressionReader, facts: FunctionFacts, sem: Semantics):
        self.text = text
        self.reader = reader
        self.facts = facts
        self.sem = sem
        self._trees: dict[tuple[int, int], Expr] = {}
        self._values: dict[int, Optional[Expr]] = {}  # id of a definition -> value_of
        self._paths: dict[str, Optional[str]] = {}
        self._control_scopes: dict[str, list] = {}
        self._targets: dict[tuple[int, int], tuple[str, Optional[str]]] = {}  # callee span -> callee_target
        self._locals: dict[tuple[int, int], bool] = {}  # `a.f` span -> is `a` a local receiver
        self._names_in: dict[tuple[int, int], list] = {}  # expression span -> its names, in order
        self._carried: dict[tuple[str, int], tuple[Scope, ...]] = {}  # (name, use offset) -> carried
        # Span of a `getattr(obj, "n")` -> its path from self, filled by the reference scan
        # (extract) from its match: what expr_path reads from the tree (obj's path is the
        # scan's name_path, remembered), so _name_path and the types need no tree for it.
        self.getattr_paths: dict[tuple[int, int], str] = {}
        if facts.self_name in facts.params:
            self._paths[facts.self_name] = facts.self_name

    def value_spans(self) -> list[tuple[int, int]]:
        """Every expression a definition or a return of the function holds."""
        facts = self.facts
        spans = {d.value for defs in facts.defs.values() for d in defs if d.value is not None}
        spans.update(span for span, _ in facts.returns)
        scopes = [d.scopes for defs in facts.defs.values() for d in defs] + [sc for _, sc in facts.returns]
        spans.update(scope.test for group in scopes for scope in group)
        return sorted(spans)

    def tree(self, span: tuple[int, int]) -> Expr:
        node = self._trees.get(span)
        if node is None:
            node = self._trees[span] = self.reader.read(*span)
        return node

    def value_of(self, d: Definition) -> Optional[Expr]:
        """The expression a definition binds (the tuple element, when it has one);
        remembered per definition."""
        key = id(d)  # definitions live as long as the facts this object reads
        found = self._values.get(key, False)
        if found is False:
            found = self._values[key] = self._value_of(d)
        return found

    def _value_of(self, d: Definition) -> Optional[Expr]:
        span = d.value
        if span is None:
            return None
        node = self._trees.get(span)
        if node is None:
            node = self._trees[span] = self.reader.read(*span)
        if d.element is not None:
            if type(node) is Seq and node.kind == "tuple" and d.element < len(node.items):
                return node.items[d.element]
        return node

    def single_def(self, name: str) -> Optional[Definition]:
        defs = self.facts.defs.get(name)
        if defs and len(defs) == 1 and defs[0].kind == "assign":
            return defs[0]
        return None

    def names(self, node: Expr) -> list[Name]:
        """The names in an expression, in textual order (remembered per span)."""
        key = (node.start, node.end)
        names = self._names_in.get(key)
        if names is None:
            names = self._names_in[key] = names_in(node)
        return names

    def name_path(self, name: str, depth: int = 0) -> Optional[str]:
        """The path from ``self`` a name stands for (``self.layer1``), if it does."""
        found = self._paths.get(name, False)  # `self` is in it from the start
        if found is not False:
            return found
        return self._name_path(name, depth)

    def _name_path(self, name: str, depth: int) -> Optional[str]:
        """:meth:`name_path` of a name not asked before: through its one assignment
        (remembered, also when the depth bound cut it short)."""
        paths = self._paths
        paths[name] = None  # cycle guard
        defs = self.facts.defs.get(name)
        d = None
        if defs:
            if len(defs) == 1:
                if defs[0].kind == "assign":
                    d = defs[0]
            else:
                # `sub = self.sub; sub.flag = n`: an attribute set on an alias of a path from
                # self is self's state (as `self.sub.flag = n` is), no object built in the code.
                plain = [e for e in defs if e.kind not in _OBJECT_DEFS]
                if len(plain) == 1 and plain[0].kind == "assign":
                    d = plain[0]
        path = None
        if d is not None and depth < MAX_RESOLVE_DEPTH and d.value is not None:
            if d.element is None:
                path = self.getattr_paths.get(d.value)
                if path is not None:
                    paths[name] = path
                    return path
            node = self._trees.get(d.value)
            if node is None:
                node = self._trees[d.value] = self.reader.read(*d.value)
            if d.element is not None:  # the element of a tuple display, or no path
                element = d.element
                if type(node) is Seq and node.kind == "tuple" and element < len(node.items):
                    path = self.expr_path(node.items[element], depth + 1)
            else:
                path = self.expr_path(node, depth + 1)
        paths[name] = path
        return path

    def expr_path(self, node: Expr, depth: int = 0) -> Optional[str]:
        """The path from ``self`` an expression reads, if it is one."""
        kind = type(node)
        if kind is Name:
            found = self._paths.get(node.id, False)
            if found is not False:
                return found
            return self._name_path(node.id, depth)
        if kind is Attr:
            attrs = [node.attr]
            node = node.value
            while type(node) is Attr:
                attrs.append(node.attr)
                node = node.value
            literal = None
        elif kind is CallExpr:
            func = node.func
            if type(func) is not Name or func.id != "getattr" or len(node.args) != 2:
                return None
            literal = node.args[1]
            if type(literal) is not Const or literal.kind != "string":
                return None
            attrs = ()
            node = node.args[0]
        else:
            return None
        # The root of the chain, getattr's object: a name read inline (no call for the common case).
        if type(node) is Name:
            path = self._paths.get(node.id, False)
            if path is False:
                path = self._name_path(node.id, depth)
        else:
            path = self.expr_path(node, depth)
        if literal is not None:
            attr = literal.text[1:-1]
            if "\\" in attr:
                attr = unquote(literal.text)
            if not path or len(path) + len(attr) >= _MAX_PATH:
                return None  # see _MAX_PATH
            return f"{path}.{attr}"
        for attr in reversed(attrs):
            if not path or len(path) + len(attr) >= _MAX_PATH:
                return None  # see _MAX_PATH
            path = f"{path}.{attr}"
        return path

    def callee_target(self, node: Expr) -> tuple[str, Optional[str]]:
        """Kind and qualified target of a callee: ("operator", "aten::eq"), ("function", ...)."""
        key = (node.start, node.end)  # the same text: the same answer, within one function
        found = self._targets.get(key)
        if found is None:
            found = self._targets[key] = self._callee_target(node)
        return found

    def _callee_target(self, node: Expr) -> tuple[str, Optional[str]]:
        text = dotted(node)
        if text is None:
            return "function", None
        if text in self.sem.intrinsics:
            return "intrinsic", text
        op = self.sem.operator(text)
        if op is not None:
            return "operator", op
        if text.startswith(self.sem.root + "."):
            return "function", text
        if "." not in text:
            d = self.single_def(text)
            if d is not None:
                value = self.value_of(d)
                bound = dotted(value) if value is not None else None
                if bound and bound.startswith(self.sem.root + "."):
                    return "function", bound
        return "function", None

    def declared(self, path: str) -> tuple[Optional[str], Optional[str]]:
        """Declared (role, type) of a one-step path ``self.x``."""
        decl = self.facts.declared
        if decl is None:
            return None, None
        head, _, rest = path.partition(".")
        if not rest:
            return "submodule", self.facts.owner
        if "." in rest:
            if self.facts.types is None:
                return None, None
            first, _, more = rest.partition(".")
            role, typ = decl.get(first, ("unknown", None))
            for part in more.split("."):
                attrs = self.facts.types(typ) if typ else None
                if attrs is None:
                    return None, None
                role, typ = attrs.get(part, ("unknown", None))
            return role, typ
        return decl.get(rest, ("unknown", None))

    # -- types (rule 5) ----------------------------------------------------------

    def local_receiver(self, func: Attr) -> Optional[Expr]:
        """The receiver of ``name.method`` when ``name`` is a local or parameter (a method
        call on a value: ``lengths.tolist()``)."""
        key = (func.start, func.end)  # the same text: the same answer, within one function
        local = self._locals.get(key)
        if local is None:
            local = self._locals[key] = self._is_local_receiver(func)
        return func.value if local else None

    def _is_local_receiver(self, func: Attr) -> bool:
        node = func.value
        while type(node) is Attr:
            node = node.value
        if type(node) is not Name or node.end - node.start != len(node.id):
            return True  # `(receiver).method` (no dotted name)
        root = node.id
        sem = self.sem
        if root in ("torch", sem.ops_root, sem.root, sem.constants_object):
            return False
        if root not in self.facts.params and root not in self.facts.defs:
            return False
        return dotted(func) not in sem.intrinsics

    def controls(self, name: str) -> list[tuple[Scope, tuple[Scope, ...]]]:
        """The ifs and loops around the definitions of ``name`` (each with the scopes of a
        definition it encloses), once per distinct pair."""
        found = self._control_scopes.get(name)
        if found is None:
            seen: dict = {}
            for d in self.facts.defs[name]:
                for scope in d.scopes:
                    if scope.kind in ("if", "for", "while"):
                        seen.setdefault((scope, d.scopes), None)
            found = self._control_scopes[name] = list(seen)
        return found

    def defs_before(self, name: str, at: int, scopes: tuple[Scope, ...]) -> Optional[tuple[Definition, ...]]:
        """The definitions of ``name`` that can run before its use at offset ``at``, when a
        mutation cannot (it comes after the use in the text, and no loop encloses both):
        None when every definition can."""
        defs = self.facts.defs[name]
        kept = tuple(d for d in defs if d.kind not in MUTATIONS or d.start < at or any(
            scope.kind in LOOPS and scope in scopes for scope in d.scopes))
        return None if len(kept) == len(defs) else kept

    def carried(self, name: str, at: int, scopes: tuple[Scope, ...]) -> tuple[Scope, ...]:
        """The loops around a use of ``name`` at offset ``at`` (with ``scopes`` around it)
        that carry a value of ``name`` from one pass into the use: the innermost loop
        around both the use and a definition after it in the text (the loop's back edge
        brings the previous pass's value: a counter or a ``while`` test computed again at
        the end of the body), and every loop around a mutation of a container made outside
        that loop (it keeps what earlier passes put in).  A definition before the use in the
        same pass gives that pass's value: no loop carries it.  A ``while``'s own test is
        inside that loop (it runs again after each pass), whether ``scopes`` hold the loop
        (the test reached from its body) or not (the test asked as the loop's condition)."""
        key = (name, at, scopes)
        found = self._carried.get(key)
        if found is not None:
            return found
        defs = self.facts.defs[name]
        out: list = []
        for d in defs:
            if d.kind in MUTATIONS:
                for scope in d.scopes:
                    if scope.kind in LOOPS and _around(scope, at, scopes) and scope not in out and any(
                            e.kind not in MUTATIONS and scope not in e.scopes for e in defs):
                        out.append(scope)
            elif d.start > at:
                innermost = None
                for scope in d.scopes:
                    if scope.kind in LOOPS and _around(scope, at, scopes):
                        innermost = scope
                if innermost is not None and innermost not in out:
                    out.append(innermost)
        found = self._carried[key] = tuple(out)
        return found


def _around(loop: Scope, at: int, scopes: tuple[Scope, ...]) -> bool:
    """Whether ``loop`` runs again around a use at offset ``at`` inside ``scopes``: the use
    is in its body, or in the test of a ``while`` (computed again after each pass)."""
    return loop in scopes or (loop.kind == "while" and loop.test[0] <= at < loop.test[1])


def _position(text: str, ref: str) -> int:
    at = text.find(ref)
    return at if at != -1 else len(text)


def dotted(node: Optional[Expr]) -> Optional[str]:
    """``torch.nn.functional.relu`` for a chain of names, else None."""
    if type(node) is Name:
        return node.id if node.end - node.start == len(node.id) else None
    parts = []
    while type(node) is Attr:
        parts.append(node.attr)
        node = node.value
    if type(node) is not Name:
        return None
    if node.end - node.start != len(node.id):  # parenthesised: `(x).f` is a method call
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def unquote(literal: str) -> str:
    """The value of a printed string literal (C escapes, as the printer writes them)."""
    body = literal[1:-1]
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567":
                j = i + 1
                while j < len(body) and j < i + 4 and body[j] in "01234567":
                    j += 1
                out.append(chr(int(body[i + 1:j], 8)))
                i = j
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)

"""Value types: the TorchScript type of each name and expression of one function.

Takes a function's :class:`~codeparse.infer.names.Names` (definitions, paths from
``self``, declared attributes, callee targets) and a lookup of the callees whose bodies
are available (their return annotations).  Gives the type of an expression when the text
decides it, else None: a literal's type, a declared attribute's, an element of a typed
container (``List[T]``, ``Dict[K, V]``, a tuple at a literal index), an operator's result
by its schema (``grammars/operators.json.gz``, :mod:`~codeparse.infer.types`), a cast's,
a callee's return annotation, ``T.__new__(T)``'s class ``T`` and the attributes that class
declares; a name's type is its definitions' types when they agree (a
parameter's is declared, a ``for`` over ``range`` gives ``int``).  Also which operands are
Tensors, which method calls are Tensor methods (``lengths.tolist()`` is ``aten::tolist``)
and which simple operand a source stands for (a parameter or a path from ``self``), and
whether a conversion converts a Tensor (also when only its operator's schema decides it).

How: each name is typed once (memoized); a name bound once, unannotated, to a path from
``self`` takes that path's declared type directly; a name carried round a loop (a cycle of
definitions) is typed optimistically: the type its definitions from outside the cycle
agree on is assumed, the cyclic ones are typed again under that assumption, and the
name has that type only if they agree (else none); what was typed under an assumption
is kept only once the assumption is confirmed.  A chain of names deeper than
``_MAX_TYPE_NESTING`` is typed from where it stopped first and then again from the top
(the way :func:`~codeparse.infer.memo.drive` resumes visits); a name met again while it
is being resumed lies on a cycle that long and stays untyped.  Before an operand is asked
whether it is a Tensor, the names it depends on are typed first to last in the text (an
iterative walk), so a chain of thousands of temporaries is typed one link at a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from ..parse.expressions import Attr, CallExpr, Const, Expr, Index, Name
from .facts import MUTATIONS
from .names import MAX_RESOLVE_DEPTH, Names, dotted
from .types import element_type, literal_type, operator_return_type, operator_return_types

_NEW = ".__new__"  # `T.__new__(T)` makes an object of class T (its `__init__` call follows)
# A conversion operator and the type it converts to (no cast of a value to its own type is printed).
_CONVERTED = {"Bool": "bool", "Int": "int", "Float": "float", "Complex": "complex"}

if TYPE_CHECKING:
    from .callees import Callee

_MAX_TYPE_DEPTH = 200  # nested operands typed before a type is given up
_MAX_TYPE_NESTING = 120  # names being typed at once before a chain is typed from where it stopped
_type_nesting = [0]  # names being typed (ValueTypes._name_type), all functions together


class _TypesTooDeep(Exception):
    """Typing a chain of names went too deep: type ``name`` first (ValueTypes.name_type)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class _Unknown(Exception):
    """A name whose typing is under way was read before any type was assumed for it."""


_UNKNOWN = object()  # a tentative type: every definition waits on a name being typed
_NO_READS: frozenset = frozenset()


class ValueTypes:
    """The types of one function's names and expressions, memoized."""

    def __init__(self, names: Names):
        self.text = names.text
        self.facts = names.facts
        self.sem = names.sem
        self.tree = names.tree
        self.value_of = names.value_of
        self.single_def = names.single_def
        self.name_path = names.name_path
        self.expr_path = names.expr_path
        self.declared = names.declared
        self.callee_target = names.callee_target
        self.local_receiver = names.local_receiver
        self._names = names.names
        self.getattr_paths = names.getattr_paths
        # The callee of a call whose body is available (set by the inference that holds
        # both: the callees part reads types in turn).
        self.callee_of: Callable[[CallExpr], Optional[Callee]] = lambda node: None
        self._types: dict[str, Optional[str]] = {}  # names typed for good
        self._typed: set[str] = set()
        # A cycle of definitions (a value carried round a loop) is typed optimistically:
        # the names being typed (their place on the stack), the type assumed for one whose
        # definitions from outside the cycle agree, the places of names being typed that
        # the current typing read (it depends on them), and the types found while such an
        # assumption held (valid until that name's typing moves on; by place).
        self._progress: dict[str, int] = {}
        self._assumed: dict[str, Optional[str]] = {}
        self._reads: set[int] = set()
        self._tentative: dict[str, tuple[Optional[str], frozenset]] = {}
        self._tentative_at: dict[int, list[str]] = {}
        self._tensors: dict[tuple[int, int], bool] = {}  # expression span -> is it a Tensor

    def expr_type(self, node: Expr, depth: int = 0) -> Optional[str]:
        """The TorchScript type of an expression, when declarations, casts, element types,
        operator schemas or return annotations decide it; else None."""
        if depth > _MAX_TYPE_DEPTH:
            return None
        sem = self.sem
        kind = type(node)
        if kind is Name:
            lit = sem.literals.get(node.id)  # (literal_type of a name)
            if lit is not None:
                return lit
            return self._name_type(node.id) if _type_nesting[0] else self.name_type(node.id)
        if kind is Const:
            return literal_type(node, sem)
        if kind is Attr:
            path = self.expr_path(node)
            if path:
                return self.declared(path)[1]
            root = node
            while isinstance(root, Attr):
                root = root.value
            if isinstance(root, Name) and root.id == sem.constants_object:
                return "Tensor"
            # An attribute of an object of a class the program declares (`box.x`).
            base = self.expr_type(node.value, depth + 1)
            if base and base.startswith(sem.root + ".") and self.facts.types is not None:
                attrs = self.facts.types(base)
                if attrs is not None:
                    return attrs.get(node.attr, (None, None))[1]
            return None
        if kind is Index:
            base = self.expr_type(node.value, depth + 1)
            index = None
            if len(node.items) == 1 and isinstance(node.items[0], Const) and node.items[0].kind == "number":
                try:
                    index = int(node.items[0].text)
                except ValueError:
                    index = None
            return element_type(base, index)
        if kind is CallExpr:
            path = self.expr_path(node)
            if path:
                return self.declared(path)[1]
            func = node.func
            kind, target = self.callee_target(func)
            if kind == "intrinsic":
                if target in sem.value_intrinsics and len(node.args) == 2:
                    return self.text[node.args[0].start:node.args[0].end]
                return None
            if kind == "operator" and target:
                name = target.rpartition(":")[2]
                if name in sem.conversions or name == "len":
                    return _CONVERTED.get(name, "int")
                return operator_return_type(target, [self.expr_type(a, depth + 1) for a in node.args])
            if kind == "function" and target and target.endswith(_NEW) and len(node.args) == 1:
                built = dotted(node.args[0])
                if built is not None and built == target[:-len(_NEW)]:
                    return built  # `T.__new__(T)`: an object of class T
            callee = self.callee_of(node)
            if callee is not None:
                return callee.returns
            method = self.method_operator(node)
            if method is not None:
                args = [node.func.value, *node.args]
                return operator_return_type(method, [self.expr_type(a, depth + 1) for a in args])
        return None

    def name_type(self, name: str) -> Optional[str]:
        """The type of a name: its definitions' types when they agree.  A chain of names
        deeper than ``_MAX_TYPE_NESTING`` is typed from where it stopped first (the way
        drive resumes conditions); a name met again while it is being resumed lies on a
        cycle that long and stays untyped."""
        facts = self.facts
        if name in facts.params:
            return facts.params[name]
        if name in self._types:
            return self._types[name]
        if _type_nesting[0]:
            return self._name_type(name)
        todo, pending = [name], set()
        while True:
            try:
                typ = self._name_type(todo[-1])
            except _TypesTooDeep as stop:
                if stop.name in pending:
                    self._types[stop.name] = None
                else:
                    pending.add(stop.name)
                    todo.append(stop.name)
                continue
            todo.pop()
            if not todo:
                return typ

    def _name_type(self, name: str) -> Optional[str]:
        facts = self.facts
        if name in facts.params:
            return facts.params[name]
        if name in self._types:
            return self._types[name]
        place = self._progress.get(name)
        if place is not None:  # on a cycle: the type assumed, none yet (_Unknown) at first
            self._reads.add(place)
            if name in self._assumed:
                return self._assumed[name]
            raise _Unknown
        if name in self._tentative:
            typ, reads = self._tentative[name]
            self._reads |= reads
            if typ is _UNKNOWN:
                raise _Unknown
            return typ
        if self._path_typed(name):
            return self._types[name]
        if _type_nesting[0] > _MAX_TYPE_NESTING:
            raise _TypesTooDeep(name)
        place = self._progress[name] = len(self._progress)
        outer_reads, self._reads = self._reads, set()
        _type_nesting[0] += 1
        try:
            found = self._def_types(name)
            if place in self._reads and len(found) == 1 and None not in found:
                # A cycle through `name`: assume the type its definitions from outside the
                # cycle agree on, and type the cyclic ones again under that assumption.
                (assumed,) = found
                self._assumed[name] = assumed
                self._forget(place)
                found = self._def_types(name)
                if found != {assumed}:
                    found = {None}
        except BaseException:
            self._reads = outer_reads
            raise
        finally:
            _type_nesting[0] -= 1
            del self._progress[name]
            self._assumed.pop(name, None)
            self._forget(place)
        inner = self._reads
        inner.discard(place)
        if inner:
            reads = frozenset(inner)
            self._reads = outer_reads | reads
        else:
            reads = _NO_READS
            self._reads = outer_reads
        if not found:
            if reads:  # every definition waits on a name whose typing is under way
                self._tentative[name] = (_UNKNOWN, reads)
                self._tentative_at.setdefault(max(reads), []).append(name)
                raise _Unknown
            found = {None}
        typ = found.pop() if len(found) == 1 else None
        if reads:  # typed under the assumption of a name whose typing is under way
            self._tentative[name] = (typ, reads)
            self._tentative_at.setdefault(max(reads), []).append(name)
        else:
            self._types[name] = typ
        return typ

    def type_paths(self) -> None:
        """Type every name bound once, unannotated, to a path from ``self`` (see
        _path_typed; what no other name's type changes)."""
        types = self._types
        for name in self.facts.defs:
            if name not in types and name not in self.facts.params:
                self._path_typed(name)

    def _path_typed(self, name: str) -> bool:
        """Type a name bound once, unannotated, to a path from ``self``
        (``_3 = getattr(layers, "3")``): the path's declared type, what :meth:`_def_types`
        finds for it, typing no other name (the path the reference scan read, where it read
        one: ``Names.getattr_paths``).  False (nothing typed) for any other name."""
        defs = self.facts.defs.get(name)
        if not defs or len(defs) != 1:
            return False
        d = defs[0]
        if d.kind != "assign" or d.annotation or d.element is not None or d.value is None:
            return False
        path = self.getattr_paths.get(d.value)
        if path is not None:
            self._types[name] = self.declared(path)[1]
            return True
        value = self.tree(d.value)
        kind = type(value)
        if kind is CallExpr:
            func = value.func
            if type(func) is not Name or func.id != "getattr":  # no path (see Names.expr_path)
                return False
        elif kind is not Attr:
            return False
        path = self.expr_path(value)
        if not path:
            return False
        self._types[name] = self.declared(path)[1]
        return True

    def _def_types(self, name: str) -> set:
        """The types of ``name``'s definitions; one that waits on a name whose typing is
        under way (and has no type assumed yet) gives none."""
        found: set = set()
        for d in self.facts.defs.get(name, ()):
            if d.kind in MUTATIONS:
                continue
            if d.annotation:
                found.add(d.annotation)
                continue
            value = self.value_of(d)
            try:
                if value is None:
                    found.add(None)
                elif d.kind == "for":
                    found.add("int" if self._is_range(value) else element_type(self.expr_type(value, 1)))
                else:
                    found.add(self.expr_type(value, 1))
            except _Unknown:
                continue
        return found

    def _forget(self, place: int) -> None:
        """Drop the types found while the name at ``place`` was being typed (and names
        above it on the stack): its assumption has changed or it is done."""
        if not self._tentative_at:
            return
        for at in [at for at in self._tentative_at if at >= place]:
            for name in self._tentative_at.pop(at):
                self._tentative.pop(name, None)

    def _warm_types(self, node: Expr) -> None:
        """Type the names ``node`` depends on first to last in the text (an iterative walk),
        so that a chain of thousands of temporaries is typed one link at a time."""
        defs = self.facts.defs
        todo = [node.id] if type(node) is Name else [n.id for n in self._names(node)]
        found: list[tuple[int, str]] = []
        while todo:
            name = todo.pop()
            if name in self._types or name in self._typed or name not in defs or self._path_typed(name):
                continue
            self._typed.add(name)
            first = None
            for d in defs[name]:
                if d.value is None or d.kind in MUTATIONS:
                    continue
                first = d.start if first is None else min(first, d.start)
                if not d.annotation:
                    todo.extend(n.id for n in self._names(self.tree(d.value)))
            if first is not None:
                found.append((first, name))
        for _, name in sorted(found):
            self.name_type(name)

    def _is_range(self, node: Expr) -> bool:
        return isinstance(node, CallExpr) and isinstance(node.func, Name) and node.func.id == "range"

    def is_tensor(self, node: Expr) -> bool:
        """Whether ``node``'s value is typed a Tensor (see _typed_tensor)."""
        if type(node) is Name:
            # A parameter or a name typed for good: its type, as expr_type gives it (no
            # name to type first, nothing read under an assumption).
            name = node.id
            if name not in self.sem.literals:
                params = self.facts.params
                if name in params:
                    if len(self.facts.defs.get(name, ())) <= 1:  # not bound again: nothing to warm
                        typ = params[name]
                        return typ is not None and typ in self.sem.tensor_types
                elif name in self._types:
                    typ = self._types[name]
                    return typ is not None and typ in self.sem.tensor_types
        return self._typed_tensor(node)

    def _typed_tensor(self, node: Expr) -> bool:
        """:meth:`is_tensor` by typing: the names ``node`` depends on typed first (see
        _warm_types), then its type; remembered per span unless typed under an assumption."""
        key = (node.start, node.end)  # the same text: the same answer, within one function
        found = self._tensors.get(key)
        if found is None:
            outer_reads, self._reads = self._reads, set()
            try:
                self._warm_types(node)
                typ = self.expr_type(node)
            finally:
                reads, self._reads = self._reads, outer_reads | self._reads
            found = typ is not None and typ in self.sem.tensor_types
            if not reads:  # not typed under the assumption of a name being typed
                self._tensors[key] = found
        return found

    def converts_tensor(self, conversion: str, operand: Expr) -> bool:
        """Whether ``bool(operand)`` (``int``, ``float``, ``complex``: the operator named
        ``conversion``) converts a Tensor: ``operand`` is typed a Tensor, or it is an
        operator's result and a Tensor is all that operator returns besides the
        conversion's own type (``bool(torch.gt(torch.sum(w), 0))`` whatever ``w`` is:
        ``torch.gt`` gives a Tensor or a bool, and no cast of a bool to bool is printed)."""
        if self.is_tensor(operand):
            return True
        if type(operand) is not CallExpr:
            return False
        kind, target = self.callee_target(operand.func)
        if kind != "operator" or not target:
            target = self.method_operator(operand)
            if target is None:
                return False
        returns = operator_return_types(target) - {_CONVERTED.get(conversion)}
        return bool(returns) and returns <= self.sem.tensor_types

    def method_operator(self, node: CallExpr) -> Optional[str]:
        """``lengths.tolist()`` on a Tensor local: the operator ``aten::tolist``."""
        func = node.func
        if not isinstance(func, Attr) or self.local_receiver(func) is None:
            return None
        if not self.is_tensor(func.value):
            return None
        return f"aten::{func.attr}"

    def listed(self, node: Expr) -> bool:
        """``node`` is ``t.tolist()`` (through locals and ``annotate``)."""
        for _ in range(MAX_RESOLVE_DEPTH):
            if isinstance(node, Name):
                d = self.single_def(node.id)
                node = self.value_of(d) if d is not None else None
                if node is None:
                    return False
                continue
            if not isinstance(node, CallExpr):
                return False
            kind, target = self.callee_target(node.func)
            if kind == "intrinsic" and target in self.sem.value_intrinsics and node.args:
                node = node.args[-1]
                continue
            op = self.method_operator(node) or (target if kind == "operator" else None)
            return bool(op) and op.rpartition(":")[2] == "tolist"
        return False

    def ref_type(self, node: Expr, depth: int = 0) -> tuple[Optional[str], Optional[str]]:
        """The source a simple operand stands for (param name or self path) and its type."""
        if depth > MAX_RESOLVE_DEPTH:  # `y = y` in broken text
            return None, None
        facts = self.facts
        if isinstance(node, Name):
            if node.id in facts.params and node.id != facts.self_name:
                return node.id, facts.params[node.id]
            path = self.name_path(node.id)
            if path and path != facts.self_name:
                return path, self.declared(path)[1]
            d = self.single_def(node.id)
            if d is not None:
                value = self.value_of(d)
                if isinstance(value, (Name, Attr)):
                    return self.ref_type(value, depth + 1)
            return None, None
        path = self.expr_path(node)
        if path and path != facts.self_name:
            return path, self.declared(path)[1]
        return None, None

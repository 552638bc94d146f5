"""What the Python value of a condition or a conversion rests on, when no tensor's value
reaches it.

Inference files a condition as ``tensor_value`` whenever a tensor flows into it; many such
conditions read no tensor's *values*: ``len()`` of a ``List[Tensor]`` (the list's length),
``targets is not None`` on an ``Optional`` argument, ``"masks" in result`` (a dict's keys),
``float(torch.tensor(s).log2())`` of a size.  :class:`ValueKinds` reads the text again and
answers, for such an expression, the set of kinds its value rests on (``tensor_shape``,
``argument``, ``attribute``, ``runtime``, ``constant``), or None where a tensor's value may
reach it; the export rules then take the highest of those kinds in
``Inference.PRIORITY``'s order instead of inference's.

The algorithm: one recursive reading per question (:meth:`ValueKinds.value`, ``length``,
``elements``, ``none``, ``shape``, ``tensor``), each a walk over expressions and the
definitions of the names in them (``FunctionFacts.defs``):

* a name takes the union of what its definitions rest on, plus the tests of the ``if``s
  and loops that choose between them (and decide how many mutations run); a parameter is
  ``argument`` (``self`` ``attribute``), a tensor-typed one gives up for ``value``;
* a list's length is read from how it was built: displays count their items, ``append``
  and the like add the tests that decide them, ``_set_item`` of an element keeps the
  length; a none-check asks where the value may be None (its type, its bindings); a dict's
  keys, the keys set into it;
* an operator is read through its operands by what it is (``[export]`` of
  ``grammars/semantics.toml``: shape reads are ``tensor_shape``, operators that read no
  data pass their operands' kinds on, a ``*_like`` factory reads only its first
  operand's size);
  a conversion of a tensor that holds data, an object's field or anything else not
  followed gives up (``_GiveUp``): inference's kind stands;
* a call of a function whose body is known is read once per question and tuple element
  as a summary in terms of its parameters (``_summary``, memoized on the callee: markers
  ``(question, parameter)``), then mapped onto the call's arguments; a callee already
  being read (recursion), or calls nested more than 8 deep, give up.

Every entry is memoized per question and node; an entry read while it is being computed
(a value carried round a loop) adds nothing, and what is computed meanwhile is not kept.
A question gives up after ``_MAX_STEPS`` nodes.
"""

from __future__ import annotations

from typing import Any, Optional

from ..parse.expressions import Attr, CallExpr, Const, Expr, Index, Name, Seq
from .datadep import FunctionDataDependence

__all__ = ["ValueKinds"]

_MAX_TUPLE_DEPTH = 32  # locals bound to tuple displays followed, one into another

# Kinds a value can rest on when no tensor's value reaches it, in the order of
# Inference.PRIORITY: what export specializes to.
_PLAIN_ORDER = ("tensor_shape", "argument", "attribute", "runtime", "constant")
_CONSTANT = frozenset({"constant"})
_ARGUMENT = frozenset({"argument"})
_ATTRIBUTE = frozenset({"attribute"})
_SHAPE = frozenset({"tensor_shape"})
_MAX_STEPS = 20000  # nodes one question visits before it gives up (undecided)
_LIST_HEADS = ("List[", "Tuple[", "Dict[")


class _GiveUp(Exception):
    """The question is too large, or reaches something this reading does not follow."""


class ValueKinds:
    """What the Python value of an expression rests on, read from the text and its types,
    when no tensor's value reaches it: ``len()`` of a list (how it was built: displays,
    appends and the tests that decide them; ``_set_item`` of an element keeps its length),
    a none-check (whether a value can be None: its type, where it was bound), a key of a
    dict, parameters, attributes, constants, runtime predicates, and sizes of tensors; a
    tensor built from such numbers (``torch.tensor(float(s))`` of a size) holds no data.

    :meth:`condition` answers ``(kinds, shape operands)`` or None when a tensor's value
    (a conversion of a tensor that holds data) may reach it, or the reading cannot follow
    it (a call with no body, an object's field, too much text): then inference's kind
    stands.  Calls into functions whose body is known are followed, their parameters
    mapped onto the call's arguments."""

    def __init__(self, dd: "FunctionDataDependence", symbolic: bool = False, active: Optional[set] = None):
        self.dd = dd
        self.inf = dd.inf
        self.sem = dd.inf.sem
        # In a callee (symbolic): a parameter is a marker ("value"/"none"/"length"/
        # "elements"/"shape"/"tensor", name), mapped onto the call's argument by the caller.
        self.symbolic = symbolic
        self.shapes: list[Expr] = []  # tensors whose size a value reads
        self._memo: dict[tuple, frozenset] = {}
        self._open: set[tuple] = set()
        self._cycles = 0  # open entries read (results computed meanwhile are not kept)
        self._steps = 0
        self._active = active if active is not None else set()  # callees being read

    # -- entry points ------------------------------------------------------------
    def condition(self, node: Expr) -> Optional[frozenset]:
        """The kinds the truth of a condition (or a loop's trip count) rests on, or None."""
        try:
            return self.value(node)
        except _GiveUp:
            return None

    def tensor_holds_no_data(self, node: Expr) -> Optional[frozenset]:
        """The kinds the values of a tensor rest on when it is built from numbers that hold
        no data (literals, sizes, arguments, attributes), else None."""
        try:
            return self.tensor(node)
        except _GiveUp:
            return None

    def shapes_data_dependent(self) -> bool:
        """A size read on the way is data-dependent (asked of its tensor's producers)."""
        return any(self.dd.tensor(n, 0) is not None for n in self.shapes)

    @staticmethod
    def kind(kinds: frozenset) -> str:
        """The kind a condition resting on ``kinds`` has (the highest in priority)."""
        return next((k for k in _PLAIN_ORDER if k in kinds), "constant")

    # -- helpers -----------------------------------------------------------------
    def _step(self) -> None:
        self._steps += 1
        if self._steps > _MAX_STEPS:
            raise _GiveUp()

    def _type(self, node: Expr) -> Optional[str]:
        if isinstance(node, Name) and not self._param(node.id):
            # `a, b = f(x)` binds the elements of f's tuple: their types, not the tuple's.
            defs = [d for d in self.inf.facts.defs.get(node.id, ()) if d.kind != "mutate"]
            if defs and any(d.element is not None for d in defs):
                from .types import element_type

                found = set()
                for d in defs:
                    value = self.inf.value_of(d) if d.value is not None else None
                    if d.annotation:
                        found.add(d.annotation)
                    elif value is None:
                        found.add(None)
                    elif d.element is not None and value is self.inf.tree(d.value):
                        found.add(element_type(self.inf.expr_type(value), d.element))
                    else:
                        found.add(self.inf.expr_type(value))
                return found.pop() if len(found) == 1 else None
        return self.inf.expr_type(node)

    def _is_tensor_type(self, typ: Optional[str]) -> bool:
        return typ is not None and (typ in self.sem.tensor_types or typ == "Tensor")

    def _param(self, name: str) -> bool:
        return name in self.inf.facts.params and name != self.inf.facts.self_name

    def _keyed(self, key: tuple, compute) -> frozenset:
        """``compute()`` once per key; an entry read while it is being computed (a value
        carried round a loop) adds nothing, and what is computed meanwhile is not kept."""
        found = self._memo.get(key)
        if found is not None:
            return found
        if key in self._open:
            self._cycles += 1
            return frozenset()
        self._open.add(key)
        before = self._cycles
        try:
            result = compute()
        finally:
            self._open.discard(key)
        if self._cycles == before:
            self._memo[key] = result
        return result

    def _defs(self, name: str) -> list:
        """The definitions of a name, but for those in branches the data-dependence questions
        rule out (:meth:`FunctionDataDependence.runs`)."""
        return [d for d in self.inf.facts.defs.get(name, ()) if (d.value is not None or d.kind == "for")
                and self.dd.runs(d.scopes)]

    def _tests(self, defs: list) -> frozenset:
        """What decides which of several definitions of a name, or how many mutations, run:
        the tests of the ``if``s and loops around them."""
        out: set[str] = set()
        for d in defs:
            for scope in d.scopes:
                if scope.kind in ("if", "while", "for") and scope.test is not None:
                    out |= self.value(self.inf.tree(scope.test))
        return frozenset(out)

    def _op(self, node: CallExpr) -> tuple[str, Optional[str]]:
        return self.dd._op(node)

    def _mutations(self, d: Any) -> tuple[Optional[str], list[Expr]]:
        """A mutation's operator (``append``, ``_set_item``, ...) and its arguments after the container."""
        node = self.inf.value_of(d)
        if not isinstance(node, CallExpr):
            return None, []
        kind, name = self._op(node)
        if self.inf.method_operator(node) is not None:
            return name, list(node.args)
        return name, list(node.args[1:])

    def _operator(self, node: CallExpr, what: str) -> tuple[Optional[frozenset], str, list]:
        """The common start of reading a call: ``annotate``/``unchecked_cast`` pass their value
        through, ``uninitialized`` is a placeholder where the code raises, a function is
        followed (:meth:`_call`); those give ``(answer, "", [])``.  An operator gives
        ``(None, name, operands)``, a method's receiver first; anything else gives up."""
        kind, name = self._op(node)
        if kind == "intrinsic" and name in self.sem.value_intrinsics and node.args:
            return getattr(self, what)(node.args[-1]), "", []
        if kind == "intrinsic" and name == "uninitialized":
            return _CONSTANT, "", []
        if kind == "function":
            return self._call(node, what, None), "", []
        if kind != "operator" or not name:
            raise _GiveUp()
        return None, name, self._operands(node)

    def _operands(self, node: CallExpr) -> list:
        operands = [*node.args, *(v for _, v in node.keywords)]
        if self.inf.method_operator(node) is not None:
            operands = [node.func.value, *operands]
        return operands

    # -- a value ---------------------------------------------------------------------
    def value(self, node: Expr) -> frozenset:
        """The kinds the value of a (non-tensor) expression rests on; _GiveUp when a
        tensor's value may reach it."""
        self._step()
        if isinstance(node, Const):
            return _CONSTANT
        if isinstance(node, Name):
            return self._name_value(node.id)
        if isinstance(node, Attr):
            return self._attr(node, "value")
        if isinstance(node, Index):
            base = node.value
            if self._is_tensor_type(self._type(base)):
                raise _GiveUp()  # an element of a tensor is a tensor
            return self.elements(base) | frozenset().union(*(self.value(i) for i in node.items))
        if isinstance(node, Seq):
            return frozenset().union(_CONSTANT, *(self.value(i) for i in node.items))
        if isinstance(node, CallExpr):
            return self._call_value(node)
        raise _GiveUp()

    def _name_value(self, name: str) -> frozenset:
        if name in self.sem.literals:
            return _CONSTANT
        if name == self.inf.facts.self_name:
            return _ATTRIBUTE
        if self._param(name):
            if self._is_tensor_type(self.inf.facts.params[name]) or self.inf.facts.params[name] is None:
                raise _GiveUp()
            typ = self.inf.facts.params[name]
            if typ.startswith(_LIST_HEADS):
                return self.length(Name(name, 0, 0)) | self.elements(Name(name, 0, 0))
            return self._marker("value", name)
        typ = self.inf.name_type(name)
        if typ is not None and typ.startswith(_LIST_HEADS):
            return self.length(Name(name, 0, 0)) | self.elements(Name(name, 0, 0))
        return self._keyed(("value", name), lambda: self._local(name, self._bound_value))

    def _marker(self, what: str, name: str) -> frozenset:
        return frozenset({(what, name)}) if self.symbolic else _ARGUMENT

    def _local(self, name: str, of) -> frozenset:
        """The kinds of a local's value, over its assignments (not its mutations), and the
        tests that choose between them."""
        defs = [d for d in self._defs(name) if d.kind in ("assign", "for")]
        if not defs:
            raise _GiveUp()
        out = frozenset().union(*(of(d) for d in defs))
        if len(defs) > 1:
            out |= self._tests(defs)
        return out

    def _bound_value(self, d: Any) -> frozenset:
        if d.kind == "for":
            return self._loop_target(d)
        node = self.inf.value_of(d)
        if d.element is not None and node is self.inf.tree(d.value):
            return self._element_of_call(node, d.element, "value")
        if self._is_tensor_type(self._type(node)):
            raise _GiveUp()
        return self.value(node)

    def _loop_target(self, d: Any) -> frozenset:
        node = self.inf.value_of(d)
        if node is None:
            raise _GiveUp()
        if isinstance(node, CallExpr) and isinstance(node.func, Name) and node.func.id == "range":
            return frozenset().union(*(self.value(a) for a in node.args))
        return self.elements(node)

    def _attr(self, node: Attr, what: str) -> frozenset:
        path = self.inf.expr_path(node)
        if path:
            role, typ = self.inf.declared(path)
            if typ is None or self._is_tensor_type(typ) or role in ("parameter", "buffer"):
                raise _GiveUp()  # a tensor, or a type no declaration gives (a method's text alone)
            if path in self.inf.facts.self_sets:
                raise _GiveUp()  # the function sets it (`self.seen = int(t)`): what it set is not read here
            return _ATTRIBUTE
        root = node
        while isinstance(root, Attr):
            root = root.value
        if isinstance(root, Name) and root.id == self.sem.constants_object:
            return _CONSTANT
        raise _GiveUp()  # an object's field: what made the object is not followed

    def _call_value(self, node: CallExpr) -> frozenset:
        kind, name = self._op(node)
        args = node.args
        if kind == "intrinsic":
            if name in self.sem.value_intrinsics and args:
                return self.value(args[-1])
            if name == "range":
                return frozenset().union(_CONSTANT, *(self.value(a) for a in args))
            if name in ("isinstance", "hasattr", "uninitialized"):
                return _CONSTANT
            raise _GiveUp()
        if kind == "function":
            return self._call(node, "value", None)
        if kind != "operator" or not name:
            raise _GiveUp()
        if name in self.sem.runtime or name.startswith(self.sem.runtime_prefixes):
            return frozenset({"runtime"})
        operands = self._operands(node)
        if f"aten::{name}" in self.sem.none_checks and len(operands) == 2:
            other = [o for o in operands if not (isinstance(o, Name) and o.id == "None")]
            if len(other) == 1:
                return self.none(other[0])
        if name in ("len", "__len__") and len(operands) == 1:
            if self._is_tensor_type(self._type(operands[0])):
                return self.shape(operands[0])
            return self.length(operands[0])
        if name in self.sem.shape_ops or name in self.sem.prim_shape_ops:
            if operands and self._is_tensor_type(self._type(operands[0])):
                rest = frozenset().union(*(self.value(o) for o in operands[1:]))
                if name in self.dd.table.shape_reads:
                    return self.shape(operands[0]) | rest
                return _SHAPE | rest  # the rank, dtype, device: never data-dependent
            raise _GiveUp()
        if name == "__contains__" and len(operands) == 2:
            return self.length(operands[0]) | self.value(operands[1])
        if name in self.sem.value_ops or name in self.sem.conversions:
            if operands and self._is_tensor_type(self._type(operands[0])):
                return self.tensor(operands[0]) | frozenset().union(*(self.value(o) for o in operands[1:]))
            return frozenset().union(_CONSTANT, *(self.value(o) for o in operands))
        typ = self._type(node)
        if self._is_tensor_type(typ):
            raise _GiveUp()
        if typ is not None and typ.startswith(_LIST_HEADS):
            return self.length(node) | self.elements(node)
        # An operator on numbers, lists and strings alone (`ops.prim.min([n, len(l)])`): a
        # function of them, whatever its result's type.
        out = set(_CONSTANT)
        for o in operands:
            if self._is_tensor_type(self._type(o)):
                raise _GiveUp()
            out |= self.value(o)  # untyped: a tensor met beneath gives up there
        return frozenset(out)

    # -- a list's length, its elements ---------------------------------------------
    def length(self, node: Expr) -> frozenset:
        """What the length of a list, tuple, dict or str (and a dict's keys) rests on."""
        self._step()
        if isinstance(node, Seq):
            return _CONSTANT
        if isinstance(node, Const):
            return _CONSTANT
        if isinstance(node, Name):
            if self._param(node.id):
                return self._marker("length", node.id)
            if node.id == self.inf.facts.self_name or node.id in self.sem.literals:
                raise _GiveUp()
            return self._keyed(("length", node.id), lambda: self._local_length(node.id))
        if isinstance(node, Attr):
            return self._attr(node, "length")
        if isinstance(node, Index):
            return self.elements(node.value) | frozenset().union(*(self.value(i) for i in node.items))
        if isinstance(node, CallExpr):
            answer, name, operands = self._operator(node, "length")
            if answer is not None:
                return answer
            # A list an operator makes from lists (`split(x, sizes)`, `broadcast_tensors([a, b])`)
            # is as long as they are; from tensors alone (`unbind`, `size`), as their sizes say.
            listed = [o for o in operands if (self._type(o) or "").startswith(_LIST_HEADS)
                      or self._type(o) is None and isinstance(o, CallExpr) and self._lengthy(o)]
            out = set(_CONSTANT)
            for o in operands:
                if o in listed:
                    out |= self.length(o)
                elif self._is_tensor_type(self._type(o)):
                    if not listed:
                        out |= self.shape(o)
                else:
                    out |= self.value(o)
            return frozenset(out)
        raise _GiveUp()

    def _lengthy(self, node: CallExpr) -> bool:
        """An untyped call whose operand is a list or dict (``torch.values(d)``): a container too."""
        return any((self._type(o) or "").startswith(_LIST_HEADS) for o in self._operands(node)[:1])

    def _local_length(self, name: str) -> frozenset:
        defs = self._defs(name)
        assigns = [d for d in defs if d.kind == "assign"]
        if not assigns:
            raise _GiveUp()
        out: set[str] = set()
        for d in assigns:
            node = self.inf.value_of(d)
            if d.element is not None and node is self.inf.tree(d.value):
                out |= self._element_of_call(node, d.element, "length")
            else:
                out |= self.length(node)
        if len(assigns) > 1:
            out |= self._tests(assigns)
        dict_typed = (self.inf.name_type(name) or "").startswith("Dict[")
        grown = []
        for d in defs:
            if d.kind != "mutate":
                continue
            op, rest = self._mutations(d)
            if op in ("append", "insert"):
                grown.append(d)
            elif op == "extend" and rest:
                grown.append(d)
                out |= self.length(rest[0])
            elif op in ("_set_item", "__setitem__"):
                if dict_typed and rest:  # a new key makes the dict longer
                    grown.append(d)
                    out |= self.value(rest[0])
                # an element of a list replaced: the same length
            elif op is not None:
                raise _GiveUp()
        return frozenset(out | self._tests(grown))

    def elements(self, node: Expr) -> frozenset:
        """What the values of the elements of a list, tuple or dict rest on."""
        self._step()
        typ = self._type(node)
        from .types import element_type

        if self._is_tensor_type(element_type(typ)):
            raise _GiveUp()  # tensors: their values are data
        if isinstance(node, Seq):
            return frozenset().union(_CONSTANT, *(self.value(i) for i in node.items))
        if isinstance(node, Name):
            if self._param(node.id):
                return self._marker("elements", node.id)
            return self._keyed(("elements", node.id), lambda: self._local_elements(node.id))
        if isinstance(node, Attr):
            return self._attr(node, "elements")
        if isinstance(node, Index):
            return self.elements(node.value)
        if isinstance(node, CallExpr):
            answer, name, operands = self._operator(node, "elements")
            if answer is not None:
                return answer
            if name in self.sem.shape_ops or name in self.sem.prim_shape_ops:
                if operands and self._is_tensor_type(self._type(operands[0])):
                    return self.shape(operands[0]) | frozenset().union(*(self.value(o) for o in operands[1:]))
            if name in self.sem.value_ops:  # tolist()
                if operands and self._is_tensor_type(self._type(operands[0])):
                    return self.tensor(operands[0])
            out = set(_CONSTANT)
            for o in operands:
                otyp = self._type(o)
                if self._is_tensor_type(otyp):
                    raise _GiveUp()
                out |= self.elements(o) if (otyp or "").startswith(_LIST_HEADS) else self.value(o)
            return frozenset(out)
        raise _GiveUp()

    def _local_elements(self, name: str) -> frozenset:
        defs = self._defs(name)
        out: set[str] = set()
        assigns = [d for d in defs if d.kind in ("assign", "for")]
        if not assigns:
            raise _GiveUp()
        for d in assigns:
            if d.kind == "for":
                out |= self.elements(self.inf.value_of(d))
                continue
            node = self.inf.value_of(d)
            if d.element is not None and node is self.inf.tree(d.value):
                out |= self._element_of_call(node, d.element, "elements")
            else:
                out |= self.elements(node)
        if len(assigns) > 1:
            out |= self._tests(assigns)
        for d in defs:
            if d.kind != "mutate":
                continue
            op, rest = self._mutations(d)
            if op in ("append",) and rest:
                out |= self.value(rest[-1])
            elif op in ("insert", "_set_item", "__setitem__") and rest:
                out |= frozenset().union(*(self.value(r) for r in rest))
            elif op == "extend" and rest:
                out |= self.elements(rest[0])
            else:
                raise _GiveUp()
            out |= self._tests([d])
        return frozenset(out)

    # -- None or not -----------------------------------------------------------------
    def none(self, node: Expr) -> frozenset:
        """What decides whether a value is None (never a tensor's value)."""
        self._step()
        if isinstance(node, Const) or isinstance(node, Seq):
            return _CONSTANT
        typ = self._type(node)
        if typ is not None and not typ.startswith("Optional[") and typ != "NoneType":
            return _CONSTANT  # its type says it is never None (or always)
        if isinstance(node, Name):
            if node.id in self.sem.literals:
                return _CONSTANT
            if self._param(node.id):
                return self._marker("none", node.id)
            return self._keyed(("none", node.id), lambda: self._local(node.id, self._bound_none))
        if isinstance(node, Attr):
            return self._attr(node, "none")
        if isinstance(node, Index):
            return self.elements(node.value)
        if isinstance(node, CallExpr):
            answer, _, _ = self._operator(node, "none")
            if answer is not None:
                return answer
        raise _GiveUp()  # an operator's result that may be None

    def _bound_none(self, d: Any) -> frozenset:
        if d.kind == "for":
            return self.elements(self.inf.value_of(d))
        node = self.inf.value_of(d)
        if d.element is not None and node is self.inf.tree(d.value):
            return self._element_of_call(node, d.element, "none")
        return self.none(node)

    # -- sizes and tensors -------------------------------------------------------------
    def shape(self, node: Expr) -> frozenset:
        """A tensor's size is read: the size of a parameter (in a callee, the caller's
        argument), else a shape whose data-dependence is asked of the tensor's producers."""
        if self.symbolic and isinstance(node, Name) and self._param(node.id):
            return frozenset({("shape", node.id)})
        if self.symbolic:
            if self.dd.tensor(node, 0) is not None:
                return frozenset({"data_dependent_size"})
            return _SHAPE
        self.shapes.append(node)
        return _SHAPE

    def tensor(self, node: Expr) -> frozenset:
        """The kinds a tensor's values rest on when it is built from numbers without data
        (``torch.tensor(s)``, ``torch.scalar_tensor(n)``, arithmetic on those, saved
        constants); _GiveUp otherwise."""
        self._step()
        if isinstance(node, Const):
            return _CONSTANT
        if isinstance(node, Name):
            if node.id in self.sem.literals:
                return _CONSTANT
            if self._param(node.id):
                if self.symbolic:
                    return frozenset({("tensor", node.id)})
                raise _GiveUp()
            if node.id in self.dd.mutated_in_place():
                raise _GiveUp()
            return self._keyed(("tensor", node.id), lambda: self._local(node.id, self._bound_tensor))
        if isinstance(node, Attr):
            root = node
            while isinstance(root, Attr):
                root = root.value
            if isinstance(root, Name) and root.id == self.sem.constants_object:
                return _CONSTANT  # a constant saved with the code
            raise _GiveUp()
        if isinstance(node, Index):
            return self.tensor(node.value) | frozenset().union(*(self._operand(i) for i in node.items))
        if isinstance(node, Seq):
            return frozenset().union(_CONSTANT, *(self._operand(i) for i in node.items))
        if isinstance(node, CallExpr):
            answer, name, operands = self._operator(node, "tensor")
            if answer is not None:
                return answer
            if name not in self.dd.table.no_data_operators:
                raise _GiveUp()
            if name in self.dd.table.like_factories and operands:
                operands = operands[1:]  # `zeros_like(t)`: t's size, not its values
            return frozenset().union(_CONSTANT, *(self._operand(o) for o in operands))
        raise _GiveUp()

    def _operand(self, node: Expr) -> frozenset:
        typ = self._type(node)
        if self._is_tensor_type(typ):
            return self.tensor(node)
        if typ is None:  # untyped (definitions that disagree): a tensor, or a number
            try:
                return self.tensor(node)
            except _GiveUp:
                return self.value(node)
        if typ is not None and typ.startswith(_LIST_HEADS):
            from .types import element_type

            if self._is_tensor_type(element_type(typ)):
                raise _GiveUp()
            return self.length(node) | self.elements(node)
        return self.value(node)

    def _bound_tensor(self, d: Any) -> frozenset:
        if d.kind == "for":
            raise _GiveUp()
        node = self.inf.value_of(d)
        if d.element is not None and node is self.inf.tree(d.value):
            return self._element_of_call(node, d.element, "tensor")
        return self.tensor(node)

    # -- calls -------------------------------------------------------------------------
    def _element_of_call(self, node: Expr, element: int, what: str) -> frozenset:
        """Element ``element`` of a call's tuple result (``a, b = f(x)``)."""
        for _ in range(4):  # `_9 = f(x)` then `a, b, = _9`
            if not isinstance(node, Name):
                break
            d = self.inf.single_def(node.id)
            value = self.inf.value_of(d) if d is not None and d.element is None else None
            if value is None:
                break
            node = value
        if isinstance(node, CallExpr) and self._op(node)[0] == "function":
            return self._call(node, what, element)
        raise _GiveUp()

    def _call(self, node: CallExpr, what: str, element: Optional[int]) -> frozenset:
        """A call into a function whose body is known: what its return value rests on,
        its parameters replaced by what the call passes."""
        callee = self.inf.callee_of(node)
        if callee is None or callee.qualified in self._active or len(self._active) > 8:
            raise _GiveUp()
        summary = _summary(callee, what, element, self._active)
        params = [p for p, _ in callee.params]
        receiver = node.func.value if isinstance(node.func, Attr) else None
        if receiver is not None and params and params[0] == self.sem.self_name:
            params = params[1:]
        given = dict(zip(params, node.args))
        given.update(node.keywords)
        out: set = set()
        for k in summary:
            if isinstance(k, str):
                out.add(k)
                continue
            asked, name = k
            arg = given.get(name)
            if arg is None:  # a default: a literal
                out.add("constant")
                continue
            out |= {"value": self.value, "none": self.none, "length": self.length, "elements": self.elements,
                    "shape": self.shape, "tensor": self.tensor}[asked](arg)
        if "data_dependent_size" in out:
            out.discard("data_dependent_size")
            if self.symbolic:
                out.add("data_dependent_size")
            else:
                self.shapes.append(node)  # the callee reads a data-dependent size: asked of the call
                out.add("tensor_shape")
        return frozenset(out)


def _summary(callee: Any, what: str, element: Optional[int], active: set) -> frozenset:
    """What a callee's return value (element ``element`` of a returned tuple) rests on, in
    terms of its parameters (memoized on the callee); _GiveUp when a tensor's value may
    reach it."""
    memo = getattr(callee, "_value_kinds", None)
    if memo is None:
        memo = callee._value_kinds = {}
    key = (what, element)
    if key in memo:
        found = memo[key]
        if found is None:
            raise _GiveUp()
        return found
    active.add(callee.qualified)
    try:
        inf = callee.inference
        reader = ValueKinds(FunctionDataDependence(inf), symbolic=True, active=active)
        out: set = set()
        try:
            ask = getattr(reader, what)
            for span, _ in inf.facts.returns:
                node = inf.tree(span)
                if element is None:
                    out |= ask(node)
                    continue
                items, chosen_by = _tuple_items(inf, node, element, 0)
                for item in items:
                    out |= ask(item)
                out |= reader._tests(chosen_by)
            result: Optional[frozenset] = frozenset(out)
        except _GiveUp:
            result = None
    finally:
        active.discard(callee.qualified)
    memo[key] = result
    if result is None:
        raise _GiveUp()
    return result


def _tuple_items(inf: Any, node: Expr, element: int, depth: int) -> tuple[list, list]:
    """The expressions item ``element`` of a returned tuple can be (through locals bound to
    tuple displays), and the definitions chosen between on the way; _GiveUp otherwise."""
    if depth > _MAX_TUPLE_DEPTH:
        raise _GiveUp()
    if isinstance(node, Seq) and node.kind == "tuple" and element < len(node.items):
        return [node.items[element]], []
    if isinstance(node, CallExpr) and isinstance(node.func, Name) and node.func.id == "uninitialized":
        return [], []  # a placeholder where the code raises
    if isinstance(node, Name):
        defs = [d for d in inf.facts.defs.get(node.id, ()) if d.kind == "assign" and d.value is not None
                and (d.element is None or inf.value_of(d) is not inf.tree(d.value))]
        if not defs or len(defs) != len(inf.facts.defs.get(node.id, ())):
            raise _GiveUp()
        items: list = []
        chosen: list = list(defs) if len(defs) > 1 else []
        for d in defs:
            found, more = _tuple_items(inf, inf.value_of(d), element, depth + 1)
            items += found
            chosen += more
        return items, chosen
    raise _GiveUp()

"""Data-dependent shapes: which sizes depend on tensor values.

``torch.export`` traces with symbolic sizes.  The output of ``nonzero``,
``masked_select``, ``x[mask]``, ``unique``, ``repeat_interleave`` with tensor repeats
(``grammars/semantics.toml`` ``[export]``) has a size no example decides, and so has
a factory or view whose size comes from a tensor's value (``torch.zeros([int(n)])``).
A branch or loop that reads such a size (``size``, ``numel``, ``len``) fails to
export; one that reads an input's size only specializes.

This module answers that for one function, over the definitions that
:mod:`codeparse.infer.names` exposes (``FunctionFacts.defs``, ``Names.value_of``):

* :meth:`FunctionDataDependence.shape` -- for a ``tensor_shape`` condition: whether
  a size it reads is data-dependent, and the spans of the producers (the ``nonzero``
  call, or in another function the call that returns it);
* :meth:`FunctionDataDependence.value_related` -- for a ``tensor_value`` condition:
  the spans of the conversions (``bool(...)``, ``torch.item(...)``) it rests on, which
  is where torch reports the failure as often as at the ``if``;
* :meth:`FunctionDataDependence.conversions` -- ``int``/``float``/``bool`` of a
  tensor's value anywhere in the function;
* :class:`ValueKinds` -- for a condition inference files as ``tensor_value`` (or a
  conversion): what its Python value rests on when no tensor's value reaches it (a list's
  length, whether a value is None, a dict's keys, sizes, arguments, attributes), read from
  the text and its types through calls; the export rules take that kind instead.

Calls are followed through the callees that inference knows
(:class:`codeparse.infer.callees.Callee`: the same text, or any file of an archive):
each gets, once, a summary "does what it returns have a data-dependent size, and
where is that made?".  A producer in another file is reported at the call site in
this one.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from ..parse.expressions import Attr, CallExpr, Const, Expr, Index, Name, Seq

__all__ = ["ExportTable", "FunctionDataDependence", "ValueKinds", "export_table", "returns_data_dependent"]

_MAX_DEPTH = 32
_NOT = None  # "not data-dependent"


class ExportTable:
    """``[export]`` of ``grammars/semantics.toml``, as sets."""

    def __init__(self, data: dict[str, Any]):
        table = data["export"]
        self.producers = frozenset(table["data_dependent_outputs"])
        self.single_argument = frozenset(table["single_argument_outputs"])
        self.literal_static = frozenset(table["literal_static"])
        self.mask_indexing = frozenset(table["mask_indexing"])
        self.bool_results = frozenset(table["bool_results"])
        self.size_arguments = frozenset(table["size_arguments"])
        self.shape_reads = frozenset(table["shape_reads"])
        self.conversions = frozenset(table["scalar_conversions"])
        self.number_conversions = frozenset(table["number_conversions"])
        self.item_reads = frozenset(table["item_reads"])
        self.value_reading = dict(table["value_reading_arguments"])
        self.no_data_operators = frozenset(table["no_data_operators"])
        self.like_factories = frozenset(table["like_factories"])
        self.runtime_values = dict(table["export_runtime_values"])
        self.unbacked_size_factories = frozenset(table["unbacked_size_factories"])


@functools.cache
def export_table() -> ExportTable:
    from ..grammar.engine import load_semantics

    return ExportTable(load_semantics())


def returns_data_dependent(callee: Any) -> Optional[frozenset]:
    """Producer spans when what ``callee`` returns has a data-dependent size (memoized on it)."""
    cached = getattr(callee, "_data_dependent_returns", False)
    if cached is not False:
        return cached
    callee._data_dependent_returns = _NOT  # recursion cut
    inf = callee.inference
    dd = FunctionDataDependence(inf)
    result = _union(dd.tensor(inf.tree(span), 0) for span, _ in inf.facts.returns)
    callee._data_dependent_returns = result
    return result


def returns_parameters(callee: Any) -> frozenset:
    """The parameters of ``callee`` whose data-dependent size its return value keeps
    (``clip_boxes_to_image(boxes, size)`` returns a tensor the size of ``boxes``);
    memoized on it."""
    cached = getattr(callee, "_data_dependent_parameters", None)
    if cached is not None:
        return cached
    callee._data_dependent_parameters = frozenset()  # recursion cut
    inf = callee.inference
    dd = FunctionDataDependence(inf, parameters=True)
    found = _union(dd.tensor(inf.tree(span), 0) for span, _ in inf.facts.returns) or ()
    result = frozenset(item[1] for item in found if item[0] == _PARAMETER)
    callee._data_dependent_parameters = result
    return result


_PARAMETER = "parameter"  # marks (_PARAMETER, name) among producer spans: "what the caller passes"


class FunctionDataDependence:
    """The data-dependence questions about one function (see the module docs)."""

    def __init__(self, inference: Any, parameters: bool = False):
        self.inf = inference
        # With ``parameters``, a parameter's size is a producer of its own, (_PARAMETER, name).
        self.parameters = parameters
        self.table = export_table()
        self._memo: dict[int, Optional[frozenset]] = {}
        self._ops: dict[tuple[int, int], tuple[str, Optional[str]]] = {}  # call span -> _op
        self._assigns: dict[str, list] = {}  # name -> its assignments with a value
        self._inplace_names: Optional[set[str]] = None

    # -- helpers -------------------------------------------------------------
    def _op(self, node: CallExpr) -> tuple[str, Optional[str]]:
        """``("operator", "nonzero")``, ``("function", qualified)``, ``("intrinsic", name)``..."""
        key = (node.start, node.end)  # the same text: the same answer, within one function
        found = self._ops.get(key)
        if found is None:
            found = self._ops[key] = self._find_op(node)
        return found

    def _find_op(self, node: CallExpr) -> tuple[str, Optional[str]]:
        method = self.inf.method_operator(node)
        if method is not None:
            return "operator", method.rpartition(":")[2]
        kind, target = self.inf.callee_target(node.func)
        if kind == "operator" and target:
            return kind, target.rpartition(":")[2]
        return kind, target

    def _defs(self, name: str) -> list:
        found = self._assigns.get(name)
        if found is None:
            if name in self.inf.facts.params:
                found = []
            else:
                # Assignments, and mutations (`torch.append(l, v)`: l holds what is appended).
                found = [d for d in self.inf.facts.defs.get(name, ()) if d.kind in ("assign", "mutate")
                         and d.value is not None]
            self._assigns[name] = found
        return found

    def _is_tensor_operand(self, node: Expr) -> bool:
        if isinstance(node, Const):
            return False
        if isinstance(node, Name) and node.id in self.inf.sem.literals:
            return False
        typ = self.inf.expr_type(node)
        return typ is None or typ in self.inf.sem.tensor_types

    # -- data-dependent sizes --------------------------------------------------
    def tensor(self, node: Expr, depth: int) -> Optional[frozenset]:
        """Producer spans (start, end) when the value of ``node`` has a data-dependent size, else None."""
        if depth > _MAX_DEPTH:
            return _NOT
        if isinstance(node, Name):
            if self.parameters and node.id in self.inf.facts.params:
                return frozenset({(_PARAMETER, node.id)})
            key = ("name", node.id)
            if key in self._memo:
                return self._memo[key]
            self._memo[key] = _NOT  # cycle guard (loop-carried names)
            found: set[tuple[int, int]] = set()
            hit = False
            for d in self._defs(node.id):
                value = self.inf.value_of(d)
                r = self.tensor(value, depth + 1) if value is not None else _NOT
                if r is not None:
                    hit = True
                    found.update(r)
            result = frozenset(found) if hit else _NOT
            self._memo[key] = result
            return result
        if isinstance(node, (Index, Seq)):
            return _union(self.tensor(c, depth + 1) for c in node.children())
        if isinstance(node, CallExpr):
            return self._call(node, depth)
        return _NOT

    def _call(self, node: CallExpr, depth: int) -> Optional[frozenset]:
        t = self.table
        func = node.func
        args = node.args
        operands = [*args, *(v for _, v in node.keywords)]
        callee = self.inf.callee_of(node)
        if callee is not None:  # a function or method whose body is known: what it returns
            return self._callee(callee, node, depth)
        kind, name = self._op(node)
        if kind == "intrinsic":
            if name in self.inf.sem.value_intrinsics and args:
                return self.tensor(args[-1], depth + 1)
            return _NOT
        if kind != "operator" or not name:
            return _NOT
        if name in t.single_argument and len(args) == 1 and not node.keywords:
            return frozenset({(node.start, node.end)})
        if name in t.producers:
            if name in t.literal_static and len(args) > 1 and all(isinstance(a, Const) for a in args[1:2]):
                return self.tensor(args[0], depth + 1)
            return frozenset({(node.start, node.end)})
        if name in t.mask_indexing and len(args) > 1 and self._has_mask(args[1], depth):
            return frozenset({(node.start, node.end)})
        if name in t.size_arguments:
            sizes = args[1:] if name not in ("zeros", "ones", "empty", "full", "rand", "randn", "arange",
                                             "linspace", "randint") else args
            conv = _union(self.value_conversions(a, depth + 1) for a in sizes)
            if conv is not None:
                return conv
        return _union(self.tensor(a, depth + 1) for a in operands)

    def _callee(self, callee: Any, call: CallExpr, depth: int = 0) -> Optional[frozenset]:
        spans = returns_data_dependent(callee)
        passed = self._passed(callee, call, depth)
        if spans is None:
            if passed is None:
                return _NOT
            return frozenset({(call.start, call.end), *passed})
        if callee.inference.text is self.inf.text:
            return frozenset({(call.start, call.end), *spans, *(passed or ())})
        return frozenset({(call.start, call.end), *(passed or ())})  # a producer in another file: its call site here

    def _passed(self, callee: Any, call: CallExpr, depth: int) -> Optional[frozenset]:
        """Producers of the arguments whose data-dependent size the callee returns."""
        names = returns_parameters(callee)
        if not names:
            return _NOT
        params = [name for name, _ in callee.params]
        if params and params[0] == "self" and isinstance(call.func, Attr):
            params = params[1:]
        given = dict(zip(params, call.args))
        given.update(call.keywords)
        return _union(self.tensor(given[name], depth + 1) for name in names if name in given)

    def _has_mask(self, node: Expr, depth: int) -> bool:
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, Name):
            return any(self._has_mask(self.inf.value_of(d), depth + 1) for d in self._defs(node.id)
                       if self.inf.value_of(d) is not None)
        if isinstance(node, Seq):
            return any(self._has_mask(i, depth + 1) for i in node.items)
        if isinstance(node, CallExpr):
            kind, name = self._op(node)
            if kind == "intrinsic" and name in self.inf.sem.value_intrinsics and node.args:
                return self._has_mask(node.args[-1], depth + 1)
            return kind == "operator" and name in self.table.bool_results
        return False

    def value_conversions(self, node: Expr, depth: int = 0) -> Optional[frozenset]:
        """Spans of conversions of tensor values (`int(t)`, `torch.item(t)`) beneath ``node``."""
        if depth > _MAX_DEPTH:
            return _NOT
        if isinstance(node, Name):
            key = ("value", node.id)
            if key in self._memo:
                return self._memo[key]
            self._memo[key] = _NOT
            result = _union(self.value_conversions(self.inf.value_of(d), depth + 1) for d in self._defs(node.id)
                            if self.inf.value_of(d) is not None)
            self._memo[key] = result
            return result
        if isinstance(node, (Index, Seq)):
            return _union(self.value_conversions(c, depth + 1) for c in node.children())
        if isinstance(node, CallExpr):
            kind, name = self._op(node)
            inner = _union(self.value_conversions(c, depth + 1) for c in [*node.args, *(v for _, v in node.keywords)])
            if kind == "operator" and name and name in self.inf.sem.value_ops:
                if name not in self.inf.sem.conversions or (node.args and self._is_tensor_operand(node.args[0])):
                    return frozenset({(node.start, node.end), *(inner or ())})
            return inner
        if isinstance(node, Attr):
            return self.value_conversions(node.value, depth + 1)
        return _NOT

    def mutated_in_place(self) -> set[str]:
        """Names an in-place operator (``add_``, ``copy_``, ``index_put_``) writes into."""
        if self._inplace_names is None:
            found: set[str] = set()
            for defs in self.inf.facts.defs.values():
                for d in defs:
                    node = self.inf.value_of(d) if d.value is not None else None
                    if not isinstance(node, CallExpr):
                        continue
                    kind, name = self._op(node)
                    if kind != "operator" or not name or not (name.endswith("_") and not name.startswith("_")
                                                               or name in ("_set_item", "__setitem__")):
                        continue
                    target = node.func.value if self.inf.method_operator(node) is not None else (
                        node.args[0] if node.args else None)
                    for _ in range(_MAX_DEPTH):  # through the views it writes into (`t[0:2] = v`)
                        if isinstance(target, CallExpr) and self._op(target)[0] == "operator" and target.args:
                            target = target.args[0]
                            continue
                        if not isinstance(target, Name) or target.id in found:
                            break
                        found.add(target.id)
                        bound = self.inf.single_def(target.id)
                        target = self.inf.value_of(bound) if bound is not None else None
            self._inplace_names = found
        return self._inplace_names

    # -- the questions -----------------------------------------------------------
    def shape(self, node: Expr) -> Optional[frozenset]:
        """Producer spans (start, end) when a shape read in ``node`` reads a data-dependent size.

        ``shape_operands`` then holds the operands whose size is read, as printed.
        """
        self.shape_operands: list[str] = []
        found: set[tuple[int, int]] = set()
        hit = False
        seen: set[int] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, Name):
                for d in self._defs(n.id):
                    value = self.inf.value_of(d)
                    if value is not None and id(value) not in seen:
                        seen.add(id(value))
                        stack.append(value)
                continue
            if isinstance(n, CallExpr):
                kind, name = self._op(n)
                if kind == "operator" and name in self.table.shape_reads and n.args:
                    read = n.args[0]
                    if name in self.inf.sem.tensor_only and not self._is_tensor_operand(read):
                        # `len(t.tolist())` is t's size; of any other list, the list's length
                        read = self._listed_from(read, 0)
                    if read is not None:
                        r = self.tensor(read, 0)
                        if r is not None:
                            hit = True
                            found.update(r)
                            text = self.inf.text[read.start:read.end]
                            if text not in self.shape_operands:
                                self.shape_operands.append(text)
                        continue
            stack.extend(n.children())
        return frozenset(found) if hit else _NOT

    def _listed_from(self, node: Expr, depth: int) -> Optional[Expr]:
        """The tensor a list was made from by ``tolist()`` (through locals), or None."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, Name):
            defs = self._defs(node.id)
            if len(defs) != 1:
                return None
            value = self.inf.value_of(defs[0])
            return self._listed_from(value, depth + 1) if value is not None else None
        if isinstance(node, CallExpr):
            kind, name = self._op(node)
            if kind == "intrinsic" and name in self.inf.sem.value_intrinsics and node.args:
                return self._listed_from(node.args[-1], depth + 1)
            if kind == "operator" and name == "tolist":
                return node.func.value if self.inf.method_operator(node) is not None else (
                    node.args[0] if node.args else None)
        return None

    def conversions(self, calls: list[dict]) -> list[tuple[int, int]]:
        """Spans of ``int``/``float``/``bool`` calls on tensor values among ``calls``: of a
        tensor not built from literals alone, or ``int``/``float`` of a number ``item()``
        read from a tensor (export cannot specialize that unbacked number); and of the
        operators that read a tensor argument's values (``value_reading_arguments``)."""
        out = []
        reading = self.table.value_reading
        for call in calls:
            target = call.get("target") or ""
            name = target.rpartition(":")[2]
            if call["kind"] != "operator" or (name not in self.table.conversions and name not in reading):
                continue
            span = call["span"]
            node = self.inf.tree((span["start"], span["end"]))
            if not isinstance(node, CallExpr) or not node.args:
                continue
            if name in reading:  # `torch.lstm(data, batch_sizes, ...)`: reads batch_sizes' values
                # The other overloads take a list there (`lstm(input, [h, c], ...)`, int[] lengths).
                if self._reads_values(node, reading[name]):
                    out.append((span["start"], span["end"]))
                continue
            arg = node.args[0]
            if self._is_tensor_operand(arg):
                if not self.literal(arg, 0):
                    out.append((span["start"], span["end"]))
            elif name in self.table.number_conversions and self._item_number(arg, 0) is not None:
                out.append((span["start"], span["end"]))
        return out

    def _listed(self, node: Expr) -> bool:
        return isinstance(node, Seq) or (self.inf.expr_type(node) or "").startswith("List")

    def _reads_values(self, node: CallExpr, rule: dict) -> bool:
        """The overload of ``node`` that reads the values of its argument ``rule["read"]``:
        a tensor there (not a list, not a literal), and a list at ``rule["list"]``."""
        args = node.args
        read, listed = rule["read"], rule.get("list")
        if len(args) <= max(read, listed or 0):
            return False
        if listed is not None and not self._listed(args[listed]):
            return False
        arg = args[read]
        return not isinstance(arg, Const) and not self._listed(arg) and not self.literal(arg, 0)

    def literal(self, node: Expr, depth: int) -> bool:
        """``node``'s value is built from literals alone (``torch.tensor(4.).log2()``): no data."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, Const):
            return True
        if isinstance(node, Name):
            if node.id in self.inf.sem.literals:
                return True
            if node.id in self.mutated_in_place():  # `t[0:1] = x[0:1]` writes data into it
                return False
            defs = self._defs(node.id)
            return bool(defs) and all(self.literal(self.inf.value_of(d), depth + 1) for d in defs
                                      if self.inf.value_of(d) is not None)
        if isinstance(node, Seq):
            return all(self.literal(i, depth + 1) for i in node.items)
        if isinstance(node, CallExpr):
            kind, _ = self._op(node)
            if kind not in ("operator", "intrinsic"):
                return False
            # A method on a local (`t.log2()`) reads its receiver; `torch.log2(t)` does not.
            receiver = [node.func.value] if self.inf.method_operator(node) is not None else []
            return all(self.literal(a, depth + 1) for a in [*receiver, *node.args, *(v for _, v in node.keywords)])
        return False

    def _item_number(self, node: Expr, depth: int) -> Optional[Expr]:
        """The tensor ``node``'s number was read from by ``item()`` (through locals), or None."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, Name):
            for d in self._defs(node.id):
                value = self.inf.value_of(d)
                found = self._item_number(value, depth + 1) if value is not None else None
                if found is not None:
                    return found
            return None
        if isinstance(node, CallExpr):
            kind, name = self._op(node)
            if kind == "intrinsic" and name in self.inf.sem.value_intrinsics and node.args:
                return self._item_number(node.args[-1], depth + 1)
            if kind == "operator" and name in self.table.item_reads:
                read = node.func.value if self.inf.method_operator(node) is not None else (
                    node.args[0] if node.args else None)
                if read is not None and not self.literal(read, depth + 1):
                    return read
        return None


def _union(results) -> Optional[frozenset]:
    out: set[tuple[int, int]] = set()
    hit = False
    for r in results:
        if r is not None:
            hit = True
            out.update(r)
    return frozenset(out) if hit else _NOT


# -- what a condition's or a conversion's Python value reads --------------------------
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
        return [d for d in self.inf.facts.defs.get(name, ()) if d.value is not None or d.kind == "for"]

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
            if self._is_tensor_type(typ) or role in ("parameter", "buffer"):
                raise _GiveUp()
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
    if depth > _MAX_DEPTH:
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

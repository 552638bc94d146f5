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
* :meth:`FunctionDataDependence.first_dim_only` -- whether the text decides that a
  tensor's data-dependent size lies in dimension 0 alone (``x[keep]``, ``nonzero`` and
  what keeps their other dimensions), so that a read of dimensions 1 and up
  (:func:`past_first_dimension`: ``t.size(1)``, ``t.shape[2:]``) is a static size;

Calls are followed through the callees that inference knows
(:class:`codeparse.infer.callees.Callee`: the same text, or any file of an archive):
each gets, once, a summary "does what it returns have a data-dependent size, and
where is that made?".  A producer in another file is reported at the call site in
this one.  A callee's "dimension 0 alone" summary is made per set of parameters its caller
passes a data-dependent size (the others hold none).

Given ``ruled_out`` (:data:`RuledOut`: the export rules pass the branches the saved module
values rule out, such as ``if self.training:`` saved in eval mode), what such a branch
defines or returns is left out, in the function and in the summaries of its callees.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from ..parse.expressions import Attr, CallExpr, Const, Expr, Index, Name, Seq

__all__ = ["ExportTable", "FunctionDataDependence", "RuledOut", "export_table", "past_first_dimension",
           "returns_data_dependent", "returns_first_dim_only"]

_MAX_DEPTH = 32
_NOT = None  # "not data-dependent"
_VALUE_KINDS = ("assign", "mutate")  # the definitions whose value a name holds (_defs)
# The operators whose call past_first_dimension reads (_call_past_first_dimension): a size
# of one dimension (`torch.size(t, d)`) and a slice.
_SIZE_OPERATORS = ("size", "sym_size")
_SLICE_OPERATOR = "slice"
_PAST_FIRST_OPERATORS = frozenset((*_SIZE_OPERATORS, _SLICE_OPERATOR))


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
        # What FunctionDataDependence.conversions looks at.
        self.conversions_or_reading = self.conversions | frozenset(self.value_reading)
        self.no_data_operators = frozenset(table["no_data_operators"])
        self.like_factories = frozenset(table["like_factories"])
        self.runtime_values = dict(table["export_runtime_values"])
        self.unbacked_size_factories = frozenset(table["unbacked_size_factories"])
        self.first_dim_outputs = frozenset(table["first_dim_outputs"])
        self.same_shape = frozenset(table["same_shape"])
        self.first_dim_keeping = frozenset(table["first_dim_keeping"])
        self.first_dim_from = dict(table["first_dim_from"])
        self.first_dim_views = frozenset(table["first_dim_views"])
        self.first_dim_factories = dict(table["first_dim_factories"])
        self.container_views = frozenset(table["container_views"])


@functools.cache
def export_table() -> ExportTable:
    from ..grammar.engine import load_semantics

    return ExportTable(load_semantics())


def returns_data_dependent(callee: Any, ruled_out: "RuledOut" = None) -> Optional[frozenset]:
    """Producer spans when what ``callee`` returns has a data-dependent size (memoized on it,
    per ``ruled_out``)."""
    memo = _memo(callee, "_data_dependent_returns")
    if ruled_out in memo:
        return memo[ruled_out]
    memo[ruled_out] = _NOT  # recursion cut
    inf = callee.inference
    dd = FunctionDataDependence(inf, ruled_out=ruled_out)
    result = memo[ruled_out] = _union(dd.tensor(inf.tree(span), 0) for span in dd.returns())
    return result


def returns_parameters(callee: Any, ruled_out: "RuledOut" = None) -> frozenset:
    """The parameters of ``callee`` whose data-dependent size its return value keeps
    (``clip_boxes_to_image(boxes, size)`` returns a tensor the size of ``boxes``);
    memoized on it, per ``ruled_out``."""
    memo = _memo(callee, "_data_dependent_parameters")
    if ruled_out in memo:
        return memo[ruled_out]
    memo[ruled_out] = frozenset()  # recursion cut
    inf = callee.inference
    dd = FunctionDataDependence(inf, parameters=True, ruled_out=ruled_out)
    found = _union(dd.tensor(inf.tree(span), 0) for span in dd.returns()) or ()
    result = memo[ruled_out] = frozenset(item[1] for item in found if item[0] == _PARAMETER)
    return result


def returns_first_dim_only(callee: Any, ruled_out: "RuledOut" = None,
                           static: frozenset = frozenset()) -> Optional[frozenset]:
    """Whether what ``callee`` returns is data-dependent in dimension 0 alone when each of
    its parameters is, but those named in ``static``, which hold no data-dependent size (see
    :meth:`FunctionDataDependence.first_dim_only`): the parameters the answer takes so (an
    empty set when it takes none), or None when it is not; memoized on it, per
    ``ruled_out`` and ``static``."""
    memo = _memo(callee, "_first_dim_only")
    key = (ruled_out, static)
    if key in memo:
        return memo[key]
    memo[key] = None  # recursion cut
    inf = callee.inference
    dd = FunctionDataDependence(inf, parameters=True, rows_given=True, ruled_out=ruled_out, static=static)
    returns = [inf.tree(span) for span in dd.returns()]
    held = bool(returns) and all(dd.first_dim_only(r) for r in returns)
    result = memo[key] = frozenset(dd.assumed) if held else None
    return result


def _memo(callee: Any, name: str) -> dict:
    """A summary's memo on ``callee``, keyed by ``ruled_out`` (or None; with more of what the
    answer depends on) -> the answer.  The key holds the object itself (so that its identity
    is never reused): one program's answers with the branches its saved values rule out,
    apart from the answers with every branch."""
    memo = getattr(callee, name, None)
    if memo is None:
        memo = {}
        setattr(callee, name, memo)
    return memo


def past_first_dimension(node: Expr, operator: Any) -> Optional[Expr]:
    """The tensor whose sizes ``node`` reads when it reads dimensions 1 and up alone, a
    literal decides it: ``torch.size(t, 1)``, ``torch.slice(torch.size(t), 2)`` (``t.shape[2:]``),
    ``torch.size(t)[1]``; else None.  ``operator(call)`` names a call's operator (or None)."""
    if isinstance(node, CallExpr) and node.args:
        return _call_past_first_dimension(node.args, operator(node), operator)
    if isinstance(node, Index) and len(node.items) == 1 and _from_one(node.items[0]):
        return _all_sizes(node.value, operator)
    return None


def _call_past_first_dimension(args: list, name: Optional[str], operator: Any) -> Optional[Expr]:
    """:func:`past_first_dimension` of a call with arguments ``args`` whose operator is
    ``name`` (None: no operator), for a caller that has asked the operator already."""
    if name in _SIZE_OPERATORS and len(args) == 2 and _from_one(args[1]):
        return args[0]
    if name == _SLICE_OPERATOR and len(args) >= 2 and _from_one(args[1]):
        return _all_sizes(args[0], operator)
    return None


def _all_sizes(node: Expr, operator: Any) -> Optional[Expr]:
    """``t`` of ``torch.size(t)``, else None."""
    if isinstance(node, CallExpr) and len(node.args) == 1 and not node.keywords and operator(node) == "size":
        return node.args[0]
    return None


def _negative(node: Expr) -> bool:
    """A literal integer below 0."""
    if not isinstance(node, Const):
        return False
    try:
        return int(node.text) < 0
    except ValueError:
        return False


def _from_one(node: Expr) -> bool:
    """A literal integer of 1 or more."""
    return isinstance(node, Const) and node.text.isdigit() and int(node.text) >= 1


_PARAMETER = "parameter"  # marks (_PARAMETER, name) among producer spans: "what the caller passes"

#: ``ruled_out(inference)``: the ``if`` statements of that function (:attr:`Scope.key`) and
#: the branch of each that cannot run (``"then"``/``"else"``), as a set of pairs; None asks
#: nothing (every branch may run).
RuledOut = Optional[Callable[[Any], frozenset]]


class FunctionDataDependence:
    """The data-dependence questions about one function (see the module docs)."""

    # One object per function parsed (most ask it only for conversions): attributes in
    # slots, set by one constructor.
    __slots__ = ("inf", "parameters", "rows_given", "assumed", "static", "ruled_out", "_dead", "_rows", "table",
                 "_tensors", "_value_conversions", "_ops", "_assigns", "_name_values", "_inplace_names",
                 "_literals", "_literal_deepest", "_literal_cuts", "shape_operands")

    def __init__(self, inference: Any, parameters: bool = False, rows_given: bool = False,
                 ruled_out: RuledOut = None, static: frozenset = frozenset()):
        self.inf = inference
        # With ``parameters``, a parameter's size is a producer of its own, (_PARAMETER, name).
        self.parameters = parameters
        # With ``rows_given``, :meth:`first_dim_only` takes each parameter as data-dependent in
        # dimension 0 alone (a callee's summary: the caller checks its arguments), and
        # ``assumed`` collects the parameters it took so.
        self.rows_given = rows_given
        self.assumed: set[str] = set()
        # Parameters every caller passes a tensor of no data-dependent size (of the
        # ``rows_given`` ones: those not taken so).
        self.static = static
        # With ``ruled_out``, a definition (a return) in a branch it rules out (the saved
        # module never runs it: ``if self.training:`` saved in eval mode) is left out, here
        # and in the summaries of the callees followed.
        self.ruled_out = ruled_out
        self._dead: Optional[frozenset] = None
        self._rows: dict[str, bool] = {}  # name -> first_dim_only
        self.table = export_table()
        # tensor / value_conversions of names, each answer remembered once complete (_NameWalk;
        # made when a name is first asked)
        self._tensors: Optional[_NameWalk] = None
        self._value_conversions: Optional[_NameWalk] = None
        self._ops: dict[tuple[int, int], tuple[str, Optional[str]]] = {}  # call span -> _op
        self._assigns: dict[str, list] = {}  # name -> its assignments with a value
        self._name_values: dict[str, list] = {}  # name -> the values of those (_values)
        self._inplace_names: Optional[set[str]] = None
        # literal: name -> (answer, depth asked at, how far below its walk went, cut by the
        # bound); the deepest depth the walk under way reached and the cuts it met so far.
        self._literals: dict[str, tuple[bool, int, int, bool]] = {}
        self._literal_deepest = 0
        self._literal_cuts = 0

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
            elif self.ruled_out is None:  # every branch runs (what runs() answers then)
                # Assignments, and mutations (`torch.append(l, v)`: l holds what is appended).
                found = [d for d in self.inf.facts.defs.get(name, ()) if d.kind in _VALUE_KINDS
                         and d.value is not None]
            else:
                found = [d for d in self.inf.facts.defs.get(name, ()) if d.kind in _VALUE_KINDS
                         and d.value is not None and self.runs(d.scopes)]
            self._assigns[name] = found
        return found

    def _values(self, name: str) -> list:
        """The values of ``name``'s definitions (:meth:`_defs`) that have one, read in the
        order of the definitions; remembered per name."""
        found = self._name_values.get(name)
        if found is None:
            value_of = self.inf.value_of
            found = self._name_values[name] = [v for v in map(value_of, self._defs(name)) if v is not None]
        return found

    def runs(self, scopes: tuple) -> bool:
        """No ``if`` around a position takes, there, a branch that :attr:`ruled_out` rules out."""
        if self.ruled_out is None:
            return True
        if self._dead is None:
            self._dead = self.ruled_out(self.inf) or frozenset()
        return not self._dead or not any(s.kind == "if" and (s.key, s.branch) in self._dead for s in scopes)

    def returns(self) -> list[tuple[int, int]]:
        """The spans of the function's return values, but for returns in ruled-out branches."""
        return [span for span, scopes in self.inf.facts.returns if self.runs(scopes)]

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
        kind = type(node)
        if kind is CallExpr:
            return self._call(node, depth)
        if kind is Name:
            name = node.id
            if self.parameters and name in self.inf.facts.params and name not in self.static:
                return frozenset({(_PARAMETER, name)})
            walk = self._tensors
            if walk is None:
                walk = self._tensors = _NameWalk()
            return walk.answer(name, self.tensor, self.inf.value_of, self._defs, depth + 1)
        if kind is Index:
            return _each(self.tensor, [node.value, *node.items], depth + 1)
        if kind is Seq:
            return _each(self.tensor, node.items, depth + 1)
        return _NOT

    def _call(self, node: CallExpr, depth: int) -> Optional[frozenset]:
        t = self.table
        args = node.args
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
            conv = _each(self.value_conversions, sizes, depth + 1)
            if conv is not None:
                return conv
        return _each(self.tensor, [*args, *(v for _, v in node.keywords)] if node.keywords else args, depth + 1)

    def _callee(self, callee: Any, call: CallExpr, depth: int = 0) -> Optional[frozenset]:
        spans = returns_data_dependent(callee, self.ruled_out)
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
        names = returns_parameters(callee, self.ruled_out)
        if not names:
            return _NOT
        given = _bound(callee, call)
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
        kind = type(node)
        if kind is Name:
            name = node.id
            walk = self._value_conversions
            if walk is None:
                walk = self._value_conversions = _NameWalk()
            return walk.answer(name, self.value_conversions, self.inf.value_of, self._defs, depth + 1)
        if kind is CallExpr:
            kind, name = self._op(node)
            args = node.args
            inner = _each(self.value_conversions, [*args, *(v for _, v in node.keywords)] if node.keywords else args,
                          depth + 1)
            if kind == "operator" and name and name in self.inf.sem.value_ops:
                if name not in self.inf.sem.conversions or (args and self._is_tensor_operand(args[0])):
                    return frozenset({(node.start, node.end), *(inner or ())})
            return inner
        if kind is Index:
            return _each(self.value_conversions, [node.value, *node.items], depth + 1)
        if kind is Seq:
            return _each(self.value_conversions, node.items, depth + 1)
        if kind is Attr:
            return self.value_conversions(node.value, depth + 1)
        return _NOT

    def mutated_in_place(self) -> set[str]:
        """Names an in-place operator (``add_``, ``copy_``, ``index_put_``) writes into."""
        if self._inplace_names is None:
            found: set[str] = set()
            may_write = _writer_finder(self.inf.sem, self.inf.reader.max_depth)
            text = self.inf.text
            for defs in self.inf.facts.defs.values():
                for d in defs:
                    if d.value is None or not may_write(text, *d.value):
                        continue
                    node = self.inf.value_of(d)
                    if not isinstance(node, CallExpr):
                        continue
                    kind, name = self._op(node)
                    if kind != "operator" or not name or not _in_place(name):
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

        A walk down from ``node`` through the definitions of the names it meets (each value
        once); a read of dimensions 1 and up of a tensor data-dependent in dimension 0 alone
        (:func:`past_first_dimension`) is a static size, nothing beneath it is walked.  The
        questions are asked node by node in the walk's order (a call's operator first)."""
        self.shape_operands: list[str] = []
        found: set[tuple[int, int]] = set()
        hit = False
        seen: set[int] = set()
        stack = [node]
        op = self._op
        name_values = self._name_values
        reads = self.table.shape_reads
        tensor_only = self.inf.sem.tensor_only
        while stack:
            n = stack.pop()
            kind = type(n)
            if kind is Name:
                values = name_values.get(n.id)
                if values is None:
                    values = self._values(n.id)
                for value in values:
                    if id(value) not in seen:
                        seen.add(id(value))
                        stack.append(value)
                continue
            if kind is CallExpr:
                args = n.args
                okind, name = op(n)  # the question past_first_dimension asks first
                if args and okind == "operator":
                    if name in _PAST_FIRST_OPERATORS:
                        beyond = _call_past_first_dimension(args, name, self._operator_name)
                        if beyond is not None and self.first_dim_only(beyond):
                            continue  # `kept.size(1)` of `kept = x[keep]`: a static size
                    if name in reads:
                        read = args[0]
                        if name in tensor_only and not self._is_tensor_operand(read):
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
                stack.append(n.func)
                stack.extend(args)
                if n.keywords:
                    stack.extend(v for _, v in n.keywords)
                continue
            if kind is Index:
                beyond = past_first_dimension(n, self._operator_name)
                if beyond is not None and self.first_dim_only(beyond):
                    continue
            stack.extend(n.children())
        return frozenset(found) if hit else _NOT

    def _operator_name(self, node: CallExpr) -> Optional[str]:
        kind, name = self._op(node)
        return name if kind == "operator" else None

    def first_dim_only(self, node: Expr, depth: int = 0) -> bool:
        """Whether the text decides that no size of ``node``'s value but dimension 0's can be
        data-dependent (``x[keep]``, ``nonzero``, and what keeps their other dimensions:
        ``[export]`` ``first_dim_outputs``, ``same_shape``, ``first_dim_keeping``); a
        value with no data-dependent size at all is.  False wherever it cannot tell."""
        if depth > _MAX_DEPTH:
            return False
        typ = self.inf.expr_type(node)
        if typ is not None and "Tensor" not in typ:  # a number, a list of numbers
            return self._static_number(node, depth)
        if isinstance(node, Name) and node.id in self.inf.facts.params:
            if self.parameters and node.id not in self.static:
                if self.rows_given:
                    self.assumed.add(node.id)
                return self.rows_given
            return self.tensor(node, depth) is None
        if self.tensor(node, depth) is None:
            return True
        if isinstance(node, Name):
            found = self._rows.get(node.id)
            if found is not None:
                return found
            self._rows[node.id] = False  # cycle guard: a value carried round a loop is not decided
            values = [v for v in (self._put(d) for d in self._defs(node.id)) if v is not False]
            result = bool(values) and all(v is not None and self.first_dim_only(v, depth + 1) for v in values)
            self._rows[node.id] = result
            return result
        if isinstance(node, Seq):  # a list's (tuple's) elements
            return all(self.first_dim_only(i, depth + 1) for i in node.items)
        if isinstance(node, Index):  # an element of a list, a value of a dict, of a tensor
            if self._static_number(node, depth + 1):
                return True
            return self.first_dim_only(node.value, depth + 1) and all(self._number(i) for i in node.items)
        if not isinstance(node, CallExpr):
            return False
        callee = self.inf.callee_of(node)
        if callee is not None:
            # The summary takes the parameters given a tensor of no data-dependent size (or
            # left to their defaults) as such, the others as data-dependent in dimension 0
            # alone: each argument of those its answer rests on must be.
            given = _bound(callee, node)
            varying = {p: a for p, a in given.items() if self.tensor(a, depth + 1) is not None}
            static = frozenset(p for p, _ in callee.params if p not in varying)
            assumed = returns_first_dim_only(callee, self.ruled_out, static)
            if assumed is None:
                return False
            return all(self.first_dim_only(a, depth + 1) for p, a in varying.items() if p in assumed)
        kind, name = self._op(node)
        if kind == "intrinsic" and name in self.inf.sem.value_intrinsics and node.args:
            return self.first_dim_only(node.args[-1], depth + 1)
        t = self.table
        if kind != "operator" or not name:
            return False
        if name in t.first_dim_outputs or name in t.single_argument and len(node.args) == 1 and not node.keywords:
            return True  # `torch.where(mask)`: 1-dimensional tensors
        operands = [*node.args, *(v for _, v in node.keywords)]
        if self.inf.method_operator(node) is not None:
            operands = [node.func.value, *operands]
        if not operands:
            return False
        if name in t.first_dim_views:
            dim = operands[1] if len(operands) > 1 else None
            bounds = operands[2:]
            if dim is not None and not isinstance(dim, Const):
                return False
            along_first = dim is None or dim.text == "0"
            literal = all(isinstance(b, Const) or isinstance(b, Name) and b.id == "None" for b in bounds)
            return (name == "select" or along_first or literal) and self.first_dim_only(operands[0], depth + 1)
        if name in t.container_views:  # `torch.items(d)`: d's values
            return self.first_dim_only(operands[0], depth + 1)
        if name in t.first_dim_factories:  # sizes [n, c, h, w]: n any, the others static numbers
            at = t.first_dim_factories[name]
            return at < len(operands) and self._sizes_past_first(operands[at], depth + 1)
        if name in t.first_dim_from:
            at = t.first_dim_from[name]
            # The other dimensions come from the other tensors' dimensions 1 and up (`input`'s
            # channels) and from numbers.
            return at < len(operands) and all(self.first_dim_only(o, depth + 1) for o in operands)
        if name in t.same_shape:
            return self.first_dim_only(operands[0], depth + 1) and all(self._number(o) for o in operands[1:])
        if name not in t.first_dim_keeping:
            return False
        if name in t.mask_indexing:  # one index tensor: more broadcast against each other
            index = self._display(operands[1]) if len(operands) == 2 else None
            if not (isinstance(index, Seq) and len(index.items) == 1):
                return False
            # A boolean mask's sizes are the ones it selects from (x's first dimensions):
            # only an index tensor's own sizes lead the result's.
            return self.first_dim_only(operands[0], depth + 1) and (
                self._has_mask(index.items[0], depth + 1) or self.first_dim_only(index.items[0], depth + 1))
        if name == "index_select":  # along dimension 0 only
            if len(operands) != 3 or not (isinstance(operands[1], Const) and operands[1].text == "0"):
                return False
            return self.first_dim_only(operands[0], depth + 1) and self.first_dim_only(operands[2], depth + 1)
        first = operands[0]
        tensors = first.items if isinstance(first, Seq) else [first]
        return (all(self.first_dim_only(o, depth + 1) for o in tensors)
                and all(self._no_size(o, depth + 1) for o in operands[1:]))

    def _sizes_past_first(self, node: Expr, depth: int) -> bool:
        """A list of sizes whose items after the first are static numbers, none a -1 (a view
        fills that in from its operand's size): a display, or a display with a list of static
        numbers added (`[n, c] + output_size`); or all the sizes of a tensor data-dependent in
        dimension 0 alone (`torch.size(t)`)."""
        node = self._display(node)
        every = _all_sizes(node, self._operator_name)
        if every is not None:
            return self.first_dim_only(every, depth + 1)
        if isinstance(node, Seq):
            return all(self._static_number(i, depth + 1) and not _negative(i) for i in node.items[1:])
        if isinstance(node, CallExpr) and len(node.args) == 2 and self._operator_name(node) == "add":
            head = self._display(node.args[0])
            return (isinstance(head, Seq) and len(head.items) >= 1 and self._sizes_past_first(head, depth + 1)
                    and self._static_number(node.args[1], depth + 1))
        return False

    def _put(self, d: Any) -> Any:
        """What a definition puts into its name, for :meth:`first_dim_only`: the value
        assigned; of a list mutation (``append``, ``_set_item``), the element; False for an
        in-place operator (``index_put_``, ``add_``: the shape of what it writes into stays)."""
        value = self.inf.value_of(d)
        if d.kind != "mutate" or not isinstance(value, CallExpr):
            return value
        kind, name = self._op(value)
        if kind != "operator" or not name:
            return None
        if name in self.inf.sem.mutators:
            return value.args[-1] if value.args else None
        if name.endswith("_") and not name.startswith("_") and not name.startswith("resize"):
            return False
        return None

    def _number(self, node: Expr) -> bool:
        """A literal, or an expression typed as no tensor."""
        if isinstance(node, Const) or isinstance(node, Name) and node.id in self.inf.sem.literals:
            return True
        typ = self.inf.expr_type(node)
        return typ is not None and "Tensor" not in typ

    def _static_number(self, node: Expr, depth: int) -> bool:
        """A number (list of numbers) that no data-dependent size or tensor value reaches;
        a parameter's as :meth:`first_dim_only` takes parameters."""
        if isinstance(node, Const) or isinstance(node, Name) and node.id in self.inf.sem.literals:
            return True
        if isinstance(node, Name) and node.id in self.inf.facts.params and self.parameters:
            if self.rows_given:
                self.assumed.add(node.id)
            return self.rows_given
        beyond = past_first_dimension(node, self._operator_name)
        if beyond is not None:
            return self.first_dim_only(beyond, depth + 1)
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, (Index, Seq)):  # an item of a list, a display
            return all(self._static_number(n, depth + 1) for n in node.children())
        if isinstance(node, Name) and node.id not in self.inf.facts.params:
            key = "#" + node.id
            found = self._rows.get(key)
            if found is None:
                self._rows[key] = False  # cycle guard
                values = [self.inf.value_of(d) for d in self._defs(node.id)]
                found = self._rows[key] = bool(values) and all(
                    v is not None and self._static_number(v, depth + 1) for v in values)
            return found
        if isinstance(node, CallExpr):
            kind, name = self._op(node)
            if kind == "intrinsic" and name == "uninitialized":
                return True  # a placeholder where the code raises
            if kind == "intrinsic" and name in self.inf.sem.value_intrinsics and node.args:
                return self._static_number(node.args[-1], depth + 1)
        return self.tensor(node, depth) is None and self.value_conversions(node, depth) is None

    def _no_size(self, node: Expr, depth: int) -> bool:
        """``node`` is a tensor with no data-dependent size, or a static number (a
        convolution's stride)."""
        if self._is_tensor_operand(node):
            return self.tensor(node, depth) is None
        return self._static_number(node, depth)

    def _display(self, node: Expr) -> Expr:
        """``node`` without the ``annotate(T, ...)`` TorchScript wraps a list display in,
        through locals bound once."""
        for _ in range(_MAX_DEPTH):
            if isinstance(node, Name):
                defs = self._defs(node.id)
                if len(defs) != 1 or self.inf.value_of(defs[0]) is None:
                    break
                node = self.inf.value_of(defs[0])
                continue
            if not isinstance(node, CallExpr) or not node.args:
                break
            kind, name = self._op(node)
            if kind != "intrinsic" or name not in self.inf.sem.value_intrinsics:
                break
            node = node.args[-1]
        return node

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
        asked = self.table.conversions_or_reading
        for call in calls:
            if call["kind"] != "operator":
                continue
            target = call.get("target")
            if not target:
                continue
            name = target.rpartition(":")[2]
            if name not in asked:
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
        """``node``'s value is built from literals alone (``torch.tensor(4.).log2()``): no data.

        The answer for a name is remembered with the depth it was asked at, how far below
        that its walk went and whether the depth bound cut it; it is reused where the walk
        would give it again (see _remembered_literal)."""
        if depth > _MAX_DEPTH:
            self._literal_cuts += 1
            return False
        if depth > self._literal_deepest:
            self._literal_deepest = depth
        if isinstance(node, Const):
            return True
        if isinstance(node, Name):
            if node.id in self.inf.sem.literals:
                return True
            if node.id in self.mutated_in_place():  # `t[0:1] = x[0:1]` writes data into it
                return False
            found = self._literals.get(node.id)
            if found is not None:
                answer = self._remembered_literal(found, depth)
                if answer is not None:
                    return answer
            cuts, deepest = self._literal_cuts, self._literal_deepest
            self._literal_deepest = depth
            defs = self._defs(node.id)
            value_of = self.inf.value_of
            result = bool(defs) and all(self.literal(value, depth + 1) for value in map(value_of, defs)
                                        if value is not None)
            self._literals[node.id] = (result, depth, self._literal_deepest - depth, self._literal_cuts != cuts)
            if deepest > self._literal_deepest:
                self._literal_deepest = deepest
            return result
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

    def _remembered_literal(self, found: tuple, depth: int) -> Optional[bool]:
        """The answer :meth:`literal` remembered for a name, asked again at ``depth``, where
        its walk would give the same (else None: walk again).  The answer can only fall as
        the depth grows (the bound's cut is a False under an ``all``): True, reached without
        a cut, holds at any depth from which the walk stays within the bound; False without a
        cut holds at any depth (some definition is no literal, or the cut comes first); False
        with a cut, at the same depth or deeper."""
        result, at, below, cut = found
        if result:
            if depth <= at or depth + below <= _MAX_DEPTH:
                if depth + below > self._literal_deepest:
                    self._literal_deepest = depth + below
                return True
            return None
        if not cut:
            return False
        if depth >= at:
            self._literal_cuts += 1
            return False
        return None

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


_IN_PLACE_NAMES = ("_set_item", "__setitem__")  # in-place writers whose names do not end in `_`


def _in_place(name: str) -> bool:
    """An operator that writes into its first operand (``add_``, ``index_put_``, ``_set_item``)."""
    return name.endswith("_") and not name.startswith("_") or name in _IN_PLACE_NAMES


@functools.lru_cache(maxsize=16)
def _writer_finder(sem: Any, max_depth: int) -> Callable[[str, int, int], bool]:
    """``may_write(text, start, end)``: whether the expression ``text[start:end]`` may be a
    call of an in-place operator (:func:`_in_place`) or may not be read without meeting the
    expression reader's depth limit (which it records); False only when neither can be, so
    :meth:`FunctionDataDependence.mutated_in_place` need not read it.  An operator's name is
    the callee's last part (a method, ``torch.add_``, ``ops.aten.add_``: ``_(`` is in the
    text) or a builtin's table entry; a prefix template that does not end with the name
    makes every expression a candidate.  The reader nests one level per bracket, so an
    expression with no more openers than ``max_depth`` cannot reach the limit."""
    if not all(template.endswith("{op}") for _, template in sem.prefixes):
        return lambda text, start, end: True
    needles = ["_(", *_IN_PLACE_NAMES]
    needles += [f"{name}(" for name, op in sem.builtins.items() if _in_place(op.rpartition(":")[2])]

    def may_write(text: str, start: int, end: int) -> bool:
        for needle in needles:
            if text.find(needle, start, end) != -1:
                return True
        if end - start <= max_depth:  # no more openers than characters
            return False
        return text.count("(", start, end) + text.count("[", start, end) + text.count("{", start, end) > max_depth

    return may_write


def _bound(callee: Any, call: CallExpr) -> dict[str, Expr]:
    """The arguments of a call by the callee's parameter names (``self`` left out where a
    method is called on a receiver)."""
    params = [name for name, _ in callee.params]
    if params and params[0] == "self" and isinstance(call.func, Attr):
        params = params[1:]
    given = dict(zip(params, call.args))
    given.update(call.keywords)
    return given


class _NameWalk:
    """The answers of one question about names (:meth:`FunctionDataDependence.tensor`,
    ``value_conversions``), each the union of the answers for the values of the name's
    definitions, remembered per name once complete.

    A name met again while it is walked (a value carried round a loop) answers None there,
    so what its walk gives the names walked inside it lacks what it reaches itself: such an
    answer holds only inside the walk of the name met again.  Names that reach each other
    so are one strongly connected component (Tarjan's algorithm: each name walked gets a
    number, ``low`` is the smallest number of a name under way that the walk met), and
    every name of a component takes the answer of its first name walked, once that walk
    is done (each reaches what the others reach).  So no name keeps an answer that
    depends on which question was asked first (but for a walk the depth bound cut, whose
    answer depends on the depth its name was first reached at)."""

    __slots__ = ("answers", "numbers", "partial", "stack", "low", "count")

    def __init__(self):
        self.answers: dict[str, Optional[frozenset]] = {}  # name -> its answer for good
        self.numbers: dict[str, int] = {}  # name walked, not answered for good -> its number
        self.partial: dict[str, Optional[frozenset]] = {}  # walked inside its component: what it gave
        self.stack: list[str] = []  # the names of `numbers`, in the order walked
        self.low = 1 << 62
        self.count = 0

    def answer(self, name: str, ask: Callable[[Expr, int], Optional[frozenset]], value_of: Callable,
               defs_of: Callable[[str], list], depth: int) -> Optional[frozenset]:
        """The answer for ``name``: the union of ``ask`` over the values of its definitions
        (``defs_of(name)``)."""
        found = self.answers.get(name, self)
        if found is not self:
            return found
        number = self.numbers.get(name)
        if number is not None:  # met again inside its own component
            if number < self.low:
                self.low = number
            return self.partial.get(name, _NOT)
        number = self.numbers[name] = self.count
        self.count += 1
        outer, self.low = self.low, number
        stack = self.stack
        mark = len(stack)
        stack.append(name)
        try:
            result = _each(ask, defs_of(name), depth, value_of)
        except BaseException:  # nothing under way stays marked so
            for member in stack[mark:]:
                del self.numbers[member]
                self.partial.pop(member, None)
            del stack[mark:]
            self.low = outer
            raise
        low = self.low
        if low >= number:  # the first name of its component: every name of it is done
            answers, numbers, partial = self.answers, self.numbers, self.partial
            for member in stack[mark:]:
                answers[member] = result
                del numbers[member]
                partial.pop(member, None)
            del stack[mark:]
        else:
            self.partial[name] = result
        self.low = outer if outer < low else low
        return result


def _each(ask: Callable[[Expr, int], Optional[frozenset]], nodes, depth: int,
          value_of: Optional[Callable] = None) -> Optional[frozenset]:
    """The union of ``ask(node, depth)`` over ``nodes``, each asked in turn (None when
    every answer is None): what :func:`_union` gives for them, without a set made where
    at most one answer holds spans.  With ``value_of``, ``nodes`` are definitions and each
    is asked about its value (those with one), read just before it is asked about."""
    found = None
    more = None
    for node in nodes:
        if value_of is not None:
            node = value_of(node)
            if node is None:
                continue
        r = ask(node, depth)
        if r is not None:
            if found is None:
                found = r
            elif more is None:
                more = set(found)
                more.update(r)
            else:
                more.update(r)
    return frozenset(more) if more is not None else found


def _union(results) -> Optional[frozenset]:
    out: set[tuple[int, int]] = set()
    hit = False
    for r in results:
        if r is not None:
            hit = True
            out.update(r)
    return frozenset(out) if hit else _NOT

"""The IR oracle: what TorchScript's own graph says about each method.

The oracle answers, from ``method.graph`` alone, the questions that codeparse answers from
code text: how many ``if`` statements a method has and what each condition depends on
(ConditionKind), which attributes it reads through ``self`` and which methods it calls on
what.  ``tests/test_oracle.py`` compares the two.  This module must never import
``codeparse``: its answers come from torch only.

Condition provenance (the rules of docs/how-it-works.md, "What a condition depends on")
---------------------------------------------------------------------------------------
The marking and runtime tables are ``grammars/semantics.toml`` ``[conditions]``, read here as
data (the parser reads the same table).  Starting from the ``prim::If`` condition value we
walk back through producers:

* A node whose op name (namespace stripped) *marks* a kind sets the mode for everything
  beneath it; walking down, the first marking op met (the one nearest the condition) keeps
  its mode (rule 8).  ``tensor_value`` ops: :data:`TENSOR_VALUE_OPS` (the conversions only on a
  Tensor); ``tensor_shape`` ops: :data:`TENSOR_SHAPE_OPS`, any ``is_*`` op that is not runtime,
  ``len``/``__len__`` of a Tensor, and the ``prim::`` ops in :data:`PRIM_TENSOR_SHAPE_OPS`.
  ``runtime`` ops (:data:`RUNTIME_OPS`, :data:`RUNTIME_PREFIXES`, and ``prim::CallFunction`` of
  a compiled helper named by its full name in :data:`RUNTIME_FUNCTIONS`) are sources of kind
  ``runtime`` in their own right (rule 1).
* Sources without a marking op above them take their natural kind: a ``prim::GetAttr`` chain
  rooted at ``self`` is ``attribute`` (the walk stops there), a graph input other than
  ``self`` is ``argument``, a ``prim::Constant`` is ``constant``, anything else that cannot
  be followed is ``unknown``.  Constants *beneath* a marking op take that op's mode
  (``torch.rand(1).item()`` is ``tensor_value``: rule 2).
* List mutators (:data:`MUTATORS`: ``aten::append(l, v)``, ...) are definitions of the list:
  a list value also depends on what its mutators add (rule 2), and on the ifs and loops
  around the mutation that do not surround the list's creation -- where the mutation can
  run before the use: it comes before the node that reads the value (in the graph's
  pre-order), or a loop encloses both (a later pass).  A mutation after the use, such as
  ``info["size"] = ...`` inside the then-block of ``if "size" not in info:``, is no
  definition at that use.  An object built in the code (``prim::CreateObject``, or any object
  value that is not a graph input or a path from one: a call's result, an If or Loop output)
  is defined the same way by its ``__init__`` call (every argument), by ``prim::SetAttr`` on
  it (the value set) and by a call of a method whose graph sets an attribute of its object,
  or whose graph is not followed (every argument): ``box.x`` read after ``Box(x * 2, y)``
  depends on ``x`` and ``y``.
* Calls are followed (rule 3): the receiver of a ``prim::CallMethod`` is a source (a path
  rooted at self is ``attribute``); when the callee's graph is known (``follow=True``) the
  walk enters it at its outputs, in a frame of its own where the callee's inputs lead back
  to the call's operands and its ``self`` paths are prefixed with the receiver's path.
  Without the callee's graph the call depends on its operands.  (The opposite was encoded
  before calls were followed: the module receiver was not a source and bodies were never followed, so
  ``if self.sub.ready():`` was ``constant``.)
* An output of a ``prim::If`` depends on the same output of both blocks and on the If's own
  condition.  An output of a ``prim::Loop`` depends on the trip count, the initial
  condition, the block's continue-condition output, the initial value and the block's
  output for that carried value.  Inside the body, only what changes from pass to pass
  depends on the loop (rule 7: the trip count is what a trace unrolls): the counter and
  the carried values (block inputs) depend on the trip count, the initial condition and
  the continue-condition the body computes (a ``while`` test computed again at the end of
  the body), a carried value also on its initial value and the previous pass's; a value
  computed in the body depends on the loop only through what it is computed from, so a
  loop-invariant one (``self.training`` read in the body) keeps its own kind.  Cycles are
  cut with a visited set.
* The condition kind is the highest-priority kind among everything reached
  (:data:`KIND_PRIORITY`: tensor_value, tensor_shape, argument, attribute, runtime,
  unknown, constant); nothing reached at all means ``constant``.

``if_sources`` is restricted to *named attribute and argument sources*: refs are
``self.<path>`` (or ``self``) and argument names; each ref appears once, with the
highest-priority kind through which it reaches the condition.  Runtime sources, constants
and unknowns count towards the kind but are not listed.

Not done: the methods of non-module TorchScript classes are included only when the
compilation unit is known (:func:`load_archive`).
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import re
import warnings
import zipfile
from collections import Counter
from typing import Any, Iterable, Iterator, Optional

import torch

__all__ = [
    "KIND_PRIORITY",
    "MethodFacts",
    "method_facts",
    "module_facts",
    "load_archive",
    "best_kind",
]

KIND_PRIORITY: tuple[str, ...] = (
    "tensor_value",
    "tensor_shape",
    "argument",
    "attribute",
    "runtime",
    "unknown",
    "constant",
)
_RANK = {k: i for i, k in enumerate(KIND_PRIORITY)}

def _load_table() -> dict:
    """``grammars/semantics.toml`` ``[conditions]``: the marking and runtime tables the
    parser reads too (one table).  Read as data, never through codeparse."""
    import tomllib

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grammars", "semantics.toml")
    with open(path, "rb") as f:
        return tomllib.load(f)["conditions"]


_TABLE = _load_table()

#: Ops whose result is (derived from) the contents of a tensor.
TENSOR_VALUE_OPS = frozenset(_TABLE["tensor_value"])
#: The Python conversions ``bool()``/``int()``/``float()``/``complex()`` mark
#: ``tensor_value`` only when applied to a Tensor (the "on a Tensor" rule).
CONVERSION_OPS = frozenset(_TABLE["tensor_value_conversions"])
CONVERSIONS_REQUIRE_TENSOR = True

#: Ops whose result is tensor metadata (aten:: or prim::), besides every ``is_*`` op.
TENSOR_SHAPE_OPS = frozenset(_TABLE["tensor_shape"])
PRIM_TENSOR_SHAPE_OPS = frozenset(_TABLE["prim_tensor_shape"])
LEN_OPS = frozenset(_TABLE["tensor_only"])

#: Ops that read global runtime state (sources of kind ``runtime``), by name and prefix.
RUNTIME_OPS = frozenset(_TABLE["runtime"])
RUNTIME_PREFIXES = tuple(_TABLE["runtime_prefixes"])
#: Compiled helpers that read runtime state, by fully qualified name (after ``__torch__.``):
#: matched by full name, so a user's own ``is_compiling`` is user code, followed like any other.
RUNTIME_FUNCTIONS = frozenset(_TABLE["runtime_functions"])
#: Copies of the tracing predicates in user code, by last name: runtime when the compiled body
#: returns constants only, or is not available.
RUNTIME_FUNCTION_COPIES = frozenset(_TABLE["runtime_function_copies"])
#: Operators that mutate their first operand (a list or dict): definitions of it.
MUTATORS = frozenset(_TABLE["list_mutators"])

_NAME_SUFFIX = re.compile(r"\.\d+$")


@dataclasses.dataclass
class MethodFacts:
    """What one method (or free function) graph says.

    ``if_kinds``/``if_sources``/``if_lines``: one entry per ``prim::If``, nested ones
    included, in pre-order (the textual order of the printed code).  ``if_sources`` holds
    ``(ref, kind)`` for named attribute and argument sources only (see the module
    docstring).  ``if_lines`` is where the ``if`` is in the archive's code text,
    ``(path under code/, 1-based line)``, when the graph was compiled from archive code
    (see :func:`code_location`), else ``None``.

    ``self_getattr_paths``: every ``prim::GetAttr`` rooted at self, as ``self.a.b`` /
    ``self.seq.0``.  ``callmethod_receivers``: for every ``prim::CallMethod``, the
    receiver's path from self (``self`` for self-method calls), ``None`` when not rooted
    at self.  ``arg_names``: the parameters, ``self`` included for methods.
    """

    qualified_name: str = ""
    if_kinds: list[str] = dataclasses.field(default_factory=list)
    if_sources: list[set[tuple[str, str]]] = dataclasses.field(default_factory=list)
    if_lines: list[Optional[tuple[str, int]]] = dataclasses.field(default_factory=list)
    self_getattr_paths: Counter = dataclasses.field(default_factory=Counter)
    callmethod_receivers: Counter = dataclasses.field(default_factory=Counter)
    arg_names: list[str] = dataclasses.field(default_factory=list)
    is_method: bool = False


def best_kind(kinds: Iterable[str]) -> str:
    """The highest-priority kind among ``kinds``; ``constant`` when there are none."""
    kinds = list(kinds)
    return min(kinds, key=_RANK.__getitem__) if kinds else "constant"


def _op_name(node: torch._C.Node) -> tuple[str, str]:
    kind = node.kind()
    ns, _, name = kind.partition("::")
    return ns, name


def _is_tensor(value: torch._C.Value) -> bool:
    return value.type().kind() == "TensorType"


def _order(graph: torch._C.Graph) -> tuple[dict, dict]:
    """Per node of a graph, nested blocks included: its pre-order number, and the number
    after its whole subtree (where a value its blocks return is read)."""
    pre: dict = {}
    after: dict = {}
    count = 0

    def visit(block) -> None:
        nonlocal count
        for node in block.nodes():
            pre[node] = count
            count += 1
            for sub in node.blocks():
                visit(sub)
            after[node] = count

    visit(graph.block())
    return pre, after


def _loops_around(node: torch._C.Node) -> list:
    out = []
    block = node.owningBlock()
    while block is not None:
        owner = block.owningNode()
        if owner is None:
            break
        if owner.kind() == "prim::Loop":
            out.append(owner)
        block = owner.owningBlock()
    return out


def _walk_nodes(block) -> Iterator[torch._C.Node]:
    """All nodes of a block, nested blocks included, in pre-order."""
    for node in block.nodes():
        yield node
        for sub in node.blocks():
            yield from _walk_nodes(sub)


def _defining_operands(use, an: Optional["_Analyzer"] = None) -> Optional[list]:
    """The operands a mutation defines the value it mutates with (the value is the use's
    first operand), or None when the use is no mutation: a list or dict mutator
    (``aten::append(l, v)``: ``v``), and on an object built in the code
    (:func:`_built_in_code`) its ``__init__`` call (every argument), an attribute set
    (``prim::SetAttr``: the value set) and a call of another method whose body sets an
    attribute of its object (every argument) or is not known (``an`` cannot find it: the
    method may set one)."""
    if use.offset != 0:
        return None
    user = use.user
    kind = user.kind()
    if kind.startswith("aten::") and kind[len("aten::"):] in MUTATORS:
        return list(user.inputs())[1:]
    if not _built_in_code(user.inputsAt(0)):
        return None
    if kind == "prim::SetAttr" or (kind == "prim::CallMethod" and user.s("name") == "__init__"):
        return list(user.inputs())[1:]
    if kind == "prim::CallMethod":
        callee = an._callee(user) if an is not None else None
        if callee is None or _sets_attributes(callee[1]):
            return list(user.inputs())[1:]
    return None


def _sets_attributes(graph: torch._C.Graph) -> bool:
    """Whether a method's graph sets an attribute of its own object (input 0)."""
    inputs = list(graph.inputs())
    if not inputs:
        return False
    obj = inputs[0].unique()
    return any(node.kind() == "prim::SetAttr" and node.inputsAt(0).unique() == obj
               for node in _walk_nodes(graph.block()))


def _built_in_code(value: torch._C.Value) -> bool:
    """Whether an object value is one the code made (``prim::CreateObject``, a call's
    result, an If or Loop output, a field read from such an object): neither an input of
    the graph nor a ``prim::GetAttr`` path from one (``self``'s state, a parameter's)."""
    while value.node().kind() == "prim::GetAttr":
        value = value.node().inputsAt(0)
    node = value.node()
    if node.kind() != "prim::Param" or node.owningBlock().owningNode() is not None:
        return True  # not an input of the graph (a loop's block input is a carried local)
    return False


def _is_mutated(value: torch._C.Value) -> bool:
    """Whether a read of ``value`` may see a mutation (any call on an object built in the
    code counts: the memo key then holds where the read is)."""
    return any(_defining_operands(u) is not None for u in value.uses())


class _Analyzer:
    def __init__(
        self,
        graph: torch._C.Graph,
        is_method: Optional[bool] = None,
        arg_names: Optional[list[str]] = None,
        module_types: Optional[set[str]] = None,
        lookup=None,
    ) -> None:
        self.graph = graph
        # qualified name -> (analyzer, graph) of a callee whose body is available, or None.
        self.lookup = lookup
        self.inputs = list(graph.inputs())
        if arg_names is None:
            arg_names = [_NAME_SUFFIX.sub("", v.debugName()) for v in self.inputs]
        self.arg_names = list(arg_names)
        if is_method is None:
            is_method = bool(self.inputs) and self.arg_names[0] == "self"
        self.is_method = is_method
        self.self_value = self.inputs[0] if is_method and self.inputs else None
        self.input_index = {v.unique(): i for i, v in enumerate(self.inputs)}
        self.module_types = module_types
        self._path_cache: dict[int, Optional[str]] = {}

    # --- self paths -------------------------------------------------------------------
    def self_path(self, value: torch._C.Value) -> Optional[str]:
        """``self`` / ``self.a.b`` when ``value`` is self or a GetAttr chain from it."""
        if self.self_value is None:
            return None
        key = value.unique()
        if key in self._path_cache:
            return self._path_cache[key]
        path: Optional[str] = None
        if value.unique() == self.self_value.unique():
            path = "self"
        else:
            node = value.node()
            if node.kind() == "prim::GetAttr":
                base = self.self_path(node.inputsAt(0))
                if base is not None:
                    path = f"{base}.{node.s('name')}"
        self._path_cache[key] = path
        return path

    def is_module(self, value: torch._C.Value) -> bool:
        t = value.type()
        kind = t.kind()
        if kind == "ClassType":
            if self.module_types is not None:
                return t.qualified_name() in self.module_types
            # Without the module types, a class-typed value rooted at self is taken to be
            # a submodule (script-class attributes are rare).
            return self.self_path(value) is not None
        if kind == "InterfaceType":
            return self.self_path(value) is not None
        return False

    # --- condition provenance ---------------------------------------------------------
    @staticmethod
    def _marking_mode(node: torch._C.Node) -> Optional[str]:
        ns, name = _op_name(node)
        if ns not in ("aten", "prim"):
            return None
        if name in TENSOR_VALUE_OPS:
            if name in CONVERSION_OPS and CONVERSIONS_REQUIRE_TENSOR:
                ins = list(node.inputs())
                if not ins or not _is_tensor(ins[0]):
                    return None
            return "tensor_value"
        if name in LEN_OPS:
            ins = list(node.inputs())
            return "tensor_shape" if ins and _is_tensor(ins[0]) else None
        if name in TENSOR_SHAPE_OPS:
            return "tensor_shape"
        if ns == "prim" and name in PRIM_TENSOR_SHAPE_OPS:
            return "tensor_shape"
        if name.startswith("is_") and not _Analyzer._is_runtime_op(node):
            return "tensor_shape"
        return None

    @staticmethod
    def _is_runtime_op(node: torch._C.Node) -> bool:
        ns, name = _op_name(node)
        if node.kind() == "prim::CallFunction":
            fn = _function_name(node)
            return bool(fn) and fn.partition(".")[2] in RUNTIME_FUNCTIONS
        if ns not in ("aten", "prim", "cuda"):
            return False
        return name in RUNTIME_OPS or name.startswith(RUNTIME_PREFIXES)

    def _is_runtime_copy(self, node: torch._C.Node) -> bool:
        """A call of a tracing predicate copied into user code, with no arguments, whose body
        returns constants only (or is not available)."""
        if node.kind() != "prim::CallFunction" or len(list(node.inputs())) != 1:
            return False
        fn = _function_name(node)
        if not fn or fn.rpartition(".")[2] not in RUNTIME_FUNCTION_COPIES:
            return False
        callee = self._callee(node)
        return callee is None or all(out.node().kind() == "prim::Constant" for out in callee[1].outputs())

    def _callee(self, node: torch._C.Node) -> Optional[tuple["_Analyzer", torch._C.Graph]]:
        """The analyzer of the graph a call runs, when its body is available (rule 3)."""
        if self.lookup is None:
            return None
        if node.kind() == "prim::CallFunction":
            name = _function_name(node)
        else:
            t = node.inputsAt(0).type()
            name = f"{t.qualified_name()}.{node.s('name')}" if t.kind() == "ClassType" else None
        return self.lookup(name) if name else None

    def self_sets(self, attr: str) -> list:
        """The ``prim::SetAttr`` nodes that set ``attr`` on this method's own self."""
        if self.self_value is None:
            return []
        found = getattr(self, "_self_sets", None)
        if found is None:
            found = self._self_sets = {}
            own = self.self_value.unique()
            for node in _walk_nodes(self.graph.block()):
                if node.kind() == "prim::SetAttr" and node.inputsAt(0).unique() == own:
                    found.setdefault(node.s("name"), []).append(node)
        return found.get(attr, [])

    def order(self) -> tuple[dict, dict]:
        """:func:`_order` of this analyzer's graph, computed once."""
        found = getattr(self, "_order_cache", None)
        if found is None:
            found = self._order_cache = _order(self.graph)
        return found

    def runs_before(self, mutation: torch._C.Node, at: Optional[tuple]) -> bool:
        """Whether ``mutation`` can run before the read at ``at`` (``(pre-order number, node)``
        of the reading node; None: at the end of the graph)."""
        if at is None:
            return True
        pre, _ = self.order()
        if pre.get(mutation, -1) < at[0]:
            return True
        reader = at[1]
        return reader is not None and any(loop in _loops_around(reader) for loop in _loops_around(mutation))

    def condition_sources(self, cond: torch._C.Value, reader: Optional[torch._C.Node] = None
                          ) -> tuple[str, set[tuple[str, str]]]:
        """``(kind, {(ref, kind)})`` for one condition value (refs: attributes, arguments).

        The walk runs over frames: the method's own graph, and the graph of each call it
        follows (rule 3), entered at the callee's outputs; a callee's inputs lead back to
        the call's operands in the caller's frame, its ``self`` paths to the receiver's.
        """
        named: dict[str, set[str]] = {}
        anon: set[str] = set()
        seen: set = set()
        # A frame: (analyzer, call node in the parent frame, parent frame, self prefix).
        top = (self, None, None, "self" if self.self_value is not None else None)
        frames = {0: top}
        frame_ids: dict = {}
        # A stack entry: (value, mode, frame, where it is read: (pre-order number, node) in
        # the frame's graph, or None at the end of a graph); `at` is the reading node.
        root = reader if reader is not None else (cond.uses()[0].user if cond.uses() else None)
        stack: list = [(cond, None, 0, (self.order()[0][root], root) if root is not None else None)]
        at_node: list = [None]  # the node whose operands are being pushed (None: the graph's end)

        def where(f: int) -> Optional[tuple]:
            node = at_node[0]
            if node is None:
                return None
            return frames[f][0].order()[0].get(node, 1 << 30), node

        def push(v: torch._C.Value, m: Optional[str], f: int, at: Any = False) -> None:
            at = where(f) if at is False else at
            if (f, v.unique(), m, at if _is_mutated(v) else None) not in seen:
                stack.append((v, m, f, at))

        def enter(call: torch._C.Node, callee: "_Analyzer", f: int, prefix: Optional[str]) -> int:
            key = (f, call.output().unique())
            if key not in frame_ids:
                frame_ids[key] = len(frames)
                frames[len(frames)] = (callee, call, f, prefix)
            return frame_ids[key]

        def loops_around(node: torch._C.Node, mode, f, stop_block) -> None:
            """A mutation depends on the ifs and loops around it up to ``stop_block`` (where
            the value it mutates was made): a loop runs it once per pass, so the value changes
            from pass to pass (rule 7)."""
            block = node.owningBlock()
            while block is not None and block is not stop_block:
                owner = block.owningNode()
                if owner is None:
                    break
                if owner.kind() == "prim::Loop":
                    ins = list(owner.inputs())
                    push(ins[0], mode, f)
                    push(ins[1], mode, f)
                    push(list(next(iter(owner.blocks())).outputs())[0], mode, f,
                         (frames[f][0].order()[1].get(owner, 1 << 30), owner))
                elif owner.kind() == "prim::If":
                    push(owner.inputsAt(0), mode, f)
                block = owner.owningBlock()

        while stack:
            value, mode, f, at = stack.pop()
            key = (f, value.unique(), mode, at if _is_mutated(value) else None)
            if key in seen:
                continue
            seen.add(key)
            an, call, parent, prefix = frames[f]

            # Rule 2: list mutators (`torch.append(l, v)`) are definitions of the list, and
            # `__init__`, attribute sets and methods that set attributes of an object built in
            # the code definitions of the object, where they can run before the read.
            for use in value.uses():
                user = use.user
                defining = _defining_operands(use, an)
                if defining is not None and an.runs_before(user, at):
                    at_node[0] = user
                    for v in defining:
                        push(v, mode, f)
                    loops_around(user, mode, f, value.node().owningBlock())
            node = value.node()
            # Operands are read by the node that produces this value; the values a block
            # returns are read at the end of the node that owns the block.
            at_node[0] = node

            path = an.self_path(value)
            if path is not None:
                # A read of an attribute of self that the method sets (prim::SetAttr on its
                # self) where the set can run before the read: also what was set, and the
                # ifs and loops around the set (the saved value stays a source).
                read = value.node()
                if read.kind() == "prim::GetAttr" and path.count(".") == 1:
                    for node_set in an.self_sets(path[len("self."):]):
                        if an.runs_before(node_set, (an.order()[0].get(read, 1 << 30), read)):
                            at_node[0] = node_set
                            push(node_set.inputsAt(1), mode, f)
                            loops_around(node_set, mode, f, an.graph.block())
                if call is None:
                    named.setdefault(path, set()).add(mode or "attribute")
                elif prefix is not None:
                    named.setdefault(prefix + path[len("self"):], set()).add(mode or "attribute")
                else:  # a receiver not rooted at self: its state is the object's
                    push(call.inputsAt(0), mode, parent, (frames[parent][0].order()[0].get(call, 1 << 30), call))
                continue
            idx = an.input_index.get(value.unique())
            if idx is not None:
                if call is None:
                    named.setdefault(an.arg_names[idx], set()).add(mode or "argument")
                else:
                    offset = 1 if call.kind() == "prim::CallFunction" else 0
                    push(call.inputsAt(idx + offset), mode, parent,
                         (frames[parent][0].order()[0].get(call, 1 << 30), call))
                continue

            node = value.node()
            kind = node.kind()
            if kind == "prim::Param":
                # A block input.
                owner = node.owningBlock().owningNode() if node.owningBlock() else None
                if owner is None or owner.kind() != "prim::Loop":
                    anon.add(mode or "unknown")
                    continue
                block_inputs = list(node.owningBlock().inputs())
                pos = [v.unique() for v in block_inputs].index(value.unique())
                loop_ins = list(owner.inputs())
                block_outs = list(node.owningBlock().outputs())
                # The counter and every carried value depend on the trip count and the
                # loop's test (rule 7); a carried value also on its initial value and the
                # previous iteration's.
                end = (an.order()[1].get(owner, 1 << 30), owner)
                at_node[0] = owner
                push(loop_ins[0], mode, f)
                push(loop_ins[1], mode, f)
                push(block_outs[0], mode, f, end)
                if pos > 0:
                    push(loop_ins[pos + 1], mode, f)
                    push(block_outs[pos], mode, f, end)
                continue
            if kind == "prim::Constant":
                if value.type().kind() != "FunctionType":
                    anon.add(mode or "constant")
                continue
            if kind == "prim::If":
                pos = _output_index(node, value)
                push(node.inputsAt(0), mode, f)
                end = (an.order()[1].get(node, 1 << 30), node)
                for block in node.blocks():
                    push(list(block.outputs())[pos], mode, f, end)
                continue
            if kind == "prim::Loop":
                pos = _output_index(node, value)
                loop_ins = list(node.inputs())
                block = next(iter(node.blocks()))
                block_outs = list(block.outputs())
                end = (an.order()[1].get(node, 1 << 30), node)
                push(loop_ins[0], mode, f)
                push(loop_ins[1], mode, f)
                push(block_outs[0], mode, f, end)
                push(loop_ins[pos + 2], mode, f)
                push(block_outs[pos + 1], mode, f, end)
                continue
            if an._is_runtime_op(node) or an._is_runtime_copy(node):
                anon.add("runtime")
                continue
            if kind == "prim::GetAttr":
                # Not rooted at self (that case was handled above): follow the object.
                push(node.inputsAt(0), mode, f)
                continue
            # Rule 8: the mark nearest the condition wins.
            new_mode = mode or an._marking_mode(node)
            ins = list(node.inputs())
            if kind in ("prim::CallMethod", "prim::CallFunction"):
                callee = an._callee(node)
                if kind == "prim::CallMethod":
                    push(ins[0], new_mode, f)  # rule 3: the receiver is a source
                    receiver_prefix = None
                    if callee is not None:
                        rp = an.self_path(ins[0])
                        if rp is not None and call is None:
                            receiver_prefix = rp
                        elif rp is not None and prefix is not None:
                            receiver_prefix = prefix + rp[len("self"):]
                else:
                    receiver_prefix = None
                if callee is not None:
                    callee_an, graph = callee
                    g = enter(node, callee_an, f, receiver_prefix)
                    for out in graph.outputs():
                        push(out, new_mode, g, None)
                    continue
                ins = ins[1:]
            for v in ins:
                push(v, new_mode, f)

        kinds = set(anon)
        for ks in named.values():
            kinds |= ks
        sources = {(ref, best_kind(ks)) for ref, ks in named.items()}
        return best_kind(kinds), sources

    def facts(self, qualified_name: str = "") -> MethodFacts:
        out = MethodFacts(
            qualified_name=qualified_name, arg_names=list(self.arg_names), is_method=self.is_method
        )
        for node in _walk_nodes(self.graph.block()):
            kind = node.kind()
            if kind == "prim::If":
                k, srcs = self.condition_sources(node.inputsAt(0), node)
                out.if_kinds.append(k)
                out.if_sources.append(srcs)
                out.if_lines.append(code_location(node))
            elif kind == "prim::GetAttr":
                path = self.self_path(node.output())
                if path is not None:
                    out.self_getattr_paths[path] += 1
            elif kind == "prim::CallMethod":
                out.callmethod_receivers[self.self_path(node.inputsAt(0))] += 1
        return out


_CODE_RANGE = re.compile(r'File "(?:[^"/]*/)?code/([^"]+)", line (\d+)')


def code_location(node: torch._C.Node) -> Optional[tuple[str, int]]:
    """``(path under code/, line)`` of a node compiled from archive code text, else ``None``.

    A loaded archive's nodes carry the range in the code they were compiled from (printed
    after "Serialized" when ``.debug_pkl`` also maps them back to the original Python).
    """
    found = _CODE_RANGE.findall(node.sourceRange())
    if not found:
        return None
    path, line = found[-1]
    return path, int(line)


def _output_index(node: torch._C.Node, value: torch._C.Value) -> int:
    for i, out in enumerate(node.outputs()):
        if out.unique() == value.unique():
            return i
    raise ValueError(f"value %{value.debugName()} is not an output of {node.kind()}")


def _function_name(node: torch._C.Node) -> Optional[str]:
    """Qualified name of the compiled function a ``prim::CallFunction`` calls, if constant."""
    fn = node.inputsAt(0)
    t = fn.type()
    if t.kind() != "FunctionType":
        return None
    name = t.annotation_str  # e.g. "__torch__.torch.nn.functional.relu"
    if name:
        return name
    producer = fn.node()
    if producer.kind() == "prim::Constant" and producer.hasAttribute("name"):
        return producer.s("name")
    return None


def method_facts(
    graph: torch._C.Graph,
    *,
    is_method: Optional[bool] = None,
    arg_names: Optional[list[str]] = None,
    module_types: Optional[set[str]] = None,
    qualified_name: str = "",
    lookup=None,
) -> MethodFacts:
    """Facts of one method or function graph.

    ``is_method``: whether input 0 is ``self`` (default: its debug name is ``self``).
    ``arg_names``: the parameter names (default: the inputs' debug names without ``.N``).
    ``module_types``: qualified names of module types, to tell a module receiver of a
    ``prim::CallMethod`` (not a dependency) from an object receiver (a dependency).
    """
    return _Analyzer(graph, is_method, arg_names, module_types, lookup).facts(qualified_name)


def _schema_names(fn) -> Optional[list[str]]:
    try:
        return [a.name for a in fn.schema.arguments]
    except Exception:  # pragma: no cover - schema always present in practice
        return None


class _Stub:
    """Stands in for every global named in an archive's pickles (never calls real code)."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        pass

    def __setitem__(self, key, value) -> None:
        pass

    def append(self, item) -> None:
        pass

    def extend(self, items) -> None:
        pass


class _StorageScanner(pickle._Unpickler):  # the pure-Python unpickler: its dispatch is ours
    """Reads a ``data.pkl``/``constants.pkl`` only to list the storages it refers to.

    Every global is a stub; TorchScript's pickles ``REDUCE`` enums with a bare argument,
    which the standard unpickler refuses, so REDUCE accepts that too.
    """

    dispatch = dict(pickle._Unpickler.dispatch)

    def _load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        self.stack[-1] = func(*args) if isinstance(args, tuple) else func(args)

    dispatch[pickle.REDUCE[0]] = _load_reduce

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.storages: list[tuple[str, str, int]] = []  # (key, storage type name, numel)

    def find_class(self, module: str, name: str):
        return type(name, (_Stub,), {"_qualname": f"{module}.{name}"})

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and pid and pid[0] == "storage":
            _, storage_type, key, _location, numel = pid[:5]
            self.storages.append((str(key), getattr(storage_type, "__name__", ""), int(numel)))
        return _Stub()


def _element_size(storage_type: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return getattr(torch, storage_type).dtype.itemsize
        except Exception:
            return 8


#: A backslash escape in code text: ``\\``, ``\"``, ``\'`` (kept) or any other.
_ESCAPE = re.compile(r"\\[\\'\"]|\\(.)", re.DOTALL)


def _hide_escapes(code: str) -> str:
    r"""Replace each escape other than ``\\``, ``\"``, ``\'`` by plain characters (``\r`` → ``_r``).

    TorchScript's printer writes escapes its own lexer rejects (``\r``, and octal ``\ooo``
    near the end of a literal: "ill formed octal specifier"), so such archives cannot be
    loaded back.  String contents never change the facts computed here, and the length is
    kept so that ``.debug_pkl`` ranges still fit.
    """
    return _ESCAPE.sub(lambda m: m.group(0) if m.group(1) is None else "_" + m.group(1), code)


def _patched_archive(path: str, fix_escapes: bool = False) -> Optional[bytes]:
    """The archive's bytes, repaired so that torch can load it; ``None`` if nothing to do.

    Repairs: tensor storages that fixtures strip (``<root>/data/<N>``, which
    ``torch.jit.load`` requires) are restored as zeros; with ``fix_escapes``, code entries get
    :func:`_hide_escapes`.
    """
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        pkls = [n for n in names if re.fullmatch(r"[^/]+/(data|constants)\.pkl", n)]
        missing: dict[str, int] = {}
        for pkl in pkls:
            root, _, fname = pkl.partition("/")
            folder = fname[: -len(".pkl")]
            scanner = _StorageScanner(z.read(pkl))
            scanner.load()
            for key, stype, numel in scanner.storages:
                entry = f"{root}/{folder}/{key}"
                if entry not in names:
                    missing[entry] = max(missing.get(entry, 0), numel * _element_size(stype))
        if not missing and not fix_escapes:
            return None
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as out:
            for info in z.infolist():
                data = z.read(info.filename)
                if fix_escapes and info.filename.endswith(".py") and "/code/" in info.filename:
                    data = _hide_escapes(data.decode("utf-8")).encode("utf-8")
                out.writestr(info.filename, data)
            for entry, nbytes in missing.items():
                out.writestr(entry, bytes(nbytes))
        return buf.getvalue()


def load_archive(path: str | os.PathLike) -> tuple[torch.jit.ScriptModule, torch._C.CompilationUnit]:
    """``torch.jit.load(path)``, also returning the compilation unit it compiled into.

    The compilation unit holds the graphs of the archive's free functions and classes, which
    the loaded module does not expose.  Stripped tensor storages are replaced by zeros, and
    an archive that torch cannot read back because of its string-escape bugs is retried
    with those escapes hidden (:func:`_hide_escapes`).  Custom ops the code calls
    (``ops.<ns>.<op>``) must be registered by the caller beforehand.
    """
    from torch.jit._recursive import wrap_cpp_module

    path = os.fspath(path)

    def attempt(fix_escapes: bool):
        cu = torch._C.CompilationUnit()
        patched = _patched_archive(path, fix_escapes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if patched is None:
                cpp_module = torch._C.import_ir_module(cu, path, None, {}, False)
            else:
                cpp_module = torch._C.import_ir_module_from_buffer(cu, patched, None, {}, False)
        return wrap_cpp_module(cpp_module), cu

    try:
        return attempt(False)
    except RuntimeError as exc:
        if "specifier" not in str(exc):
            raise
        return attempt(True)


def module_facts(
    scripted_module: torch.jit.ScriptModule,
    cu: Optional[torch._C.CompilationUnit] = None,
    follow: bool = True,
) -> dict[str, MethodFacts]:
    """Facts for every method of every module type in ``scripted_module.named_modules()``.

    Keys are ``"<type qualified name>.<method>"``.  Compiled free functions called (directly
    or transitively) through ``prim::CallFunction`` are included under their qualified name
    when their graph can be found: in ``cu`` (see :func:`load_archive`) or, for modules
    scripted in this process, in ``torch.jit._state._python_cu``.  With ``cu`` given, every
    other function the unit holds (methods of TorchScript classes) is included too.

    ``follow``: calls are followed into the callee's graph (rule 3: the body is available,
    as in an archive).  Without it, a call depends on its receiver and arguments, as for
    method text that holds no callee body.
    """
    modules = [m for _, m in scripted_module.named_modules()]
    module_types = {m._c._type().qualified_name() for m in modules}
    # qualified name -> (graph, is_method, arg names)
    graphs: dict[str, tuple] = {}
    order: list[str] = []
    pending: list[str] = []

    def note_calls(graph: torch._C.Graph) -> None:
        for node in _walk_nodes(graph.block()):
            if node.kind() == "prim::CallFunction":
                name = _function_name(node)
                if name and name not in graphs:
                    pending.append(name)

    for m in modules:
        tname = m._c._type().qualified_name()
        for meth_name in m._c._method_names():
            key = f"{tname}.{meth_name}"
            if key in graphs:
                continue
            meth = m._c._get_method(meth_name)
            graphs[key] = (meth.graph, True, _schema_names(meth))
            order.append(key)
            note_calls(meth.graph)

    if cu is None:
        import torch.jit._state as _state

        lookup_cu = _state._python_cu
    else:
        lookup_cu = cu

    def add_function(name: str, fn, listed: bool = True) -> None:
        graph = fn.graph
        names = _schema_names(fn)
        inputs = list(graph.inputs())
        is_method = bool(
            names and names[0] == "self" and inputs and inputs[0].type().kind() == "ClassType"
        )
        graphs[name] = (graph, is_method, names)
        if listed:
            order.append(name)
        note_calls(graph)

    def drain() -> None:
        while pending:
            name = pending.pop()
            if name not in graphs and (fn := lookup_cu.find_function(name)) is not None:
                add_function(name, fn)

    drain()
    if cu is not None:
        for fn in cu.get_functions():
            if fn.qualified_name not in graphs:
                add_function(fn.qualified_name, fn)
        drain()

    analyzers: dict[str, _Analyzer] = {}

    def analyzer(name: str) -> Optional[_Analyzer]:
        if name not in analyzers:
            if name not in graphs:
                # A method of a TorchScript class scripted in this process (an archive's
                # unit holds them all already): followed, not listed.
                fn = lookup_cu.find_function(name) if cu is None else None
                if fn is None:
                    return None
                add_function(name, fn, listed=False)
            graph, is_method, names = graphs[name]
            analyzers[name] = _Analyzer(graph, is_method, names, module_types, lookup if follow else None)
        return analyzers[name]

    def lookup(name: str):
        an = analyzer(name)
        return (an, an.graph) if an is not None else None

    return {name: analyzer(name).facts(name) for name in order}

"""The IR oracle: what TorchScript's own graph says about each method.

The oracle answers, from ``method.graph`` alone, the questions that codeparse answers from
code text: how many ``if`` statements a method has and what each condition depends on
(DESIGN.md §5), which attributes it reads through ``self`` and which methods it calls on
what.  ``tests/test_oracle.py`` compares the two.  This module must never import
``codeparse``: its answers come from torch only.

Condition provenance (the rules shared with the parser team)
-------------------------------------------------------------
Starting from the ``prim::If`` condition value we walk back through producers:

* A node whose op name (namespace stripped) *marks* a kind sets the mode for everything
  beneath it; walking down, a new marking op replaces the mode of an outer one, so the
  innermost marking op decides a source's kind.  ``tensor_value`` ops: :data:`TENSOR_VALUE_OPS`
  (the conversions ``Bool``/``Int``/``Float``/``Complex`` only when their argument
  is a Tensor, as DESIGN.md §5 says "on a Tensor": ``int(n)`` of an ``int`` is not a tensor
  value; see :data:`CONVERSIONS_REQUIRE_TENSOR`).  ``tensor_shape`` ops:
  :data:`TENSOR_SHAPE_OPS`, any ``is_*`` op that is not runtime, ``len``/``__len__`` of a
  Tensor, and the ``prim::`` ops in :data:`PRIM_TENSOR_SHAPE_OPS`.  ``runtime`` ops
  (:data:`RUNTIME_OPS`, ``is_autocast_*``, and ``prim::CallFunction`` of a compiled function
  named in :data:`RUNTIME_FUNCTIONS`) are sources of kind ``runtime`` in their own right.
* Sources without a marking op above them take their natural kind: a ``prim::GetAttr`` chain
  rooted at ``self`` is ``attribute`` (the walk stops there), a graph input other than
  ``self`` is ``argument``, a ``prim::Constant`` is ``constant``, anything else that cannot
  be followed is ``unknown``.  Constants *beneath* a marking op take that op's mode
  (``bool(torch.gt(torch.ones([3]), 0))`` is ``tensor_value``).
* Any other node depends on all of its inputs, except the module receiver (input 0) of a
  ``prim::CallMethod`` and the function constant of a ``prim::CallFunction``.  (So
  ``if self.sub.ready():`` is ``constant``: the receiver is not a source and the callee's
  body is not followed.)  Mutation is not tracked: ``torch.append(l, v)`` does not make
  ``l`` depend on ``v``.  A
  ``prim::GetAttr`` on an object not rooted at self follows the object.
* An output of a ``prim::If`` depends on the same output of both blocks and on the If's own
  condition.  An output of a ``prim::Loop`` depends on the trip count, the initial
  condition, the block's continue-condition output (a ``while`` re-evaluates its condition
  in the body), the initial value and the block's output for that carried value.  Inside
  the body, the iteration counter depends on the trip count, and a carried value on its
  initial value and the block's output for it only (its value in iteration k does not
  depend on how many iterations follow; the parser likewise adds no dependence on a loop
  that surrounds both a definition and its use).  Cycles are cut with a visited set.
* The condition kind is the highest-priority kind among everything reached
  (:data:`KIND_PRIORITY`: tensor_value, tensor_shape, argument, attribute, runtime,
  unknown, constant); nothing reached at all means ``constant``.

``if_sources`` is restricted to *named attribute and argument sources*: refs are
``self.<path>`` (or ``self``) and argument names; each ref appears once, with the
highest-priority kind through which it reaches the condition.  Runtime sources, constants
and unknowns count towards the kind but are not listed.

Not done: the methods of non-module TorchScript classes are included only when the
compilation unit is known (:func:`load_archive`); the bodies of called methods are never
followed (a call's result depends on its arguments only).
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
from typing import Iterable, Iterator, Optional

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

#: Ops whose result is (derived from) the contents of a tensor.
TENSOR_VALUE_OPS = frozenset(
    {
        "Bool", "Int", "Float", "Complex", "Scalar",
        "ScalarImplicit", "IntImplicit", "FloatImplicit", "ComplexImplicit",
        "__bool__", "item", "tolist", "_local_scalar_dense", "is_nonzero",
        "equal", "allclose", "_is_all_true", "_is_any_true",
    }
)
#: The Python conversions ``bool()``/``int()``/``float()``/``complex()`` mark
#: ``tensor_value`` only when applied to a Tensor (DESIGN.md §5 "on a Tensor").
CONVERSION_OPS = frozenset({"Bool", "Int", "Float", "Complex"})
CONVERSIONS_REQUIRE_TENSOR = True

#: Ops whose result is tensor metadata (aten:: or prim::).
TENSOR_SHAPE_OPS = frozenset(
    {
        "size", "sym_size", "dim", "numel", "sym_numel", "stride", "sym_stride",
        "storage_offset", "element_size", "itemsize", "nbytes", "get_device",
        "is_floating_point", "is_complex", "is_contiguous", "output_nr", "_version",
        "has_names", "q_scale", "q_zero_point", "qscheme", "dense_dim", "sparse_dim",
        "_nnz", "_shape_as_tensor",
    }
)
#: Tensor-metadata ops that only count in the ``prim::`` namespace.
PRIM_TENSOR_SHAPE_OPS = frozenset(
    {"dtype", "device", "layout", "requires_grad", "grad", "shape", "name"}
)
LEN_OPS = frozenset({"len", "__len__"})

#: Ops that read global runtime state (sources of kind ``runtime``).
RUNTIME_OPS = frozenset(
    {
        "is_grad_enabled", "is_inference_mode_enabled", "is_autocast_enabled",
        "is_scripting", "is_tracing", "_get_tracing_state", "has_torch_function",
        "has_torch_function_unary", "has_torch_function_variadic",
        "is_available", "_cuda_isDriverSufficient", "_cuda_getDeviceCount",
        "get_num_threads", "are_deterministic_algorithms_enabled",
    }
)
#: Compiled helper functions (``prim::CallFunction``) that read runtime state, by last name
#: (any name in :data:`RUNTIME_OPS` counts too: ``torch.jit.is_tracing`` is a compiled
#: function ``__torch__.torch.jit._trace.is_tracing``).  ``get_fastpath_enabled`` and
#: ``_is_make_fx_tracing`` return a constant inside TorchScript, but a trace runs them in
#: Python, where they read global state: a user wants to know the branch depends on them.
RUNTIME_FUNCTIONS = frozenset({
    "is_compiling", "is_dynamo_compiling", "_is_fx_tracing", "is_scripting",
    "get_fastpath_enabled", "_is_make_fx_tracing",
})

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


def _walk_nodes(block) -> Iterator[torch._C.Node]:
    """All nodes of a block, nested blocks included, in pre-order."""
    for node in block.nodes():
        yield node
        for sub in node.blocks():
            yield from _walk_nodes(sub)


class _Analyzer:
    def __init__(
        self,
        graph: torch._C.Graph,
        is_method: Optional[bool] = None,
        arg_names: Optional[list[str]] = None,
        module_types: Optional[set[str]] = None,
    ) -> None:
        self.graph = graph
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
    def _marking_mode(self, node: torch._C.Node) -> Optional[str]:
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
        if name.startswith("is_") and not self._is_runtime_op(node):
            return "tensor_shape"
        return None

    @staticmethod
    def _is_runtime_op(node: torch._C.Node) -> bool:
        ns, name = _op_name(node)
        if node.kind() == "prim::CallFunction":
            fn = _function_name(node)
            last = fn.rsplit(".", 1)[-1] if fn else None
            return last in RUNTIME_FUNCTIONS or last in RUNTIME_OPS
        if ns not in ("aten", "prim", "cuda"):
            return False
        return name in RUNTIME_OPS or name.startswith("is_autocast_")

    def condition_sources(self, cond: torch._C.Value) -> tuple[str, set[tuple[str, str]]]:
        """``(kind, {(ref, kind)})`` for one condition value (refs: attributes, arguments)."""
        named: dict[str, set[str]] = {}
        anon: set[str] = set()
        seen: set[tuple[int, Optional[str]]] = set()
        stack: list[tuple[torch._C.Value, Optional[str]]] = [(cond, None)]

        def push(v: torch._C.Value, m: Optional[str]) -> None:
            if (v.unique(), m) not in seen:
                stack.append((v, m))

        while stack:
            value, mode = stack.pop()
            key = (value.unique(), mode)
            if key in seen:
                continue
            seen.add(key)

            path = self.self_path(value)
            if path is not None:
                named.setdefault(path, set()).add(mode or "attribute")
                continue
            idx = self.input_index.get(value.unique())
            if idx is not None:
                # A graph input that is not self.
                named.setdefault(self.arg_names[idx], set()).add(mode or "argument")
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
                if pos == 0:  # the iteration counter
                    push(loop_ins[0], mode)
                else:  # a carried value: its initial value or the previous iteration's
                    push(loop_ins[pos + 1], mode)
                    push(block_outs[pos], mode)
                continue
            if kind == "prim::Constant":
                if value.type().kind() != "FunctionType":
                    anon.add(mode or "constant")
                continue
            if kind == "prim::If":
                pos = _output_index(node, value)
                push(node.inputsAt(0), mode)
                for block in node.blocks():
                    push(list(block.outputs())[pos], mode)
                continue
            if kind == "prim::Loop":
                pos = _output_index(node, value)
                loop_ins = list(node.inputs())
                block = next(iter(node.blocks()))
                block_outs = list(block.outputs())
                push(loop_ins[0], mode)
                push(loop_ins[1], mode)
                push(block_outs[0], mode)
                push(loop_ins[pos + 2], mode)
                push(block_outs[pos + 1], mode)
                continue
            if self._is_runtime_op(node):
                anon.add("runtime")
                continue
            if kind == "prim::GetAttr":
                # Not rooted at self (that case was handled above): follow the object.
                push(node.inputsAt(0), mode)
                continue
            new_mode = self._marking_mode(node) or mode
            ins = list(node.inputs())
            if kind == "prim::CallMethod" and ins and self.is_module(ins[0]):
                ins = ins[1:]
            elif kind == "prim::CallFunction" and ins:
                ins = ins[1:]
            for v in ins:
                push(v, new_mode)

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
                k, srcs = self.condition_sources(node.inputsAt(0))
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
) -> MethodFacts:
    """Facts of one method or function graph.

    ``is_method``: whether input 0 is ``self`` (default: its debug name is ``self``).
    ``arg_names``: the parameter names (default: the inputs' debug names without ``.N``).
    ``module_types``: qualified names of module types, to tell a module receiver of a
    ``prim::CallMethod`` (not a dependency) from an object receiver (a dependency).
    """
    return _Analyzer(graph, is_method, arg_names, module_types).facts(qualified_name)


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
) -> dict[str, MethodFacts]:
    """Facts for every method of every module type in ``scripted_module.named_modules()``.

    Keys are ``"<type qualified name>.<method>"``.  Compiled free functions called (directly
    or transitively) through ``prim::CallFunction`` are included under their qualified name
    when their graph can be found: in ``cu`` (see :func:`load_archive`) or, for modules
    scripted in this process, in ``torch.jit._state._python_cu``.  With ``cu`` given, every
    other function the unit holds (methods of TorchScript classes) is included too.
    """
    modules = [m for _, m in scripted_module.named_modules()]
    module_types = {m._c._type().qualified_name() for m in modules}
    out: dict[str, MethodFacts] = {}
    pending: list[str] = []

    def note_calls(graph: torch._C.Graph) -> None:
        for node in _walk_nodes(graph.block()):
            if node.kind() == "prim::CallFunction":
                name = _function_name(node)
                if name and name not in out:
                    pending.append(name)

    for m in modules:
        tname = m._c._type().qualified_name()
        for meth_name in m._c._method_names():
            key = f"{tname}.{meth_name}"
            if key in out:
                continue
            meth = m._c._get_method(meth_name)
            graph = meth.graph
            out[key] = method_facts(
                graph,
                is_method=True,
                arg_names=_schema_names(meth),
                module_types=module_types,
                qualified_name=key,
            )
            note_calls(graph)

    if cu is None:
        import torch.jit._state as _state

        lookup_cu = _state._python_cu
    else:
        lookup_cu = cu

    def add_function(name: str, fn) -> None:
        graph = fn.graph
        names = _schema_names(fn)
        inputs = list(graph.inputs())
        is_method = bool(
            names and names[0] == "self" and inputs and inputs[0].type().kind() == "ClassType"
        )
        out[name] = method_facts(
            graph, is_method=is_method, arg_names=names, module_types=module_types, qualified_name=name
        )
        note_calls(graph)

    while pending:
        name = pending.pop()
        if name in out:
            continue
        fn = lookup_cu.find_function(name)
        if fn is None:
            continue
        add_function(name, fn)

    if cu is not None:
        for fn in cu.get_functions():
            name = fn.qualified_name
            if name not in out:
                add_function(name, fn)
        while pending:
            name = pending.pop()
            if name not in out and (fn := cu.find_function(name)) is not None:
                add_function(name, fn)
    return out

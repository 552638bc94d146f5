"""The semantic tables (``grammars/semantics.toml``) in the shapes lookups want, and the one
instance every parse shares."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..grammar.engine import load_semantics


__all__ = ["Semantics"]


_shared: Optional[Semantics] = None


def shared_semantics() -> Semantics:
    global _shared
    if _shared is None:
        _shared = Semantics(load_semantics())
    return _shared


class Semantics:
    """The tables of ``grammars/semantics.toml``, in the shapes lookups want."""

    def __init__(self, data: dict[str, Any]):
        names, calls, cond = data["names"], data["calls"], data["conditions"]
        self.self_name: str = names["self"]
        self.root: str = names["qualified_root"]
        self.literals: dict[str, str] = dict(names["literals"])
        self.constants_object: str = names["constants_object"]
        self.custom_classes: str = names["custom_classes"]
        self.prefixes: list[tuple[str, str]] = [tuple(p) for p in calls["operator_prefixes"]]
        self.ops_root: str = calls["ops_root"]
        self.builtins: dict[str, str] = dict(calls["builtin_operators"])
        self.intrinsics = frozenset(calls["intrinsics"])
        self.value_intrinsics = frozenset(calls["value_intrinsics"])
        self.module_methods = frozenset(calls["module_methods"])
        self.none_checks = frozenset(calls["none_checks"])
        self.comparisons = frozenset(calls["comparisons"])
        self.class_kinds: dict[str, str] = dict(data["classes"]["kinds"])
        self.tensor_types = frozenset(data["classes"]["tensor_types"])
        self.value_ops = frozenset(cond["tensor_value"])
        self.shape_ops = frozenset(cond["tensor_shape"])
        self.prim_shape_ops = frozenset(cond["prim_tensor_shape"])
        self.shape_prefix: str = cond["tensor_shape_prefix"]
        self.tensor_only = frozenset(cond["tensor_only"])
        self.conversions = frozenset(cond["tensor_value_conversions"])
        self.runtime = frozenset(cond["runtime"])
        self.runtime_prefixes = tuple(cond["runtime_prefixes"])
        self.runtime_functions = frozenset(cond["runtime_functions"])
        self.runtime_copies = frozenset(cond["runtime_function_copies"])
        self.mutators = frozenset(cond["list_mutators"])
        self._operators: dict[str, Optional[str]] = {}  # callee -> operator, as found
        self._marks: dict[str, Optional[str]] = {}  # operator -> mark, as found
        self._facts: dict[str, tuple] = {}  # operator -> operator_facts, as found

    def operator(self, callee: str) -> Optional[str]:
        """``torch.conv2d`` -> ``aten::conv2d``; ``ops.prim.dtype`` -> ``prim::dtype``."""
        found = self._operators.get(callee, False)
        if found is False:
            found = self._operators[callee] = self._operator(callee)
        return found

    def _operator(self, callee: str) -> Optional[str]:
        if "." not in callee:
            return self.builtins.get(callee)
        if callee.startswith(self.ops_root + "."):
            parts = callee.split(".")
            if len(parts) == 3:
                return f"{parts[1]}::{parts[2]}"
            return None
        for prefix, template in self.prefixes:
            if callee.startswith(prefix):
                rest = callee[len(prefix):]
                if rest and "." not in rest:
                    return template.format(op=rest)
        return None

    def is_runtime_op(self, op_name: str) -> bool:
        return op_name in self.runtime or op_name.startswith(self.runtime_prefixes)

    def is_runtime_function(self, qualified: str) -> bool:
        """Rule 1: a compiled helper named in the table, by its full name."""
        return qualified.partition(".")[2] in self.runtime_functions

    def mark(self, target: str) -> Optional[str]:
        """The condition kind an operator (``aten::size``) marks its operands with."""
        found = self._marks.get(target, False)
        if found is False:
            found = self._marks[target] = self._mark(target)
        return found

    def operator_facts(self, target: str) -> tuple[Optional[str], str, Optional[str]]:
        """(mark, operator name, role) of an operator: the role is ``tensor_only`` (it marks
        only a Tensor operand), ``conversion`` (an ``aten`` conversion: the same), or
        ``comparison`` (unmarked: a literal operand pins the other's type), else None."""
        found = self._facts.get(target)
        if found is None:
            mark = self.mark(target)
            name = target.rpartition(":")[2]
            role = None
            if name in self.tensor_only:
                role = "tensor_only"
            elif name in self.conversions and target.startswith("aten::"):
                role = "conversion"
            elif mark is None and target in self.comparisons:
                role = "comparison"
            found = self._facts[target] = (mark, name, role)
        return found

    def _mark(self, target: str) -> Optional[str]:
        ns, _, op_name = target.rpartition(":")
        ns = ns.rstrip(":")
        if self.is_runtime_op(op_name):
            return "runtime"
        if op_name in self.value_ops:
            return "tensor_value"
        if op_name in self.shape_ops or op_name.startswith(self.shape_prefix):
            return "tensor_shape"
        if ns == "prim" and op_name in self.prim_shape_ops:
            return "tensor_shape"
        return None

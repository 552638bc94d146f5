"""The parse contract: a code file's models (CodeFile, Function, IfStatement, Condition, Span ...).

Frozen pydantic models, each field documented; ``parse_text`` returns a :class:`CodeFile`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from typing import TYPE_CHECKING, Literal, Optional

from .codes import diagnostic

if TYPE_CHECKING:  # the models import pydantic; plain diagnostics never need it
    from .text import Diagnostic

__all__ = ["ConditionKind", "SourceKind", "CallKind", "SelfRole", "Severity", "ClassKind", "Node", "Span", "Diagnostic",
           "Param", "Signature", "ConditionSource", "Condition", "Call", "IfStatement", "Loop", "SelfRef", "Function",
           "ClassAttribute", "ClassDef", "CodeFile"]


ConditionKind = Literal[
    "tensor_value", "tensor_shape", "argument", "attribute", "runtime", "unknown", "constant"
]
"""What an ``if`` condition depends on, in priority order (first wins); the rules are in
:mod:`codeparse.infer.conditions` and docs/how-it-works.md."""

SourceKind = ConditionKind

CallKind = Literal["submodule", "self_method", "method", "function", "operator"]

SelfRole = Literal["submodule", "parameter", "buffer", "attribute", "constant", "unknown"]

Severity = Literal["error", "warning", "info"]

ClassKind = Literal["module", "class", "namedtuple", "enum", "interface"]


class Node(BaseModel):
    """Base of every public model: immutable, and strict about unknown fields."""

    # Validators are built on first use: a run pays only for the models it produces.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Span(Node):
    """A region of the source text.

    ``start``/``end`` are character offsets (end exclusive): ``text[start:end]`` is the
    node's text.  ``line``/``column`` are 1-based; ``end_line``/``end_column`` are the
    1-based position just past the last character.
    """

    start: int = Field(description="Offset of the first character (0-based, in code points).")
    end: int = Field(description="Offset just past the last character (exclusive).")
    line: int = Field(description="1-based line of `start`.")
    column: int = Field(description="1-based column of `start`, counting code points.")
    end_line: int = Field(description="1-based line of `end`.")
    end_column: int = Field(description="1-based column of `end` (exclusive).")


class Diagnostic(Node):
    """A problem found while reading text: it has a stable code (see ``codeparse.contract.codes``)."""

    code: str = Field(description="Stable code such as `CP101`; the table is in codeparse/contract/codes.py.")
    name: str = Field(description="Stable snake_case name of the code, e.g. `unparsed_statement`.")
    severity: Severity = Field(description="`error`, `warning` or `info`.")
    message: str = Field(description="Human-readable message, rendered from the code's template.")
    path: str = Field(
        description="The input path as given (`-` for stdin; `archive!entry` for a code entry of an archive)."
    )
    span: Optional[Span] = Field(
        default=None, description="Where in the text; null for a finding about a whole file or archive."
    )
    args: dict[str, str] = Field(
        default_factory=dict, description="The template's arguments, for machines."
    )


class Param(Node):
    """One parameter of a ``def`` as printed."""

    name: str = Field(description="Parameter name as printed.")
    annotation: Optional[str] = Field(
        default=None, description="Type as printed (`Tensor`, `Optional[int]`); null when untyped."
    )
    default: Optional[str] = Field(
        default=None, description="Default value as printed (`1.`, `[1, 1]`, `None`); null if none."
    )
    span: Span = Field(description="The parameter in the signature (name, annotation and default).")


class Signature(Node):
    """A function's parameters (``self`` included) and return annotation."""

    params: list[Param] = Field(description="Parameters in order, `self` included (its annotation null when untyped).")
    returns: Optional[str] = Field(default=None, description="Return type as printed, if any.")


class ConditionSource(Node):
    """One thing a condition depends on."""

    ref: str = Field(description="Its name: `self.branch_testing`, `is_str`, `x`, `torch.is_grad_enabled`.")
    kind: SourceKind = Field(description="The kind of dependence through which it reaches the condition (a ConditionKind row).")
    type: str = Field(description="TorchScript type as far as known (`bool`, `Tensor`, ...), else `unknown`.")


class Condition(Node):
    """An ``if`` condition, as printed and with its provenance."""

    text: str = Field(description="The condition as printed.")
    resolved: str = Field(
        description="The same expression with temporaries and locals replaced by their definitions."
    )
    kind: ConditionKind = Field(description="What the condition depends on (highest priority source).")
    sources: list[ConditionSource] = Field(description="Everything found it depends on.")
    none_check: bool = Field(description="True for `torch.__is__`/`torch.__isnot__` against `None`.")
    data_dependent_shape: bool = Field(
        default=False,
        description="A `tensor_shape` condition that reads the size (size, numel, len) of a tensor whose size "
        "depends on tensor values: `nonzero`, `masked_select`, `x[mask]`, `unique`, `repeat_interleave` with "
        "tensor repeats, a factory sized by `int(t)` (grammars/semantics.toml `[export]`), followed through "
        "locals, lists and calls.",
    )
    related: list[Span] = Field(
        default_factory=list,
        description="Definitions elsewhere in this text that decide the kind: the conversions of a "
        "`tensor_value` condition (`bool(...)` a line above), the producers of a data-dependent size (the "
        "`nonzero` call, in another method too; a producer in another file is given by its call site here).",
    )


class Call(Node):
    """A call in a function body."""

    kind: CallKind = Field(
        description="`submodule` `(layer1).forward(x, )`; `self_method` `(self).m(x, )`; `method` on a "
        "non-module object; `function` a compiled function; `operator` `torch.*`, `ops.*`, `bool()`..."
    )
    receiver: Optional[str] = Field(
        default=None,
        description="Dotted path from self of the object called (`self.layer1`, `self`); null if not rooted at self.",
    )
    method: Optional[str] = Field(default=None, description="Method name for method calls.")
    target: Optional[str] = Field(
        default=None,
        description="Qualified name for functions and operators (`aten::conv2d`, `__torch__.f`).",
    )
    callee: str = Field(description="The callee as printed (`torch.conv2d`, `(layer1).forward`).")
    span: Span = Field(description="The whole call, callee through closing parenthesis.")


class IfStatement(Node):
    """An ``if`` statement with its condition and what each branch calls."""

    span: Span = Field(description="The `if` header line: `if cond:`.")
    block_span: Span = Field(description="The whole statement: header, then-branch and else-branch.")
    depth: int = Field(description="0 directly in the function body, +1 per enclosing block.")
    condition: Condition = Field(description="The condition as printed and resolved, with what it depends on.")
    then_calls: list[Call] = Field(description="Every call textually inside the then-branch.")
    else_calls: list[Call] = Field(description="Every call textually inside the else-branch.")
    has_else: bool = Field(description="Whether an `else:` follows (the printer always prints one).")


class Loop(Node):
    """A ``for`` or ``while`` loop."""

    kind: Literal["for", "while"] = Field(description="`for` or `while`.")
    target: Optional[str] = Field(default=None, description="`for` target as printed.")
    iter: str = Field(description="What a `for` iterates over, or a `while` condition, as printed.")
    depth: int = Field(description="0 directly in the function body, +1 per enclosing block.")
    span: Span = Field(description="The loop header line.")
    condition: Optional[Condition] = Field(
        default=None,
        description="What the loop depends on, as for an `if`: a `while` test, or what decides a `for`'s "
        "trip count (its iterable: `range(torch.size(idx, 0))`).",
    )


class SelfRef(Node):
    """One attribute read rooted at ``self``."""

    path: str = Field(description="Dotted from self: `self.layer1`, `self.layer1.conv`, `self.layer1.0`.")
    role: SelfRole = Field(description="What the attribute is, from class declarations or use.")
    declared_type: Optional[str] = Field(
        default=None, description="Declared type when the class declares it, else null."
    )
    span: Span = Field(description="The read: `self.x`, `layer1.conv`, or `getattr(self, \"0\")`.")


class Function(Node):
    """A ``def`` (method or free function) with everything extracted from it."""

    name: str = Field(description="The name after `def`.")
    qualified_name: str = Field(
        description="As TorchScript names it: `__torch__.torch.nn.modules.conv.Conv2d.forward`; for bare "
        "method text the name, or `<T>.name` when `self` is annotated with `T`."
    )
    signature: Signature = Field(description="Parameters and return annotation as printed.")
    ifs: list[IfStatement] = Field(description="All ifs, nested ones too, in textual order.")
    loops: list[Loop] = Field(description="All `for`/`while` loops, nested ones too, in textual order.")
    self_refs: list[SelfRef] = Field(description="Every attribute read rooted at `self`, in textual order.")
    calls: list[Call] = Field(description="Every call in the body, in textual order.")
    scalar_conversions: list[Span] = Field(
        default_factory=list,
        description="`int(t)`, `float(t)`, `bool(t)` of a Tensor's value, in textual order (conditions' ones included).",
    )
    span: Span = Field(description="From `def` to the end of the body.")


class ClassAttribute(Node):
    """A declaration in a class body: `name : Type` or `name : Final[T] = value`."""

    name: str = Field(description="Attribute name (`weight`, or `0` for `__annotations__[\"0\"]`).")
    type: Optional[str] = Field(default=None, description="Declared type as printed.")
    final: bool = Field(default=False, description="Declared `Final[...]`: a compile-time constant.")
    value: Optional[str] = Field(default=None, description="Value as printed, for constants and enum members.")
    span: Span = Field(description="The declaration line.")


class ClassDef(Node):
    """A class in an archive code file."""

    name: str = Field(description="The class name after `class`.")
    qualified_name: str = Field(description="`__torch__.<path of the file>.<name>`, or the name alone.")
    kind: ClassKind = Field(description="`module`, `class`, `namedtuple`, `enum` or `interface`, from its base.")
    bases: list[str] = Field(default_factory=list, description="Base classes as printed.")
    parameters: list[str] = Field(description="Names listed in `__parameters__`.")
    buffers: list[str] = Field(description="Names listed in `__buffers__`.")
    attributes: list[ClassAttribute] = Field(description="Declared attributes and constants, in order.")
    methods: list[Function] = Field(description="Its `def`s, in order.")
    span: Span = Field(description="From `class` to the end of its body.")


class CodeFile(Node):
    """Everything read from one piece of code text."""

    path: str = Field(description="The input path as given; `-` for stdin; `archive!entry` inside an archive.")
    grammar: str = Field(description="Id of the grammar that read the text, e.g. `torchscript-v2`.")
    classes: list[ClassDef] = Field(description="Classes of an archive code file, in order.")
    functions: list[Function] = Field(description="Top-level defs (method text, or free functions).")
    diagnostics: list[Diagnostic] = Field(description="Problems reading the text (unparsed spans, grammar mismatch), in text order.")


def diagnostic_model(code: str, path: str, span: Optional[dict] = None, **args: object) -> "Diagnostic":
    """The :class:`Diagnostic` model of :func:`~codeparse.contract.codes.diagnostic`'s dict."""
    return Diagnostic.model_validate(diagnostic(code, path, span, **args))

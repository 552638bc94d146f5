"""The public contract: what codeparse tells you about a piece of TorchScript code text.

Every model is a frozen pydantic model; field names are the contract that tools and CI
users build on (``../shared/DESIGN.md`` §4): fields may be added, never renamed.
``extra="forbid"`` applies when JSON is loaded back with ``model_validate_json``.

Position convention (one, used everywhere): a :class:`Span` stores character offsets
into the decoded source text, ``start`` inclusive and ``end`` exclusive, so that
``source[span.start:span.end]`` is the node's text.  ``line`` and ``column`` are 1-based,
as in SARIF and in compiler messages (``file:line:col``); columns count code points;
``end_line``/``end_column`` point one past the last character.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field


ConditionKind = Literal[
    "tensor_value", "tensor_shape", "argument", "attribute", "runtime", "unknown", "constant"
]
"""What an ``if`` condition depends on, in priority order (first wins); see DESIGN.md §5."""

SourceKind = ConditionKind
CallKind = Literal["submodule", "self_method", "method", "function", "operator"]
SelfRole = Literal["submodule", "parameter", "buffer", "attribute", "constant", "unknown"]
Severity = Literal["error", "warning", "info"]
ClassKind = Literal["module", "class", "namedtuple", "enum", "interface"]


class Node(BaseModel):
    """Base of every public model: immutable, and strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


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
    """A problem found while reading text: it has a stable code (see ``codeparse.codes``)."""

    code: str = Field(description="Stable code such as `CP101`; the table is in codeparse/codes.py.")
    name: str = Field(description="Stable snake_case name of the code, e.g. `unparsed_statement`.")
    severity: Severity = Field(description="`error`, `warning` or `info`.")
    message: str = Field(description="Human-readable message, rendered from the code's template.")
    path: str = Field(description="The input path as given (`-` for stdin).")
    span: Optional[Span] = Field(
        default=None, description="Where in the text; null for a finding about a whole file."
    )
    args: dict[str, str] = Field(
        default_factory=dict, description="The template's arguments, for machines."
    )


class Param(Node):
    """One parameter of a ``def`` as printed."""

    name: str
    annotation: Optional[str] = Field(
        default=None, description="Type as printed (`Tensor`, `Optional[int]`); null when untyped."
    )
    default: Optional[str] = Field(
        default=None, description="Default value as printed (`1.`, `[1, 1]`, `None`); null if none."
    )
    span: Span


class Signature(Node):
    """A function's parameters (``self`` included) and return annotation."""

    params: list[Param]
    returns: Optional[str] = Field(default=None, description="Return type as printed, if any.")


class ConditionSource(Node):
    """One thing a condition depends on."""

    ref: str = Field(description="Its name: `self.branch_testing`, `is_str`, `x`, `torch.is_grad_enabled`.")
    kind: SourceKind = Field(description="The DESIGN.md §5 row through which it reaches the condition.")
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
    span: Span


class IfStatement(Node):
    """An ``if`` statement with its condition and what each branch calls."""

    span: Span = Field(description="The `if` header line: `if cond:`.")
    depth: int = Field(description="0 directly in the function body, +1 per enclosing block.")
    condition: Condition
    then_calls: list[Call] = Field(description="Every call textually inside the then-branch.")
    else_calls: list[Call] = Field(description="Every call textually inside the else-branch.")
    has_else: bool = Field(description="Whether an `else:` follows (the printer always prints one).")


class Loop(Node):
    """A ``for`` or ``while`` loop."""

    kind: Literal["for", "while"]
    target: Optional[str] = Field(default=None, description="`for` target as printed.")
    iter: str = Field(description="What a `for` iterates over, or a `while` condition, as printed.")
    depth: int
    span: Span = Field(description="The loop header line.")


class SelfRef(Node):
    """One attribute read rooted at ``self``."""

    path: str = Field(description="Dotted from self: `self.layer1`, `self.layer1.conv`, `self.layer1.0`.")
    role: SelfRole = Field(description="What the attribute is, from class declarations or use.")
    declared_type: Optional[str] = Field(
        default=None, description="Declared type when the class declares it, else null."
    )
    span: Span


class Function(Node):
    """A ``def`` (method or free function) with everything extracted from it."""

    name: str
    qualified_name: str = Field(
        description="As TorchScript names it: `__torch__.torch.nn.modules.conv.Conv2d.forward`; for bare "
        "method text the name, or `<T>.name` when `self` is annotated with `T`."
    )
    signature: Signature
    ifs: list[IfStatement] = Field(description="All ifs, nested ones too, in textual order.")
    loops: list[Loop]
    self_refs: list[SelfRef]
    calls: list[Call] = Field(description="Every call in the body, in textual order.")
    span: Span


class ClassAttribute(Node):
    """A declaration in a class body: `name : Type` or `name : Final[T] = value`."""

    name: str
    type: Optional[str] = Field(default=None, description="Declared type as printed.")
    final: bool = Field(default=False, description="Declared `Final[...]`: a compile-time constant.")
    value: Optional[str] = Field(default=None, description="Value as printed, for constants and enum members.")
    span: Span


class ClassDef(Node):
    """A class in an archive code file."""

    name: str
    qualified_name: str = Field(description="`__torch__.<path of the file>.<name>`, or the name alone.")
    kind: ClassKind
    bases: list[str] = Field(default_factory=list, description="Base classes as printed.")
    parameters: list[str] = Field(description="Names listed in `__parameters__`.")
    buffers: list[str] = Field(description="Names listed in `__buffers__`.")
    attributes: list[ClassAttribute]
    methods: list[Function]
    span: Span


class CodeFile(Node):
    """Everything read from one piece of code text."""

    path: str = Field(description="The input path as given; `-` for stdin; `archive!entry` inside an archive.")
    grammar: str = Field(description="Id of the grammar that read the text, e.g. `torchscript-v2`.")
    classes: list[ClassDef]
    functions: list[Function] = Field(description="Top-level defs (method text, or free functions).")
    diagnostics: list[Diagnostic]


# -- archive, findings and report models (issue 3) --

# -- trace-versus-script diff and operator models (issue 4) --


# Every public model and type alias, computed so that additions above need no edit here.
__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_")
    and value is not BaseModel
    and ((isinstance(value, type) and issubclass(value, BaseModel)) or name.endswith(("Kind", "Role")) or name == "Severity")
]

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

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator


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
    """A problem found while reading text: it has a stable code (see ``codeparse.codes``)."""

    code: str = Field(description="Stable code such as `CP101`; the table is in codeparse/codes.py.")
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


# -- archive, findings and report models (issue 3) --

FailOn = Literal["error", "warning", "info", "never"]


class SourceLocation(Node):
    """Where a line of archive code came from, as the archive's debug info records it."""

    path: str = Field(description="The original Python file as recorded (`model.py`, `<ipython-input-2-…>`).")
    line: int = Field(description="1-based line in that file.")


class Guard(Node):
    """A branch that encloses a finding (``check --target export``): the ``if`` whose side the
    finding sits on, in its function or at a call site on the way from ``forward``."""

    condition: str = Field(description="The condition as the finding's message shows it (resolved, on one line).")
    kind: ConditionKind = Field(description="What the condition depends on.")
    branch: Literal["then", "else"] = Field(description="The side of the `if` the finding sits on.")
    path: str = Field(description="Where the `if` is: its original file (else the code file).")
    line: int = Field(description="1-based line of the `if` in `path`.")
    decided: Optional[str] = Field(
        default=None,
        description="The saved attribute value that makes this branch run on every call (`self.training = False`), "
        "read from the archive's `data.pkl`; null when the value does not decide it.",
    )


class Finding(Diagnostic):
    """A coded finding of ``check``: a :class:`Diagnostic` plus where the code came from."""

    origin: Optional[SourceLocation] = Field(
        default=None, description="The original Python source line of `span`, from the archive's debug info."
    )
    sources: list[ConditionSource] = Field(
        default_factory=list,
        description="For a condition finding (CP201-CP208): what the condition depends on, the deciding "
        "source first (`args.sources` is the same, rendered as text).",
    )
    related: list[SourceLocation] = Field(
        default_factory=list,
        description="Original source lines of the definitions that decide the finding (the conversion a line "
        "above an `if`, the `nonzero` in another method), where torch often reports the failure; the code "
        "line itself (path `archive!entry` or the code file) when debug info does not map it.",
    )
    library: bool = Field(
        default=False,
        description="In torch's own library code (`__torch__/torch/...`, origin under `torch/`): summarised in "
        "text output unless `include_library`; still counts for `fail_on`.",
    )
    guards: list[Guard] = Field(
        default_factory=list,
        description="Export findings: the branches that enclose the finding, outermost first, through the calls "
        "from `forward` (empty for other findings).",
    )


class ModuleNode(Node):
    """One module in an archive's module tree (the root module has path `self`)."""

    path: str = Field(description="Dotted from the root module: `self`, `self.layer1`, `self.layer1.0`.")
    type: str = Field(description="Qualified class name, e.g. `__torch__.torch.nn.modules.container.Sequential`.")
    children: list["ModuleNode"] = Field(default_factory=list, description="Submodules, in declaration order.")
    same_as: Optional[str] = Field(
        default=None,
        description="Path of the first node of the same class, which lists its submodules; this node's "
        "`children` are then empty (the tree is built over classes, so a class used at many paths is "
        "expanded once).",
    )


class Branch(Node):
    """An ``if`` of an archive or code file, with its condition kind and reachability."""

    path: str = Field(description="`archive!entry` (or the code file) holding the `if`.")
    function: str = Field(description="Qualified name of the function or method holding it.")
    span: Span = Field(description="The `if` header line.")
    condition: str = Field(description="The condition as printed.")
    resolved: str = Field(
        default="", description="The condition with temporaries and locals replaced by their definitions (as in `Condition.resolved`)."
    )
    sources: list[ConditionSource] = Field(
        default_factory=list, description="What the condition depends on, the deciding source first (as in `Condition.sources`)."
    )
    kind: ConditionKind = Field(description="What the condition depends on (DESIGN.md §5).")
    reachable: bool = Field(description="Whether its function is reachable from the root module's `forward`.")
    origin: Optional[SourceLocation] = Field(default=None, description="Original source line, from debug info.")


class Archive(Node):
    """A saved TorchScript archive read as a whole, without torch."""

    path: str = Field(description="The archive path as given.")
    layout: Literal["zip", "torch.package", "model.json"] = Field(
        description="`zip` (`<root>/code/`), `torch.package` (`.data/ts_code/`), `model.json` (PyTorch 1.0-1.2)."
    )
    root: Optional[str] = Field(default=None, description="The single top folder of the zip (any name).")
    version: Optional[int] = Field(default=None, description="The version record (`version` or `.data/version`).")
    entries: int = Field(default=0, description="Number of zip entries.")
    files: list[CodeFile] = Field(default_factory=list, description="One CodeFile per code entry, in stored order.")
    classes: dict[str, ClassDef] = Field(default_factory=dict, description="Every class, by qualified name.")
    functions: dict[str, Function] = Field(
        default_factory=dict, description="Every method and free function, by qualified name."
    )
    root_class: Optional[str] = Field(default=None, description="Qualified name of the root module's class.")
    module_tree: Optional[ModuleNode] = Field(default=None, description="The root module and its submodules.")
    call_graph: dict[str, list[str]] = Field(
        default_factory=dict, description="Resolved callees of each method/function, by qualified name."
    )
    reachable: list[str] = Field(
        default_factory=list, description="Methods and functions reachable from the root `forward`, breadth first."
    )
    branches: list[Branch] = Field(default_factory=list, description="Every `if`, in file and text order.")
    source_map: dict[str, dict[int, SourceLocation]] = Field(
        default_factory=dict, description="For each code entry (`archive!entry`): code line -> original line."
    )
    findings: list[Finding] = Field(default_factory=list, description="Everything found, unfiltered.")


from .walk import DEFAULT_EXCLUDE  # noqa: E402 - defined where directories are walked (no pydantic there)


class Policy(Node):
    """What ``check`` reports and what fails it: ``[tool.codeparse]`` in pyproject.toml, then the CLI."""

    select: list[str] = Field(default_factory=list, description="Codes or prefixes to report (`CP2`); empty: all.")
    ignore: list[str] = Field(default_factory=list, description="Codes or prefixes never reported.")
    fail_on: FailOn = Field(default="error", description="Lowest severity that fails the check (`never`: none).")
    max_entries: int = Field(default=50_000, gt=0, description="Most zip entries an archive may have.")
    max_entry_bytes: int = Field(default=64 << 20, gt=0,
                                 description="Most bytes one entry read (or one code file) may inflate to.")
    max_total_bytes: int = Field(default=512 << 20, gt=0, description="Most bytes all entries read may inflate to.")
    max_ratio: int = Field(default=200, gt=0, description="Highest inflated/stored size ratio of an entry read.")
    max_debug_chars: int = Field(
        default=32 << 20, gt=0,
        description="Most characters of distinct source text one `.debug_pkl` may rebuild (CP315).",
    )
    timeout_per_input: float = Field(
        default=60.0, gt=0, allow_inf_nan=False,
        description="Seconds one input may take (wall clock) before it is stopped (CP340).",
    )
    max_memory: int = Field(
        default=1024, gt=0, description="Megabytes of memory one worker process may add while reading an input (CP340)."
    )
    target: Literal["trace", "export"] = Field(
        default="trace",
        description="What condition findings are about: `trace` (CP2xx, what torch.jit.trace bakes in) or "
        "`export` (CP4xx, what torch.export meets; each input gets an `export` verdict).",
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Globs of paths never walked (besides version-control and virtual-environment folders, which "
        "never are), and of archive entries and origin paths whose findings are dropped.",
    )
    extend_exclude: list[str] = Field(default_factory=list, description="Globs added to `exclude`.")
    per_file_ignores: dict[str, list[str]] = Field(
        default_factory=dict, description="Glob -> codes or prefixes not reported for matching paths, entries or origins."
    )
    baseline: Optional[str] = Field(
        default=None, description="A baseline file (`--write-baseline`): findings recorded there are not reported."
    )
    source_root: Optional[str] = Field(
        default=None, description="Folder original source paths are shown relative to (default: the working directory)."
    )
    include_library: bool = Field(
        default=False, description="Show findings in torch's own library code one by one in table, concise and github output."
    )

    @field_validator("select", "ignore")
    @classmethod
    def _known_codes(cls, value: list[str]) -> list[str]:
        """Every entry is a code or a prefix of one, as on the command line."""
        from .codes import CODES

        out = []
        for raw in value:
            code = str(raw).strip().upper()
            if code and not any(c.startswith(code) for c in CODES):
                raise ValueError(f"{raw!r} matches no finding code (see docs/rules.md)")
            if code:
                out.append(code)
        return out


ExportVerdictKind = Literal["exports", "exports_with_specializations", "blocked", "cannot_tell"]


class BlockedWhen(Node):
    """A conditional blocker: where export fails, and the branch that leads there."""

    when: str = Field(description="The branch as text: ``when `torch.__isnot__(batch_sizes, None)` ``.")
    guard: Guard = Field(description="The innermost guard the call chooses.")
    at: SourceLocation = Field(description="The blocking line (original, else the code line).")
    code: str = Field(description="The blocking finding's code (CP401, CP402, CP405).")


class ExportVerdict(Node):
    """Will this input export with ``torch.export``? (``check --target export``)."""

    verdict: ExportVerdictKind = Field(
        description="`exports`; `exports_with_specializations` (branches on shapes, attributes, arguments "
        "or runtime state are fixed to the example's); `blocked` (a CP401/CP402/CP405 construct reachable "
        "from forward); `cannot_tell` (a reachable condition of unknown kind, or a trace archive)."
    )
    blocked: list[SourceLocation] = Field(
        default_factory=list,
        description="Where export fails: the original line (else the code line) of each blocking finding.",
    )
    specializations: int = Field(default=0, description="CP403/CP404 findings in the model's own code: branches export fixes to the example.")
    unknown: int = Field(default=0, description="CP406 findings: conditions of unknown kind.")
    reason: str = Field(default="", description="Why, in one sentence (for `cannot_tell` on a trace: its branches were dropped).")
    blocked_when: list[BlockedWhen] = Field(
        default_factory=list,
        description="Blockers reached only under a branch the call chooses (an argument, an optional input, an "
        "attribute the saved values do not decide): export fails only for calls that take it.",
    )
    library_specializations: int = Field(
        default=0, description="CP403/CP404 findings in torch's own library code (counted apart from `specializations`)."
    )


class PickleReport(Node):
    """One pickle of an input, walked opcode by opcode (never unpickled)."""

    entry: str = Field(description="The pickle: the archive entry (`model/data.pkl`, `m/data/sample_inputs/model.pt!archive/data.pkl`) or the file name.")
    globals: list[str] = Field(description="Every global it names (`module.name`), in order of first appearance.")
    opcodes: int = Field(description="Opcodes walked.")
    dangerous: list[str] = Field(default_factory=list, description="Those the data table calls dangerous (CP330).")
    unknown: list[str] = Field(default_factory=list, description="Those neither allowed nor dangerous (CP331).")
    error: Optional[str] = Field(default=None, description="Why the walk stopped early (CP332); null when it reached STOP.")


InputKind = Literal["archive", "code", "checkpoint", "pickle", "pt2", "lfs_pointer", "other"]


class InputReport(Node):
    """The result of checking one input (an archive or a code file)."""

    path: str = Field(description="The input as given (files found in a directory are listed one by one).")
    kind: InputKind = Field(
        description="What the input was read as, from its bytes: `archive` (TorchScript), `code` (text), "
        "`checkpoint` (torch.save), `pickle`, `pt2` (torch.export), `lfs_pointer`, `other` (no model file; "
        "listed in a directory walk, not checked)."
    )
    readable: bool = Field(description="False when the input could not be read at all (exit 2).")
    files: int = Field(default=0, description="Code files (entries) read.")
    branches: int = Field(default=0, description="`if` statements found (reachable ones, for archives).")
    findings: list[Finding] = Field(default_factory=list, description="Findings the policy selects, in order.")
    pickles: list[PickleReport] = Field(default_factory=list, description="Every pickle walked, with the globals it names.")
    export: Optional[ExportVerdict] = Field(
        default=None, description="The export verdict (`check --target export`; null under `--target trace`)."
    )


class Report(Node):
    """The result of ``check``: per input, the selected findings and the exit code."""

    inputs: list[InputReport] = Field(description="One report per input, in input order.")
    policy: Policy = Field(description="The policy applied: from pyproject.toml and the command line.")
    counts: dict[str, int] = Field(description="Selected findings per severity.")
    exit_code: int = Field(description="0 clean, 1 findings at or above `policy.fail_on`, 2 an input unreadable.")


# -- trace-versus-script diff and operator models (issue 4) --

TakenBranch = Literal["then", "else", "neither", "unknown", "mixed", "kept", "ambiguous"]
"""Which branch of a script ``if`` the trace followed (``mixed``: different ones in different
iterations of an enclosing loop; ``kept``: the trace holds the ``if`` itself, because the code
is scripted inside the trace; ``ambiguous``: both branches explain the trace equally well);
see :mod:`codeparse.tracediff`."""

DiffReason = Literal[
    "present", "absent", "raises", "not_run", "no_evidence", "indistinguishable", "tie",
    "tracing_predicate", "inlined", "mixed", "kept",
]
"""Why a diff answered as it did (a closed list; see ``IfDiff.reason``)."""


class DiffCall(Node):
    """One call or operator, placed in the script text, the trace text, or both."""

    call: str = Field(description="As a reader names it: `self.layer1.forward`, `aten::conv2d`.")
    kind: CallKind = Field(description="The call kind, as in `Call.kind`.")
    script_line: Optional[int] = Field(default=None, description="1-based line in the script text; null if only traced.")
    trace_line: Optional[int] = Field(default=None, description="1-based line in the trace text; null if the trace lacks it.")


class IfDiff(Node):
    """What the trace did with one ``if`` of the script."""

    module: str = Field(description="Path of the module from the root: `self`, `self.dg`, `self.layer1.0`.")
    function: str = Field(description="Qualified name of the script function holding the `if`.")
    path: str = Field(description="The script input the line refers to.")
    line: int = Field(description="1-based line of the `if` header in the script text.")
    depth: int = Field(description="Nesting depth, as in `IfStatement.depth`.")
    condition: str = Field(description="The condition as printed.")
    kind: ConditionKind = Field(description="What the condition depends on (DESIGN.md §5).")
    taken: TakenBranch = Field(
        description="`then`/`else`: the trace followed it; `neither`: the `if` did not run in the trace, or "
        "the trace has calls of neither branch; `unknown`: the branches look alike in a trace; `mixed`: "
        "different branches in different loop iterations; `kept`: the trace keeps the `if` (scripted code "
        "inside a trace)."
    )
    reason: DiffReason = Field(
        description="How it was decided, one of: `present` (calls of the taken branch are in the trace); "
        "`absent` (every path through the other branch would have left a call in the trace, and the trace "
        "lacks them); `raises` (the other branch raises, and the trace ran to its end); `not_run` (the path "
        "never reaches the `if`); `no_evidence` (neither branch has a call a trace shows, or both would and "
        "the trace has neither); `indistinguishable` (both branches make the same calls: `ambiguous`); "
        "`tie` (forcing the `if` each way explains the trace at equal cost: `ambiguous`); "
        "`tracing_predicate` (the condition is `torch.jit.is_tracing()`, `_is_tracing()` or "
        "`torch.jit.is_scripting()`, whose value inside a trace is known); `inlined` (the `if` belongs to "
        "a callee the path never calls: `neither`); `mixed` (different branches in different passes); "
        "`kept` (the trace still runs this code as TorchScript)."
    )
    evidence: list[DiffCall] = Field(description="Calls of the taken branch that the trace has, in order.")
    missing: list[DiffCall] = Field(
        default_factory=list, description="Calls of the branch(es) not taken, which the trace does not make."
    )
    executions: list[Literal["then", "else"]] = Field(
        default_factory=list, description="The branch of each time the `if` ran in the trace (loops run it often)."
    )
    passes: list[Literal["then", "else", "unknown"]] = Field(
        default_factory=list, description="Per run, the answer of that run alone (`unknown` where that run "
        "cannot tell: the last pass of a loop whose `if` only sets the loop's continue flag, as `break` "
        "compiles); empty when not run or not decided per run.")
    runs: int = Field(default=0, description="How many times the `if` ran in the trace (passes of enclosing "
                      "loops, calls of its function); 0 when not run or not known.")
    costs: Optional[dict[Literal["then", "else"], int]] = Field(
        default=None, description="Alignment cost of the whole function with the `if` forced to each branch "
        "(equal costs: `ambiguous`); null when not computed (kept, raises, not run, loops).")
    resolved: str = Field(default="", description="The condition with temporaries replaced by their "
                          "definitions (`IfStatement.condition.resolved`).")
    origin: Optional[SourceLocation] = Field(
        default=None, description="The original Python source line of the `if`, from the archive's debug info.")


class LostCall(Node):
    """A submodule call of the script that the trace never makes."""

    module: str = Field(description="Module path of the function compared: `self`, `self.layer1`.")
    function: str = Field(description="Qualified name of the script function holding the call.")
    path: str = Field(description="The script code file (`archive!entry` in an archive).")
    call: str = Field(description="`self.custom_layer2.forward`.")
    receiver: Optional[str] = Field(default=None, description="Path from `self` of the submodule called.")
    method: Optional[str] = Field(default=None, description="The method called: `forward`.")
    line: int = Field(description="1-based line in the script text.")
    inside: Optional[str] = Field(default=None, description="`then of if at line 13` when inside a branch.")
    origin: Optional[SourceLocation] = Field(
        default=None, description="The original Python source line of the call, from the archive's debug info.")


class UnrolledLoop(Node):
    """A script loop and how many times the trace repeated its body."""

    module: str = Field(description="Module path of the function compared: `self`, `self.layer1`.")
    function: str = Field(description="Qualified name of the script function holding the loop.")
    path: str = Field(description="The script code file (`archive!entry` in an archive).")
    line: int = Field(description="1-based line of the loop header in the script text.")
    loop: str = Field(description="The loop header as printed: `for i in range(torch.size(xs, 0))`.")
    kind: Literal["for", "while"] = Field(description="`for` or `while`.")
    iterations: Optional[int] = Field(
        description="Body repetitions found in the trace (summed over executions); null when the body "
        "has no call a trace shows."
    )
    executions: list[int] = Field(default_factory=list, description="Iterations per execution of the loop.")
    kept: bool = Field(default=False, description="The trace keeps the loop itself (scripted code inside a trace).")
    evidence: list[DiffCall] = Field(default_factory=list, description="The body calls the trace repeats, in order.")
    origin: Optional[SourceLocation] = Field(
        default=None, description="The original Python source line of the loop, from the archive's debug info.")


class BakedConstant(Node):
    """An operator argument computed in the script that the trace holds as a constant."""

    module: str = Field(description="Module path of the function compared: `self`, `self.layer1`.")
    function: str = Field(description="Qualified name of the script function holding the call.")
    path: str = Field(description="The script code file (`archive!entry` in an archive).")
    operator: str = Field(description="`aten::view`.")
    argument: str = Field(description="Position (`1`) or keyword of the argument.")
    script: str = Field(description="The script's expression: `[torch.size(x, 0), -1]`, `i`.")
    trace: str = Field(description="The trace's value: `[2, -1]`, `0`, `CONSTANTS.c0`.")
    kind: Literal["literal", "tensor_constant"] = Field(
        description="`literal` printed in the text; `tensor_constant` a `CONSTANTS.cN` tensor of the archive."
    )
    script_line: int = Field(description="1-based line of the call in the script text.")
    trace_line: int = Field(description="1-based line of the matching call in the trace text.")


class ModuleDiff(Node):
    """The pair of functions compared for one module path."""

    module: str = Field(description="Module path: `self`, `self.layer1`.")
    script_function: str = Field(description="Qualified name of the script function compared.")
    trace_function: str = Field(description="Qualified name of the trace function compared (`forward1` read as `forward`).")
    script_path: str = Field(description="The script code file (`archive!entry` in an archive).")
    trace_path: str = Field(description="The trace code file (`archive!entry` in an archive).")
    cost: int = Field(description="Alignment cost (unmatched events, weighted); 0 is a perfect match.")
    matched: int = Field(description="Events matched between the two texts.")
    trace_only: list[DiffCall] = Field(
        default_factory=list, description="Trace events the script function does not explain (inlined functions...)."
    )


class DiffReport(Node):
    """Script versus trace of one module (and its submodules, when their code is given)."""

    script: str = Field(description="The script input as given.")
    trace: str = Field(description="The trace input as given.")
    ifs: list[IfDiff] = Field(description="Every `if` of the script, nested ones too, module by module in textual order.")
    lost_calls: list[LostCall] = Field(description="Submodule calls of the script that the trace never makes.")
    unrolled_loops: list[UnrolledLoop] = Field(description="Script loops whose body the trace repeats.")
    baked_constants: list[BakedConstant] = Field(description="Computed operator arguments that the trace holds as constants.")
    modules: list[ModuleDiff] = Field(default_factory=list, description="The function pairs compared.")
    diagnostics: list[Diagnostic] = Field(default_factory=list, description="Problems reading either input "
                                          "and CP224 (the inputs do not belong together).")
    summary: dict[str, int] = Field(
        default_factory=dict, description="Counts: `ifs`, `kept`, `frozen` (then/else), `ambiguous` (ambiguous and "
        "unknown), `not_run` (neither), `mixed`, `lost_calls`, `unrolled_loops`, `baked_constants`.")


class OperatorInfo(Node):
    """An operator: its overload schemas and how Python reaches it."""

    name: str = Field(description="`aten::add`.")
    schemas: list[str] = Field(description="Overload schemas, e.g. `aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.")
    bindings: list[str] = Field(default_factory=list, description="Python names that reach it: `torch.add`, `torch._C._VariableFunctions.add`.")
    scriptable: bool = Field(description="Whether TorchScript can call it (it has a registered JIT schema).")
    source: Literal["live", "table"] = Field(description="`live` from the installed torch, `table` from the bundled table.")
    torch_version: Optional[str] = Field(default=None, description="The torch version the schemas come from (live, or the table's generator).")


class OperatorUse(Node):
    """One operator a model calls, with counts and places."""

    operator: str = Field(description="`aten::conv2d`, `prim::RaiseException`.")
    callees: list[str] = Field(description="As printed: `torch.conv2d`, `torch._C._nn.linear`.")
    count: int = Field(description="How many calls.")
    locations: list[str] = Field(description="`path:line:col` of every call.")
    known: bool = Field(description="Whether the operator table (or live torch) knows it.")
    schemas: list[str] = Field(default_factory=list, description="Its overload schemas (empty when unknown).")


class CaptureWarning(Node):
    """A warning raised while tracing (TracerWarning) or scripting."""

    category: str = Field(description="`TracerWarning`.")
    message: str = Field(description="The warning text.")
    file: str = Field(description="The model source file the warning points at.")
    line: int = Field(description="1-based line in that file.")


class CaptureError(Node):
    """Why scripting or tracing failed, and where in the model's source."""

    message: str = Field(description="First line of the error.")
    detail: str = Field(default="", description="The full error text (TorchScript's source excerpt included).")
    file: Optional[str] = Field(default=None, description="The model source file of the failure, when TorchScript names it.")
    line: Optional[int] = Field(default=None, description="1-based line in that file, when known.")


# -- building models from the engine's plain data, without validating it again --

def code_file_from_plain(data: dict) -> CodeFile:
    """The :class:`CodeFile` of the plain data that ``parse_text(..., as_dict=True)`` returns.

    Equal to ``CodeFile.model_validate(data)`` (the test suite compares them over every
    fixture), built without validating again what the engine guarantees: each dict
    becomes a model whose ``__dict__`` is a copy of it with nested dicts replaced by
    models, as ``model_construct`` does.  A dict reached twice (a call listed in
    ``calls`` and again in an if's ``then_calls``) becomes one shared model, and every
    model of a class shares one ``model_fields_set`` (frozen models never change it;
    ``model_copy`` copies it first), so a built file holds little more than its data.
    ``data`` is not changed.
    """
    return _build(CodeFile, data, {})


def report_from_plain(data: dict) -> Report:
    """The :class:`Report` of the plain data ``check`` collects (``Report.model_dump(mode="json")``),
    built as :func:`code_file_from_plain` builds a CodeFile (``codeparse.check`` returns it),
    by a function written for the report's classes (:func:`_builder`); a dict reached twice
    becomes two equal models."""
    return _builder(Report)(data)


def input_report_from_plain(data: dict) -> InputReport:
    """The :class:`InputReport` of one input's plain data, as :func:`report_from_plain`."""
    return _builder(InputReport)(data)


_LIST, _ONE = 0, 1
_Plan = tuple[tuple[str, int, type], ...]
_plans: dict[type, tuple[_Plan, set]] = {}
_object_setattr = object.__setattr__


def _plan(cls: type) -> tuple[_Plan, set]:
    """Which fields of ``cls`` hold models (one, optional or a list of them), and the
    field set every built instance shares."""
    import typing

    found = _plans.get(cls)
    if found is None:
        steps = []
        for name, info in cls.model_fields.items():
            ann = info.annotation
            origin, args = typing.get_origin(ann), typing.get_args(ann)
            if origin is typing.Union and len(args) == 2 and type(None) in args:  # Optional[X]
                ann = args[0] if args[1] is type(None) else args[1]
                origin, args = typing.get_origin(ann), typing.get_args(ann)
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                steps.append((name, _ONE, ann))
            elif origin is list and args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
                steps.append((name, _LIST, args[0]))
            elif any(isinstance(a, type) and issubclass(a, BaseModel) for a in _flatten(ann)):
                raise TypeError(f"{cls.__name__}.{name}: a nested model shape the builder does not know")
        found = _plans[cls] = (tuple(steps), set(cls.model_fields))
    return found


def _flatten(ann) -> list:
    import typing

    out, todo = [], [ann]
    while todo:
        a = todo.pop()
        out.append(a)
        todo.extend(typing.get_args(a))
    return out


def _build(cls: type, data: dict, memo: dict) -> BaseModel:
    key = id(data)
    got = memo.get(key)
    if got is not None and type(got) is cls:
        return got
    steps, fields_set = _plan(cls)
    values = data.copy()
    if len(values) != len(fields_set):  # a field left at its default, as model_validate fills it
        for name, info in cls.model_fields.items():
            if name not in values:
                values[name] = info.get_default(call_default_factory=True)
    for name, how, sub in steps:
        value = values[name]
        if how == _LIST:
            values[name] = [_build(sub, v, memo) for v in value]
        elif value is not None:
            values[name] = _build(sub, value, memo)
    model = cls.__new__(cls)
    _object_setattr(model, "__dict__", values)
    _object_setattr(model, "__pydantic_fields_set__", fields_set)
    _object_setattr(model, "__pydantic_extra__", None)
    _object_setattr(model, "__pydantic_private__", None)
    memo[key] = model
    return model


_builders: dict[type, Any] = {}


def _builder(cls: type) -> Any:
    """A function that builds ``cls`` from its plain data as :func:`_build` does (without
    its memo of shared dicts; a field left to its default takes its place in field order, as
    in a validated model), written out for the class: one function per model class,
    each field holding models built by a direct call, the model's slots set through their
    descriptors.  Building the report of a model zoo: about half of :func:`_build`'s time."""
    found = _builders.get(cls)
    if found is not None:
        return found
    env: dict[str, Any] = {"_new": object.__new__, "_set": _object_setattr,
                           "_fields_set": BaseModel.__pydantic_fields_set__.__set__,  # type: ignore[attr-defined]
                           "_extra": BaseModel.__pydantic_extra__.__set__,  # type: ignore[attr-defined]
                           "_private": BaseModel.__pydantic_private__.__set__}  # type: ignore[attr-defined]
    lines: list[str] = []
    done: set[type] = set()

    def write(model: type) -> str:
        name = f"_build_{model.__name__}"
        if model in done:
            return name
        done.add(model)
        steps, fields_set = _plan(model)
        env[f"_cls_{model.__name__}"] = model
        env[f"_set_{model.__name__}"] = fields_set
        env[f"_fields_{model.__name__}"] = model.model_fields
        body = [f"def {name}(data):", "    values = data.copy()",
                f"    if len(values) != {len(fields_set)}:",
                "        values = {key: data[key] if key in data else info.get_default(call_default_factory=True)",
                f"                  for key, info in _fields_{model.__name__}.items()}}"]
        for field, how, sub in steps:
            call = write(sub)
            if how == _LIST:
                body.append(f"    values[{field!r}] = [{call}(v) for v in values[{field!r}]]")
            else:
                body += [f"    v = values[{field!r}]", "    if v is not None:", f"        values[{field!r}] = {call}(v)"]
        body += [f"    model = _new(_cls_{model.__name__})", "    _set(model, '__dict__', values)",
                 f"    _fields_set(model, _set_{model.__name__})", "    _extra(model, None)", "    _private(model, None)",
                 "    return model"]
        lines.extend(body)
        return name

    top = write(cls)
    exec("\n".join(lines), env)  # noqa: S102 - code written from the models' own fields
    found = _builders[cls] = env[top]
    return found


# Every public model and type alias, computed so that additions above need no edit here.
__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_")
    and value is not BaseModel
    and ((isinstance(value, type) and issubclass(value, BaseModel)) or name.endswith(("Kind", "Role")) or name == "Severity")
]

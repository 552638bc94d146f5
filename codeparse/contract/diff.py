"""The trace-diff contract: what a trace lost against its script (DiffReport, IfDiff, LostCall ...),
and the operator inventory and capture results.
"""

from __future__ import annotations

from pydantic import Field
from typing import Literal, Optional

from .check import SourceLocation
from .text import CallKind, ConditionKind, Diagnostic, Node

__all__ = ["DiffCall", "IfDiff", "LostCall", "UnrolledLoop", "BakedConstant", "ModuleDiff", "DiffReport",
           "OperatorInfo", "OperatorUse", "CaptureWarning", "CaptureError"]


TakenBranch = Literal["then", "else", "neither", "unknown", "mixed", "kept", "ambiguous"]
"""Which branch of a script ``if`` the trace followed (``mixed``: different ones in different
iterations of an enclosing loop; ``kept``: the trace holds the ``if`` itself, because the code
is scripted inside the trace; ``ambiguous``: both branches explain the trace equally well);
see :mod:`codeparse.trace.compare`."""

DiffReason = Literal[
    "present", "absent", "raises", "not_run", "no_evidence", "indistinguishable", "tie",
    "tracing_predicate", "inlined", "mixed", "kept", "loop_passes", "not_described", "constant", "not_called", "call_argument",
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
    kind: ConditionKind = Field(description="What the condition depends on (the first ConditionKind that applies).")
    taken: TakenBranch = Field(
        description="`then`/`else`: the trace followed it; `neither`: the `if` certainly did not run in the "
        "trace; `unknown`: the trace cannot tell (no evidence, or the text does not describe the run there); `mixed`: "
        "different branches in different loop iterations; `kept`: the trace keeps the `if` (scripted code "
        "inside a trace)."
    )
    reason: DiffReason = Field(
        description="How it was decided, one of: `present` (calls of the taken branch are in the trace); "
        "`absent` (every path through the other branch would have left a call in the trace, and the trace "
        "lacks them); `raises` (the other branch raises, and the trace ran to its end); `not_run` (the path "
        "never reaches the `if`); `no_evidence` (neither branch has a call a trace shows, or both would and "
        "the trace has neither: `unknown`); `indistinguishable` (both branches make the same calls: `ambiguous`); "
        "`tie` (forcing the `if` each way explains the trace at equal cost: `ambiguous`); "
        "`tracing_predicate` (the condition is `torch.jit.is_tracing()`, `_is_tracing()` or "
        "`torch.jit.is_scripting()`, whose value inside a trace is known); `inlined` (the `if` belongs to "
        "a callee the path never calls: `neither`); `mixed` (different branches in different passes); "
        "`kept` (the trace still runs this code as TorchScript); `loop_passes` (in a loop whose passes the "
        "trace does not all show, the other branch may have run in the passes it does not show: `unknown`, "
        "`passes` per pass shown); `not_described` (the script makes a call there unconditionally that the "
        "trace lacks altogether, as where the compiler folded `torch.jit.is_scripting()`: `unknown`); "
        "`constant` (archive mode: the trace's stored constants match a literal of this branch only); "
        "`not_called` (the `if` belongs to a submodule the trace never calls: `neither`); `call_argument` "
        "(the condition reads parameters of an inlined function that its call site passes as literals)."
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
        "unknown), `not_run` (neither), `mixed`, `lost_calls`, `unrolled_loops`, `baked_constants`, `not_described` "
        "(ifs abstaining where the script text does not describe the traced run).")


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

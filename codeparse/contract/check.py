"""The public contract: what codeparse tells you about a piece of TorchScript code text.

Every model is a frozen pydantic model; field names are the contract that tools and CI
users build on: fields may be added, never renamed.
``extra="forbid"`` applies when JSON is loaded back with ``model_validate_json``.

Position convention (one, used everywhere): a :class:`Span` stores character offsets
into the decoded source text, ``start`` inclusive and ``end`` exclusive, so that
``source[span.start:span.end]`` is the node's text.  ``line`` and ``column`` are 1-based,
as in SARIF and in compiler messages (``file:line:col``); columns count code points;
``end_line``/``end_column`` point one past the last character.
"""

from __future__ import annotations

from pydantic import Field, field_validator
from typing import Literal, Optional

from .text import ClassDef, CodeFile, ConditionKind, ConditionSource, Diagnostic, Function, Node, Span


# -- archive, findings and report models --

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
    kind: ConditionKind = Field(description="What the condition depends on (the first ConditionKind that applies).")
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
    allow_globals: list[str] = Field(
        default_factory=list,
        description="Pickle globals (`module.name`, exactly) treated as torch's weights_only allowlist treats its "
        "own, as `torch.serialization.add_safe_globals` would allow them: silent. Only from the command line or "
        "a trusted `--config` file, never from a pyproject.toml found in the checked tree.",
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
    unknown: int = Field(default=0, description="CP406 and CP407 findings: conditions and conversions codeparse cannot judge.")
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


__all__ = ["SourceLocation", "Finding", "ModuleNode", "Branch", "Archive", "Policy", "ExportVerdictKind", "ExportVerdict",
           "PickleReport", "InputKind", "InputReport", "Report"]

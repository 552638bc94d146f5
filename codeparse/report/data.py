"""What a report shows, gathered from the public API into plain view objects.

One :class:`InputView` per input (an archive or a ``.code`` file): its summary, module
tree, call tree from ``forward``, one :class:`FileView` per code file (text split in
lines, every ``if`` and loop a :class:`Mark`) and its findings.  A script/trace pair
gives a :class:`PairView`.  Nothing here escapes or formats HTML: the templates get the
true strings, and Jinja2's autoescape is the one place they become HTML; only each code
line comes as HTML, from the ``highlight`` function given
(:func:`codeparse.report.highlight.highlight_html`).

The data comes from the same functions ``check`` and ``diff`` use, as the plain data
``check`` carries: an archive is read by :func:`codeparse.gate.run.archive_data`, the one
reading of an open archive that ``check`` does too (its report, and the resolved program:
classes, the module tree, what ``forward`` reaches), after every ``.debug_pkl`` is read
for each line's original source line; a code text is reported by
:func:`codeparse.gate.run.code_data`, the one reading of a code text ``check`` does too;
every input is told apart by :func:`codeparse.gate.run.classified`, as ``check`` tells it
apart, and any other input is reported by
:func:`codeparse.gate.run.input_data`; a pair by :func:`codeparse.trace.compare.diff`.  The reader also hands over the code text the
spans index into and each entry's debug info, from which the original line's text is
taken (``.debug_pkl`` stores the source of every function it maps).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional


__all__ = ["KINDS", "Mark", "LineView", "FileView", "FindingView", "InputView", "PairView", "collect_input"]

# Condition kinds (ConditionKind), in priority order, with the label a reader sees next to
# the line and what it means for a trace.  Colours live in the CSS (one rule per kind).
KINDS: dict[str, tuple[str, str]] = {
    "tensor_value": ("tensor value", "branches on a tensor's contents: a trace freezes the branch it took"),
    "tensor_shape": ("tensor shape", "branches on shape or metadata: a trace bakes the example's shape in"),
    "argument": ("argument", "branches on a non-tensor argument: a trace bakes the example's value in"),
    "attribute": ("attribute", "branches on module state (self.training too): a trace bakes it in, silently"),
    "runtime": ("runtime", "branches on global runtime state: a trace bakes it in"),
    "unknown": ("unknown", "codeparse cannot tell what it depends on"),
    "constant": ("constant", "branches on a literal: harmless"),
}
LOOP_KIND = "loop"  # loops without a classified condition
SEVERITIES = ("error", "warning", "info")

# Zip entries by what they hold, for the size summary.
SIZE_GROUPS = ("code", "debug info", "constants", "tensor data", "other")


@dataclass
class FindingView:
    id: str  # anchor of its table row
    code: str
    name: str
    severity: str
    message: str
    path: str  # the file it is about (`archive!entry` or the input)
    file: str  # short file name shown in the table and its filter
    file_id: Optional[str] = None  # anchor prefix of the code view, when it has a line there
    line: Optional[int] = None
    column: Optional[int] = None
    origin: Optional[str] = None  # `model.py:65`
    related: list[str] = field(default_factory=list)  # original lines of the definitions that decide it
    reachable: bool = True
    checked: bool = True  # listed by `check` (False: an if forward never reaches, shown for completeness)


@dataclass
class Mark:
    """An ``if`` or a loop on one code line."""

    id: str
    what: str  # `if`, `for`, `while`
    kind: str  # condition kind, or `loop`
    label: str
    text: str  # the condition (or loop header) as printed
    resolved: Optional[str] = None
    sources: list[tuple[str, str, str]] = field(default_factory=list)  # (ref, kind, type)
    origin: Optional[str] = None  # `model.py:65`
    origin_text: Optional[str] = None  # that line's text, from .debug_pkl
    findings: list[FindingView] = field(default_factory=list)
    reachable: bool = True
    function: str = ""
    diff: Optional[str] = None  # pair view: kept / frozen (then) / ambiguous / not run ...
    diff_class: Optional[str] = None
    note: Optional[str] = None


@dataclass
class LineView:
    number: int
    html: Any  # the line's highlighted text, escaped (highlight.highlight_html: markupsafe.Markup)
    mark: Optional[Mark] = None
    findings: list[FindingView] = field(default_factory=list)
    css: str = ""  # extra classes: `lost`, `unrolled`, `evidence`
    note: Optional[str] = None


@dataclass
class FileView:
    id: str
    path: str  # as in findings: `archive!entry`
    name: str  # shown: the entry name inside the archive, or the file
    grammar: str
    lines: list[LineView]
    ifs: int = 0
    loops: int = 0
    findings: int = 0
    worst: Optional[str] = None  # highest severity of its findings
    size: int = 0


@dataclass
class TreeNode:
    name: str
    path: str
    cls: str
    short: str
    role: str
    attrs: list[tuple[str, str, str]] = field(default_factory=list)  # (name, role, type)
    children: list["TreeNode"] = field(default_factory=list)
    link: Optional[tuple[str, int]] = None  # (file id, line) of its class
    forward: list[str] = field(default_factory=list)  # what its forward calls, in order


@dataclass
class CallNode:
    name: str
    short: str
    link: Optional[tuple[str, int]] = None
    children: list["CallNode"] = field(default_factory=list)
    repeated: bool = False  # expanded elsewhere in the tree


@dataclass
class InputView:
    id: str
    path: str
    kind: str  # archive / code
    readable: bool
    error: Optional[str] = None
    summary: list[tuple[str, str]] = field(default_factory=list)
    sizes: list[tuple[str, int, int]] = field(default_factory=list)  # (group, entries, bytes)
    if_kinds: list[tuple[str, str, int, int]] = field(default_factory=list)  # (kind, label, all, reachable)
    loops: int = 0
    loop_kinds: list[tuple[str, str, int, int]] = field(default_factory=list)  # (kind, label, all, reachable)
    severities: dict[str, int] = field(default_factory=dict)
    export: Optional[dict] = None  # InputReport.export (check --target export), as rows
    tree: Optional[TreeNode] = None
    calls: Optional[CallNode] = None
    files: list[FileView] = field(default_factory=list)
    findings: list[FindingView] = field(default_factory=list)


@dataclass
class PairView:
    id: str
    script: str
    trace: str
    rows: list[dict] = field(default_factory=list)  # one per function pair: script/trace FileViews
    counts: list[tuple[str, int]] = field(default_factory=list)
    lost: list[Any] = field(default_factory=list)
    unrolled: list[Any] = field(default_factory=list)
    baked: list[Any] = field(default_factory=list)
    ifs: list[Any] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)  # CP224: the inputs do not belong together
    # How many diagnostics `codeparse diff` reports for the pair (it exits 1 when there are any).
    diff_diagnostics: int = 0
    error: Optional[str] = None


# ----------------------------------------------------------------------------- helpers


def _short_class(qualified: str) -> str:
    name = qualified.rsplit(".", 1)[-1]
    return name


def _functions(cf: Any) -> Iterable[Any]:
    """The functions of a CodeFile model (the pair view reads :mod:`codeparse.trace.compare`'s models)."""
    for cls in cf.classes:
        yield from cls.methods
    yield from cf.functions


def _finding_view(f: dict, fid: str, input_path: str, file_ids: dict[str, str]) -> FindingView:
    """One finding (plain data, ``Finding.model_dump(mode="json")``) as a row of the table."""
    path = f["path"]
    shown = path[len(input_path) + 1:] if path.startswith(input_path + "!") else path
    view = FindingView(id=fid, code=f["code"], name=f["name"], severity=f["severity"], message=f["message"],
                       path=path, file=shown)
    span = f["span"]
    if span is not None and path in file_ids:
        view.file_id = file_ids[path]
        view.line = span["line"]
        view.column = span["column"]
    origin = f["origin"]
    if origin is not None:
        view.origin = f"{origin['path']}:{origin['line']}"
    view.related = [f"{r['path']}:{r['line']}" for r in f.get("related") or []]
    return view


def _era(version: Optional[int]) -> Optional[str]:
    """The torch releases whose grammar lists this version record (``codeparse grammars``)."""
    if version is None:
        return None
    from ..grammar.engine import available_grammars

    for info in available_grammars():
        if version in info.version_records:
            return f"PyTorch {info.torch_versions} (version record {version}, grammar {info.id})"
    return None


def _size_group(name: str) -> str:
    parts = name.split("/")
    if name.endswith(".debug_pkl") or (len(parts) > 2 and parts[1] == "debug"):
        return "debug info"
    if "code" in parts[:-1] or "ts_code" in parts[:-1]:
        return "code"
    if parts[-1] == "constants.pkl" or "constants" in parts[:-1]:
        return "constants"
    if "data" in parts[:-1] or parts[-1] == "data.pkl":
        return "tensor data"
    return "other"


def _sources(opened: Any, files: list[dict]) -> tuple[dict[str, str], Any, list]:
    """Code text per file path, a lookup of original line texts, and entry sizes, from an
    archive open for reading whose debug info is read (:meth:`~codeparse.archive.torchscript.OpenedArchive.every_origin`
    with ``keep_line_maps``): the text and the :class:`~codeparse.archive.debuginfo.LineMap` of every
    entry it mapped are kept there; entries without debug info are read here (their text only)."""
    from ..text.reader import decode_text
    from ..files.zipread import EntryRefused

    reader = opened.reader
    texts: dict[str, str] = {display: text for display, (_, text) in opened.line_maps.items()}
    maps = [line_map for line_map, _ in opened.line_maps.values()]
    sizes: dict[str, list[int]] = {g: [0, 0] for g in SIZE_GROUPS}
    for info in reader._zf.infolist():
        group = sizes[_size_group(info.filename)]
        group[0] += 1
        group[1] += info.file_size
    wanted = {cf["path"] for cf in files} - set(texts)
    for name in reader.names:
        display = reader.display(name)
        if display not in wanted:
            continue
        try:
            texts[display] = decode_text(reader.read(name))
        except EntryRefused:
            continue

    def line_text(filename: str, line: int) -> Optional[str]:
        for m in maps:
            found = m.source_line(filename, line)
            if found is not None:
                return found
        return None

    return texts, line_text, [(g, n, b) for g, (n, b) in sizes.items() if n]


# ----------------------------------------------------------------------------- inputs


@dataclass
class _Archive:
    """What the page shows of one archive, as plain data, from one reading of it."""

    report: dict  # the input report of `check` (InputReport.model_dump(mode="json"))
    files: list[dict]  # CodeFile.model_dump(mode="json") of each code file
    analysis: Any  # codeparse.text.program.Analysis: classes, functions, calls, what forward reaches
    origins: dict[str, Any]  # file path -> original (file, line) of a code line, by `.get(line)`
    texts: dict[str, str]
    line_text: Any
    sizes: list[tuple[str, int, int]]
    layout: str
    version: Optional[int]
    entries: int


def _read_archive(path: str, policy: Any, zipped: Optional[tuple]) -> _Archive:
    """One archive read as ``check`` reads it (:func:`codeparse.gate.run.archive_data`: each
    code entry parsed once, as plain data, the program resolved), after every ``.debug_pkl``
    (as :func:`codeparse.archive.torchscript.read_archive` reads them: the page shows the
    original line of every ``if`` and loop), with the code texts and the entry sizes.
    Raises :class:`codeparse.InputError`."""
    from ..archive.torchscript import reading_archive
    from ..gate.run import archive_data
    from ..text.cache import EntryCache

    with reading_archive(path, policy, None, None, EntryCache(), zipped) as opened:
        opened.keep_line_maps = True
        files = opened.files
        origins = opened.every_origin()
        report, analysis = archive_data(path, opened, policy)
        texts, line_text, sizes = _sources(opened, files)
        return _Archive(report=report, files=files, analysis=analysis, origins=origins, texts=texts,
                        line_text=line_text, sizes=sizes, layout=opened.layout, version=opened.version,
                        entries=opened.count)


def _file_views(input_id: str, files: list[dict], texts: dict[str, str], input_path: str,
                findings: list[FindingView], origins: dict[str, Any], line_text, reachable_fn,
                highlight) -> list[FileView]:
    from ..text.program import functions_of

    by_line: dict[tuple[str, int], list[FindingView]] = {}
    for f in findings:
        if f.line is not None:
            by_line.setdefault((f.path, f.line), []).append(f)
    views: list[FileView] = []
    for n, cf in enumerate(files):
        fid = f"{input_id}f{n}"
        path = cf["path"]
        text = texts.get(path, "")
        name = path[len(input_path) + 1:] if path.startswith(input_path + "!") else path
        lines = [LineView(number=i + 1, html=html) for i, html in enumerate(highlight(text))]
        view = FileView(id=fid, path=path, name=name, grammar=cf["grammar"], lines=lines, size=len(text))
        file_origins = origins.get(path) or {}

        def origin_of(line: int) -> tuple[Optional[str], Optional[str]]:
            o = file_origins.get(line)
            if o is None:
                return None, None
            return f"{o[0]}:{o[1]}", line_text(o[0], o[1]) if line_text else None

        for fn in functions_of(cf):
            qualified = fn["qualified_name"]
            live = reachable_fn(qualified)
            for if_ in fn["ifs"]:
                line = if_["span"]["line"]
                if not 0 < line <= len(lines):
                    continue
                cond = if_["condition"]
                kind = cond["kind"]
                origin, origin_text = origin_of(line)
                mark = Mark(
                    id=f"{fid}i{line}", what="if", kind=kind, label=f"if · {KINDS[kind][0]}",
                    text=cond["text"], resolved=cond["resolved"] if cond["resolved"] != cond["text"] else None,
                    sources=[(s["ref"], s["kind"], s["type"]) for s in cond["sources"]], origin=origin,
                    origin_text=origin_text, findings=by_line.get((path, line), []), reachable=live,
                    function=qualified,
                )
                if cond.get("data_dependent_shape", False):
                    mark.note = "the shape read depends on tensor values (data-dependent)"
                lines[line - 1].mark = mark
                view.ifs += 1
            for loop in fn["loops"]:
                line = loop["span"]["line"]
                if not 0 < line <= len(lines) or lines[line - 1].mark is not None:
                    continue
                cond = loop.get("condition")  # loop conditions, when present
                kind = cond["kind"] if cond is not None and cond.get("kind") in KINDS else LOOP_KIND
                label = f"{loop['kind']} · {KINDS[kind][0]}" if kind in KINDS else f"{loop['kind']} loop"
                origin, origin_text = origin_of(line)
                mark = Mark(
                    id=f"{fid}l{line}", what=loop["kind"], kind=kind, label=label, text=loop["iter"],
                    resolved=cond.get("resolved") if cond is not None else None,
                    sources=[(s["ref"], s["kind"], s["type"]) for s in cond.get("sources", [])] if cond else [],
                    origin=origin, origin_text=origin_text, findings=by_line.get((path, line), []),
                    reachable=live, function=qualified,
                )
                if mark.resolved == mark.text:
                    mark.resolved = None
                lines[line - 1].mark = mark
                view.loops += 1
        for (at, line), items in by_line.items():
            if at == path and 0 < line <= len(lines):
                lines[line - 1].findings = items
        mine = [f for f in findings if f.path == path]
        view.findings = len(mine)
        for sev in SEVERITIES:
            if any(f.severity == sev for f in mine):
                view.worst = sev
                break
        views.append(view)
    return views


def _reachability(files: list[dict], reachable: Optional[list[str]]):
    """``(function name -> reachable)`` and ``(path, line) -> reachable`` for findings."""
    from ..text.program import functions_of

    if not reachable:
        return (lambda _qn: True), (lambda _p, _l: True)
    live = set(reachable)
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for cf in files:
        for fn in functions_of(cf):
            span = fn["span"]
            spans.setdefault(cf["path"], []).append((span["line"], span["end_line"], fn["qualified_name"]))

    def line_live(path: str, line: int) -> bool:
        for start, end, qn in spans.get(path, ()):
            if start <= line <= end:
                return qn in live
        return True

    return (lambda qn: qn in live), line_live


def _tree(files: list[dict], analysis: Any, file_ids: dict[str, str]) -> tuple[Optional[TreeNode], Optional[CallNode]]:
    from ..text.program import functions_of
    from ..text.program import module_tree

    classes = analysis.prog.classes
    functions = analysis.prog.functions
    where: dict[str, tuple[str, int]] = {}
    for cf in files:
        for cls in cf["classes"]:
            if cf["path"] in file_ids:
                where.setdefault(cls["qualified_name"], (file_ids[cf["path"]], cls["span"]["line"]))
    fn_where: dict[str, tuple[str, int]] = {}
    for cf in files:
        for fn in functions_of(cf):
            if cf["path"] in file_ids:
                fn_where.setdefault(fn["qualified_name"], (file_ids[cf["path"]], fn["span"]["line"]))

    def attrs(qn: str) -> list[tuple[str, str, str]]:
        cls = classes.get(qn)
        if cls is None:
            return []
        out = []
        for a in cls["attributes"]:
            name, typ, value, final = a["name"], a["type"], a["value"], a["final"]
            kind = typ or ("" if value is None else "constant")
            if name in cls["parameters"]:
                role = "parameter"
            elif name in cls["buffers"]:
                role = "buffer"
            elif final:
                role = "constant"
            elif typ in classes and classes[typ]["kind"] == "module":
                role = "submodule"
            else:
                role = "attribute"
            shown = typ or ""
            if final and value is not None:
                shown = f"{shown} = {value}" if shown else value
            out.append((name, role, shown or kind))
        return out

    def forward_calls(qn: str) -> list[str]:
        fn = functions.get(f"{qn}.forward")
        if fn is None:
            return []
        seen: list[str] = []
        for c in fn["calls"]:
            if c["kind"] in ("submodule", "self_method") and c["receiver"]:
                label = f"{c['receiver']}.{c['method']}" if c["method"] else c["receiver"]
                if label not in seen:
                    seen.append(label)
        return seen

    def node(m: dict, depth: int) -> TreeNode:
        name = m["path"].rsplit(".", 1)[-1] if m["path"] != "self" else "self"
        t = TreeNode(name=name, path=m["path"], cls=m["type"], short=_short_class(m["type"]),
                     role="root module" if depth == 0 else "submodule", attrs=attrs(m["type"]),
                     link=where.get(m["type"]), forward=forward_calls(m["type"]))
        t.children = [node(c, depth + 1) for c in m["children"]]
        return t

    root = analysis.root_class
    tree = node(module_tree(analysis.prog, root, "self", node=dict), 0) if root else None

    calls = None
    graph = analysis.graph
    start = analysis.reachable[0] if analysis.reachable else None
    if start is not None:
        expanded: set[str] = set()

        def call_node(qn: str, depth: int) -> CallNode:
            parts = qn.rsplit(".", 2)
            short = ".".join(parts[-2:]) if len(parts) >= 2 else qn
            c = CallNode(name=qn, short=short, link=fn_where.get(qn))
            if qn in expanded or depth > 24:
                c.repeated = bool(graph.get(qn))
                return c
            expanded.add(qn)
            c.children = [call_node(t, depth + 1) for t in graph.get(qn, [])]
            return c

        calls = call_node(start, 0)
    return tree, calls


def _with_unreached(findings: list[dict], read: _Archive, policy: Any) -> list[dict]:
    """``check``'s findings plus the condition findings of ifs that ``forward`` never reaches
    (``check`` leaves those out; the table shows them marked, and "reachable only" hides them)."""
    from ..gate.policy import selected
    from ..text.program import condition_finding

    if policy.target != "trace" or not read.analysis.reachable:
        return findings  # export findings cover reachable code only; no entry point: all reachable
    extra = []
    for path, function, if_, live in read.analysis.conditions:
        if live:
            continue
        found = condition_finding(path, function, if_, read.origins.get(path))
        if selected(found["code"], policy):
            extra.append(found)
    if not extra:
        return findings
    rank = {cf["path"]: i for i, cf in enumerate(read.files)}
    return sorted(findings + extra, key=lambda f: (rank.get(f["path"], -1), f["span"]["start"] if f["span"] else -1))


def _export_rows(verdict: Optional[dict]) -> Optional[dict]:
    """The export verdict of ``check --target export`` (``InputReport.export``) for the summary."""
    if verdict is None:
        return None
    return {
        "verdict": verdict["verdict"],
        "label": verdict["verdict"].replace("_", " "),
        "reason": verdict["reason"],
        "blocked": [f"{b['path']}:{b['line']}" for b in verdict["blocked"]],
        "specializations": verdict["specializations"],
        "unknown": verdict["unknown"],
    }


def _findings_only(view: InputView, report: dict) -> InputView:
    """An input with no code to show (a checkpoint, a pickle, a .pt2, an unreadable file):
    what ``check`` says about it (its input report, as plain data)."""
    view.kind = report["kind"]
    view.readable = report["readable"]
    if not view.readable:
        view.error = "; ".join(f"{f['code']} {f['message']}" for f in report["findings"]) or "unreadable"
        return view
    labels = {"checkpoint": "torch.save checkpoint", "pickle": "plain pickle", "pt2": "torch.export archive (.pt2)",
              "lfs_pointer": "Git LFS pointer (the model itself is not here)", "other": "not a model file"}
    view.summary = [("format", labels.get(view.kind, view.kind)), ("code", "none to show")]
    view.findings = [_finding_view(f, f"{view.id}F{n}", view.path, {}) for n, f in enumerate(report["findings"])]
    view.severities = {s: sum(1 for f in view.findings if f.severity == s) for s in SEVERITIES}
    view.export = _export_rows(report.get("export"))
    return view


def collect_input(input_id: str, path: str, policy: Any, highlight, problem: Optional[str] = None) -> InputView:
    """Everything shown about one input; never raises for bad input.  Inputs are told
    apart as ``check`` tells them (:func:`codeparse.gate.run.classified`, by their bytes):
    TorchScript archives and code text are shown in full, other model files by what
    ``check`` finds in them.  ``policy``: a :class:`~codeparse.contract.check.Policy` or
    :class:`~codeparse.contract.records.Limits`."""
    from ..contract.errors import InputError
    from ..contract.records import limits_of
    from ..gate.run import classified, input_data

    policy = limits_of(policy)
    view = InputView(id=input_id, path=path, kind="archive", readable=True)
    if problem is not None:
        return _findings_only(view, input_data(path, policy, problem))
    read = None
    with classified(path, None, policy) as (_kind, way, zipped):
        if way == "scan":
            return _findings_only(view, input_data(path, policy))
        if way == "archive":
            try:
                read = _read_archive(path, policy, zipped)
            except InputError:
                return _findings_only(view, input_data(path, policy))
    if read is not None:
        report, files, analysis = read.report, read.files, read.analysis
        texts, line_text, origins, view.sizes = read.texts, read.line_text, read.origins, read.sizes
        grammars = sorted({cf["grammar"] for cf in files}) or ["-"]
        view.summary = [
            ("format", f"TorchScript archive ({read.layout})"),
            ("grammar", ", ".join(grammars)),
            ("version record", "none" if read.version is None else str(read.version)),
            ("torch era", _era(read.version) or "unknown"),
            ("root module", analysis.root_class or "not found"),
            ("zip entries", str(read.entries)),
            ("code files", str(len(files))),
            ("classes", str(len(analysis.prog.classes))),
            ("functions reachable from forward", f"{len(analysis.reachable)} of {len(analysis.prog.functions)}"),
        ]
    else:
        report, cf, text = _read_code(path, policy)
        if cf is None:
            return _findings_only(view, report)
        view.kind = "code"
        files, texts, origins, line_text = [cf], {path: text}, {}, None
        view.summary = [("input", "code text"), ("grammar", cf["grammar"])]
    view.export = _export_rows(report["export"])
    file_ids = {cf["path"]: f"{input_id}f{n}" for n, cf in enumerate(files)}
    fn_live, line_live = _reachability(files, read.analysis.reachable if read is not None else None)
    view.findings = []
    listed = report["findings"]
    shown = _with_unreached(listed, read, policy) if read is not None else listed
    checked = {id(f) for f in listed}
    for n, f in enumerate(shown):
        fv = _finding_view(f, f"{input_id}F{n}", path, file_ids)
        fv.checked = id(f) in checked
        if fv.line is not None:
            fv.reachable = line_live(f["path"], fv.line)
        view.findings.append(fv)
    # Counted as check counts them: what forward reaches (the unreached rows are extra).
    view.severities = {s: sum(1 for f in listed if f["severity"] == s) for s in SEVERITIES}
    view.files = _file_views(input_id, files, texts, path, view.findings, origins, line_text, fn_live, highlight)
    counts: dict[str, list[int]] = {k: [0, 0] for k in KINDS}
    for fv in view.files:
        for line in fv.lines:
            m = line.mark
            if m is not None and m.what == "if":
                counts[m.kind][0] += 1
                counts[m.kind][1] += int(m.reachable)
    view.if_kinds = [(k, KINDS[k][0], a, r) for k, (a, r) in counts.items() if a]
    view.loops = sum(fv.loops for fv in view.files)
    loop_counts: dict[str, list[int]] = {}
    for fv in view.files:
        for line in fv.lines:
            m = line.mark
            if m is not None and m.what != "if":
                c = loop_counts.setdefault(m.kind, [0, 0])
                c[0] += 1
                c[1] += int(m.reachable)
    view.loop_kinds = [(k, KINDS[k][0] if k in KINDS else "unclassified", a, r)
                       for k, (a, r) in sorted(loop_counts.items(), key=lambda kv: list(KINDS).index(kv[0])
                                               if kv[0] in KINDS else len(KINDS))]
    if read is not None:
        view.tree, view.calls = _tree(files, read.analysis, file_ids)
    return view


def _read_code(path: str, policy: Any) -> tuple[dict, Optional[dict], str]:
    """A code text file read as ``check`` reads it (:func:`codeparse.gate.run.code_data`):
    its input report, the parsed file (plain data; None when it cannot be read, and the
    report says why) and its text."""
    from ..gate.run import code_data, input_data
    from ..text.reader import decode_text

    report, code_file = code_data(path, policy)
    if code_file is None:
        return report, None, ""
    try:
        with open(path, "rb") as handle:
            text = decode_text(handle.read())
    except OSError:  # gone since it was parsed: what check says of it now
        return input_data(path, policy), None, ""
    return report, code_file, text


# ----------------------------------------------------------------------------- pairs

def _find_function(cf: Any, qualified: str) -> Optional[Any]:
    for fn in _functions(cf):
        if fn.qualified_name == qualified:
            return fn
    for fn in _functions(cf):
        if fn.name == qualified.rsplit(".", 1)[-1]:
            return fn
    return None


def input_paths(paths: Iterable[str]) -> list[tuple[str, Optional[str]]]:
    """Inputs as ``check`` expands them (directories walked for archives and ``.code`` files)."""
    from ..gate.inputs import expand_inputs

    return expand_inputs(os.fspath(p) for p in paths)

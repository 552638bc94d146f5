"""Cross-file resolution: one archive's code files read as one program.

From the :class:`CodeFile` of every code entry this builds the :class:`Archive`:

* the classes and functions by qualified name, and each class's declared attributes
  (role and type, from ``__parameters__``/``__buffers__`` and ``name : Type`` lines);
* every file is parsed with the declarations of the other classes
  (:func:`parse_program`, :func:`codeparse.text.reader.parse_text` ``types=``), so that
  ``self.layer1.conv`` gets its role and type, and attributes typed with non-module
  classes are attributes, with the right call kinds;
* the call graph: ``(self).m(...)`` runs the class's ``m``; ``(layer1).forward(x, )``
  runs ``forward`` of ``layer1``'s declared class; ``__torch__.f(...)`` runs ``f``;
* the module tree from the root class, and which methods are reachable from its
  ``forward``;
* every ``if`` as a :class:`Branch`, and findings: unresolved types, functions and
  methods (CP316-CP318), attributes no class declares (CP321), condition findings (CP201-CP208) for the reachable ifs, the
  parse diagnostics of each file, each with its original source line when debug info
  maps it.

C++ custom classes (``__torch__.torch.classes.*``) are not defined in archives and
are never reported as unresolved.

Everything here works on the plain data of the parse (``CodeFile.model_dump(mode="json")``,
from :func:`parse_program` ``as_dict=True``), and findings are plain data too
(:mod:`codeparse.contract.records`): ``check`` builds no model.  Only :func:`resolve`, for an
:class:`Archive`, builds the models.
"""

from __future__ import annotations

import functools
from collections import deque
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from ..contract.codes import diagnostic
from ..contract.records import finding as _finding
from ..grammar.engine import load_grammar

if TYPE_CHECKING:  # the models are built only for an Archive (resolve)
    from ..contract.check import Archive

__all__ = ["parse_program", "resolve", "analyse", "Analysis", "condition_finding",
           "condition_diagnostic", "to_finding", "CONDITION_CODES"]

# Condition kind -> finding code (the rows of ConditionKind); `self.training` has its own code.
CONDITION_CODES = {
    "tensor_value": "CP201",
    "tensor_shape": "CP202",
    "attribute": "CP204",
    "argument": "CP205",
    "runtime": "CP206",
    "unknown": "CP207",
    "constant": "CP208",
}
TRAINING_CODE = "CP203"
_MAX_TREE_DEPTH = 64
_EXCERPT = 80

Declared = dict[str, tuple[str, Optional[str]]]


def excerpt(text: str) -> str:
    """``text`` on one line, cut to 80 characters (for a finding's message)."""
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[:_EXCERPT - 1] + "…"


def condition_excerpt(cond: dict) -> str:
    """A condition (plain data) as its message shows it: resolved (``bool(torch.eq(...))``,
    not the temporary ``_2``), on one line, cut."""
    return excerpt(cond["resolved"] or cond["text"])


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")


def short_type(type_name: str, keep_module: bool = False) -> str:
    """A type as a message shows it: every qualified TorchScript class name by its class
    name alone, mangling gone (``__torch__.torch.nn.modules.linear.___torch_mangle_41.Linear``
    is ``Linear``; ``Optional[__torch__.Block]`` is ``Optional[Block]``).  ``keep_module``:
    only the ``__torch__.`` prefix and the mangling go (a function a condition reads,
    ``torch.backends.mha.get_fastpath_enabled``).  The full names stay in the finding's
    ``sources``."""
    if "__torch__." not in type_name:
        return type_name  # no qualified class name: every character stays
    return _short_qualified(type_name, keep_module)


@functools.lru_cache(maxsize=4096)
def _short_qualified(type_name: str, keep_module: bool) -> str:
    out: list[str] = []
    i = 0
    while i < len(type_name):
        j = i
        while j < len(type_name) and type_name[j] in _NAME_CHARS:
            j += 1
        if j == i:
            out.append(type_name[i])
            i += 1
            continue
        name = type_name[i:j]
        if name.startswith("__torch__."):
            parts = [p for p in name.split(".")[1:] if not p.startswith("___torch_mangle_")]
            name = ".".join(parts) if keep_module else parts[-1]
        out.append(name)
        i = j
    return "".join(out)


def sources_text(cond: dict) -> str:
    """A condition's sources (plain data) as its message names them: those of its kind
    (the deciding source first: the condition lists them in that order), four at most,
    types short (:func:`short_type`)."""
    found = cond["sources"]
    shown = [s for s in found if s["kind"] == cond["kind"]] or list(found)
    text = ", ".join(f"{short_type(s['ref'], keep_module=True)} ({short_type(s['type'])})"
                     for s in shown[:4]) or "nothing"
    if len(shown) > 4:
        text += f" and {len(shown) - 4} more"
    return text


def to_finding(d: dict, origins: Optional[Any] = None) -> dict:
    """A diagnostic dict as a finding (plain data, :func:`codeparse.contract.records.finding`),
    with its original line when ``origins`` (code line -> ``(file, line)``) maps it."""
    span = d.get("span")
    if origins and span is not None:
        found = origins.get(span["line"])
        if found is not None:
            return _finding(d, {"path": found[0], "line": found[1]})
    return _finding(d)


def condition_diagnostic(path: str, function: str, if_: dict) -> dict:
    """The condition finding of one ``if`` (an ``IfStatement`` as plain data), as a diagnostic dict."""
    cond = if_["condition"]
    kind = cond["kind"]
    # A size that tensor values decide (`boxes[keep]`, `nonzero`): a trace freezes the
    # branch by the example's values, as for a branch on the values themselves.
    code = CONDITION_CODES["tensor_value" if kind == "tensor_shape" and cond.get("data_dependent_shape") else kind]
    found = cond["sources"]
    if kind == "attribute" and any(s["ref"].endswith(".training") for s in found):
        code = TRAINING_CODE
    d = diagnostic(code, path, if_["span"], condition=condition_excerpt(cond), sources=sources_text(cond),
                   function=function, kind=kind)
    d["sources"] = list(found)
    return d


def condition_finding(path: str, function: str, if_: dict, origins: Optional[Any] = None) -> dict:
    """The condition finding of one ``if`` (plain data)."""
    return to_finding(condition_diagnostic(path, function, if_), origins)


class _Program:
    """The code files of one archive (plain data, ``CodeFile.model_dump(mode="json")``) by name."""

    def __init__(self, files: list[dict], root: str, extra: dict[str, Declared]):
        self.root = root
        self.extra = extra
        self.current: Optional[str] = None  # the file being parsed, while parsing
        self.misses: dict[str, set[str]] = {}  # file -> classes asked for before they were known
        self.index(files)

    def index(self, files: list[dict]) -> None:
        self.files = []
        self.classes: dict[str, dict] = {}
        self.class_file: dict[str, str] = {}
        self.functions: dict[str, dict] = {}
        self.owner: dict[str, Optional[str]] = {}
        self.function_file: dict[str, str] = {}
        self._declared: dict[str, Optional[Declared]] = {}
        for cf in files:
            self.add(cf)

    def add(self, cf: dict) -> None:
        self.files.append(cf)
        path = cf["path"]
        for cls in cf["classes"]:
            qualified = cls["qualified_name"]
            if qualified in self.classes:
                continue
            self.classes[qualified] = cls
            self.class_file[qualified] = path
            for m in cls["methods"]:
                name = m["qualified_name"]
                self.functions.setdefault(name, m)
                self.owner.setdefault(name, qualified)
                self.function_file.setdefault(name, path)
        for f in cf["functions"]:
            name = f["qualified_name"]
            if name not in self.functions:
                self.functions[name] = f
                self.owner[name] = None
                self.function_file[name] = path

    # -- declarations ------------------------------------------------------------
    def declared(self, qualified: Optional[str]) -> Optional[Declared]:
        if qualified is None:
            return self.extra.get("")
        if qualified in self._declared:
            return self._declared[qualified]
        cls = self.classes.get(qualified)
        out: Optional[Declared] = None
        if cls is not None:
            from ..infer.semantics import shared_semantics
            from .extract import Extractor

            shim = SimpleNamespace(sem=shared_semantics(), types=self.types)
            attrs = [{"name": a["name"], "type": a["type"], "final": a["final"]} for a in cls["attributes"]]
            out = Extractor._declared(shim, cls["parameters"], cls["buffers"], attrs)
            out.update(self.extra.get(qualified, {}))
        elif qualified in self.extra:
            out = dict(self.extra[qualified])
        self._declared[qualified] = out
        return out

    def types(self, qualified: str) -> Optional[tuple[str, Declared]]:
        """The hook given to the parser: (class kind, declared attributes), or None."""
        cls = self.classes.get(qualified)
        if cls is None:
            if self.current is not None and qualified.startswith(self.root + ".") and not self.is_custom(qualified):
                self.misses.setdefault(self.current, set()).add(qualified)
            return None
        return (cls["kind"], self.declared(qualified) or {})

    def path_type(self, owner: Optional[str], path: str) -> tuple[str, Optional[str]]:
        """Role and type of a dotted path from ``self`` inside a method of ``owner``."""
        parts = path.split(".")[1:]
        current = owner
        role, typ = "unknown", owner
        for part in parts:
            decl = self.declared(current)
            if decl is None:
                return "unknown", None
            role, typ = decl.get(part, ("unknown", None))
            cls = self.classes.get(typ) if typ else None
            if role == "submodule" and cls is not None and cls["kind"] != "module":
                role = "attribute"
            current = typ
        return role, typ

    def is_custom(self, name: str) -> bool:
        return name.startswith(f"{self.root}.torch.classes.")


def _type_names(root: str) -> Callable[[str], list[str]]:
    """The qualified names (``__torch__.a.B``) inside a printed type."""
    dotted = load_grammar().fragments["dotted"]
    prefix = root + "."
    return lambda text: [n for n in dotted.findall(text) if n.startswith(prefix)] if text else []


class _Declarations:
    """The class declarations of every code entry of an archive, from the pre-pass:
    the ``types`` hook of the one parse of each entry (every class known)."""

    def __init__(self, summaries: Iterable[dict]):
        self.classes: dict[str, dict] = {}
        for summary in summaries:
            self.classes.setdefault(summary["qualified_name"], summary)
        self._declared: dict[str, Declared] = {}

    def types(self, qualified: str) -> Optional[tuple[str, Declared]]:
        summary = self.classes.get(qualified)
        if summary is None:
            return None
        declared = self._declared.get(qualified)
        if declared is None:
            from ..infer.semantics import shared_semantics
            from .extract import Extractor

            shim = SimpleNamespace(sem=shared_semantics(), types=self.types)
            declared = Extractor._declared(shim, summary["parameters"], summary["buffers"], summary["attributes"])
            self._declared[qualified] = declared
        return summary["kind"], declared


class _Functions:
    """The ``functions`` hook of one archive's parse: the callee of every function of
    every file.  A file's functions are walked (:func:`codeparse.text.reader.start_file`) when
    the file is parsed, or earlier, on the first lookup of one of them (the pre-pass
    knows which file defines which function), so every lookup sees every file."""

    def __init__(self, defined_in: dict[str, int], start: Callable[[int], Any]):
        self.callees: dict[str, Any] = {}
        self.active: set = set()  # summaries being computed, shared by all files
        self.defined_in = defined_in
        self._start = start
        self.consulted: Optional[set[str]] = None  # names looked up while one file is parsed

    def register(self, qualified: str, callee: Any) -> None:
        self.callees.setdefault(qualified, callee)

    def get(self, qualified: str) -> Any:
        found = self.callees.get(qualified)
        if found is None and qualified in self.defined_in:
            self._start(self.defined_in[qualified])
            found = self.callees.get(qualified)
        return found

    def __call__(self, qualified: str) -> Any:
        if self.consulted is not None:
            self.consulted.add(qualified)
        return self.get(qualified)


class _Answers:
    """What the parse of one file consulted, as plain data a cached parse is checked against:
    ``type:Q`` the class kind and declared attributes, ``function:Q`` a callee's
    parameters, return type and the summary of what its return value depends on."""

    def __init__(self, declarations: _Declarations, functions: _Functions):
        self.declarations = declarations
        self.functions = functions
        self._memo: dict[str, Optional[list]] = {}

    def __call__(self, key: str) -> Optional[list]:
        if key not in self._memo:
            from .cache import answer_of

            kind, _, qualified = key.partition(":")
            if kind == "type":
                self._memo[key] = answer_of(self.declarations.types(qualified))
            else:
                callee = self.functions.get(qualified)
                self._memo[key] = None if callee is None else [
                    [[name, bool(default)] for name, default in callee.params], callee.returns,
                    sorted(([*item] for item in callee.summary()), key=repr)]
        return self._memo[key]


def _with_path(cf: dict, path: str) -> dict:
    """A file's plain data under another path (a cached file is stored with an empty path):
    a new top dict and new diagnostics, everything else shared (never changed in place)."""
    return dict(cf, path=path, diagnostics=[dict(d, path=path) for d in cf["diagnostics"]])


def parse_program(entries: list[tuple[str, bytes]], grammar: Optional[str] = None,
                  cache: Any = None, *, as_dict: bool = False,
                  registry: Optional[dict] = None) -> tuple[list[Any], list[dict]]:
    """Parse the code entries of one archive (``(path, bytes)`` in stored order) as one program.

    A pre-pass runs the statement classifier alone over every entry and collects the
    classes each declares and the functions it defines (:func:`codeparse.text.reader.declarations`).
    Then each entry is parsed once, with every class of the archive known (the ``types``
    hook) and every function of the archive reachable (the ``functions`` hook: a file's
    functions are walked when it is parsed, or on the first call into them), reusing its
    classified statements.  ``cache`` (a :class:`codeparse.text.cache.EntryCache`; a fresh
    in-memory one by default) skips the classifier and the parse of an entry met before
    whose every consulted declaration and function summary gives the same answer here
    (see :mod:`codeparse.text.cache`).  Returns the CodeFiles in stored order (plain data,
    ``CodeFile.model_dump(mode="json")``, with ``as_dict``), and findings for entries
    that are not code text.  ``registry``, when given, receives the program's functions
    (``registry["functions"].get(qualified)``: a function's callee, its inference, parsing
    its file on first use when the cache gave the file) and ``registry["prepared"](path)``:
    an entry's classified statements (:class:`codeparse.text.reader.Prepared`), or None
    where the cache gave its declarations and nothing read it since, and
    ``registry["release"]()``: frees the functions' inference once the caller asks no more
    (they hold reference cycles; without a registry they are freed before this returns).
    """
    from ..contract.errors import InputError
    from .reader import declarations, decode_code, finish_file, module_name_for, prepare_text, start_file
    from .cache import EntryCache

    # The files' data is this call's alone when the cache is its own (dropped on return) and
    # met no entry twice (a hit shares a stored file's nested data with the file it came
    # from): the models then take it instead of copying it.
    own = cache is None and registry is None
    if cache is None:
        cache = EntryCache()
    findings: dict[str, dict] = {}
    items: list[dict] = []
    for path, data in entries:
        try:
            text, extra = decode_code(data, path)
        except InputError as exc:
            findings[path] = diagnostic(exc.code, path, None, reason=exc.message)
            continue
        key = cache.key(data, grammar, module_name_for(path))
        declared = cache.declarations(key)
        prepared = None
        if declared is None:
            prepared = prepare_text(text, path, grammar, extra)
            declared = declarations(prepared)
            cache.put_declarations(key, declared)
        items.append({"path": path, "key": key, "text": text, "extra": extra, "prepared": prepared,
                      "declared": declared, "started": None, "types": set(), "functions": set()})
    # A name declared twice: the last stored file's wins (as the reverse-order reading did).
    program = _Declarations(c for item in reversed(items) for c in item["declared"]["classes"])
    defined_in: dict[str, int] = {}
    for index in range(len(items) - 1, -1, -1):
        for name in items[index]["declared"]["functions"]:
            defined_in.setdefault(name, index)

    def start(index: int) -> Any:
        item = items[index]
        if item["started"] is None:
            if item["prepared"] is None:
                item["prepared"] = prepare_text(item["text"], item["path"], grammar, item["extra"])
            seen = item["types"]

            def types(qualified: str):
                seen.add(qualified)  # what this file's parse consulted, for its cache entry
                return program.types(qualified)

            item["started"] = True  # a lookup while walking this file's own functions does not start it again
            outer, functions.consulted = functions.consulted, item["functions"]
            try:
                item["started"] = start_file(item["prepared"], None, types, functions)
            finally:
                functions.consulted = outer
        return item["started"]

    functions = _Functions(defined_in, start)
    if registry is not None:
        registry["functions"] = functions
        by_path = {item["path"]: item for item in items}

        def prepared(path: str) -> Any:
            item = by_path.get(path)
            return item["prepared"] if item is not None else None

        registry["prepared"] = prepared
    answers = _Answers(program, functions)
    files: list[dict] = []
    for index, item in enumerate(items):
        path = item["path"]
        hit = cache.parse(item["key"], answers)
        if hit is not None:
            files.append(_with_path(hit["file"], path))
            continue
        started = start(index)
        functions.consulted = item["functions"]
        try:
            cf = finish_file(started, as_dict=True)
        finally:
            functions.consulted = None
        consulted = {f"type:{q}": answers(f"type:{q}") for q in sorted(item["types"])}
        consulted.update({f"function:{q}": answers(f"function:{q}") for q in sorted(item["functions"])})
        stored = _with_path(cf, "")
        cache.put_parse(item["key"], consulted, stored)
        files.append(cf)
    found = [findings[p] for p, _ in entries if p in findings]
    if registry is None:
        _release(items, functions)
    else:
        registry["release"] = lambda: _release(items, functions)
    if as_dict:
        return files, found
    from ..contract.build import code_file_from_plain, code_file_taking_plain

    build = code_file_taking_plain if own and cache.hits == 0 else code_file_from_plain
    return [build(cf) for cf in files], found


def _release(items: list[dict], functions: _Functions) -> None:
    """Free the inference of every file walked (:meth:`codeparse.text.extract.Extractor.release`)
    and the program's callee table without the cyclic collector: for a program no one asks
    again (nothing follows its calls once every file is finished)."""
    for item in items:
        started = item["started"]
        if started is not None and started is not True:
            started.extractor.release()
        item["started"] = None  # its functions' data (the caller may keep the items)
    functions.callees.clear()
    functions.defined_in = {}  # a lookup after this finds nothing
    functions._start = None  # its closure holds the table: a cycle


class Analysis:
    """One archive's program resolved: what :func:`resolve` and ``check`` share.

    ``per_file`` holds, for each code file, its findings as plain diagnostic dicts (no
    origin yet: debug info is read only for findings that are kept), in the order
    they were found; ``conditions`` every ``if`` as ``(file, function, if, reachable)``.
    """

    def __init__(self, prog: _Program, graph: dict[str, list[str]], root_class: Optional[str],
                 reachable: list[str], per_file: dict[str, list[dict]], conditions: list[tuple],
                 sites: Optional[dict[str, list[tuple[str, int]]]] = None, entry_points: Optional[list[str]] = None):
        self.prog = prog
        self.graph = graph
        # caller -> (callee, offset of the call) for every call of a known function, in order
        self.sites = sites or {}
        self.entry_points = entry_points or []
        self.root_class = root_class
        self.reachable = reachable
        self.per_file = per_file
        self.conditions = conditions

    def file_findings(self, path: str) -> list[dict]:
        """The findings of one file, by position (stable: found order breaks ties)."""
        return sorted(self.per_file.get(path, []), key=lambda d: (d["span"] or {}).get("start", -1))


def analyse(files: list[dict], root_class: Optional[str],
            extra_declarations: Optional[dict[str, Declared]] = None, condition_findings: bool = True) -> Analysis:
    """Resolve types, calls and reachability over the code files (plain data,
    ``CodeFile.model_dump(mode="json")``); collect their findings, without the trace
    target's condition findings (CP201-CP208) unless ``condition_findings``."""
    from ..infer.semantics import shared_semantics

    sem = shared_semantics()
    prog = _Program(files, sem.root, extra_declarations or {})

    per_file: dict[str, list[dict]] = {cf["path"]: [] for cf in files}

    def add(file_path: str, d: dict) -> None:
        per_file.setdefault(file_path, []).append(d)

    # Type names in declarations and signatures.
    names_in = _type_names(sem.root)
    qualified = sem.root + "."
    reported: set[str] = set()

    def check_type(file_path: str, text: Optional[str], span: Any) -> None:
        if not text or qualified not in text:  # no qualified class name in it (most: Tensor, int)
            return
        for name in names_in(text):
            if name in prog.classes or prog.is_custom(name) or name in reported:
                continue
            reported.add(name)
            add(file_path, diagnostic("CP316", file_path, span, name=name))

    for cf in files:
        path = cf["path"]
        for cls in cf["classes"]:
            for attr in cls["attributes"]:
                check_type(path, attr["type"], attr["span"])
        for fn in functions_of(cf):
            signature = fn["signature"]
            for p in signature["params"]:
                check_type(path, p["annotation"], p["span"])
            check_type(path, signature["returns"], fn["span"])

    # Attributes read through `self` that the class (or the class on the way) does not declare.
    for qn, fn in prog.functions.items():
        owner = prog.owner.get(qn)
        if owner is None:
            continue
        seen: set[str] = set()
        for ref in fn["self_refs"]:
            ref_path = ref["path"]
            if ref["role"] != "unknown" or ref_path in seen:
                continue
            seen.add(ref_path)
            parent, _, name = ref_path.rpartition(".")
            holder = owner if parent == sem.self_name else prog.path_type(owner, parent)[1]
            if holder in prog.classes:
                file_path = prog.function_file[qn]
                add(file_path, diagnostic("CP321", file_path, ref["span"], ref=ref_path,
                                          type=holder, name=name))

    # The call graph.
    graph: dict[str, list[str]] = {}
    sites: dict[str, list[tuple[str, int]]] = {}
    for qn, fn in prog.functions.items():
        owner = prog.owner.get(qn)
        file_path = prog.function_file[qn]
        edges: list[str] = []
        calls_here = sites[qn] = []
        for call in fn["calls"]:
            target = None
            kind, method, receiver = call["kind"], call["method"], call["receiver"]
            if kind == "self_method" and method:
                if owner is None:
                    continue
                target = f"{owner}.{method}"
                if target not in prog.functions:
                    add(file_path, diagnostic("CP318", file_path, call["span"], receiver="self",
                                              type=owner, method=method))
                    continue
            elif kind in ("submodule", "method") and receiver and method:
                role, typ = prog.path_type(owner, receiver)
                if not typ or typ not in prog.classes:
                    continue  # undeclared, a builtin type, or reported where it is declared
                target = f"{typ}.{method}"
                if target not in prog.functions and not method.startswith("__"):
                    add(file_path, diagnostic("CP318", file_path, call["span"], receiver=receiver,
                                              type=typ, method=method))
                    continue
            elif kind == "function" and call["target"] and call["target"].startswith(sem.root + "."):
                target = call["target"]
                if target not in prog.functions:
                    owner_class = target.rsplit(".", 1)[0]
                    if target in prog.classes or owner_class in prog.classes or prog.is_custom(target):
                        continue  # `__torch__.Pair(...)`, `__torch__.X.__new__(...)`: constructors
                    if target not in reported:
                        reported.add(target)
                        add(file_path, diagnostic("CP317", file_path, call["span"], name=target))
                    continue
            if target and target in prog.functions:
                calls_here.append((target, call["span"]["start"]))
                if target not in edges:
                    edges.append(target)
        graph[qn] = edges

    # The root module and what its forward reaches.
    if root_class not in prog.classes:
        root_class = _guess_root(prog)
    entry_points = []
    if root_class and f"{root_class}.forward" in prog.functions:
        entry_points.append(f"{root_class}.forward")
    elif "forward" in prog.functions:  # model.json era: a bare `def forward(self, ...)`
        entry_points.append("forward")
    reachable = _reach(graph, entry_points)
    reach_all = not entry_points
    reachable_set = set(reachable)

    conditions: list[tuple] = []
    for cf in files:
        path = cf["path"]
        for d in cf["diagnostics"]:
            add(path, d)
        for fn in functions_of(cf):
            name = fn["qualified_name"]
            live = reach_all or name in reachable_set
            for if_ in fn["ifs"]:
                conditions.append((path, name, if_, live))
                if live and condition_findings:
                    add(path, condition_diagnostic(path, name, if_))
    return Analysis(prog, graph, root_class, reachable, per_file, conditions, sites, entry_points)


def all_findings(analysis: Analysis, files: list[dict], head: Iterable[dict], maps: dict[str, Any]) -> list[dict]:
    """An archive's findings as plain data: ``head`` (its archive-level diagnostics) first,
    then each file's, with its original lines from ``maps`` (file path -> ``.get(line)``)."""
    out = [to_finding(d) for d in head]
    for cf in files:
        origins = maps.get(cf["path"])
        out.extend(to_finding(d, origins) for d in analysis.file_findings(cf["path"]))
    return out


def resolve(*, path: str, layout: str, root: Optional[str], version: Optional[int], entries: int,
            files: list[dict], maps: dict[str, dict[int, tuple[str, int]]],
            root_class: Optional[str], findings: Iterable[dict],
            extra_declarations: Optional[dict[str, Declared]] = None,
            adjust: Optional[Callable[[list[tuple[str, list[dict]]]], list[tuple[str, list[dict]]]]] = None
            ) -> "Archive":
    """Build the :class:`Archive` from its parsed code files (plain data; see the module
    docs); ``adjust`` may rewrite each file's findings (diagnostic dicts, by position)
    before they are located: the archive reader says there which branches on module state
    its saved values decide (:func:`codeparse.rules.saved.saved_branches`)."""
    from ..contract.check import Archive, Branch
    from ..contract.build import code_file_from_plain

    analysis = analyse(files, root_class, extra_declarations)
    if adjust is not None:
        analysis.per_file.update(adjust([(cf["path"], analysis.file_findings(cf["path"])) for cf in files]))
    prog = analysis.prog
    branches: list[Branch] = []
    for file_path, function, if_, live in analysis.conditions:
        origins = maps.get(file_path)
        span = if_["span"]
        cond = if_["condition"]
        origin = origins.get(span["line"]) if origins else None
        branches.append(Branch(
            path=file_path, function=function, span=span, condition=cond["text"],
            resolved=cond["resolved"], sources=cond["sources"], kind=cond["kind"], reachable=live,
            origin={"path": origin[0], "line": origin[1]} if origin else None,
        ))
    out = all_findings(analysis, files, findings, maps)
    models = [code_file_from_plain(cf) for cf in files]
    # The classes and functions by name, as _Program indexed them (the first file wins), as models.
    model_of: dict[int, Any] = {}
    for cf, model in zip(files, models):
        pairs = [(cf["classes"], model.classes), (cf["functions"], model.functions)]
        pairs += [(c["methods"], m.methods) for c, m in zip(cf["classes"], model.classes)]
        for plain, built in pairs:
            for item, item_model in zip(plain, built):
                model_of.setdefault(id(item), item_model)
    classes = {name: model_of[id(cls)] for name, cls in prog.classes.items()}
    functions = {name: model_of[id(fn)] for name, fn in prog.functions.items()}
    return Archive(
        path=path, layout=layout, root=root, version=version, entries=entries, files=models,
        classes=classes, functions=functions, root_class=analysis.root_class,
        module_tree=module_tree(prog, analysis.root_class, "self") if analysis.root_class else None,
        call_graph=analysis.graph, reachable=analysis.reachable, branches=branches,
        source_map={p: {line: {"path": o[0], "line": o[1]} for line, o in m.items()} for p, m in maps.items()},
        findings=out,
    )


def functions_of(cf: dict) -> Iterable[dict]:
    for cls in cf["classes"]:
        yield from cls["methods"]
    yield from cf["functions"]


def _guess_root(prog: _Program) -> Optional[str]:
    """Without data.pkl: the first module class with a forward that no other class holds."""
    held = {typ for qn in prog.classes for _, typ in (prog.declared(qn) or {}).values() if typ}
    for qn, cls in prog.classes.items():
        if cls["kind"] == "module" and qn not in held and f"{qn}.forward" in prog.functions:
            return qn
    return None


def module_tree(prog: _Program, qualified: str, path: str, depth: int = 0, active: Optional[set[str]] = None,
          node: Optional[Callable[..., Any]] = None) -> Any:
    """The module tree from ``qualified`` at ``path``, built over classes: each class's
    submodules are listed at the first path that reaches it (depth first, declaration
    order); later nodes of that class point there with ``same_as``.  Linear in the
    classes and their declarations, iterative, so a class holding two of the next one
    22 levels deep gives 23 expanded nodes, not 4 million.  Its nodes are
    :class:`~codeparse.contract.check.ModuleNode`, or what ``node(path=, type=, children=, same_as=)``
    makes (``dict`` for plain data)."""
    if node is None:
        from ..contract.check import ModuleNode as node

    first: dict[str, str] = {}

    def submodules(cls: str) -> list[tuple[str, str]]:
        out = []
        for name, (role, typ) in (prog.declared(cls) or {}).items():
            child = prog.classes.get(typ) if typ else None
            if role == "submodule" and child is not None and child["kind"] == "module":
                out.append((name, typ))
        return out

    # Each frame: (class, path, depth, children built so far, submodules left to visit).
    first[qualified] = path
    root_children: list[Any] = []
    stack: list[tuple[str, str, int, list[Any], list[tuple[str, str]]]] = [
        (qualified, path, depth, root_children, list(reversed(submodules(qualified))) if depth < _MAX_TREE_DEPTH else [])
    ]
    done: Optional[Any] = None
    while stack:
        cls, at, level, children, todo = stack[-1]
        if not todo:
            stack.pop()
            done = node(path=at, type=cls, children=children, same_as=None)
            if stack:
                stack[-1][3].append(done)
            continue
        name, typ = todo.pop()
        child_path = f"{at}.{name}"
        if typ in first:
            children.append(node(path=child_path, type=typ, children=[], same_as=first[typ]))
            continue
        first[typ] = child_path
        below = list(reversed(submodules(typ))) if level + 1 < _MAX_TREE_DEPTH else []
        stack.append((typ, child_path, level + 1, [], below))
    assert done is not None
    return done


def _reach(graph: dict[str, list[str]], starts: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    queue = deque(s for s in starts if s in graph)
    for s in queue:
        seen[s] = None
    while queue:
        node = queue.popleft()
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen[nxt] = None
                queue.append(nxt)
    return list(seen)

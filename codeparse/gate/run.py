"""``check``: read archives and code files, collect coded findings, apply the policy.

The policy (:class:`codeparse.contract.check.Policy`) comes from ``[tool.codeparse]`` in the
nearest ``pyproject.toml`` (searched upward from the working directory), then from
the command line, which wins::

    [tool.codeparse]
    select = ["CP1", "CP201", "CP3"]   # codes or prefixes reported; empty or absent: all
    ignore = ["CP205"]                 # never reported (wins over select)
    fail-on = "warning"                # error (default) | warning | info | never
    max-entries = 50000                # archive limits (see codeparse.archive.torchscript)
    max-entry-bytes = 67108864
    max-total-bytes = 536870912
    max-ratio = 200
    max-debug-chars = 33554432         # distinct source text one .debug_pkl may rebuild (CP315)
    target = "trace"                   # trace (CP2xx conditions) | export (CP4xx, and a verdict)

Severities: every finding has the severity of its row in :mod:`codeparse.contract.codes`.  A
branch on tensor values (CP201) is a *warning*: by default (``fail-on = "error"``)
it is reported and the check still passes; ``fail-on = "warning"`` makes it fail.
Parse errors, unresolved references and archive limits are errors.

Exit code of a :class:`Report`: 2 if an input could not be read at all, else 1 if a
selected finding is at or above ``fail_on``, else 0.  Inputs are checked
independently, so ``jobs > 1`` (processes) gives the same report as one process.

How a check runs (:func:`check_data`):

1. The paths are expanded into inputs (:func:`codeparse.gate.inputs.expand_inputs`):
   directories walked, excluded names skipped, an input with a problem (no model file,
   a link leaving the tree) kept with it.  Inputs whose whole report the cache folder
   holds are not read again.
2. Each other input is checked in a worker process within its time and memory budget
   (:mod:`codeparse.gate.budget`; CP340 when it runs out): :func:`input_data` tells it
   apart by its bytes and gives one :class:`~codeparse.contract.records.Checked`: a code
   text parsed and its conditions (or export rules) applied, an archive read through
   :func:`archive_data` (each entry parsed once, the program resolved, debug info read
   only where a finding asks where it was printed from), any other model file's pickles
   scanned (:mod:`codeparse.pickles.scan`).
3. :func:`reported` turns that result into the input's report, once: the findings the
   policy selects (all of them when the input could not be read).
4. :func:`adjust` marks findings in torch's own code and drops the excluded, the
   per-file-ignored and the baselined ones; the report counts the rest and sets the exit
   code (:func:`make_report_data`).

Everything runs on plain data (:mod:`codeparse.contract.records`): :func:`check_data` and
:func:`input_data` return the report and an input's report as the dicts the models
dump to, and read the policy as ``Limits``; the CLI writes every format from them
without importing pydantic.  :func:`check` and :func:`check_input`, for Python callers,
build the models from that data.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, Sequence

from ..contract.codes import diagnostic
from ..contract.records import (
    Checked,
    Limits,
    finding as plain_finding,
    input_report,
    is_library,
    limits_of,
    report as plain_report,
)
from ..files.walk import not_regular, paths_of
from .inputs import NOT_A_MODEL, OUTSIDE_TREE, _whole, expand_inputs, matches, read_stdin
from .policy import SAFETY_CODES, fails, load_policy, selected

if TYPE_CHECKING:  # the models import pydantic: built only for a Python caller (check, check_input)
    from ..contract.check import InputReport, Policy, Report

__all__ = ["check_input", "check"]

# ------------------------------------------------------------------------- inputs


def input_kind(path: str, data: Optional[bytes], policy: Policy, keep: bool = False):
    """What an input is by its bytes (:class:`codeparse.files.filekind.FileKind`; with
    ``keep``, an archive's zip stays open for the reading that follows), or None when it
    cannot be read (the readers say why)."""
    from ..files.filekind import recognize, recognize_bytes

    try:
        if data is not None:
            return recognize_bytes(data, policy.max_entries)
        return recognize(path, policy.max_entries, keep)
    except OSError:
        return None  # the readers below say why


def _model_target(target: str) -> bool:
    """Whether a link's target outside the tree is a model file: by its first bytes (never
    shown) or a model file's suffix; one that cannot be read counts as one."""
    from ..files.filekind import MODEL_SUFFIXES, recognize

    if os.path.isdir(target):
        return False
    if target.lower().endswith(MODEL_SUFFIXES):
        return True
    if not os.path.exists(target):
        return False
    try:
        return not_regular(target) is None and recognize(target).kind != "other"
    except OSError:
        return True


def check_input(path: str, policy: Policy, problem: Optional[str] = None, data: Optional[bytes] = None,
                scan_only: bool = False, cache: Any = None) -> InputReport:
    """Check one input: a model file of any kind (by its bytes) or code text (never raises
    for bad input).  ``data`` holds its bytes when it is not a file (``-``: standard input).
    ``scan_only``: the pickle checks alone (``codeparse scan``).  The :class:`InputReport`
    of :func:`input_data`."""
    from ..contract.records import input_model

    return input_model(input_data(path, limits_of(policy), problem, data, scan_only, cache))


def input_data(path: str, policy: Limits, problem: Optional[str] = None, data: Optional[bytes] = None,
               scan_only: bool = False, cache: Any = None) -> dict:
    """:func:`check_input` as plain data (``InputReport.model_dump(mode="json")``): what
    ``check`` runs for each input, in its worker process."""
    return reported(path, _checked(path, policy, problem, data, scan_only, cache), policy)


def reported(path: str, checked: Checked, policy: Any) -> dict:
    """The report of one input (plain data) from what checking it found: the findings the
    policy selects, or, for an input that could not be read, every finding (they say why)."""
    findings = _filter(checked.findings, policy, force=not checked.readable)
    return input_report(path, checked.kind, checked.readable, checked.files, checked.branches, findings,
                        checked.pickles, checked.export)


def _checked(path: str, policy: Limits, problem: Optional[str], data: Optional[bytes], scan_only: bool,
             cache: Any) -> Checked:
    """Check one input: by the problem met when it was listed, by its bytes, or by its name."""
    if problem == NOT_A_MODEL:
        return Checked("other", True)
    if problem is not None and problem.startswith(OUTSIDE_TREE):
        target = problem[len(OUTSIDE_TREE):]
        if _model_target(target):  # a loader follows the link: the gate fails
            return Checked("other", True, [_whole("CP347", path, link=path, target=target)])
        return Checked("other", True, [_whole("CP342", path, link=path, target=target)])
    if problem is not None:
        return Checked("code", False, [_whole("CP301", path, reason=problem)])
    if path == "-" and data is None:
        data = read_stdin()
    if scan_only:
        from ..pickles.scan import scan_only as scan

        return scan(path, policy, data)
    with classified(path, data, policy) as (kind, way, opened):
        return _check_kind(path, policy, kind, way, data, cache, opened)


@contextmanager
def classified(path: str, data: Optional[bytes], policy: Limits) -> Iterator[tuple[Any, str, Optional[tuple]]]:
    """What an input is (:func:`input_kind`), how it is read (:func:`input_way`) and, for a
    zip, the zip kept open for that reading (closed on leaving, unless the reading closed
    it): the one classification of an input, which ``check`` and ``codeparse report`` share."""
    kind = input_kind(path, data, policy, keep=True)
    opened = kind.opened if kind is not None else None
    try:
        yield kind, input_way(path, kind, data), opened
    finally:
        if opened is not None:  # read and closed by now, unless something failed on the way
            opened[1].close()
            opened[0].close()


def input_way(path: str, kind: Any, data: Optional[bytes] = None) -> str:
    """How an input is read, from what :func:`input_kind` found: ``"scan"`` (a model file
    other than a TorchScript archive: its pickles scanned), ``"archive"`` (a TorchScript
    archive, or a file named like one that is not recognised: the archive reader says
    why) or ``"code"`` (code text).  ``check`` and ``codeparse report`` both ask here."""
    from ..files.zipread import is_archive_path

    if kind is not None and kind.kind not in ("torchscript", "other"):
        return "scan"
    if (kind is not None and kind.kind == "torchscript") or (data is None and is_archive_path(path)):
        return "archive"
    return "code"


def _check_kind(path: str, policy: Limits, kind: Any, way: str, data: Optional[bytes], cache: Any,
                opened: Optional[tuple]) -> Checked:
    from ..contract.errors import InputError

    if way == "scan":
        from ..pickles.scan import scan_input

        return scan_input(path, kind, policy, data)
    if way == "archive":
        try:
            return _check_archive(path, policy, cache, data, opened)
        except InputError as exc:
            finding = getattr(exc, "finding", None) or diagnostic(exc.code, path, None, reason=exc.message)
            return Checked("archive", False, [plain_finding(finding)])
    return _code_read(path, policy, data)[0]


def code_data(path: str, policy: Limits, data: Optional[bytes] = None) -> tuple[dict, Optional[dict]]:
    """The report of one code text, as plain data, and the parsed file (plain data; None
    when it could not be read, and the report says why): the one reading of a code text
    that ``check`` and ``codeparse report`` share."""
    checked, code_file = _code_read(path, policy, data)
    return reported(path, checked, policy), code_file


def _code_read(path: str, policy: Limits, data: Optional[bytes]) -> tuple[Checked, Optional[dict]]:
    """One code text (a ``.code`` file, standard input) checked, and its parse."""
    from ..contract.errors import InputError
    from ..infer.callees import CalleeRegistry
    from ..text.reader import parse_bytes, parse_file

    # The text's functions with their inference, for the export rules (as an archive's).
    functions = CalleeRegistry("")
    try:
        if data is not None and len(data) > policy.max_entry_bytes:
            data = None  # standard input over the limit: parse_file says so (CP344)
            raise InputError(path, "", "CP344")
        code_file = (parse_file(path, max_bytes=policy.max_entry_bytes, as_dict=True, functions=functions)
                     if data is None else parse_bytes(data, path, as_dict=True, functions=functions))
    except InputError as exc:
        finding = getattr(exc, "finding", None)
        if exc.code == "CP344" and finding is None:
            finding = diagnostic("CP344", path, None, size=f"more than {policy.max_entry_bytes}",
                                 limit=policy.max_entry_bytes)
        found = plain_finding(finding) if finding else _whole(exc.code, path, reason=exc.message)
        return Checked("code", False, [found]), None
    checked = _code_checked(path, policy, code_file, functions.callees.get)
    for callee in functions.callees.values():  # asked no more: freed by refcounts, not the collector
        callee.inference.release()
    functions.callees.clear()
    return checked, code_file


def _code_checked(path: str, policy: Limits, code_file: dict, callee: Optional[Callable[[str], Any]] = None) -> Checked:
    from ..text.program import condition_finding

    findings = [plain_finding(d) for d in code_file["diagnostics"]]
    functions = [m for c in code_file["classes"] for m in c["methods"]] + list(code_file["functions"])
    ifs = []
    for fn in functions:
        for if_ in fn["ifs"]:
            ifs.append(condition_finding(path, fn["qualified_name"], if_))
    verdict = None
    if policy.target == "export":
        from ..rules.export import code_file_export_data

        found, verdict = code_file_export_data(code_file, callee)
        findings.extend(found)
    else:
        findings.extend(ifs)
    findings.sort(key=lambda f: f["span"]["start"] if f["span"] else -1)
    return Checked("code", True, findings, files=1, branches=len(ifs), export=verdict)


def archive_report(path: str, archive: Any, extras: dict, policy: Any) -> InputReport:
    """The report of an archive already read (``read_archive(..., extras=extras)``): its
    findings under the policy's target and selection, and the export verdict (for
    ``codeparse report``, which shows the archive itself besides; ``check`` reads the
    archive as plain data: :func:`archive_data`)."""
    from ..contract.records import input_model

    live = sum(1 for b in archive.branches if b.reachable)
    findings, verdict = [f.model_dump(mode="json") for f in archive.findings], None
    if policy.target == "export":
        from ..rules.export import archive_export

        found, verdict = archive_export(archive, extras)
        findings = _with_export(findings, [f.model_dump(mode="json") for f in found],
                                [cf.path for cf in archive.files])
        verdict = verdict.model_dump(mode="json")
    checked = Checked("archive", True, findings, files=len(archive.files), branches=live, export=verdict)
    return input_model(reported(path, checked, policy))


def _with_export(findings: list[dict], export: list[dict], order: list[str]) -> list[dict]:
    """An archive's findings with its trace-target condition findings (CP201-CP208) replaced by ``export``."""
    from ..text.program import CONDITION_CODES, TRAINING_CODE

    trace_codes = set(CONDITION_CODES.values()) | {TRAINING_CODE}
    rank = {p: i for i, p in enumerate(order)}
    kept = [f for f in findings if f["code"] not in trace_codes]
    merged = kept + export
    return sorted(merged, key=lambda f: (rank.get(f["path"], -1), f["span"]["start"] if f["span"] else -1))


def _check_archive(path: str, policy: Limits, cache: Any, data: Optional[bytes] = None,
                   opened: Optional[tuple] = None) -> Checked:
    """One archive, read as :func:`archive_data` reads it."""
    from ..archive.torchscript import reading_archive
    from ..text.cache import EntryCache

    if cache is None:
        cache = EntryCache()
    with reading_archive(path, policy, None, data, cache, opened) as opened:
        return _archive_checked(opened, policy, cache)[0]


def archive_data(path: str, opened: Any, policy: Any, cache: Any = None) -> tuple[dict, Any]:
    """The report of an archive open for reading (:func:`codeparse.archive.torchscript.reading_archive`),
    as plain data, and its resolved program (:class:`codeparse.text.program.Analysis`): the
    one reading of an archive that ``check`` and ``codeparse report`` share.  With ``cache``
    (``check``), a program stored for the same entries is taken from it, and the analysis
    is then None."""
    checked, analysis = _archive_checked(opened, policy, cache)
    return reported(path, checked, policy), analysis


def _archive_checked(opened: Any, policy: Any, cache: Any) -> tuple[Checked, Any]:
    """Each entry parsed once, the program resolved, and only the selected findings built.

    Debug info is read for a code file only when a selected finding of that file asks
    for its origin (under ``--target export``, an export finding is located at its
    offset); so problems with a ``.debug_pkl`` (CP314, CP315) are reported for the debug
    info that is read (all of it, when the caller read every origin first: the report).
    ``open_archive`` reads all of it."""
    if policy.target == "export":
        return _archive_export_checked(opened, policy)
    from ..rules.saved import saved_branches

    program, analysis = _program(opened, cache)
    opened.release()  # nothing below follows a call: the inference is freed now, by refcounts
    # Branches on module state that the saved values decide say so (after the content
    # cache, whose key does not cover data.pkl).
    per_file = _located(opened, saved_branches(program["per_file"], opened.saved_values), policy)
    head = opened.findings + program["parse_findings"] + opened.debug_findings() + opened.tail_findings()
    findings = _head_findings(head, policy) + per_file
    return Checked("archive", True, findings, files=program["files"], branches=program["live"]), analysis


def _archive_export_checked(opened: Any, policy: Any) -> tuple[Checked, Any]:
    """An archive under ``--target export``: the export findings and verdict take the
    place of the condition findings (CP201-CP208)."""
    from ..rules.export import archive_export_data, archive_locate
    from ..text.program import analyse

    opened.keep_line_maps = True  # export locates its findings by offset
    files = opened.files
    analysis = analyse(files, opened.root_class(), condition_findings=False)  # export's findings take their place

    def offset_map(display: str) -> Optional[tuple]:
        opened.origins(display)  # its .debug_pkl, read on the first ask, keeps its line map
        return opened.line_maps.get(display)

    found, verdict = archive_export_data(files, analysis.reachable, archive_locate(offset_map, opened.origins),
                                         opened.traced, analysis, opened.code_text, opened.saved_values,
                                         opened.callee)
    opened.release()
    per_file = _located(opened, ((cf["path"], analysis.file_findings(cf["path"])) for cf in files), policy)
    head = opened.findings + opened.debug_findings() + opened.tail_findings()
    findings = _with_export(_head_findings(head, policy) + per_file, found, [cf["path"] for cf in files])
    live = sum(1 for c in analysis.conditions if c[3])
    return Checked("archive", True, findings, files=len(files), branches=live, export=verdict), analysis


def _located(opened: Any, per_file: Iterable[tuple[str, list[dict]]], policy: Any) -> list[dict]:
    """Each file's selected findings (diagnostic dicts) as findings with their original
    lines: a file's debug info is read only when one of them has a span."""
    from ..text.program import to_finding

    out: list[dict] = []
    for display, found in per_file:
        kept = [d for d in found if selected(d["code"], policy)]
        if not kept:
            continue
        origins = opened.origins(display) if any(d["span"] is not None for d in kept) else None
        out.extend(to_finding(d, origins) for d in kept)
    return out


def _head_findings(head: Iterable[dict], policy: Any) -> list[dict]:
    """An archive's own selected findings (names, version, entries, debug info, pickles)."""
    from ..text.program import to_finding

    return [to_finding(d) for d in head if selected(d["code"], policy)]


def _program(opened: Any, cache: Any) -> tuple[dict, Any]:
    """The resolved program of an open archive: its file count, live ``if`` count, the
    findings of entries that are not code and each file's findings (diagnostic dicts, by
    position), with the :class:`~codeparse.text.program.Analysis` they come from.  From
    the content cache (and then without the analysis) when every code entry, the root
    class and the layout are those of a stored run (paths are stored relative to the
    archive)."""
    from ..text.reader import module_name_for
    from ..text.program import analyse

    root_class = opened.root_class()
    key = None
    prefix = opened.path + "!"
    if cache is not None and not opened.legacy:
        parts = [opened.layout, root_class or ""]
        for display, data in opened.code:
            parts += [display[len(prefix):], cache.key(data, None, module_name_for(display))]
        key = cache.program_key(parts)
        stored = cache.program(key)
        if stored is not None:
            def here(d: dict) -> dict:
                return dict(d, path=prefix + d["path"])

            return {"files": stored["files"], "live": stored["live"],
                    "parse_findings": [here(d) for d in stored["parse_findings"]],
                    "per_file": [(prefix + name, [here(d) for d in found])
                                 for name, found in stored["per_file"]]}, None
    before = len(opened.findings)
    files = opened.files
    # Findings of entries that are not code text (parse_program): kept apart, for the cache.
    parse_findings = opened.findings[before:]
    del opened.findings[before:]
    analysis = analyse(files, root_class)
    result = {"files": len(files), "live": sum(1 for c in analysis.conditions if c[3]),
              "parse_findings": parse_findings,
              "per_file": [(cf["path"], analysis.file_findings(cf["path"])) for cf in files]}
    if key is not None:
        def rel(d: dict) -> dict:
            return dict(d, path=d["path"][len(prefix):] if d["path"].startswith(prefix) else d["path"])

        cache.put_program(key, {"files": result["files"], "live": result["live"],
                                "parse_findings": [rel(d) for d in parse_findings],
                                "per_file": [(cf["path"][len(prefix):], [rel(d) for d in found])
                                             for cf, (_, found) in zip(files, result["per_file"])]})
    return result, analysis


def _filter(findings: Iterable[dict], policy: Any, force: bool = False) -> list[dict]:
    """The findings (plain data) the policy selects; ``force`` keeps the reason an input is unreadable."""
    return [f for f in findings if force or selected(f["code"], policy)]


_process_caches: dict[Optional[str], Any] = {}
_NO_CACHE = object()  # _check_safely's cache for an input that is never opened


def _worker_cache(cache_dir: Optional[str]) -> Any:
    """The cache of one worker process (``--jobs``, Dask): one per cache folder, for the
    life of the process."""
    from ..text.cache import EntryCache

    found = _process_caches.get(cache_dir)
    if found is None:
        found = _process_caches[cache_dir] = EntryCache(cache_dir)
    return found


def over_budget(path: str, reason: str) -> dict:
    """The report of an input that ran out of its budget: CP340 alone (its partial results
    dropped), unreadable, so that exhausting the budget can never pass a gate."""
    from ..files.zipread import is_archive_path

    kind = "archive" if path != "-" and is_archive_path(path) else "code"
    return input_report(path, kind, False, findings=[_whole("CP340", path, reason=reason)])


def _check_safely(path: str, policy: Limits, problem: Optional[str], data: Optional[bytes] = None,
                  scan_only: bool = False, cache: Any = None) -> dict:
    """:func:`input_data` that never raises; ``cache`` is an EntryCache, or a cache folder
    (or None) naming the worker process's own cache."""
    if cache is _NO_CACHE:
        cache = None
    elif cache is None or isinstance(cache, (str, os.PathLike)):
        cache = _worker_cache(os.fspath(cache) if cache is not None else None)
    try:
        return input_data(path, policy, problem, data, scan_only, cache)
    except RecursionError:
        reason = "nested too deeply to read"
    except MemoryError:
        return over_budget(path, f"more than {policy.max_memory} MB of memory (--max-memory)")
    except Exception as exc:  # noqa: BLE001 - one input never stops the others, never a traceback
        reason = f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return input_report(path, "code", False, findings=[_whole("CP301", path, reason=reason)])


# A small archive class file, parsed once per process before workers are forked (warm_up).
_WARM_UP_TEXT = """class M(Module):
  __parameters__ = ["weight", ]
  __buffers__ = []
  weight : Tensor
  training : bool
  flag : bool
  scale : Final[int] = 2
  __annotations__["0"] = __torch__.torch.nn.modules.linear.Linear
  layer : __torch__.torch.nn.modules.linear.Linear
  def forward(self: __torch__.M,
    x: Tensor,
    n: int=2) -> Tensor:
    _0 = bool(torch.gt(torch.sum(x), 0))
    if _0:
      layer = self.layer
      x0 = (layer).forward(x, )
    else:
      x0 = torch.add(x, self.weight)
    if torch.eq(torch.size(x0, 0), n):
      y: Tensor = torch.relu(x0)
    else:
      ops.prim.RaiseException("AssertionError: ")
      y = x0
    if self.training:
      pass
    else:
      pass
    for _1 in range(n):
      y = torch.add(y, 1)
    _2 = True
    while _2:
      _2 = False
    return y
"""
_warmed = False


def warm_up() -> None:
    """Make this process ready to check, once: import the modules of the check path,
    load the grammar and compile the patterns an archive needs, load the operator tables
    (by parsing a small class file with every kind of statement) and the pickle scan's.

    ``check`` calls it before it forks its workers (:mod:`codeparse.gate.budget`): a forked
    worker starts with what its parent holds, so the work is done once per process
    instead of once per worker (every ``check`` call, every ``--jobs`` worker).  The CLI
    does it once either way; a library caller that calls ``check`` again pays it once.
    """
    global _warmed
    if _warmed:
        return
    _warmed = True
    try:
        from ..archive import debuginfo, torchscript  # noqa: F401 - imported for the workers
        from ..pickles import scan  # noqa: F401
        from ..text import cache, program  # noqa: F401

        from ..text.reader import parse_text
        from ..grammar.engine import load_grammar
        from ..pickles.picklescan import classify

        parse_text(_WARM_UP_TEXT, "code/__torch__.py", as_dict=True)
        load_grammar().fragments["dotted"]  # type names in declarations (the program)
        classify("torch._utils._rebuild_tensor_v2")  # the pickle scan's table
    except Exception:  # noqa: BLE001 - only a head start: a worker does the same work if this fails
        pass


def check(paths: Sequence[str | os.PathLike], policy: Optional[Policy] = None, jobs: int = 1,
          progress: Optional[Callable[[InputReport], None]] = None, *, scan_only: bool = False,
          skip_other: bool = False, pyproject: "bool | str | os.PathLike | None" = None,
          cache_dir: Optional[str | os.PathLike] = None) -> Report:
    """Check archives, code files and directories of them; see the module docs.

    ``policy`` defaults to :class:`Policy` ``()``; a ``pyproject.toml`` is read only when
    asked: ``pyproject=True`` (the nearest one, upward from the working directory, read as
    untrusted: it may only lower limits) or a path.
    ``jobs`` > 1 checks inputs in that many processes (same results, same order), never
    more than the CPUs available.  Each input is read in a worker process within
    ``policy.timeout_per_input`` seconds and ``policy.max_memory`` MB
    (:mod:`codeparse.gate.budget`): one over budget gets CP340 and the others go on.
    ``progress`` is called once per input, in input order, as results arrive.
    ``scan_only``: the pickle checks alone (``codeparse scan``).  ``skip_other``: files
    named that are no model file are treated as in a directory walk (pre-commit).
    ``cache_dir`` turns the on-disk content cache on (:mod:`codeparse.text.cache`); an
    in-memory one lives for the call either way.

    The models are built from :func:`check_data`'s plain data.
    """
    from ..contract.records import input_model, report_model
    from ..contract.check import Policy

    if policy is not None and not isinstance(policy, Policy):
        raise TypeError(f"check expects policy as a codeparse.Policy or None, not {type(policy).__name__}")
    from .budget import collecting_as_workers

    arrived = None if progress is None else (lambda item: progress(input_model(item)))
    # The caller's heap (torch's objects, when it has torch loaded) is left out of the
    # collections that building the reports and their models sets off.
    with collecting_as_workers():
        data = check_data(paths, limits_of(policy) if policy is not None else None, jobs, arrived,
                          scan_only=scan_only, skip_other=skip_other, pyproject=pyproject, cache_dir=cache_dir)
        return report_model(data)


def check_data(paths: Sequence[str | os.PathLike], policy: Optional[Limits] = None, jobs: int = 1,
               progress: Optional[Callable[[dict], None]] = None, *, scan_only: bool = False,
               skip_other: bool = False, pyproject: "bool | str | os.PathLike | None" = None,
               cache_dir: Optional[str | os.PathLike] = None, once: bool = False,
               untrusted_exclude: Optional[Iterable[str]] = None) -> dict:
    """:func:`check` as plain data: the report as ``Report.model_dump(mode="json")``,
    built without pydantic (what the CLI writes), from a :class:`~codeparse.contract.records.Limits`
    policy; ``progress`` gets each input's plain report as it arrives.

    ``once``: this process checks once (the CLI).  Its parent is then readied
    (:func:`warm_up`) only for several workers: one worker loads what its inputs need
    itself, instead of the parent loading everything first.

    ``untrusted_exclude``: the exclude globs that come from the checked tree, which cannot
    exclude a model file (default: all of them when the policy is read from the nearest
    pyproject.toml here, ``pyproject=True``)."""
    from ..text.cache import EntryCache

    folder = os.fspath(cache_dir) if cache_dir is not None else None

    paths = paths_of(paths, "check")  # one str is one path, never a walk of its characters
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise TypeError(f"check expects jobs as a positive int, not {jobs!r}")
    from_tree = policy is None and pyproject is True
    if policy is None:
        if pyproject is True:
            policy = load_policy(plain=True)
        elif pyproject:
            policy = load_policy(pyproject, plain=True)
        else:
            policy = Limits()
    inputs = expand_inputs(paths, models_only=scan_only, exclude=[*policy.exclude, *policy.extend_exclude],
                           skip_other=skip_other,
                           untrusted=untrusted_exclude or ([*policy.exclude, *policy.extend_exclude] if from_tree else ()))
    stdin = read_stdin() if any(p == "-" for p, _ in inputs) else None
    # With a cache folder, inputs whose whole report is stored are not read again (no worker).
    # An input met with a problem (no model file, a link leaving the tree, unreadable) is
    # reported from its path alone, never opened: no worker either.
    stored: dict[int, dict] = {i: _check_safely(path, policy, problem, None, scan_only, _NO_CACHE)
                               for i, (path, problem) in enumerate(inputs) if problem is not None}
    keys: dict[int, str] = {}
    whole = None
    if folder is not None and not scan_only:
        from ..text.cache import InputCache

        whole = InputCache(folder, policy)
        for index, (path, problem) in enumerate(inputs):
            if problem is None and path != "-":
                key = whole.key(path)
                if key is not None:
                    keys[index] = key
                    found = whole.get(key, path)
                    if found is not None:
                        stored[index] = found
    todo = [i for i in range(len(inputs)) if i not in stored]
    reports: list[Optional[dict]] = [stored.get(i) for i in range(len(inputs))]
    emitted = 0

    def emit() -> None:  # progress in input order, as reports are known
        nonlocal emitted
        while emitted < len(reports) and reports[emitted] is not None:
            if progress is not None:
                progress(reports[emitted])
            emitted += 1

    def done(index: int, report: dict) -> None:
        reports[index] = report
        if whole is not None and index in keys and report["readable"]:
            whole.put(keys[index], report, inputs[index][0])
        emit()

    emit()
    from . import budget

    if todo and budget.available():
        # Each input in a worker process, within its time and memory budget (CP340); the
        # workers are forked from this process once it is ready, so none starts cold.
        if not scan_only and (not once or min(jobs, len(todo)) > 1):
            warm_up()
        if folder is not None:
            from ..text.cache import fingerprint

            fingerprint()  # what names this codeparse in the cache folder: hashed once, not per worker
        tasks = [(inputs[i][0], policy, inputs[i][1], stdin if inputs[i][0] == "-" else None, scan_only, folder)
                 for i in todo]

        def report_of(index: int, result: Any) -> dict:
            if not isinstance(result, dict):
                result = _failed(inputs[todo[index]][0], result)
            return result

        def arrived(index: int, result: Any) -> None:
            if reports[todo[index]] is None:
                done(todo[index], report_of(index, result))

        def over(index: int, reason: str) -> dict:
            report = over_budget(inputs[todo[index]][0], reason)
            reports[todo[index]] = report  # never stored: partial results are dropped
            emit()
            return report

        results = budget.run_bounded(
            tasks, _check_safely, jobs=jobs, timeout=policy.timeout_per_input, max_memory=policy.max_memory,
            over_budget=over, on_result=arrived)
        for index, result in enumerate(results):
            if reports[todo[index]] is None:
                done(todo[index], report_of(index, result))
    elif todo:
        cache = EntryCache(folder)
        with budget.collecting_as_workers():
            for index in todo:
                path, problem = inputs[index]
                done(index, _check_safely(path, policy, problem, stdin if path == "-" else None, scan_only, cache))
                budget.input_done()
    return make_report_data(adjust(reports, policy), policy)


def adjust(reports: list[dict], policy: Any) -> list[dict]:
    """Mark library findings; drop the excluded, the per-file-ignored and the baselined ones
    (input reports as plain data; new dicts where anything changes)."""
    from .baseline import apply_baseline, load_baseline

    remaining = load_baseline(policy.baseline) if policy.baseline else None
    exclude = [*policy.exclude, *policy.extend_exclude]
    out = []
    for report in reports:
        if not report["readable"] or not report["findings"]:
            out.append(report)
            continue
        kept = []
        for f in report["findings"]:
            places = [f["path"], f["path"].split("!", 1)[1] if "!" in f["path"] else f["path"]]
            if f["origin"] is not None:
                places.append(f["origin"]["path"])
            if exclude and f["code"] not in SAFETY_CODES and any(matches(p, exclude) for p in places[1:]):
                continue  # inner paths (library sources); a pickle or container finding always stays
            ignored = [c for glob, codes in policy.per_file_ignores.items() if any(matches(p, [glob]) for p in places)
                       for c in codes]
            if ignored and any(f["code"].startswith(c) for c in ignored):
                continue
            if is_library(f):
                f = dict(f, library=True)
            kept.append(f)
        if remaining is not None:
            kept = apply_baseline(kept, remaining, policy.source_root)
        out.append(dict(report, findings=kept))
    return out


def _failed(path: str, exc: BaseException) -> dict:
    return input_report(path, "code", False, findings=[_whole("CP301", path, reason=f"internal error: {exc}")])


def make_report(reports: list[InputReport], policy: Policy) -> Report:
    """The :class:`Report` of input reports (models) under ``policy``."""
    from ..contract.records import report_model

    data = make_report_data([r.model_dump(mode="json") for r in reports], limits_of(policy))
    return report_model(data, reports)


def make_report_data(reports: list[dict], policy: Limits) -> dict:
    """The report (plain data) of input reports (plain data) under ``policy``."""
    counts = {"error": 0, "warning": 0, "info": 0}
    failing = False
    for report in reports:
        for finding in report["findings"]:
            counts[finding["severity"]] += 1
            failing = failing or fails(finding, policy)
    if any(not r["readable"] for r in reports):
        code = 2
    else:
        code = 1 if failing else 0
    return plain_report(reports, policy, counts, code)

"""``codeparse capture FILE.py:FACTORY --export``: the export prediction checked against torch.

The factory's module is scripted and saved in memory; ``check --target export``
(:mod:`codeparse.rules.export`) predicts from that archive what ``torch.export`` will meet.
Then ``torch.export.export`` (non-strict, the default) and ``torch.export.draft_export``
(which reports every data-dependent failure, not only the first) run on the live
module with the factory's inputs and ``dynamic_shapes``.  Each failure's innermost
*user frame* (a frame in a source file the archive's debug info names) is matched to
the predicted CP401/CP402/CP405 whose origin or related lines hold it.

The result (:class:`ExportCheck`) says, for every prediction, whether export failed
there, and lists every failure nothing predicted.  torch is imported only here.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import traceback
import warnings
from pydantic import Field
from typing import Any, Literal, Optional

from ..contract.check import ExportVerdict, Finding, SourceLocation
from ..contract.text import Node

__all__ = ["ExportFailure", "ExportPrediction", "ExportCheck", "check_export"]

_DATA_DEPENDENT = ("GuardOnDataDependentSymNode", "DataDependentOutputException", "DynamicOutputShapeException")
BLOCKING = ("CP401", "CP402", "CP405")


class ExportFailure(Node):
    """One failure torch reported: the exception of ``export``, or one failure of ``draft_export``'s report."""

    tool: Literal["export", "draft_export"] = Field(description="Which call reported it.")
    kind: str = Field(description="The exception class (`GuardOnDataDependentSymNode`) or draft failure type (`DATA_DEPENDENT_ERROR`).")
    message: str = Field(default="", description="First line of the message.")
    data_dependent: bool = Field(description="A failure on a data-dependent value or size.")
    frame: Optional[SourceLocation] = Field(default=None, description="The innermost user frame (a file the archive's debug info names); null if none.")
    predicted: bool = Field(description="A CP401/CP402/CP405 names this frame's line (origin or related).")
    foreseen_by: Optional[str] = Field(
        default=None, description="The code of another finding at this line (CP403: a shape branch meeting a named Dim).")


class ExportPrediction(Node):
    """A blocking finding of ``check --target export`` and whether torch confirmed it."""

    finding: Finding = Field(description="The CP401/CP402/CP405 finding on the scripted archive.")
    confirmed_by: list[Literal["export", "draft_export"]] = Field(
        default_factory=list, description="The calls that failed at its origin or related lines; empty: not seen."
    )


class ExportCheck(Node):
    """Predicted versus real ``torch.export`` outcomes for one live module."""

    module: str = Field(description="The module's class.")
    torch_version: str = Field(description="The torch that ran export.")
    verdict: Optional[ExportVerdict] = Field(default=None, description="codeparse's verdict from the scripted archive; null if scripting failed.")
    script_error: Optional[str] = Field(default=None, description="Why torch.jit.script failed, if it did (no prediction then).")
    export_ok: bool = Field(description="`torch.export.export` succeeded.")
    predictions: list[ExportPrediction] = Field(default_factory=list, description="Every blocking finding, in order.")
    failures: list[ExportFailure] = Field(default_factory=list, description="Every failure torch reported.")
    agrees: bool = Field(description="Every prediction confirmed and every data-dependent failure with a user frame predicted.")


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path)) if path else path


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0][:300] if lines else ""


def check_export(spec: Any) -> ExportCheck:
    """Predict from the scripted module, run export and draft_export, and compare (see the module docs)."""
    from ..archive.torchscript import read_archive
    from .capture import _archive_code
    from ..rules.export import archive_export
    from ..contract.check import Policy
    from ..infer.operators import import_torch

    torch = import_torch()
    module, inputs, dynamic_shapes = spec.module, spec.inputs, spec.dynamic_shapes
    name = f"{type(module).__module__}.{type(module).__qualname__}"
    out: dict[str, Any] = {"module": name, "torch_version": torch.__version__}
    user_files: set[str] = set()
    predictions: list[Finding] = []
    others: list[Finding] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data, _ = _archive_code(torch, torch.jit.script(module))
    except Exception as exc:  # noqa: BLE001 - the failure is the answer
        out["script_error"] = f"{type(exc).__name__}: {_first_line(exc)}"
        data = None
    if data is not None:
        extras: dict = {}
        archive = read_archive(f"<scripted {name}>", Policy(), data=data, extras=extras)
        found, verdict = archive_export(archive, extras)
        out["verdict"] = verdict
        predictions = [f for f in found if f.code in BLOCKING]
        others = [f for f in found if f.code not in BLOCKING]
        user_files = {_norm(o.path) for m in archive.source_map.values() for o in m.values()}
        user_files = {p for p in user_files if "site-packages" not in p and os.sep + "torch" + os.sep not in p}

    def user_frame(frames: list[tuple[str, int]]) -> Optional[SourceLocation]:
        for filename, line in reversed(frames):
            if _norm(filename) in user_files:
                return SourceLocation(path=filename, line=line)
        return None

    failures: list[dict] = []
    quiet = contextlib.redirect_stderr(io.StringIO())
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), quiet:
            warnings.simplefilter("ignore")
            try:
                torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes)
                out["export_ok"] = True
            except Exception as exc:  # noqa: BLE001
                out["export_ok"] = False
                frames = [(f.filename, f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
                kind = type(exc).__name__
                failures.append({"tool": "export", "kind": kind, "message": _first_line(exc),
                                 "data_dependent": kind in _DATA_DEPENDENT, "frame": user_frame(frames)})
            try:
                ep = torch.export.draft_export(module, inputs, dynamic_shapes=dynamic_shapes)
            except Exception as exc:  # noqa: BLE001
                frames = [(f.filename, f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
                failures.append({"tool": "draft_export", "kind": type(exc).__name__, "message": _first_line(exc),
                                 "data_dependent": type(exc).__name__ in _DATA_DEPENDENT, "frame": user_frame(frames)})
            else:
                from torch._logging.structured import INTERN_TABLE

                names = {i: s for s, i in INTERN_TABLE.items()}
                names.update(ep._report.str_to_filename)
                for f in ep._report.failures:
                    info = f.data if isinstance(f.data, dict) else {}
                    frames = [(names.get(fr.get("filename"), ""), int(fr.get("line", 0)))
                              for fr in info.get("user_stack") or []]
                    failures.append({"tool": "draft_export", "kind": f.failure_type.name,
                                     "message": str(info.get("expr", ""))[:300],
                                     "data_dependent": f.failure_type.name == "DATA_DEPENDENT_ERROR",
                                     "frame": user_frame(frames)})
    finally:
        logging.disable(previous)

    def lines_of(f: Finding) -> set[tuple[str, int]]:
        got = {(_norm(r.path), r.line) for r in f.related}
        if f.origin is not None:
            got.add((_norm(f.origin.path), f.origin.line))
        return got

    predicted_lines = [lines_of(f) for f in predictions]
    confirmed: list[list[str]] = [[] for _ in predictions]
    for failure in failures:
        frame = failure["frame"]
        key = (_norm(frame.path), frame.line) if frame is not None else None
        hit = False
        for i, lines in enumerate(predicted_lines):
            if key is not None and key in lines:
                hit = True
                if failure["tool"] not in confirmed[i]:
                    confirmed[i].append(failure["tool"])
        failure["predicted"] = hit
        if not hit and key is not None:
            failure["foreseen_by"] = next((f.code for f in others if key in lines_of(f)), None)
        elif not hit and failure["kind"] == "UserError" and "Constraints violated" in failure["message"]:
            # A named Dim that a shape branch specializes: what CP403 says export meets.
            failure["foreseen_by"] = next((f.code for f in others if f.code == "CP403"), None)
    out["predictions"] = [ExportPrediction(finding=f, confirmed_by=c) for f, c in zip(predictions, confirmed)]
    out["failures"] = [ExportFailure(**f) for f in failures]
    out["agrees"] = (all(confirmed) and all(f["predicted"] for f in failures
                                            if f["data_dependent"] and f["frame"] is not None))
    return ExportCheck(**out)


def render_export_check(report: ExportCheck, out: Any) -> None:
    """Plain text for people (input strings escaped)."""
    from ..output.escaping import for_text

    w = out.write
    here = os.getcwd() + os.sep

    def shown(path: str) -> str:
        return for_text(path[len(here):] if path.startswith(here) else path)

    w(f"{for_text(report.module)}\n")
    if report.script_error:
        w(f"  torch.jit.script failed ({for_text(report.script_error)}): no prediction\n")
    if report.verdict is not None:
        w(f"  predicted: {report.verdict.verdict}\n")
    w(f"  torch.export.export: {'ok' if report.export_ok else 'failed'}\n")
    for p in report.predictions:
        f = p.finding
        where = f"{f.origin.path}:{f.origin.line}" if f.origin else f"{f.path}:{f.span.line if f.span else 0}"
        seen = "export failed there (" + ", ".join(p.confirmed_by) + ")" if p.confirmed_by else "export did not fail there"
        w(f"  {f.code} {shown(where)}: {seen}\n")
    for fail in report.failures:
        if fail.predicted:
            continue
        where = f"at {shown(fail.frame.path)}:{fail.frame.line}" if fail.frame else "(no user frame)"
        what = f"foreseen by {fail.foreseen_by}" if fail.foreseen_by else "unpredicted"
        w(f"  {what}: {fail.tool} {for_text(fail.kind)} {where}: {for_text(fail.message)}\n")
    w(f"  {'prediction and torch agree' if report.agrees else 'prediction and torch disagree'}\n")

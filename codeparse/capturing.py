"""Capture both texts from a live module: script it, trace it, compare (needs torch).

:func:`capture` runs ``torch.jit.script`` and ``torch.jit.trace`` on the same module,
records every ``TracerWarning`` with the file and line of the model code that raised it
(the trace check included; repeats counted once), keeps the error of a failed script or
trace with its source location (TorchScript errors name it as ``File "x.py", line N``),
parses both printed texts, and runs :func:`codeparse.tracediff.diff` on them.  The diff reads
the two modules' saved archives (written to memory, never to disk), so it follows
submodules, scripted ones inside the trace included.

:func:`load_factory` imports ``FILE.py`` and calls ``FACTORY()``, which returns
``(module, example_inputs)``: the command ``codeparse capture FILE.py:FACTORY``.
Importing this module does not import torch; calling :func:`capture` does.
"""

from __future__ import annotations

import importlib.util
import io
import re
import sys
import warnings
import zipfile
from pathlib import Path
from typing import Any, Optional

from pydantic import Field

from .api import InputError, parse_text
from .codes import diagnostic_model
from .tracediff import diff, side_from_texts
from .models import CaptureError, CaptureWarning, CodeFile, Diagnostic, DiffReport, Node

__all__ = ["CaptureReport", "capture", "load_factory", "SAVED_FILES"]

# What `save_dir` receives: name -> which module and what.
SAVED_FILES = ("script.code", "trace.code", "script.pt", "trace.pt")
_LOCATION = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


class CaptureReport(Node):
    """Both texts of a live module, their parses, what tracing said, and the diff."""

    module: str = Field(description="The module's class, `__main__.CustomModel` style.")
    script_code: Optional[str] = Field(default=None, description="`torch.jit.script(m).code`; null if scripting failed.")
    trace_code: Optional[str] = Field(default=None, description="`torch.jit.trace(m, inputs).code`; null if tracing failed.")
    script: list[CodeFile] = Field(default_factory=list, description="Every code file of the script archive.")
    trace: list[CodeFile] = Field(default_factory=list, description="Every code file of the trace archive.")
    script_error: Optional[CaptureError] = None
    trace_error: Optional[CaptureError] = None
    tracer_warnings: list[CaptureWarning] = Field(default_factory=list)
    diff: Optional[DiffReport] = Field(default=None, description="Null when either side failed.")
    saved: list[str] = Field(default_factory=list, description="Files written with `save_dir`.")
    diagnostics: list[Diagnostic] = Field(default_factory=list, description="CP221-CP223 findings.")


def _error(exc: BaseException) -> CaptureError:
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
    m = _LOCATION.search(text)
    return CaptureError(
        message=first, detail=text,
        file=m.group("file") if m else None, line=int(m.group("line")) if m else None,
    )


def _archive_code(torch: Any, module: Any) -> tuple[bytes, list[tuple[str, str]]]:
    """Save ``module`` to memory; its bytes and its ``code/**.py`` texts (shown as ``<kind>!entry``)."""
    buf = io.BytesIO()
    torch.jit.save(module, buf)
    data = buf.getvalue()
    texts = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for info in z.infolist():
            parts = info.filename.split("/")
            if len(parts) >= 3 and parts[1] == "code" and info.filename.endswith(".py"):
                texts.append((info.filename, z.read(info).decode("utf-8", errors="replace")))
    return data, texts


def capture(module: Any, example_inputs: Any, check_inputs: Any = None, *,
            save_dir: Optional[str] = None, check_trace: bool = True) -> CaptureReport:
    """Script and trace ``module`` with ``example_inputs``; parse both; diff them.

    ``example_inputs`` is a tuple of inputs (a single tensor is wrapped).  ``check_inputs``
    is passed to ``torch.jit.trace``.  With ``save_dir``, writes ``script.code``,
    ``trace.code``, ``script.pt`` and ``trace.pt`` there (those that exist).
    """
    from .operators import import_torch

    torch = import_torch()  # deferred: the offline path never imports torch

    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    name = f"{type(module).__module__}.{type(module).__qualname__}"
    report: dict[str, Any] = {"module": name}
    diagnostics: list[Diagnostic] = []
    scripted = traced = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scripted = torch.jit.script(module)
    except Exception as exc:  # noqa: BLE001 - the failure is the finding
        err = _error(exc)
        report["script_error"] = err
        diagnostics.append(diagnostic_model("CP221", err.file or name, None, message=err.message))
    seen: dict[tuple[str, int, str], None] = {}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            traced = torch.jit.trace(module, example_inputs, check_trace=check_trace, check_inputs=check_inputs)
    except Exception as exc:  # noqa: BLE001
        err = _error(exc)
        report["trace_error"] = err
        diagnostics.append(diagnostic_model("CP223", err.file or name, None, message=err.message))
        caught = locals().get("caught", [])
    tracer = []
    for w in caught or []:
        if not issubclass(w.category, torch.jit.TracerWarning):
            continue
        text = str(w.message).strip()
        msg = text.splitlines()[0] if text else ""
        key = (str(w.filename), int(w.lineno), msg)
        if key in seen:
            continue
        seen[key] = None
        tracer.append(CaptureWarning(category=w.category.__name__, message=msg, file=key[0], line=key[1]))
        diagnostics.append(diagnostic_model("CP222", key[0], None, file=key[0], line=key[1], message=msg))
    report["tracer_warnings"] = tracer

    sides = {}
    archives = {}
    for kind, mod in (("script", scripted), ("trace", traced)):
        if mod is None:
            continue
        code = mod.code
        report[f"{kind}_code"] = code
        data, texts = _archive_code(torch, mod)
        archives[kind] = data
        side = side_from_texts(f"<{kind}>", [(f"<{kind}>!{entry}", text) for entry, text in texts])
        sides[kind] = side
        report[kind] = [u.code_file for u in side.units]
    if "script" in sides and "trace" in sides:
        report["diff"] = diff(sides["script"], sides["trace"])
    if save_dir is not None:
        out = Path(save_dir)
        out.mkdir(parents=True, exist_ok=True)
        saved = []
        for kind in ("script", "trace"):
            if f"{kind}_code" in report:
                (out / f"{kind}.code").write_text(report[f"{kind}_code"], encoding="utf-8")
                saved.append(str(out / f"{kind}.code"))
            if kind in archives:
                (out / f"{kind}.pt").write_bytes(archives[kind])
                saved.append(str(out / f"{kind}.pt"))
        report["saved"] = saved
    report["diagnostics"] = diagnostics
    return CaptureReport.model_validate(report)


def load_factory(spec: str) -> tuple[Any, Any]:
    """Import ``FILE.py`` and call ``FACTORY()`` from ``FILE.py:FACTORY``: ``(module, inputs)``."""
    path, sep, factory = spec.rpartition(":")
    if not sep or not path or not factory:
        raise InputError(spec, "expected FILE.py:FACTORY")
    file = Path(path)
    if not file.is_file():
        raise InputError(path, "no such file")
    name = re.sub(r"\W", "_", file.stem) or "model"
    module_spec = importlib.util.spec_from_file_location(name, file)
    if module_spec is None or module_spec.loader is None:
        raise InputError(path, "cannot be imported as Python")
    from .operators import import_torch

    import_torch()  # quietly first: the model file imports it too
    mod = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = mod  # TorchScript resolves the model's globals through sys.modules
    try:
        module_spec.loader.exec_module(mod)
    except Exception as exc:  # noqa: BLE001 - one line, no traceback
        raise InputError(path, f"importing it failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    fn = getattr(mod, factory, None)
    if not callable(fn):
        raise InputError(spec, f"{path} has no callable {factory!r}")
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001
        raise InputError(spec, f"{factory}() failed: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise InputError(spec, f"{factory}() must return (module, example_inputs)")
    return result

"""Capture both texts from a live module: script it, trace it, compare (needs torch).

:func:`capture` runs ``torch.jit.script`` and ``torch.jit.trace`` on the same module,
records every ``TracerWarning`` with the file and line of the model code that raised it
(the trace check included; repeats counted once), keeps the error of a failed script or
trace with its source location (TorchScript errors name it as ``File "x.py", line N``),
parses both printed texts, and runs :func:`codeparse.trace.compare.diff` on them.  The diff reads
the two modules' saved archives (written to memory, never to disk), so it follows
submodules, scripted ones inside the trace included.

The factory contract (shared by ``codeparse capture`` and ``capture --export``):
:func:`load_factory` takes ``FILE.py:FACTORY``, puts the file's folder first on ``sys.path``
(so the model file imports its neighbours), imports the file, calls ``FACTORY()`` and
returns a :class:`FactorySpec`.  ``FACTORY()`` returns either ``(module, inputs)`` or a dict
``{"module", "inputs", "dynamic_shapes"?, "check_inputs"?, "wrap_outputs"?}``:

* ``inputs``: the example inputs, a tuple (a single value is wrapped in one);
* ``dynamic_shapes``: passed as is to ``torch.export.export`` (not used by the trace);
* ``check_inputs``: a list of input tuples passed to ``torch.jit.trace(check_inputs=...)``;
* ``wrap_outputs``: a callable applied to the module's outputs inside the traced wrapper,
  for a model whose outputs a trace cannot return (a list of dicts, say); ``False`` turns
  wrapping off; absent, :func:`capture` wraps with :func:`flatten_outputs` only when the
  plain trace fails and the module's outputs hold lists or dicts.

Importing this module does not import torch; calling :func:`capture` or
:func:`load_factory` does.
"""

from __future__ import annotations

import importlib.util
import io
import re
import sys
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from pydantic import Field
from typing import Any, Callable, Optional, Union

from ..contract.diff import CaptureError, CaptureWarning, DiffReport
from ..contract.errors import InputError
from ..contract.text import CodeFile, Diagnostic, Node, diagnostic_model
from ..text.reader import parse_text
from .compare import diff
from .sides import side_from_texts

__all__ = ["CaptureReport", "FactorySpec", "capture", "flatten_outputs", "load_factory", "factory_spec",
           "SAVED_FILES", "FACTORY_KEYS"]

# The keys a factory's dict may hold; anything else is refused (a typo must not pass silently).
FACTORY_KEYS = ("module", "inputs", "dynamic_shapes", "check_inputs", "wrap_outputs")

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
    diagnostics: list[Diagnostic] = Field(default_factory=list, description="CP221-CP224 findings.")
    outputs_wrapped: Optional[str] = Field(
        default=None, description="How the traced outputs were wrapped: `factory` (the factory's "
        "`wrap_outputs`), `default` (lists and dicts of tensors flattened), or null (not wrapped). "
        "When wrapped, `trace_code` and `trace` are those of the wrapped module inside the wrapper.")


@dataclass(frozen=True)
class FactorySpec:
    """What ``FACTORY()`` gave, normalised: the one contract of ``capture`` and ``capture --export``.

    Field names are stable (other commands build on them).
    """

    module: Any
    """The live ``torch.nn.Module``."""
    inputs: tuple
    """Example inputs, always a tuple (one positional argument each)."""
    dynamic_shapes: Any = None
    """Passed as is to ``torch.export.export(dynamic_shapes=...)``; null when the factory gives none."""
    check_inputs: Optional[list] = None
    """Further input tuples for ``torch.jit.trace(check_inputs=...)``; null when none."""
    wrap_outputs: Union[Callable[[Any], Any], bool, None] = None
    """A callable applied to the outputs in the traced wrapper, ``False`` (never wrap), or null (wrap
    with :func:`flatten_outputs` only when needed)."""
    source: str = ""
    """``FILE.py:FACTORY`` as given (empty when built from a value)."""


def flatten_outputs(value: Any) -> Any:
    """The default output wrapper: every tensor of nested lists, tuples and dicts, in order, as a tuple
    (dict values in key order as stored).  A lone tensor stays a tensor."""
    import torch

    if isinstance(value, torch.Tensor):
        return value
    flat: list = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, torch.Tensor):
            flat.append(v)
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed(list(v)))
    return tuple(flat)


def _wrapper(torch: Any, module: Any, wrap: Callable[[Any], Any]) -> Any:
    class OutputWrapper(torch.nn.Module):
        """Traced in place of the module: calls it, then ``wrap`` on its outputs."""

        def __init__(self, inner: Any):
            super().__init__()
            self.wrapped = inner

        def forward(self, *args: Any) -> Any:
            return wrap(self.wrapped(*args))

    return OutputWrapper(module)


def _has_containers(value: Any) -> bool:
    return isinstance(value, (list, dict)) or (
        isinstance(value, tuple) and any(_has_containers(v) for v in value))


def _error(exc: BaseException) -> CaptureError:
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
    m = _LOCATION.search(text)
    return CaptureError(
        message=first, detail=text,
        file=m.group("file") if m else None, line=int(m.group("line")) if m else None,
    )


def _origins(data: bytes, texts: list[tuple[str, str]], prefix: str) -> dict:
    """Original source lines of each code entry, from the archive's ``.debug_pkl`` entries
    (read by the safe reader of :mod:`codeparse.archive.debuginfo`; an entry it refuses maps nothing)."""
    from ..archive.debuginfo import DebugInfoError, ForbiddenGlobal, line_origins, read_debug_pkl
    from ..contract.check import SourceLocation

    out: dict = {}
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = set(z.namelist())
        for entry, text in texts:
            debug = entry + ".debug_pkl"
            if debug not in names:
                continue
            try:
                line_map = read_debug_pkl(z.read(debug), max_rows=len(text) + 1)
            except (DebugInfoError, ForbiddenGlobal):
                continue
            out[prefix + entry] = {line: SourceLocation(path=f, line=n)
                                   for line, (f, n) in line_origins(text, line_map).items()}
    return out


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


def capture(module: Any, example_inputs: Any = None, check_inputs: Any = None, *,
            save_dir: Optional[str] = None, check_trace: bool = True,
            wrap_outputs: Union[Callable[[Any], Any], bool, None] = None) -> CaptureReport:
    """Script and trace ``module`` with ``example_inputs``; parse both; diff them.

    ``module`` may be a :class:`FactorySpec` (its inputs, check inputs and output wrapper are
    used; explicit arguments win).  ``example_inputs`` is a tuple of inputs (a single tensor is
    wrapped).  ``check_inputs`` is passed to ``torch.jit.trace``; ``check_trace=False`` turns the
    trace check off.  ``wrap_outputs``: see :class:`FactorySpec`.  With ``save_dir``, writes
    ``script.code``, ``trace.code``, ``script.pt`` and ``trace.pt`` there (those that exist).
    """
    if isinstance(module, FactorySpec):
        spec = module
        module = spec.module
        example_inputs = spec.inputs if example_inputs is None else example_inputs
        check_inputs = spec.check_inputs if check_inputs is None else check_inputs
        wrap_outputs = spec.wrap_outputs if wrap_outputs is None else wrap_outputs
    from ..infer.operators import import_torch

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
    caught: list = []
    wrapped_by: Optional[str] = None
    if callable(wrap_outputs):
        wrapped_by = "factory"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            traced = _trace(torch, module, example_inputs, check_inputs, check_trace,
                            wrap_outputs if callable(wrap_outputs) else None)
        except Exception as exc:  # noqa: BLE001
            first = exc
            if wrap_outputs is None and _outputs_need_wrapping(torch, module, example_inputs):
                wrapped_by = "default"
                try:
                    traced = _trace(torch, module, example_inputs, check_inputs, check_trace, flatten_outputs)
                    first = None
                except Exception as exc2:  # noqa: BLE001
                    first = exc2
            if first is not None:
                err = _error(first)
                report["trace_error"] = err
                diagnostics.append(diagnostic_model("CP223", err.file or name, None, message=err.message))
    if traced is not None and wrapped_by is not None:
        report["outputs_wrapped"] = wrapped_by
        traced = traced.wrapped  # compare the model, not the wrapper
    tracer = []
    for w in caught:
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
        side.origins = _origins(data, texts, f"<{kind}>!")
        sides[kind] = side
        report[kind] = [u.code_file for u in side.units]
    if "script" in sides and "trace" in sides:
        report["diff"] = diff(sides["script"], sides["trace"])
        diagnostics.extend(d for d in report["diff"].diagnostics if d.code == "CP224")
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


def _trace(torch: Any, module: Any, inputs: tuple, check_inputs: Any, check_trace: bool,
           wrap: Optional[Callable[[Any], Any]]) -> Any:
    target = module if wrap is None else _wrapper(torch, module, wrap)
    if check_inputs is not None:
        check_inputs = [c if isinstance(c, tuple) else (c,) for c in check_inputs]
    return torch.jit.trace(target, inputs, check_trace=check_trace, check_inputs=check_inputs)


def _outputs_need_wrapping(torch: Any, module: Any, inputs: tuple) -> bool:
    """Run the module once (no grad) and say whether its outputs hold lists or dicts."""
    try:
        with torch.no_grad():
            return _has_containers(module(*inputs))
    except Exception:  # noqa: BLE001 - the trace error is the one to report
        return False


def factory_spec(result: Any, where: str = "FACTORY") -> FactorySpec:
    """Normalise what a factory returned (``(module, inputs)`` or the dict form) to a
    :class:`FactorySpec`; a wrong shape raises :class:`InputError` naming ``where``."""
    if isinstance(result, FactorySpec):
        return result
    if isinstance(result, dict):
        unknown = sorted(set(result) - set(FACTORY_KEYS))
        if unknown:
            raise InputError(where, f"unknown factory key(s) {', '.join(map(repr, unknown))}; "
                                    f"allowed: {', '.join(FACTORY_KEYS)}")
        missing = [k for k in ("module", "inputs") if k not in result]
        if missing:
            raise InputError(where, f"the factory's dict lacks {', '.join(map(repr, missing))}")
        fields = dict(result)
    elif isinstance(result, tuple) and len(result) == 2:
        fields = {"module": result[0], "inputs": result[1]}
    else:
        raise InputError(where, "the factory must return (module, inputs) or a dict "
                                "{module, inputs, dynamic_shapes?, check_inputs?, wrap_outputs?}")
    inputs = fields["inputs"]
    fields["inputs"] = inputs if isinstance(inputs, tuple) else (inputs,)
    check = fields.get("check_inputs")
    if check is not None:
        if not isinstance(check, (list, tuple)):
            raise InputError(where, "check_inputs must be a list of input tuples")
        fields["check_inputs"] = [c if isinstance(c, tuple) else (c,) for c in check]
    wrap = fields.get("wrap_outputs")
    if not (wrap is None or wrap is False or callable(wrap)):
        raise InputError(where, "wrap_outputs must be a callable, False, or absent")
    return FactorySpec(source=where, **fields)


def load_factory(spec: str) -> FactorySpec:
    """Import ``FILE.py`` (its folder first on ``sys.path``) and call ``FACTORY()`` from
    ``FILE.py:FACTORY``; the result as a :class:`FactorySpec`.  Errors are :class:`InputError`."""
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
    from ..infer.operators import import_torch

    import_torch()  # quietly first: the model file imports it too
    folder = str(file.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the model file imports its neighbours
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
    return factory_spec(result, spec)

"""codeparse: read TorchScript code text and tell what is in it.

The offline path (``parse_text``, ``parse_file``) needs only ``regex`` and
``pydantic``; ``from_module`` imports torch when it is called.
"""

from .api import InputError, detect_grammar, from_module, iter_inputs, parse_bytes, parse_file, parse_text
from .grammar import GrammarError, available_grammars, load_grammar
from .check import check  # issue 3: `codeparse.check` is this function, not the module
from .models import (
    Call,
    ClassAttribute,
    ClassDef,
    CodeFile,
    Condition,
    ConditionSource,
    Diagnostic,
    Function,
    IfStatement,
    Loop,
    Param,
    SelfRef,
    Signature,
    Span,
)
from .models import Archive, Finding, Policy, Report
from .models import DiffReport, IfDiff, LostCall, OperatorInfo, OperatorUse, UnrolledLoop, BakedConstant

# `codeparse.diff(script, trace)` and `codeparse.capture(module, inputs)` are imported on
# first use (PEP 562), so start-up of `codeparse parse` stays small.  Their modules are
# named differently (`tracediff`, `capturing`) so that the names stay functions.
_LAZY = {"diff": (".tracediff", "diff"), "capture": (".capturing", "capture")}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module, __name__), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"


def open_archive(path, policy=None) -> "Archive":
    """Read a saved TorchScript archive without torch (see :mod:`codeparse.archive`).

    Raises :class:`InputError` (with ``.code``) when it cannot be read at all.
    """
    from .archive import open_archive as _open

    return _open(path, policy)

__all__ = [
    "parse_text", "parse_file", "parse_bytes", "iter_inputs", "from_module", "detect_grammar",
    "InputError", "GrammarError", "available_grammars", "load_grammar",
    "CodeFile", "ClassDef", "ClassAttribute", "Function", "Signature", "Param", "IfStatement",
    "Condition", "ConditionSource", "Call", "Loop", "SelfRef", "Span", "Diagnostic",
    "__version__",
    "open_archive", "check", "Archive", "Report", "Finding", "Policy",
    "diff", "capture", "DiffReport", "IfDiff", "LostCall", "UnrolledLoop", "BakedConstant",
    "OperatorInfo", "OperatorUse",
]

"""codeparse: read TorchScript code text and tell what is in it.

Text:     parse_text(text), parse_file(path), parse_bytes(data, path) -> CodeFile
Archives: open_archive(path) -> Archive (no torch, nothing unpickled)
CI:       check(paths, policy=Policy(...)) -> Report (InputReport per input, Finding per problem)
Trace:    diff(script, trace) -> DiffReport; capture(module, inputs) -> CaptureReport (needs torch)
Live:     from_module(module) -> [CodeFile] (needs torch)

Every result is a frozen pydantic model (``.model_dump_json()``); every finding has a
stable code (``codeparse rule CP201`` explains one).  The offline path needs only
``regex`` and ``pydantic``; torch is imported only by the functions that need it.
"""

import sys as _sys
import types as _types

# ``import codeparse`` loads no pydantic, and not the parser: the models and the functions
# are exported lazily (PEP 562), each imported on first use from the table ``_LAZY``
# below (``codeparse check`` answered from a warm cache never loads the parser).  Add a
# public name there (name -> (module, attribute)) and to ``__all__``.
_API = ("InputError", "detect_grammar", "from_module", "iter_inputs", "parse_bytes", "parse_file", "parse_text")
_GRAMMAR = ("GrammarError", "available_grammars", "load_grammar")
_MODELS = (
    "Call", "ClassAttribute", "ClassDef", "CodeFile", "Condition", "ConditionSource", "Diagnostic",
    "Function", "IfStatement", "Loop", "Param", "SelfRef", "Signature", "Span",
    "Archive", "Finding", "Policy", "Report",  # issue 3
    "DiffReport", "IfDiff", "LostCall", "OperatorInfo", "OperatorUse", "UnrolledLoop", "BakedConstant",  # issue 4
    "InputReport", "Branch", "PickleReport", "SourceLocation", "ModuleNode", "DiffCall", "ModuleDiff",  # issue 11
    "CaptureWarning", "CaptureError",
)
# Public name -> (module, attribute), imported on first use.  `codeparse.diff(script, trace)`
# and `codeparse.capture(module, inputs)` live in modules named differently (`tracediff`,
# `capturing`) so that the names stay functions.
_LAZY: dict[str, tuple[str, str]] = {
    **{name: (".models", name) for name in _MODELS},
    **{name: (".api", name) for name in _API},
    **{name: (".grammar", name) for name in _GRAMMAR},
    "check": (".check", "check"),  # issue 3: `codeparse.check` is this function, not the module
    "diff": (".tracediff", "diff"),
    "capture": (".capturing", "capture"),
    "CaptureReport": (".capturing", "CaptureReport"),  # issue 11
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module, __name__), attribute)
        if name != "check":
            globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Package(_types.ModuleType):
    """The package module.  Importing the submodule ``codeparse.check`` sets the attribute
    ``check`` on its package; here that assignment is dropped, so ``codeparse.check``
    stays the function."""

    @property
    def check(self):
        return __getattr__("check")

    @check.setter
    def check(self, value) -> None:
        if not isinstance(value, _types.ModuleType):
            raise AttributeError("codeparse.check is a function; patch codeparse.check.check instead")


_sys.modules[__name__].__class__ = _Package

__version__ = "0.1.0"


def open_archive(path, policy=None) -> "Archive":
    """Read a saved TorchScript archive without torch (see :mod:`codeparse.archive`).

    Raises :class:`InputError` (with ``.code``) when it cannot be read at all.
    """
    from .archive import open_archive as _open

    return _open(path, policy)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "parse_text", "parse_file", "parse_bytes", "iter_inputs", "from_module", "detect_grammar",
    "InputError", "GrammarError", "available_grammars", "load_grammar",
    "CodeFile", "ClassDef", "ClassAttribute", "Function", "Signature", "Param", "IfStatement",
    "Condition", "ConditionSource", "Call", "Loop", "SelfRef", "Span", "Diagnostic",
    "__version__",
    "open_archive", "check", "Archive", "Report", "Finding", "Policy",
    "diff", "capture", "DiffReport", "IfDiff", "LostCall", "UnrolledLoop", "BakedConstant",
    "OperatorInfo", "OperatorUse",
    "InputReport", "Branch", "PickleReport", "SourceLocation", "ModuleNode", "DiffCall", "ModuleDiff",
    "CaptureWarning", "CaptureError", "CaptureReport",
]

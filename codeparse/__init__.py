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

# One subpackage per stage, from text to findings (docs/how-it-works.md): contract (models,
# codes), grammar, files, parse, infer, rules, text, pickles, archive, gate (check), output,
# trace (diff), report, cli.

# ``import codeparse`` loads no pydantic, and not the parser: the models and the functions
# are exported lazily (PEP 562), each imported on first use from the table ``_LAZY``
# below (``codeparse check`` answered from a warm cache never loads the parser).  Add a
# public name there (name -> (module, attribute)) and to ``__all__``.
_TEXT_MODELS = (
    "Call", "ClassAttribute", "ClassDef", "CodeFile", "Condition", "ConditionSource", "Diagnostic",
    "Function", "IfStatement", "Loop", "Param", "SelfRef", "Signature", "Span",
)
_CHECK_MODELS = ("Archive", "Finding", "Policy", "Report", "InputReport", "Branch", "PickleReport", "SourceLocation",
                 "ModuleNode")
_DIFF_MODELS = ("DiffReport", "IfDiff", "LostCall", "OperatorInfo", "OperatorUse", "UnrolledLoop", "BakedConstant",
                "DiffCall", "ModuleDiff", "CaptureWarning", "CaptureError")
_READER = ("detect_grammar", "iter_inputs", "parse_bytes", "parse_file", "parse_text")
_GRAMMAR = ("GrammarError", "available_grammars", "load_grammar")
# Public name -> (module, attribute), imported on first use.
_LAZY: dict[str, tuple[str, str]] = {
    **{name: (".contract.text", name) for name in _TEXT_MODELS},
    **{name: (".contract.check", name) for name in _CHECK_MODELS},
    **{name: (".contract.diff", name) for name in _DIFF_MODELS},
    **{name: (".text.reader", name) for name in _READER},
    **{name: (".grammar.engine", name) for name in _GRAMMAR},
    "InputError": (".contract.errors", "InputError"),
    "from_module": (".api", "from_module"),
    "check": (".gate.run", "check"),
    "diff": (".trace.compare", "diff"),
    "capture": (".trace.capture", "capture"),
    "CaptureReport": (".trace.capture", "CaptureReport"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module, __name__), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"


def open_archive(path, policy=None) -> "Archive":
    """Read a saved TorchScript archive without torch (see :mod:`codeparse.archive.torchscript`).

    Raises :class:`InputError` (with ``.code``) when it cannot be read at all.
    """
    from .archive.torchscript import open_archive as _open

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

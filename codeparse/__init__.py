"""codeparse: read TorchScript code text and tell what is in it.

The offline path (``parse_text``, ``parse_file``) needs only ``regex`` and
``pydantic``; ``from_module`` imports torch when it is called.
"""

from .api import InputError, detect_grammar, from_module, iter_inputs, parse_bytes, parse_file, parse_text
from .grammar import GrammarError, available_grammars, load_grammar
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

__version__ = "0.1.0"

__all__ = [
    "parse_text", "parse_file", "parse_bytes", "iter_inputs", "from_module", "detect_grammar",
    "InputError", "GrammarError", "available_grammars", "load_grammar",
    "CodeFile", "ClassDef", "ClassAttribute", "Function", "Signature", "Param", "IfStatement",
    "Condition", "ConditionSource", "Call", "Loop", "SelfRef", "Span", "Diagnostic",
    "__version__",
]

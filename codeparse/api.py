"""The public functions: text, files and (with torch) live modules in, models out.

Nothing here prints; the CLI renders.  Inputs that cannot be read at all raise
:class:`InputError` (one line: path and reason); text that can be read is always
parsed, its problems reported as diagnostics in the returned :class:`CodeFile`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .contract.errors import InputError
from .text.reader import (
    CODE_SUFFIXES,
    decode_text,
    detect_grammar,
    iter_inputs,
    module_name_for,
    parse_bytes,
    parse_file,
    parse_text,
)

if TYPE_CHECKING:  # the models import pydantic; the plain-data path never does
    from .contract.text import CodeFile

__all__ = [
    "InputError",
    "parse_text",
    "parse_bytes",
    "decode_text",
    "parse_file",
    "iter_inputs",
    "detect_grammar",
    "module_name_for",
    "CODE_SUFFIXES",
]


def from_module(module: Any, *, trace_inputs: Any = None) -> list["CodeFile"]:
    """Parse the code of a live ``nn.Module`` (needs torch): scripted if it is not already.

    Returns one :class:`CodeFile` per distinct module type in the module tree (the
    top module first), each holding that type's methods as printed by TorchScript,
    with the type's qualified name.  With ``trace_inputs``, the module is traced
    with them instead of scripted.
    """
    try:
        import torch  # deferred: the offline path never imports torch
    except ImportError as exc:
        from .contract.errors import missing_extra

        raise (missing_extra(exc, "codeparse.from_module") or exc) from None

    if isinstance(module, torch.jit.ScriptModule):
        scripted = module
    elif trace_inputs is not None:
        scripted = torch.jit.trace(module, trace_inputs)
    else:
        scripted = torch.jit.script(module)
    files: list["CodeFile"] = []
    seen: set[str] = set()
    for _, sub in scripted.named_modules():
        if not hasattr(sub, "_c"):
            continue
        qualified = sub._c._type().qualified_name()
        if qualified in seen:
            continue
        seen.add(qualified)
        texts = []
        for name in sub._c._method_names():
            method = getattr(sub, name, None)
            code = getattr(method, "code", None)
            if code:
                texts.append(code.rstrip("\n") + "\n")
        files.append(parse_text("".join(texts), path=f"<module {qualified}>", owner=qualified))
    return files

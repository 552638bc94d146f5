"""Where codeparse's data files are: the grammar folder (``grammars/*.toml``, the operator
and pickle tables), without importing the grammar engine (``regex``): the content cache
hashes the folder before anything is parsed, and often nothing is."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Optional

__all__ = ["grammar_dir"]


def grammar_dir() -> Path:
    """The folder holding the grammar files, in an installed wheel or in a checkout."""
    return _grammar_dir(os.environ.get("CODEPARSE_GRAMMARS"))


@functools.cache
def _grammar_dir(override: Optional[str]) -> Path:
    """Resolved once per process (every parse detects a grammar, which lists the folder)."""
    if override:
        return Path(override)
    here = Path(__file__).resolve().parents[1]  # the package folder
    installed = here / "grammars"  # the wheel carries them inside the package
    if installed.is_dir():
        return installed
    return here.parent / "grammars"  # a checkout or an editable install

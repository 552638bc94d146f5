"""The command's name and version, which every command module shows (``--version``, SARIF)."""

from __future__ import annotations

import codeparse

__all__ = ["PROG", "version"]

PROG = "codeparse"


def version() -> str:
    """The package version (``codeparse.__version__``, else the installed distribution's)."""
    found = getattr(codeparse, "__version__", None)
    if found:
        return str(found)
    try:
        from importlib.metadata import PackageNotFoundError, version as dist_version

        return dist_version("codeparse")
    except (ImportError, PackageNotFoundError):
        return "unknown"

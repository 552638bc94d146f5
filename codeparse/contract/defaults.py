"""The check policy's defaults as plain data (no pydantic): the models and the plain-data
check read the same values."""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_EXCLUDE", "POLICY_DEFAULTS"]


#: Folders never walked by ``check`` (besides ``exclude``): version control and virtual environments.
DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__")

# Policy's fields, in its order, with their defaults (tests/test_check.py compares them
# with the model's).  Lists and dicts are copied per Limits.
POLICY_DEFAULTS: dict[str, Any] = {
    "select": [], "ignore": [], "fail_on": "error", "max_entries": 50_000, "max_entry_bytes": 64 << 20,
    "max_total_bytes": 512 << 20, "max_ratio": 200, "max_debug_chars": 32 << 20, "timeout_per_input": 60.0,
    "max_memory": 1024, "target": "trace", "exclude": [], "extend_exclude": [], "per_file_ignores": {},
    "baseline": None, "source_root": None, "include_library": False, "allow_globals": [],
}

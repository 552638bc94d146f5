"""The check policy: ``[tool.codeparse]`` from the nearest ``pyproject.toml``, then the command
line, checked value by value; which codes are selected and when a report fails."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional

from ..contract.codes import CODES
from ..contract.defaults import POLICY_DEFAULTS
from ..contract.records import Limits, policy_model

if TYPE_CHECKING:  # the models import pydantic: built only for a Python caller (check, check_input)
    from ..contract.check import Policy

__all__ = ["PolicyError", "SEVERITY_RANK", "load_policy", "policy_with", "selected", "load_cache_dir"]


SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}

_KEYS = {
    "select": "select", "ignore": "ignore", "fail-on": "fail_on", "fail_on": "fail_on",
    "max-entries": "max_entries", "max_entries": "max_entries",
    "max-entry-bytes": "max_entry_bytes", "max_entry_bytes": "max_entry_bytes",
    "max-total-bytes": "max_total_bytes", "max_total_bytes": "max_total_bytes",
    "max-ratio": "max_ratio", "max_ratio": "max_ratio",
    "max-debug-chars": "max_debug_chars", "max_debug_chars": "max_debug_chars",
    "target": "target",
    "exclude": "exclude", "extend-exclude": "extend_exclude", "extend_exclude": "extend_exclude",
    "per-file-ignores": "per_file_ignores", "per_file_ignores": "per_file_ignores",
    "baseline": "baseline", "source-root": "source_root", "source_root": "source_root",
    "include-library": "include_library", "include_library": "include_library",
    "allow-globals": "allow_globals", "allow_globals": "allow_globals",
    "timeout-per-input": "timeout_per_input", "timeout_per_input": "timeout_per_input",
    "max-memory": "max_memory", "max_memory": "max_memory",
}

# Fields a pyproject.toml found on its own (the checkout being checked) may only lower:
# raising them, or `fail-on = "never"`, takes the command line or `--config FILE`.
_LIMITS = ("max_entries", "max_entry_bytes", "max_total_bytes", "max_ratio", "max_debug_chars",
           "timeout_per_input", "max_memory")

_SETTINGS = ("cache-dir", "cache_dir")  # [tool.codeparse] keys that are not policy
# What makes a file that runs code when it is loaded fail the gate: a pyproject.toml found
# in the checked tree can neither ignore, deselect nor per-file-ignore these (the pickle
# and container findings, and the reading limits and refusals that leave a model file or
# an entry unread: a tree that lowers a limit must not also hide what it left unread);
# a trusted --config file can.
SAFETY_CODES = ("CP301", "CP304", "CP305", "CP306", "CP307", "CP308", "CP309", "CP310", "CP311", "CP312",
                "CP313", "CP320", "CP330", "CP331", "CP332", "CP333", "CP334", "CP335", "CP336", "CP337", "CP338",
                "CP340", "CP341", "CP343", "CP344", "CP345", "CP346", "CP347")


class PolicyError(ValueError):
    """``[tool.codeparse]`` or an option is wrong; the message is one line."""


def find_pyproject(start: Optional[Path] = None) -> Optional[Path]:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_policy(pyproject: Optional[str | os.PathLike] = None, start: Optional[Path] = None, *,
                trusted: Optional[bool] = None, notes: Optional[list[str]] = None, plain: bool = False) -> Policy:
    """The policy of ``[tool.codeparse]`` in ``pyproject`` (default: the nearest one upward).

    A file named explicitly is trusted; the nearest one found upward is not (it belongs
    to the checkout being checked, which may be hostile): it may lower limits and select
    rules, but a limit above the built-in default or ``fail-on = "never"`` is ignored,
    with a one-line note appended to ``notes``.  ``trusted`` overrides the default.
    ``plain``: the policy as :class:`~codeparse.contract.records.Limits` (no pydantic).
    """
    path = Path(pyproject) if pyproject is not None else find_pyproject(start)
    if trusted is None:
        trusted = pyproject is not None
    empty = Limits()
    if path is None:
        return empty if plain else policy_model(empty)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{path}: not valid TOML: {exc}") from None
    table = data.get("tool", {}).get("codeparse", {})
    if not isinstance(table, dict):
        raise PolicyError(f"{path}: [tool.codeparse] is not a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key in _SETTINGS:
            continue  # not policy: see load_cache_dir
        field = _KEYS.get(key)
        if field is None:
            known = ", ".join(sorted([k for k in _KEYS if "_" not in k] + ["cache-dir"]))
            raise PolicyError(f"{path}: [tool.codeparse] has an unknown key {key!r}; known: {known}")
        values[field] = value
    if not trusted:
        _stricter_only(values, path, notes)
        for field in list(values):
            value = values[field]
            raises = (field in _LIMITS and isinstance(value, (int, float)) and not isinstance(value, bool)
                      and value > POLICY_DEFAULTS[field])
            if raises or (field == "fail_on" and value == "never"):
                del values[field]
                shown = field.replace("_", "-")
                if notes is not None:
                    notes.append(f"{path}: {shown} = {value!r} is ignored: a pyproject.toml found in the "
                                 f"checked tree may only lower limits (pass --{shown} or --config FILE)")
    out = policy_with(empty, where=str(path), **values)
    return out if plain else policy_model(out)


def _stricter_only(values: dict[str, Any], path: Path, notes: Optional[list[str]]) -> None:
    """What an untrusted pyproject.toml asks for, cut to what can only make the gate stricter:
    no ignoring or per-file-ignoring a safety code (a prefix that covers one is replaced by
    the other codes it covers), a selection always includes them, and no baseline."""
    def note(text: str) -> None:
        if notes is not None:
            notes.append(f"{path}: {text}: a pyproject.toml found in the checked tree may only make the gate "
                         "stricter (pass it on the command line or in --config FILE)")

    def unprotected(codes: Any, key: str) -> Any:
        if isinstance(codes, str):
            codes = codes.split(",")
        if not isinstance(codes, (list, tuple)):
            return codes  # policy_with says what is wrong
        out = []
        for raw in codes:
            code = str(raw).strip().upper()
            covered = [c for c in SAFETY_CODES if c.startswith(code)] if code else []
            if not covered:
                out.append(raw)
                continue
            out.extend(c for c in CODES if c.startswith(code) and c not in SAFETY_CODES)
            note(f"{key} {raw!r} does not apply to {', '.join(covered)}")
        return out

    if "ignore" in values:
        values["ignore"] = unprotected(values["ignore"], "ignore")
    if isinstance(values.get("per_file_ignores"), dict):
        values["per_file_ignores"] = {glob: unprotected(codes, f"per-file-ignores {glob!r}")
                                      for glob, codes in values["per_file_ignores"].items()}
    select = values.get("select")
    if isinstance(select, str):
        select = select.split(",")
    if isinstance(select, (list, tuple)) and [c for c in select if str(c).strip()]:
        values["select"] = [*select, *SAFETY_CODES]
    for key in ("baseline", "allow_globals"):
        if key in values:
            note(f"{key.replace('_', '-')} = {values.pop(key)!r} is ignored")


def load_cache_dir(pyproject: Optional[str | os.PathLike] = None, start: Optional[Path] = None) -> Optional[str]:
    """``cache-dir`` of ``[tool.codeparse]`` (relative to that pyproject.toml's folder), or None.

    The content cache is off unless this or ``--cache-dir`` names a folder."""
    path = Path(pyproject) if pyproject is not None else find_pyproject(start)
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            table = tomllib.load(handle).get("tool", {}).get("codeparse", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None  # load_policy reports it
    value = table.get("cache-dir", table.get("cache_dir")) if isinstance(table, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise PolicyError(f"{path}: cache-dir must be a folder name")
    return str(path.parent / value)


def _codes(values: Iterable[str], where: str) -> list[str]:
    out = []
    for raw in values:
        code = str(raw).strip().upper()
        if not code:
            continue
        if not any(c.startswith(code) for c in CODES):
            raise PolicyError(f"{where}: {raw!r} matches no finding code (see docs/rules.md)")
        out.append(code)
    return out


def policy_with(policy: Policy, where: str = "command line", **changes: Any) -> Policy:
    """``policy`` with the given fields replaced (None leaves a field alone), checked: a
    :class:`Policy`, or :class:`~codeparse.contract.records.Limits` for Limits."""
    data = policy.model_dump()
    for key, value in changes.items():
        if value is None:
            continue
        if key in ("select", "ignore"):
            if isinstance(value, str):
                value = [v for v in value.split(",")]
            if not isinstance(value, (list, tuple)):
                raise PolicyError(f"{where}: {key} must be a list of codes")
            value = _codes(value, where)
        elif key == "fail_on":
            if value not in ("error", "warning", "info", "never"):
                raise PolicyError(f"{where}: fail-on must be error, warning, info or never, not {value!r}")
        elif key == "target":
            if value not in ("trace", "export"):
                raise PolicyError(f"{where}: target must be trace or export, not {value!r}")
        elif key.startswith("max_"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PolicyError(f"{where}: {key.replace('_', '-')} must be a positive integer")
        elif key in ("exclude", "extend_exclude"):
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise PolicyError(f"{where}: {key.replace('_', '-')} must be a list of globs")
            value = list(value)
        elif key == "per_file_ignores":
            if not isinstance(value, dict) or not all(isinstance(v, (list, tuple)) for v in value.values()):
                raise PolicyError(f"{where}: per-file-ignores must map globs to lists of codes")
            value = {str(glob): _codes(codes, where) for glob, codes in value.items()}
        elif key in ("baseline", "source_root"):
            if not isinstance(value, str) or not value:
                raise PolicyError(f"{where}: {key.replace('_', '-')} must be a path")
            if where != "command line" and not Path(value).is_absolute():
                value = str(Path(where).parent / value)  # relative to the pyproject.toml that names it
        elif key == "allow_globals":
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if (not isinstance(value, (list, tuple))
                    or not all(isinstance(v, str) and "." in v.strip(".") and " " not in v for v in value)):
                raise PolicyError(f"{where}: allow-globals must be a list of `module.name` globals")
            value = list(value)
        elif key == "include_library":
            if not isinstance(value, bool):
                raise PolicyError(f"{where}: include-library must be true or false")
        elif key == "timeout_per_input":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise PolicyError(f"{where}: timeout-per-input must be a positive number of seconds")
        else:
            raise PolicyError(f"{where}: unknown policy field {key!r}")
        data[key] = value
    if isinstance(policy, Limits):
        return Limits(**data)
    from ..contract.check import Policy

    return Policy.model_validate(data)


def selected(code: str, policy: Policy) -> bool:
    """Whether the policy reports ``code`` (ignore wins over select)."""
    if any(code.startswith(p) for p in policy.ignore):
        return False
    return not policy.select or any(code.startswith(p) for p in policy.select)


def fails(finding: Any, policy: Any) -> bool:
    """Whether a finding (plain data, or a model) fails the check under ``policy``."""
    severity = finding["severity"] if isinstance(finding, dict) else finding.severity
    return policy.fail_on != "never" and SEVERITY_RANK[severity] >= SEVERITY_RANK[policy.fail_on]

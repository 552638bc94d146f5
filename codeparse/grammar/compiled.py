"""Compiled grammar patterns, stored with the grammars so that a process does not compile them.

Compiling a grammar's patterns is most of what a fresh process spends before it reads a
line: the ``def`` rule alone takes some 6 ms of ``regex``'s compiler, and a saved archive
needs about fifty patterns.  What a compiler makes of a pattern is data (``re``: a list of
code words; ``regex``: the code ``regex`` pickles a pattern as), so, as ``compileall``
stores bytecode, ``grammars/patterns.json.gz`` stores the compiled form of every pattern
the shipped grammars compile.  :func:`compile_re` and :func:`compile_regex` build a
pattern from it in microseconds, and compile as usual when it has no entry.

The file is JSON (never pickle), keyed by each pattern's full source, and it serves only
the engines that wrote it: the ``re`` part names the Python version and ``_sre``'s code
magic and word size, the ``regex`` part ``regex``'s version and magic; any other engine
ignores that part and compiles.  Both engines validate code before they run it.  A pattern
built from the store equals the one the compiler makes (``re`` compares patterns by their
code; ``tests/test_grammar.py`` checks every entry).  The grammars' sources change only with
the grammar files: ``python scripts/compile_patterns.py`` writes the file again, and a test
fails while it lags behind them.
"""

from __future__ import annotations

import array
import base64
import functools
import gzip
import json
import os
import re
import sys
import zlib
from typing import Any, Optional

__all__ = ["STORE_FILE", "REGEX_VERSION0", "compile_re", "compile_regex", "regex_error", "engine_tags", "known_not_re",
           "recording"]

STORE_FILE = "patterns.json.gz"
REGEX_VERSION0 = 0x2000  # `regex.VERSION0`, without importing `regex` (a test checks it)
FORMAT = 1
_recorded: Optional[dict[str, set]] = None  # sources compiled while `recording` (the writer)


def engine_tags(with_regex: bool = True) -> dict[str, str]:
    """What a stored entry is valid for: this interpreter's ``re`` engine and ``regex``'s."""
    import _sre

    tags = {"re": f"{sys.version_info[0]}.{sys.version_info[1]}/{_sre.MAGIC}/{_sre.CODESIZE}"}
    if with_regex:
        tags["regex"] = f"{_regex_version()}/{getattr(_regex_engine(), 'MAGIC', '')}"
    return tags


def regex_error() -> type:
    """``regex.error`` (imports ``regex``: only asked for when a pattern failed to compile)."""
    return _import_regex().error


def _import_regex() -> Any:
    """The ``regex`` package, imported; its ``_regex`` attribute is set when
    :func:`_regex_engine` loaded that module first (an import finds a module already in
    ``sys.modules`` without making it an attribute of its package)."""
    import regex

    if not hasattr(regex, "_regex") and "regex._regex" in sys.modules:
        regex._regex = sys.modules["regex._regex"]
    return regex


@functools.cache
def _regex_version() -> str:
    """The installed ``regex``'s version: from its ``regex-<version>.dist-info`` folder, without
    importing the package (some 15 ms of Python: its compiler), else from the package."""
    if "regex" not in sys.modules:
        from importlib.util import find_spec

        spec = find_spec("regex")
        if spec is not None and spec.origin:
            folder = os.path.dirname(os.path.dirname(spec.origin))
            try:
                found = [n for n in os.listdir(folder) if n.startswith("regex-") and n.endswith(".dist-info")]
            except OSError:
                found = []
            if len(found) == 1:
                return found[0][len("regex-"):-len(".dist-info")]
    return _import_regex().__version__


@functools.cache
def _regex_engine() -> Any:
    """``regex``'s compiled engine (its C module), which builds a pattern from stored code.

    When the ``regex`` package is not imported yet, the module is loaded alone, under its
    own name (``regex._regex``): the package's Python compiler is then imported only if
    a pattern must be compiled.  A later ``import regex`` finds it in ``sys.modules``."""
    if "regex" not in sys.modules and "regex._regex" not in sys.modules:
        try:
            from importlib.util import find_spec, module_from_spec, spec_from_file_location
            from importlib.machinery import EXTENSION_SUFFIXES

            spec = find_spec("regex")
            folder = os.path.dirname(spec.origin) if spec is not None and spec.origin else None
            for suffix in EXTENSION_SUFFIXES if folder else ():
                path = os.path.join(folder, "_regex" + suffix)
                if os.path.isfile(path):
                    engine_spec = spec_from_file_location("regex._regex", path)
                    module = module_from_spec(engine_spec)
                    engine_spec.loader.exec_module(module)
                    sys.modules["regex._regex"] = module
                    return module
        except (ImportError, OSError, AttributeError):
            pass
    return _import_regex()._regex


@functools.cache
def _store() -> dict[str, Any]:
    """The stored entries usable here: ``{"re": {source: entry}, "regex": {...}}`` (read once)."""
    from .locations import grammar_dir

    none: dict[str, Any] = {"re": {}, "regex": {}, "regex_tag": None, "not_re": set()}
    try:
        with gzip.open(grammar_dir() / STORE_FILE, "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError, EOFError, zlib.error):  # a damaged file (zlib.error: its deflate stream)
        return none
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return none
    tags, entries_re, entries_regex, not_re = (data.get(k) for k in ("engines", "re", "regex", "not_re"))
    if not (isinstance(tags, dict) and isinstance(entries_re, dict) and isinstance(entries_regex, dict)
            and isinstance(not_re, list) and all(isinstance(s, str) for s in not_re)):
        return none
    usable_re = tags.get("re") == engine_tags(with_regex=False)["re"]
    return {"re": entries_re if usable_re else {}, "regex": entries_regex, "regex_tag": tags.get("regex"),
            "not_re": set(not_re)}


@functools.cache
def _regex_usable() -> bool:
    """Whether the stored ``regex`` entries were written by this ``regex`` (imports it)."""
    return _store()["regex_tag"] == engine_tags()["regex"]


def known_not_re(source: str) -> bool:
    """Whether ``source`` is stored as a pattern that ``re`` cannot compile (it needs ``regex``)."""
    return source in _store().get("not_re", ())


def compile_re(source: str) -> re.Pattern:
    """``re.compile(source)``, from the store when it holds the pattern."""
    if _recorded is not None:
        _recorded["re"].add(source)
    entry = _store()["re"].get(source)
    if entry is not None:
        try:
            import _sre

            flags, groups, groupindex, indexgroup, code = entry
            return _sre.compile(source, flags, array.array("I", base64.b64decode(code)).tolist(), groups,
                                groupindex, tuple(indexgroup))
        except Exception:  # noqa: BLE001 - a bad entry is only a slower start: compile it
            pass
    return re.compile(source)


def compile_regex(source: str, flags: int) -> Any:
    """``regex.compile(source, flags)``, from the store when it holds the pattern."""
    if _recorded is not None:
        _recorded["regex"].add(source)
    entry = _store()["regex"].get(source)
    if isinstance(entry, list) and entry and entry[0] == flags and _regex_usable():
        try:
            _regex = _regex_engine()
            (_asked, stored_flags, code, group_index, index_group, named_lists, named_list_indexes, req_offset, req_chars,
             req_flags, group_count) = entry
            pattern = _regex.compile(source, stored_flags, base64.b64decode(code), group_index,
                                     {int(k): v for k, v in index_group}, named_lists, named_list_indexes,
                                     req_offset, tuple(req_chars), req_flags, group_count)
            if "regex" not in sys.modules:  # `regex` tells copyreg how its patterns pickle once imported
                import copyreg

                copyreg.pickle(type(pattern), _pickle_pattern)
            return pattern
        except Exception:  # noqa: BLE001 - a bad entry is only a slower start: compile it
            pass
    return _import_regex().compile(source, flags)


def _pickle_pattern(pattern: Any) -> tuple:
    """How ``regex`` pickles a pattern (``regex._main._pickle``), for patterns built before it is imported."""
    return _regex_engine().compile, pattern._pickled_data


class recording:
    """``with recording() as sources:`` collects every source compiled inside (the writer)."""

    def __enter__(self) -> dict[str, set]:
        global _recorded
        _recorded = {"re": set(), "regex": set()}
        return _recorded

    def __exit__(self, *exc: Any) -> None:
        global _recorded
        _recorded = None



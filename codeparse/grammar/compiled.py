"""Compiled grammar patterns, stored with the grammars so that a process does not compile them.

Compiling a grammar's patterns is most of what a fresh process spends before it reads a
line: the ``def`` rule alone takes some 6 ms of ``regex``'s compiler, and a saved archive
needs about fifty patterns.  What a compiler makes of a pattern is data (``re``: a list of
code words; ``regex``: the code ``regex`` pickles a pattern as), so, as ``compileall``
stores bytecode, ``grammars/patterns.json`` stores the compiled form of every pattern
the shipped grammars compile.  :func:`compile_re` and :func:`compile_regex` build a
pattern from it in microseconds, and compile as usual when it has no entry.

The file is JSON (never pickle) and it serves only the engines that wrote it: the ``re``
part names the Python version, the byte order and ``_sre``'s code magic and word size, the
``regex`` part ``regex``'s version and magic; any other engine ignores that part and
compiles.  A process reads the small index (some 80 kB) and unpacks only the entries it
asks for: each is keyed by checksums and the length of its pattern's source, and its
code is stored deflated after the source itself, which must equal the source asked for
(a checksum that two sources share is a miss, never a wrong pattern).  Both engines
validate code before they run it.  A pattern built from the store equals the one the
compiler makes (``re`` compares patterns by their code; ``tests/test_grammar.py`` checks
every entry).  The grammars' sources change only with the grammar files: ``python
scripts/compile_patterns.py`` writes the file again, and a test fails while it lags behind
them.

The grammar folder's TOML files are stored read, too: ``grammars/compiled/<name>.json``
holds the :func:`checksum` of a file's bytes and what ``tomllib`` reads from it
(:func:`read_toml` gives that when the file's checksum is the one stored, and parses the
file otherwise), so a process parses no TOML; the same script writes them, and a test
checks each against the file.
"""

from __future__ import annotations

import array
import base64
import functools
import json
import os
import re
import sys
import zlib
from pathlib import Path
from typing import Any, Optional

__all__ = ["STORE_FILE", "REGEX_VERSION0", "compile_re", "compile_regex", "regex_error", "engine_tags", "known_not_re",
           "recording", "checksum", "store_key", "pack", "unpack", "read_toml", "TABLES_DIR", "TABLES_FORMAT"]

STORE_FILE = "patterns.json"
REGEX_VERSION0 = 0x2000  # `regex.VERSION0`, without importing `regex` (a test checks it)
FORMAT = 2
TABLES_DIR = "compiled"  # beside the TOML files: <name>.json per <name>.toml
TABLES_FORMAT = 2
_recorded: Optional[dict[str, set]] = None  # sources compiled while `recording` (the writer)


def engine_tags(with_regex: bool = True) -> dict[str, str]:
    """What a stored entry is valid for: this interpreter's ``re`` engine and ``regex``'s."""
    import _sre

    tags = {"re": f"{sys.version_info[0]}.{sys.version_info[1]}/{_sre.MAGIC}/{_sre.CODESIZE}/{sys.byteorder}"}
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


def checksum(data: bytes) -> str:
    """Two checksums and the length of ``data``, as one key (the store's, the operator table index's)."""
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"


def store_key(source: str) -> str:
    """The key of ``source``'s entries in the store: :func:`checksum` of its UTF-8 form."""
    return checksum(source.encode("utf-8", "surrogatepass"))


def pack(source: str, code: bytes) -> str:
    """A stored entry's code field: ``source`` (UTF-8) and then ``code``, deflated, in base64."""
    return base64.b64encode(zlib.compress(source.encode("utf-8", "surrogatepass") + code, 9)).decode("ascii")


def unpack(source: str, field: str) -> Optional[bytes]:
    """The code a field made by :func:`pack` stores for ``source``; None when it was packed
    for another source (or is damaged)."""
    try:
        data = zlib.decompress(base64.b64decode(field))
    except (ValueError, TypeError, zlib.error):
        return None
    head = source.encode("utf-8", "surrogatepass")
    return data[len(head):] if data.startswith(head) else None


@functools.cache
def _store() -> dict[str, Any]:
    """The stored entries usable here: ``{"re": {key: entry}, "regex": {...}}`` keyed by
    :func:`store_key` (read once; each entry's code is unpacked when its pattern is asked for)."""
    from .locations import grammar_dir

    none: dict[str, Any] = {"re": {}, "regex": {}, "regex_tag": None, "not_re": set()}
    try:
        with open(grammar_dir() / STORE_FILE, "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
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
    entry = _store()["re"].get(store_key(source))
    if entry is not None:
        try:
            import _sre

            flags, groups, groupindex, indexgroup, field = entry
            code = unpack(source, field)
            if code is not None:
                return _sre.compile(source, flags, array.array("I", code).tolist(), groups, groupindex,
                                    tuple(indexgroup))
        except Exception:  # noqa: BLE001 - a bad entry is only a slower start: compile it
            pass
    return re.compile(source)


def compile_regex(source: str, flags: int) -> Any:
    """``regex.compile(source, flags)``, from the store when it holds the pattern."""
    if _recorded is not None:
        _recorded["regex"].add(source)
    entry = _store()["regex"].get(store_key(source))
    if isinstance(entry, list) and entry and entry[0] == flags and _regex_usable():
        try:
            _regex = _regex_engine()
            (_asked, stored_flags, field, group_index, index_group, named_lists, named_list_indexes, req_offset,
             req_chars, req_flags, group_count) = entry
            code = unpack(source, field)
            if code is not None:
                pattern = _regex.compile(source, stored_flags, code, group_index,
                                         {int(k): v for k, v in index_group}, named_lists, named_list_indexes,
                                         req_offset, tuple(req_chars), req_flags, group_count)
                if "regex" not in sys.modules:  # `regex` tells copyreg how its patterns pickle once imported
                    import copyreg

                    copyreg.pickle(type(pattern), _pickle_pattern)
                return pattern
        except Exception:  # noqa: BLE001 - a bad entry is only a slower start: compile it
            pass
    return _import_regex().compile(source, flags)


def read_toml(path: Path) -> dict[str, Any]:
    """What ``tomllib.loads`` reads from the text of the TOML file ``path``: from the file's
    compiled form (``compiled/<name>.json`` beside it) when that was made from the same bytes
    (their :func:`checksum`), else parsed.  Raises as reading the text and ``tomllib`` do."""
    with open(path, "rb") as handle:
        raw = handle.read()
    form = _compiled_form(path.parent / TABLES_DIR / (path.stem + ".json"))
    if form is not None and checksum(raw) == form[0]:
        return form[1]
    import tomllib

    # As ``Path.read_text`` would give it: universal newlines.
    return tomllib.loads(raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"))


def _compiled_form(path: Path) -> Optional[tuple[str, dict[str, Any]]]:
    """A compiled TOML file's (checksum, data), or None (no such file, or not one)."""
    try:
        with open(path, "rb") as handle:
            form = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    if not isinstance(form, dict) or form.get("format") != TABLES_FORMAT:
        return None
    key, data = form.get("checksum"), form.get("data")
    return (key, data) if isinstance(key, str) and isinstance(data, dict) else None


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



"""The check's inputs: paths expanded into the files to check (directories walked, excluded
names skipped, nothing followed outside the tree) and standard input read within bounds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional

from ..contract.codes import diagnostic
from ..contract.defaults import DEFAULT_EXCLUDE
from ..contract.records import finding as plain_finding
from ..files.walk import Escaped, not_regular, walk_files


__all__ = ["expand_inputs", "CHECK_CODE_SUFFIXES"]


CHECK_CODE_SUFFIXES = (".code",)

# The `problem` of a file met in a directory walk that is no model file but is named like
# one (`notes.pt`): listed as kind `other`, not an error.
NOT_A_MODEL = "not a model file"
# The note for a file named on the command line that is neither a model file nor TorchScript text.
SKIPPED = "neither a model file nor TorchScript text; skipped"

# The `problem` of a symbolic link met in a walk whose target leaves the walked tree,
# followed by the target: reported (CP342), never read.
OUTSIDE_TREE = "link outside the walked tree: "


def _walk_entry(f: Path, models_only: bool = False) -> Optional[tuple[str, Optional[str]]]:
    """A file met in a directory walk: checked (the bytes decide), listed, or passed over."""
    from ..files.filekind import recognize

    suffix = f.suffix.lower()
    if suffix in CHECK_CODE_SUFFIXES:
        return None if models_only else (str(f), None)
    try:
        kind = recognize(f).kind
    except OSError as exc:
        return (str(f), exc.strerror or str(exc))
    if kind != "other":
        return (str(f), None)
    return (str(f), NOT_A_MODEL) if _model_suffix(f) else None


def _model_suffix(f: Path) -> bool:
    """A name a walk lists whatever the file's bytes are (:func:`_walk_entry`)."""
    from ..files.filekind import MODEL_SUFFIXES

    return f.suffix.lower() in MODEL_SUFFIXES


def matches(path: str, patterns: Iterable[str]) -> bool:
    """Whether a glob matches ``path``: the whole path, or any run of its folders / name
    (``vendor`` matches ``a/vendor/b.pt``; ``*.pkl`` matches ``x/y.pkl``)."""
    import fnmatch

    path = path.replace("\\", "/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if (fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, f"*/{pattern}")
                or fnmatch.fnmatchcase(path, f"{pattern}/*") or fnmatch.fnmatchcase(path, f"*/{pattern}/*")):
            return True
    return False


def _is_code_text(path: Path) -> bool:
    """A named file that is TorchScript text by its bytes (an archive's ``code/`` file, a
    ``.code`` file: ``codeparse scan`` reports that it is no model file)."""
    from ..text.reader import is_torchscript_text

    if path.suffix.lower() in CHECK_CODE_SUFFIXES:
        return True
    try:
        with open(path, "rb") as handle:
            return is_torchscript_text(handle.read(8192))
    except OSError:
        return True  # unreadable: reported (CP301) rather than passed over


def expand_inputs(paths: Iterable[str], models_only: bool = False, exclude: Iterable[str] = (),
                  skip_other: bool = False, untrusted: Iterable[str] = (),
                  notes: Optional[list[str]] = None) -> list[tuple[str, Optional[str]]]:
    """``(path, problem)`` for every input: directories are walked recursively (sorted)
    for model files (recognised by their bytes, :mod:`codeparse.files.filekind`) and ``.code``
    files (not with ``models_only``: ``codeparse scan``); ``-`` is standard input.
    ``untrusted``: the globs of ``exclude`` that come from the checked tree (its
    pyproject.toml): they cannot exclude a model file.  A file named itself is checked when
    a walk would check or list it (a file named like a model that is none is then an
    error), or when its bytes are TorchScript text
    (:func:`codeparse.text.reader.is_torchscript_text`); any other (a config file, a Python
    script) is skipped, with a line in ``notes``.  ``skip_other`` (the pre-commit hook):
    exactly as a walk, without notes."""
    out: list[tuple[str, Optional[str]]] = []
    for raw in paths:
        if raw == "-":
            out.append((raw, None))
            continue
        p = Path(raw)
        if p.is_dir():
            found = []
            skip = [*DEFAULT_EXCLUDE, *exclude]
            for name in walk_files(p):
                relative = os.path.relpath(name, p)
                if matches(relative, skip) or (exclude and matches(str(name), exclude)):
                    trusted = [g for g in skip if g not in untrusted]
                    if matches(relative, trusted) or matches(str(name), trusted) or not _model(name):
                        continue
                if isinstance(name, Escaped):  # reported (CP342), never read
                    found.append((str(name), OUTSIDE_TREE + name.target))
                    continue
                entry = _walk_entry(Path(name), models_only)
                if entry is not None:
                    found.append(entry)
            if not found:
                out.append((raw, "directory holds no archives or .code files"))
            out.extend(found)
        elif p.exists():
            reason = not_regular(p)
            if reason is not None:  # a FIFO or a device: CP301, never opened
                out.append((raw, reason))
                continue
            if p.is_file():  # what a walk passes over is not checked
                if skip_other:  # the pre-commit hook passes every file: exactly as a walk
                    entry = _walk_entry(p, models_only)
                    if entry is not None:
                        out.append((raw, entry[1]))
                    continue
                # A name with a model file's suffix is checked whatever its bytes (a walk
                # lists it either way, and the check says what it is): no need to read it here.
                if (not _model_suffix(p) and _walk_entry(p, models_only) is None
                        and not _is_code_text(p)):
                    if notes is not None:
                        notes.append(f"{raw}: {SKIPPED}")
                    continue
            out.append((raw, None))
        else:
            out.append((raw, "no such file or directory"))
    return out


def _model(name: str) -> bool:
    """A model file (by its bytes), or a link that leaves the tree (reported as such)."""
    if isinstance(name, Escaped):
        return True
    entry = _walk_entry(Path(name), models_only=True)
    return entry is not None and entry[1] is None


def _whole(code: str, path: str, **args: Any) -> dict:
    """A finding (plain data) about a whole input."""
    return plain_finding(diagnostic(code, path, None, **args))


def read_stdin() -> bytes:
    """All of standard input, as bytes (``check -``)."""
    import sys

    stream = sys.stdin
    if stream is None:
        return b""
    buffer = getattr(stream, "buffer", None)
    return buffer.read() if buffer is not None else stream.read().encode("utf-8", "surrogateescape")

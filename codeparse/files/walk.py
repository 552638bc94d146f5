"""Which files an input names: directory walks that stay in their tree, regular files only.

A directory given to ``parse`` or ``check`` is walked without following symbolic links
out of it: a link whose target lies outside the walked tree (``repo/leak.code`` ->
``/etc/passwd``) is *reported* (CP342), never read; a link that stays inside is read
like any file; links to directories are not descended (their files, when inside the
tree, are met through the real folder).  Only regular files are yielded: FIFOs,
sockets and devices met in a walk are passed over, and an explicit path that is not a
regular file is refused (:func:`not_regular`, CP301), since opening a FIFO blocks and
a device never ends.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Iterator, Optional, Union

__all__ = ["walk_files", "not_regular", "Escaped", "paths_of"]


class Escaped(str):
    """A path met in a walk: a symbolic link whose target (``.target``) leaves the tree."""

    target: str

    def __new__(cls, path: str, target: str) -> "Escaped":
        out = super().__new__(cls, path)
        out.target = target
        return out


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def walk_files(root: Union[str, os.PathLike]) -> Iterator[str]:
    """Every regular file under ``root`` (sorted by path), and an :class:`Escaped` for each
    symbolic link (to a file or a folder) whose target lies outside ``root``."""
    top = os.fspath(root)
    real_top = os.path.realpath(top)
    found: list[str] = []
    for folder, dirs, files in os.walk(top, followlinks=False):
        dirs.sort()
        for name in dirs:
            path = os.path.join(folder, name)
            if os.path.islink(path):  # os.walk does not descend into it
                target = os.path.realpath(path)
                if not _inside(target, real_top):
                    found.append(Escaped(path, target))
        for name in files:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                target = os.path.realpath(path)
                if not _inside(target, real_top):
                    found.append(Escaped(path, target))
                    continue
                try:
                    mode = os.stat(path).st_mode
                except OSError:
                    continue  # a dangling link
            if stat.S_ISREG(mode):
                found.append(path)
    found.sort()
    yield from found


def not_regular(path: Union[str, os.PathLike]) -> Optional[str]:
    """Why an explicit path cannot be read as a file (``not a regular file (a FIFO)``), or
    None for a regular file, a directory or a missing path (those have their own reasons)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "not a file")
    return f"not a regular file ({kind})"


def paths_of(paths: Any, what: str) -> list[str]:
    """``paths`` as a list of path strings: one ``str``/``PathLike`` is one path (never a
    sequence of characters); otherwise an iterable of them."""
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    if isinstance(paths, (bytes, bytearray)) or not hasattr(paths, "__iter__"):
        raise TypeError(f"{what} expects a path (str or os.PathLike) or an iterable of paths, "
                        f"not {type(paths).__name__}")
    out = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"{what} expects paths as str or os.PathLike, not {type(p).__name__}")
        out.append(os.fspath(p))
    return out

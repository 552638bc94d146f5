"""The one exception an input raises when it cannot be read at all."""

from __future__ import annotations

from typing import TYPE_CHECKING


__all__ = ["InputError"]


class InputError(Exception):
    """An input could not be read at all (missing, binary, a directory without code).

    ``code`` is its stable code: ``CP301`` unreadable, ``CP302`` binary.
    """

    def __init__(self, path: str, message: str, code: str = "CP301"):
        super().__init__(f"{path}: {code} {message}")
        self.path = path
        self.message = message
        self.code = code

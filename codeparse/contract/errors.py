"""The one exception an input raises when it cannot be read at all, and the one a call
raises when an optional dependency is not installed."""

from __future__ import annotations

from typing import TYPE_CHECKING


__all__ = ["InputError", "MissingExtra", "missing_extra", "EXTRAS"]

# The optional dependencies by the module a missing one is imported as, and the extra
# (pyproject.toml's [project.optional-dependencies]) that installs it.
EXTRAS = {"torch": "torch", "jinja2": "report", "markupsafe": "report", "pygments": "report",
          "dask": "scale", "distributed": "scale", "pyarrow": "scale"}


class InputError(Exception):
    """An input could not be read at all (missing, binary, a directory without code).

    ``code`` is its stable code: ``CP301`` unreadable, ``CP302`` binary.
    """

    def __init__(self, path: str, message: str, code: str = "CP301"):
        super().__init__(f"{path}: {code} {message}")
        self.path = path
        self.message = message
        self.code = code


class MissingExtra(ImportError):
    """An optional dependency is not installed: the message names the extra and the
    command that installs it (``pip install 'codeparse[report]'``)."""

    def __init__(self, extra: str, module: str, what: str = "this"):
        self.extra = extra
        super().__init__(f"{what} needs the '{extra}' extra, which is not installed (no module named "
                         f"'{module}'); install it with: pip install 'codeparse[{extra}]'", name=module)


def missing_extra(exc: BaseException, what: str = "this") -> "MissingExtra | None":
    """``exc`` as a :class:`MissingExtra` when it is the import of an optional dependency
    failing, else None."""
    if isinstance(exc, MissingExtra):
        return exc
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".", 1)[0]
        if top in EXTRAS:
            return MissingExtra(EXTRAS[top], top, what)
    return None

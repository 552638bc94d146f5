"""The command line: ``codeparse`` and its subcommands, thin over the library.

Takes argv.  Gives exit codes (0 clean, 1 findings, 2 usage or input error) and output
written by the renderers: ``app`` (the group and ``main``, ``parse``, ``grammars``, ``schema``),
``check`` (``check``, ``scan``, ``rule``), ``diff`` (``diff``, ``capture``, ``ops``, ``which``) and ``report``; ``output``
opens the output file or standard output for all of them; ``reference`` is the group with every
command registered, for documentation tools.  Each command module imports its heavy
dependencies inside the command, so ``codeparse --help`` starts fast.
"""

__all__ = ["main"]


def __getattr__(name: str):
    if name == "main":
        from .app import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

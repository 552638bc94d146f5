"""The ``codeparse`` command group with every command registered, for documentation tools.

The console script's group (``codeparse.cli.app.cli``) registers the commands of the other
modules of this package when one is asked for (click's lazy subcommands: ``list_commands``
names them all, ``get_command`` loads one), so its ``commands`` holds only those asked for
so far.  A tool that reads a group's ``commands`` whole, as mkdocs-click does for the
site's CLI reference (``:module: codeparse.cli.reference``, ``:command: cli``), reads this
module's ``cli``: the same group, every command registered when this module is imported.
"""

from __future__ import annotations

from .app import create_parser

__all__ = ["cli"]

cli = create_parser()

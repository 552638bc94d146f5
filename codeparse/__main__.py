"""``python -m codeparse``: the command line (:func:`codeparse.cli.main`)."""

import sys

from .cli.app import main

sys.exit(main())

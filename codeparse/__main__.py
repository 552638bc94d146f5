"""``python -m codeparse``: the command line (:func:`codeparse.cli.main`)."""

import gc
import sys

from .gate.budget import WORKER_THRESHOLDS

gc.set_threshold(*WORKER_THRESHOLDS)  # before the command line's imports: see codeparse.cli.app.main
from .cli.app import main  # noqa: E402

sys.exit(main())

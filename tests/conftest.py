"""Shared pytest options (markers are registered in pyproject.toml) and hypothesis profiles.

Property tests run derandomized unless asked otherwise: the same examples on every run
(CI sets ``CI=true``; a fresh clone without it gets the same profile), so a red run is a
change's doing, never the draw's.  ``HYPOTHESIS_PROFILE=explore`` searches with random
draws and hypothesis' example database, to look for new failures on purpose.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/golden/ from the current parser output (then review the diff)",
    )

"""Property tests draw the same examples on every run, in CI (CI=true) and in a fresh clone."""

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

_PROBE = ("import sys; sys.path.insert(0, sys.argv[1]); import conftest; from hypothesis import settings; "
          "print(settings.default.derandomize, settings.default.database is None)")


def _profile(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    done = subprocess.run([sys.executable, "-c", _PROBE, str(TESTS)], env={**clean, **env}, capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


def test_ci_and_a_fresh_clone_run_derandomized_and_explore_is_random():
    assert _profile(CI="true") == "True True"
    assert _profile() == "True True"
    assert _profile(HYPOTHESIS_PROFILE="explore") == "False False"

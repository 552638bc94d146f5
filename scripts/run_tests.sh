#!/usr/bin/env bash
# The whole test suite, the browser tests of `codeparse report` included.
#
# Those tests drive the operating system's Chromium (Debian's `chromium` package, at
# /usr/bin/chromium) through Playwright; Playwright's own browser download is never used.
# When chromium is missing it is installed here with apt-get (as root), so that no
# browser test is ever skipped.  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
CHROMIUM="${CODEPARSE_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "run_tests.sh: $CHROMIUM is missing; install it as root: apt-get install -y chromium" >&2
    exit 1
  fi
  echo "run_tests.sh: installing chromium with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
python -m pytest -q tests/ "$@"

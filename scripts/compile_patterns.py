"""Write ``grammars/patterns.json.gz``: the compiled form of every pattern the grammars compile.

    python scripts/compile_patterns.py

Run it after changing a grammar file (``tests/test_grammar.py`` fails while the stored
patterns lag behind the grammars).  It stores what this interpreter's ``re`` and the
installed ``regex`` make of each pattern; see :mod:`codeparse.patterns`.  (``regex``
orders some sets of characters differently from one process to the next, so the bytes
written may differ from run to run for the same patterns.)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codeparse.patterns import STORE_FILE, write  # noqa: E402 - the checkout first on the path


def main() -> int:
    path = ROOT / "grammars" / STORE_FILE
    write(path)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

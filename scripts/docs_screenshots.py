"""Regenerate the README's pictures of the documentation site.

    python scripts/docs_screenshots.py [--out-dir docs]

It builds the site (``mkdocs build --strict``) into a temporary folder, opens two of its
pages in headless Chromium (the OS's ``/usr/bin/chromium``, driven by Playwright, as
``scripts/readme_screenshot.py`` does) and saves ``docs/site-rule.png`` (the page of
finding code CP401, generated from ``grammars/rules.toml``) and ``docs/site-export.png``
(the guide "Migrating to torch.export").  Each picture must stay under 200 KB.  Look at the
pictures before committing them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from readme_screenshot import CHROMIUM, FLAGS, LIMIT  # noqa: E402

# picture -> (page of the built site, element scrolled to the top of the view or None)
SHOTS = {
    "site-rule.png": ("reference/rules/cp401/index.html", None),
    "site-export.png": ("export/index.html", None),
}
VIEWPORT = {"width": 1400, "height": 900}  # wide enough for the navigation and the contents


def build(site: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                    "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                   cwd=ROOT, env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=str(ROOT / "docs"))
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        build(site)
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                str(Path(tmp) / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
                viewport=VIEWPORT,
            )
            page = context.new_page()
            for name, (path, anchor) in SHOTS.items():
                page.goto((site / path).as_uri())
                page.wait_for_load_state("load")
                if anchor:
                    page.locator(anchor).first.evaluate("e => e.scrollIntoView({block: 'start'})")
                out = Path(args.out_dir) / name
                page.screenshot(path=str(out))
                size = out.stat().st_size
                print(f"wrote {out} ({size // 1024} KB)")
                if size > LIMIT:
                    print(f"{out} is over {LIMIT // 1024} KB", file=sys.stderr)
                    status = 1
            context.close()
    return status


if __name__ == "__main__":
    sys.exit(main())

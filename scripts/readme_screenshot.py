"""Regenerate docs/report.png, the README's picture of `codeparse report`.

    python scripts/readme_screenshot.py [--out docs/report.png]

It writes the report of the `CustomModel` fixture archive, opens it in headless
Chromium (the OS's `/usr/bin/chromium`, driven by Playwright; Playwright's own browser
download is never used), opens the model's code file, focuses the `if` that branches on
tensor values so that its details show, and saves a screenshot of that part of the
page.  The README asks for at most 200 KB; the script fails if the picture is larger.
Look at the picture before committing it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
LIMIT = 200 * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "report.png"))
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from codeparse.report.page import write_report

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "custom_model.html"
        write_report(report, ["fixtures/archives/custom_model.script.pt"])
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                str(Path(tmp) / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
                viewport={"width": 1100, "height": 980},
            )
            page = context.new_page()
            page.goto(report.as_uri())
            page.wait_for_function("document.body.dataset.ready === '1'")
            page.locator(".legend").evaluate("d => d.open = false")
            details = page.locator("details.file").first
            details.locator("> summary").click()
            page.wait_for_selector("details.file[data-rendered] .line.mark")
            line = details.locator(".line.mark", has=page.locator(".src", has_text="if _2:"))
            details.locator("> summary").evaluate("e => e.scrollIntoView({block: 'start'})")
            page.evaluate("window.scrollBy(0, -8)")
            line.evaluate("e => e.focus({preventScroll: true})")  # focus shows the details, as hover does
            page.screenshot(path=args.out)
            context.close()
    size = Path(args.out).stat().st_size
    print(f"wrote {args.out} ({size // 1024} KB)")
    if size > LIMIT:
        print(f"{args.out} is over {LIMIT // 1024} KB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

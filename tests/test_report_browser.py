"""`codeparse report` pages opened in a real browser: what a person sees.

Headless Chromium from the OS package manager (Debian's ``chromium``, at
``/usr/bin/chromium``), driven by Playwright for Python through pytest-playwright's
``browser_type`` fixture.  Playwright's own browser download is never used.  Each test
run gets a fresh ``--user-data-dir``.  ``scripts/run_tests.sh`` (the README's test
command) installs chromium when it is missing, so none of these tests is skipped.

Every page is watched: any console error, page error or request for anything but the
report file itself fails the test.  Screenshots go to a temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from codeparse.report.page import write_report

ROOT = Path(__file__).resolve().parent.parent
ARCHIVES = ROOT / "fixtures" / "archives"
TEXT = ROOT / "fixtures" / "text"
CHROMIUM = os.environ.get("CODEPARSE_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]

# The kind colours of report.css, as the browser computes them.
RED = "rgb(183, 28, 28)"  # tensor_value
BLUE = "rgb(26, 71, 168)"  # attribute


@pytest.fixture(scope="module")
def context(browser_type, tmp_path_factory):
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: run the tests with scripts/run_tests.sh (it installs chromium)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    ctx = browser_type.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS,  # the profile folder is passed as --user-data-dir
        viewport={"width": 1280, "height": 900},
    )
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("report-screenshots")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Reports written once per module, by name."""
    out = tmp_path_factory.mktemp("reports")
    made = {}

    def make(name, *paths, **options):
        if name not in made:
            target = out / f"{name}.html"
            write_report(target, [str(p) for p in paths], **options)
            made[name] = target
        return made[name]

    return make


class Watched:
    """A page whose console errors and requests are recorded."""

    def __init__(self, page, url):
        self.page, self.url = page, url
        self.problems: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))

    def check(self):
        assert self.problems == []
        assert self.requests == [self.url], "the page asked for something besides itself"


@pytest.fixture
def open_report(context):
    opened: list[Watched] = []

    def go(path: Path) -> Watched:
        page = context.new_page()
        url = path.resolve().as_uri()
        watched = Watched(page, url)
        page.goto(url)
        page.wait_for_function("document.body.dataset.ready === '1'")
        opened.append(watched)
        return watched

    yield go
    for w in opened:
        w.check()
        w.page.close()


def open_file(page, name: str):
    """Open the code view of the file whose name ends with ``name``; return its details."""
    details = page.locator("details.file", has=page.locator(".fname", has_text=re.compile(re.escape(name) + "$")))
    if not details.evaluate("d => d.open"):
        details.locator("> summary").click()
    expect(details).to_have_attribute("data-rendered", "1")  # the toggle event renders it
    return details


def test_if_lines_carry_kind_label_and_colour(pages, open_report, shots):
    report = pages("custom_model", ARCHIVES / "custom_model.script.pt")
    w = open_report(report)
    page = w.page
    details = open_file(page, "code/__torch__.py")
    ifs = details.locator(".line.mark[data-what=if]")
    assert ifs.count() == 3
    first = details.locator(".line.mark", has=page.locator(".src", has_text="if _2:"))
    assert first.locator("> .badge").inner_text() == "if · tensor value"
    assert first.evaluate("e => getComputedStyle(e).borderLeftColor") == RED
    assert first.locator("> .badge").evaluate("e => getComputedStyle(e).backgroundColor") == RED
    second = details.locator(".line.mark", has=page.locator(".src", has_text="if torch.eq(branch_testing, True):"))
    assert second.locator("> .badge").inner_text() == "if · attribute"
    assert second.evaluate("e => getComputedStyle(e).borderLeftColor") == BLUE
    # The legend names every colour in words too.
    legend = page.locator(".legend").inner_text()
    for label in ("if · tensor value", "if · tensor shape", "if · argument", "if · attribute", "if · runtime",
                  "if · unknown", "if · constant", "for loop"):
        assert label in legend
    page.screenshot(path=str(shots / "kinds.png"))


def test_tooltip_shows_resolved_condition_sources_and_origin_line(pages, open_report, shots):
    w = open_report(pages("custom_model", ARCHIVES / "custom_model.script.pt"))
    page = w.page
    details = open_file(page, "code/__torch__.py")
    line = details.locator(".line.mark", has=page.locator(".src", has_text="if _2:"))
    tip = line.locator(".tip")
    assert not tip.is_visible()
    line.hover()
    assert tip.is_visible()
    text = tip.inner_text()
    assert "bool(torch.eq(torch.remainder(torch.select(" in text  # resolved through _0, _1, _2
    assert "x (tensor_value, Tensor)" in text
    assert "fixtures/models.py:65" in text
    assert "if x[0][0][0][0] % 2 == 0:" in text  # the original line, from .debug_pkl
    assert "CP201" in text
    page.screenshot(path=str(shots / "tooltip-hover.png"))
    # Focus shows it too (keyboard users).
    page.mouse.move(0, 0)
    other = details.locator(".line.mark", has=page.locator(".src", has_text="branch_testing, True"))
    other.focus()
    other_tip = other.locator(".tip")
    assert other_tip.is_visible()
    assert "self.branch_testing (attribute, bool)" in other_tip.inner_text()
    assert "fixtures/models.py:67" in other_tip.inner_text()


def test_code_views_render_lazily(pages, open_report):
    w = open_report(pages("custom_model", ARCHIVES / "custom_model.script.pt"))
    page = w.page
    files = page.locator("details.file")
    assert files.count() == 11
    assert page.locator("script[type='text/x-codeparse-view']").count() == 11
    assert page.locator("main .line").count() == 0  # nothing rendered before a file is opened
    open_file(page, "code/__torch__.py")
    expect(page.locator("main .line")).to_have_count(49)
    assert page.locator("details.file[data-rendered]").count() == 1


def test_module_expands_on_click(pages, open_report, shots):
    w = open_report(pages("custom_model", ARCHIVES / "custom_model.script.pt"))
    page = w.page
    layer2 = page.locator(".tree details.mod", has=page.locator("> summary .mod-name", has_text=re.compile("^layer2$")))
    assert layer2.count() == 1
    body = layer2.locator("> .mod-body")
    assert not body.is_visible()
    layer2.locator("> summary").click()
    assert body.is_visible()
    names = body.locator("> details.mod > summary .mod-name").all_inner_texts()
    assert names == ["0", "1", "2"]
    assert "BatchNorm2d" in body.inner_text()
    assert "Sequential" in layer2.locator("> summary").inner_text()
    page.screenshot(path=str(shots / "tree.png"))


def test_filters_and_search_narrow_the_findings_table(pages, open_report, shots):
    w = open_report(pages("custom_model", ARCHIVES / "custom_model.script.pt"))
    page = w.page
    section = page.locator(".findings").first
    rows = section.locator("tr.frow")
    total = rows.count()
    assert total == 19

    def visible():
        return section.locator("tr.frow:not([hidden])").count()

    section.locator(".f-severity").select_option("warning")
    assert visible() == 1
    assert "CP201" in section.locator("tr.frow:not([hidden])").inner_text()
    assert section.locator(".count").inner_text() == "1 of 19"
    section.locator(".f-severity").select_option("")
    section.locator(".f-code").select_option("CP204")
    assert visible() == 2  # self.branch_testing, self.condition_testing (self.training is CP203)
    section.locator(".f-code").select_option("")
    section.locator(".f-file").select_option("custom_model.script/code/__torch__.py")
    assert visible() == 3
    section.locator(".f-file").select_option("")
    section.locator(".f-search").fill("condition_testing")
    assert visible() == 1
    section.locator(".f-search").fill("")
    section.locator(".f-reachable").check()
    reachable = [r for r in section.locator("tr.frow").all() if r.get_attribute("data-reachable") == "yes"]
    assert visible() == len(reachable)
    section.locator(".f-reachable").uncheck()
    assert visible() == total
    page.screenshot(path=str(shots / "findings.png"))


def test_reachable_only_hides_findings_forward_never_reaches(pages, open_report):
    page = open_report(pages("exported", ARCHIVES / "exported_method.script.pt")).page
    section = page.locator(".findings").first
    rows = section.locator("tr.frow")
    assert rows.count() == 3
    unreached = section.locator("tr.frow", has=page.locator(".unreached"))
    assert unreached.count() == 1 and "CP205" in unreached.inner_text()
    section.locator(".f-reachable").check()
    assert section.locator("tr.frow:not([hidden])").count() == 2
    assert not unreached.is_visible()
    assert section.locator(".count").inner_text() == "2 of 3"


def test_finding_codes_link_to_their_explanation(pages, open_report):
    page = open_report(pages("custom_model", ARCHIVES / "custom_model.script.pt")).page
    row = page.locator("tr.frow", has=page.locator("td", has_text="CP201"))
    row.locator("a.to-rule").click()
    rule = page.locator("#rule-cp201")
    expect(rule).to_be_focused()
    text = rule.inner_text()
    assert "tensor_value_branch" in text and "Why it matters." in text and "How to fix." in text
    # One explanation per code on the page, each once.
    codes = sorted(set(page.locator("tr.frow").evaluate_all("rows => rows.map(r => r.dataset.code)")))
    assert page.locator(".rule h3").evaluate_all("hs => hs.map(h => h.firstChild.textContent.trim())") == codes


def test_links_from_findings_to_lines_and_back(pages, open_report):
    w = open_report(pages("custom_model", ARCHIVES / "custom_model.script.pt"))
    page = w.page
    row = page.locator("tr.frow", has=page.locator("td", has_text="CP201"))
    row.locator("a.to-line").click()
    expect(page.locator(".line.target")).to_be_focused()
    focused = page.evaluate("document.activeElement.id")
    assert re.fullmatch(r"L-a0f\d+-22", focused)
    line = page.locator(f"[id='{focused}']")
    assert line.is_visible()
    assert "if _2:" in line.locator(".src").inner_text()
    # ...and back: the finding link in the line's details selects the table row.
    line.locator("a.to-finding").click()
    expect(row).to_be_focused()
    expect(row).to_have_class(re.compile(r"\btarget\b"))


def test_keyboard_reaches_every_if(pages, open_report):
    w = open_report(pages("cond_argument", ARCHIVES / "cond_argument.script.pt"))
    page = w.page
    for details in page.locator("details.file").all():
        if not details.evaluate("d => d.open"):
            details.locator("> summary").click()
        expect(details).to_have_attribute("data-rendered", "1")
    wanted = set(page.locator(".line.mark[data-what=if]").evaluate_all("els => els.map(e => e.id)"))
    assert wanted
    page.locator("h1").click()
    reached: set[str] = set()
    for _ in range(400):
        page.keyboard.press("Tab")
        current = page.evaluate("document.activeElement.id")
        reached.add(current)
        if wanted <= reached:
            break
    assert wanted <= reached
    # Focus shows the details of the if reached by keyboard.
    last = page.evaluate("document.activeElement.id")
    assert page.locator(f"[id='{last}'] > .tip").is_visible()


def test_script_and_trace_side_by_side_mark_the_frozen_branch(pages, open_report, shots):
    report = pages("pair", script=str(TEXT / "custom_model" / "script.code"),
                   trace=str(TEXT / "custom_model" / "trace.code"))
    w = open_report(report)
    page = w.page
    pair = page.locator("section.pair")
    script = pair.locator(".col.script")
    trace = pair.locator(".col.trace")
    assert script.count() == 1 and trace.count() == 1
    frozen = script.locator(".line.mark", has=page.locator(".src", has_text="if _2:"))
    assert frozen.locator("> .badge").inner_text() == "if · tensor value · frozen (else)"
    assert "d-frozen" in frozen.get_attribute("class")
    frozen.hover()
    assert "missing from the trace: self.custom_layer.forward" in frozen.locator(".tip").inner_text()
    kept_then = script.locator(".line.mark", has=page.locator(".src", has_text="branch_testing, True"))
    assert kept_then.locator("> .badge").inner_text() == "if · attribute · frozen (then)"
    lost = script.locator(".line.lost")
    assert lost.count() == 3
    assert "self.custom_layer2.forward" in " ".join(lost.all_inner_texts())
    assert lost.first.evaluate("e => getComputedStyle(e).textDecorationLine") == "line-through"
    assert trace.locator(".line.evidence").count() >= 2
    page.screenshot(path=str(shots / "pair.png"), full_page=True)


@pytest.mark.parametrize("case, label, css, note", [
    ("diff_literal_tie", "if · attribute · ambiguous", "d-ambiguous",
     "reason: tie; alignment cost with the if forced to then 310, to else 310"),
    ("known_nested_else_then", "if · attribute · not run", "d-notrun", "reason: not_run"),
], ids=["tie", "not_run"])
def test_side_by_side_labels_ambiguous_and_not_run_ifs(case, label, css, note, pages, open_report):
    report = pages(case, script=str(TEXT / case / "script.code"), trace=str(TEXT / case / "trace.code"))
    page = open_report(report).page
    script = page.locator("section.pair .col.script").first
    mark = script.locator(".line.mark", has=page.locator("> .badge", has_text=label))
    assert mark.count() == 1
    assert css in mark.get_attribute("class")
    mark.focus()
    assert note in mark.locator(".tip").inner_text()


def test_side_by_side_highlights_an_unrolled_loop(pages, open_report):
    report = pages("loop", script=str(ARCHIVES / "known_range_loop.script.pt"),
                   trace=str(ARCHIVES / "known_range_loop.trace.pt"))
    page = open_report(report).page
    script = page.locator("section.pair .col.script").first
    loop = script.locator(".line.unrolled")
    assert loop.count() == 1
    assert "for i in range(torch.size(x, 0)):" in loop.locator(".src").inner_text()
    assert loop.locator(".note").inner_text() == "unrolled: the trace repeats its body 5 times"
    assert loop.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 241, 201)"
    trace = page.locator("section.pair .col.trace").first
    # The first pass of the body in the trace (the diff's evidence: select, cell, add, tanh).
    numbers = trace.locator(".line.evidence .ln").all_inner_texts()
    assert numbers == ["11", "12", "13"]


def test_export_target_shows_verdict_and_the_blocking_loop(pages, open_report):
    report = pages("export", ARCHIVES / "export_while_value.script.pt", policy=_export_policy())
    page = open_report(report).page
    verdict = page.locator("tr.export")
    assert verdict.locator(".verdict").inner_text() == "blocked"
    assert "fixtures/models_export.py:331" in verdict.inner_text()
    loop = page.locator(".line.mark[data-what=while]")  # the single file is shown open
    assert loop.locator("> .badge").inner_text() == "while · tensor value"
    assert loop.evaluate("e => getComputedStyle(e).borderLeftColor") == RED
    loop.focus()
    tip = loop.locator(".tip").inner_text()
    assert "CP401" in tip and "fixtures/models_export.py:331" in tip


def _export_policy():
    from codeparse.contract.check import Policy

    return Policy(target="export")


def test_input_text_is_escaped_not_run(tmp_path, open_report):
    hostile = tmp_path / "hostile.code"
    hostile.write_text(
        'def forward(self,\n    x: Tensor,\n    s: str) -> Tensor:\n'
        '  if torch.eq(s, "</script><img src=x onerror=alert(1)><b id=pwned>"):\n'
        '    _0 = x\n  else:\n    _0 = x\n  return _0\n', encoding="utf-8")
    report = tmp_path / "hostile.html"
    write_report(report, [str(hostile)])
    html = report.read_text(encoding="utf-8")
    assert "<img src=x" not in html and "<b id=pwned>" not in html
    w = open_report(report)
    page = w.page
    assert page.locator("#pwned").count() == 0
    assert page.locator("main img").count() == 0
    line = page.locator(".line.mark").first  # a single file is shown open
    assert '"</script><img src=x onerror=alert(1)><b id=pwned>"' in line.locator(".src").inner_text()
    line.focus()
    assert "<b id=pwned>" in line.locator(".tip").inner_text()


def test_directory_report_has_an_index_section_per_archive(tmp_path, open_report):
    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("custom_model.script.pt", "cond_argument.script.pt", "params.script.pt"):
        shutil.copy(ARCHIVES / name, folder / name)
    (folder / "broken.pt").write_bytes(b"PK\x03\x04 not really a zip")
    report = tmp_path / "dir.html"
    assert write_report(report, [str(folder)]) == 2  # one input is unreadable; the page says so
    w = open_report(report)
    page = w.page
    index = page.locator("nav.index")
    links = index.locator("a")
    assert links.count() == 4
    assert [s.get_attribute("id") for s in page.locator("section.input").all()] == ["a0", "a1", "a2", "a3"]
    assert "unreadable" in index.locator("tr", has=page.locator("a", has_text="broken.pt")).inner_text()
    index.locator("a", has_text="params.script.pt").click()
    expect(page).to_have_url(re.compile("#a3$"))
    section = page.locator("section#a3")
    assert "params.script.pt" in section.locator("h2").inner_text()
    assert "CP305 the zip archive is damaged" in page.locator("section#a0 .error").inner_text()

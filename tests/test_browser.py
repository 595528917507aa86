"""The pages as their readers see them: Debian's Chromium, headless, driven by Playwright (no browser
download: `executable_path` is the system's), at a phone's 390x844 and a laptop's 1280x800.

Each page: every number of the JSON output is in the rendered text; no element sticks out of the page's
width (wide tables scroll inside their own box); no network request; no console error; the site's links
resolve. Screenshots go to the test's tmp dir.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from htmldata import HOSTILE_GPU, as_written, json_rows, missing_numbers, seed_sweep, write_bundle

CHROMIUM = os.environ.get("TFCNNWRAP_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
VIEWPORTS = [(390, 844), (1280, 800)]

pytestmark = [pytest.mark.slow, pytest.mark.browser]

# Elements that stick out of the page, not counting those inside a box that scrolls or clips (a wide table's
# .scroll box, an SVG).
OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > width) out.push('page ' + document.documentElement.scrollWidth);
  for (const el of document.body.querySelectorAll('*')) {
    let p = el.parentElement, boxed = false;
    while (p && p !== document.body) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') { boxed = true; break; }
      p = p.parentElement;
    }
    const r = el.getBoundingClientRect();
    if (!boxed && r.width > 0 && (r.right > width + 0.5 || r.left < -0.5))
      out.push(el.tagName + ' ' + el.className + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
  }
  return out.slice(0, 10);
}"""


def _missing(why):
    """Skip, saying why; in CI (TFCNNWRAP_BROWSER=1, .ci/run) fail: the browser tests must have run there."""
    if os.environ.get("TFCNNWRAP_BROWSER") == "1":
        pytest.fail(why + " (TFCNNWRAP_BROWSER=1 asks for the browser tests)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright import sync_api
    except ImportError:
        _missing("Playwright (Python) is not installed: pip install playwright")
    if not Path(CHROMIUM).is_file():
        _missing("no Chromium at %s (Debian: apt-get install chromium; or set TFCNNWRAP_CHROMIUM)" % CHROMIUM)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The report, an A/B page of two candidates, and a site (index, GPU pages), with their JSON."""
    from conftest import run_cli

    root = tmp_path_factory.mktemp("pages")
    seed = seed_sweep(root / "seed", logs=True)
    b, c = seed_sweep(root / "b", seed=2), seed_sweep(root / "c", 1.04, seed=3)
    d = seed_sweep(root / "d", 0.96, seed=4, gpus=[HOSTILE_GPU])
    bundles = root / "bundles"
    bundles.mkdir()
    write_bundle(bundles / "x.tfcw.json.gz", gpu="GeForce RTX 2080 Ti with a long name to wrap", factor=1.4)

    def ok(*args):
        result = run_cli(*args)
        assert result.returncode == 0, result
        return result.stdout

    ok("report", seed, "--format", "html", "--out", seed / "report.html")
    ok("compare", b, c, d, "--format", "html", "--out", root / "ab.html")
    ok("site", seed, b, c, d, bundles, "--out", root / "site")
    gpu = next(p for p in (root / "site" / "gpu").glob("geforce-rtx-2070-*.html"))
    return {
        "report": (seed / "report.html", json.loads(ok("report", seed, "--format", "json"))),
        "ab": (root / "ab.html", json.loads(ok("compare", b, c, d, "--format", "json"))),
        "index": (root / "site" / "index.html", None),
        "gpu": (gpu, [json.loads(ok("report", s, "--format", "json")) for s in (seed, b, c)]),
    }


def _open(browser, path, viewport, bypass_csp=False):
    # bypass_csp: axe-core is injected as a script, which the pages' own policy (no scripts) refuses
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]}, bypass_csp=bypass_csp)
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, requests, errors


def _open_disclosures(page):
    """What a reader does to see everything: open every <details> (more columns, the run charts)."""
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["390", "1280"])
@pytest.mark.parametrize("name", ["report", "ab", "index", "gpu"])
def test_page_in_chromium(browser, pages, name, viewport, tmp_path):
    path, payload = pages[name]
    page, requests, errors = _open(browser, path, viewport)
    try:
        _open_disclosures(page)
        text = page.inner_text("body")
        page.screenshot(path=str(tmp_path / ("%s-%d.png" % (name, viewport[0]))), full_page=True)
        assert page.evaluate(OVERFLOW_JS) == []
        assert [u for u in requests if u != path.as_uri()] == []
        assert errors == []
        if name in ("report", "ab"):
            assert not missing_numbers(payload, text)
        elif name == "gpu":  # every result's mean of this GPU
            means = [as_written(r["mean"]) for p in payload for r in json_rows(p)]
            assert [m for m in means if m not in text] == []
        if name in ("index", "gpu"):
            _assert_links_resolve(page, path)
    finally:
        page.close()


def _assert_links_resolve(page, path):
    """Every link of a site page leads to a page of the site that opens (file:// within the site)."""
    site = path.parent if path.name == "index.html" else path.parent.parent
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    assert hrefs
    for href in sorted(set(hrefs)):
        url = urlparse(href)
        assert url.scheme == "file", href
        target = Path(unquote(url.path))
        assert target.is_file() and site.resolve() in target.resolve().parents, href
    response = page.goto(sorted(set(hrefs))[-1])
    assert response is None or response.ok


def test_dark_scheme_and_print(browser, pages, tmp_path):
    """Colours follow the reader's dark setting; print drops the navigation and lets wide tables run out."""
    path, _ = pages["index"]
    page = browser.new_page(viewport={"width": 390, "height": 844}, color_scheme="dark")
    try:
        page.goto(path.as_uri())
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(21, 24, 28)"
        page.screenshot(path=str(tmp_path / "index-dark-390.png"), full_page=True)
        page.emulate_media(media="print", color_scheme="dark")
        assert page.evaluate("getComputedStyle(document.querySelector('nav')).display") == "none"
        assert page.evaluate("getComputedStyle(document.querySelector('.scroll')).overflowX") == "visible"
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    finally:
        page.close()


# -- what a reader came for, on any screen (issue 37) ----------------------------------------------------------

# For each element matched: is it inside the viewport's width, not clipped by its own box or a scrolling box
# around it, and does nothing on the page scroll sideways?
ON_SCREEN_JS = """(selector) => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > width) out.push('page scrolls sideways');
  for (const box of document.querySelectorAll('.scroll'))
    if (box.scrollWidth > box.clientWidth + 1) out.push('a table box scrolls sideways: ' + box.scrollWidth);
  const found = document.querySelectorAll(selector);
  for (const el of found) {
    const r = el.getBoundingClientRect();
    if (r.left < -0.5 || r.right > width + 0.5) out.push('off screen: ' + el.innerText + ' ' + r.left + '..' + r.right);
    if (el.scrollWidth > el.clientWidth + 1) out.push('clipped: ' + el.innerText);
  }
  return {problems: out.slice(0, 10), count: found.length};
}"""


@pytest.fixture(scope="module")
def seed_pages(tmp_path_factory):
    """The seed's compare page against the five references, its report, and a throttled sweep's report."""
    from conftest import run_cli

    root = tmp_path_factory.mktemp("seedpages")
    seed = root / "seed"  # the seed's own figures (README, docs): the README's table is this page's
    shutil.copytree(Path(__file__).resolve().parent / "data" / "samples" / "results" / "20261130-101500", seed)
    hot = seed_sweep(root / "hot", logs=True)
    records = [json.loads(line) for line in (hot / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    with open(hot / "runs.jsonl", "w", encoding="utf-8") as fh:
        for record in records:
            record["telemetry"] = {"throttled": True, "max_temp_c": 86, "throttle_reasons": ["hw_thermal_slowdown"]}
            fh.write(json.dumps(record) + "\n")
    pages = {"compare": root / "compare.html", "report": root / "report.html", "hot": root / "hot.html"}
    for args in ([seed, "--against", "1080-Ti,2080,2080-Ti,Vega 64,V100"],):
        done = run_cli("compare", *args, "--format", "html", "--out", pages["compare"])
        assert done.returncode == 0, done
    for sweep, out in ((seed, pages["report"]), (hot, pages["hot"])):
        done = run_cli("report", sweep, "--format", "html", "--out", out)
        assert done.returncode == 0, done
    return pages


def test_every_reference_cell_of_the_seeds_compare_page_is_on_a_phones_screen(browser, seed_pages):
    page, _, _ = _open(browser, seed_pages["compare"], (390, 844))
    try:
        cells = page.eval_on_selector_all("#t-1 td", "els => els.map(e => e.innerText)")
        figures = [c for c in cells if re.fullmatch(r"[0-9.]+ \([0-9]+\.[0-9]%\)", c)]
        assert len(figures) == 25, cells  # five models against five references, `203.99 (86.7%)` each
        assert "203.99 (86.7%)" in figures
        found = page.evaluate(ON_SCREEN_JS, "#t-1 td.n")
        assert found["problems"] == [] and found["count"] >= 25, found
    finally:
        page.close()


def test_every_header_of_the_reports_main_table_is_on_a_laptops_screen(browser, seed_pages):
    page, _, _ = _open(browser, seed_pages["report"], (1280, 800))
    try:
        found = page.evaluate(ON_SCREEN_JS, "#t-summary thead th")
        assert found["problems"] == [] and found["count"] >= 10, found
        headers = page.eval_on_selector_all("#t-summary thead th", "els => els.map(e => e.innerText)")
        assert {"mean img/s", "CV %", "CI95 \u00b1%", "flags"} <= set(headers), headers
    finally:
        page.close()


def test_a_throttled_sweeps_page_says_what_to_do(browser, seed_pages):
    page, _, _ = _open(browser, seed_pages["hot"], (390, 844))
    try:
        advice = page.inner_text(".advice")
        assert "throttled" in advice and "--cool-to" in advice, advice
    finally:
        page.close()


# -- the machine checks: axe-core (accessibility) and the Nu HTML checker ------------------------------------

AXE = os.environ.get("TFCNNWRAP_AXE", "")
VNU = os.environ.get("TFCNNWRAP_VNU", "")


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["390", "1280"])
def test_pages_have_no_serious_accessibility_violation(browser, pages, seed_pages, viewport):
    if not Path(AXE).is_file():
        _missing("axe-core is not installed: npm install axe-core, then TFCNNWRAP_AXE=.../axe-core/axe.min.js")
    paths = [p for p, _ in pages.values()] + list(seed_pages.values())
    for path in paths:
        page, _, _ = _open(browser, path, viewport, bypass_csp=True)
        try:
            _open_disclosures(page)
            page.add_script_tag(path=AXE)
            result = page.evaluate("async () => await axe.run(document)")
            bad = [
                (v["id"], v["impact"], len(v["nodes"]))
                for v in result["violations"]
                if v["impact"] in ("serious", "critical")
            ]
            assert bad == [], (path.name, bad)
        finally:
            page.close()


def test_pages_pass_the_nu_html_checker(pages, seed_pages):
    java = shutil.which("java")
    if not Path(VNU).is_file() or java is None:
        _missing("the Nu HTML checker needs Java and vnu.jar: npm install vnu-jar, then TFCNNWRAP_VNU=.../vnu.jar")
    paths = [str(p) for p, _ in pages.values()] + [str(p) for p in seed_pages.values()]
    done = subprocess.run(
        [java, "-jar", VNU, "--errors-only", "--format", "text", *paths], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr

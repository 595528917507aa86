"""The pages as their readers see them: Debian's Chromium, headless, driven by Playwright (no browser
download: `executable_path` is the system's), at a phone's 390x844 and a laptop's 1280x800.

Each page: every number of the JSON output is in the rendered text; no element sticks out of the page's
width (wide tables scroll inside their own box); no network request; no console error; the site's links
resolve. Screenshots go to the test's tmp dir.
"""

import json
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from htmldata import HOSTILE_GPU, as_written, json_rows, missing_numbers, seed_sweep, write_bundle

CHROMIUM = os.environ.get("TFCNNWRAP_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
VIEWPORTS = [(390, 844), (1280, 800)]

pytestmark = pytest.mark.browser

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
    return {"report": (seed / "report.html", json.loads(ok("report", seed, "--format", "json"))),
            "ab": (root / "ab.html", json.loads(ok("compare", b, c, d, "--format", "json"))),
            "index": (root / "site" / "index.html", None),
            "gpu": (gpu, [json.loads(ok("report", s, "--format", "json")) for s in (seed, b, c)])}


def _open(browser, path, viewport):
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, requests, errors


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=["390", "1280"])
@pytest.mark.parametrize("name", ["report", "ab", "index", "gpu"])
def test_page_in_chromium(browser, pages, name, viewport, tmp_path):
    path, payload = pages[name]
    page, requests, errors = _open(browser, path, viewport)
    try:
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

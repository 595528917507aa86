"""The pages as a reader sees them, for the docs: the seed's compare page (docs/report.png, 1280x800, the README's
picture) and docs/screens/{compare,report,rank,site}-{390,1280}.png: the compare, report, rank and site pages of
the seed's sweep at a phone's 390x844 and a laptop's 1280x800, as Debian's Chromium shows them (Playwright).

Usage:
    python benchmarks/docs_screenshot.py [--out-dir docs] [--chromium /usr/bin/chromium]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "tests" / "data" / "samples" / "results" / "20261130-101500"
AGAINST = "1080-Ti,2080,2080-Ti,Vega 64,V100"  # the seed's table's columns
VIEWPORTS = {390: 844, 1280: 800}


def tfcnnwrap(cwd, *args):
    subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", *args],
        check=True,
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.DEVNULL,
    )


def pages(tmp):
    """{name: page}: the seed's sweep as the four pages a reader opens."""
    sweep = Path(tmp) / SEED.name
    shutil.copytree(SEED, sweep)
    out = {name: Path(tmp) / ("%s.html" % name) for name in ("compare", "report", "rank")}
    tfcnnwrap(tmp, "compare", sweep.name, "--against", AGAINST, "--format", "html", "--out", str(out["compare"]))
    tfcnnwrap(tmp, "report", sweep.name, "--format", "html", "--out", str(out["report"]))
    tfcnnwrap(tmp, "compare", sweep.name, "--rank", "--format", "html", "--out", str(out["rank"]))
    tfcnnwrap(tmp, "site", sweep.name, "--out", "site")
    out["site"] = Path(tmp) / "site" / "index.html"
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=str(ROOT / "docs"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    screens = Path(args.out_dir) / "screens"
    screens.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        for name, page in pages(tmp).items():
            for width, height in VIEWPORTS.items():
                tab = browser.new_page(viewport={"width": width, "height": height})
                tab.goto(page.as_uri())
                shot = screens / ("%s-%d.png" % (name, width))
                tab.screenshot(path=str(shot))
                if name == "compare" and width == 1280:
                    shutil.copyfile(shot, Path(args.out_dir) / "report.png")
                tab.close()
                print("wrote %s" % shot)
        browser.close()


if __name__ == "__main__":
    main()

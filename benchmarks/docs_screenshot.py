"""docs/report.png: the page `compare --against ... --format html` writes for the seed's figures (its RTX 2070
against the five GPUs of its table), as Chromium shows it at 1280x800 (Debian's chromium, Playwright).

Usage:
    python benchmarks/docs_screenshot.py [--out docs/report.png] [--chromium /usr/bin/chromium]
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from sweepdata import seed_runs, write_sweep  # noqa: E402

AGAINST = "1080-Ti,2080,2080-Ti,Vega 64,V100"  # the seed's table's columns


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "report.png"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        sweep = write_sweep(Path(tmp) / "20261130-101500+0100", seed_runs())
        page = Path(tmp) / "compare.html"
        subprocess.run([sys.executable, "-m", "tfcnnwrap", "compare", sweep.name, "--against", AGAINST, "--format",
                        "html", "--out", str(page)], check=True, cwd=tmp, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            tab = browser.new_page(viewport={"width": 1280, "height": 800})
            tab.goto(page.as_uri())
            tab.screenshot(path=args.out)
            browser.close()
    print("wrote %s" % args.out)


if __name__ == "__main__":
    main()

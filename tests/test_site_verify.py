"""`site` checks every bundle as `verify` does before it shows one: a bundle whose figures were edited (its id
recomputed or not) is left out and named with why (exit 1); one exported with --no-logs is shown, marked
unverified on its page and in the index."""

import gzip
import json

import pytest
from htmldata import page_text, write_bundle

from tfcnnwrap.share import bundle as bundles

FAKE = 9999.0


def tampered(path, recompute_id):
    """A real bundle whose first run claims 9999 images/sec; its log still says the true figure."""
    good = write_bundle(path, gpu="GeForce RTX 4090")
    data = json.loads(gzip.decompress(good.read_bytes()))
    data["runs"][0]["images_per_sec"] = FAKE
    if recompute_id:
        data = bundles.with_id({k: v for k, v in data.items() if k != "id"})
    path.write_bytes(bundles.to_bytes(data))
    return path


def site_text(out):
    return " ".join(page_text(p.read_text(encoding="utf-8"))[0] for p in out.rglob("*.html"))


@pytest.mark.slow
def test_bundle_with_an_edited_figure_and_its_id_recomputed_is_left_out(cli, tmp_path):
    bad = tampered(tmp_path / "forged.tfcw.json.gz", recompute_id=True)
    honest = write_bundle(tmp_path / "honest.tfcw.json.gz", gpu="GeForce RTX 2080")
    out = tmp_path / "site"
    result = cli("site", bad, honest, "--out", out)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    line = next(x for x in result.stderr.splitlines() if "forged.tfcw.json.gz" in x)
    assert "left out" in line and "its log says" in line
    text = site_text(out)  # the index names the bundle left out, quoting the figure; no page shows it as one
    assert "9999.00" not in text and "GeForce RTX 4090" not in text and "forged.tfcw.json.gz" in text
    assert "GeForce RTX 2080" in text and len(list((out / "r").glob("*.html"))) == 1


@pytest.mark.slow
def test_bundle_with_an_edited_figure_and_its_old_id_is_left_out(cli, tmp_path):
    bad = tampered(tmp_path / "edited.tfcw.json.gz", recompute_id=False)
    out = tmp_path / "site"
    result = cli("site", bad, "--out", out)
    assert result.returncode == 1, result
    line = next(x for x in result.stderr.splitlines() if "edited.tfcw.json.gz" in x)
    assert "left out" in line and "not the hash of its content" in line
    assert "9999.00" not in site_text(out) and not list((out / "r").glob("*.html"))


@pytest.mark.slow
def test_bundle_whose_log_was_edited_is_left_out(cli, tmp_path):
    path = write_bundle(tmp_path / "log.tfcw.json.gz", gpu="GeForce RTX 4090")
    data = json.loads(gzip.decompress(path.read_bytes()))
    name = data["runs"][0]["log"]
    data["logs"][name]["text"] = data["logs"][name]["text"].replace("total images/sec", "total images/sec: 9999 #")
    path.write_bytes(bundles.to_bytes(bundles.with_id({k: v for k, v in data.items() if k != "id"})))
    result = cli("site", path, "--out", tmp_path / "site")
    assert result.returncode == 1, result
    assert "does not match its sha256" in result.stderr


@pytest.mark.slow
def test_bundle_without_logs_is_shown_marked_unverified(cli, tmp_path):
    checked = write_bundle(tmp_path / "checked.tfcw.json.gz", gpu="GeForce RTX 2080")
    bare = write_bundle(tmp_path / "bare.tfcw.json.gz", gpu="GeForce RTX 3060", logs=None)
    out = tmp_path / "site"
    result = cli("site", checked, bare, "--out", out)
    assert result.returncode == 0, result
    index, _ = page_text((out / "index.html").read_text(encoding="utf-8"))
    assert index.count("unverified") >= 1
    pages = {p: page_text(p.read_text(encoding="utf-8"))[0] for p in (out / "r").glob("*.html")}
    assert len(pages) == 2
    bare_page = next(t for t in pages.values() if "GeForce RTX 3060" in t)
    checked_page = next(t for t in pages.values() if "GeForce RTX 2080" in t)
    assert "unverified" in bare_page and "--no-logs" in bare_page
    assert "unverified" not in checked_page
    gpu_page = next(p for p in (out / "gpu").glob("*.html") if "3060" in p.read_text(encoding="utf-8"))
    assert "unverified" in page_text(gpu_page.read_text(encoding="utf-8"))[0]


def test_pages_never_write_to_a_log_name_even_past_the_checks(tmp_path):
    """Defence in depth under the checks: an entry whose log names are paths still gets counter-named files."""
    from tfcnnwrap.pages import site

    path = write_bundle(tmp_path / "evil.tfcw.json.gz")
    data = json.loads(gzip.decompress(path.read_bytes()))
    data["logs"] = {"../../../../escaped.txt": {"sha256": "", "text": "x"}, "/etc/passwd": {"text": "y"}}
    data["runs"][0]["log"] = "../../../../escaped.txt"
    entry = site.bundle_entry(path, data)
    entry.slug = site.slug("evil", entry.key)
    out = tmp_path / "deep" / "er" / "site"
    out.mkdir(parents=True)
    site.build_site([entry], site.SiteWriter(out), [])
    assert not list(tmp_path.rglob("escaped.txt"))
    assert sorted(p.name for p in (out / "logs").rglob("*") if p.is_file()) == ["0.txt", "1.txt"]

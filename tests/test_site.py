"""`site SOURCE... --out DIR`: a static site of sweeps, bundles and the library; relative links that resolve,
hostile bundles read with bounds and shown as text, an empty library that says so, safe writing."""

import gzip
import json
import os
from pathlib import Path
from urllib.parse import unquote

import pytest
from conftest import assert_clean_error
from htmldata import HOSTILE_GPU, page_text, seed_sweep, write_bundle

from tfcnnwrap.pages.site import BundleError, read_bundle


def site_links(root):
    """{page: [(href, resolved path)]} for every page of the site; asserts every link is relative."""
    out = {}
    for page in root.rglob("*.html"):
        _, links = page_text(page.read_text(encoding="utf-8"))
        for href in links:
            assert not href.startswith(("/", "http:", "https:", "file:")), (page, href)
        out[page] = [(h, (page.parent / unquote(h.split("#")[0])).resolve()) for h in links]
    return out


def assert_links_resolve(root):
    for page, links in site_links(root).items():
        for href, target in links:
            assert target.is_file(), (page, href)
            assert root.resolve() in target.parents or target.parent == root.resolve()


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("src")
    sweeps = root / "sweeps"
    sweeps.mkdir()
    a = seed_sweep(sweeps / "a", logs=True)
    b = seed_sweep(sweeps / "b", 1.05, seed=2)
    bundles = root / "bundles"
    bundles.mkdir()
    write_bundle(bundles / "one.tfcw.json.gz", gpu="GeForce RTX 2080", factor=1.3)
    write_bundle(bundles / "two.tfcw.json.gz", gpu=HOSTILE_GPU, factor=0.9, created="2026-11-29T09:00:00Z", logs=None)
    return {"a": a, "b": b, "sweeps": sweeps, "bundles": bundles}


@pytest.mark.slow
def test_site_of_sweeps_and_bundles(cli, sources, tmp_path):
    out = tmp_path / "site"
    result = cli("site", sources["sweeps"], sources["bundles"], "--out", out)
    assert result.returncode == 0, result
    assert (out / "index.html").is_file()
    assert len(list((out / "r").glob("*.html"))) == 4 and len(list((out / "gpu").glob("*.html"))) == 3
    assert_links_resolve(out)
    index = (out / "index.html").read_text(encoding="utf-8")
    text, _ = page_text(index)
    assert "fp32 \u00b7 no XLA \u00b7 1 GPU \u00b7 parameter_server \u00b7 synthetic data" in text
    # rank per model: the 2080 bundle (1.3x) above the 2070 sweeps, the hostile one (0.9x) last
    resnet = text[text.index("resnet50, batch 64") :]
    assert resnet.index("GeForce RTX 2080") < resnet.index("GeForce RTX 2070") < resnet.index(HOSTILE_GPU)
    assert "<img src=x" not in index and "<script>alert" not in index


@pytest.mark.slow
def test_bundle_logs_become_files_named_by_the_site(cli, sources, tmp_path):
    out = tmp_path / "site"
    assert cli("site", sources["bundles"], "--out", out).returncode == 0
    logs = sorted(p.relative_to(out).as_posix() for p in (out / "logs").rglob("*") if p.is_file())
    assert len(logs) == 10 and all(p.endswith(".txt") for p in logs)
    pages = {p.name: p.read_text(encoding="utf-8") for p in (out / "r").glob("*.html")}
    without = next(html for html in pages.values() if "onerror" in html)
    assert without.count("missing: logs/") == 10  # a bundle made with --no-logs: each log shown as missing


@pytest.mark.slow
def test_hostile_log_names_are_never_paths(cli, tmp_path):
    bundle = write_bundle(tmp_path / "evil.tfcw.json.gz", logs={"../../../../escaped.txt": {"sha256": "", "text": "x"}})
    data = json.loads(gzip.decompress(bundle.read_bytes()))
    data["logs"] = {"../../../../escaped.txt": {"sha256": "", "text": "x"}, "/etc/passwd": {"text": "y"}}
    data["runs"][0]["log"] = "../../../../escaped.txt"
    bundle.write_bytes(gzip.compress(json.dumps(data).encode()))
    out = tmp_path / "deep" / "er" / "site"
    out.parent.mkdir(parents=True)
    result = cli("site", bundle, "--out", out)  # refused as verify refuses it: a log name that is a path
    assert result.returncode == 1 and "evil.tfcw.json.gz" in result.stderr and "is a path" in result.stderr
    assert not list(tmp_path.rglob("escaped.txt"))
    assert_links_resolve(out)


@pytest.mark.slow
def test_bad_bundles_are_named_and_left_out(cli, sources, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "notgzip.tfcw.json.gz").write_bytes(b"hello")
    (bad / "list.tfcw.json.gz").write_bytes(gzip.compress(b"[1, 2]"))
    (bad / "nan.tfcw.json.gz").write_bytes(gzip.compress(b'{"runs": [], "x": NaN}'))
    result = cli("site", bad, sources["bundles"] / "one.tfcw.json.gz", "--out", tmp_path / "site")
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    for name in ("notgzip", "list", "nan"):
        assert name in result.stderr
    assert_links_resolve(tmp_path / "site")


def test_read_bundle_is_bounded(tmp_path):
    path = tmp_path / "big.tfcw.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"runs": [], "pad": "x" * 5000}).encode()))
    with pytest.raises(BundleError, match="MiB unpacked"):
        read_bundle(path, limit=4096)
    assert read_bundle(path)["runs"] == []


@pytest.mark.slow
def test_empty_library_says_so(cli, tmp_path):
    data = tmp_path / "data"
    (data / "bundles").mkdir(parents=True)
    result = cli("site", "library", "--out", tmp_path / "site", env={"TFCNNWRAP_DATA": data})
    assert result.returncode == 0, result
    text, _ = page_text((tmp_path / "site" / "index.html").read_text(encoding="utf-8"))
    assert "No results yet" in text and str(data / "bundles") in text


@pytest.mark.slow
def test_library_is_read(cli, sources, tmp_path):
    result = cli("site", "library", "--out", tmp_path / "site", env={"TFCNNWRAP_DATA": sources["bundles"].parent})
    assert result.returncode == 0, result
    assert len(list((tmp_path / "site" / "r").glob("*.html"))) == 2


@pytest.mark.slow
def test_ab_page(cli, sources, tmp_path):
    out = tmp_path / "site"
    assert cli("site", sources["a"], sources["b"], "--ab", "--out", out).returncode == 0
    text, _ = page_text((out / "ab.html").read_text(encoding="utf-8"))
    assert "against" in text and "geomean" in text
    assert_links_resolve(out)
    assert_clean_error(cli("site", sources["bundles"], sources["a"], "--ab", "--out", tmp_path / "s2"), 2, "--ab")


@pytest.mark.slow
def test_usage_errors_are_one_line(cli, sources, tmp_path):
    assert_clean_error(cli("site", tmp_path / "nope", "--out", tmp_path / "s"), 2, "does not exist")
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, tmp_path / "link")
    assert_clean_error(cli("site", sources["a"], "--out", tmp_path / "link"), 2, "link")
    assert not list(target.iterdir())
    (tmp_path / "file").write_text("x")
    assert_clean_error(cli("site", sources["a"], "--out", tmp_path / "file"), 2, "is a file")


@pytest.mark.slow
def test_site_rebuilt_in_place_replaces_its_pages(cli, sources, tmp_path):
    out = tmp_path / "site"
    assert cli("site", sources["a"], "--out", out).returncode == 0
    page = next((out / "r").glob("*.html"))
    victim = tmp_path / "victim"
    victim.write_text("keep", encoding="utf-8")
    page.unlink()
    os.symlink(victim, page)
    assert cli("site", sources["a"], "--out", out).returncode == 0
    assert victim.read_text(encoding="utf-8") == "keep" and not Path(page).is_symlink()


@pytest.mark.slow  # forks worker processes
def test_many_sources_are_read_in_worker_processes_alike(sources, tmp_path, monkeypatch):
    from tfcnnwrap.pages import site

    args = [str(sources["sweeps"]), str(sources["bundles"]), str(tmp_path / "bad.tfcw.json.gz")]
    (tmp_path / "bad.tfcw.json.gz").write_bytes(gzip.compress(b'{"runs": "no"}'))
    alone = site.collect(args, tmp_path)
    monkeypatch.setattr(site, "PARALLEL_FROM", 2)
    monkeypatch.setattr(site.os, "cpu_count", lambda: 2)
    pooled = site.collect(args, tmp_path)

    def shown(entries):  # what the index and GPU pages read (a worker writes a bundle's own page as it reads it)
        rows = [[{k: row.get(k) for k in site._INDEX_ROW_KEYS} for row in e.view.rows] for e in entries]
        return [(e.slug, r, e.view.log_links, e.runs_shown) for e, r in zip(entries, rows)]

    assert shown(pooled[0]) == shown(alone[0])
    assert [e.page for e in pooled[0] if e.kind == "bundle"] == [e.written[-1] for e in pooled[0] if e.written]
    assert len(pooled[0]) == 4 and pooled[1] == alone[1] and "no list of runs" in pooled[1][0]


@pytest.mark.slow
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_site_in_the_help(cli, columns):
    top = cli("--help", env={"COLUMNS": columns})
    assert top.returncode == 0 and "site" in top.stdout
    result = cli("site", "--help", env={"COLUMNS": columns})
    assert result.returncode == 0 and "python -m tfcnnwrap site library --out site" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines() if "python -m" not in line) <= columns
    for verb in ("report", "compare"):
        assert "html" in cli(verb, "--help", env={"COLUMNS": columns}).stdout

"""`site` over the folder of a large earlier site (issue 39): its marker lists every page of a library's site
(a page per bundle, a file per log), so a library of 100,000 bundles writes a marker of ~106 MB."""

import json

import pytest
from bundledata import logged_sweep
from conftest import run_cli, spawn_cli

pytestmark = pytest.mark.slow


def test_a_site_whose_marker_lists_a_large_librarys_pages_is_rebuilt_and_its_stale_pages_removed(tmp_path):
    sweep = logged_sweep(tmp_path / "sweep", values={"resnet50": 176.9})
    out = tmp_path / "site"
    first = run_cli("site", sweep, "--out", out)
    assert first.returncode == 0, first
    marker = out / ".tfcnnwrap-site.json"
    pages = json.loads(marker.read_text(encoding="utf-8"))["pages"]
    # more than 16 MiB of names, as a library of 16,000 bundles lists (here long ones: fewer to remove)
    folder = "logs/" + "b" * 200 + "/" + "c" * 200
    stale = ["%s/%s-%d.txt" % (folder, "d" * 180, i) for i in range(28000)]
    (out / folder).mkdir(parents=True)
    (out / stale[7]).write_text("an old log", encoding="utf-8")
    marker.write_text(json.dumps({"format": 1, "kind": "tfcnnwrap-site", "pages": pages + stale}), encoding="utf-8")
    assert marker.stat().st_size > 16 * 1024 * 1024

    again = run_cli("site", sweep, "--out", out)
    assert again.returncode == 0, again
    assert not (out / stale[7]).exists()  # the earlier site's page it no longer has: removed
    assert sorted(json.loads(marker.read_text(encoding="utf-8"))["pages"]) == sorted(pages)


@pytest.mark.slow
def test_a_large_site_written_by_worker_processes_is_the_site_one_process_writes(tmp_path, monkeypatch):
    from bundledata import build

    from tfcnnwrap.pages import site
    from tfcnnwrap.share import bundle as bundles

    base = build(logged_sweep(tmp_path / "sweep", values={"resnet50": 176.9}))
    folder = tmp_path / "bundles"
    folder.mkdir()
    count = site.WRITE_CHUNK + 3  # enough for the writers (PARALLEL_FROM * 4), and a last chunk of 3
    for i in range(count):
        content = {k: v for k, v in base.items() if k != "id"}
        content["created_at"] = "2026-12-%02dT10:%02d:00Z" % (1 + i // 60, i % 60)
        item = bundles.with_id(content)
        (folder / bundles.file_name(item)).write_bytes(bundles.to_bytes(item))
    parallel = spawn_cli("site", folder, "--out", tmp_path / "parallel")  # 2 chunks of the writers: 64, then 3
    monkeypatch.setattr(site, "PARALLEL_FROM", 10**6)  # one process reads and writes every page
    serial = run_cli("site", folder, "--out", tmp_path / "serial")
    assert parallel.returncode == serial.returncode == 0, (parallel, serial)

    def pages(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    written = pages(tmp_path / "parallel")
    assert written == pages(tmp_path / "serial")
    assert len([p for p in written if p.startswith("r/")]) == count


@pytest.mark.slow
def test_bundles_a_worker_wrote_under_a_spelling_the_site_renames_are_written_again_as_one_process_writes(
    tmp_path, monkeypatch
):
    """A worker writes a bundle's page under its own GPU name as it reads it; where the site shows another
    spelling of that GPU (the one most of its results use) the page moves: the site is the one-process site."""
    from tfcnnwrap.pages import site
    from tfcnnwrap.share import bundle as bundles
    from tfcnnwrap.share.export import build

    folder = tmp_path / "bundles"
    folder.mkdir()
    for n, gpu in enumerate(["GeForce RTX 2070"] * 12 + ["NVIDIA GeForce RTX 2070"] * 8):
        base = build(logged_sweep(tmp_path / ("sweep%d" % n), values={"resnet50": 170.0 + n}, gpus=(gpu,)))
        item = bundles.with_id({k: v for k, v in base.to_dict().items() if k != "id"})
        (folder / bundles.file_name(item)).write_bytes(bundles.to_bytes(item))
    (tmp_path / "parallel").mkdir()
    (tmp_path / "parallel" / "r").mkdir()
    (tmp_path / "parallel" / "r" / "stale.html").write_text("an earlier page", encoding="utf-8")
    (tmp_path / "parallel" / ".tfcnnwrap-site.json").write_text('{"pages": ["r/stale.html"]}', encoding="utf-8")
    parallel = spawn_cli("site", folder, "--out", tmp_path / "parallel")
    monkeypatch.setattr(site, "PARALLEL_FROM", 10**6)
    serial = run_cli("site", folder, "--out", tmp_path / "serial")
    assert parallel.returncode == serial.returncode == 0, (parallel, serial)

    def pages(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    written = pages(tmp_path / "parallel")
    assert written == pages(tmp_path / "serial")
    assert len([p for p in written if p.startswith("r/")]) == 20 and "r/stale.html" not in written

    def folders(root):  # the first pages' log folders removed too
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir())

    assert folders(tmp_path / "parallel") == folders(tmp_path / "serial")
    assert [p.name[:17] for p in (tmp_path / "parallel" / "gpu").iterdir()] == ["geforce-rtx-2070-"]  # one GPU


@pytest.mark.slow
def test_a_large_site_stopped_after_its_workers_wrote_pages_leaves_a_folder_the_next_site_takes(tmp_path, monkeypatch):
    """The workers write pages before the index and the marker: a site stopped then (here by a disk that fills
    up at the last bundle) leaves a folder the next `site` accepts, not one "no earlier `tfcnnwrap site` made"."""
    import errno

    from tfcnnwrap.pages import site
    from tfcnnwrap.share import bundle as bundles
    from tfcnnwrap.share.export import build

    base = build(logged_sweep(tmp_path / "sweep", values={"resnet50": 176.9}))
    folder = tmp_path / "bundles"
    folder.mkdir()
    for i in range(site.PARALLEL_FROM + 4):
        content = {k: v for k, v in base.to_dict().items() if k != "id"}
        content["created_at"] = "2026-12-01T10:%02d:00Z" % i
        item = bundles.with_id(content)
        (folder / bundles.file_name(item)).write_bytes(bundles.to_bytes(item))
    last = sorted(folder.iterdir())[-1].name
    real = site.write_result

    def full_at_the_last(entry, writer, sub_nav):  # the forked workers inherit it
        if last in entry.key:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(entry, writer, sub_nav)

    monkeypatch.setattr(site, "write_result", full_at_the_last)
    out = tmp_path / "site"
    out.mkdir()
    with pytest.raises(OSError):
        site.collect([str(folder)], out)  # as `site` reads them: in worker processes
    assert list((out / "r").iterdir()) and site.earlier_pages(out) == []
    again = spawn_cli("site", folder, "--out", out)
    assert again.returncode == 0, again
    assert len(list((out / "r").iterdir())) == site.PARALLEL_FROM + 4

"""The site as its readers need it (issue 37.4): one GPU under every spelling, sections in number order, charts
only where they say more than a row, and a local sweep shown as `export` would share it (no host name, no home
path)."""

import gzip
import json
import re

import pytest
from bundledata import HOST, build, logged_sweep
from sweepdata import write_both_kinds, write_sweep

from tfcnnwrap.share import bundle as bundles

pytestmark = pytest.mark.slow


def page_text(path):
    return re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))


def test_two_spellings_of_one_gpu_are_one_gpu_of_the_site(cli, tmp_path):
    a = logged_sweep(tmp_path / "a", gpus=("GeForce RTX 2070",))
    b = logged_sweep(tmp_path / "b", gpus=("NVIDIA GeForce RTX 2070",))
    done = cli("site", a, b, "--out", tmp_path / "site")
    assert done.returncode == 0, done
    assert len(list((tmp_path / "site" / "gpu").glob("*.html"))) == 1
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "2 results of 1 GPU" in re.sub(r"\s+", " ", page_text(tmp_path / "site" / "index.html")), index


def test_sections_go_in_number_order_not_as_text(cli, tmp_path):
    sweep = write_sweep(
        tmp_path / "s", {("alexnet", 512): [2258.0] * 3, ("alexnet", 16): [900.0] * 3, ("alexnet", 64): [1800.0] * 3}
    )
    done = cli("site", sweep, "--out", tmp_path / "site")
    assert done.returncode == 0, done
    text = page_text(tmp_path / "site" / "index.html")
    found = [int(n) for n in re.findall(r"alexnet, batch (\d+)", text)]
    assert found == [16, 64, 512], found


def test_a_local_sweep_on_the_site_shows_no_host_name_or_home_path(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", home="/home/alice", host=HOST)
    meta = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
    meta["environment"]["command"] = {
        "argv": ["/home/alice/tf112/bin/python", "-m", "tfcnnwrap", "sweep"],
        "text": "python -m tfcnnwrap sweep",
        "cwd": "/home/alice/bench",
    }
    (sweep / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    done = cli("site", sweep, "--out", tmp_path / "site")
    assert done.returncode == 0, done
    pages = [p for p in (tmp_path / "site").rglob("*.html")]
    assert pages
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert HOST not in text and "/home/alice" not in text, page


def test_a_gpu_page_draws_no_chart_across_models(cli, tmp_path):
    a = logged_sweep(tmp_path / "a")  # five models: one scale for all would hide every model but alexnet
    done = cli("site", a, "--out", tmp_path / "site")
    assert done.returncode == 0, done
    [gpu] = list((tmp_path / "site" / "gpu").glob("*.html"))
    assert "<svg" not in gpu.read_text(encoding="utf-8")


def test_a_sweep_of_both_data_kinds_puts_each_kinds_figures_under_its_own_conditions(cli, tmp_path):
    both = write_both_kinds(
        tmp_path / "both", {("resnet50", 64): {"synthetic": [200.0, 202.0], "real": [150.0, 151.0]}}
    )
    done = cli("site", both, "--out", tmp_path / "site")
    assert done.returncode == 0, done
    [gpu] = list((tmp_path / "site" / "gpu").glob("*.html"))
    text = re.sub(r"\s+", " ", page_text(gpu))
    assert "synthetic,real data" not in text  # no section mixes the kinds
    spread = re.findall(
        r"parameter_server · (\w+) data: the mean across results model .*? resnet50 64 1 ([\d.]+)", text
    )
    assert sorted(spread) == [("real", "150.50"), ("synthetic", "201.00")], text
    index = re.sub(r"\s+", " ", page_text(tmp_path / "site" / "index.html"))
    assert "GeForce RTX 2070 " in index and "176.93" in index  # the published figure under the synthetic row's terms


@pytest.fixture
def seed_bundle(tmp_path):
    return build(logged_sweep(tmp_path / "s", values={"resnet50": 176.93}))


def write_raw(path, text):
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


@pytest.mark.parametrize("tamper", ["overflow", "duplicate"])
def test_site_reads_a_bundle_as_strictly_as_verify(cli, tmp_path, seed_bundle, tamper):
    # site had a reader of its own: 1e999 images/sec was shown as "nan", a key twice read as its last value
    text = json.dumps(seed_bundle)
    at = text.index('"images_per_sec"')
    text = (
        text.replace("176.93", "1e999") if tamper == "overflow" else text[:at] + '"images_per_sec": 999.0, ' + text[at:]
    )
    good = tmp_path / "in" / bundles.file_name(seed_bundle)
    good.parent.mkdir()
    good.write_bytes(bundles.to_bytes(seed_bundle))
    bad = write_raw(tmp_path / "in" / "bad.tfcw.json.gz", text)
    result = cli("site", good, bad, "--out", tmp_path / "site", cwd=tmp_path)
    assert result.returncode == 1, result
    assert "bad.tfcw.json.gz" in result.stderr and "Traceback" not in result.stderr, result
    pages = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "site").rglob("*.html"))
    assert not re.search(r"\bnan\b", pages, re.IGNORECASE) and "999.0" not in pages

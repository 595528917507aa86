"""What the box costs, in one line (issue 36, item 3): `compare --rank` and `--against` on a sweep whose link
class is known say how the same GPU did at another link class wherever the community has it, per model and as
the geometric mean (the table's line; ``link_cost`` in the JSON envelope); nothing when no other link class of
that GPU is known or the sweep's link is not."""

import json
import math

import pytest
from bundledata import build, logged_sweep, variants, write_bundles
from test_link_conditions import POSIX, gpu_env

from tfcnnwrap.share import bundle as bundles

X4 = {"pcie_gen": 3, "pcie_width": 4, "pcie_max_gen": 3, "pcie_max_width": 16, "h2d_gbps": 2.6, "d2h_gbps": 2.4}
X16 = dict(X4, pcie_width=16, h2d_gbps=12.1, d2h_gbps=13.0)
# the same GPU in a desktop slot: three sweeps at these figures, so the entry's medians are these
DESKTOP = {"resnet50": 180.0, "vgg16": 100.0}
# the eGPU: 95% and 90% of them; their geometric mean 92.47%
EGPU = {"resnet50": 171.0, "vgg16": 90.0}
LINE = "Your GeForce RTX 2070 at gen3 x4 against the same GPU at gen3 x16 (community, 3 sweeps): 92.5% (%s)"


@pytest.fixture
def data(tmp_path):
    return {"TFCNNWRAP_DATA": str(tmp_path / "data")}


def _bundle(tmp_path, name, values, link, gpu="GeForce RTX 2070"):
    made = build(logged_sweep(tmp_path / name, values=values, gpus=(gpu,)))
    content = {k: v for k, v in made.items() if k != "id"}
    content["conditions"] = dict(content["conditions"], link=link)
    return bundles.with_id(content)


def _imported(cli, tmp_path, data, made):
    result = cli("import", write_bundles(tmp_path / "in", made), env=data)
    assert result.returncode == 0, result


def _at_link(path, gen, width, width_max):
    """The sweep's runs as if its GPU had trained to gen ``gen`` x``width`` of x``width_max`` under load."""
    runs = path / "runs.jsonl"
    records = [json.loads(line) for line in runs.read_text(encoding="utf-8").splitlines()]
    link = {"gen": gen, "gen_max": gen, "width": width, "width_max": width_max}
    runs.write_text("".join(json.dumps(dict(r, telemetry={"pcie_link": link})) + "\n" for r in records))
    return path


def _models_text(per_model):
    return ", ".join("%s %.1f%%" % item for item in per_model.items())


def _desktop_and_others(tmp_path):
    desktop = variants(_bundle(tmp_path, "d", DESKTOP, X16), 3)
    other_egpus = [_bundle(tmp_path, "e", {"resnet50": 150.0, "vgg16": 80.0}, X4)]  # its own link: no line
    other_gpu = [_bundle(tmp_path, "t", {"resnet50": 400.0, "vgg16": 200.0}, X16, gpu="GeForce RTX 2080 Ti")]
    return desktop + other_egpus + other_gpu


@pytest.mark.slow
def test_rank_and_against_say_what_the_x4_link_costs_against_the_same_gpu_at_x16(cli, tmp_path, data):
    _imported(cli, tmp_path, data, _desktop_and_others(tmp_path))
    mine = _at_link(logged_sweep(tmp_path / "mine", values=EGPU), 3, 4, 16)
    per_model = {"resnet50": 95.0, "vgg16": 90.0}
    line = LINE.replace("%s", _models_text(per_model))
    for view in (("--rank",), ("--against", "2080 Ti community")):
        table = cli("compare", mine, *view, "--source", "community", env=data)
        assert table.returncode == 0, table
        assert table.stdout.count("against the same GPU at") == 1, table.stdout
        assert line in " ".join(table.stdout.split()), table.stdout  # the table's notes wrap on a terminal
        result = cli("compare", mine, *view, "--source", "community", "--format", "json", env=data)
        assert result.returncode == 0, result
        (cost,) = result.json()["link_cost"]
        assert cost["gpu"] == "GeForce RTX 2070" and (cost["link"], cost["other_link"]) == ("gen3 x4", "gen3 x16")
        assert cost["sweeps"] == 3 and cost["gpu_id"] == "community-rtx2070-gen3-x16"
        assert cost["per_model"] == pytest.approx(per_model)
        assert cost["geomean_pct"] == pytest.approx(100.0 * math.sqrt(0.95 * 0.90))
        assert cost["text"] == line


@pytest.mark.slow
def test_no_line_without_another_link_of_that_gpu_or_without_the_sweeps_link(cli, tmp_path, data):
    _imported(cli, tmp_path, data, _desktop_and_others(tmp_path))
    unknown = logged_sweep(tmp_path / "unknown", values=EGPU)  # no pcie_link in its telemetry
    at_x16 = _at_link(logged_sweep(tmp_path / "x16", values=DESKTOP), 3, 16, 16)  # x4: only one other sweep's
    at_x8 = _at_link(logged_sweep(tmp_path / "x8", values=EGPU, gpus=("GeForce GTX 1080",)), 3, 8, 16)
    for sweep in (unknown, at_x8):
        table = cli("compare", sweep, "--rank", "--source", "community", env=data)
        assert table.returncode == 0 and "against the same GPU at" not in table.stdout, table
        result = cli("compare", sweep, "--rank", "--source", "community", "--format", "json", env=data)
        assert result.returncode == 0 and result.json()["link_cost"] == [], result
    # the desktop sweep against the eGPU entry: the same line the other way round
    result = cli("compare", at_x16, "--rank", "--source", "community", "--format", "json", env=data)
    (cost,) = result.json()["link_cost"]
    assert (cost["link"], cost["other_link"], cost["sweeps"]) == ("gen3 x16", "gen3 x4", 1)
    assert cost["per_model"] == pytest.approx({"resnet50": 120.0, "vgg16": 125.0})
    builtin = cli("compare", at_x16, "--rank", "--source", "builtin", "--format", "json", env=data)
    assert builtin.returncode == 0 and builtin.json()["link_cost"] == [], builtin


@pytest.mark.slow
@POSIX
def test_a_gpu_sweep_at_gen3_x4_of_x16_meets_the_same_gpu_at_x16(cli, tmp_path, vendor, fake_tf, data):
    """The link from the sweep's own telemetry (the stand-in nvidia-smi at gen3 x4 of x16), not a rewritten
    record: the line follows from `sweep` to `compare --rank` with nothing in between."""
    env = dict(gpu_env(tmp_path, [3, 3, 4, 16]), **data)
    out = tmp_path / "s"
    swept = cli(
        "sweep", "--vendor-dir", vendor, "--python", fake_tf("2.4.0"), "--device", "gpu", "--models", "resnet50",
        "--runs", "1", "--batch-size", "resnet50=64", "--out", out, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert swept.returncode == 0, swept
    measured = json.loads((out / "runs.jsonl").read_text().splitlines()[0])["images_per_sec"]
    desktop = variants(_bundle(tmp_path, "d", {"resnet50": 2.0 * measured}, X16), 3)
    _imported(cli, tmp_path, env, desktop)
    result = cli("compare", out, "--rank", "--source", "community", "--format", "json", cwd=tmp_path, env=env)
    assert result.returncode == 0, result
    (cost,) = result.json()["link_cost"]
    assert (cost["link"], cost["other_link"], cost["sweeps"]) == ("gen3 x4", "gen3 x16", 3), cost
    assert cost["per_model"] == pytest.approx({"resnet50": 50.0}) and cost["geomean_pct"] == pytest.approx(50.0)

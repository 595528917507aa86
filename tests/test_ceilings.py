"""Physical ceilings (tfcnnwrap.results.ceilings): a figure no such GPU can reach is not verified, one far above
everything published is an outlier, and no published figure is ever refused."""

import pytest
from bundledata import build, logged_sweep, write_bundles

from tfcnnwrap.results import ceilings
from tfcnnwrap.results.gpuid import builtin_references, gpu_identity, identity_of


@pytest.fixture
def data(tmp_path):
    return {"TFCNNWRAP_DATA": str(tmp_path / "data")}


def test_every_published_reference_row_stays_under_its_ceiling():
    checked = []
    for gpu in builtin_references():
        assert gpu_identity(gpu.name) == identity_of(gpu)  # its own name finds its peak
        for row in gpu.results:
            top = ceilings.ceiling(gpu.name, row.model, row.precision, row.num_gpus)
            if top is not None:
                checked.append((gpu.id, row.model, row.precision, row.num_gpus, row.images_per_sec))
                assert row.images_per_sec <= top.images_per_sec, (checked[-1], top.describe())
    assert len(checked) > 1000  # the rule is tested on the rows it covers, not on none
    assert any(gpu == "rtx2070-egpu" and model == "alexnet" for gpu, model, *_ in checked)


def test_the_seeds_rtx_2070_alexnet_is_under_its_ceiling_and_resnet50_at_5000_is_not():
    alexnet = ceilings.ceiling("GeForce RTX 2070", "alexnet", "fp32", 1)
    assert alexnet.images_per_sec > 2258.94
    resnet50 = ceilings.ceiling("GeForce RTX 2070", "resnet50", "fp32", 1)
    assert 176.93 < resnet50.images_per_sec < 5000.0
    # devices multiply the ceiling; TensorFlow's device-line name has the same one
    assert ceilings.ceiling("NVIDIA GeForce RTX 2070", "resnet50", "fp32", 2).images_per_sec == pytest.approx(
        2 * resnet50.images_per_sec
    )


def test_no_peak_or_no_cost_means_no_ceiling():
    assert ceilings.ceiling("GeForce GTX 1660", "resnet50", "fp32", 1) is None
    assert ceilings.ceiling("GeForce RTX 2070~", "resnet50", "fp32", 1) is None  # a look-alike has no peak
    assert ceilings.ceiling("GeForce RTX 2070", "nasnet", "fp32", 1) is None


def test_every_model_cost_names_its_source():
    costs = ceilings.model_costs()
    assert {"resnet50", "resnet152", "inception3", "inception4", "vgg16", "alexnet"} <= set(costs)
    assert all(c.forward_gmacs > 0 and c.source and c.input_size > 0 for c in costs.values())


def test_every_peak_has_its_source_or_says_why_not():
    for gpu in builtin_references():
        for value, source in (
            (gpu.facts.fp32_tflops, gpu.facts.fp32_source),
            (gpu.facts.fp16_tflops, gpu.facts.fp16_source),
        ):
            assert isinstance(value, float) and "http" in source or value in ("unpublished", "unverified"), gpu.id


@pytest.mark.slow
def test_resnet50_at_5000_images_per_sec_on_an_rtx_2070_is_not_verified(cli, tmp_path):
    forged = build(logged_sweep(tmp_path / "f", values={"resnet50": 5000.0}))
    path = write_bundles(tmp_path / "in", [forged])
    result = cli("verify", *path.iterdir())
    assert result.returncode == 1, result
    assert "implausible" in result.stdout and "physical ceiling" in result.stdout
    assert "1039 images/sec (peak 7.9 TFLOPS" in result.stdout, result


@pytest.mark.slow
def test_the_seeds_own_figures_verify(cli, tmp_path):
    seed = build(logged_sweep(tmp_path / "s"))  # the seed's five models, alexnet at 2,258.94
    result = cli("verify", *write_bundles(tmp_path / "in", [seed]).iterdir())
    assert result.returncode == 0 and "implausible" not in result.stdout and "outlier" not in result.stdout, result


@pytest.mark.slow
def test_an_outlier_is_flagged_in_verify_and_the_library_not_refused(cli, tmp_path, data):
    high = build(logged_sweep(tmp_path / "h", values={"resnet50": 230.0}))
    folder = write_bundles(tmp_path / "in", [high])
    result = cli("verify", *folder.iterdir())
    assert result.returncode == 0 and "note: outlier: resnet50" in result.stdout, result
    assert cli("import", folder, env=data).returncode == 0
    (row,) = cli("library", "--format", "json", env=data).json()["rows"]
    assert row["outlier"] is True
    assert "yes, outlier" in cli("library", env=data).stdout


@pytest.mark.slow
def test_a_gpu_with_no_known_peak_says_so(cli, tmp_path):
    other = build(logged_sweep(tmp_path / "o", values={"resnet50": 99999.0}, gpus=("GeForce GTX 1660",)))
    result = cli("verify", *write_bundles(tmp_path / "in", [other]).iterdir())
    assert result.returncode == 0, result
    assert "no known peak TFLOPS for GeForce GTX 1660" in result.stdout


@pytest.mark.slow
def test_the_site_marks_an_outlier_bundle(cli, tmp_path):
    high = build(logged_sweep(tmp_path / "h", values={"resnet50": 230.0}))
    site = cli("site", *write_bundles(tmp_path / "in", [high]).iterdir(), "--out", tmp_path / "site")
    assert site.returncode == 0, site
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "(outlier)" in index
    (page,) = (tmp_path / "site" / "r").glob("*.html")
    assert "outlier: resnet50" in page.read_text(encoding="utf-8")

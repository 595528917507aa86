"""An error that lists candidates shows the closest few, at most 8, and says where the rest are (issue 38.5:
`references --gpu 9999` was a 22-line "one-line" error naming all 41 GPUs)."""

from pathlib import Path

import pytest
from conftest import assert_clean_error

pytestmark = pytest.mark.slow

MOST = 8


def _listed(stderr, after):
    return [item for item in stderr.split(after, 1)[1].split(";")[0].split("(see")[0].split(", ") if item.strip()]


SEED = Path(__file__).resolve().parent / "data" / "samples" / "results" / "20261130-101500"


@pytest.mark.parametrize("args", [["references", "--gpu", "9999"], ["compare", SEED, "--against", "9999"]])
def test_an_unknown_gpu_lists_a_few_ids_and_where_the_rest_are(cli, tmp_path, args):
    result = cli(*args, cwd=tmp_path)
    assert_clean_error(result, 2, "9999", "tfcnnwrap references")
    assert result.stderr.count("(") <= 2 * MOST + 2, result.stderr
    assert "more" in result.stderr, result.stderr
    assert len(result.stderr) < 600, result.stderr


def test_an_unknown_model_lists_the_closest_few(cli, tmp_path):
    result = cli("sweep", "--models", "resnet5o", "--dry-run", cwd=tmp_path)
    assert_clean_error(result, 2, "resnet50")
    assert result.stderr.count(", ") <= MOST + 2, result.stderr
    assert "more" in result.stderr, result.stderr

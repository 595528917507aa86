"""The † footnotes under a comparison say each reason once (issue 38.5: 14 † lines under a 7-row table, the
same "measured at ..., this sweep at ..." repeated per reference); every reference with a † cell is still
named, with the models it concerns."""

import pytest
from sweepdata import seed_runs, write_sweep

pytestmark = pytest.mark.slow

AGAINST = "1080-Ti,2080,2080-Ti,Vega 64,V100,P100,K80"
REASON = "measured at variable_update parameter_server, this sweep at variable_update replicated"


@pytest.fixture
def replicated(tmp_path):
    return write_sweep(tmp_path / "replicated", seed_runs(3), variable_update="replicated")


def test_a_reason_shared_by_several_references_is_one_footnote(cli, replicated):
    result = cli("compare", replicated, "--against", AGAINST)
    assert result.returncode == 0, result
    text = " ".join(result.stdout.split())
    assert text.count(REASON) == 1, result.stdout
    daggers = [line for line in result.stdout.splitlines() if line.startswith("\u2020")]
    assert len(daggers) <= 3, result.stdout  # this reason, K80's batch size, the note on how † is chosen
    line = next(line for line in text.split("\u2020") if REASON in line)
    for name in ("Vega 64", "V100", "P100", "K80", "1080-Ti", "2080"):
        assert name in line, (name, result.stdout)
    assert "Vega 64, V100 (resnet50, resnet152, inception3, vgg16, alexnet); P100 (" in line, line


def test_a_single_reference_reads_as_before(cli, replicated):
    result = cli("compare", replicated, "--against", "P100")
    assert result.returncode == 0, result
    text = " ".join(result.stdout.split())
    assert "\u2020 P100 (resnet50, resnet152, inception3): %s; not in the geometric mean." % REASON in text, text

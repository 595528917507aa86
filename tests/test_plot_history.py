"""`compare BASELINE C1 C2 --plot` (issue 22.5): each configuration's images/sec over the sweeps' dates, one
series per configuration, the baseline marked."""

import json
import struct
import xml.etree.ElementTree as ET

import pytest
from sweepdata import write_sweep

from tfcnnwrap.compare.ab import sweep_vs_sweeps
from tfcnnwrap.errors import UsageError
from tfcnnwrap.present import plothistory


def dated_sweep(path, when, results):
    """A sweep that started at ``when`` (sweep.json's created_at)."""
    write_sweep(path, results)
    meta = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
    meta["created_at"] = when
    (path / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    return path


@pytest.fixture
def history(tmp_path):
    """Named out of date order: the baseline from March, candidates from May, January and April; vgg16 only
    in some of them."""
    base = dated_sweep(
        tmp_path / "march", "2026-03-02T09:00:00Z", {("resnet50", 64): [170.0, 170.0], ("vgg16", 64): [110.0, 110.0]}
    )
    may = dated_sweep(tmp_path / "may", "2026-05-20T09:00:00Z", {("resnet50", 64): [180.0, 180.0]})
    january = dated_sweep(
        tmp_path / "january", "2026-01-10T09:00:00Z", {("resnet50", 64): [160.0, 160.0], ("vgg16", 64): [100.0, 100.0]}
    )
    april = dated_sweep(
        tmp_path / "april", "2026-04-01T09:00:00+02:00", {("resnet50", 64): [175.0, 175.0], ("vgg16", 64): ["oom"]}
    )
    return [base, may, january, april]


def test_one_series_per_configuration_with_its_points_in_date_order(history):
    series = plothistory.history_series(sweep_vs_sweeps(history[0], history[1:]))
    assert [s.label for s in series] == ["resnet50, batch size 64", "vgg16, batch size 64"]
    resnet, vgg = series
    assert [p.sweep for p in resnet.points] == ["january", "march", "april", "may"]
    assert [p.value for p in resnet.points] == [160.0, 170.0, 175.0, 180.0]
    assert [p.baseline for p in resnet.points] == [False, True, False, False]
    assert [p.when.isoformat() for p in resnet.points][2] == "2026-04-01T09:00:00+02:00"
    # april's vgg16 ran out of memory and may has none: no point, the line goes on between the others
    assert [(p.sweep, p.value) for p in vgg.points] == [("january", 100.0), ("march", 110.0)]


@pytest.mark.slow
def test_a_sweep_without_a_start_time_is_named_in_the_error(history):
    meta = json.loads((history[2] / "sweep.json").read_text(encoding="utf-8"))
    meta["created_at"] = None
    (history[2] / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(UsageError, match="january.*no start time"):
        plothistory.history_series(sweep_vs_sweeps(history[0], history[1:]))


@pytest.mark.slow  # draws a figure with matplotlib: seconds in process, and its first import may run fc-list
def test_the_figure_draws_a_line_per_configuration_and_marks_the_baseline(history):
    from matplotlib.dates import num2date

    fig = plothistory.history_figure(sweep_vs_sweeps(history[0], history[1:]))
    assert len(fig.axes) == 2  # two configurations, no empty panel
    for ax, count in zip(fig.axes, (4, 2)):
        (line,) = [ln for ln in ax.get_lines() if ln.get_gid() == "history"]
        (star,) = [ln for ln in ax.get_lines() if ln.get_gid() == "baseline"]
        dates = [num2date(x) for x in line.get_xdata(orig=False)]
        assert len(dates) == count and dates == sorted(dates)
        assert list(star.get_ydata()) == [170.0 if count == 4 else 110.0]
        low, high = ax.get_ylim()
        assert high - low >= 0.1 * max(line.get_ydata())  # noise is not magnified into a trend


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_compare_with_three_sweeps_writes_the_history_plot(cli, history, tmp_path, suffix):
    out = tmp_path / ("history." + suffix)
    result = cli("compare", *history, "--plot", out)
    assert result.returncode == 0, result
    assert "wrote %s" % out in result.stderr
    data = out.read_bytes()
    if suffix == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", data[16:24])
        assert width > 500 and height > 300
    else:
        text = data.decode()
        assert ET.fromstring(data).tag.endswith("svg")
        assert "over time" in text and "Mar" in text  # the title, the date axis (matplotlib's text comments)
    # two sweeps keep the bar plot (a history needs more than two points)
    bars = tmp_path / "ab.svg"
    assert cli("compare", history[0], history[1], "--plot", bars).returncode == 0
    assert "over time" not in bars.read_text(encoding="utf-8")

"""`compare --rank --plot FILE`: the ranking as one horizontal-bar chart, best first, each GPU's figure
relative to the measured one (100%), the measured bar standing out, each label saying how many
configurations the comparison rests on. matplotlib is imported only through plot's helpers."""

import textwrap
from typing import TYPE_CHECKING

from tfcnnwrap.errors import UsageError
from tfcnnwrap.present.comparetext import conditions_line, count_unit
from tfcnnwrap.present.plot import MEASURED_COLOR, REFERENCE_COLOR, new_figure, save_figure
from tfcnnwrap.present.ranktext import RANKED_BY, placement

if TYPE_CHECKING:
    from tfcnnwrap.results.comparison import Ranking


def plot_rank(ranking: "Ranking", path: str) -> None:
    bars = []
    for row in ranking.rows:
        if row.rank is None or row.relative_pct is None:  # a ranked row has its figure
            continue
        label = "%s (%d of %d)" % (row.gpu, row.configurations, ranking.of)
        bars.append(
            {
                "label": ("> " + label) if row.measured else label,
                "value": row.relative_pct,
                "text": "%.1f%%" % row.relative_pct,
                "color": MEASURED_COLOR if row.measured else REFERENCE_COLOR,
            }
        )
    if len(bars) < 2:
        raise UsageError("nothing to plot: no reference GPU has a figure under this sweep's conditions")
    panel = {
        "title": "%s relative to %s (dashed: 100%%)" % (RANKED_BY[ranking.per], ranking.measured_row.gpu),
        "bars": bars,
        "line": 100.0,
        "xlabel": "reference / measured, % (geometric mean over shared configurations)",
    }
    footnotes = [
        placement(ranking),
        "Labels: how many of the sweep's configurations each comparison rests on. This sweep: %s."
        % conditions_line(ranking.sweep.conditions(), ", ", count_unit(ranking.sweep)),
    ]
    unranked = [r.gpu for r in ranking.rows if r.rank is None]
    if unranked:
        footnotes.append(
            "Not ranked (no published %s): %s" % ("power" if ranking.per == "watt" else "price", ", ".join(unranked))
        )

    title = "%s among published references" % ranking.measured_row.gpu
    # new_figure gives each footnote one line of height: wrap them to the figure's width first.
    lines = [part for note in footnotes for part in textwrap.wrap(note, 95)]
    save_figure(new_figure([panel], title, lines), path)

"""The t table the 95 % intervals use instead of importing scipy (results/tdist.py) holds scipy's own values."""

import pytest
from scipy.special import stdtrit

from tfcnnwrap.results.aggregate import ci95_pct
from tfcnnwrap.results.tdist import T975, t975


def test_every_value_of_the_table_is_scipys():
    # to 14 digits, not the last bit: a scipy release may round its last bit otherwise (the table: scipy 1.17)
    assert len(T975) == 100
    assert list(T975) == pytest.approx([float(stdtrit(df, 0.975)) for df in range(1, 101)], rel=1e-14, abs=0)


@pytest.mark.parametrize("df", [1, 2, 29, 100, 101, 250, 2.5, 37.25])
def test_t975_is_scipys_inside_and_beyond_the_table(df):
    assert t975(df) == pytest.approx(float(stdtrit(df, 0.975)), rel=1e-14, abs=0)


def test_the_interval_of_three_runs_is_the_textbook_one():
    # mean 100, std 1, n 3: 4.303 * 1 / sqrt(3) = 2.484 % of the mean
    assert ci95_pct(1.0, 3, 100.0) == pytest.approx(2.4841, abs=1e-4)

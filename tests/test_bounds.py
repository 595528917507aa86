"""Numbers on the command line: ASCII digits only (no Unicode digits, underscores or negative zero), and
bounds that refuse what means nothing (a price of 1e-300), for sweep's and compare's flags and the bounds
themselves."""

import pytest
from conftest import assert_clean_error


@pytest.mark.slow
@pytest.mark.parametrize(
    "flag, value",
    [
        ("--num-gpus", "\u0661"),
        ("--num-gpus", "1,\u0662"),
        ("--runs", "1_0"),
        ("--num-batches", "\uff11\uff10"),
        ("--timeout", "1_000"),
        ("--cooldown", "\u0665"),
        ("--runs", "-0"),
    ],
)
def test_sweep_numbers_are_ascii_digits_only(cli, tmp_path, flag, value):
    result = cli("sweep", flag, value, "--dry-run", "--out", tmp_path / "s", cwd=tmp_path)
    assert_clean_error(result, 2, flag)
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "flag, value",
    [
        ("--fail-on-regression", "-0"),
        ("--fail-on-regression", "-0.0"),
        ("--fail-on-regression", "\u0665"),
        ("--fail-on-regression", "5_0"),
    ],
)
def test_compare_gate_takes_plain_numbers(cli, tmp_path, flag, value):
    assert_clean_error(cli("compare", tmp_path, tmp_path, flag, value, cwd=tmp_path), 2, flag)


@pytest.mark.slow
def test_a_price_too_small_to_mean_anything_is_refused(cli, tmp_path):
    line = assert_clean_error(
        cli("compare", tmp_path, "--rank", "--per", "dollar", "--price", "1e-300", cwd=tmp_path), 2, "--price"
    )
    assert len(line) < 300


def test_bounds_refuse_unicode_digits_underscores_and_negative_zero():
    from tfcnnwrap import bounds

    for bound, text in (
        (bounds.NUM_GPUS, "\u0661"),
        (bounds.RUNS, "1_0"),
        (bounds.PS, "-0"),
        (bounds.FAIL_ON_REGRESSION, "-0"),
        (bounds.FAIL_ON_REGRESSION, "-0e0"),
        (bounds.TIMEOUT, "\u0661\u0660"),
        (bounds.PRICE, "1e-300"),
        (bounds.PRICE, "0.5"),
    ):
        with pytest.raises(bounds.OutOfBounds):
            bound.parse(text)
    assert bounds.PS.parse("0") == 0 and bounds.FAIL_ON_REGRESSION.parse("0") == 0.0
    assert bounds.RUNS.parse(" 10 ") == 10 and bounds.PRICE.parse("499") == 499.0
    assert bounds.NUM_GPUS.parse_list("1, 2") == [1, 2] and bounds.TIMEOUT.parse("+5") == 5.0

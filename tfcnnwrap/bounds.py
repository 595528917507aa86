"""The range of every number tfcnnwrap takes: one place, so the CLI, the plan and a resumed sweep agree.

Unbounded numbers broke things: ``--runs 1e20 --dry-run`` built a list until memory ran out, ``--timeout
inf`` made ``threading.Timer`` raise. Each bound is generous for real use and small enough that nothing
downstream can overflow. docs/usage.md lists them.

Standard library only: the CLI's parsers import this for ``--help``.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # typing's own flag would import typing, which --help does without (cli, bounds, errors)
if TYPE_CHECKING:
    from typing import Any, List, Union

MAX_TEXT = 40  # longer number texts are refused before int()/float() spend time on them
MAX_LIST = 16  # most values in a comma-separated list (--num-gpus 1,2,4,8)


class OutOfBounds(ValueError):
    """The message says what was expected and what was given, without the flag (the caller names it)."""


class Bound:
    """A whole number or a finite decimal within [low, high] (``low`` excluded when ``low_open``)."""

    def __init__(
        self, flag: str, low: float, high: float, whole: bool = True, low_open: bool = False, unit: str = ""
    ) -> None:
        self.flag, self.low, self.high = flag, low, high
        self.whole, self.low_open, self.unit = whole, low_open, unit

    def describe(self) -> str:
        unit = " " + self.unit if self.unit else ""
        if self.whole:
            return "a whole number from %d to %d%s" % (self.low, self.high, unit)
        if self.low_open:
            return "a number more than %g and at most %g%s" % (self.low, self.high, unit)
        return "a number from %g to %g%s" % (self.low, self.high, unit)

    def parse(self, value: object) -> Any:  # int for a whole bound, else float: callers take the kind their flag is
        """``value`` (text or a number) as an int or float within bounds, else OutOfBounds."""
        number = self._number(value)
        too_low = number <= self.low if self.low_open else number < self.low
        if too_low or number > self.high:
            raise OutOfBounds("must be %s, got %s" % (self.describe(), _shown(value)))
        return number

    def parse_list(self, value: str) -> List[Any]:
        """'1,2,4' -> [1, 2, 4]: each within bounds, no repeats, at most MAX_LIST values."""
        parts = [p.strip() for p in str(value).split(",")]
        if not all(parts):
            raise OutOfBounds("takes N[,N...] with no empty item, got %s" % _shown(value))
        if len(parts) > MAX_LIST:
            raise OutOfBounds("takes at most %d values, got %d" % (MAX_LIST, len(parts)))
        numbers = [self.parse(p) for p in parts]
        if len(set(numbers)) != len(numbers):
            raise OutOfBounds("lists a value twice: %s" % _shown(value))
        return numbers

    def _number(self, value: object) -> Union[int, float]:
        if isinstance(value, bool):
            raise OutOfBounds("must be %s, got %s" % (self.describe(), _shown(value)))
        text = value if isinstance(value, str) else repr(value)
        text = text.strip()
        number: float
        try:
            # int() and float() also take other scripts' digits (١ is 1) and underscores (1_0 is 10): a
            # typo or a pasted character is no number here. "-0" is refused as "-5" would be.
            if len(text) > MAX_TEXT or not text.isascii() or "_" in text:
                raise ValueError(text)
            if self.whole:
                if isinstance(value, float) and value.is_integer():
                    return int(value)
                number = int(text)
                if number == 0 and text.startswith("-"):
                    raise ValueError(text)
                return number
            number = float(text)
        except (ValueError, OverflowError):
            raise OutOfBounds("must be %s, got %s" % (self.describe(), _shown(value))) from None
        if not math.isfinite(number) or (number == 0 and text.startswith("-")):
            raise OutOfBounds("must be %s, got %s" % (self.describe(), _shown(value)))
        return number


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "...")


DAY_S = 24 * 3600

RUNS = Bound("--runs", 1, 1000)
MAX_RUNS = Bound("--max-runs", 1, 1000)
BATCH_SIZE = Bound("--batch-size", 1, 65536, unit="per device")
NUM_BATCHES = Bound("--num-batches", 1, 10000000)
NUM_WARMUP_BATCHES = Bound("--num-warmup-batches", 0, 1000000)
NUM_GPUS = Bound("--num-gpus", 1, 64)
WORKERS = Bound("--workers", 1, 64)
PS = Bound("--ps", 0, 64)
TIMEOUT = Bound("--timeout", 0, 7 * DAY_S, whole=False, low_open=True, unit="seconds")
COOLDOWN = Bound("--cooldown", 0, 3600, whole=False, unit="seconds")
GENERATED_IMAGES = Bound("--data generated:N", 8, 100000, unit="images")
COOL_TO = Bound("--cool-to", 20, 100, whole=False, unit="degrees Celsius")
UNTIL_CI = Bound("--until-ci", 0, 100, whole=False, low_open=True, unit="percent")
FAIL_ON_REGRESSION = Bound("--fail-on-regression", 0, 100, whole=False, unit="percent")
# a GPU's price and power: below 1 USD or 1 W no card exists, and a tiny one (1e-300) made 300-digit figures
PRICE = Bound("--price", 1, 10000000, whole=False, unit="USD")
WATTS = Bound("--watts", 1, 100000, whole=False, unit="W")
# What a bundle from someone else may claim (tfcnnwrap.share.verify): no GPU sustains a million images/sec.
IMAGES_PER_SEC = Bound("images/sec", 0, 1000000, whole=False, low_open=True)

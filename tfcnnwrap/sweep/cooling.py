"""Thermal control between runs (`--cooldown`, `--cool-to`), each run's steadiness, and the end-of-sweep
throttle warning: what makes a sweep's numbers comparable run to run.

Waits block on the sweep's stop requests (``StopRequests.wait``), so Ctrl-C ends a pause at once; nothing
busy-waits. ``--cool-to`` asks nvidia-smi for the temperatures every ``POLL_S`` seconds (a wait for an
outside condition; nothing to block on), for at most ``COOL_MAX_S``.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from tfcnnwrap.run import logparse

if TYPE_CHECKING:
    from pathlib import Path

    from tfcnnwrap.run.stopping import StopRequests
    from tfcnnwrap.run.telemetry import Telemetry
    from tfcnnwrap.sweep.runlife import CoolingState, Display, SweepContext

POLL_S = 2.0
COOL_MAX_S = 600.0
ENV_POLL_S = "TFCNNWRAP_COOL_POLL_S"  # a shorter poll, for tests and the impatient


def _poll_s() -> float:
    try:
        value = float(os.environ.get(ENV_POLL_S, POLL_S))
    except ValueError:
        return POLL_S
    return value if 0 < value <= 60 else POLL_S


def _wait(stops: Optional[StopRequests], seconds: float) -> bool:
    """Wait ``seconds``, or less when a stop is requested; True when one was."""
    if stops is None or not hasattr(stops, "wait"):
        time.sleep(seconds)
        return False
    return stops.wait(seconds)


def _show(display: Display, text: str) -> None:
    waiting = getattr(display, "waiting", None)
    if waiting is not None:
        waiting(text)


def wait_until_cool(
    read_temps: Callable[[], Dict[Any, Any]],
    limit_c: float,
    stops: Optional[StopRequests] = None,
    show: Optional[Callable[[str], object]] = None,
    poll_s: Optional[float] = None,
    max_s: float = COOL_MAX_S,
    clock: Callable[[], float] = time.monotonic,
) -> Tuple[float, Dict[Any, Any], bool]:
    """Poll ``read_temps()`` ({index: °C}) until every GPU reads <= ``limit_c``, at most ``max_s``.

    (waited seconds, last temperatures, reached): ``reached`` False after ``max_s`` or a stop request.
    """
    poll_s = _poll_s() if poll_s is None else poll_s
    start = clock()
    while True:
        temps = read_temps()
        waited = clock() - start
        if not temps or max(temps.values()) <= limit_c:
            return waited, temps, True
        if waited >= max_s:
            return waited, temps, False
        if show is not None:
            hottest = max(temps, key=lambda index: temps[index])
            show(
                "cooling: GPU %d at %g °C, waiting for <= %g °C (%ds of at most %ds)"
                % (hottest, temps[hottest], limit_c, waited, max_s)
            )
        if _wait(stops, min(poll_s, max(0.0, max_s - waited))):
            return clock() - start, temps, False


def before_run(ctx: SweepContext, display: Display, state: CoolingState, warn: Callable) -> Dict[str, Any]:
    """The pause and the cool-down before one run: {"cooldown_s", "start_temp_c"} for its record, and
    ``cool_to_problem`` when nvidia-smi could not give the temperatures --cool-to waits on."""
    plan, tele = ctx.plan, ctx.telemetry
    cooldown, cool_to = getattr(plan, "cooldown_s", None), getattr(plan, "cool_to_c", None)
    out: dict = {}
    problems: list = []
    waited, temps = 0.0, None
    started = time.monotonic()
    if cooldown and state.started:
        pause = getattr(display, "pause", None)  # the live view counts the pause down
        if pause is not None:
            pause(cooldown)
        else:
            _show(display, "cooling down: %g s between runs (Ctrl-C stops)" % cooldown)
        _wait(ctx.stops, cooldown)
    if cool_to is not None and tele is None and not state.warned_no_smi:
        state.warned_no_smi = True
        warn("--cool-to needs GPU telemetry (nvidia-smi on a GPU sweep): not waiting for the GPUs to cool")
    if cool_to is not None and tele is not None and not _stopped(ctx):
        temps = _cool_to(ctx, display, cool_to, problems, warn)
    if cooldown or cool_to is not None:
        waited = time.monotonic() - started
        out["cooldown_s"] = round(waited, 3)
    if tele is not None and not _stopped(ctx):
        # --cool-to asks nvidia-smi as it waits; otherwise the sweep's sampler's newest tick, when fresh, costs
        # no process (Telemetry.temps_now)
        if not temps:
            temps = _read(tele, ctx.stops, problems) if cool_to is not None else _start_temps(tele, ctx.stops)
        if temps:
            out["start_temp_c"] = max(temps.values())
    problems = [p for p in problems if p != "stopped"]
    if problems:
        out["cool_to_problem"] = problems[-1]
        if not state.warned:  # once per sweep: each record names its own problem
            state.warned.add(problems[-1])
            warn(
                "--cool-to: %s: %s"
                % (
                    problems[-1],
                    "those readings are ignored"
                    if temps
                    else "not waiting for the GPUs to cool, the run goes ahead (its record says cool_to_problem)",
                )
            )
    state.started += 1
    return out


def _stopped(ctx: SweepContext) -> bool:
    return bool(ctx.stops and ctx.stops.requested)


def _read(tele: Optional[Telemetry], stops: Optional[StopRequests], problems: List[Any]) -> Dict[int, int]:
    """The temperatures now (a stop request ends the query at once); what was wrong goes into ``problems``."""
    if tele is None:  # --cool-to asks only when there is telemetry; none is no temperature, not a crash
        return {}
    temps, problem = tele.read_temps(stops) if hasattr(tele, "read_temps") else (tele.temps(), None)
    if problem:
        problems.append(problem)
    return temps


def _start_temps(tele: Telemetry, stops: Optional[StopRequests]) -> Dict[int, int]:
    temps_now = getattr(tele, "temps_now", None)  # a stand-in telemetry may only read
    return temps_now(stops)[0] if temps_now is not None else _read(tele, stops, [])


def _cool_to(
    ctx: SweepContext, display: Display, cool_to: float, problems: List[Any], warn: Callable
) -> Dict[int, int]:
    """Wait until the GPUs read <= ``cool_to``: the last temperatures read ({} when nvidia-smi gave none)."""
    _, temps, reached = wait_until_cool(
        lambda: _read(ctx.telemetry, ctx.stops, problems), cool_to, ctx.stops, lambda text: _show(display, text)
    )
    if not reached and temps and not _stopped(ctx):
        warn(
            "the GPUs did not cool to %g °C within %d minutes (hottest %g °C): running anyway"
            % (cool_to, COOL_MAX_S // 60, max(temps.values()))
        )
    return temps


def steadiness_fields(log_path: Path) -> Dict[str, Any]:
    """{"steady_images_per_sec", "drift_pct", "drifting"} from a run's log, {} with too few step lines."""
    try:
        rates = logparse.step_rates_file(log_path)
    except OSError:
        return {}
    found = logparse.steadiness(rates)
    if found is None:
        return {}
    return {
        "steady_images_per_sec": found.steady_images_per_sec,
        "drift_pct": found.drift_pct,
        "drifting": found.drifting,
    }

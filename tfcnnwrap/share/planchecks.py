"""A bundle's ``plan`` against its runs: every planned run present, numbered without gaps (`verify`'s part).

The plan (written by `export` from bundle format 2 on; a format-1 bundle is checked when it carries one) holds
the runs asked per configuration, the until-ci bounds, the configurations and the runs never started. A
configuration's runs, with those never started, are numbered 1..n without a gap, every number as often (a fleet
sweep has each number once per host), n the runs asked (with ``until_ci``: from ``runs`` to ``max_runs``).
A run never started is not a failure: the bundle verifies and says it is incomplete.
"""

from __future__ import annotations

from collections import Counter
from itertools import islice
from typing import Dict, List, Sequence, Set, Tuple

from tfcnnwrap.results.bundlerecords import Bundle, BundleRun, Config
from tfcnnwrap.share import bundle as bundles

_MOST_FINDINGS = 50  # verify shows no more


def _numbering(name: str, numbers: List[int], runs: int, most: int) -> List[str]:
    """A configuration's run numbers (with those never started): 1..n, each as often, runs <= n <= most."""
    if not numbers:
        return ["plan: %s: planned, yet no run of it is in the bundle (nor listed as never started)" % name]
    counts = Counter(numbers)  # a count per number: numbers.count(k) for each k was n^2 on a hostile plan
    top, copies = max(counts), counts[1]
    whole = min(counts) >= 1 and len(counts) == top and len(set(counts.values())) == 1  # in O(n), not O(top)
    missing = [] if whole else list(islice((k for k in range(1, top + 1) if counts[k] != copies), 10))
    if missing:
        return [
            "plan: %s: runs %s missing (numbered 1 to %d, without gaps, in a genuine bundle)"
            % (name, ", ".join(map(str, missing[:10])), top)
        ]
    if not runs <= top <= most:
        asked = "%d" % runs if runs == most else "%d to %d" % (runs, most)
        return ["plan: %s: %d runs, the plan asks %s" % (name, top, asked)]
    return []


def _twice(runs: Sequence[BundleRun], fleet: bool) -> List[str]:
    """A run number is once per configuration, or once per host of a fleet (each host's runs name it): a copy
    of a run (the fastest one, twice) would otherwise pass as a fleet's second host."""
    seen: Set[Tuple[object, ...]] = set()
    out: List[str] = []
    for run in runs:
        host = run.host if fleet else None
        key = (run.model, run.batch_size, run.devices, host, run.run)
        if key in seen and len(out) < 10:
            out.append(
                "plan: %s bs%s gpus %s run %s is there twice%s"
                % (key[:3] + (key[4], " (host %s)" % host if host else ""))
            )
        seen.add(key)
    return out


def plan_findings(bundle: Bundle) -> Tuple[List[str], List[str]]:
    """(findings, notes): what disagrees with the plan, and "incomplete: ..." when runs never started."""
    if not bundle.has_plan:
        if bundle.format >= bundles.PLAN_FORMAT:
            return ["bundle format %d carries no plan (the runs asked per configuration)" % bundle.format], []
        return [], []
    plan = bundle.plan
    if plan is None:
        return [
            "its plan is not one: `plan` needs runs, until_ci, max_runs, configurations (model, batch_size, "
            "num_gpus) and not_started (each with its run)"
        ], []
    runs, most, never = plan.runs, plan.most_runs, plan.not_started
    numbers: Dict[Config, List[int]] = {c: [] for c in plan.configurations}
    out = _twice(bundle.runs, bundle.conditions.fleet)
    for run in bundle.runs:
        config = run.config
        if config not in numbers:
            out.append("plan: %s bs%s gpus %s run %s is not in the bundle's plan" % (config + (run.run,)))
            continue
        numbers[config].append(run.run)
    ran: Dict[Config, Set[int]] = {c: set(found) for c, found in numbers.items()}
    for config, number in never:
        if number in ran.get(config, ()):
            out.append(
                "plan: %s bs%s gpus %s run %s is listed as never started, yet it is there" % (config + (number,))
            )
        elif config in numbers:
            numbers[config].append(number)
    for config, found in numbers.items():
        if len(out) >= _MOST_FINDINGS:  # a gap costs its configuration's top number: 50 of them, not 200,000
            break
        out.extend(_numbering("%s bs%s gpus %s" % config, found, runs, most))
    notes = (
        ["incomplete: %d planned run%s never started" % (len(never), "" if len(never) == 1 else "s")] if never else []
    )
    return out, notes

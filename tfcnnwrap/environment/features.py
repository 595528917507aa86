"""--fp16 and --xla as the checked-out tf_cnn_benchmarks branch spells them.

Pure apart from reading the checkout's ``benchmark_cnn.py`` for a branch this table does not know.

Checked in tensorflow/benchmarks (``git grep "use_fp16\\|'xla'\\|xla_compile" BRANCH --
scripts/tf_cnn_benchmarks/benchmark_cnn.py``): every cnn_tf_vX.Y_compatible branch from 1.5 to 2.1 and master
defines ``use_fp16`` and ``xla`` (1.5 as ParamSpecs, later as absl flags); ``xla_compile`` (whole-graph
compilation, fatal on an op XLA cannot compile) exists from 1.12 on. ``--xla`` means the auto-jit ``--xla``,
which every branch has and the published XLA figures used; ``xla_compile`` stays a pass-through flag.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Set

from tfcnnwrap.environment.versions import KNOWN_BRANCHES
from tfcnnwrap.errors import UsageError
from tfcnnwrap.results.plan import FEATURE_FLAGS

_EVERY_FEATURE = {feature: theirs[0] for feature, (_, theirs) in FEATURE_FLAGS.items()}
# branch -> {feature: the upstream flag that turns it on}
BRANCH_FLAGS = {branch: dict(_EVERY_FEATURE) for branch in KNOWN_BRANCHES}
FEATURE_OPTIONS = {feature: ours for feature, (ours, _) in FEATURE_FLAGS.items()}


def defined_flags(source: str) -> Set[str]:
    """The flag names a benchmark_cnn.py defines (absl ``flags.DEFINE_x('name'`` or a 1.5-era ParamSpec key)."""
    names = set(re.findall(r"""DEFINE_\w+\(\s*['"](\w+)['"]""", source))
    names.update(re.findall(r"""^\s*['"](\w+)['"]\s*:\s*(?:\n\s*)?ParamSpec""", source, re.M))
    return names


def branch_flags(features: Iterable[str], branch: Optional[str], source: Optional[str] = None) -> List[str]:
    """``--use_fp16=True`` / ``--xla=True`` for the wanted ``features`` ("fp16", "xla") on ``branch``.

    A branch outside the table (a fork, a ``setup --branch`` of one's own) is judged by its checkout's
    ``benchmark_cnn.py`` text (``source``); UsageError names a feature the branch does not know.
    """
    features = [f for f in FEATURE_FLAGS if f in features]
    if not features:
        return []
    table = BRANCH_FLAGS.get(branch or "")
    if table is None:
        if source is None:
            raise UsageError(
                "cannot tell which flags %s uses for %s (no benchmark_cnn.py in the checkout): run `python -m "
                "tfcnnwrap setup` for a known branch, or pass them after -- instead (e.g. -- --use_fp16=True "
                "--xla=True)"
                % (
                    "branch %s" % branch if branch else "the checkout (its branch is unknown)",
                    " and ".join(FEATURE_OPTIONS[f] for f in features),
                )
            )
        known = defined_flags(source)
        table = {f: flag for f, flag in _EVERY_FEATURE.items() if flag in known}
    missing = [f for f in features if f not in table]
    if missing:
        raise UsageError(
            "the checked-out branch %s has no flag for %s; drop it, or run `python -m tfcnnwrap setup` for a "
            "newer branch" % (branch or "?", " or ".join(FEATURE_OPTIONS[f] for f in missing))
        )
    return ["--%s=True" % table[f] for f in features]

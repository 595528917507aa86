"""TensorFlow versions and tensorflow/benchmarks branch names: which branch fits which TensorFlow.

Pure functions (standard library only, no git): the branch list comes from the caller, who asked the remote.

The rule (CONTRACT.md, setup): ``cnn_tf_vX.Y_compatible`` when it exists upstream; a version newer than every
such branch -> ``master``; otherwise the newest such branch older than it with the same major version
(1.6 -> ``cnn_tf_v1.5_compatible``). Pre-releases and nightlies count as their X.Y.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from tfcnnwrap.errors import SetupError, UsageError

MASTER = "master"
COMPAT_TEMPLATE = "cnn_tf_v%d.%d_compatible"
# TensorFlow 2.16 switched tf.keras to Keras 3; tf_cnn_benchmarks then needs the tf-keras package and
# TF_USE_LEGACY_KERAS=1.
LEGACY_KERAS_FROM = (2, 16)

# Leading "v", then X.Y; anything after (".Z", "rc1", ".dev20261026", "-beta1", "+nv23.03") is ignored.
# The branches tensorflow/benchmarks has upstream (2026); used only where asking the remote is not wanted
# (doctor works offline). setup always asks the remote and caches its answer in the manifest.
KNOWN_BRANCHES = tuple(
    "cnn_tf_v%s_compatible" % v
    for v in ("1.5", "1.8", "1.9", "1.10", "1.11", "1.12", "1.13", "1.14", "1.15", "2.0", "2.1")
) + (MASTER,)

_VERSION = re.compile(r"^\s*[vV]?(\d+)\.(\d+)")
_COMPAT = re.compile(r"^cnn_tf_v(\d+)\.(\d+)_compatible$")


def parse_tf_version(text: Optional[str]) -> Tuple[int, int]:
    """``'2.23.0.dev20261026'`` -> ``(2, 23)``. Raises UsageError when ``text`` has no X.Y."""
    match = _VERSION.match(str(text or ""))
    if not match:
        raise UsageError(
            "cannot read a TensorFlow version from %r: give it as X.Y or X.Y.Z, e.g. --tf-version 1.12" % (text,)
        )
    return int(match.group(1)), int(match.group(2))


def format_version(version: Tuple[int, ...]) -> str:
    return "%d.%d" % tuple(version)


def compat_branch_name(version: Tuple[int, ...]) -> str:
    return COMPAT_TEMPLATE % tuple(version)


def short_branch_name(name: str) -> str:
    """``'refs/heads/master'`` -> ``'master'``; other names unchanged."""
    name = str(name)
    return name[len("refs/heads/") :] if name.startswith("refs/heads/") else name


def parse_compat_branch(name: str) -> Optional[Tuple[int, ...]]:
    """``'cnn_tf_v1.12_compatible'`` (or ``refs/heads/...``) -> ``(1, 12)``; None for any other name."""
    match = _COMPAT.match(short_branch_name(name))
    return (int(match.group(1)), int(match.group(2))) if match else None


def compat_branches(branch_names: Union[Dict[str, str], List[str]]) -> List[Any]:
    """The compat branches among ``branch_names``, oldest TensorFlow first."""
    found = {}
    for name in branch_names:
        version = parse_compat_branch(name)
        if version is not None:
            found[version] = compat_branch_name(version)
    return [found[v] for v in sorted(found)]


def choose_branch(tf_version: Union[str, Tuple[int, ...]], branch_names: Iterable[str]) -> Tuple[str, str]:
    """The upstream branch for ``tf_version`` (a string or (major, minor)) -> ``(branch, reason)``.

    Raises SetupError (naming --branch) when no branch fits: a version older than every compat branch of
    its major version (0.x, 1.0 ... 1.4, or a major version with no compat branch), or a version newer than
    every compat branch when upstream has no master.
    """
    version = tuple(tf_version) if isinstance(tf_version, (tuple, list)) else parse_tf_version(tf_version)
    shown = format_version(version)
    names = [short_branch_name(n) for n in branch_names]
    compat = {}
    for name in names:
        parsed = parse_compat_branch(name)
        if parsed is not None:
            compat[parsed] = name
    available = ", ".join(compat[v] for v in sorted(compat)) or "none"

    if version in compat:
        return compat[version], "TensorFlow %s has its own compatible branch upstream" % shown

    newest = max(compat) if compat else None
    if newest is None or version > newest:
        if MASTER not in names:
            raise SetupError(
                "upstream has no master branch for TensorFlow %s (compatible branches: %s); "
                "pick one with --branch NAME" % (shown, available)
            )
        if newest is None:
            return MASTER, "upstream has no cnn_tf_vX.Y_compatible branches; master is the only choice"
        return MASTER, "TensorFlow %s is newer than every compatible branch (newest: %s)" % (
            shown,
            compat[newest],
        )

    older = [v for v in compat if v < version and v[0] == version[0]]
    if not older:
        raise SetupError(
            "no tensorflow/benchmarks branch fits TensorFlow %s: upstream has no cnn_tf_v%d.Y_compatible branch "
            "at or below %s (compatible branches: %s); pick one with --branch NAME or upgrade TensorFlow"
            % (shown, version[0], shown, available)
        )
    best = max(older)
    return compat[best], "no branch for TensorFlow %s upstream; %s is the newest older one for TensorFlow %d.x" % (
        shown,
        compat[best],
        version[0],
    )


def needs_legacy_keras(tf_version: Union[Tuple[int, ...], str]) -> bool:
    """True for TensorFlow >= 2.16 (Keras 3): tf_cnn_benchmarks then needs tf-keras and TF_USE_LEGACY_KERAS=1."""
    version = tuple(tf_version) if isinstance(tf_version, (tuple, list)) else parse_tf_version(tf_version)
    return version >= LEGACY_KERAS_FROM

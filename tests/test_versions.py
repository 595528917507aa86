"""The branch rule as a pure function: TensorFlow version + upstream branch names -> branch + reason."""

import subprocess
import sys

import pytest
from conftest import COMPAT_BRANCHES

from tfcnnwrap.environment import versions
from tfcnnwrap.errors import SetupError, UsageError

UPSTREAM = COMPAT_BRANCHES + ["master", "keras-benchmarks", "s4tf", "cpbr-patch"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1.12.0", (1, 12)),
        ("1.12", (1, 12)),
        ("2.23.0.dev20261026", (2, 23)),
        ("2.16.0rc1", (2, 16)),
        ("2.16.0-rc1", (2, 16)),
        ("2.0.0-beta1", (2, 0)),
        ("1.15.5", (1, 15)),
        ("1.15.5+nv23.03", (1, 15)),
        ("2.1.3", (2, 1)),
        ("v2.0", (2, 0)),
        ("V1.8", (1, 8)),
        (" 1.9.0 ", (1, 9)),
        ("0.12.1", (0, 12)),
        ("10.200.3", (10, 200)),
    ],
)
def test_parse_tf_version(text, expected):
    assert versions.parse_tf_version(text) == expected


@pytest.mark.parametrize("text", ["", None, "1", "2.", "abc", "v", ".12", "one.two", "latest"])
def test_parse_tf_version_refuses_text_without_major_minor(text):
    with pytest.raises(UsageError, match="--tf-version"):
        versions.parse_tf_version(text)


def test_parse_compat_branch():
    assert versions.parse_compat_branch("cnn_tf_v1.12_compatible") == (1, 12)
    assert versions.parse_compat_branch("refs/heads/cnn_tf_v2.1_compatible") == (2, 1)
    for other in ("master", "cnn_tf_v1.12_compatible-old", "cnn_tf_v1_compatible", "xcnn_tf_v1.5_compatible"):
        assert versions.parse_compat_branch(other) is None


def test_compat_branches_sorts_by_version_not_text():
    assert versions.compat_branches(reversed(UPSTREAM)) == COMPAT_BRANCHES
    assert versions.compat_branches(["master"]) == []


# Every TensorFlow release line from 1.0 to 2.23, with the branch the contract's rule gives.
EXPECTED = {
    **{"1.%d" % m: None for m in range(0, 5)},  # older than every 1.x compat branch: no choice
    "1.5": "cnn_tf_v1.5_compatible",
    "1.6": "cnn_tf_v1.5_compatible",
    "1.7": "cnn_tf_v1.5_compatible",
    **{"1.%d" % m: "cnn_tf_v1.%d_compatible" % m for m in range(8, 16)},
    "2.0": "cnn_tf_v2.0_compatible",
    "2.1": "cnn_tf_v2.1_compatible",
    **{"2.%d" % m: "master" for m in range(2, 24)},
}


@pytest.mark.parametrize("line", sorted(EXPECTED, key=versions.parse_tf_version))
@pytest.mark.parametrize("suffix", ["", ".0", ".7", "rc1", ".0rc2", ".0-rc0", ".0.dev20261026", ".0-beta1"])
def test_choose_branch_across_every_release_line(line, suffix):
    expected = EXPECTED[line]
    if expected is None:
        with pytest.raises(SetupError, match="--branch"):
            versions.choose_branch(line + suffix, UPSTREAM)
    else:
        branch, reason = versions.choose_branch(line + suffix, UPSTREAM)
        assert branch == expected
        assert line in reason


def test_choose_branch_reasons_say_why():
    assert "own compatible branch" in versions.choose_branch("1.12.0", UPSTREAM)[1]
    reason = versions.choose_branch("1.6.0", UPSTREAM)[1]
    assert "newest older" in reason and "cnn_tf_v1.5_compatible" in reason
    reason = versions.choose_branch("2.23.0.dev20261026", UPSTREAM)[1]
    assert "newer than every" in reason and "cnn_tf_v2.1_compatible" in reason


def test_choose_branch_never_crosses_a_major_version():
    # 2.0 without its own branch must not fall back to a 1.x branch.
    branches = [b for b in UPSTREAM if b != "cnn_tf_v2.0_compatible"]
    with pytest.raises(SetupError) as err:
        versions.choose_branch("2.0.0", branches)
    assert "--branch" in err.value.message and "cnn_tf_v1.15_compatible" in err.value.message
    assert versions.choose_branch("2.1.0", branches)[0] == "cnn_tf_v2.1_compatible"


def test_choose_branch_fills_a_gap_with_the_newest_older_branch():
    branches = ["cnn_tf_v1.5_compatible", "cnn_tf_v1.10_compatible", "cnn_tf_v1.9_compatible", "master"]
    assert versions.choose_branch("1.9.1", branches)[0] == "cnn_tf_v1.9_compatible"
    assert versions.choose_branch("1.7", branches)[0] == "cnn_tf_v1.5_compatible"
    # 1.10 > 1.9 numerically even though "1.10" < "1.9" as text.
    assert versions.choose_branch("1.10.0", branches)[0] == "cnn_tf_v1.10_compatible"
    assert versions.choose_branch("1.11", branches)[0] == "master"


def test_choose_branch_zero_x_is_refused_with_the_existing_branches():
    with pytest.raises(SetupError) as err:
        versions.choose_branch("0.12.1", UPSTREAM)
    assert "cnn_tf_v1.5_compatible" in err.value.message and "--branch" in err.value.message
    assert err.value.exit_code == 2


def test_choose_branch_without_master():
    with pytest.raises(SetupError, match="no master"):
        versions.choose_branch("2.21", COMPAT_BRANCHES)
    assert versions.choose_branch("1.12", COMPAT_BRANCHES)[0] == "cnn_tf_v1.12_compatible"


def test_choose_branch_with_no_compat_branches_takes_master():
    assert versions.choose_branch("1.12", ["master", "s4tf"])[0] == "master"
    with pytest.raises(SetupError):
        versions.choose_branch("1.12", ["s4tf"])


def test_choose_branch_accepts_ref_names_and_tuples():
    refs = ["refs/heads/" + b for b in UPSTREAM]
    assert versions.choose_branch("1.12.0", refs)[0] == "cnn_tf_v1.12_compatible"
    assert versions.choose_branch((2, 21), refs)[0] == "master"


@pytest.mark.parametrize(
    "version, needed",
    [
        ("1.12.0", False),
        ("2.15.1", False),
        ("2.16.0rc1", True),
        ("2.16.1", True),
        ("2.21.0", True),
        ("2.23.0.dev20261026", True),
        ((2, 15), False),
        ("3.0", True),
    ],
)
def test_needs_legacy_keras(version, needed):
    assert versions.needs_legacy_keras(version) is needed


@pytest.mark.slow
def test_versions_module_imports_nothing_heavy():
    code = (
        "import sys, tfcnnwrap.environment.versions; "
        "heavy = [m for m in ('git', 'pandas', 'rich', 'scipy', 'tensorflow') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, check=True).stdout.decode()
    assert out.strip() == "[]"

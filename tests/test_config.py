"""The optional config file (issue 22.12): tfcnnwrap.toml in the user config directory remembers python,
vendor_dir and results_dir. Precedence, first match wins: flag > environment variable > config file > what
setup remembered (the manifest) > default. One test per step."""

import json
import os
from pathlib import Path

import pytest
from conftest import assert_clean_error, run_cli
from sweepdata import seed_runs, write_sweep

from tfcnnwrap import settings
from tfcnnwrap.environment import checkout
from tfcnnwrap.errors import UsageError


def _config(tmp_path, text):
    path = tmp_path / "conf" / "tfcnnwrap.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _env(config_path, **extra):
    return dict({settings.ENV_CONFIG: str(config_path)}, **extra)


def _vendor_with_last_setup(tmp_path, python):
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    (vendor / "tfcnnwrap-setup.json").write_text(json.dumps({"settings": {"python": python}}), encoding="utf-8")
    return vendor


FULL = 'python = "/cfg/python"\nvendor_dir = "/cfg/vendor"\nresults_dir = "/cfg/results"\n'


# --- the interpreter: flag > env > config > manifest > default ---------------------------------------------


def test_python_flag_beats_environment_and_config(tmp_path):
    env = _env(_config(tmp_path, FULL), TFCNNWRAP_PYTHON="/env/python")
    assert checkout.target_python("/flag/python", tmp_path, env) == ("/flag/python", "--python")


def test_python_environment_beats_config(tmp_path):
    env = _env(_config(tmp_path, FULL), TFCNNWRAP_PYTHON="/env/python")
    assert checkout.target_python(None, tmp_path, env) == ("/env/python", settings.ENV_PYTHON)


def test_python_config_beats_the_last_setup(tmp_path):
    path = _config(tmp_path, FULL)
    vendor = _vendor_with_last_setup(tmp_path, "/manifest/python")
    python, source = checkout.target_python(None, vendor, _env(path))
    assert python == "/cfg/python" and str(path) in source and "config file" in source


def test_python_last_setup_beats_default(tmp_path):
    vendor = _vendor_with_last_setup(tmp_path, "/manifest/python")
    python, source = checkout.target_python(None, vendor, _env(_config(tmp_path, 'vendor_dir = "v"\n')))
    assert python == "/manifest/python" and "last setup" in source


def test_python_default_is_the_running_interpreter(tmp_path):
    assert checkout.target_python(None, tmp_path, _env(_config(tmp_path, ""))) == (None, None)


# --- the vendor directory: flag > env > config > default ---------------------------------------------------


def test_vendor_dir_flag_beats_environment(tmp_path):
    env = _env(_config(tmp_path, FULL), TFCNNWRAP_VENDOR_DIR="/env/vendor")
    assert settings.vendor_dir("/flag/vendor", env) == (Path("/flag/vendor"), None)


def test_vendor_dir_environment_beats_config(tmp_path):
    env = _env(_config(tmp_path, FULL), TFCNNWRAP_VENDOR_DIR="/env/vendor")
    assert settings.vendor_dir(None, env) == (Path("/env/vendor"), settings.ENV_VENDOR_DIR)


def test_vendor_dir_config_beats_default_and_expands_home(tmp_path):
    path = _config(tmp_path, 'vendor_dir = "~/tf-vendor"\n')
    vendor, source = settings.vendor_dir(None, _env(path))
    assert vendor == Path(os.path.expanduser("~/tf-vendor")) and str(path) in source


def test_vendor_dir_default(tmp_path):
    assert settings.vendor_dir(None, _env(_config(tmp_path, ""))) == (Path("vendor"), None)


# --- the results directory: env > config > default ---------------------------------------------------------


def test_results_environment_beats_config(tmp_path):
    env = _env(_config(tmp_path, FULL), TFCNNWRAP_RESULTS="/env/results")
    assert settings.results_dir(env) == Path("/env/results")


def test_results_config_beats_default(tmp_path):
    assert settings.results_dir(_env(_config(tmp_path, FULL))) == Path("/cfg/results")


def test_results_default(tmp_path):
    assert settings.results_dir(_env(_config(tmp_path, ""))) == Path("results")


# --- where the file is, and what is refused ----------------------------------------------------------------


def test_default_location_is_the_user_config_dir(tmp_path, monkeypatch):
    import platformdirs

    monkeypatch.delenv(settings.ENV_CONFIG, raising=False)
    expected = Path(platformdirs.user_config_dir("tfcnnwrap", appauthor=False)) / "tfcnnwrap.toml"
    assert settings.config_path({}) == expected
    assert settings.config_path(_env(tmp_path / "x.toml")) == tmp_path / "x.toml"


def test_a_missing_default_file_is_no_config(tmp_path, monkeypatch):
    monkeypatch.setattr(settings, "config_path", lambda environ=None: tmp_path / "absent.toml")
    assert settings.read_config({}) == {}


@pytest.mark.parametrize(
    "text, needle",
    [
        ("python = /usr/bin/python3\n", "not valid TOML"),
        ('colour = "red"\n', "unknown setting 'colour'"),
        ("results_dir = 3\n", "results_dir must be"),
        ('vendor_dir = ""\n', "vendor_dir must be"),
        ('python = "a"\npython = "b"\n', "not valid TOML"),
    ],
)
def test_a_bad_file_is_one_usage_error_naming_it(tmp_path, text, needle):
    path = _config(tmp_path, text)
    with pytest.raises(UsageError) as caught:
        settings.read_config(_env(path))
    assert str(path) in caught.value.message and needle in caught.value.message
    assert "\n" not in caught.value.message


def test_a_named_file_that_does_not_exist_is_refused(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        settings.read_config(_env(tmp_path / "nope.toml"))


# --- through the CLI -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_report_finds_the_newest_sweep_under_the_configs_results_dir(tmp_path):
    results = tmp_path / "my results"
    write_sweep(results / "20261130-101500", seed_runs())
    path = _config(tmp_path, 'results_dir = "%s"\n' % results.as_posix())
    result = run_cli("report", "--format", "csv", cwd=tmp_path, env=_env(path))
    assert result.returncode == 0, result
    assert "resnet50" in result.stdout


@pytest.mark.slow
def test_malformed_config_is_one_line_naming_the_file_exit_2(tmp_path):
    path = _config(tmp_path, "results_dir = [unclosed\n")
    line = assert_clean_error(run_cli("report", cwd=tmp_path, env=_env(path)), 2, str(path), "not valid TOML")
    assert line.startswith("tfcnnwrap report: error: config file")


@pytest.mark.slow
def test_setup_takes_the_configs_python_over_the_last_setups(tmp_path, fake_upstream, fake_tf):
    old, new = fake_tf("1.12.0"), fake_tf("2.0.0")
    first = run_cli("setup", "--repo-url", fake_upstream.url, "--python", old, cwd=tmp_path)
    assert first.returncode == 0, first
    path = _config(tmp_path, 'python = "%s"\n' % Path(new).as_posix())
    again = run_cli("setup", cwd=tmp_path, env=_env(path))
    assert again.returncode == 0, again
    assert "to cnn_tf_v2.0_compatible" in again.stdout
    assert "python from the config file (%s)" % path in " ".join(again.stdout.split())

"""``tfcnnwrap config`` prints the effective settings and where each came from (issue 38.5): the flag-less
answer of settings.py, the environment, the config file, the last setup's manifest and the defaults."""

import json

import pytest
from conftest import make_vendor

pytestmark = pytest.mark.slow


def _rows(cli, tmp_path, env):
    result = cli("config", "--format", "json", cwd=tmp_path, env=env)
    assert result.returncode == 0 and result.stderr == "", result
    doc = json.loads(result.stdout)
    assert doc["kind"] == "config"
    return {row["setting"]: row for row in doc["rows"]}


def test_each_setting_names_its_source(cli, tmp_path):
    config = tmp_path / "tfcnnwrap.toml"
    config.write_text('results_dir = "%s"\n' % (tmp_path / "mine"))
    vendor = make_vendor(tmp_path / "vendor")
    rows = _rows(
        cli,
        tmp_path,
        {"TFCNNWRAP_CONFIG": config, "TFCNNWRAP_VENDOR_DIR": vendor, "TFCNNWRAP_PYTHON": "/opt/tf/bin/python"},
    )
    assert rows["config file"]["value"] == str(config) and "TFCNNWRAP_CONFIG" in rows["config file"]["from"]
    assert rows["python"]["value"] == "/opt/tf/bin/python" and rows["python"]["from"] == "TFCNNWRAP_PYTHON"
    assert rows["vendor_dir"]["value"] == str(vendor) and rows["vendor_dir"]["from"] == "TFCNNWRAP_VENDOR_DIR"
    assert rows["results_dir"]["value"] == str(tmp_path / "mine") and str(config) in rows["results_dir"]["from"]
    assert rows["repo_url"]["value"] == "https://github.com/tensorflow/benchmarks.git"
    assert "last setup" in rows["repo_url"]["from"], rows["repo_url"]
    assert "library" in rows and rows["library"]["from"] == "TFCNNWRAP_DATA"


def test_with_nothing_set_the_defaults_say_so(cli, tmp_path):
    rows = _rows(cli, tmp_path, {"TFCNNWRAP_CONFIG": "", "XDG_CONFIG_HOME": tmp_path / "xdg"})
    assert rows["results_dir"] == {"setting": "results_dir", "value": "results", "from": "default"}
    assert rows["vendor_dir"]["value"] == "vendor" and rows["vendor_dir"]["from"] == "default"
    assert "running tfcnnwrap" in rows["python"]["from"], rows["python"]
    assert rows["config file"]["value"] == str(tmp_path / "xdg" / "tfcnnwrap" / "tfcnnwrap.toml")
    assert rows["config file"]["from"] == "default (not there: nothing set by it)", rows["config file"]


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_table_fits_the_terminal(tmp_path, columns):
    from ptyscreen import run_in_pty

    screen = run_in_pty(["config"], columns=columns, cwd=tmp_path)
    assert screen.returncode == 0, screen
    assert "results_dir" in screen.text and "default" in screen.text, screen
    assert screen.widest() <= columns, screen

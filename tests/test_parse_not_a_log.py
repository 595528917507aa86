"""``parse`` on a file that is no tf_cnn_benchmarks log says so (issue 38.5): /etc/hostname was a
`no_result` row and "1 failed". A file named is a mistake like a missing one: exit 2, before any output."""

import pytest
from conftest import assert_clean_error

pytestmark = pytest.mark.slow


def test_a_file_that_is_no_log_is_named_as_such(cli, tmp_path):
    note = tmp_path / "hostname"
    note.write_text("builder-7\n")
    result = cli("parse", note, cwd=tmp_path)
    assert_clean_error(result, 2, "not a tf_cnn_benchmarks log", str(note))
    assert result.stdout == "", result.stdout


def test_a_file_named_like_a_log_is_still_read_whatever_it_holds(cli, tmp_path):
    empty = tmp_path / "run.log"  # a run that died before printing anything is still a log
    empty.write_text("")
    result = cli("parse", empty, "--format", "json", cwd=tmp_path)
    assert result.returncode == 1 and "no_result" in result.stdout, result

"""A library opened with create=False that does not exist answers queries with nothing and stores nothing."""

import pytest

from tfcnnwrap.share.library import Library


def test_missing_library_answers_empty_and_refuses_to_store(tmp_path):
    library = Library(tmp_path / "nowhere", create=False)
    assert library.db is None
    assert library.known_ids() == set()
    assert not library.has("0" * 64)
    assert library.rows() == [] and library.community_rows() == []
    with pytest.raises(RuntimeError, match="create=False"):
        library.add_rows(("0" * 64,) + ("",) * 12, [], b"data")
    assert not (tmp_path / "nowhere").exists()  # nothing written

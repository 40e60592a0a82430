"""`unused_path`: what is set aside never replaces what an earlier run set aside."""

from pathlib import Path

from rumi.fileio import unused_path


def test_a_taken_name_gets_the_next_free_suffix(tmp_path: Path) -> None:
    base = tmp_path / "rumi.db.corrupt-20261125-180000"
    assert unused_path(base) == base
    base.write_text("first")
    (tmp_path / f"{base.name}-2").write_text("second")
    assert unused_path(base) == tmp_path / f"{base.name}-3"

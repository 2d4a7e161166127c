"""load(): a folder (or multi-run file) keeps its readable runs when some are empty."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlvitals
from rlvitals.errors import EmptyInputError


def test_empty_run_among_several_is_noted_not_fatal(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("Step,runA - train/loss,runB - train/loss\n1,0.5,\n2,0.4,\n")
    runs = rlvitals.load(f)
    assert [r.path for r in runs] == [f"{f}#run=runA"]
    assert any("skipped an empty run" in n and "runB" in n for n in runs[0].notes)


def test_all_runs_empty_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("Step,runA - train/loss,runB - train/loss\n1,,\n2,,\n")
    with pytest.raises(EmptyInputError, match=r"none of its 2 runs holds metrics; first: .*runA"):
        rlvitals.load(f)

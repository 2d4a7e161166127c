"""docs/forecast.md shows what benchmarks/forecast_eval.py measures now: each table between its markers is
the script's output for that cut, so a change to the forecast that moves a figure fails here until the doc
says the new figures (regenerate with the command in the marker)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "forecast.md"
sys.path.insert(0, str(ROOT / "benchmarks"))

import forecast_eval  # noqa: E402

TABLE = re.compile(r"<!-- forecast_eval --seen ([0-9.]+) -->\n(.*?)\n<!-- end forecast_eval -->", re.S)


def test_the_doc_shows_what_the_evaluation_measures() -> None:
    tables = TABLE.findall(DOC.read_text(encoding="utf-8"))
    assert [float(seen) for seen, _ in tables] == [pytest.approx(1 / 3), 0.5]
    for seen, shown in tables:
        rows = forecast_eval.evaluate_all(float(seen))
        assert shown == forecast_eval.markdown(rows, forecast_eval.summary(rows)), f"--seen {seen}"

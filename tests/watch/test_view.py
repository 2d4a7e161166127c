"""What the live watch table shows of a run's forecast: a row under the layers, in the watch's language,
kept from the last full diagnosis while tail passes (which judge the sudden checks only) come and go."""

from __future__ import annotations

import io
from pathlib import Path

import rlvitals
from rlvitals.checks import load_checks
from rlvitals.diagnosis import diagnose
from rlvitals.watch.view import LiveView, forecast_text, layers_table

QWEN = "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log"


def _rendered(table: object) -> str:
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=400, color_system=None).print(table)
    return buf.getvalue()


def test_the_forecast_row_in_both_languages(real: Path) -> None:
    d = diagnose(rlvitals.load(real / QWEN)[0])
    assert d.forecast is not None
    en = forecast_text(d.forecast)
    assert en.startswith("openai/gsm8k/reward/mean@1: ceiling 0.597 (0.56") and "90% of the entropy spent" in en
    text = _rendered(layers_table({"q.log": d}, "en", {"q.log": d.forecast}))
    assert "forecast" in text and "ceiling 0.597" in text
    zh = _rendered(layers_table({"q.log": d}, "zh", {"q.log": d.forecast}))
    assert "预测" in zh and "的天花板 0.597" in zh and "熵已用掉 90%" in zh


def test_a_tail_pass_keeps_the_last_forecast(real: Path) -> None:
    run = rlvitals.load(real / QWEN)[0]
    full = diagnose(run)
    tail = diagnose(run, checks=[c for c in load_checks() if c.sudden])
    assert tail.forecast is None
    view = LiveView(io.StringIO(), io.StringIO())
    try:
        view.show({"q.log": full})
        view.show({"q.log": tail})
        assert view.forecasts["q.log"] is full.forecast
    finally:
        view.close()

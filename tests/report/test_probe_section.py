"""rlvitals probe's results in the report: the L6 section draws the faithfulness score over the probed
checkpoints, with the finding's onset on it — in the page model, and drawn in real headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser import ARTIFACTS, WARN_RGB, pixels

import rlvitals
from report.test_browser import Opened
from report.test_model import section, write_dump
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report
from rlvitals.rollout import PROBES_FILE

FAITH = (0.8, 0.82, 0.79, 0.8, 0.62, 0.45, 0.4, 0.38)
PROBED = (4, 8, 12, 16, 20, 24, 28, 30)


def _page(tmp: Path) -> tuple[Path, dict[str, Any]]:
    write_dump(tmp / "dump", steps=30)
    (tmp / "dump" / PROBES_FILE).write_text(
        "".join(json.dumps({"model": "ckpt", "step": s, "rollouts": 4, "reasoning/faithfulness": v}) + "\n"
                for s, v in zip(PROBED, FAITH, strict=True)), encoding="utf-8")
    (tmp / "train.jsonl").write_text("".join(json.dumps({"step": s, "critic/score/mean": 0.2 + 0.02 * s,
                                                         "actor/entropy": 0.5}) + "\n" for s in range(1, 31)),
                                     encoding="utf-8")
    analysis = rlvitals.analyze_rollouts(tmp / "dump")
    run = analysis.join(rlvitals.load(tmp / "train.jsonl")[0])
    page = build_page([run], [diagnose(run)], analysis)
    write_report(tmp / "report.html", page)
    return tmp / "report.html", page


def _faith_chart(page: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return next((c, page["charts"][c]) for c in section(page, "L6")["charts"]
                if "reasoning/faithfulness" in page["charts"][c]["keys"])


def test_the_l6_section_draws_faithfulness_over_the_probed_checkpoints(tmp_path: Path) -> None:
    _, page = _page(tmp_path)
    _, chart = _faith_chart(page)
    (line,) = chart["traces"]
    assert line["x"] == list(PROBED) and line["y"] == list(FAITH)
    (marker,) = [m for m in chart["markers"] if m["check"] == "faithfulness"]
    assert marker["status"] == "warn" and marker["onset"] == 24
    finding = next(f for f in section(page, "L6")["findings"] if f["check"] == "faithfulness")
    assert finding["status"] == "warn"


@pytest.mark.browser
def test_the_faithfulness_chart_is_drawn_with_its_points_and_onset(browser: Any, tmp_path: Path) -> None:
    path, page = _page(tmp_path)
    cid, _ = _faith_chart(page)
    opened = Opened(browser, path)
    try:
        fig = opened.page.locator(f"#{cid}")
        fig.scroll_into_view_if_needed()
        opened.page.wait_for_function(f"document.getElementById('{cid}').classList.contains('js-plotly-plot')")
        assert fig.locator(".scatterlayer .trace").first.locator(".point").count() == len(PROBED)
        ARTIFACTS.mkdir(exist_ok=True)
        shot = fig.screenshot(path=str(ARTIFACTS / "report_l6_faithfulness.png"))
        assert pixels(shot, WARN_RGB).sum() > 50  # the warning's onset line is drawn on the chart
        assert opened.errors == [] and opened.failed == []
    finally:
        opened.close()

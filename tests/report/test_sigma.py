"""The report's σ_G distribution in L3 (report/sigma.py): the page model, the HTML in both languages, and the
view in real headless Chromium. Rollouts constructed (a 0/1 reward, 8 rollouts a group, each group's success
probability drawn from Beta(0.6, 0.6): many groups always or never right, the rest mixed), joined onto a
simulated run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from markupsafe import escape as html_escape

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report
from rlvitals.report.charts import Page
from rlvitals.report.html import render_html
from rlvitals.report.sigma import BAND_KEYS, sigma_section
from rlvitals.rollout import spread
from rlvitals.synthetic.pathologies import Spec, scenario
from rlvitals.synthetic.scenarios import run_from_series


def rollouts(steps: int = 40, groups: int = 20) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    rows = []
    for step in range(1, steps + 1):
        for g in range(groups):
            p = rng.beta(0.6, 0.6)
            rows += [{"step": step, "prompt": f"q{g}", "response": str(i), "score": float(rng.random() < p)}
                     for i in range(8)]
    return rows


@pytest.fixture(scope="module")
def page() -> dict[str, Any]:
    run = run_from_series(scenario(Spec(steps=40, seed=1)))
    analysis = rlvitals.analyze_rollouts(rollouts(), ks=(1, 8))
    return build_page([run], [diagnose(run)], analysis)


def l3(page: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in page["sections"] if s["id"] == "L3")


def test_l3_has_the_band_chart_the_shape_and_the_three_readings(page: dict[str, Any]) -> None:
    sigma = l3(page)["sigma"]
    assert len(sigma) == 1 and sigma[0]["shape"] == "bimodal"
    chart = page["charts"][sigma[0]["chart"]]
    assert chart["kind"] == "stack" and chart["keys"] == sorted(BAND_KEYS) and chart["title"]["zh"]
    assert [r["shape"] for r in sigma[0]["readings"]] == ["at_zero", "spread", "bimodal"]
    assert sigma[0]["said"]["en"].startswith("Over the last fifth of the rollouts (steps 33–40)")
    assert "双峰" in sigma[0]["said"]["zh"]
    assert all(s["sigma"] == [] for s in page["sections"] if s["id"] != "L3")


def test_the_quantiles_share_one_chart_and_the_bands_are_not_lines(page: dict[str, Any]) -> None:
    charts = [page["charts"][c]["keys"] for c in l3(page)["charts"]]
    assert [f"group/reward_std/{q}" for q in ("p10", "p25", "p50", "p75", "p90")] in charts
    assert not any(k in BAND_KEYS for keys in charts for k in keys)


def test_the_html_says_every_reading_in_both_languages(page: dict[str, Any]) -> None:
    html = render_html(page)
    for shape, words in spread.READINGS.items():
        assert html_escape(str(words)) in html and html_escape(words.zh) in html, shape
    assert 'class="rlv-sigma" data-run="r0" data-shape="bimodal"' in html
    assert "组间 σ_G 分布：集中在 0、分散还是双峰" in html


def test_without_rollouts_there_is_no_sigma_view() -> None:
    run = run_from_series(scenario(Spec(steps=40, seed=1)))
    assert l3(build_page([run], [diagnose(run)]))["sigma"] == []
    assert sigma_section(Page(10), [("r0", run)]) == []


# -- in real Chromium ---------------------------------------------------------------------------------------

@pytest.mark.browser
def test_the_sigma_view_draws_and_switches_language_in_chromium(browser: Any, page: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    from browser import ARTIFACTS

    write_report(tmp_path / "report.html", page)
    p = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: errors.append(str(e)))
    try:
        p.goto((tmp_path / "report.html").as_uri())
        block = p.locator("section#layer-L3 .rlv-sigma")
        block.scroll_into_view_if_needed()
        cid = l3(page)["sigma"][0]["chart"]
        p.locator(f"#{cid}").scroll_into_view_if_needed()
        p.wait_for_function(f"document.getElementById('{cid}').classList.contains('js-plotly-plot')")
        # five stacked bands drawn, one trace each
        assert p.evaluate(f"document.getElementById('{cid}').data.length") == 5
        assert block.locator("li.rlv-now .l-en").inner_text().startswith("bimodal: a heap of groups at σ_G = 0")
        assert block.locator("li").count() == 3
        assert re.search(r"is bimodal: \d+% of the groups at 0", block.locator("p").first.locator(".l-en").inner_text())
        ARTIFACTS.mkdir(exist_ok=True)
        block.screenshot(path=str(ARTIFACTS / "report_sigma_en.png"))
        p.click("button[data-set-lang=zh]")
        assert block.locator("li.rlv-now .l-zh").inner_text().startswith("双峰")
        assert block.locator("li.rlv-now .l-zh").is_visible() and not block.locator("li.rlv-now .l-en").is_visible()
        block.screenshot(path=str(ARTIFACTS / "report_sigma_zh.png"))
        assert not errors, errors
    finally:
        p.close()

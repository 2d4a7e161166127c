"""The page model of the answer first, on a real failing veRL run of the corpus: the curves drawn with the answer
(each warn and fail finding's, the root cause's first, never a note's alone), which layers' curves are open,
the layers' short names, and one headline line per validation source and run (the curve the checks judge)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rlvitals
from rlvitals.catalog.catalog import load_catalog
from rlvitals.checks import RunView, core_tracks
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, render_html
from rlvitals.report.model import ACT, answer_charts

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
FAILING = CORPUS / "verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse" / "output.log"


@pytest.fixture(scope="module")
def failing() -> tuple[Any, Any, dict[str, Any]]:
    run = rlvitals.load(FAILING)[0]
    d = diagnose(run)
    return run, d, build_page([run], [d])


def _findings(page: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for s in page["sections"] for f in s["findings"]]


def test_the_answer_draws_the_curves_of_what_to_act_on_root_cause_first(failing: Any) -> None:
    _, d, page = failing
    findings = _findings(page)
    acted = [f for f in findings if f["status"] in ACT]
    answer = page["answer"]["charts"]
    assert set(answer) == {c for f in acted for c in f["charts"]}
    root = next(f for f in findings if f["id"] == page["runs"][0]["story"]["causes"][0]["finding"])
    assert root["check"] == d.headline.finding.check and answer[: len(root["charts"])] == root["charts"]
    only_notes = {c for f in findings if f["status"] == "note" for c in f["charts"]} - set(answer)
    assert only_notes  # the efficiency notes' curves stay in their (folded) layer
    assert answer_charts(page["runs"], findings, limit=3) == answer[:3]
    assert answer_charts(page["runs"], [], limit=3) == []


def test_a_layer_opens_when_it_has_something_to_act_on(failing: Any) -> None:
    _, d, page = failing
    layers = load_catalog().layers
    for s in page["sections"]:
        assert s["open"] == any(f.status in ACT for f in d.findings if f.layer == s["id"])
        assert s["short"] == {"en": layers[s["id"]].short_en, "zh": layers[s["id"]].short_zh}
    html = render_html(page, cdn=True)
    assert '<details class="rlv-more" id="more-efficiency" data-layer="efficiency">' in html
    assert '<details class="rlv-more" id="more-L1" data-layer="L1" open>' in html
    # each chart once on the page; the runs table of one run sits above the story
    assert all(html.count(f'id="fig-{cid}"') == 1 for cid in page["charts"])
    assert html.index('id="runs"') < html.index('id="story"') < html.index('id="answer-charts"')


def test_each_validation_source_shows_its_headline_line(failing: Any) -> None:
    run, _, page = failing
    core = {t.source: t.label for t in core_tracks(RunView(run))}
    (val,) = [v for s in page["sections"] for v in s["validation"]]
    traces = page["charts"][val["chart"]]["traces"]
    assert [t["name"] for t in traces if not t["hidden"]] == [core[val["source"]]] == val["headline"]
    assert traces[0]["name"] == core[val["source"]] and val["hidden"] == len(traces) - 1 == 57


def test_two_runs_each_show_their_headline_line(failing: Any) -> None:
    run, d, _ = failing
    page = build_page([run, run], [d, d], labels=["a", "b"])
    (val,) = [v for s in page["sections"] for v in s["validation"]]
    shown = [(t["run"], t["name"]) for t in page["charts"][val["chart"]]["traces"] if not t["hidden"]]
    assert shown == [("r0", "a: score/mean@30"), ("r1", "b: score/mean@30")]
    assert val["headline"] == ["score/mean@30"]

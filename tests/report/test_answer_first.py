"""The report and the dashboard's run page open with the answer, in real headless Chromium at 1400 × 900, on a
real failing veRL run of the corpus: the verdict and the headline (root cause and what to do) inside the first
screen, the curves the findings name right under the story, the other curves folded by layer (drawn to their
width when opened, opened by a link to them), the layers' heads named, one headline line per validation
source (its @k variants and std in the legend), and no smoothing of a series too short to smooth."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import ARTIFACTS

import rlvitals
from report.test_browser import Opened
from report.test_controls import TWO_SOURCES, _ema
from rlvitals.catalog.catalog import load_catalog
from rlvitals.checks import RunView, core_tracks
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report

pytestmark = pytest.mark.browser

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
#: veRL agent run, KL penalty in the reward at 0.05: the KL runs away, the answers collapse (verdict fail)
FAILING = CORPUS / "verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse" / "output.log"
SCREEN = 900


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    run = rlvitals.load(FAILING)[0]
    d = diagnose(run)
    page = build_page([run], [d])
    path = tmp_path_factory.mktemp("answer") / "report.html"
    write_report(path, page)
    return path, page, d


@pytest.fixture
def opened(browser: Any, failing: tuple[Path, dict[str, Any], Any]) -> Iterator[Opened]:
    o = Opened(browser, failing[0])
    yield o
    o.close()


def _in_first_screen(page: Any, selector: str) -> str:
    """The text of ``selector`` after checking its box lies whole within the first screen (not scrolled)."""
    node = page.locator(selector).first
    box = node.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= SCREEN, (selector, box)
    assert page.evaluate("window.scrollY") == 0
    return str(node.inner_text())


def _answer_on_first_screen(page: Any, d: Any) -> None:
    """The verdict, the root cause's title, message and advice read from the first screen of ``page``."""
    assert d.verdict == "fail" and d.headline is not None
    assert _in_first_screen(page, "#runs tbody tr td:last-child .rlv-status .l-en") == "FAIL"
    head = ".rlv-cause[data-root=headline]"
    assert page.locator(head).get_attribute("data-check") == d.headline.finding.check
    assert d.headline.finding.title["en"] in _in_first_screen(page, f"{head} .rlv-cause-head")
    assert _in_first_screen(page, f"{head} .rlv-advice").startswith("What to do first:")
    assert d.headline.finding.advice["en"][:60] in page.locator(f"{head} .rlv-advice").inner_text()


def test_the_report_opens_with_the_verdict_and_the_headline(opened: Opened, failing: Any) -> None:
    _, page, d = failing
    _answer_on_first_screen(opened.page, d)
    ARTIFACTS.mkdir(exist_ok=True)
    opened.page.screenshot(path=str(ARTIFACTS / "answer_first_screen.png"))
    # then the curves the findings name, before the first-look curves and every layer; each once on the page
    order = opened.page.evaluate("""() => ['#story', '#answer-charts', '#overview', '.rlv-layer'].map(s =>
        document.querySelector(s).getBoundingClientRect().top)""")
    assert order == sorted(order)
    answer = page["answer"]["charts"]
    assert opened.page.eval_on_selector_all("#answer-charts .rlv-chart", "els => els.map(e => e.id)") == answer
    named = [c for s in page["sections"] for f in s["findings"] if f["status"] in ("warn", "fail") for c in f["charts"]]
    assert set(answer) == set(named) and len(answer) == len(set(answer))  # 8 curves here: all of them
    for cid in page["charts"]:
        assert opened.page.locator(f"[id='{cid}']").count() == 1
    # the root cause's own curve is among them, with its onset marked
    kl = next(f for s in page["sections"] for f in s["findings"] if f["check"] == d.headline.finding.check)
    assert kl["charts"][0] in answer
    assert opened.errors == [] and opened.failed == []


def test_the_layers_heads_say_their_names(opened: Opened, failing: Any) -> None:
    _, page, _ = failing
    layers = load_catalog().layers
    heads = opened.page.locator("#runs thead th[data-layer]")
    want = [layers[s["id"]].short_en for s in page["sections"]]
    assert heads.all_inner_texts() == want and want[1] == "L1 stability"
    opened.page.click("button[data-set-lang=zh]")
    assert heads.all_inner_texts() == [layers[s["id"]].short_zh for s in page["sections"]]


def test_a_folded_layer_opens_with_its_charts_drawn_to_their_width(opened: Opened, failing: Any) -> None:
    _, page, _ = failing
    opens = {s["id"]: s["open"] for s in page["sections"]}
    assert opens == {"L5": True, "L1": True, "efficiency": False, "L2": True, "L3": False, "L4": False, "L6": False}
    for layer, is_open in opens.items():
        box = opened.page.locator(f"#more-{layer}")
        if box.count():
            assert (box.get_attribute("open") is not None) == is_open, layer
    # the folded efficiency curves: drawn while hidden (while the page is idle), at Plotly's default size
    opened.page.wait_for_function("document.documentElement.getAttribute('data-charts') === 'drawn'",
                                  timeout=60_000)
    cid = next(c for c in next(s for s in page["sections"] if s["id"] == "efficiency")["charts"]
               if c not in page["answer"]["charts"])
    assert not opened.page.locator(f"#{cid}").is_visible()
    opened.page.locator("#more-efficiency > summary").click()
    opened.page.locator(f"#fig-{cid}").scroll_into_view_if_needed()
    opened.page.wait_for_function(f"""() => {{ const n = document.getElementById('{cid}');
        return n._fullLayout && Math.abs(n._fullLayout.width - n.clientWidth) <= 2; }}""")
    width = opened.page.evaluate(f"document.querySelector('#{cid} .main-svg').getBoundingClientRect().width")
    assert abs(width - opened.page.evaluate(f"document.getElementById('{cid}').clientWidth")) <= 2
    assert opened.errors == []


def test_a_link_to_a_folded_chart_opens_its_layer(opened: Opened, failing: Any) -> None:
    _, page, _ = failing
    # a note of the efficiency layer (folded: it has nothing to act on) links to its curves
    note = next(f for s in page["sections"] if s["id"] == "efficiency" for f in s["findings"]
                if f["status"] == "note" and f["charts"])
    link = opened.page.locator(f"#{note['id']} a.rlv-goto-chart").first
    target = (link.get_attribute("href") or "").removeprefix("#")
    assert opened.page.locator("#more-efficiency").get_attribute("open") is None
    link.click()
    opened.page.wait_for_timeout(300)
    assert opened.page.locator("#more-efficiency").get_attribute("open") is not None
    box = opened.page.locator(f"#{target}").bounding_box()
    assert box is not None and 0 <= box["y"] < SCREEN


def test_a_validation_source_draws_its_headline_and_keeps_the_rest_in_the_legend(opened: Opened,
                                                                                   failing: Any) -> None:
    _, page, _ = failing
    (val,) = [v for s in page["sections"] for v in s["validation"]]
    run = rlvitals.load(FAILING)[0]
    core = {t.source: t.label for t in core_tracks(RunView(run))}
    assert val["headline"] == [core["aime_2024"]] == ["score/mean@30"]  # what the checks judge
    cid = val["chart"]
    opened.page.locator(f"#fig-{cid}").scroll_into_view_if_needed()
    opened.page.wait_for_function(f"document.getElementById('{cid}').getAttribute('data-drawn') === '1'")
    lines = opened.page.evaluate(f"""document.getElementById('{cid}').data.filter(d => d.name)
        .map(d => [d.name, d.visible === undefined ? true : d.visible])""")
    shown = [n for n, v in lines if v is True]
    assert shown == ["score/mean@30"] and len(lines) == len(page["charts"][cid]["traces"]) == 58
    assert {v for _, v in lines[1:]} == {"legendonly"}
    caption = opened.page.locator(f"#fig-{cid} figcaption")
    assert "57 more (best@k, maj@k, worst@k, std) in the legend" in caption.inner_text()
    assert caption.locator("a.rlv-key").count() == 1  # the headline's key, not 58 of them
    # a click on a legend entry draws that line (the second entry: the first hidden one, in the legend's view)
    second = lines[1][0]
    opened.page.locator(f"#{cid} .legend .traces").nth(1).locator(".legendtoggle").click()
    opened.page.wait_for_function(f"""document.getElementById('{cid}').data
        .filter(d => d.name === '{second}')[0].visible === true""")
    opened.page.locator(f"#fig-{cid}").screenshot(path=str(ARTIFACTS / "validation_headline.png"))
    assert opened.errors == []


def test_two_sources_draw_one_line_each(browser: Any, tmp_path: Path) -> None:
    run = rlvitals.load(TWO_SOURCES)[0]
    page = build_page([run], [diagnose(run)])
    vals = [v for s in page["sections"] for v in s["validation"]]
    assert len(vals) >= 2
    write_report(tmp_path / "r.html", page)
    o = Opened(browser, tmp_path / "r.html")
    try:
        for v in vals:
            cid = v["chart"]
            o.page.evaluate(f"(d => {{ if (d) {{ d.open = true; }} }})(document.getElementById('fig-{cid}')"
                            ".closest('details'))")
            o.page.locator(f"#fig-{cid}").scroll_into_view_if_needed()
            o.page.wait_for_function(f"document.getElementById('{cid}').getAttribute('data-drawn') === '1'")
            shown = o.page.evaluate(f"""document.getElementById('{cid}').data
                .filter(d => d.name && d.visible !== 'legendonly').map(d => d.name)""")
            assert shown == v["headline"] and len(shown) == 1, (v["source"], shown)
        assert o.errors == []
    finally:
        o.close()


def test_smoothing_leaves_a_short_series_as_logged(opened: Opened, failing: Any) -> None:
    _, page, _ = failing
    charts = page["charts"]
    short, long = page["overview"]["charts"][0], page["overview"]["charts"][2]
    assert charts[short]["traces"][0]["n"] == 6 and charts[long]["traces"][0]["n"] == 59  # validation; KL penalty
    for cid in (short, long):
        opened.page.locator(f"#{cid}").scroll_into_view_if_needed()
        opened.page.wait_for_function(f"document.getElementById('{cid}').getAttribute('data-drawn') === '1'")
    opened.page.locator("#rlv-smooth").fill("0.9")
    opened.page.wait_for_function(f"document.getElementById('{long}').data.filter(d => d.name).length === 2")
    raw, smooth = opened.page.evaluate(f"document.getElementById('{long}').data.filter(d => d.name)"
                                       ".map(d => [d.y, d.opacity])")
    assert raw[1] == 0.25 and np.allclose(np.array(smooth[0], dtype=float),
                                          np.array(_ema(raw[0], 0.9), dtype=float), rtol=1e-12)
    lines = opened.page.evaluate(f"document.getElementById('{short}').data.filter(d => d.name)"
                                 ".map(d => [d.y, d.opacity === undefined ? 1 : d.opacity])")
    assert lines == [[charts[short]["traces"][0]["y"], 1]]  # one line, its own points, drawn in full
    assert _ema(charts[short]["traces"][0]["y"], 0.9) != charts[short]["traces"][0]["y"]  # smoothing would move it
    assert opened.errors == []


def test_the_dashboard_run_page_opens_with_the_answer(browser: Any, tmp_path: Path) -> None:
    from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, run_id

    folder = tmp_path / "runs"
    folder.mkdir()
    log = folder / "output.log"
    shutil.copyfile(FAILING, log)
    d = diagnose(rlvitals.load(log)[0])
    ws = Workspace([folder], ServeState(tmp_path / "s.sqlite"), WorkspaceOptions(interval=0.2, settle=0.5))
    ws.poll_once()
    ws.start()
    try:
        with ServerThread(ws, "127.0.0.1") as srv:
            page = browser.new_page(viewport={"width": 1400, "height": SCREEN})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            deadline = time.monotonic() + 60
            while True:  # the run page, once the server has read the log (before, it says it is loading)
                page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
                if page.locator("#story").count() or time.monotonic() > deadline:
                    break
                page.wait_for_timeout(300)
            _answer_on_first_screen(page, d)
            page.screenshot(path=str(ARTIFACTS / "dashboard_answer_first_screen.png"))
            assert errors == []
            page.close()
    finally:
        ws.close()


def test_a_search_opens_the_folded_layer_that_holds_a_match(opened: Opened, failing: Any) -> None:
    _, page, _ = failing
    (cid,) = [c for c, chart in page["charts"].items() if chart["keys"] == ["timing_s/adv"]]
    assert opened.page.locator("#more-efficiency").get_attribute("open") is None
    opened.page.locator("#rlv-metric-search").fill("timing_s/adv")
    opened.page.wait_for_function("document.getElementById('more-efficiency').open")
    assert opened.page.locator(f"#fig-{cid}").is_visible()
    assert opened.page.locator("#more-L3").get_attribute("open") is None  # no match there: it stays folded
    opened.page.locator(f"#fig-{cid}").scroll_into_view_if_needed()
    opened.page.wait_for_function(f"""() => {{ const n = document.getElementById('{cid}');
        return n._fullLayout && Math.abs(n._fullLayout.width - n.clientWidth) <= 2; }}""")
    assert opened.errors == []

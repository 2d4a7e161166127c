"""The dashboard in real headless Chromium against a real uvicorn server in a thread: the run list and
every real fixture's layered page render with their verdicts and findings and no console error;
steps appended to a veRL JSONL log appear on the open page within seconds, without a reload;
rollout markup is shown as text and runs nothing; bound to a non-loopback address, a request
without the token is refused. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import contextlib
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import ARTIFACTS, NOTE_RGB, REAL_LOGS, WARN_RGB, Tab, pixels
from conftest import REAL
from report.test_browser import unfold
from report.test_model import XSS, write_dump

import rlvitals
from rlvitals.catalog.catalog import load_catalog
from rlvitals.diagnosis import READING_ORDER, diagnose
from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, run_id
from rlvitals.server.security import is_loopback
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

pytestmark = pytest.mark.browser

TOKEN = "browser-test-token-0123456789"
FAST = WorkspaceOptions(interval=0.2, rescan=1.0)
GROWING = Scenario(steps=200, grad_spike_at=16)  # the spike's onset puts step 16 (the markup) among the rollouts


@pytest.fixture(scope="module")
def fixtures_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    ws = Workspace([REAL], ServeState(tmp_path_factory.mktemp("state") / "s.sqlite"),
                   WorkspaceOptions(interval=0.2, settle=0.5))
    ws.poll_once()
    ws.start()
    deadline = time.monotonic() + 60  # the log cut mid-line is read whole once it has been quiet
    while time.monotonic() < deadline and any(s["version"] < 2 for s in ws.summaries() if "gemma-2-2b-it-ppo"
                                              in s["label"]):
        time.sleep(0.2)
    with ServerThread(ws, "127.0.0.1") as srv:
        yield srv
    ws.close()


def _lines(sc: Scenario, start: int, stop: int) -> bytes:
    return b"".join(line + b"\n" for line in list(jsonl_lines(sc))[start:stop])


def test_run_list_shows_every_real_fixture_with_its_verdict(tab: Tab, fixtures_server: ServerThread) -> None:
    tab.page.goto(fixtures_server.url)
    rows = tab.page.locator("table.rlv-runlist tbody tr[data-run]")
    assert rows.count() == len(REAL_LOGS)
    for name in REAL_LOGS:
        d = diagnose(rlvitals.load(REAL / name)[0])
        row = tab.page.locator(f'tr[data-run="{run_id(str(REAL.resolve() / name))}"]')
        assert row.locator("a").inner_text() == name
        assert row.locator("td").nth(4 + len(READING_ORDER)).locator(".l-en").inner_text() == d.verdict.upper()
        assert row.locator(".rlv-step").inner_text() == str(int(d.run.steps[-1]))
    tab.shot("dashboard_runs", full=True)
    assert tab.errors == [] and tab.failed == []


def _row(name: str) -> str:
    return f'tr[data-run="{run_id(str(REAL.resolve() / name))}"]'


def test_run_list_fits_a_1400px_window_and_its_bar_spans_the_page(tab: Tab, fixtures_server: ServerThread) -> None:
    tab.page.goto(fixtures_server.url)
    page, client, bar = tab.page.evaluate("""() => [document.documentElement.scrollWidth,
        document.documentElement.clientWidth, document.getElementById('rlv-live').getBoundingClientRect().width]""")
    assert page <= client <= 1400 and bar == client  # no horizontal scroll; the top bar is as wide as the page
    longest = max(REAL_LOGS, key=len)
    link = tab.page.locator(f"{_row(longest)} td.rlv-run a")
    assert link.inner_text() == longest and link.get_attribute("title") == str(REAL.resolve() / longest)
    # a long name wraps onto a second line at most (its text boxes sit on two lines), and no row is
    # taller than two lines: the algorithm and every other cell stay on one
    lines = link.evaluate("a => new Set(Array.from(a.getClientRects()).map(r => Math.round(r.top))).size")
    assert lines == 2
    tall = tab.page.eval_on_selector_all("table.rlv-runlist tbody tr[data-run]", """rows => rows.filter(r =>
        r.getBoundingClientRect().height > 3 * parseFloat(getComputedStyle(r.cells[0]).lineHeight))
        .map(r => r.cells[0].textContent)""")
    assert tall == []
    tab.shot("dashboard_runs_1400", full=True)
    # a run page too: no horizontal scroll, and the same dark bar across its top
    tab.follow(f"{_row(longest)} td.rlv-run a", "**/runs/*")
    page, client, bar, color = tab.page.evaluate("""() => { const b = document.getElementById('rlv-live');
        return [document.documentElement.scrollWidth, document.documentElement.clientWidth,
                b.getBoundingClientRect().width, getComputedStyle(b).backgroundColor]; }""")
    assert page <= client and bar == client and color == "rgb(34, 34, 34)"
    assert tab.errors == [] and tab.failed == []


def test_algorithm_column_is_the_short_name_with_the_description_on_hover(tab: Tab,
                                                                         fixtures_server: ServerThread) -> None:
    tab.page.goto(fixtures_server.url)
    catalog = load_catalog()
    for name in REAL_LOGS:
        run = rlvitals.load(REAL / name)[0]
        cell = tab.page.locator(f"{_row(name)} td.rlv-algo")
        assert cell.inner_text() == catalog.algorithm_short(run.algorithm), name
        if run.algorithm_label != catalog.algorithm_short(run.algorithm):
            assert cell.locator("span").get_attribute("title") == run.algorithm_label
    wordy = tab.page.locator("td.rlv-algo span[title='GRPO-style (group baseline, no critic)']").first
    wordy.hover()
    assert wordy.inner_text() == "GRPO"
    orpo = tab.page.locator(f"{_row('trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv')} td.rlv-algo")
    assert orpo.inner_text() == "ORPO" and "SimPO" in (orpo.locator("span").get_attribute("title") or "")
    assert tab.errors == [] and tab.failed == []


def _heads(tab: Tab) -> list[str]:
    return tab.page.locator("table.rlv-runlist thead th").all_inner_texts()


def test_run_list_switches_to_chinese_and_the_choice_follows_to_a_run_page_and_back(
        tab: Tab, fixtures_server: ServerThread) -> None:
    tab.page.goto(fixtures_server.url)
    assert _heads(tab)[:4] == ["run", "framework", "algorithm", "last step"]
    tab.page.evaluate("window.__same_document = 1")
    tab.page.click("#rlv-live button[data-set-lang=zh]")
    heads = _heads(tab)
    assert heads[:4] == ["训练", "框架", "算法", "最新步"] and "效率" in heads and heads[-2:] == ["结论", "发现"]
    assert tab.page.evaluate("window.__same_document") == 1  # switched in place
    name = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
    d = diagnose(rlvitals.load(REAL / name)[0])
    counts = " ".join(f"{sum(f.status == s for f in d.findings)} 项{w}"
                      for s, w in (("fail", "失败"), ("warn", "警告"), ("note", "提示"))
                      if any(f.status == s for f in d.findings))
    assert "项提示" in counts  # the run's MFU of 19 % is a note
    assert tab.page.locator(f"{_row(name)} td.rlv-findings").inner_text() == counts
    verdict = tab.page.locator(f"{_row(name)} td.rlv-run-verdict").inner_text()
    assert verdict == {"ok": "正常", "warn": "警告", "fail": "失败"}[d.verdict]
    tab.page.wait_for_function("() => document.getElementById('rlv-live-note').innerText.startsWith('更新于')")
    shown = tab.page.locator("body").inner_text()
    for english in ("Runs", "Serving", "last step", "verdict", "findings", "WARN", "warn", "1 note", "updated",
                    "SKIPPED"):
        assert english not in shown, english
    assert "正在服务的目录" in shown
    tab.shot("dashboard_runs_zh", full=True)
    # into a run page: it opens in Chinese (no English flash: the server renders it so), and back
    tab.follow(f"{_row(name)} td.rlv-run a", "**/runs/*")
    assert tab.page.evaluate("document.documentElement.getAttribute('data-lang')") == "zh"
    assert "训练稳定性" in tab.page.locator("section#layer-L1 h2").inner_text()
    assert tab.page.locator("header button[data-set-lang=zh]").get_attribute("aria-pressed") == "true"
    assert tab.page.locator("#rlv-live a").inner_text() == "← 训练列表"
    tab.shot("dashboard_run_zh")
    tab.follow("#rlv-live a", fixtures_server.url)
    assert _heads(tab)[:4] == ["训练", "框架", "算法", "最新步"]
    # English chosen on a run page holds on the run list too
    tab.follow(f"{_row(name)} td.rlv-run a", "**/runs/*")
    tab.page.click("header button[data-set-lang=en]")
    tab.follow("#rlv-live a", fixtures_server.url)
    assert _heads(tab)[:4] == ["run", "framework", "algorithm", "last step"]
    assert tab.errors == [] and tab.failed == []


def test_a_link_with_lang_zh_opens_the_run_list_in_chinese(tab: Tab, fixtures_server: ServerThread) -> None:
    tab.page.goto(fixtures_server.url + "?lang=zh")
    assert _heads(tab)[:4] == ["训练", "框架", "算法", "最新步"]
    assert tab.page.locator("#rlv-live button[data-set-lang=zh]").get_attribute("aria-pressed") == "true"
    tab.follow(None, fixtures_server.url)  # remembered without the parameter
    assert _heads(tab)[:4] == ["训练", "框架", "算法", "最新步"]
    assert tab.errors == [] and tab.failed == []


@pytest.mark.parametrize("name", REAL_LOGS)
def test_every_real_fixture_page_shows_layers_and_findings(browser: Any, fixtures_server: ServerThread,
                                                           name: str) -> None:
    d = diagnose(rlvitals.load(REAL / name)[0])
    t = Tab(browser)
    try:
        t.page.goto(fixtures_server.url + "runs/" + run_id(str(REAL.resolve() / name)))
        for layer in READING_ORDER:
            verdict = t.page.locator(f"#layer-{layer} h2 .rlv-status .l-en").first.inner_text()
            assert verdict == d.layers[layer].upper()
        shown = sum(f.status in ("warn", "fail", "note") for f in d.findings)
        assert t.page.locator("article.rlv-finding").count() == shown
        if t.page.locator(".rlv-chart").count():
            t.page.wait_for_selector(".js-plotly-plot", timeout=10_000)  # the first chart is drawn
        t.shot(f"dashboard_{Path(name).stem[:60]}")
        time.sleep(1.2)  # one live poll round trip, which must not fail either
        assert t.errors == [] and t.failed == []
    finally:
        t.close()


def test_a_served_run_page_shows_a_note_apart_from_the_verdict(tab: Tab, fixtures_server: ServerThread) -> None:
    name = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
    notes = sum(f.status == "note" for f in diagnose(rlvitals.load(REAL / name)[0]).findings)
    assert notes >= 1  # its MFU of 19 %
    tab.page.goto(fixtures_server.url)
    cell = tab.page.locator(f"{_row(name)} td.rlv-findings .l-en").all_inner_texts()
    assert cell[-1] == f"{notes} note"
    tab.follow(f"{_row(name)} td.rlv-run a", "**/runs/*")
    assert tab.page.locator("article.rlv-finding.s-note").count() == notes
    article = tab.page.locator("article.rlv-finding.s-note", has_text="Low MFU")
    assert tab.page.locator("#layer-efficiency h2 .rlv-status .l-en").inner_text() == "OK"
    article.scroll_into_view_if_needed()
    png = article.screenshot(path=str(ARTIFACTS / "dashboard_note.png"))
    assert pixels(png, NOTE_RGB, tol=24).sum() > 150 and pixels(png, WARN_RGB, tol=24).sum() == 0
    assert tab.errors == [] and tab.failed == []


@pytest.fixture
def growing(tmp_path: Path) -> Iterator[tuple[ServerThread, Path]]:
    folder = tmp_path / "runs"
    folder.mkdir()
    log = folder / "grpo.jsonl"
    log.write_bytes(_lines(GROWING, 0, 60))
    write_dump(tmp_path / "dump")
    ws = Workspace([folder], ServeState(tmp_path / "s.sqlite"),
                   WorkspaceOptions(interval=0.2, rescan=1.0, rollouts=tmp_path / "dump"))
    ws.poll_once()
    ws.start()
    with ServerThread(ws, "127.0.0.1") as srv:
        yield srv, log
    ws.close()


def test_appended_steps_appear_without_reload(tab: Tab, growing: tuple[ServerThread, Path]) -> None:
    srv, log = growing
    rid = run_id(str(log.resolve()))
    tab.page.goto(srv.url + "runs/" + rid)
    assert tab.page.locator("#rlv-live-step").inner_text() == "60"
    unfold(tab.page, tab.page.locator("#layer-L1 .rlv-chart").first.get_attribute("id"))
    tab.page.locator("#layer-L1 .rlv-chart").first.scroll_into_view_if_needed()
    tab.page.wait_for_selector("#layer-L1 .js-plotly-plot")
    tab.page.evaluate("window.__same_document = 1")
    t0 = time.monotonic()
    with log.open("ab") as f:
        f.write(_lines(GROWING, 60, 100))
    # predicates are functions: a string expression would need eval, which the page's CSP forbids
    tab.page.wait_for_function("() => document.getElementById('rlv-live-step').textContent === '100'",
                               timeout=8_000)
    took = time.monotonic() - t0
    # the charts were swapped in and redrawn with the new steps
    tab.page.wait_for_function("""() => { const el = document.querySelector('#layer-L1 .js-plotly-plot');
        return el && el.data && Math.max(...el.data[0].x) === 100; }""", timeout=8_000)
    assert tab.page.evaluate("window.__same_document") == 1  # no reload
    assert took < 5, f"step 100 appeared after {took:.1f} s"
    tab.shot("dashboard_live_step100")
    assert tab.errors == [] and tab.failed == []


def test_after_a_live_update_the_language_switch_redraws_each_chart_once(tab: Tab,
                                                                          growing: tuple[ServerThread, Path]) -> None:
    srv, log = growing
    tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
    unfold(tab.page, tab.page.locator("#layer-L1 .rlv-chart").first.get_attribute("id"))
    tab.page.locator("#layer-L1 .rlv-chart").first.scroll_into_view_if_needed()
    tab.page.wait_for_selector("#layer-L1 .js-plotly-plot")
    with log.open("ab") as f:
        f.write(_lines(GROWING, 60, 80))
    tab.page.wait_for_function("""() => { const el = document.querySelector('#layer-L1 .js-plotly-plot');
        return el && el.data && Math.max(...el.data[0].x) === 80; }""", timeout=8_000)
    # every copy of the report script (one per update) used to answer the click, relaying out the charts
    # once per update with its own, older markers
    # the charts drawn when the button is clicked, taken in the same turn of the page's script: a chart that
    # finishes drawing after the click (under load) is drawn in the new language and needs no relayout
    calls, drawn = tab.page.evaluate("""() => { window.__relayouts = []; const original = Plotly.relayout;
        Plotly.relayout = function (el) { window.__relayouts.push(el.id); return original.apply(this, arguments); };
        const drawn = Object.keys(window.rlvReport.drawn).filter(cid =>
            document.getElementById(cid) && document.getElementById(cid).layout);
        document.querySelector('header button[data-set-lang=zh]').click();
        return [window.__relayouts, drawn]; }""")
    assert drawn and sorted(calls) == sorted(drawn)
    assert tab.errors == [] and tab.failed == []


def test_run_list_updates_while_a_log_grows(tab: Tab, growing: tuple[ServerThread, Path]) -> None:
    srv, log = growing
    tab.page.goto(srv.url)
    row = f'tr[data-run="{run_id(str(log.resolve()))}"] .rlv-step'
    assert tab.page.locator(row).inner_text() == "60"
    tab.page.evaluate("window.__same_document = 1")
    with log.open("ab") as f:
        f.write(_lines(GROWING, 60, 75))
    tab.page.wait_for_function(f"() => document.querySelector('{row}').textContent === '75'", timeout=8_000)
    assert tab.page.evaluate("window.__same_document") == 1
    assert tab.errors == [] and tab.failed == []


def test_rollout_markup_is_shown_as_text_and_runs_nothing(tab: Tab, growing: tuple[ServerThread, Path]) -> None:
    srv, log = growing
    tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
    tab.page.click("article[data-check=grad_norm_spike] a.rlv-goto-rollouts")
    assert tab.page.locator("#rlv-step").input_value() == "16"
    assert tab.page.locator("#rlv-groups .rlv-response").first.inner_text() == XSS
    assert tab.page.locator("#rlv-groups img, #rlv-groups script").count() == 0
    assert tab.page.evaluate("[typeof window.__x, typeof window.__y]") == ["undefined", "undefined"]
    via_api = tab.page.evaluate(f"""fetch('/api/runs/{run_id(str(log.resolve()))}/rollouts?step=16')
        .then(r => r.json()).then(j => j.groups[0].rollouts.map(r => r.response))""")
    assert XSS in via_api
    tab.shot("dashboard_rollouts_step16")
    assert tab.errors == [] and tab.failed == []


def _drag(tab: Tab, cid: str, start: float, end: float) -> None:
    """Zoom a drawn chart as a reader does: drag across its plot area from step ``start`` to ``end``."""
    box = tab.page.locator(f"#{cid} .nsewdrag").first.bounding_box()
    assert box is not None
    x0, x1 = tab.page.evaluate(f"""(() => {{ const xa = document.getElementById('{cid}')._fullLayout.xaxis;
        return [xa.l2p({start}), xa.l2p({end})]; }})()""")
    y = box["y"] + box["height"] / 2
    tab.page.mouse.move(box["x"] + x0, y)
    tab.page.mouse.down()
    tab.page.mouse.move(box["x"] + (x0 + x1) / 2, y, steps=4)
    tab.page.mouse.move(box["x"] + x1, y, steps=4)
    tab.page.mouse.up()


def _range(tab: Tab, cid: str) -> list[float]:
    got: list[float] = tab.page.evaluate(f"document.getElementById('{cid}').layout.xaxis.range")
    return got


def test_a_live_update_keeps_the_rollout_step_and_the_zoom(tab: Tab, growing: tuple[ServerThread, Path]) -> None:
    srv, log = growing
    tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
    tab.page.click("article[data-check=grad_norm_spike] a.rlv-goto-rollouts")
    assert tab.page.locator("#rlv-step").input_value() == "16"
    cid = tab.page.locator("#layer-L1 .rlv-chart").first.get_attribute("id")
    unfold(tab.page, cid)
    tab.page.locator(f"#{cid}").scroll_into_view_if_needed()
    tab.page.wait_for_selector(f"#{cid}.js-plotly-plot")
    _drag(tab, cid, 20, 40)
    zoomed = _range(tab, cid)
    assert 18 < zoomed[0] < 22 and 38 < zoomed[1] < 42
    tab.page.evaluate("window.__same_document = 1")
    with log.open("ab") as f:
        f.write(_lines(GROWING, 60, 100))
    tab.page.wait_for_function("() => document.getElementById('rlv-live-step').textContent === '100'",
                               timeout=8_000)
    # the fresh page has drawn the chart with the new steps, at the reader's zoom
    tab.page.wait_for_function(f"""() => {{ const el = document.getElementById('{cid}');
        return el && el.data && Math.max(...el.data[0].x) === 100; }}""", timeout=8_000)
    assert _range(tab, cid) == zoomed
    assert tab.page.locator("#rlv-step").input_value() == "16"
    assert tab.page.locator("#rlv-groups .rlv-response").first.inner_text() == XSS
    assert tab.page.evaluate("window.__same_document") == 1
    tab.shot("dashboard_live_kept_zoom")
    assert tab.errors == [] and tab.failed == []


def test_the_dashboard_browses_any_step_from_the_api(tab: Tab, growing: tuple[ServerThread, Path]) -> None:
    srv, log = growing
    rid = run_id(str(log.resolve()))
    tab.page.goto(srv.url + "runs/" + rid)
    page = tab.page.evaluate(f"fetch('/api/runs/{rid}/page').then(r => r.json())")
    (mine,) = page["rollouts"]["runs"]
    assert 2 not in mine["steps"]  # step 2's texts are not in the page: the server has them
    options = tab.page.eval_on_selector_all("#rlv-step option", "els => els.map(e => Number(e.value))")
    assert options == list(range(1, 31))  # every step with rollouts, not only those in the page
    asked: list[str] = []
    tab.page.on("request", lambda r: asked.append(r.url) if "/rollouts?step=" in r.url else None)
    tab.page.select_option("#rlv-step", "2")
    tab.page.wait_for_function("() => document.querySelectorAll('#rlv-groups details.rlv-group').length === 4")
    assert asked == [srv.url + f"api/runs/{rid}/rollouts?step=2"]
    assert tab.page.locator("#rlv-shown .l-en").inner_text() == "4 of 4 groups shown"
    assert tab.page.locator("#rlv-groups .rlv-prompt").first.inner_text().startswith("Question ")
    tab.page.locator("#rlv-browser").scroll_into_view_if_needed()
    tab.shot("dashboard_rollouts_step2")
    assert tab.errors == [] and tab.failed == []


@pytest.fixture
def long_run(tmp_path: Path) -> Iterator[tuple[ServerThread, Path]]:
    log = tmp_path / "long.jsonl"
    log.write_bytes(_lines(Scenario(steps=5000, grad_spike_at=2050, collapse_at=None), 0, 5000))
    ws = Workspace([log], ServeState(tmp_path / "s.sqlite"), FAST)
    ws.poll_once()
    with ServerThread(ws, "127.0.0.1") as srv:
        yield srv, log
    ws.close()


def test_zooming_a_dashboard_chart_fetches_its_range_at_full_resolution(tab: Tab, long_run: Any) -> None:
    srv, log = long_run
    tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
    f = tab.page.locator("article[data-check=grad_norm_spike] a.rlv-goto-chart").first
    cid = (f.get_attribute("href") or "").removeprefix("#fig-")
    f.click()  # the link opens the folded layer the chart is in
    tab.page.locator(f"#{cid}").scroll_into_view_if_needed()
    tab.page.wait_for_selector(f"#{cid}.js-plotly-plot")
    before = tab.page.evaluate(f"document.getElementById('{cid}').data[0].x")
    assert len(before) <= 1600 and len([x for x in before if 2000 <= x <= 2100]) < 101  # downsampled
    asked: list[str] = []
    tab.page.on("request", lambda r: asked.append(r.url) if "/series?" in r.url else None)
    _drag(tab, cid, 2000, 2100)
    tab.page.wait_for_function(f"() => document.getElementById('{cid}').hasAttribute('data-range')")
    lo, hi = (int(v) for v in (tab.page.get_attribute(f"#{cid}", "data-range") or "").split("-"))
    after = tab.page.evaluate(f"document.getElementById('{cid}').data[0].x")
    assert after == list(range(lo, hi + 1)) and lo <= 2050 <= hi  # every step of the range, the spike's too
    # every chart follows the zoom (one x range for all) and fetches its own range; this one asked once
    assert sum("key=actor%2Fgrad_norm" in u for u in asked) == 1
    tab.shot("dashboard_zoom_full_resolution")
    tab.page.dblclick(f"#{cid} .nsewdrag")  # back to the whole run: the downsampled curve again
    tab.page.wait_for_function(f"() => document.getElementById('{cid}').data[0].x.length === {len(before)}")
    assert tab.errors == [] and tab.failed == []


def test_runs_in_sub_folders_are_listed_with_unique_labels(tab: Tab, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name, steps, mtime in (("exp1", 40, 1_700_000_200), ("exp2", 50, 1_700_000_100)):
        (runs / name).mkdir(parents=True)
        (runs / name / "train.jsonl").write_bytes(_lines(Scenario(steps=steps), 0, steps))
        os.utime(runs / name / "train.jsonl", (mtime, mtime))
    ws = Workspace([runs], ServeState(tmp_path / "s.sqlite"), FAST)
    ws.poll_once()
    try:
        with ServerThread(ws, "127.0.0.1") as srv:
            tab.page.goto(srv.url)
            labels = tab.page.locator("table.rlv-runlist tbody tr[data-run] a").all_inner_texts()
            assert labels == ["exp1/train.jsonl", "exp2/train.jsonl"]  # exp1 was written last
            tab.shot("dashboard_nested_runs")
            tab.page.click("text=exp2/train.jsonl")
            assert tab.page.locator("#runs tbody td").first.inner_text() == "exp2/train.jsonl"
            assert tab.page.locator("#rlv-live-step").inner_text() == "50"
            assert tab.errors == [] and tab.failed == []
    finally:
        ws.close()


def test_the_run_list_sorts_by_name_and_keeps_that_order_while_logs_grow(tab: Tab, tmp_path: Path) -> None:
    """Last written first by default; the 'by name' link lists run2 before run10, and a live update
    (run10 grows, so it is the last written) keeps the list by name."""
    runs = tmp_path / "sweep"
    for name, mtime in (("run10", 1_700_000_100), ("run2", 1_700_000_300), ("run1", 1_700_000_200)):
        (runs / name).mkdir(parents=True)
        (runs / name / "metrics.jsonl").write_bytes(_lines(GROWING, 0, 40))
        os.utime(runs / name / "metrics.jsonl", (mtime, mtime))
    ws = Workspace([runs], ServeState(tmp_path / "s.sqlite"), FAST)
    ws.poll_once()
    ws.start()
    names = "table.rlv-runlist tbody tr[data-run] a"
    try:
        with ServerThread(ws, "127.0.0.1") as srv:
            tab.page.goto(srv.url)
            assert [t.split("/")[0] for t in tab.page.locator(names).all_inner_texts()] == ["run2", "run1", "run10"]
            assert tab.page.locator("#rlv-sort [aria-current]").inner_text() == "last written first"
            tab.follow("#rlv-sort >> text=by name", srv.url + "?sort=name")
            assert [t.split("/")[0] for t in tab.page.locator(names).all_inner_texts()] == ["run1", "run2", "run10"]
            tab.page.evaluate("window.__same_document = 1")
            with (runs / "run10" / "metrics.jsonl").open("ab") as f:
                f.write(_lines(GROWING, 40, 55))
            step = f'tr[data-run="{run_id(str((runs / "run10" / "metrics.jsonl").resolve()))}"] .rlv-step'
            tab.page.wait_for_function(f"() => document.querySelector('{step}').textContent === '55'", timeout=8_000)
            assert tab.page.evaluate("window.__same_document") == 1
            assert [t.split("/")[0] for t in tab.page.locator(names).all_inner_texts()] == ["run1", "run2", "run10"]
            tab.shot("dashboard_sorted_by_name")
            assert tab.errors == [] and tab.failed == []
    finally:
        ws.close()


def _outside_address() -> str | None:
    """An address of this machine other than loopback, if it has one."""
    found: list[str] = []
    with contextlib.suppress(OSError):
        found += socket.gethostbyname_ex(socket.gethostname())[2]
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.254", 9))  # no packet is sent: this only picks the outgoing interface
        found.append(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    return next((a for a in found if not is_loopback(a) and a != "0.0.0.0"), None)


def test_bound_elsewhere_a_request_without_the_token_is_refused(tab: Tab, tmp_path: Path) -> None:
    address = _outside_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to bind the server to")
    log = tmp_path / "grpo.jsonl"
    log.write_bytes(_lines(Scenario(steps=50), 0, 50))
    ws = Workspace([log], ServeState(tmp_path / "s.sqlite"), FAST)
    ws.poll_once()
    try:
        with ServerThread(ws, address, token=TOKEN) as srv:
            assert address in srv.url
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(srv.url + "api/runs", timeout=10)
            assert refused.value.code == 401 and b"needs its token" in refused.value.read()
            refused.value.close()
            answer = tab.page.goto(srv.url)
            assert answer is not None and answer.status == 401 and "needs its token" in tab.page.content()
            # the refused page load (and the browser's own follow-up requests, e.g. a favicon, refused
            # too) are logged as console errors, some after goto returns: let them settle, then forget them
            tab.page.wait_for_load_state("networkidle")
            time.sleep(0.5)
            tab.errors.clear()
            tab.failed.clear()
            tab.page.goto(srv.url + "?token=" + TOKEN)  # once: the cookie carries it from now on
            assert tab.page.url == srv.url
            assert tab.page.locator("tr[data-run]").count() == 1
            tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
            tab.page.wait_for_selector(".js-plotly-plot")
            time.sleep(1.2)  # the live script's polls carry the cookie too
            assert tab.errors == [] and tab.failed == []
            request = urllib.request.Request(srv.url + "api/runs", headers={"Authorization": "Bearer " + TOKEN})
            with urllib.request.urlopen(request, timeout=10) as ok:
                assert ok.status == 200
    finally:
        ws.close()


def test_the_run_list_and_a_run_page_open_with_the_root_cause(tab: Tab, fixtures_server: ServerThread) -> None:
    """Every run with something to act on names its root cause in the list; its page opens with it (the
    story above the layer sections), the same as the report; a run with nothing to act on has no cause."""
    tab.page.goto(fixtures_server.url)
    told = 0
    for name in REAL_LOGS:
        d = diagnose(rlvitals.load(REAL / name)[0])
        cell = tab.page.locator(f"{_row(name)} + tr.rlv-headline-row")
        if d.headline is None:
            assert cell.count() == 0, name
            continue
        told += 1
        mark = cell.locator(".rlv-headline-status")
        assert mark.get_attribute("data-check") == d.headline.finding.check, name
        assert mark.locator(".l-en").inner_text() == d.headline.finding.title["en"]
        assert f"since step {d.headline.onset_step}" in cell.inner_text()
    assert told >= 1
    name = next(n for n in REAL_LOGS if diagnose(rlvitals.load(REAL / n)[0]).headline is not None)
    tab.follow(f"{_row(name)} td.rlv-run a", "**/runs/*")
    head = tab.page.locator("#story .rlv-cause[data-root=headline]")
    assert head.count() == 1 and head.bounding_box()["y"] < 900
    assert tab.page.evaluate("document.querySelector('#story').compareDocumentPosition("
                             "document.querySelector('.rlv-layer')) & Node.DOCUMENT_POSITION_FOLLOWING")
    tab.shot("dashboard_story")
    assert tab.errors == [] and tab.failed == []


def test_what_watch_says_of_a_run_appears_on_its_open_page_cleared_included(
        tab: Tab, growing: tuple[ServerThread, Path]) -> None:
    """`rlvitals watch --alert jsonl:FILE` writing into the served folder: its alerts appear on the open page of
    the run they name, without a reload, the cleared one first (newest first)."""
    from rlvitals.watch.sinks import JsonlSink
    from server.test_alert_files import _said

    srv, log = growing
    tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
    assert tab.page.locator("#rlv-alerts").count() == 0
    tab.page.evaluate("window.__same_document = 1")
    _said(log, JsonlSink(log.parent / "alerts.jsonl"), [(20, "warn"), (30, None), (40, None)])
    tab.page.wait_for_selector("#rlv-alerts li[data-kind='cleared']", timeout=8_000)
    kinds = tab.page.locator("#rlv-alerts li").evaluate_all("els => els.map(e => e.dataset.kind)")
    assert kinds == ["cleared", "new"] and tab.page.evaluate("window.__same_document") == 1
    assert tab.page.locator("#rlv-alerts li[data-kind='cleared']").is_visible()
    tab.shot("dashboard_alerts_cleared")
    assert tab.errors == [] and tab.failed == []


def test_an_open_console_page_follows_its_training_once_a_checkpoint_is_written(tab: Tab, tmp_path: Path) -> None:
    """A trainer's console, listed alone before the first checkpoint, is read with its output_dir after it: the
    page open on the console's run goes to the folder's run by itself (the events it polls say where)."""
    import shutil

    from trl_output_dir import FIXTURE, last_checkpoint

    out = tmp_path / "runs" / "out"
    out.mkdir(parents=True)
    shutil.copyfile(FIXTURE / "train.log", out / "train.log")
    ws = Workspace([tmp_path / "runs"], ServeState(tmp_path / "s.sqlite"), FAST)
    ws.poll_once()
    ws.start()
    try:
        with ServerThread(ws, "127.0.0.1") as srv:
            console, folder = run_id(str(out / "train.log")), run_id(str(out))
            tab.page.goto(f"{srv.url}runs/{console}")
            assert tab.page.locator("#rlv-live").get_attribute("data-run") == console
            last_checkpoint(out)
            tab.page.wait_for_url(f"{srv.url}runs/{folder}", timeout=60_000)
            assert tab.page.locator("#rlv-live").get_attribute("data-run") == folder
            tab.follow(None, srv.url)
            assert tab.page.locator("table.rlv-runlist tbody tr[data-run] a").all_inner_texts() == ["out"]
            assert tab.errors == []
    finally:
        ws.close()

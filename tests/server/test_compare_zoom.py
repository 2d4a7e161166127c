"""A zoom on the dashboard's comparison of runs fetches each line's range at full resolution from its own run, in
real headless Chromium against a real server over two simulated veRL logs of 2,500 steps (so the page holds them
downsampled): after the zoom the chart holds every step of the range for both runs, the caption says how many
points came, undoing the zoom restores the downsampled curves, and a live update keeps the zoom and fetches it
again. The same comparison written as a static report (no server) zooms without fetching anything."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import Tab
from report.test_browser import Opened, unfold

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report
from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, run_id
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

pytestmark = pytest.mark.browser

KEY = "critic/score/mean"
STEPS = 2500
#: run b grows by these steps while its comparison is open
MORE = 100
LO, HI = 1200, 1260
SCENARIOS = {"a": Scenario(steps=STEPS, seed=1, collapse_at=None), "b": Scenario(steps=STEPS + MORE, seed=2)}

#: the chart of KEY with a line from each run, as the page data holds it
FIND = f"""() => {{ const d = JSON.parse(document.getElementById('rlv-data').textContent);
    return Object.keys(d.charts).find(c => d.charts[c].kind === 'line' && d.charts[c].keys.includes('{KEY}')
        && new Set(d.charts[c].traces.map(t => t.run)).size === 2); }}"""
#: each run's line of KEY on the drawn chart: its label → [steps, values]
LINES = f"""cid => Object.fromEntries(document.getElementById(cid).data
    .filter(t => t.customdata && t.yaxis !== 'y2' && t.name.endsWith(': {KEY}'))
    .map(t => [t.name.split(': ')[0], [Array.from(t.customdata), Array.from(t.y)]]))"""
#: every fetch the page makes from now on, by its URL (the served page fetches with window.fetch)
SPY = """() => { window.__fetched = []; const f = window.fetch;
    window.fetch = (u, o) => { window.__fetched.push(String(u)); return f(u, o); }; }"""


def _lines(sc: Scenario, start: int, stop: int) -> bytes:
    return b"".join(line + b"\n" for line in list(jsonl_lines(sc))[start:stop])


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    """Run a's log of 2,500 steps and run b's first 2,500 (the served test appends b's last 100)."""
    root = tmp_path / "runs"
    out = {}
    for name, sc in SCENARIOS.items():
        (root / name).mkdir(parents=True)
        out[name] = root / name / "metrics.jsonl"
        out[name].write_bytes(_lines(sc, 0, STEPS))
    return out


@pytest.fixture
def served(logs: dict[str, Path], tmp_path: Path) -> Iterator[ServerThread]:
    ws = Workspace([logs["a"].parent.parent], ServeState(tmp_path / "s.sqlite"),
                   WorkspaceOptions(interval=0.2, rescan=1.0))
    ws.poll_once()
    ws.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (len(ws.summaries()) == 2
                                               and all(s["status"] == "ready" for s in ws.summaries())):
        time.sleep(0.2)
    with ServerThread(ws, "127.0.0.1") as srv:
        yield srv
    ws.close()


def _logged(log: Path, lo: int, hi: int) -> tuple[list[int], np.ndarray]:
    """The steps ``lo..hi`` of ``log``'s KEY and their values, as the log holds them."""
    x, y = rlvitals.load(log)[0].series(KEY, train_only=False)
    keep = (x >= lo) & (x <= hi)
    return [int(s) for s in x[keep]], y[keep]


def _full(tab: Any, cid: str, logs: dict[str, Path]) -> None:
    """The chart holds every step of LO..HI of both runs, with the values their logs hold."""
    lines = tab.page.evaluate(LINES, cid)
    assert sorted(lines) == sorted(f"{name}/metrics.jsonl" for name in logs), lines
    for name, log in logs.items():
        steps, values = _logged(log, LO, HI)
        assert steps == list(range(LO, HI + 1))
        got_x, got_y = lines[f"{name}/metrics.jsonl"]
        assert got_x == steps, name
        assert np.allclose(np.array(got_y, dtype=float), values, rtol=1e-5), name


def _zoom(page: Any, cid: str, x: list[int] | None) -> None:
    """Zoom the chart to steps ``x`` (None: back to the whole run), as Plotly does for a drag or a double click."""
    update = {"xaxis.range": x} if x else {"xaxis.autorange": True}
    page.evaluate("([cid, u]) => Plotly.relayout(document.getElementById(cid), u)", [cid, update])


def test_a_zoom_on_a_comparison_fetches_each_runs_range_and_a_live_update_keeps_it(
        tab: Tab, served: ServerThread, logs: dict[str, Path]) -> None:
    ida, idb = (run_id(str(logs[n].resolve())) for n in ("a", "b"))
    tab.follow(None, served.url + f"compare?runs={ida},{idb}")
    cid = tab.page.evaluate(FIND)
    assert cid, "no chart of both runs' " + KEY
    unfold(tab.page, cid)
    tab.page.locator(f"#{cid}").scroll_into_view_if_needed()
    tab.page.wait_for_selector(f'#{cid}[data-drawn="1"]')
    before = tab.page.evaluate(LINES, cid)
    caption = tab.page.locator(f"#fig-{cid} .rlv-points").inner_text()
    for steps, _ in before.values():  # downsampled: the page holds a fraction of each run's steps
        assert len(steps) < STEPS and len([s for s in steps if LO <= s <= HI]) < HI - LO + 1

    tab.page.evaluate(SPY)
    _zoom(tab.page, cid, [LO, HI])
    tab.page.wait_for_function(f"() => document.getElementById('{cid}').getAttribute('data-range') === '{LO}-{HI}'")
    _full(tab, cid, logs)
    fetched = tab.page.evaluate("window.__fetched")
    for rid in (ida, idb):  # each line from its own run
        assert f"/api/runs/{rid}/series?key=critic%2Fscore%2Fmean&start={LO}&end={HI}&" in " ".join(fetched), rid
    n = 2 * (HI - LO + 1)
    assert tab.page.locator(f"#fig-{cid} .rlv-points .l-en").inner_text() == \
        f"{n} points of steps {LO}–{HI} from 2 runs (fetched for this zoom)"
    assert tab.page.locator(f"#fig-{cid} .rlv-points .l-zh").text_content() == \
        f"来自 2 个训练、第 {LO}–{HI} 步的 {n} 个点（为此缩放获取）"
    tab.shot("compare_zoom_full_resolution")

    _zoom(tab.page, cid, None)  # undone: the downsampled curves and the caption of the page again
    tab.page.wait_for_function(f"() => !document.getElementById('{cid}').hasAttribute('data-range')")
    assert tab.page.evaluate(LINES, cid) == before
    assert tab.page.locator(f"#fig-{cid} .rlv-points").inner_text() == caption

    # zoomed again, then run b grows: the comparison swaps its <main> in and the fresh chart keeps the zoom,
    # fetched again from each run
    _zoom(tab.page, cid, [LO, HI])
    tab.page.wait_for_function(f"() => document.getElementById('{cid}').hasAttribute('data-range')")
    folded = tab.page.locator("main details.rlv-more:not([open])").first
    layer = folded.get_attribute("id")  # a folded layer the reader opens: it stays open too
    assert layer
    folded.locator("> summary").click()
    tab.page.evaluate("window.__same_document = 1")
    with logs["b"].open("ab") as f:
        f.write(_lines(SCENARIOS["b"], STEPS, STEPS + MORE))
    tab.page.wait_for_function(f"""() => {{ const d = JSON.parse(document.getElementById('rlv-data').textContent);
        return d.charts['{cid}'].traces.some(t => t.run === 'r1' && Math.max(...t.x) === {STEPS + MORE}); }}""",
                               timeout=20_000)
    tab.page.wait_for_function(f"() => document.getElementById('{cid}').getAttribute('data-range') === '{LO}-{HI}'",
                               timeout=10_000)
    assert tab.page.evaluate(f"document.getElementById('{cid}').layout.xaxis.range") == [LO, HI]
    assert tab.page.evaluate(f"document.getElementById('{layer}').open")
    _full(tab, cid, logs)
    assert tab.page.evaluate("window.__same_document") == 1
    assert tab.errors == [] and tab.failed == []


def test_the_static_report_of_the_same_runs_zooms_without_fetching(browser: Any, logs: dict[str, Path],
                                                                   tmp_path: Path) -> None:
    runs = [rlvitals.load(logs[n])[0] for n in ("a", "b")]
    write_report(tmp_path / "report.html", build_page(runs, [diagnose(r) for r in runs]))
    opened = Opened(browser, tmp_path / "report.html")
    try:
        page = opened.page
        cid = page.evaluate(FIND)
        unfold(page, cid)
        page.locator(f"#{cid}").scroll_into_view_if_needed()
        page.wait_for_function(f"document.getElementById('{cid}').classList.contains('js-plotly-plot')")
        before = page.evaluate(LINES, cid)
        page.evaluate(SPY)
        _zoom(page, cid, [LO, HI])  # the zoom's handlers run before Plotly's promise settles: a fetch would be asked
        assert page.evaluate(f"document.getElementById('{cid}').layout.xaxis.range") == [LO, HI]
        assert page.evaluate("window.__fetched") == []
        assert not page.evaluate(f"document.getElementById('{cid}').hasAttribute('data-range')")
        assert page.evaluate(LINES, cid) == before  # the page's downsampled points, zoomed
        assert opened.errors == [] and opened.failed == []
    finally:
        opened.close()

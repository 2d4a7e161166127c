"""Comparing runs from the dashboard, in real headless Chromium against a real server over three corpus runs:
the run list filters in place (by name, verdict, algorithm); ticking two runs and pressing Compare opens
/compare?runs=A,B, the report of both together: their traces overlaid on one chart, the final/best table and the
config diff of only the keys that differ, in English and in Chinese."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import Tab
from report.test_compare import COLLAPSE, DIFFERING, HEALTHY, SURGE

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, run_id
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

pytestmark = pytest.mark.browser

RUNS = (HEALTHY, COLLAPSE, SURGE)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    ws = Workspace(list(RUNS), ServeState(tmp_path_factory.mktemp("state") / "s.sqlite"),
                   WorkspaceOptions(interval=0.2))
    ws.poll_once()
    ws.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(s["status"] == "ready" for s in ws.summaries()):
        time.sleep(0.2)
    with ServerThread(ws, "127.0.0.1") as srv:
        yield srv
    ws.close()


def _id(folder: Any) -> str:
    return run_id(str(folder.resolve() / "output.log"))


def _shown(tab: Tab) -> list[str]:
    rows = tab.page.locator("main tr[data-run]")
    return [rows.nth(i).get_attribute("data-run") or "" for i in range(rows.count()) if rows.nth(i).is_visible()]


def test_the_run_list_filters_in_place_by_name_verdict_and_algorithm(tab: Tab, server: ServerThread) -> None:
    tab.page.goto(server.url)
    assert sorted(_shown(tab)) == sorted(_id(r) for r in RUNS)
    tab.page.fill("#rlv-filter", "length-collapse")
    assert _shown(tab) == [_id(COLLAPSE)]
    assert tab.page.locator("#rlv-filter-count .l-en").inner_text() == "1 of 3 shown"
    verdicts = {_id(r): diagnose(rlvitals.load(r)[0]).verdict for r in RUNS}
    for verdict in set(verdicts.values()):
        tab.page.fill("#rlv-filter", verdict)
        assert sorted(_shown(tab)) == sorted(rid for rid, v in verdicts.items() if v == verdict), verdict
    tab.page.fill("#rlv-filter", "grpo healthy")  # every word must match: the algorithm and the name
    assert _shown(tab) == [_id(HEALTHY)]
    tab.page.fill("#rlv-filter", "no-such-run")
    assert _shown(tab) == []
    tab.page.fill("#rlv-filter", "")
    assert len(_shown(tab)) == 3
    assert tab.errors == [] and tab.failed == []


def test_ticking_two_runs_and_comparing_overlays_them_with_the_table_and_the_config_diff(
        tab: Tab, server: ServerThread) -> None:
    tab.page.goto(server.url)
    button = tab.page.locator("#rlv-compare")
    assert button.is_disabled()
    tab.page.check(f'input.rlv-pick[value="{_id(HEALTHY)}"]')
    assert button.is_disabled()  # one run is no comparison
    tab.page.fill("#rlv-filter", "collapse")  # a tick survives the filter hiding its row
    tab.page.check(f'input.rlv-pick[value="{_id(COLLAPSE)}"]')
    assert tab.page.locator("#rlv-picked").inner_text() == "2" and button.is_enabled()
    tab.follow("#rlv-compare", "**/compare?runs=*")
    assert sorted(tab.page.url.split("runs=")[1].split(",")) == sorted([_id(HEALTHY), _id(COLLAPSE)])
    assert tab.page.locator("section#runs tbody tr[data-run]").count() == 2

    # both runs' reward on one chart, drawn by Plotly with a line per run
    cid = tab.page.evaluate("""() => { const d = JSON.parse(document.getElementById('rlv-data').textContent);
        return Object.keys(d.charts).find(c => d.charts[c].keys.includes('critic/score/mean')
            && new Set(d.charts[c].traces.map(t => t.run)).size === 2); }""")
    tab.page.locator(f"#{cid}").scroll_into_view_if_needed()
    tab.page.wait_for_selector(f'#{cid}[data-drawn="1"]')
    names = tab.page.evaluate(f"() => document.getElementById('{cid}').data.map(t => t.name)")
    labels = [f"{r.name}/output.log" for r in (HEALTHY, COLLAPSE)]
    for label in labels:
        assert any(n.startswith(label + ": critic/score/mean") for n in names), (label, names)

    # aligned by the tokens trained on: each line ends at its run's count (summed by hand from the logs)
    tab.page.select_option("#rlv-xaxis", "tokens")
    tab.page.wait_for_function(f"() => document.getElementById('{cid}').data[0].x.every(x => x === null || x > 1000)")
    ends = tab.page.evaluate(f"() => document.getElementById('{cid}').data.filter(t => t.name.includes(':'))"
                             ".map(t => [t.name.split(':')[0], t.x[t.x.length - 1]])")
    assert dict(ends) == {labels[0]: 279914916, labels[1]: 24367511}
    tab.page.select_option("#rlv-xaxis", "step")

    table = tab.page.locator("#rlv-compare-table")
    table.scroll_into_view_if_needed()
    best = table.locator('tr[data-row="critic/score/mean"] td.rlv-best')
    by_run = {tab.page.locator(f'section#runs tr[data-run="{best.nth(i).get_attribute("data-run")}"] td').nth(0)
              .get_attribute("title"): best.nth(i).get_attribute("data-value") for i in range(2)}
    assert by_run == {str(HEALTHY.resolve() / "output.log"): "0.15958333015441895",
                      str(COLLAPSE.resolve() / "output.log"): "-0.4999999701976776"}
    assert table.locator('tr[data-row="critic/score/mean"] td[data-top="1"]').inner_text().startswith("0.1596 ★")
    assert table.locator('tr[data-row="actor/entropy"] td.rlv-best').all_inner_texts() == ["—", "—"]
    diff = tab.page.locator("#rlv-config-diff tbody tr")
    assert sorted(diff.nth(i).get_attribute("data-key") for i in range(diff.count())) == sorted(DIFFERING)
    tab.shot("compare_runs", full=False)

    tab.page.click('[data-set-lang="zh"]')
    assert tab.page.locator("#comparison h3").first.inner_text() == "最终值与最佳值"
    assert tab.errors == [] and tab.failed == []


@pytest.fixture
def growing(tmp_path: Path) -> Iterator[tuple[ServerThread, Path, Path]]:
    """Two simulated veRL JSONL logs of 60 steps, served; the test appends to them."""
    logs = []
    for name, seed in (("a", 1), ("b", 2)):
        (tmp_path / name).mkdir()
        log = tmp_path / name / "metrics.jsonl"
        log.write_bytes(_lines(Scenario(steps=120, seed=seed), 0, 60))
        logs.append(log)
    ws = Workspace([tmp_path], ServeState(tmp_path / "s.sqlite"), WorkspaceOptions(interval=0.2, rescan=1.0))
    ws.poll_once()
    ws.start()
    with ServerThread(ws, "127.0.0.1") as srv:
        yield srv, logs[0], logs[1]
    ws.close()


def _lines(sc: Scenario, start: int, stop: int) -> bytes:
    return b"".join(line + b"\n" for line in list(jsonl_lines(sc))[start:stop])


def test_ticks_and_filter_outlive_a_live_update_and_the_comparison_updates_too(
        tab: Tab, growing: tuple[ServerThread, Path, Path]) -> None:
    srv, a, b = growing
    ida, idb = run_id(str(a.resolve())), run_id(str(b.resolve()))
    tab.page.goto(srv.url)
    tab.page.check(f'input.rlv-pick[value="{ida}"]')
    tab.page.check(f'input.rlv-pick[value="{idb}"]')
    tab.page.fill("#rlv-filter", "b/metrics")
    assert _shown(tab) == [idb]
    with a.open("ab") as f:
        f.write(_lines(Scenario(steps=120, seed=1), 60, 70))
    # live.js swaps the list in with run a at step 70: the ticks and the filter are put back on the new rows
    tab.page.wait_for_function(f"""() => {{ const tr = document.querySelector('main tr[data-run="{ida}"]');
        return tr && tr.querySelector('.rlv-step').textContent === '70'; }}""", timeout=10_000)
    assert _shown(tab) == [idb]
    assert all(tab.page.is_checked(f'input.rlv-pick[value="{rid}"]') for rid in (ida, idb))
    assert tab.page.locator("#rlv-compare").is_enabled()
    tab.follow("#rlv-compare", "**/compare?runs=*")

    # the comparison follows its runs: b's new steps are swapped in without a reload
    tab.page.evaluate("window.__same_document = 1")
    with b.open("ab") as f:
        f.write(_lines(Scenario(steps=120, seed=2), 60, 90))
    tab.page.wait_for_function("""() => { const d = JSON.parse(document.getElementById('rlv-data').textContent);
        return Object.values(d.charts).some(c => c.traces.some(t => t.run === 'r1' && Math.max(...t.x) === 90)); }""",
                               timeout=10_000)
    assert tab.page.evaluate("window.__same_document") == 1
    assert tab.errors == [] and tab.failed == []

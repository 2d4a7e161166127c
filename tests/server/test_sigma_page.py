"""The dashboard's run page shows σ_G across groups (the report's L3 view, served live) in real headless
Chromium, in both languages. The log is simulated; the rollouts are the report tests' constructed veRL dump
(4 groups of 4 rollouts a step, a 0/1 reward)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import Tab
from report.test_model import write_dump

from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, run_id
from server.test_browser import GROWING, _lines

pytestmark = pytest.mark.browser


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServerThread, Path]]:
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


def test_a_run_page_with_rollouts_shows_sigma_g_across_groups(browser: Any, served: tuple[ServerThread, Path]) -> None:
    srv, log = served
    tab = Tab(browser)
    try:
        tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
        block = tab.page.locator("#layer-L3 .rlv-sigma")
        block.scroll_into_view_if_needed()
        shape = block.get_attribute("data-shape")
        assert shape in ("at_zero", "spread", "bimodal")
        assert block.locator("li").count() == 3 and block.locator("li.rlv-now").get_attribute("data-shape") == shape
        block.locator(".rlv-chart").scroll_into_view_if_needed()
        tab.page.wait_for_selector("#layer-L3 .rlv-sigma .js-plotly-plot")
        assert block.locator("p").first.locator(".l-en").inner_text().startswith("Over the last fifth of the rollouts")
        tab.page.click("button[data-set-lang=zh]")
        assert block.locator("p").first.locator(".l-zh").inner_text().startswith("在最后五分之一的 rollout 中")
        assert any("组间 σ_G 分布" in h for h in tab.page.locator("#layer-L3 h3").all_inner_texts())
        tab.shot("dashboard_sigma_zh")
        assert tab.errors == [] and tab.failed == []
    finally:
        tab.close()

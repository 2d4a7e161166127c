"""A served chart zoomed on the elapsed-time axis fetches the steps that stretch of time covers, at full
resolution, in real Chromium: the range of hours turns into steps through the run's own clock."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from browser import Tab

import rlvitals
from rlvitals.server import run_id
from server.test_browser import _drag, long_run

pytestmark = pytest.mark.browser
__all__ = ["long_run"]  # the fixture this module borrows


def test_a_zoom_on_the_time_axis_fetches_the_steps_of_that_time(tab: Tab, long_run: Any) -> None:
    srv, log = long_run
    steps, seconds = rlvitals.load(log)[0].series("timing_s/step", finite=True)
    assert np.array_equal(steps, np.arange(len(steps)) + steps[0]) and seconds.min() > 0
    hours = np.cumsum(seconds) / 3600
    tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
    f = tab.page.locator("article[data-check=grad_norm_spike] a.rlv-goto-chart").first
    cid = (f.get_attribute("href") or "").removeprefix("#fig-")
    tab.page.select_option("#rlv-xaxis", "time")
    f.click()  # as a reader would: the link opens the folded layer that holds the chart and scrolls to it
    tab.page.wait_for_function(f"() => document.getElementById('{cid}').layout?.xaxis?.ticksuffix === ' h'")
    # the hours at which the run was at steps 2000 and 2100, by its own clock
    h0, h1 = float(hours[2000 - steps[0]]), float(hours[2100 - steps[0]])
    asked: list[str] = []
    tab.page.on("request", lambda r: asked.append(r.url) if "/series?" in r.url else None)
    _drag(tab, cid, h0, h1)
    tab.page.wait_for_function(f"() => document.getElementById('{cid}').hasAttribute('data-range')")
    lo, hi = (int(v) for v in (tab.page.get_attribute(f"#{cid}", "data-range") or "").split("-"))
    x0, x1 = tab.page.evaluate(f"document.getElementById('{cid}').layout.xaxis.range")
    # the steps fetched are those the dragged hours cover (the drag lands within a pixel of its ends)
    want = np.flatnonzero((hours >= x0) & (hours <= x1)) + steps[0]
    assert abs(lo - want[0]) <= 1 and abs(hi - want[-1]) <= 1 and lo <= 2050 <= hi
    got = tab.page.evaluate(f"document.getElementById('{cid}').data[0].customdata")
    assert got == list(range(lo, hi + 1))  # every step of the range, at full resolution
    drawn = np.array(tab.page.evaluate(f"document.getElementById('{cid}').data[0].x"), dtype=float)
    assert np.allclose(drawn, hours[np.array(got) - steps[0]], rtol=1e-3)  # drawn in hours
    assert any("start=" in u and "key=actor%2Fgrad_norm" in u for u in asked)
    tab.shot("dashboard_zoom_time_axis")
    assert tab.errors == [] and tab.failed == []

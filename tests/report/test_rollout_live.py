"""The rollout browser across a live update, in real headless Chromium against a real server: a run
served as one log file, its rollout dumps in ``rollout_data/`` beside it, grows while the page is
open; the reader's filters, search (with its highlighting, and the caret when typing), both orders,
the groups they closed and the group at the top of the window are all as they were once the page
has redrawn from the new data. Checked by the DOM and by screenshots of the browser before and after
(tests/artifacts/)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from browser import ARTIFACTS, Tab, pixels
from PIL import Image  # pillow comes with tensorboard, a test dependency

from report.test_model import write_dump
from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, run_id
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

pytestmark = pytest.mark.browser

GROWING = Scenario(steps=200)
HIT_RGB = (0xFF, 0xE0, 0x66)  # a search match's <mark> (report.css)


def _lines(start: int, stop: int) -> bytes:
    return b"".join(line + b"\n" for line in list(jsonl_lines(GROWING))[start:stop])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServerThread, Path]]:
    """``rlvitals serve exp/grpo.jsonl``: 60 steps logged, 12 prompt groups of 4 per rollout step."""
    log = tmp_path / "exp" / "grpo.jsonl"
    log.parent.mkdir()
    log.write_bytes(_lines(0, 60))
    write_dump(log.parent / "rollout_data", steps=6, groups=12)
    ws = Workspace([log], ServeState(tmp_path / "s.sqlite"), WorkspaceOptions(interval=0.2, rescan=1.0))
    ws.poll_once()
    ws.start()
    with ServerThread(ws, "127.0.0.1") as srv:
        yield srv, log
    ws.close()


# what the browser shows: the count, each group (its id, open, its prompt) and each row's correct mark
SHOWN = """() => ({
  count: document.getElementById('rlv-count').getAttribute('data-count'),
  groups: [...document.querySelectorAll('#rlv-groups details.rlv-group')].map(d => ({
    id: d.getAttribute('data-group'), open: d.open, prompt: d.querySelector('.rlv-prompt').textContent,
    marks: [...d.querySelectorAll('mark.rlv-hit')].map(m => m.textContent),
    correct: [...d.querySelectorAll('tr[data-sample] td:nth-child(3)')].map(td => td.textContent),
    scores: [...d.querySelectorAll('tr[data-sample] td:nth-child(2)')].map(td => Number(td.textContent))})),
  filters: [...document.querySelectorAll('input[id^=rlv-filter-]')].filter(b => b.checked).map(b => b.id),
  search: document.getElementById('rlv-search').value,
  sorts: [document.getElementById('rlv-sort-groups').value, document.getElementById('rlv-sort-rollouts').value],
  step: document.getElementById('rlv-step').value,
  focus: document.activeElement && document.activeElement.id,
  caret: [document.getElementById('rlv-search').selectionStart, document.getElementById('rlv-search').selectionEnd]
})"""


def _top(tab: Tab, group: str) -> float:
    y: float = tab.page.evaluate(f"""document.querySelector('#rlv-groups details[data-group="{group}"]')
        .getBoundingClientRect().top""")
    return y


def _shot(tab: Tab, name: str) -> bytes:
    """The rollout browser (the page's sticky header and toolbar kept off it)."""
    ARTIFACTS.mkdir(exist_ok=True)
    png: bytes = tab.page.locator("#rlv-browser").screenshot(
        path=str(ARTIFACTS / f"{name}.png"), style=".rlv-header, .rlv-toolbar { visibility: hidden; }")
    return png


def _bands(png: bytes) -> int:
    """How many separate lines of the picture hold highlighted matches (runs of rows with a <mark>'s colour)."""
    rows = pixels(png, HIT_RGB, tol=8).sum(axis=1) >= 10
    return int(np.sum(rows[1:] & ~rows[:-1]) + rows[0])


def test_a_live_update_keeps_the_rollout_browsers_filters_search_orders_and_place(
        tab: Tab, served: tuple[ServerThread, Path]) -> None:
    srv, log = served
    tab.page.goto(srv.url + "runs/" + run_id(str(log.resolve())))
    tab.page.select_option("#rlv-step", "4")
    tab.page.wait_for_function("() => document.getElementById('rlv-count').getAttribute('data-count') === "
                               "'48/48 12/12'")
    tab.page.check("#rlv-filter-wrong")
    tab.page.select_option("#rlv-sort-groups", "mean-asc")
    tab.page.select_option("#rlv-sort-rollouts", "score-desc")
    tab.page.fill("#rlv-search", "Question 1")  # groups 1, 10 and 11
    before = tab.page.evaluate(SHOWN)
    assert before["count"] != "48/48 12/12" and len(before["groups"]) == 3
    assert all(g["open"] for g in before["groups"])  # a narrowed list opens every group
    closed = before["groups"][0]["id"]
    tab.page.click(f'#rlv-groups details[data-group="{closed}"] > summary')
    tab.page.click("#rlv-search")
    tab.page.keyboard.press("End")
    tab.page.keyboard.press("Shift+ArrowLeft")  # the caret selects the "1"
    before = tab.page.evaluate(SHOWN)
    assert [g["open"] for g in before["groups"]] == [False, True, True]
    assert before["focus"] == "rlv-search" and before["caret"] == [9, 10]
    png_before = _shot(tab, "rollouts_live_before")
    # the last group 150 px below the window's top, where the reader reads it
    anchor = before["groups"][-1]["id"]
    tab.page.evaluate(f"""window.scrollBy(0, document.querySelector('#rlv-groups details[data-group="{anchor}"]')
        .getBoundingClientRect().top - 150)""")
    at = _top(tab, anchor)
    old = tab.page.evaluate_handle("document.getElementById('rlv-groups')")

    with log.open("ab") as f:
        f.write(_lines(60, 100))
    tab.page.wait_for_function("() => document.getElementById('rlv-live-step').textContent === '100'",
                               timeout=8_000)
    # the page was swapped and the fresh script has fetched and drawn the step again
    tab.page.wait_for_function("""old => { const g = document.getElementById('rlv-groups');
        return g !== old && g.querySelectorAll('details.rlv-group').length > 0; }""", arg=old, timeout=8_000)
    after = tab.page.evaluate(SHOWN)
    assert after == before
    assert after["filters"] == ["rlv-filter-wrong"] and after["search"] == "Question 1"
    assert after["sorts"] == ["mean-asc", "score-desc"] and after["step"] == "4"
    for g in after["groups"]:  # every group and row shown still matches the filter and the search
        assert "Question 1" in g["prompt"] and g["marks"] == ["Question 1"]
        assert g["correct"] and set(g["correct"]) == {"✗"} and g["scores"] == sorted(g["scores"], reverse=True)
    assert abs(_top(tab, anchor) - at) < 1
    png_after = _shot(tab, "rollouts_live_after")
    # the picture shows the same: the two open groups' prompts, each with its match highlighted, as before
    hits = [int(pixels(png, HIT_RGB, tol=8).sum()) for png in (png_before, png_after)]
    assert _bands(png_before) == _bands(png_after) == 2 and hits[0] > 300 and abs(hits[1] - hits[0]) < 0.05 * hits[0]
    # the same size: a picture's height is the box's rounded to whole pixels from where its top falls, and the page
    # above it changed (the forecast's sentence), so the box of the same height may come out a pixel taller
    (w0, h0), (w1, h1) = (Image.open(io.BytesIO(png)).size for png in (png_before, png_after))
    assert w0 == w1 and abs(h0 - h1) <= 1
    # typing goes on in the box: the selected "1" is replaced
    tab.page.keyboard.type("0")
    narrowed = tab.page.evaluate(SHOWN)
    assert narrowed["search"] == "Question 0" and [g["prompt"][:11] for g in narrowed["groups"]] == ["Question 0:"]
    assert tab.errors == [] and tab.failed == []

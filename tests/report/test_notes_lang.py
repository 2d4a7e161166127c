"""The readers' and rollouts' notes in the report follow the language switch in real Chromium: the page
data carries each note in English (``notes``) and Chinese (``notes_zh``, the English when a note has no
Chinese), and the page shows the one of the chosen language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rlvitals
from report.test_model import write_dump
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.words import Words

pytestmark = pytest.mark.browser


def _report(tmp: Path) -> tuple[Path, dict[str, Any], Words]:
    log = tmp / "train.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=30))))
    write_dump(tmp / "dump")
    analysis = rlvitals.analyze_rollouts(tmp / "dump")
    run = rlvitals.load(log)[0].with_series(analysis.series())  # joining the series leaves a note in Words
    note = next(n for n in run.notes if isinstance(n, Words))
    page = build_page([run], [diagnose(run)], analysis)
    write_report(tmp / "report.html", page)
    return tmp / "report.html", page, note


def test_the_page_data_carries_each_note_in_both_languages(tmp_path: Path) -> None:
    _, page, note = _report(tmp_path)
    row = page["runs"][0]
    assert note in row["notes"] and note.zh in row["notes_zh"] and len(row["notes"]) == len(row["notes_zh"])
    assert note.zh != str(note)
    assert all(type(en) is str for en in row["notes"])  # the page data is plain JSON text


def test_the_notes_follow_the_language_switch_in_chromium(browser: Any, tmp_path: Path) -> None:
    path, _, note = _report(tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        for box in page.query_selector_all("details.rlv-notes"):
            box.evaluate("d => d.open = true")
        page.click("button[data-set-lang=en]")
        shown = page.evaluate("() => document.body.innerText")
        assert str(note) in shown and note.zh not in shown
        page.click("button[data-set-lang=zh]")
        shown = page.evaluate("() => document.body.innerText")
        assert note.zh in shown and str(note) not in shown
    finally:
        page.close()
    assert not errors, errors

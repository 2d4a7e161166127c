"""The report opens with the diagnosis's story, in real headless Chromium: the root cause in the first screen
above every layer section, what followed under it with each link going to its finding's card, the timeline,
both languages; a run with nothing to act on says so in one line. Screenshots go to tests/artifacts/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser import ARTIFACTS
from conftest import REAL

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report

pytestmark = pytest.mark.browser

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
KL_RUN = CORPUS / "verl__agent-opd__qwen3-4b-klreward-length-collapse" / "output.log"
HEALTHY = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"


def _report(tmp: Path, path: Path, lang: str = "en") -> tuple[Path, Any]:
    run = rlvitals.load(path)[0]
    d = diagnose(run)
    out = tmp / f"{path.stem}-{lang}.html"
    write_report(out, build_page([run], [d], lang=lang))
    return out, d


def test_the_report_opens_with_the_root_cause_and_what_followed(browser: Any, tmp_path: Path) -> None:
    out, d = _report(tmp_path, KL_RUN)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    story = page.locator("#story")
    # the story comes before every layer section and its root cause is in the first screen
    assert page.evaluate("document.querySelector('#story').compareDocumentPosition("
                         "document.querySelector('.rlv-layer')) & Node.DOCUMENT_POSITION_FOLLOWING")
    head = story.locator(".rlv-cause[data-root=headline]")
    assert head.count() == 1 and head.get_attribute("data-check") == d.headline.finding.check
    box = head.bounding_box()
    assert box is not None and box["y"] < 900, box
    assert head.inner_text().upper().startswith("ROOT CAUSE") and "KL" in head.locator(".rlv-cause-head").inner_text()
    followed = head.locator(".rlv-followed li")
    assert followed.count() == len(d.headline.explains) >= 5
    checks = [followed.nth(i).get_attribute("data-check") for i in range(followed.count())]
    assert {"response_length_collapse", "entropy_collapse", "reward_collapse"} <= set(checks)
    # a consequence's link goes to its finding's card in its layer section
    entropy = head.locator(".rlv-followed li[data-check=entropy_collapse] a")
    target = entropy.get_attribute("href")
    entropy.click()
    page.wait_for_timeout(300)
    card = page.locator(target)
    assert card.count() == 1 and card.is_visible() and card.get_attribute("data-check") == "entropy_collapse"
    y = card.bounding_box()
    assert y is not None and 0 <= y["y"] < 900, y
    # the timeline holds every warn/fail finding in step order
    rows = story.locator(".rlv-timeline tbody tr")
    assert rows.count() == len(d.timeline)
    steps = [int(rows.nth(i).locator("td").first.inner_text()) for i in range(rows.count())]
    assert steps == sorted(steps)
    page.locator("button[data-set-lang=zh]").click()
    assert "根本原因" in head.inner_text() and "随后发生" in head.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-story-zh.png"))
    assert errors == []
    page.close()


def test_a_run_with_nothing_to_act_on_says_so_in_one_line(browser: Any, tmp_path: Path) -> None:
    out, d = _report(tmp_path, REAL / HEALTHY)
    assert d.headline is None
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(out.as_uri())
    story = page.locator("#story")
    assert story.locator(".rlv-cause").count() == 0 and story.locator(".rlv-timeline").count() == 0
    line = story.locator(".rlv-healthy")
    assert line.count() == 1 and line.inner_text().startswith("OK Nothing to act on")
    page.close()

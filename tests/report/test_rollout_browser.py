"""The report's rollout browser in real headless Chromium, on a veRL rollout dump folder (one
``{step}.jsonl`` per step, veRL's keys: ``input``, ``output``, ``gts``, ``score``, ``step``, ``acc``,
``pred`` and a token count its reward function logged): the ground truth beside each response (and
no such column for a dump without one), filters whose counts are checked against the dump's own
lines, a text search highlighted with ``<mark>`` nodes (markup in the texts stays text), the group and
rollout orders, the not-computed list folded into one line, and both languages. Screenshots go to
tests/artifacts/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import ARTIFACTS, WARN_RGB, pixels

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report
from rlvitals.report.rollouts import step_groups, zero_variance
from rlvitals.rollout.readers import ColumnMap
from rlvitals.synthetic.scenarios import run_from_series

MAX_LEN = 64    # the generation limit (tokens): a rollout whose token count reaches it was cut
STEP = 3        # the step the tests browse
XSS = '<img src=x onerror="window.__z=1">'
MARK_RGB = (0xFF, 0xE0, 0x66)  # mark.rlv-hit in report.css


def _line(step: int, g: int, i: int, target: bool) -> dict[str, Any]:
    """Group 0 all correct and group 1 all wrong (zero variance), the others mixed; every fifth
    rollout rambles to the limit; a wrong one says "Maybe"; group 2's last one is markup."""
    total = g + 3 + step
    cut = (g * 4 + i + step) % 5 == 0
    ok = g == 0 or (g != 1 and (g + i + step) % 2 == 0)
    answer = None if cut else total if ok else total + 1
    if cut:
        text = "Let me count the apples one by one, " * 12
    elif g == 2 and i == 3:
        text = XSS
    else:
        text = f"<think>{g + 3} + {step}</think> {'' if ok else 'Maybe '}the answer is {answer}."
    row = {"input": f"Q{g}: Tom has {g + 3} apples and buys {step} more. How many apples does Tom have?",
           "output": text, "score": 1.0 if ok else 0.0, "step": step, "acc": ok,
           "pred": None if answer is None else str(answer),
           "response_length": MAX_LEN if cut else 8 + 2 * i + g}
    return {**row, "gts": str(total)} if target else row


def write_dump(folder: Path, target: bool = True, steps: int = 5, groups: int = 6, n: int = 4) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for step in range(1, steps + 1):
        lines = [json.dumps(_line(step, g, i, target)) for g in range(groups) for i in range(n)]
        (folder / f"{step}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def dump_lines(folder: Path, step: int) -> list[dict[str, Any]]:
    """The step's rollouts as the dump holds them, read without rlvitals."""
    return [json.loads(x) for x in (folder / f"{step}.jsonl").read_text(encoding="utf-8").splitlines()]


def by_group(lines: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """veRL lists a prompt's samples consecutively: a group is its prompt's lines."""
    out: dict[str, list[dict[str, Any]]] = {}
    for x in lines:
        out.setdefault(x["input"], []).append(x)
    return out


def _analysis(folder: Path) -> Any:
    return rlvitals.analyze_rollouts(folder, columns=ColumnMap(length="response_length"), max_response_length=MAX_LEN)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("rollout_browser")
    out = {}
    for name, target in (("with", True), ("without", False)):
        write_dump(tmp / name, target=target)
        analysis = _analysis(tmp / name)
        # a small run of its own beside the dump: the page stays light, the browser is what is tested
        run = run_from_series({"actor/entropy": np.linspace(1.0, 0.6, 5)}).with_series(analysis.series())
        write_report(tmp / f"{name}.html", build_page([run], [diagnose(run)], analysis))
        out[name] = tmp / f"{name}.html"
    out["dump"] = tmp / "with"
    return out


class Browsed:
    """The report opened at its rollout browser, step ``STEP``, with every page error recorded."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(10_000)
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.as_uri())
        self.page.select_option("#rlv-step", str(STEP))
        self.page.locator("#rlv-browser").scroll_into_view_if_needed()

    def tick(self, *ids: str) -> None:
        for f in ids:
            self.page.check(f"#rlv-filter-{f}")

    def count(self) -> str:
        return str(self.page.locator("#rlv-count").get_attribute("data-count"))

    def groups(self) -> list[str]:
        return [str(x) for x in self.page.eval_on_selector_all("#rlv-groups details.rlv-group",
                                                               "els => els.map(e => e.dataset.group)")]

    def rows(self) -> int:
        return self.page.locator("#rlv-groups tr[data-sample]").count()


    def reset(self) -> None:
        """Back to the page as it opens: no filter, no search, the first orders, in English."""
        self.page.click("button[data-set-lang=en]")
        for box in self.page.locator("#rlv-tools input[type=checkbox]").all():
            box.uncheck()
        self.page.fill("#rlv-search", "")
        self.page.select_option("#rlv-sort-groups", "spread")
        self.page.select_option("#rlv-sort-rollouts", "sample")


@pytest.fixture(scope="module")
def opened(browser: Any, pages: dict[str, Path]) -> Iterator[Browsed]:
    b = Browsed(browser, pages["with"])  # one page for the module: a page of Plotly loads slowly on busy cores
    yield b
    b.page.close()


@pytest.fixture
def browsed(opened: Browsed) -> Browsed:
    opened.reset()
    return opened


def _shot(b: Browsed, name: str) -> bytes:
    ARTIFACTS.mkdir(exist_ok=True)
    b.page.locator("#rlv-count").scroll_into_view_if_needed()
    png: bytes = b.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    return png


# --- the groups' JSON (also what GET /api/runs/ID/rollouts sends) ------------------------------------

def test_groups_carry_the_ground_truth_truncation_and_zero_variance(tmp_path: Path) -> None:
    write_dump(tmp_path / "d")
    table = _analysis(tmp_path / "d").rollouts.table
    groups = step_groups(table, STEP)
    truth = by_group(dump_lines(tmp_path / "d", STEP))
    assert len(groups) == len(truth) == 6
    for g in groups:
        lines = truth[g["prompt"]]
        assert [r["target"] for r in g["rollouts"]] == [x["gts"] for x in lines]
        assert [r["truncated"] for r in g["rollouts"]] == [x["response_length"] >= MAX_LEN for x in lines]
        assert g["zero_variance"] == (len({x["score"] for x in lines}) == 1)
    assert sum(g["zero_variance"] for g in groups) == 2  # groups 0 (all right) and 1 (all wrong)
    without = step_groups(table.drop("target", "truncated"), STEP)
    assert all(r["target"] is None and r["truncated"] is None for g in without for r in g["rollouts"])
    assert zero_variance(table.filter(table["group"] == "no such group")) is None


# --- in the browser ---------------------------------------------------------------------------------

@pytest.mark.browser
def test_ground_truth_is_shown_beside_each_response(browsed: Browsed, pages: dict[str, Path]) -> None:
    truth = by_group(dump_lines(pages["dump"], STEP))
    assert browsed.page.locator("#rlv-groups th", has_text="expected").count() == 6
    for details in browsed.page.locator("#rlv-groups details.rlv-group").all():
        details.evaluate("d => d.open = true")
        prompt = details.locator(".rlv-prompt").inner_text()
        assert details.locator("td.rlv-target").all_inner_texts() == [x["gts"] for x in truth[prompt]]
    assert browsed.errors == []


@pytest.mark.browser
def test_no_expected_column_without_a_ground_truth(browser: Any, pages: dict[str, Path]) -> None:
    b = Browsed(browser, pages["without"])
    assert b.rows() > 0 and b.page.locator("#rlv-groups th", has_text="expected").count() == 0
    assert b.page.locator("td.rlv-target").count() == 0 and b.errors == []
    b.page.close()


@pytest.mark.browser
def test_filter_counts_match_the_dump_and_combine(browsed: Browsed, pages: dict[str, Path]) -> None:
    lines = dump_lines(pages["dump"], STEP)
    groups = by_group(lines)
    zero = {p for p, xs in groups.items() if len({x["score"] for x in xs}) == 1}
    cut = [x for x in lines if x["response_length"] >= MAX_LEN]
    n, g = len(lines), len(groups)
    assert browsed.count() == f"{n}/{n} {g}/{g}" and browsed.rows() == n
    for f, want in (("correct", [x for x in lines if x["acc"]]), ("wrong", [x for x in lines if not x["acc"]]),
                    ("truncated", cut), ("zero", [x for x in lines if x["input"] in zero])):
        assert browsed.page.locator(f"#rlv-filter-n-{f}").inner_text() == f" ({len(want)})"
        browsed.tick(f)
        hit = len({x["input"] for x in want})
        assert browsed.count() == f"{len(want)}/{n} {hit}/{g}" and browsed.rows() == len(want)
        assert browsed.page.locator("#rlv-count").inner_text() == f"{len(want)} of {n} rollouts in {hit} of {g} groups"
        browsed.page.uncheck(f"#rlv-filter-{f}")
    # AND: wrong and truncated together, then wrong in a zero-variance group
    both = [x for x in cut if not x["acc"]]
    browsed.tick("wrong", "truncated")
    assert browsed.count() == f"{len(both)}/{n} {len({x['input'] for x in both})}/{g}"
    assert browsed.page.locator("#rlv-groups td.rlv-length .rlv-cut").count() == len(both)
    png = _shot(browsed, "rollouts_filtered_wrong_truncated")
    assert pixels(png, WARN_RGB, tol=30).sum() > 5  # the "truncated" mark (11px text) of the row kept is drawn
    browsed.page.uncheck("#rlv-filter-truncated")
    browsed.tick("zero")
    wrong_zero = [x for x in lines if not x["acc"] and x["input"] in zero]
    assert browsed.count() == f"{len(wrong_zero)}/{n} 1/{g}"  # group 1, all wrong
    browsed.tick("correct")  # correct and wrong at once: nothing, and the page says so
    assert browsed.count() == f"0/{n} 0/{g}" and browsed.rows() == 0
    assert "No rollout of the 6 groups here matches" in browsed.page.locator("#rlv-count").inner_text()
    assert browsed.errors == []


@pytest.mark.browser
def test_search_highlights_matches_with_mark_nodes(browsed: Browsed, pages: dict[str, Path]) -> None:
    lines = dump_lines(pages["dump"], STEP)
    want = [x for x in lines if any("maybe" in str(x[k] or "").lower() for k in ("input", "output", "gts", "pred"))]
    browsed.page.fill("#rlv-search", "MAYBE")
    assert browsed.rows() == len(want) > 0
    marks = browsed.page.locator("#rlv-groups mark.rlv-hit")
    assert marks.count() == len(want) and set(marks.all_inner_texts()) == {"Maybe"}
    png = _shot(browsed, "rollouts_search_maybe")
    assert pixels(png, MARK_RGB, tol=12).sum() > 50  # the highlight is drawn
    # a search inside markup: the match is marked, the markup stays text and never runs
    browsed.page.fill("#rlv-search", "<IMG src")
    assert browsed.rows() == 1 and marks.all_inner_texts() == ["<img src"]
    assert browsed.page.locator("#rlv-groups .rlv-response", has=browsed.page.locator("mark")).inner_text() == XSS
    assert browsed.page.locator("#rlv-groups img").count() == 0
    assert browsed.page.evaluate("typeof window.__z") == "undefined"
    # the prompt is searched too: every rollout of its group is kept
    browsed.page.fill("#rlv-search", "has 5 apples")
    assert browsed.rows() == 4 and browsed.page.locator(".rlv-prompt mark").count() == 1
    browsed.page.fill("#rlv-search", "")
    assert browsed.page.locator("mark").count() == 0 and browsed.count() == f"{len(lines)}/{len(lines)} 6/6"
    assert browsed.errors == []


def _shown_means(b: Browsed) -> list[float]:
    return [float(m) for m in b.page.eval_on_selector_all(
        "#rlv-groups details.rlv-group summary .rlv-dim",
        "els => els.map(e => /mean=([-0-9.]+)/.exec(e.textContent)[1])")]


@pytest.mark.browser
def test_sorting_groups_and_rollouts(browsed: Browsed, pages: dict[str, Path]) -> None:
    groups = by_group(dump_lines(pages["dump"], STEP))
    spread = browsed.groups()
    browsed.tick("correct")
    browsed.page.uncheck("#rlv-filter-correct")  # a filter on and off again: the spread order is kept
    assert browsed.groups() == spread
    browsed.page.select_option("#rlv-sort-groups", "mean-desc")
    means = _shown_means(browsed)
    want = sorted((sum(x["score"] for x in xs) / len(xs) for xs in groups.values()), reverse=True)
    assert means == pytest.approx(want)
    browsed.page.select_option("#rlv-sort-groups", "length-asc")
    prompts = browsed.page.eval_on_selector_all("#rlv-groups .rlv-prompt", "els => els.map(e => e.textContent)")
    lengths = [sum(x["response_length"] for x in groups[p]) / 4 for p in prompts]
    assert lengths == sorted(lengths) and len(prompts) == 6
    browsed.page.select_option("#rlv-sort-groups", "spread")
    assert browsed.groups() == spread
    browsed.page.select_option("#rlv-sort-rollouts", "length-desc")
    first = browsed.page.locator("#rlv-groups details.rlv-group").first
    shown = [int(t.split()[0]) for t in first.locator("td.rlv-length").all_inner_texts()]
    prompt = first.locator(".rlv-prompt").inner_text()
    assert shown == sorted((x["response_length"] for x in groups[prompt]), reverse=True)
    assert browsed.errors == []


@pytest.mark.browser
def test_chinese_words_and_the_folded_not_computed_line(browsed: Browsed) -> None:
    folded = browsed.page.locator("details.rlv-not-computed")
    assert folded.count() == 1 and folded.get_attribute("open") is None
    summary = folded.locator("summary").inner_text()
    items = folded.locator("li").count()
    assert f"({items})" in summary and "tokens" in summary and not folded.locator("li").first.is_visible()
    browsed.tick("truncated")
    browsed.page.click("button[data-set-lang=zh]")
    assert browsed.page.locator("#rlv-count").inner_text().startswith("符合条件的 rollout：")
    assert "被截断（达到长度上限）" in browsed.page.locator("#rlv-tools").inner_text()
    assert browsed.page.locator("#rlv-sort-groups option").first.inner_text() == "奖励偏离度（偏离该步均值最远的在前）"
    assert browsed.page.locator("#rlv-groups th", has_text="参考答案").count() >= 1
    _shot(browsed, "rollouts_zh_truncated")
    browsed.page.click("button[data-set-lang=en]")
    assert browsed.page.locator("#rlv-sort-groups option").first.inner_text().startswith("reward spread")
    assert browsed.errors == []

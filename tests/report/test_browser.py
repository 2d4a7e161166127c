"""The HTML report in real headless Chromium: no console errors or failed requests, every layer
section and chart drawn (lazily, as they scroll into view), a finding's onset marker on its chart,
the language switch, one click from a finding to its onset step's rollouts, and rollout text that is
markup shown as text without running. Screenshots go to tests/artifacts/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import ARTIFACTS, NOTE_RGB, REAL_LOGS, WARN_RGB, columns, pixels
from conftest import REAL

import rlvitals
from report.test_model import MEGATRON, QWEN, XSS, write_dump
from rlvitals.catalog.catalog import load_catalog
from rlvitals.diagnosis import READING_ORDER, diagnose
from rlvitals.report import build_page, write_report
from rlvitals.synthetic.scenarios import run_from_series

pytestmark = pytest.mark.browser


class Opened:
    """A page with everything that went wrong on it recorded."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append(r.url))
        self.page.goto(path.as_uri())

    def scroll_all_charts(self) -> None:
        """Bring every chart into view in turn, as a reader scrolling down would, opening each folded layer."""
        for cid in self.page.eval_on_selector_all(".rlv-chart", "els => els.map(e => e.id)"):
            unfold(self.page, cid)
            self.page.locator(f"#{cid}").scroll_into_view_if_needed()
            self.page.wait_for_function(f"document.getElementById('{cid}').classList.contains('js-plotly-plot')")

    def close(self) -> None:
        self.page.close()


def unfold(page: Any, cid: str) -> None:
    """Open the folded layer that holds chart ``cid`` (a layer with nothing to act on folds its curves), as a
    reader does: a click on its summary."""
    summary = page.locator(f"details.rlv-more:not([open]):has(#fig-{cid}) > summary")
    if summary.count():
        summary.click()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("report")
    write_dump(tmp / "dump")
    analysis = rlvitals.analyze_rollouts(tmp / "dump")
    run = rlvitals.load(REAL / QWEN)[0].with_series(analysis.series())
    page = build_page([run], [diagnose(run)], analysis)
    write_report(tmp / "report.html", page)
    return tmp / "report.html", page


@pytest.fixture
def opened(browser: Any, report: tuple[Path, dict[str, Any]]) -> Iterator[Opened]:
    o = Opened(browser, report[0])
    yield o
    o.close()


def _shot(o: Opened, name: str, full: bool = False) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    o.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full)


def test_report_renders_every_section_and_chart_without_errors(opened: Opened, report: Any) -> None:
    _, page = report
    for layer in READING_ORDER:
        assert opened.page.locator(f"section#layer-{layer}").is_visible()
    assert opened.page.locator("section#rollouts").count() == 1 and opened.page.locator("#glossary dt").count() > 20
    drawn_at_first = opened.page.locator(".js-plotly-plot").count()
    assert 0 < drawn_at_first < len(page["charts"])  # charts below the fold wait until they are scrolled to
    _shot(opened, "report_top")
    opened.scroll_all_charts()
    assert opened.page.locator(".js-plotly-plot").count() == len(page["charts"])
    assert opened.page.locator(".rlv-chart .main-svg").count() >= len(page["charts"])
    assert opened.errors == [] and opened.failed == []


def test_finding_marker_is_drawn_on_its_chart(opened: Opened, report: Any) -> None:
    _, page = report
    finding = next(f for s in page["sections"] for f in s["findings"] if f["check"] == "grad_norm_spike")
    (cid,) = finding["charts"]
    figure = opened.page.locator(f"#fig-{cid}")
    figure.scroll_into_view_if_needed()
    opened.page.wait_for_function(f"document.getElementById('{cid}').classList.contains('js-plotly-plot')")
    shapes = opened.page.evaluate(f"document.getElementById('{cid}').layout.shapes")
    onset = [s for s in shapes if s["type"] == "line" and s["name"] == finding["id"]]
    assert len(onset) == 1 and onset[0]["x0"] == onset[0]["x1"] == 16
    assert figure.locator(".shapelayer path").count() >= 1
    # the finding's "on the chart" link leads to that figure
    assert opened.page.locator(f"#{finding['id']} a.rlv-goto-chart").get_attribute("href") == f"#fig-{cid}"
    _shot(opened, "grad_norm_marker")
    assert opened.errors == []


def test_language_switch_changes_headings_without_reload(opened: Opened) -> None:
    heading = opened.page.locator("section#layer-L1 h2")
    assert "Training stability" in heading.inner_text()
    opened.page.evaluate("window.__still_here = 1")
    opened.page.click("button[data-set-lang=zh]")
    assert "训练稳定性" in heading.inner_text() and "Training stability" not in heading.inner_text()
    assert opened.page.evaluate("document.documentElement.lang") == "zh"
    _shot(opened, "report_zh")
    opened.page.click("button[data-set-lang=en]")
    assert "Training stability" in heading.inner_text() and "训练稳定性" not in heading.inner_text()
    assert opened.page.evaluate("window.__still_here") == 1  # same document: no reload


def test_one_click_from_a_finding_to_its_onset_rollouts_shows_markup_as_text(opened: Opened, report: Any) -> None:
    _, page = report
    finding = next(f for s in page["sections"] for f in s["findings"] if f["check"] == "grad_norm_spike")
    opened.page.click(f"#{finding['id']} a.rlv-goto-rollouts")
    assert opened.page.locator("#rlv-step").input_value() == "16"
    first = opened.page.locator("#rlv-groups details.rlv-group").first
    assert first.get_attribute("open") is not None
    assert opened.page.locator("#rlv-groups .rlv-response").first.inner_text() == XSS
    assert opened.page.locator("#rlv-groups img, #rlv-groups script").count() == 0
    assert opened.page.evaluate("[typeof window.__x, typeof window.__y]") == ["undefined", "undefined"]
    _shot(opened, "rollouts_step16")
    opened.page.select_option("#rlv-step", "1")
    assert opened.page.locator("#rlv-groups details.rlv-group").count() == 4
    assert opened.errors == [] and opened.failed == []


def test_metric_name_links_to_its_glossary_entry(opened: Opened) -> None:
    link = opened.page.locator("#layer-L1 a.rlv-key", has_text="actor/grad_norm").first
    link.click()
    target = opened.page.locator("#g-actor-grad-norm")
    assert target.is_visible()
    assert load_catalog().get("actor/grad_norm").en.name in target.inner_text()
    assert opened.page.evaluate("location.hash") == "#g-actor-grad-norm"


@pytest.mark.parametrize("name", REAL_LOGS)
def test_every_real_fixture_report_opens(browser: Any, tmp_path: Path, name: str) -> None:
    run = rlvitals.load(REAL / name)[0]
    d = diagnose(run)
    page = build_page([run], [d])
    write_report(tmp_path / "report.html", page)
    o = Opened(browser, tmp_path / "report.html")
    try:
        for layer in READING_ORDER:
            verdict = o.page.locator(f"#layer-{layer} h2 .rlv-status .l-en").first.inner_text()
            assert verdict == d.layers[layer].upper()
        shown = o.page.locator("article.rlv-finding").count()
        assert shown == sum(f.status in ("warn", "fail", "note") for f in d.findings)
        assert o.page.locator("#runs tbody tr .rlv-status").first.is_visible()  # the verdicts, at the top
        _shot(o, f"real_{Path(name).stem[:60]}_top")
        o.scroll_all_charts()
        assert o.page.locator(".js-plotly-plot").count() == len(page["charts"])
        _shot(o, f"real_{Path(name).stem[:60]}")
        assert o.errors == [] and o.failed == []
    finally:
        o.close()


def _drawn(o: Opened, cid: str) -> None:
    unfold(o.page, cid)
    o.page.locator(f"#fig-{cid}").scroll_into_view_if_needed()
    o.page.wait_for_function(f"document.getElementById('{cid}').classList.contains('js-plotly-plot')")


def _finding(page: dict[str, Any], check: str) -> dict[str, Any]:
    return next(f for s in page["sections"] for f in s["findings"] if f["check"] == check and f["status"] != "ok")


def _onsets(o: Opened, cid: str) -> dict[str, Any]:
    """The onset lines of a drawn chart by finding id, and its annotation labels."""
    layout = o.page.evaluate(f"(() => {{ const l = document.getElementById('{cid}').layout; "
                             "return {shapes: l.shapes, annotations: l.annotations}; })()")
    lines = {s["name"]: s["x0"] for s in layout["shapes"] if s["type"] == "line"}
    return {"lines": lines, "labels": {a["name"]: a for a in layout["annotations"]}}


@pytest.fixture(scope="module")
def megatron(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    run = rlvitals.load(REAL / MEGATRON)[0]
    page = build_page([run], [diagnose(run)])
    path = tmp_path_factory.mktemp("megatron") / "report.html"
    write_report(path, page)
    return path, page


def test_validation_findings_are_drawn_on_the_validation_chart(browser: Any, megatron: Any) -> None:
    path, page = megatron
    o = Opened(browser, path)
    try:
        (val,) = [v["chart"] for s in page["sections"] for v in s["validation"]]
        _drawn(o, val)
        marks = _onsets(o, val)
        for check in ("val_progress", "val_reward_divergence"):
            f = _finding(page, check)
            assert marks["lines"][f["id"]] == 40
            label = marks["labels"][f["id"]]
            assert label["text"].endswith("step 40") and f["title"]["en"][:30] in label["text"]
            assert f["title"]["en"] in label["hovertext"] and "since step 40" in label["hovertext"]
        assert o.page.locator(f"#{val} .annotation").count() == 2  # the labels are drawn
        o.page.locator(f"#fig-{val}").screenshot(path=str(ARTIFACTS / "validation_markers.png"))
        assert o.errors == []
    finally:
        o.close()


def test_each_chart_link_of_a_finding_names_its_metric(browser: Any, megatron: Any) -> None:
    path, page = megatron
    f = _finding(page, "val_reward_divergence")
    assert len(f["charts"]) >= 3  # the finding reads several metrics, each on its own chart
    o = Opened(browser, path)
    try:
        links = o.page.locator(f"#{f['id']} a.rlv-goto-chart")
        texts = [t.strip() for t in links.locator(".l-en").all_inner_texts()]
        assert len(texts) == len(f["charts"]) and len(set(texts)) == len(texts)  # no two read the same
        for link, text in zip(links.all(), texts, strict=True):
            cid = (link.get_attribute("href") or "").removeprefix("#fig-")
            chart = page["charts"][cid]
            named = [m for m in f["metrics"] if m in chart["keys"] or m in chart["aliases"]]
            assert named and text == f"↗ {', '.join(named)} on the chart"
        assert "↗ critic/score/mean on the chart" in texts
        o.page.click("button[data-set-lang=zh]")
        assert "↗ 图上的 critic/score/mean" in links.locator(".l-zh").all_inner_texts()
        o.page.click("button[data-set-lang=en]")
        o.page.locator(f"#{f['id']}").screenshot(path=str(ARTIFACTS / "finding_chart_links.png"))
        assert o.errors == []
    finally:
        o.close()


def test_the_runs_table_shows_the_short_algorithm_with_its_description(browser: Any, tmp_path: Path) -> None:
    name = "trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv"
    run = rlvitals.load(REAL / name)[0]
    write_report(tmp_path / "report.html", build_page([run], [diagnose(run)]))
    o = Opened(browser, tmp_path / "report.html")
    try:
        cell = o.page.locator("#runs tbody td.rlv-algo")
        assert cell.inner_text() == "ORPO"
        assert cell.locator("span").get_attribute("title") == run.algorithm_label
        assert len(cell.locator("span").evaluate("s => Array.from(s.getClientRects())")) == 1  # one line
        assert o.errors == []
    finally:
        o.close()


def test_rollout_metric_findings_are_marked_on_their_charts(opened: Opened, report: Any) -> None:
    _, page = report
    f = _finding(page, "self_consistency")
    (cid,) = f["charts"]
    assert cid in next(s for s in page["sections"] if s["id"] == "L6")["charts"]
    _drawn(opened, cid)
    marks = _onsets(opened, cid)
    assert marks["lines"][f["id"]] == f["onset"] == 1
    assert opened.page.locator(f"#{cid} .annotation").count() >= 1
    assert opened.page.locator("#layer-L6 .rlv-no-charts").count() == 0
    opened.page.locator(f"#fig-{cid}").screenshot(path=str(ARTIFACTS / "rollout_metric_marker.png"))


def test_a_constant_series_is_drawn_around_its_value(opened: Opened, report: Any) -> None:
    _, page = report
    (cid,) = [c for c, chart in page["charts"].items() if chart["keys"] == ["actor/lr"]]
    _drawn(opened, cid)
    lo, hi = opened.page.evaluate(f"document.getElementById('{cid}')._fullLayout.yaxis.range")
    assert 0 < lo < 1e-6 < hi < 2e-6  # 1e-6, not a line on zero
    ticks = opened.page.eval_on_selector_all(f"#{cid} .ytick text", "els => els.map(e => e.textContent)")
    assert "1e−6" in ticks and "0" not in ticks
    opened.page.locator(f"#fig-{cid}").screenshot(path=str(ARTIFACTS / "constant_lr.png"))


def test_onset_marker_has_a_hover_label(opened: Opened, report: Any) -> None:
    _, page = report
    f = _finding(page, "grad_norm_spike")
    (cid,) = f["charts"]
    _drawn(opened, cid)
    opened.page.locator(f"#{cid} .annotation").first.hover()
    hover = opened.page.locator(f"#{cid} .hoverlayer .hovertext")
    hover.wait_for()
    text = hover.text_content() or ""
    assert f["title"]["en"] in text and "at step 16" in text
    opened.page.locator(f"#fig-{cid}").screenshot(path=str(ARTIFACTS / "onset_hover.png"))
    opened.page.click("button[data-set-lang=zh]")
    marks = _onsets(opened, cid)
    assert marks["labels"][f["id"]]["text"].endswith("第 16 步") and f["title"]["zh"] in marks["labels"][f["id"]][
        "hovertext"]
    assert opened.page.locator(f"#{cid} .g-xtitle").text_content() == "步"
    opened.page.click("button[data-set-lang=en]")


def test_links_land_below_the_sticky_header(opened: Opened, report: Any) -> None:
    _, page = report
    f = _finding(page, "grad_norm_spike")
    header = opened.page.evaluate("document.querySelector('.rlv-header').getBoundingClientRect().bottom")
    opened.page.click(f"#{f['id']} a.rlv-goto-chart")
    opened.page.wait_for_timeout(300)
    top = opened.page.evaluate(f"document.getElementById('fig-{f['charts'][0]}').getBoundingClientRect().top")
    assert header <= top < header + 80
    opened.page.click(f"#{f['id']} a.rlv-goto-rollouts")
    opened.page.wait_for_timeout(300)
    top = opened.page.evaluate("document.getElementById('rlv-browser').getBoundingClientRect().top")
    assert header <= top < header + 80
    _shot(opened, "link_below_header")


def test_the_rollout_browser_says_how_many_groups_it_shows(browser: Any, tmp_path: Path) -> None:
    write_dump(tmp_path / "dump", steps=40, groups=20)
    analysis = rlvitals.analyze_rollouts(tmp_path / "dump")
    run = rlvitals.load(REAL / QWEN)[0].with_series(analysis.series())
    page = build_page([run], [diagnose(run)], analysis)
    write_report(tmp_path / "report.html", page)
    o = Opened(browser, tmp_path / "report.html")
    try:
        o.page.locator("#rlv-browser").scroll_into_view_if_needed()
        assert o.page.locator("#rlv-groups details.rlv-group").count() == 16
        assert o.page.locator("#rlv-shown .l-en").inner_text().startswith("16 of 20 groups shown")
        steps = page["rollouts"]["runs"][0]["steps"]
        note = o.page.locator("#rlv-steps-note .l-en").inner_text()
        assert f"texts of {len(steps)} of the 40 steps with rollouts" in note and "rlvitals serve" in note
        o.page.click("button[data-set-lang=zh]")
        assert o.page.locator("#rlv-shown .l-zh").inner_text().startswith("显示 16 / 20 个组")
        _shot(o, "rollouts_16_of_20")
        assert o.errors == [] and o.failed == []
    finally:
        o.close()


def test_comparison_of_ppo_and_grpo_labels_every_badge_and_line(browser: Any, tmp_path: Path) -> None:
    names = ("verl__verl_training_log__ppo_run_deepseek7b_llm.log",
             "verl__verl_training_log__grpo_run_deepseek7b_llm.log")
    for folder, name in zip(("ppo", "grpo"), names, strict=True):  # the same file name in two folders
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "train.log").write_bytes((REAL / name).read_bytes())
    runs = [rlvitals.load(tmp_path / folder / "train.log")[0] for folder in ("ppo", "grpo")]
    page = build_page(runs, [diagnose(r) for r in runs])
    write_report(tmp_path / "report.html", page)
    o = Opened(browser, tmp_path / "report.html")
    try:
        assert o.page.locator("#runs tbody td:first-child").all_inner_texts() == ["ppo/train.log", "grpo/train.log"]
        for layer in READING_ORDER:
            badges = o.page.locator(f"#layer-{layer} h2 .rlv-verdict")
            assert [b.split()[0] for b in badges.all_inner_texts()] == ["ppo/train.log", "grpo/train.log"]
        assert o.page.locator("#comparison .rlv-dim", has_text="No run logged per-token timings").count() == 0
        (gen,) = [c for c in page["comparison"]["charts"] if page["charts"][c]["keys"] == ["timing_per_token_ms/gen"]]
        _drawn(o, gen)
        legend = o.page.eval_on_selector_all(f"#{gen} .legendtext", "els => els.map(e => e.textContent)")
        assert legend == ["ppo/train.log: timing_per_token_ms/gen", "grpo/train.log: timing_per_token_ms/gen"]
        o.page.locator("#comparison").scroll_into_view_if_needed()
        _shot(o, "comparison_ppo_grpo")
        o.page.locator("#layer-L1 h2").scroll_into_view_if_needed()
        o.page.locator("#layer-L1").screenshot(path=str(ARTIFACTS / "comparison_layer_badges.png"))
        assert o.errors == []
    finally:
        o.close()


def test_the_chinese_page_has_no_english_labels(browser: Any, report: Any, tmp_path: Path) -> None:
    path, page = report
    o = Opened(browser, path)
    try:
        o.page.click("button[data-set-lang=zh]")
        heads = o.page.locator("#runs thead th").all_inner_texts()
        assert heads[:5] == ["训练", "框架", "算法", "步", "指标"] and "效率" in heads and heads[-1] == "结论"
        unit = o.page.locator("#g-actor-grad-norm .rlv-dim").inner_text()
        assert unit == "L1 · L2 范数"
        assert o.page.locator("#glossary dt .rlv-dim", has_text="效率").count() >= 1
        (cid,) = [c for c, chart in page["charts"].items() if chart["keys"] == ["actor/lr"]]
        _drawn(o, cid)
        assert o.page.locator(f"#{cid} .g-xtitle").text_content() == "步"
        o.page.locator("#rlv-browser").scroll_into_view_if_needed()
        assert o.page.locator("#rlv-shown").inner_text() == "显示 4 / 4 个组"
        assert o.page.locator("#rlv-groups th").all_inner_texts()[:3] == ["#", "得分", "正确"]
        _shot(o, "report_zh_rollouts")
    finally:
        o.close()
    loss = np.full(60, 0.5)
    loss[[20, 30]] = np.inf
    run = run_from_series({"actor/pg_loss": loss, "actor/grad_norm": np.ones(60)})
    write_report(tmp_path / "inf.html", build_page([run], [diagnose(run)], lang="zh"))
    o = Opened(browser, tmp_path / "inf.html")
    try:
        caption = o.page.locator(".rlv-bad").first
        assert caption.inner_text() == "actor/pg_loss: 记录了 2 个 inf，自第 21 步起"
        caption.scroll_into_view_if_needed()
        o.page.locator(".rlv-figure", has=caption).screenshot(path=str(ARTIFACTS / "report_zh_inf_caption.png"))
        assert o.errors == []
    finally:
        o.close()


def test_a_note_in_its_colour_and_point_events_at_their_steps(browser: Any, tmp_path: Path) -> None:
    from dataclasses import replace

    from rlvitals.diagnosis import assemble

    # the real deepseek GRPO log: its MFU of 19 % is a note; its grad-norm spike finding is given the steps
    # of its own spikes as points (constructed until the spike check reports them itself)
    run = rlvitals.load(REAL / "verl__verl_training_log__grpo_run_deepseek7b_llm.log")[0]
    d = diagnose(run)
    spike = next(f for f in d.findings if f.check == "grad_norm_spike" and f.status in ("note", "warn"))
    steps = tuple(spike.evidence["spike_steps"])
    assert len(steps) == 7
    d = assemble(run, [replace(f, points=steps) if f is spike else f for f in d.findings])
    page = build_page([run], [d])
    write_report(tmp_path / "report.html", page)
    o = Opened(browser, tmp_path / "report.html")
    try:
        note = _finding(page, "mfu_low")
        assert note["status"] == "note"
        article = o.page.locator(f"#{note['id']}")
        article.scroll_into_view_if_needed()
        assert article.locator("h3 .rlv-status .l-en").inner_text() == "NOTE"
        assert "Raise the micro-batch size" in article.locator(".rlv-advice").inner_text()
        assert o.page.locator("#layer-efficiency h2 .rlv-status .l-en").inner_text() == "OK"  # not in the verdict
        png = article.screenshot(path=str(ARTIFACTS / "note_finding.png"))
        badge = pixels(png, NOTE_RGB, tol=24)
        assert badge.sum() > 150 and pixels(png, WARN_RGB, tol=24).sum() == 0  # the note's blue, no warning's orange
        # point events: a dotted line at each spike step, no band from the first to the last
        f = _finding(page, "grad_norm_spike")
        assert o.page.locator(f"#{f['id']} .rlv-when .l-en").inner_text() == "at steps " + ", ".join(map(str, steps))
        (cid,) = f["charts"]
        _drawn(o, cid)
        shapes = [s for s in o.page.evaluate(f"document.getElementById('{cid}').layout.shapes") if s["name"] == f["id"]]
        assert sorted(s["x0"] for s in shapes) == list(steps) and {s["type"] for s in shapes} == {"line"}
        png = o.page.locator(f"#{cid}").screenshot(path=str(ARTIFACTS / "point_events.png"))
        colour = NOTE_RGB if f["status"] == "note" else WARN_RGB  # seven spikes in 1,119 steps: a note now
        assert columns(pixels(png, colour), tall=60) == len(steps)
        assert o.errors == []
    finally:
        o.close()


def test_the_forecast_draws_the_law_the_ceiling_and_the_band(opened: Opened, report: Any) -> None:
    _, page = report
    (fc,) = next(s for s in page["sections"] if s["id"] == "L5")["forecast"]
    cid = fc["chart"]
    box = opened.page.locator(".rlv-forecast")
    assert box.count() == 1 and "heads for a ceiling of 0.597" in box.inner_text()
    _drawn(opened, cid)
    data = opened.page.evaluate(f"document.getElementById('{cid}').data.map(t => [t.name, t.mode, t.fill || ''])")
    assert [d[0] for d in data[:4]] == ["openai/gsm8k/reward/mean@1 (logged)", "the law", "forecast", "95 % band"]
    assert data[0][1] == "markers" and data[4][2] == "tonexty"  # the band's lower edge fills up to its upper one
    layout = _onsets(opened, cid)
    ceiling = [s for s in opened.page.evaluate(f"document.getElementById('{cid}').layout.shapes")
               if s.get("name") == "ceiling"]
    assert len(ceiling) == 1 and ceiling[0]["y0"] == ceiling[0]["y1"] == pytest.approx(fc["ceiling"], abs=1e-5)
    assert layout["labels"]["ceiling"]["text"] == "ceiling 0.597"
    # the near-ceiling note is marked where the entropy crossed the line
    note = _finding(page, "entropy_ceiling")
    assert layout["lines"][note["id"]] == note["onset"]
    opened.page.locator(f"#fig-{cid}").screenshot(path=str(ARTIFACTS / "forecast.png"))
    opened.page.click("button[data-set-lang=zh]")  # the lines and the ceiling are named in the page's language
    opened.page.wait_for_function(f"document.getElementById('{cid}').data[1].name === '定律'")
    assert "在熵为 0 时的天花板为 0.597" in box.inner_text()
    assert _onsets(opened, cid)["labels"]["ceiling"]["text"] == "天花板 0.597"
    opened.page.click("button[data-set-lang=en]")
    assert opened.errors == []


def test_a_spike_links_to_the_extreme_rollouts_of_its_step(opened: Opened, report: Any) -> None:
    """The real log's gradient spike at step 16 names that step's extreme rollouts (constructed dump: group 2 holds
    the run's highest reward); one click opens the group in the browser and marks the rollout, in both languages."""
    _, page = report
    finding = next(f for s in page["sections"] for f in s["findings"] if f["check"] == "grad_norm_spike")
    links = opened.page.locator(f"#{finding['id']} a.rlv-goto-rollout")
    assert links.count() == len(finding["rollout_links"]) >= 2
    top = opened.page.locator(f"#{finding['id']} a.rlv-goto-rollout[data-group='2'][data-sample='0']")
    item = top.locator("xpath=..")
    assert "step 16 · 2 #0" in top.inner_text()
    assert "highest reward" in item.inner_text() and "reward 5" in item.inner_text()
    top.click()
    assert opened.page.locator("#rlv-step").input_value() == "16"
    group = opened.page.locator("#rlv-groups details.rlv-group[data-group='2']")
    assert group.get_attribute("open") is not None
    row = group.locator("tr.rlv-linked")
    assert row.count() == 1 and row.get_attribute("data-sample") == "0" and row.is_visible()
    assert opened.page.locator("#rlv-groups tr.rlv-linked").count() == 1
    _shot(opened, "spike_rollout_linked")
    opened.page.click("button[data-set-lang=zh]")
    assert "reward 最高" in item.inner_text() and "步 16" in top.inner_text()
    assert opened.errors == [] and opened.failed == []

"""The report's first screen and chart controls in real headless Chromium, on real veRL logs: the curves
read first (validation, reward, KL, entropy, length) in that order, smoothing (TensorBoard's debiased
EMA, the raw curve faint behind), the metric search, a log scale per chart, one zoom for every chart,
the elapsed-time axis, every chart drawn for printing without scrolling, the note on series logged
rounded to zero, merged cards, and a comparison coloured by run with --label names. Screenshots go to
tests/artifacts/ and are checked by their pixels."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import ARTIFACTS, pixels
from conftest import REAL

import rlvitals
from report.test_browser import Opened, unfold
from rlvitals.catalog.views import load_views
from rlvitals.cli import main
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report

pytestmark = pytest.mark.browser

PPO = "verl__verl_training_log__ppo_run_deepseek7b_llm.log"
GRPO = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
TWO_SOURCES = CORPUS / "wandb__open-agentrl-opd__qwen2.5-3b-gjvwlq13" / "run-20251130_144822-gjvwlq13"
LINE_RGB = (0x1F, 0x77, 0xB4)  # the first line's colour (Plotly's first)


@pytest.fixture(scope="module")
def ppo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    run = rlvitals.load(REAL / PPO)[0]
    page = build_page([run], [diagnose(run)])
    path = tmp_path_factory.mktemp("controls") / "ppo.html"
    write_report(path, page)
    return path, page, run


@pytest.fixture
def opened(browser: Any, ppo: tuple[Path, dict[str, Any], Any]) -> Iterator[Opened]:
    o = Opened(browser, ppo[0])
    yield o
    o.close()


def _shot(o: Opened, name: str, full: bool = False) -> bytes:
    ARTIFACTS.mkdir(exist_ok=True)
    png: bytes = o.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full)
    return png


def _ema(y: list[float | None], w: float) -> list[float | None]:
    """TensorBoard's debiased EMA, written out again here to check the page's."""
    last, n, out = 0.0, 0, []
    for v in y:
        if v is None:
            out.append(None)
            continue
        last = last * w + (1 - w) * v
        n += 1
        out.append(last / (1 - w**n))
    return out


def _wait_drawn(o: Opened, cid: str) -> None:
    unfold(o.page, cid)
    o.page.locator(f"#{cid}").scroll_into_view_if_needed()
    o.page.wait_for_function(f"document.getElementById('{cid}').getAttribute('data-drawn') === '1'")


def test_the_first_screen_holds_the_curves_read_first_in_their_order(opened: Opened, ppo: Any) -> None:
    _, page, run = ppo
    # what the run logged, slot by slot, found here from the run itself
    expected = [["val-core/openai/gsm8k/reward/mean@1"]]
    for slot in load_views().first_look(run.family)[1:]:
        logged = [k for k in slot if k in run.frame.columns and run.frame[k].null_count() < run.frame.height]
        if logged:
            expected.append([logged[0]])
    assert [page["charts"][c]["keys"] for c in page["overview"]["charts"]] == expected
    assert expected[1:] == [["critic/score/mean"], ["actor/reward_kl_penalty"], ["actor/entropy"],
                            ["response_length/mean"]]
    ids = opened.page.eval_on_selector_all("#overview .rlv-chart", "els => els.map(e => e.id)")
    assert ids == page["overview"]["charts"]
    # the first screen (1400 × 900): the runs table with its layer verdicts, the diagnosis, then the first
    # row of curves drawn whole, without scrolling
    for cid in ids[:2]:
        opened.page.wait_for_function(f"document.getElementById('{cid}').getAttribute('data-drawn') === '1'")
    png = _shot(opened, "report_first_screen")
    story, top = (opened.page.locator(f"#{name}").bounding_box() for name in ("story", "overview"))
    assert story is not None and top is not None and story["y"] + story["height"] <= top["y"]
    for cid in ids[:2]:
        box = opened.page.locator(f"#{cid}").bounding_box()
        assert box is not None and box["y"] + box["height"] <= 900, cid
    assert pixels(png, LINE_RGB, 30)[400:900].sum() > 500  # the first curves are drawn on the first screen
    assert opened.errors == [] and opened.failed == []


def test_smoothing_draws_the_debiased_ema_over_the_faint_raw_curve(opened: Opened, ppo: Any) -> None:
    _, page, _ = ppo
    cid = page["overview"]["charts"][1]
    _wait_drawn(opened, cid)
    opened.page.locator("#rlv-smooth").fill("0.6")
    opened.page.wait_for_function(f"document.getElementById('{cid}').data.length === 2")
    raw, smooth = opened.page.evaluate(f"document.getElementById('{cid}').data.map(d => [d.y, d.opacity])")
    assert raw[1] == 0.25 and smooth[1] is None
    assert raw[0] == page["charts"][cid]["traces"][0]["y"]
    assert np.allclose(np.array(smooth[0], dtype=float), np.array(_ema(raw[0], 0.6), dtype=float), rtol=1e-12)
    assert opened.page.locator("#rlv-smooth-value").inner_text() == "0.6"
    opened.page.locator("#rlv-smooth").fill("0")
    opened.page.wait_for_function(f"document.getElementById('{cid}').data.length === 1")
    assert opened.errors == []


def test_the_metric_search_keeps_the_charts_whose_keys_or_names_match(opened: Opened, ppo: Any) -> None:
    _, page, _ = ppo
    names = {e["entry"]: (e["en"]["name"], e["zh"]["name"]) for e in page["glossary"]}

    def matches(c: dict[str, Any], word: str) -> bool:
        words = [*c["keys"], *(t["name"] for t in c["traces"])]
        words += [n for k in c["keys"] if k in names for n in names[k]]
        words += [c["title"]["en"], c["title"]["zh"]] if c["title"] else []
        return any(word in w.lower() for w in words)

    opened.page.fill("#rlv-metric-search", "Entropy")
    want = sorted(cid for cid, c in page["charts"].items() if matches(c, "entropy"))
    shown = sorted(opened.page.eval_on_selector_all("figure.rlv-figure:not([hidden]) .rlv-chart",
                                                    "els => els.map(e => e.id)"))
    assert shown == want and len(want) >= 2
    assert opened.page.get_attribute("#rlv-metric-count", "data-shown") == f"{len(want)}/{len(page['charts'])}"
    opened.page.fill("#rlv-metric-search", "熵")  # the catalog's Chinese name finds it too
    assert opened.page.eval_on_selector_all("figure.rlv-figure:not([hidden])", "els => els.length") >= 1
    opened.page.fill("#rlv-metric-search", "no-such-metric-anywhere")
    assert opened.page.eval_on_selector_all("figure.rlv-figure:not([hidden])", "els => els.length") == 0
    assert opened.page.locator(".rlv-no-match").first.is_visible()
    opened.page.fill("#rlv-metric-search", "")
    assert opened.page.eval_on_selector_all("figure.rlv-figure[hidden]", "els => els.length") == 0
    assert opened.page.locator(".rlv-no-match").count() == 0
    assert opened.errors == []


def test_a_chart_switches_to_a_log_scale_on_its_own(opened: Opened, ppo: Any) -> None:
    _, page, _ = ppo
    a, b = page["overview"]["charts"][3:5]
    _wait_drawn(opened, a)
    _wait_drawn(opened, b)
    opened.page.click(f"button[data-log={a}]")
    opened.page.wait_for_function(f"document.getElementById('{a}').layout.yaxis.type === 'log'")
    assert opened.page.evaluate(f"document.getElementById('{b}').layout.yaxis.type") == "linear"
    assert opened.page.get_attribute(f"button[data-log={a}]", "aria-pressed") == "true"
    opened.page.click(f"button[data-log={a}]")
    opened.page.wait_for_function(f"document.getElementById('{a}').layout.yaxis.type === 'linear'")
    assert opened.errors == []


def test_one_zoom_for_every_chart(opened: Opened, ppo: Any) -> None:
    _, page, _ = ppo
    ids = page["overview"]["charts"][:4]
    for cid in ids:
        _wait_drawn(opened, cid)
    opened.page.locator("#overview").scroll_into_view_if_needed()
    opened.page.evaluate(f"Plotly.relayout(document.getElementById('{ids[1]}'), {{'xaxis.range': [200, 400]}})")
    for cid in ids:
        got = opened.page.evaluate(f"document.getElementById('{cid}').layout.xaxis.range")
        assert got == [200, 400], cid
    # a chart drawn after the zoom opens at it
    later = page["sections"][1]["charts"][-1]
    _wait_drawn(opened, later)
    assert opened.page.evaluate(f"document.getElementById('{later}').layout.xaxis.range") == [200, 400]
    opened.page.click("#rlv-reset-zoom")
    for cid in ids:
        assert opened.page.evaluate(f"document.getElementById('{cid}').layout.xaxis.autorange") is True
    assert opened.errors == []


def _hover_labels(o: Opened, cid: str) -> list[str]:
    got: list[str] = o.page.eval_on_selector_all(f"#{cid} .hoverlayer .hovertext", "els => els.map(e => e.textContent)")
    return got


def test_hover_shows_the_same_step_on_every_chart_in_view(opened: Opened, ppo: Any) -> None:
    _, page, _ = ppo
    reward, kl, entropy = page["overview"]["charts"][1:4]
    for cid in (reward, kl, entropy):
        _wait_drawn(opened, cid)
    opened.page.locator(f"#{reward}").scroll_into_view_if_needed()
    box = opened.page.locator(f"#{reward} .nsewdrag").first.bounding_box()
    assert box is not None
    opened.page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5)
    opened.page.wait_for_function(f"document.querySelectorAll('#{kl} .hoverlayer .hovertext').length > 0")
    mine, theirs = _hover_labels(opened, reward), _hover_labels(opened, kl)
    assert len(mine) == 1 and len(theirs) == 1 and mine[0].startswith("critic/score/mean")
    said = re.search(r"(\d+): ([-\d.e]+)$", mine[0])
    other = re.search(r"(\d+): ([-\d.e]+)$", theirs[0])
    assert said and other, (mine, theirs)
    step = int(said.group(1))
    assert 500 < step < 850  # 60 % across a run of steps 1 to 1,119
    assert int(other.group(1)) == step  # the same step, with the KL's own value
    x = np.array(page["charts"][kl]["traces"][0]["x"])
    y = page["charts"][kl]["traces"][0]["y"][int(np.abs(x - step).argmin())]
    assert float(other.group(2)) == pytest.approx(y, rel=1e-2)
    # a chart out of view is left alone (its label could not be seen, and costs a redraw)
    far = [c for section in page["sections"] for c in section["charts"]][-1]
    opened.page.wait_for_function("document.documentElement.getAttribute('data-charts') === 'drawn'")
    opened.page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
    opened.page.wait_for_function(f"document.querySelector('#{kl} .hoverlayer .hovertext')"
                                  f".textContent !== {theirs[0]!r}")
    assert _hover_labels(opened, far) == []
    png = _shot(opened, "report_linked_hover")
    label = opened.page.locator(f"#{kl} .hoverlayer .hovertext path").first.bounding_box()
    assert label is not None
    top, left = int(label["y"]), int(label["x"])
    patch = pixels(png, LINE_RGB, 30)[top:top + int(label["height"]), left:left + int(label["width"])]
    assert patch.mean() > 0.4  # the label is drawn, in the line's colour, on the KL chart
    # the pointer leaves: every label goes
    opened.page.mouse.move(5, 5)
    opened.page.wait_for_function(f"document.querySelectorAll('#{kl} .hoverlayer .hovertext').length === 0")
    assert _hover_labels(opened, reward) == []
    assert opened.errors == []


def test_the_elapsed_time_axis_is_the_sum_of_the_step_times(opened: Opened, ppo: Any) -> None:
    _, page, run = ppo
    cid = page["overview"]["charts"][1]
    _wait_drawn(opened, cid)
    opened.page.select_option("#rlv-xaxis", "time")
    opened.page.wait_for_function(f"document.getElementById('{cid}').layout.xaxis.ticksuffix === ' h'")
    got = opened.page.evaluate(f"document.getElementById('{cid}').data[0].x")
    steps, times = run.series("timing_s/step", finite=True)
    hours = np.cumsum(times) / 3600  # logged at every step of this run
    assert np.array_equal(steps, np.arange(1, len(steps) + 1))
    want = hours[np.array(page["charts"][cid]["traces"][0]["x"]) - 1]
    assert np.allclose(got, want, rtol=1e-6)
    assert page["clocks"]["r0"]["key"] == "timing_s/step"
    opened.page.select_option("#rlv-xaxis", "step")
    opened.page.wait_for_function(f"document.getElementById('{cid}').data[0].x[0] === "
                                  f"{page['charts'][cid]['traces'][0]['x'][0]}")
    assert opened.errors == []


def test_a_tracker_clock_puts_the_charts_on_wall_clock_time(browser: Any, tmp_path: Path) -> None:
    import datetime
    import json

    start = 1_764_583_200.0  # 2025-12-01 10:00:00 UTC; a step every 30 s, an hour's pause after step 40
    rows = [{"_step": s, "_runtime": 30.0 * s + (3600 if s > 40 else 0),
             "_timestamp": start + 30.0 * s + (3600 if s > 40 else 0),
             "actor/entropy": 1.0 - s / 100, "critic/score/mean": s / 60} for s in range(1, 61)]
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = rlvitals.load(log)[0]
    page = build_page([run], [diagnose(run)])
    assert page["clocks"]["r0"]["start"] == start and page["clocks"]["r0"]["key"] == "W&B _timestamp"
    write_report(tmp_path / "r.html", page)
    o = Opened(browser, tmp_path / "r.html")
    try:
        cid = page["overview"]["charts"][0]
        _wait_drawn(o, cid)
        options = o.page.eval_on_selector_all("#rlv-xaxis option", "els => els.map(e => e.value)")
        assert options == ["step", "time", "wall"]
        o.page.select_option("#rlv-xaxis", "wall")
        o.page.wait_for_function(f"document.getElementById('{cid}').layout.xaxis.type === 'date'")
        got = o.page.evaluate(f"document.getElementById('{cid}').data[0].x")
        steps = page["charts"][cid]["traces"][0]["x"]
        want = [(r["_timestamp"]) * 1000 for r in rows if r["_step"] in steps]
        assert got == pytest.approx(want, abs=1.0)  # the tracker's own times, the hour's pause included
        ticks = o.page.eval_on_selector_all(f"#{cid} .xtick text", "els => els.map(e => e.textContent)")
        assert any(":" in t for t in ticks), ticks  # clock times on the axis, not hours
        title = o.page.evaluate(f"document.getElementById('{cid}').layout.xaxis.title.text")
        assert title == "wall-clock time (UTC)"
        # a zoom in dates undoes to the whole run, and the step axis comes back as steps
        day = datetime.datetime.fromtimestamp(start + 30 * 45 + 3600, datetime.timezone.utc)
        o.page.evaluate(f"Plotly.relayout(document.getElementById('{cid}'), "
                        f"{{'xaxis.range': ['{day:%Y-%m-%d %H:%M:%S}', '{day:%Y-%m-%d} 12:00:00']}})")
        other = page["overview"]["charts"][1]
        _wait_drawn(o, other)
        shared = o.page.evaluate(f"document.getElementById('{other}').layout.xaxis.range")
        assert shared[0].startswith(f"{day:%Y-%m-%d}")
        _shot(o, "report_wall_clock_axis")
        o.page.select_option("#rlv-xaxis", "step")
        o.page.wait_for_function(f"document.getElementById('{cid}').layout.xaxis.type !== 'date'")
        assert o.page.evaluate(f"document.getElementById('{cid}').data[0].x") == steps
        assert o.errors == []
    finally:
        o.close()


def test_summed_step_times_give_no_wall_clock_choice(opened: Opened, ppo: Any) -> None:
    _, page, _ = ppo
    assert page["clocks"]["r0"]["start"] is None  # timing_s/step: elapsed time, no start
    # elapsed time, no wall clock; the tokens trained on, which this veRL run counts (perf/total_num_tokens)
    assert opened.page.eval_on_selector_all("#rlv-xaxis option", "els => els.map(e => e.value)") == [
        "step", "time", "tokens"]


def test_every_chart_is_drawn_for_printing_without_scrolling(browser: Any, ppo: Any) -> None:
    path, page, _ = ppo
    o = Opened(browser, path)
    try:
        # no scrolling: the charts below the fold are drawn while the page is idle
        o.page.wait_for_function("document.documentElement.getAttribute('data-charts') === 'drawn'",
                                 timeout=60_000)
        o.page.wait_for_function(f"document.querySelectorAll('.rlv-chart[data-drawn]').length === "
                                 f"{len(page['charts'])}", timeout=60_000)
        pdf = o.page.pdf(format="A4")
        assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page[^s]", pdf)) > 10
        o.page.emulate_media(media="print")
        last = o.page.eval_on_selector_all(".rlv-chart", "els => els[els.length - 1].id")
        box = o.page.locator(f"#{last}").bounding_box()
        png = _shot(o, "report_print_full", full=True)
        assert box is not None
        from PIL import Image

        img = Image.open(io.BytesIO(png))
        scale = img.width / o.page.viewport_size["width"]
        crop = img.crop((int(box["x"] * scale), int(box["y"] * scale), int((box["x"] + box["width"]) * scale),
                         int((box["y"] + box["height"]) * scale)))
        out = io.BytesIO()
        crop.save(out, format="PNG")
        assert pixels(out.getvalue(), LINE_RGB, 40).sum() > 100  # the last chart of the page has its line
        assert o.errors == [] and o.failed == []
    finally:
        o.close()


def test_a_series_logged_rounded_says_its_zeros_may_be_small_values(opened: Opened, ppo: Any) -> None:
    _, page, _ = ppo
    text = (REAL / PPO).read_text(encoding="utf-8")
    logged = re.findall(r"critic/kl:(-?[0-9.]+)", text)
    zeros = sum(float(v) == 0 for v in logged)
    assert zeros and all(len(v.split(".")[1]) == 3 for v in logged)  # the log prints 3 decimals
    note = opened.page.locator('[data-rounded="actor/reward_kl_penalty"]').first
    assert note.locator(".l-en").inner_text().endswith(
        f"logged to 3 decimals; {zeros} of {len(logged)} values read 0 (small values, perhaps, not zeros)")
    opened.page.click("header button[data-set-lang=zh]")
    assert f"{len(logged)} 个值中有 {zeros} 个显示为 0" in note.locator(".l-zh").inner_text()


def test_the_findings_of_one_check_on_several_metrics_share_a_card(browser: Any, tmp_path: Path) -> None:
    if not TWO_SOURCES.exists():
        pytest.skip(f"corpus run not found at {TWO_SOURCES}")
    run = rlvitals.load(TWO_SOURCES)[0]
    d = diagnose(run)
    mine = [f for f in d.findings if f.check == "val_progress" and f.status == "fail"]
    assert len(mine) == 2  # one per validation source (aime_2024, aime_2025)
    path = tmp_path / "two.html"
    write_report(path, build_page([run], [d]))
    o = Opened(browser, path)
    try:
        card = o.page.locator("article[data-check=val_progress]")
        assert card.count() == 1 and card.get_attribute("data-findings") == "2"
        parts = card.locator(".rlv-part")
        assert parts.count() == 2
        for part, f in zip(parts.all(), mine, strict=True):
            assert f.metrics[0] in part.locator(".rlv-part-head").inner_text()
            assert f.message["en"] in part.inner_text()
        assert card.locator(".rlv-advice").count() == 1
        card.scroll_into_view_if_needed()
        _shot(o, "report_merged_card")
        assert o.errors == []
    finally:
        o.close()


def test_a_comparison_overlays_the_first_curves_coloured_by_run_named_by_label(browser: Any,
                                                                                 tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    path = tmp_path / "cmp.html"
    assert main(["report", str(REAL / PPO), str(REAL / GRPO), "-o", str(path), "--label", "ppo", "--label",
                 "grpo"], out, err) in (0, 1), err.getvalue()
    o = Opened(browser, path)
    try:
        assert o.page.locator("#overview h2 .l-en").inner_text() == "The curves to read first, runs overlaid"
        first = o.page.locator("#overview .rlv-chart").first.get_attribute("id")
        o.page.wait_for_function(f"document.getElementById('{first}').getAttribute('data-drawn') === '1'")
        names = o.page.evaluate(f"document.getElementById('{first}').data.filter(d => d.name).map(d => d.name)")
        assert names == ["ppo: openai/gsm8k/reward/mean@1", "grpo: openai/gsm8k/reward/mean@1"]
        colors = o.page.evaluate(f"document.getElementById('{first}').data.filter(d => d.name).map(d => d.line.color)")
        assert colors[0] != colors[1]
        # a finding's marker takes its run's colour: the entropy chart marks both runs' notes
        ent = next(c for c in o.page.eval_on_selector_all("#overview .rlv-chart", "els => els.map(e => e.id)")
                   if "actor/entropy" in (o.page.get_attribute(f"#fig-{c}", "data-search") or ""))
        _wait_drawn(o, ent)
        by_run = o.page.evaluate(f"""() => {{ const el = document.getElementById('{ent}');
            const lines = {{}};
            el.data.filter(d => d.name).forEach(d => {{ lines[d.name.split(':')[0]] = d.line.color; }});
            return [lines, el.layout.shapes.map(s => s.line.color || s.fillcolor)]; }}""")
        lines, shapes = by_run
        assert shapes and set(shapes) <= set(lines.values())
        assert o.page.locator("tr[data-run=r0] td").first.inner_text() == "ppo"
        # the per-token timings stay, below the first curves
        assert o.page.locator("#comparison").bounding_box()["y"] > o.page.locator("#overview").bounding_box()["y"]
        _shot(o, "report_comparison_overlay")
        assert o.errors == [] and o.failed == []
    finally:
        o.close()


def test_label_count_must_match_the_runs_read() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["report", str(REAL / PPO), str(REAL / GRPO), "-o", "/tmp/never.html", "--label", "ppo"],
                out, err) == 2
    assert err.getvalue() == ("rlvitals: 2 run(s) were read but --label was given 1 time(s); give --label once per "
                              "run, in the order of the runs (a folder may hold several runs: rlvitals diagnose "
                              "lists them)\n")

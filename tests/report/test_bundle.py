"""The Plotly the report inlines: plotly.js's basic partial bundle, vendored byte for byte with its licence and
source (``src/rlvitals/report/vendor/``), shipped in the wheel, inlined by the report (no network) and linked on
cdn.plot.ly with ``cdn=True``; and, in real Chromium, a real corpus run's report draws every chart with it exactly
as with the full bundle the plotly package ships (the same SVGs, traces, fills, shapes and annotations; a log axis
and a date axis too), with no console error."""

from __future__ import annotations

import fnmatch
import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, plotly_bundle, render_html

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "src" / "rlvitals" / "report" / "vendor"
CORPUS = ROOT / "benchmarks" / "corpus" / "runs"
#: real runs whose reports have line charts with finding markers, the stacked time per phase (stackgroup), the
#: entropy forecast with its 95 % band (fill: tonexty) and ceiling (shapes, annotations): a veRL PPO run; and a
#: TensorBoard run, whose timestamps give the wall-clock x axis (a date axis)
RUNS = {"ppo": CORPUS / "verl__verl-data__qwen2.5-0.5b-ppo-gsm8k-resp256"
        / "Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538.log",
        "clock": CORPUS / "tb__fine-tune-experiments__qwen2-0.5b-grpo-numinamath" / "runs"}
VENDORED = ("plotly-basic.min.js", "LICENSE.plotly.txt", "SOURCE.md")


def test_the_bundle_is_plotly_basic_byte_for_byte_as_its_source_says() -> None:
    data = (VENDOR / "plotly-basic.min.js").read_bytes()
    source = (VENDOR / "SOURCE.md").read_text(encoding="utf-8")
    bundle = plotly_bundle()
    assert hashlib.sha256(data).hexdigest() in source and f"{len(data):,} bytes" in source
    assert data.startswith(f"/**\n* plotly.js (basic - minified) v{bundle.version}\n".encode())
    assert f"**{bundle.version}**" in source and "plotly.js-basic-dist-min@" + bundle.version in source
    assert bundle.text.encode("utf-8") == data and bundle.digest == hashlib.sha256(data).hexdigest()[:16]
    assert bundle.cdn == f"https://cdn.plot.ly/plotly-basic-{bundle.version}.min.js" and bundle.cdn in source
    licence = (VENDOR / "LICENSE.plotly.txt").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Plotly" in licence
    assert len(data) < 1_300_000  # the full bundle is 4.8 MB: a full one put here would not pass


def test_the_vendored_files_are_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["rlvitals"]
    for name in VENDORED:
        assert any(fnmatch.fnmatch(f"report/vendor/{name}", g) for g in globs), name
        assert resources.files("rlvitals.report").joinpath("vendor", name).is_file(), name


@pytest.mark.process
def test_the_wheel_ships_the_bundle_with_its_licence_and_source(tmp_path: Path) -> None:
    tree = tmp_path / "tree"  # a copy: building writes build/ and *.egg-info beside the sources
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "wheel")], check=True, capture_output=True)
    (wheel,) = (tmp_path / "wheel").glob("rlvitals-*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name in VENDORED:
            assert z.read(f"rlvitals/report/vendor/{name}") == (VENDOR / name).read_bytes(), name


def _page(run: str) -> dict[str, Any]:
    loaded = rlvitals.load(RUNS[run])[0]
    return build_page([loaded], [diagnose(loaded)])


def test_the_report_inlines_the_basic_bundle_and_links_it_on_the_cdn() -> None:
    page, bundle = _page("ppo"), plotly_bundle()
    html = render_html(page)
    assert html.count(bundle.text.replace("</", "<\\/")) == 1  # safe inside <script>: "</" cannot close it
    assert "<script src=" not in html and f"plotly.js (basic - minified) v{bundle.version}" in html
    assert len(html) < 2_000_000  # the full bundle alone is 4.8 MB
    linked = render_html(page, cdn=True)
    assert re.findall(r'<script src="([^"]+)"', linked) == [bundle.cdn] and bundle.text[:5000] not in linked


# --- in Chromium: every chart drawn by the basic bundle as by the full one -------------------------------------
SHAPE = """() => Array.from(document.querySelectorAll('.rlv-chart[data-chart]')).map(el => ({
  id: el.id, plot: el.classList.contains('js-plotly-plot'), svgs: el.querySelectorAll('.main-svg').length,
  data: el.data ? el.data.length : -1, traces: el.querySelectorAll('.scatterlayer .trace').length,
  lines: el.querySelectorAll('.scatterlayer .js-line').length, fills: el.querySelectorAll('.js-fill').length,
  points: el.querySelectorAll('.scatterlayer .point').length, shapes: el.querySelectorAll('.shapelayer path').length,
  notes: el.querySelectorAll('.annotation').length, xtype: el._fullLayout ? el._fullLayout.xaxis.type : null,
  ytype: el._fullLayout ? el._fullLayout.yaxis.type : null}))"""
ALL_DRAWN = """() => document.documentElement.getAttribute('data-charts') === 'drawn' &&
  Array.from(document.querySelectorAll('.rlv-chart[data-chart]')).every(el => el.querySelector('.main-svg'))"""


def _drawn(browser: Any, path: Path, interact: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """Every chart's drawn parts once all are drawn (then, with ``interact``, after a log y axis on the first
    chart and the wall-clock x axis when the run has it), and what went wrong on the page."""
    tab = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    try:
        tab.goto(path.as_uri())
        tab.wait_for_function(ALL_DRAWN, timeout=120_000)
        shapes = tab.evaluate(SHAPE)
        if interact:
            first = tab.eval_on_selector("button.rlv-log[data-log]", "b => b.getAttribute('data-log')")
            tab.evaluate(f"document.querySelector('button.rlv-log[data-log=\"{first}\"]').click()")
            tab.wait_for_function(f"document.getElementById('{first}')._fullLayout.yaxis.type === 'log'")
            if tab.locator("#rlv-xaxis option[value=wall]").count():
                tab.select_option("#rlv-xaxis", "wall")
                tab.wait_for_function(f"document.getElementById('{first}')._fullLayout.xaxis.type === 'date'")
            tab.wait_for_function(ALL_DRAWN)
            shapes += tab.evaluate(SHAPE)
        return shapes, errors
    finally:
        tab.close()


@pytest.mark.browser
@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_real_report_draws_every_chart_with_the_basic_bundle_as_with_the_full_one(
        browser: Any, tmp_path: Path, run: str) -> None:
    from plotly.offline import get_plotlyjs  # type: ignore[import-untyped, unused-ignore]

    html = render_html(_page(run))
    basic = plotly_bundle().text.replace("</", "<\\/")
    light, full = tmp_path / "light.html", tmp_path / "full.html"
    light.write_text(html, encoding="utf-8")
    full.write_text(html.replace(basic, str(get_plotlyjs()).replace("</", "<\\/"), 1), encoding="utf-8")
    assert full.stat().st_size > light.stat().st_size + 3_000_000  # the baseline really is the full bundle
    drawn, errors = _drawn(browser, light, interact=True)
    baseline, baseline_errors = _drawn(browser, full, interact=True)
    assert errors == [] and baseline_errors == []
    assert drawn == baseline
    charts = drawn[:len(drawn) // 2]
    assert charts and all(c["plot"] and c["svgs"] >= 1 and c["traces"] == c["data"] >= 1 for c in charts)
    if run == "ppo":  # the band and the stack are filled areas; the markers and the ceiling, shapes and notes
        assert all(sum(c[k] for c in charts) > 0 for k in ("fills", "shapes", "notes"))
    after = drawn[len(drawn) // 2:]
    assert "log" in {c["ytype"] for c in after} and ("date" in {c["xtype"] for c in after}) == (run == "clock")

"""Screens and paper in real headless Chromium, on real corpus runs: the report at 1400, 768 and 390 px in
the light and the dark theme of the system, with no horizontal scroll and a run's name wrapped at its
separators; the theme switch overriding the system, remembered, and followed by the charts; the status
colours readable on the dark; the printed PDF opening with the verdict and the root cause, light, with no
control on it; the dashboard's run list and run page on the same switch. Screenshots and the PDF go to
tests/artifacts/."""

from __future__ import annotations

import io
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import ARTIFACTS
from optional import require

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, write_report
from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, run_id

pytestmark = pytest.mark.browser

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
#: a warning run: a gradient-norm spike is the root cause, a KL jump followed it
SPIKE = CORPUS / "trlconsole__nips-grpo-dynamics__qwen35-9b-grad-kl-spike" / "gate2_rho0.70_seed43.log"
#: a run whose file name is long and has no space
LONG = CORPUS / "other__deepspeed-chat__opt1.3b-ppo-step3" / "actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log"
WIDTHS = (1400, 768, 390)
NAME_CELL = "#runs tr[data-run] td:first-child"
CONTROLS = ("Find a metric", "Smoothing", "Reset zoom", "English", "中文")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("screens")
    out = {}
    for name, log in (("spike", SPIKE), ("long", LONG)):
        run = rlvitals.load(log)[0]
        page = build_page([run], [diagnose(run)])
        write_report(tmp / f"{name}.html", page)
        out[name] = (tmp / f"{name}.html", page)
    return out


class Shown:
    """A report in a page of ``width`` px whose system prefers ``scheme``, with its errors recorded."""

    def __init__(self, browser: Any, url: str, width: int, scheme: str) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url)
        self.page.wait_for_selector(".rlv-chart[data-drawn]")

    def js(self, expr: str) -> Any:
        return self.page.evaluate(expr)

    def shot(self, name: str) -> bytes:
        ARTIFACTS.mkdir(exist_ok=True)
        png: bytes = self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        return png

    def paper(self) -> str:
        """The background Plotly paints the first drawn chart with."""
        return str(self.js("document.querySelector('.rlv-chart[data-drawn]').layout.paper_bgcolor"))

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def shown(browser: Any) -> Iterator[Any]:
    opened: list[Shown] = []

    def open_(url: str, width: int = 1400, scheme: str = "light") -> Shown:
        opened.append(Shown(browser, url, width, scheme))
        return opened[-1]

    yield open_
    for s in opened:
        s.close()


def _luminance(png: bytes) -> np.ndarray:
    from PIL import Image  # pillow comes with tensorboard, a test dependency

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(float)
    return np.asarray(rgb @ np.array([0.2126, 0.7152, 0.0722]))


def _contrast(a: str, b: str) -> float:
    """WCAG contrast of two CSS ``rgb(r, g, b)`` colours."""
    def lum(css: str) -> float:
        c = np.array([float(v) for v in re.findall(r"[\d.]+", css)[:3]]) / 255
        c = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return float(c @ np.array([0.2126, 0.7152, 0.0722]))
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _breaks(s: Shown, selector: str) -> list[str]:
    """The character each line of an element's text ends with, but the last: where it wrapped."""
    return list(s.page.eval_on_selector(selector, """el => {
        const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), out = [];
        let top = null, last = '', n;
        while ((n = w.nextNode())) {
          for (let i = 0; i < n.length; i++) {
            const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
            const box = r.getClientRects()[0];
            if (!box) { continue; }
            if (top !== null && box.top > top + 2) { out.push(last); }
            top = box.top; last = n.data[i];
          }
        }
        return out; }"""))


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", WIDTHS)
def test_report_follows_the_system_theme_and_fits_the_width(shown: Any, reports: Any, width: int, scheme: str) -> None:
    s = shown(reports["spike"][0].as_uri(), width, scheme)
    assert s.js("document.documentElement.dataset.theme") == scheme
    assert s.paper() == ("#1b1e23" if scheme == "dark" else "#fff")
    lum = _luminance(s.shot(f"screens_{width}_{scheme}"))
    # the page's own colour covers most of the window: dark pixels in the dark theme, light ones in the light
    share = float((lum < 60).mean()) if scheme == "dark" else float((lum > 220).mean())
    assert share > 0.6, share
    assert s.js("document.documentElement.scrollWidth") <= width
    # a table wider than the window scrolls inside its own box
    table = s.js("""(() => { const t = document.querySelector('#runs table'), r = t.getBoundingClientRect();
        return [r.right, t.scrollWidth, t.clientWidth]; })()""")
    assert table[0] <= width and (width > 390 or table[1] > table[2])
    assert all(c in "_./-" for c in _breaks(s, NAME_CELL))
    assert s.errors == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_long_run_name_wraps_at_its_separators_on_a_phone(shown: Any, reports: Any, scheme: str) -> None:
    s = shown(reports["long"][0].as_uri(), 390, scheme)
    assert s.js("document.documentElement.scrollWidth") <= 390
    height, line = s.page.eval_on_selector(NAME_CELL, "td => [td.getBoundingClientRect().height, "
                                                      "parseFloat(getComputedStyle(td).lineHeight)]")
    breaks = _breaks(s, NAME_CELL)
    assert 1 <= len(breaks) <= 3 and height <= 4.5 * line  # "actor_opt-1.3b_critic_" then at most three more
    assert all(c in "_./-" for c in breaks), breaks
    s.shot(f"screens_long_name_390_{scheme}")
    assert s.errors == []


def test_the_switch_overrides_the_system_and_is_remembered(shown: Any, reports: Any) -> None:
    s = shown(reports["spike"][0].as_uri(), 1400, "dark")
    assert s.js("document.documentElement.dataset.themeChoice") == "system"
    assert s.page.get_attribute(".rlv-header [data-set-theme=system]", "aria-pressed") == "true"
    s.page.click(".rlv-header [data-set-theme=light]")
    assert s.js("document.documentElement.dataset.theme") == "light"
    assert s.js("getComputedStyle(document.body).backgroundColor") == "rgb(250, 250, 250)"
    s.page.wait_for_function("document.querySelector('.rlv-chart[data-drawn]').layout.paper_bgcolor === '#fff'")
    assert s.js("localStorage.getItem('rlvitals-theme')") == "light"
    s.page.reload()
    s.page.wait_for_selector(".rlv-chart[data-drawn]")
    assert s.js("document.documentElement.dataset.theme") == "light" and s.paper() == "#fff"
    assert float((_luminance(s.shot("screens_switch_light_over_dark")) > 220).mean()) > 0.6
    s.page.click(".rlv-header [data-set-theme=system]")  # back to the system's: dark again, and forgotten
    assert s.js("document.documentElement.dataset.theme") == "dark"
    assert s.js("localStorage.getItem('rlvitals-theme')") is None
    s.page.emulate_media(color_scheme="light")  # the system changes its mind: the page and its charts follow
    s.page.wait_for_function("document.querySelector('.rlv-chart[data-drawn]').layout.paper_bgcolor === '#fff'")
    assert s.js("document.documentElement.dataset.theme") == "light"
    s.page.click(".rlv-header [data-set-theme=dark]")
    s.page.wait_for_function("document.querySelector('.rlv-chart[data-drawn]').layout.paper_bgcolor === '#1b1e23'")
    assert float((_luminance(s.shot("screens_switch_dark_over_light")) < 60).mean()) > 0.6
    assert s.errors == []


def test_status_colours_stay_readable_on_the_dark(shown: Any, reports: Any) -> None:
    s = shown(reports["spike"][0].as_uri(), 1400, "dark")
    panel = s.js("getComputedStyle(document.querySelector('.rlv-section')).backgroundColor")
    badges = s.page.eval_on_selector_all(".rlv-status", """els => els.filter(e => e.offsetParent).map(e =>
        [e.className, getComputedStyle(e).color, getComputedStyle(e).backgroundColor])""")
    assert {b[0] for b in badges} >= {"rlv-status s-ok", "rlv-status s-warn", "rlv-status s-skipped"}
    # the statuses this run has no badge of, and each status as the colour of a headline's words
    badges += s.js("""['fail', 'warn', 'note', 'ok', 'skipped'].map(st => {
        const b = document.createElement('span'); b.className = 'rlv-status s-' + st; b.textContent = st;
        document.querySelector('.rlv-section').appendChild(b);
        const got = ['made ' + st, getComputedStyle(b).color, getComputedStyle(b).backgroundColor];
        b.remove();
        return got; })""")
    for st in ("fail", "warn"):
        words = s.js(f"""(() => {{ const h = document.createElement('span'); h.className = 'rlv-headline-status s-{st}';
            document.querySelector('.rlv-section').appendChild(h); const c = getComputedStyle(h).color; h.remove();
            return c; }})()""")
        assert _contrast(words, panel) >= 4.5, (st, words)
    for cls, fg, bg in badges:
        assert _contrast(fg, bg) >= 4.5, (cls, fg, bg)
        assert _contrast(bg, panel) >= 3, (cls, bg, panel)  # the badge stands out of its panel
    for sel in (".rlv-when", ".rlv-dim", ".rlv-advice", ".rlv-cause-head a"):
        color = s.js(f"getComputedStyle(document.querySelector('{sel}')).color")
        assert _contrast(color, panel) >= 4.5, (sel, color)
    assert s.errors == []


def test_printed_report_opens_with_the_answer_and_has_no_controls(shown: Any, reports: Any) -> None:
    require(["pypdf"], "reading the printed PDF", "pip install pypdf")
    import pypdf

    path, page = reports["spike"]
    s = shown(path.as_uri(), 1100, "dark")  # one chart a row on screen: wider than the paper
    s.js("""addEventListener('beforeprint', () => { window.__printed = Array.from(
        document.querySelectorAll('.rlv-chart[data-chart]'))
        .map(n => n.layout ? [n.layout.width, n.layout.paper_bgcolor] : null); })""")
    screen_width = s.js("document.querySelector('.rlv-chart[data-drawn]').clientWidth")
    pdf = s.page.pdf(format="A4")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "screens_report.pdf").write_bytes(pdf)
    # back on screen, the charts take their boxes' width again
    s.page.wait_for_function(f"document.querySelector('.rlv-chart[data-drawn]').layout.width !== 680 && "
                             f"document.querySelector('.rlv-chart[data-drawn] .main-svg').getAttribute('width') "
                             f"=== '{screen_width}'")
    printed = [c for c in s.js("window.__printed") if c]
    # every chart laid out light and as wide as the paper holds (A4 at 12 mm margins: 703 px)
    assert screen_width > 703 and len(printed) == len(page["charts"])
    assert all(w is not None and w <= 703 and bg == "#fff" for w, bg in printed), printed
    pages = [p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pdf)).pages]
    first = pages[0]
    story = page["runs"][0]["story"]
    head = story["causes"][0]
    assert "verdict" in first and "WARN" in first and head["title"]["en"] in first
    assert all(m["title"]["en"] in first for m in head["explains"])  # what followed, on page 1 too
    assert re.search(r"gate2_rho0\.70_\s*seed43\.log", first)  # the run's name whole, or cut at a separator
    text = "\n".join(pages)
    assert not any(word in text for word in CONTROLS)
    # a finding's evidence is folded on screen and printed open
    card = next(g for s_ in page["sections"] for c in s_["cards"] for g in c if g["evidence"])
    assert all(k in text for k, _ in card["evidence"])
    # on paper: light, and none of the screen's controls (the charts' modebars included)
    s.page.emulate_media(media="print")
    assert s.js("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    hidden = s.js("""Array.from(document.querySelectorAll('.modebar-container, .rlv-toolbar, .rlv-lang, .rlv-theme'))
        .map(e => getComputedStyle(e).display)""")
    assert len(hidden) > 3 and set(hidden) == {"none"}
    assert s.errors == []


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[ServerThread, str]]:
    folder = tmp_path / "runs"
    folder.mkdir()
    log = folder / LONG.name
    shutil.copyfile(LONG, log)
    ws = Workspace([folder], ServeState(tmp_path / "s.sqlite"), WorkspaceOptions(interval=0.2, rescan=1.0))
    ws.poll_once()
    ws.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(s.get("status") == "ready" for s in ws.summaries()):
        time.sleep(0.2)
    with ServerThread(ws, "127.0.0.1") as srv:
        yield srv, run_id(str(log.resolve()))
    ws.close()


def test_dashboard_pages_take_the_theme_and_fit_a_phone(shown: Any, dashboard: tuple[ServerThread, str]) -> None:
    srv, rid = dashboard
    lst = shown(srv.url + "runs/" + rid, 390, "dark")  # a run page first: the same origin, so the same storage
    assert lst.js("document.documentElement.dataset.theme") == "dark" and lst.paper() == "#1b1e23"
    assert lst.js("document.documentElement.scrollWidth") <= 390
    lst.shot("screens_dashboard_run_390_dark")
    lst.page.goto(srv.url)
    lst.page.wait_for_selector("table.rlv-runlist")
    assert lst.js("document.documentElement.dataset.theme") == "dark"
    assert lst.js("document.documentElement.scrollWidth") <= 390
    lst.page.click("#rlv-live [data-set-theme=light]")
    assert lst.js("document.documentElement.dataset.theme") == "light"
    assert lst.js("getComputedStyle(document.querySelector('.rlv-runlist')).backgroundColor") == "rgb(255, 255, 255)"
    breaks = _breaks(lst, "td.rlv-run a")
    assert 1 <= len(breaks) <= 3 and all(c in "_./-" for c in breaks), breaks
    lst.shot("screens_dashboard_list_390_light")
    lst.page.click("td.rlv-run a")
    lst.page.wait_for_selector(".rlv-chart[data-drawn]")
    assert lst.js("document.documentElement.dataset.theme") == "light" and lst.paper() == "#fff"
    assert lst.page.get_attribute(".rlv-header [data-set-theme=light]", "aria-pressed") == "true"
    assert lst.errors == []  # the inline theme script is allowed by the pages' Content-Security-Policy

"""Real headless Chromium for the report and dashboard tests: Debian's /usr/bin/chromium driven by
Playwright, one browser per test module. Without them the tests skip with the install command — or
fail when ``CI`` is set, since the CI installs both (scripts/test)."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from conftest import REAL
from optional import unavailable

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
#: as root and with no network: no sandbox, and none of Chromium's background connections
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
REAL_LOGS = sorted(p.name for p in REAL.iterdir() if p.suffix in (".log", ".csv", ".json"))


def missing(reason: str) -> None:
    unavailable(reason)


def launch() -> Iterator[Any]:
    """The body of a module-scoped ``browser`` fixture: one Chromium for the module's tests."""
    if not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None:
        missing(f"{CHROMIUM} not found; install it with 'apt-get install chromium'")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed; install it with 'pip install playwright'")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


#: the report's colours (report.css) as the screenshots hold them
NOTE_RGB, WARN_RGB = (0x15, 0x65, 0xC0), (0xE6, 0x7E, 0x00)


def pixels(png: bytes, rgb: tuple[int, int, int], tol: int = 40) -> np.ndarray:
    """A mask of the screenshot's pixels within ``tol`` of ``rgb`` in every channel."""
    from PIL import Image  # pillow comes with tensorboard, a test dependency

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return np.all(np.abs(img - np.array(rgb)) <= tol, axis=-1)


def columns(mask: np.ndarray, tall: int) -> int:
    """How many separate vertical lines the mask holds: runs of adjacent columns with at least ``tall``
    pixels set (an annotation's border or a marker triangle is shorter than a line over the plot)."""
    full = mask.sum(axis=0) >= tall
    return int(np.sum(full[1:] & ~full[:-1]) + full[0])


class Tab:
    """A browser page with everything that went wrong on it recorded."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append(r.url) or self.why.append(r.failure))
        self.why: list[str | None] = []

    def follow(self, selector: str | None, url: str) -> None:
        """Click a link to another page (or, with no ``selector``, go to ``url``) and wait for it there;
        the live script's poll that the navigation cut short is not a failure of the page."""
        before = len(self.failed)
        if selector is None:
            self.page.goto(url)
        else:
            self.page.click(selector)
            self.page.wait_for_url(url)
        cut = [i for i in range(before, len(self.failed))
               if "/api/events?" in self.failed[i] and self.why[i] == "net::ERR_ABORTED"]
        for i in reversed(cut):
            del self.failed[i], self.why[i]

    def shot(self, name: str, full: bool = False) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full)

    def close(self) -> None:
        self.context.close()

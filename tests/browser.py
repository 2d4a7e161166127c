"""Real headless Chromium for the report and dashboard tests: Debian's /usr/bin/chromium driven by
Playwright, one browser per test module. Without them the tests skip with the install command — or
fail when ``CI`` is set, since the CI installs both (scripts/test)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conftest import REAL
from optional import unavailable

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
#: as root and with no network: no sandbox, and none of Chromium's background connections
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
REAL_LOGS = sorted(p.name for p in REAL.iterdir() if p.suffix in (".log", ".csv", ".json")) if REAL.is_dir() else []


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

"""Shared test fixtures: where the real logs are, and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI replays the same examples every run (a rare random example must not flake a submission);
# local runs keep exploring new ones
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
REAL = SHARED / "fixtures" / "real"
REF = SHARED / "fixtures" / "ref"


@pytest.fixture
def real() -> Path:
    """The folder of real public training logs (../shared/fixtures/real beside the clone)."""
    if not REAL.is_dir():
        pytest.skip(f"real fixtures not found at {REAL}; CI lays ../shared beside the clone")
    return REAL

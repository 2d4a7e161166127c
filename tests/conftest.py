"""Shared test fixtures: where the real logs are, and small helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

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

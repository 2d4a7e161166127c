"""Checks of this layer are added here; see stability.py for the contract."""

from __future__ import annotations

from ._base import CheckFn

FUNCTIONS: dict[str, CheckFn] = {}

"""W&B in offline mode inside a test's own folder: no network, no login, nothing written outside ``root``."""

from __future__ import annotations

from pathlib import Path

import pytest


def offline_wandb(mp: pytest.MonkeyPatch, root: Path) -> None:
    """Point every W&B setting a run reads at ``root``, offline and silent, with no API key."""
    for name, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(root),
                        "WANDB_CONSOLE": "off", "WANDB_CONFIG_DIR": str(root / ".config"),
                        "WANDB_CACHE_DIR": str(root / ".cache"), "WANDB_DATA_DIR": str(root / ".data"),
                        "WANDB_DISABLE_GIT": "true", "WANDB_DISABLE_CODE": "true"}.items():
        mp.setenv(name, value)
    mp.delenv("WANDB_API_KEY", raising=False)

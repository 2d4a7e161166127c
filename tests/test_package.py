"""The public surface of ``import rlvitals``: small, and light to import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rlvitals


def test_public_names_resolve() -> None:
    for name in rlvitals.__all__:
        assert getattr(rlvitals, name) is not None, name
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        rlvitals.nope  # noqa: B018


@pytest.mark.process
def test_import_loads_no_heavy_module() -> None:
    code = ("import sys, rlvitals; heavy = [m for m in ('torch', 'transformers', 'rlvitals.watch.monitor', "
            "'rlvitals.rollout.analysis', 'rlvitals.diagnosis', 'fastapi', 'plotly', 'wandb') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_diagnose_and_monitor_from_the_top(real) -> None:  # type: ignore[no-untyped-def]
    run = rlvitals.load(real / "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log")[0]
    assert rlvitals.diagnose(run).verdict in ("ok", "warn", "fail")
    from rlvitals.watch.monitor import Monitor

    assert rlvitals.Monitor is Monitor

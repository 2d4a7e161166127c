"""The bundled example simulator: deterministic, and its injected events sit where it says."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import rlvitals
from rlvitals.synthetic.simulate import Scenario, simulate, write_example


def test_deterministic() -> None:
    a, b = simulate(Scenario(steps=50)), simulate(Scenario(steps=50))
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_injected_events_at_their_steps() -> None:
    sc = Scenario(steps=300, collapse_at=180, grad_spike_at=95)
    s = simulate(sc)
    grad = s["actor/grad_norm"]
    assert grad[94] > 8 * np.median(grad[:90])
    ent = s["actor/entropy"]
    assert ent[170:178].mean() > 3 * ent[195:210].mean()
    assert s["actor/pg_clipfrac"][200:].mean() > 0.3 > s["actor/pg_clipfrac"][:170].max()


def test_healthy_control_has_no_events() -> None:
    s = simulate(Scenario(steps=300, collapse_at=None, grad_spike_at=None))
    grad = s["actor/grad_norm"]
    assert grad.max() < 3 * np.median(grad)
    assert s["actor/pg_clipfrac"].max() < 0.1


def test_written_jsonl_reads_back(tmp_path: Path) -> None:
    paths = write_example(tmp_path, Scenario(steps=40, val_every=10))
    run = rlvitals.load(paths["jsonl"])[0]
    assert run.train_steps.tolist() == list(range(1, 41))
    assert run.validation["openai/gsm8k"]["step"].to_list() == [10, 20, 30, 40]
    truth = simulate(Scenario(steps=40, val_every=10))["actor/entropy"]
    np.testing.assert_allclose(run.series("actor/entropy")[1], truth)

"""Words never contradict numbers (issue 34, item 4): every check runs over every corpus run and every
scenario of the scenario suite, and what its findings say is held against the numbers they read by the seven
properties of benchmarks/words_numbers.py (its docstring says what each one is).

Each property is first shown to fail on a case built to violate it. The real inputs (85 corpus runs and 132
scenario runs, each diagnosed and its report rendered once) take about 40 s: marked slow.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rlvitals
from rlvitals.diagnosis import Diagnosis, Finding, assemble
from rlvitals.run.run import Run
from rlvitals.synthetic.pathologies import PATHOLOGIES, Spec
from rlvitals.synthetic.scenarios import grid, run_for, run_from_series

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import corpus_eval  # noqa: E402
from words_numbers import ADVICE, PROPERTIES, empty_layers, words_read  # noqa: E402

# --- the inputs -----------------------------------------------------------------------------------------------

#: every pathology of the scenario suite and its healthy GRPO and PPO controls, at half and twice the noise and at
#: the low and high entropy scales (the suite's full grid, benchmarks/scenario_suite.py, 1,782 runs, was read once
#: with these properties: it held no contradiction that this grid and the corpus do not show)
GRID = grid([300], [0.5, 2.0], [0.05, 2.0], [0])


def _corpus() -> Iterable[tuple[str, Run]]:
    for run_id, folder, label in corpus_eval.labelled_runs():
        yield run_id, rlvitals.load(corpus_eval.resolve_input(folder, label))[0]


def _scenarios(points: Iterable[tuple[int, float, float, int]] = GRID) -> Iterable[tuple[str, Run]]:
    for steps, noise, entropy, seed in points:
        where = f"{steps}-{noise}-{entropy}-{seed}"
        for algo in ("grpo", "ppo"):
            yield f"healthy-{algo}-{where}", run_for(Spec(steps, seed, noise, entropy, algo))
        for name, path in PATHOLOGIES.items():
            at = max(30, min(steps // 2, steps - path.tail))
            yield f"{name}-{where}", run_for(Spec(steps, seed, noise, entropy, path.algorithm, name, at))


@functools.lru_cache(maxsize=1)
def _diagnosed() -> tuple[tuple[str, Run, Diagnosis], ...]:
    return tuple((name, run, rlvitals.diagnose(run)) for name, run in [*_corpus(), *_scenarios()])


def _against(inputs: Iterable[tuple[str, Run, Diagnosis]], prop: str) -> list[str]:
    return [f"{name}: {v}" for name, run, d in inputs for v in PROPERTIES[prop](run, d)]


@pytest.mark.slow
@pytest.mark.parametrize("prop", PROPERTIES)
def test_words_never_contradict_numbers(prop: str) -> None:
    found = _against(_diagnosed(), prop)
    assert not found, f"{len(found)} contradiction(s):\n" + "\n".join(found)


@pytest.mark.slow
def test_the_inputs_put_every_property_to_work() -> None:
    """A property that reads no words proves nothing: the real inputs hold many of each kind (measured: 20
    alarms speaking of noise, 69 of spikes, 4 tops, 10,742 quoted levels, 506 advices of the table)."""
    read = sum((words_read(run, d) for _, run, d in _diagnosed()), Counter[str]())
    assert read["noise"] >= 10 and read["spike"] >= 30 and read["top"] >= 2, read
    assert read["levels"] >= 5000 and read["advice"] >= 200, read


# --- each property fails on a case built to violate it --------------------------------------------------------

N = 60


def _run(**series: np.ndarray) -> Run:
    """A run of N steps with a reward between its logged batch min (0) and max (1), and the series given."""
    base = {"critic/score/mean": np.linspace(0.2, 0.5, N), "critic/score/min": np.zeros(N),
            "critic/score/max": np.ones(N), "actor/entropy": np.full(N, 0.5), "actor/grad_norm": np.ones(N)}
    return run_from_series({**base, **{k.replace("__", "/"): v for k, v in series.items()}})


def _finding(check: str, status: str = "warn", message: str = "", advice: str = "", layer: str = "L1",
             metrics: tuple[str, ...] = ("actor/grad_norm",), evidence: Mapping[str, Any] | None = None,
             onset: int | None = 30, template: str = "") -> Finding:
    said = {"en": message, "zh": message}
    return Finding(check, layer, status, {"en": check, "zh": check}, said,  # type: ignore[arg-type]
                   {"en": advice, "zh": advice}, metrics, onset, None, dict(evidence or {}), (),
                   template or status)


def _holds(prop: str, run: Run, *findings: Finding) -> list[str]:
    return PROPERTIES[prop](run, assemble(run, list(findings)))


def test_within_noise_fails_on_a_rise_of_one_noise() -> None:
    run = _run()
    bad = "actor/pg_loss climbed from 0.1 to 0.2 between steps 30 and 50 (20 steps, 1× its step noise of 0.1)."
    assert _holds("within_noise", run, _finding("pg_loss_climb", message=bad))
    assert _holds("within_noise", run, _finding("pg_loss_climb", message="It rose, within noise (±0.1)."))
    assert _holds("within_noise", run, _finding("pg_loss_climb", message="是其单步噪声 0.1 的 1 倍。"))
    assert not _holds("within_noise", run, _finding("pg_loss_climb", message=bad.replace("1×", "6×")))
    # a flat curve's change within noise is its evidence, and a note is no alarm
    flat = "val did not improve over 5 evaluations: its level moved 0.1 → 0.11, within noise (±0.05)."
    assert not _holds("within_noise", run, _finding("val_progress", message=flat))
    assert not _holds("within_noise", run, _finding("pg_loss_climb", status="note", message=bad))


def test_spike_words_fail_below_the_checks_own_ratio() -> None:
    run = _run()
    said = "actor/grad_norm jumped to 3 at step 30, 3× its recent median of 1."
    low, high = {"peak": 3.0, "baseline": 1.0}, {"peak": 30.0, "baseline": 1.0}
    assert _holds("spike_words", run, _finding("grad_norm_spike", message=said, evidence=low))
    assert not _holds("spike_words", run, _finding("grad_norm_spike", message=said, evidence=high))
    assert _holds("spike_words", run, _finding("kl_jump", message="KL 在第 30 步跳升。", evidence={"ratio": 2.0}))
    assert _holds("spike_words", run, _finding("reward_collapse", message="the clip fraction spiked (0.05 → 0.04)"))
    assert not _holds("spike_words", run, _finding("reward_collapse", message="the clip fraction did not spike"))


def test_at_the_top_fails_below_the_top_or_on_truncated_answers() -> None:
    said = "The reward sat at its top there: the data is solved."
    low, top = _run(), _run(critic__score__mean=np.full(N, 0.97))
    assert _holds("at_the_top", low, _finding("reward_std_collapse", message=said, layer="L3"))
    assert not _holds("at_the_top", top, _finding("reward_std_collapse", message=said, layer="L3"))
    cut = _run(critic__score__mean=np.full(N, 0.97), response_length__clip_ratio=np.full(N, 0.4))
    assert _holds("at_the_top", cut, _finding("reward_std_collapse", message="任务已经做对了。", layer="L3"))
    # the steps a message names by its metric being exactly 0 are the steps it speaks of
    std = np.where(np.arange(N) % 10 == 0, 0.0, 0.3)
    reward = np.where(std == 0, 1.0, 0.3)
    zero = _finding("reward_std_collapse", message="group/reward_std/mean was exactly 0 on 6 steps with the reward "
                    "at its top there.", metrics=("group/reward_std/mean",), layer="L3")
    assert not _holds("at_the_top", _run(critic__score__mean=reward, group__reward_std__mean=std), zero)
    assert _holds("at_the_top", _run(critic__score__mean=1.3 - reward, group__reward_std__mean=std), zero)


def test_found_and_passed_fails_on_one_metric_judged_twice() -> None:
    run = _run()
    warn = _finding("kl_jump", metrics=("actor/kl_loss",))
    ok = _finding("kl_jump", status="ok", metrics=("actor/kl_loss",))
    assert _holds("found_and_passed", run, warn, ok)
    assert not _holds("found_and_passed", run, warn, replace(ok, metrics=("actor/ppo_kl",)))


def test_empty_layers_fail_on_an_ok_that_read_nothing() -> None:
    run = _run()
    unread = _finding("oom_risk", status="ok", layer="efficiency", metrics=("global_seqlen/max",), onset=None)
    assert _holds("empty_layers", run, unread)
    assert not _holds("empty_layers", run, replace(unread, metrics=("actor/grad_norm",)))
    # a layer judged ok on a metric the catalog draws in another layer: the report points there
    reward = _finding("reward_collapse", status="ok", layer="L5", metrics=("critic/score/mean",), onset=None)
    d = assemble(run, [reward])
    assert d.layers["L5"] == "ok" and not empty_layers(run, d)
    skipped = replace(unread, status="skipped")
    d = assemble(run, [skipped])
    assert d.layers["efficiency"] == "skipped" and not empty_layers(run, d)
    assert empty_layers(run, replace(d, layers={**d.layers, "efficiency": "ok"}))


def test_quoted_levels_fail_on_a_value_the_series_never_had() -> None:
    run = _run()
    ok = "critic/score/mean rose from 0.2 to 0.5 while actor/entropy stayed at 0.5."
    assert not _holds("quoted_levels", run, _finding("reward_flat", message=ok, layer="L5"))
    for bad in ("critic/score/mean rose from 0.2 to 0.9.", "critic/score/mean (median 1.5) stayed.",
                "critic/score/mean rose; actor/entropy sat at 0.7.", "Entropy 0.5 → 0.05",
                "critic/score/mean 从 0.2 升到 0.8。"):
        assert _holds("quoted_levels", run, _finding("reward_flat", message=bad, layer="L5")), bad
    # printed to 3 significant digits: 0.2 is any value that rounds to it
    assert not _holds("quoted_levels", _run(critic__score__mean=np.linspace(0.204, 0.5, N)),
                      _finding("reward_flat", message="critic/score/mean rose from 0.2 to 0.5.", layer="L5"))


def _advice_case(index: int) -> tuple[Run, list[Finding], Finding]:
    """The run and findings that rule out ``ADVICE[index]``, and a finding giving that advice."""
    said = ["Raise the learning rate.", "Lower the learning rate.", "Add harder prompts.", "Add easier prompts.",
            "Increase max_response_length.", "Raise the entropy bonus."][index]
    f = _finding("grad_norm_vanishing", advice=said, onset=40)
    run, others = _run(), []
    if index == 0:
        others = [_finding("lr_schedule", template="warn_jump", metrics=("actor/lr",), onset=20)]
    elif index == 1:
        run = _run(actor__lr=np.where(np.arange(N) < 35, 1e-6, 0.0))
    elif index == 2:
        run = _run(critic__score__mean=np.full(N, 0.02))
    elif index == 3:
        run = _run(critic__score__mean=np.full(N, 0.99))
    elif index == 4:
        run = _run(response_length__clip_ratio=np.zeros(N))
    else:
        others = [_finding("entropy_surge", metrics=("actor/entropy",), layer="L4", onset=20)]
    return run, others, f


@pytest.mark.parametrize("index", range(len(ADVICE)))
def test_advice_fails_against_the_evidence(index: int) -> None:
    run, others, f = _advice_case(index)
    assert _holds("advice", run, f, *others), ADVICE[index].why
    # said only under its own condition, the same advice tells the run which side it is on
    conditional = {2: "With the reward near its top the data is too easy (add harder prompts).",
                   3: "Too hard (all wrong): add easier prompts.",
                   5: "If entropy dropped before (policy collapse), raise the entropy bonus."}
    if index in conditional:
        assert not _holds("advice", run, replace(f, advice={"en": conditional[index], "zh": ""}), *others)


def test_every_advice_rule_has_a_reason() -> None:
    assert all(a.why for a in ADVICE) and len(ADVICE) == len({a.phrase.pattern for a in ADVICE})

"""L2 policy-behaviour checks: constructed runs that trigger each at a known step, healthy controls,
the same at 0.05 and 2 nats, every message template in both languages, and the real logs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runs import corpus_run, finding, make_run

import rlvitals
from rlvitals.checks import Outcome, RunView, load_checks
from rlvitals.diagnosis import diagnose
from rlvitals.run.run import Run
from rlvitals.synthetic.simulate import Scenario, simulate

MINE = ("entropy_collapse", "entropy_flat", "entropy_surge", "entropy_clip_joint", "response_clip_high",
        "prompt_clip_high", "aborted_high", "length_reward_hacking", "response_length_collapse", "turns_surge",
        "turns_collapse", "tool_calls_at_cap")
N = 300


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def outcomes(run: Run, check_id: str, **params: Any) -> list[Outcome]:
    check = {c.id: c for c in load_checks()}[check_id]
    return check.fn(RunView(run), {**check.params, **params})


def findings(run: Run, check_id: str) -> list[Any]:
    return [f for f in diagnose(run).findings if f.check == check_id]


def sim(**kw: Any) -> dict[str, np.ndarray]:
    return simulate(Scenario(**kw))


def flat(level: float, n: int = N, sd: float = 0.03, seed: int = 0) -> np.ndarray:
    """A level with multiplicative noise (scale-free)."""
    out: np.ndarray = level * np.exp(rng(seed).normal(0, sd, n))
    return out


def ramp(a: float, b: float, start: int, end: int, n: int = N) -> np.ndarray:
    """a until index ``start``, linear to b at ``end``, then b."""
    out: np.ndarray = np.interp(np.arange(n), [start, end], [a, b])
    return out


def reward(a: float, b: float, start: int = 0, end: int = N, sd: float = 0.015, seed: int = 1) -> dict[str, np.ndarray]:
    return {"critic/score/mean": ramp(a, b, start, end) + rng(seed).normal(0, sd, N),
            "critic/score/max": np.ones(N), "critic/score/min": np.zeros(N)}


# ---------------------------------------------------------------- entropy_collapse

@pytest.mark.parametrize("entropy0", [0.05, 0.55, 2.0])
def test_entropy_collapse_fails_at_the_injected_step_at_any_scale(entropy0: float) -> None:
    f = finding(diagnose(make_run(sim(entropy0=entropy0))), "entropy_collapse")
    assert f.status == "fail" and abs(f.onset_step - 180) <= 3
    assert "collapsed" in f.message["en"] and "骤降" in f.message["zh"]
    healthy = finding(diagnose(make_run(sim(entropy0=entropy0, collapse_at=None))), "entropy_collapse")
    assert healthy.status == "ok"


def test_an_early_collapse_is_early_only_on_a_view_that_holds_the_run_from_its_start() -> None:
    """The last steps of a long run start mid-run: a collapse near their first step is not "early"."""
    run = make_run(sim(steps=400, collapse_at=230))
    assert finding(diagnose(run), "entropy_collapse").message["en"].startswith("Entropy collapsed from")
    last = run.tail(200)  # starts at step 201, the collapse begins 30 steps later
    assert last.cut == 200
    (out,) = outcomes(last, "entropy_collapse")
    assert out.status == "fail" and out.template == "fail" and abs(out.onset_step - 230) <= 3
    assert outcomes(make_run(sim(steps=200, collapse_at=30)), "entropy_collapse")[0].template == "fail_early"


def fast_learning_run(clip_surge: bool = False, reward_at: float = 0.25) -> Run:
    """Entropy loses 70% between steps 10 and 30 while the reward climbs (or is already at the top)."""
    ent = ramp(0.4, 0.12, 10, 30) * np.exp(rng(2).normal(0, 0.02, N))
    score = reward(reward_at, 0.9 if reward_at < 0.9 else 0.97, 10, 40)
    clip = flat(0.002, sd=0.1) + (ramp(0.0, 0.35, 10, 15) if clip_surge else 0.0)
    return make_run({"actor/entropy": ent, "actor/pg_clipfrac": clip, **score})


def test_entropy_fall_while_the_reward_climbs_is_still_a_collapse_softened_to_a_note() -> None:
    """The fast-learning reading lowers the severity of a fall over twenty steps to a note (nothing to change
    yet, watch for saturation); it never renames it: the title and the words still say collapse, and the
    advice is the one for fast learning."""
    f = finding(diagnose(fast_learning_run()), "entropy_collapse")
    assert f.status == "note" and abs(f.onset_step - 12) <= 5
    assert f.title["en"] == "Entropy collapse" and "collapsed fast" in f.message["en"]
    assert "possibly fast learning" in f.message["en"] and "快速学习" in f.message["zh"]
    assert "saturation" in f.advice["en"] and "policy collapse" not in f.advice["en"]
    assert f.evidence["gain"] >= 0.5 and f.evidence["sudden"] is False


def test_a_sudden_entropy_fall_while_the_reward_rises_fails() -> None:
    """Constructed from the shape of `rlvitals demo`: entropy 1.55 → 0.005 in one step while the reward
    rises — a collapse whatever the reward did (seed-000 §2.3 几步之内锁死, often reward hacking)."""
    ent = np.where(np.arange(N) < 100, flat(1.55, sd=0.005), 0.005 * np.exp(-np.arange(N) / 30.0))
    f = finding(diagnose(make_run({"actor/entropy": ent, **reward(0.3, 0.6, 100, 110)})), "entropy_collapse")
    assert f.status == "fail" and f.onset_step == 101 and f.span == (101, 101)
    assert f.evidence["sudden"] is True and f.evidence["drop"] > 0.99
    assert "even though the reward rose" in f.message["en"] and "in 1 step," in f.message["en"]
    assert "reward hacking" in f.advice["en"]


def collapse_with_outcome(val: tuple[float, float] | None, score: tuple[float, float]) -> Run:
    """Entropy 1.2 → 0.05 at step 21 (sudden and early: a collapse whatever the reward does), the training
    reward ``score`` rising from step 20, and a GSM8K validation every 10 steps from ``val[0]`` to ``val[1]``
    (constructed: the shape of the runs a user found red although their accuracy rose 0.22 → 0.88)."""
    ent = np.where(np.arange(N) < 20, flat(1.2, sd=0.01), 0.05 * np.exp(rng(4).normal(0, 0.05, N)))
    series = {"actor/entropy": ent, **reward(score[0], score[1], 20, 200)}
    if val is not None:
        v = np.full(N, np.nan)
        v[::10] = np.linspace(val[0], val[1], len(v[::10])) + rng(5).normal(0, 0.01, len(v[::10]))
        series["val-core/openai/gsm8k/acc/mean@1"] = v
    return make_run(series)


def test_an_entropy_collapse_on_a_run_that_still_learns_is_a_warning_of_its_ceiling() -> None:
    """Severity grounded in outcome: the same sudden, early fall fails with a flat validation and warns, with
    words and advice for a learning run, while the validation clearly rises."""
    learning = finding(diagnose(collapse_with_outcome((0.22, 0.88), (0.2, 0.3))), "entropy_collapse")
    assert (learning.status, learning.template) == ("warn", "warn_learning"), learning.message["en"]
    assert "still clearly gets better (openai/gsm8k/acc/mean@1" in learning.message["en"]
    assert "Keep the run going while it improves" in learning.advice["en"] and "policy collapse" not in \
        learning.advice["en"]
    assert learning.evidence["outcome_kind"] == "validation" and learning.evidence["outcome_to"] > 0.8
    flat_val = finding(diagnose(collapse_with_outcome((0.5, 0.5), (0.2, 0.9))), "entropy_collapse")
    assert flat_val.status == "fail", "a training reward that climbs while validation does not is no learning"
    alone = finding(diagnose(collapse_with_outcome(None, (0.2, 0.9))), "entropy_collapse")
    assert (alone.status, alone.template) == ("warn", "warn_reward_rising")
    assert "a shortcut the reward allows" in alone.message["en"] and "Read the rollouts" in alone.advice["en"]


def test_entropy_fall_on_a_solved_task_is_convergence() -> None:
    run = fast_learning_run(reward_at=0.95)
    f = finding(diagnose(run), "entropy_collapse")
    assert f.status == "note" and "solved its training data" in f.message["en"] and "已经做对" in f.message["zh"]
    # without the batch min/max the top of the run's own reward curve says nothing about the task
    unbounded = make_run({k: run.series(k)[1] for k in ("actor/entropy", "actor/pg_clipfrac", "critic/score/mean")})
    assert finding(diagnose(unbounded), "entropy_collapse").status == "fail"


def test_a_clip_surge_is_never_explained_away_by_the_reward() -> None:
    f = finding(diagnose(fast_learning_run(clip_surge=True)), "entropy_collapse")
    assert f.status == "fail" and f.evidence["clip_surge"] is True


# ---------------------------------------------------------------- entropy_flat

@pytest.mark.parametrize("level", [0.05, 2.0])
def test_entropy_flat_with_a_flat_reward_warns_at_any_scale(level: float) -> None:
    run = make_run({"actor/entropy": flat(level), **reward(0.4, 0.4)})
    f = finding(diagnose(run), "entropy_flat")
    assert f.status == "warn" and f.span == (1, N)
    assert "may not be learning at all" in f.message["en"] and "根本没学到东西" in f.message["zh"]


def test_entropy_flat_controls() -> None:
    learning = finding(diagnose(make_run({"actor/entropy": flat(0.7), **reward(0.2, 0.8)})), "entropy_flat")
    assert learning.status == "ok" and "without giving up exploration" in learning.message["en"]
    falling = finding(diagnose(make_run(sim(collapse_at=None))), "entropy_flat")
    assert falling.status == "ok" and "not flat" in falling.message["en"]
    short = finding(diagnose(make_run({"actor/entropy": flat(0.7, n=60)})), "entropy_flat")
    assert short.status == "skipped" and "Only 60 steps" in short.message["en"]
    no_reward = finding(diagnose(make_run({"actor/entropy": flat(0.7)})), "entropy_flat")
    assert no_reward.status == "warn" and "no reward was logged" in no_reward.message["en"]


# ---------------------------------------------------------------- entropy_surge

@pytest.mark.parametrize("level", [0.05, 2.0])
def test_entropy_level_shift_up_fails_at_any_scale(level: float) -> None:
    ent = flat(level) * np.where(np.arange(N) >= 149, 2.5, 1.0)
    f = finding(diagnose(make_run({"actor/entropy": ent})), "entropy_surge")
    assert f.status == "fail" and abs(f.onset_step - 150) <= 3 and "stayed up" in f.message["en"]
    mild = finding(diagnose(make_run({"actor/entropy": flat(level) * np.where(np.arange(N) >= 149, 1.45, 1.0)})),
                   "entropy_surge")
    assert mild.status == "warn" and abs(mild.onset_step - 150) <= 3


def test_entropy_spike_warns_and_healthy_decay_does_not() -> None:
    ent = flat(0.3)
    ent[199] *= 1.8
    f = finding(diagnose(make_run({"actor/entropy": ent})), "entropy_surge")
    assert f.status == "warn" and f.onset_step == 200
    assert "step 200" in f.message["en"] and "第 200 步" in f.message["zh"]
    assert finding(diagnose(make_run(sim(collapse_at=None))), "entropy_surge").status == "ok"


# ---------------------------------------------------------------- entropy_clip_joint

@pytest.mark.parametrize("entropy0", [0.05, 2.0])
def test_low_entropy_with_high_clip_fails_at_any_scale(entropy0: float) -> None:
    f = finding(diagnose(make_run(sim(entropy0=entropy0))), "entropy_clip_joint")
    assert f.status == "fail" and abs(f.onset_step - 182) <= 5
    assert "classic sign of unstable training" in f.message["en"] and "典型的训练不稳" in f.message["zh"]
    healthy = finding(diagnose(make_run(sim(entropy0=entropy0, collapse_at=None))), "entropy_clip_joint")
    assert healthy.status == "ok" and "exploring with gentle updates" in healthy.message["en"]
    assert "在充分探索，且更新温和" in healthy.message["zh"]


def test_short_joint_stretch_warns_and_high_clip_alone_is_not_the_joint_sign() -> None:
    ent = ramp(1.0, 0.2, 100, 110) * np.exp(rng(3).normal(0, 0.02, N))
    clip = flat(0.01) + np.where((np.arange(N) >= 150) & (np.arange(N) < 160), 0.4, 0.0)
    f = finding(diagnose(make_run({"actor/entropy": ent, "actor/pg_clipfrac": clip})), "entropy_clip_joint")
    assert f.status == "warn" and abs(f.onset_step - 151) <= 3
    high = finding(diagnose(make_run({"actor/entropy": flat(1.0), "actor/pg_clipfrac": flat(0.35)})),
                   "entropy_clip_joint")
    assert high.status == "ok" and "not the joint sign" in high.message["en"]


# ---------------------------------------------------------------- truncation and aborted shares

def test_response_truncation() -> None:
    """10 % cut warns (where the corpus's labellers date a growing truncation), 50 % fails (most answers cut;
    the agent runs' 12-37 % is a growing risk in their labels, not a breakdown)."""
    run = make_run({"response_length/clip_ratio": np.where(np.arange(N) >= 99, 0.6, 0.001)},
                   config={"data.max_response_length": 1024})
    f = finding(diagnose(run), "response_clip_high")
    assert f.status == "fail" and abs(f.onset_step - 100) <= 5 and f.evidence["limit"] == 1024
    assert "60.0% of responses were cut" in f.message["en"] and "被截断" in f.message["zh"]
    warn = finding(diagnose(make_run({"response_length/clip_ratio": np.where(np.arange(N) >= 99, 0.2, 0.0)})),
                   "response_clip_high")
    assert warn.status == "warn" and abs(warn.onset_step - 100) <= 5
    assert finding(diagnose(make_run({"response_length/clip_ratio": np.full(N, 0.06)})),
                   "response_clip_high").status == "ok"


def test_truncation_the_untrained_policy_learns_out_of_is_a_note() -> None:
    """A share high from the start that the run leaves for good before half way (``early``) or that falls to
    the end (``receding``) is the untrained policy learning to stop; one that comes back, or stays, warns."""
    cut = "response_length/clip_ratio"
    early = finding(diagnose(make_run({cut: np.where(np.arange(N) < 40, 0.6, 0.0)})), "response_clip_high")
    assert (early.status, early.template, early.span) == ("note", "early", (1, 40))
    assert "then 0.0% to the end" in early.message["en"] and "学会了在上限之前结束" in early.message["zh"]
    back = np.where((np.arange(N) < 40) | (np.arange(N) >= 250), 0.6, 0.0)
    assert finding(diagnose(make_run({cut: back})), "response_clip_high").status == "fail"
    # falling, but not to half its start, or climbing again over the second half: not learnt out of
    assert finding(diagnose(make_run({cut: np.linspace(0.4, 0.25, N)})), "response_clip_high").status == "warn"
    v = np.linspace(0.45, 0.05, N)
    v[N // 2:] = np.linspace(0.05, 0.2, N - N // 2)
    assert finding(diagnose(make_run({cut: v})), "response_clip_high").status == "warn"


def test_the_made_healthy_grpo_run_learns_to_stop_before_the_cap() -> None:
    """Real (corpus made__trl-cpu__grpo-healthy, 30 steps at a 32-token cap): clipped_ratio 0.88, 1.0, 0.88 at
    steps 1-3, a median 0.19 over the last 10 steps as the reward climbs 0.25 -> 0.81."""
    f = finding(diagnose(corpus_run("made__trl-cpu__grpo-healthy")), "response_clip_high")
    assert (f.status, f.template) == ("note", "receding")
    assert "A median 62.5% of responses hit the length limit over the first 10 steps, falling to 18.8%" \
        in f.message["en"]


def test_truncation_read_from_a_mean_length_sitting_at_the_cap(real: Path) -> None:
    """Real (shared Unsloth Qwen2.5-3B table, no clip ratio logged): completion_length is exactly 200.000 — all
    eight completions at the 200-token cap — on 93 of 250 steps from step 1: at least 37 % cut."""
    run = rlvitals.load(real / "trl-unsloth__notebooks__Qwen2.5_3B-GRPO.training_table.csv")[0]
    f = finding(diagnose(run), "response_clip_high")
    assert f.status == "warn" and f.onset_step == 1 and f.evidence["steps_at_cap"] == 93
    assert "sat exactly at 200 tokens" in f.message["en"]
    # a mean that never repeats its maximum says nothing about a cap: not judged
    free = make_run({"response_length/mean": 300 + 20 * np.sin(np.arange(N) / 7.0) + np.arange(N) * 1e-3})
    assert finding(diagnose(free), "response_clip_high").status == "skipped"
    # single batches at 12.5% or 50% (one in eight / one in two samples) are not a sustained level
    spiky = np.zeros(N)
    spiky[[20, 90, 140, 260]] = [0.125, 0.5, 0.125, 0.5]
    assert finding(diagnose(make_run({"response_length/clip_ratio": spiky})), "response_clip_high").status == "ok"


def test_prompt_truncation_and_aborted_responses() -> None:
    f = finding(diagnose(make_run({"prompt_length/clip_ratio": np.where(np.arange(N) >= 49, 0.02, 0.0)})),
                "prompt_clip_high")
    assert f.status == "warn" and abs(f.onset_step - 50) <= 5 and "max_prompt_length" in f.message["en"]
    assert finding(diagnose(make_run({"prompt_length/clip_ratio": np.zeros(N)})), "prompt_clip_high").status == "ok"
    f = finding(diagnose(make_run({"response/aborted_ratio": np.where(np.arange(N) >= 59, 0.3, 0.0)})), "aborted_high")
    assert f.status == "fail" and abs(f.onset_step - 60) <= 5 and "生成失败" in f.message["zh"]
    assert finding(diagnose(make_run(sim())), "aborted_high").status == "ok"


# ---------------------------------------------------------------- length_reward_hacking

def test_shorter_answers_with_a_rising_reward_may_be_hacking() -> None:
    length = ramp(300, 150, 100, 120) + rng(4).normal(0, 5, N)
    f = finding(diagnose(make_run({"response_length/mean": length, **reward(0.3, 0.8, 100, 120)})),
                "length_reward_hacking")
    assert f.status == "warn" and abs(f.onset_step - 106) <= 5
    assert "may be reward hacking" in f.message["en"] and "可能在 reward hacking" in f.message["zh"]


def test_length_growth_without_reward_is_spurious_and_the_correlation_decides_when_present() -> None:
    length = ramp(200, 400, 100, 150) + rng(5).normal(0, 5, N)
    base = {"response_length/mean": length, **reward(0.5, 0.5)}
    f = finding(diagnose(make_run(base)), "length_reward_hacking")
    assert f.status == "warn" and abs(f.onset_step - 112) <= 5 and "Dr. GRPO" in f.message["en"]
    def with_corr(r: float) -> Any:
        run = make_run({**base, "rollout/length_correct_corr": np.full(N, r)})
        return finding(diagnose(run), "length_reward_hacking")

    over, same, pays = with_corr(-0.3), with_corr(0.02), with_corr(0.3)
    assert over.status == "warn" and "overthinking" in over.message["en"]
    assert same.status == "warn" and "no more often correct" in same.message["en"]
    assert pays.status == "ok" and "paying off" in pays.message["en"]


def test_length_controls() -> None:
    f = finding(diagnose(make_run(sim(collapse_at=None))), "length_reward_hacking")
    assert f.status == "ok"
    short_run = make_run({"response_length/mean": flat(200, n=30), **{k: v[:30] for k, v in reward(0.2, 0.8).items()}})
    short = finding(diagnose(short_run), "length_reward_hacking")
    assert short.status == "skipped" and "Only 30 steps" in short.message["en"]


# ---------------------------------------------------------------- turns and tool calls

def test_turns_surge() -> None:
    turns = np.full(N, 6.0)
    turns[119] = 20
    f = finding(diagnose(make_run({"num_turns/max": turns})), "turns_surge")
    assert f.status == "warn" and f.onset_step == 120 and "死循环" in f.message["zh"] and "第 120 步" in f.message["zh"]
    assert "stuck in a loop" in f.message["en"]
    turns[[59, 179, 239]] = 18
    assert finding(diagnose(make_run({"num_turns/max": turns})), "turns_surge").status == "fail"
    shifted = finding(diagnose(make_run({"num_turns/max": np.where(np.arange(N) >= 99, 14.0, 6.0)})), "turns_surge")
    assert shifted.status == "fail" and abs(shifted.onset_step - 100) <= 3
    assert finding(diagnose(make_run({"num_turns/max": np.full(N, 6.0)})), "turns_surge").status == "ok"


def test_tool_calls_at_the_cap() -> None:
    cap = np.where(np.arange(N) >= 79, 0.4, 0.02)
    f = finding(diagnose(make_run({"rollout/tool_calls/at_cap": cap})), "tool_calls_at_cap")
    assert f.status == "fail" and abs(f.onset_step - 80) <= 5 and "机械地重复调用" in f.message["zh"]
    efficient = findings(make_run({"tool_call_counts/mean": flat(1.0), "tool_call_counts/max": np.full(N, 3.0)}),
                         "tool_calls_at_cap")
    assert [x.status for x in efficient] == ["ok"] and "around 1.0 is efficient" in efficient[0].message["en"]
    mean = np.where(np.arange(N) >= 149, 4.8, 1.2)
    near = findings(make_run({"tool_call_counts/mean": mean, "tool_call_counts/max": np.full(N, 5.0)}),
                    "tool_calls_at_cap")
    assert near[0].status == "warn" and abs(near[0].onset_step - 150) <= 5


def test_tool_call_spread() -> None:
    run = make_run({"rollout/tool_calls/mean": flat(2.0),
                    "rollout/tool_calls/std": np.where(np.arange(N) >= 99, 3.0, 0.5)})
    found = {f.status: f for f in findings(run, "tool_calls_at_cap")}
    assert found["warn"].onset_step is not None and abs(found["warn"].onset_step - 100) <= 5
    assert "unstable" in found["warn"].message["en"] and "策略不稳定" in found["warn"].message["zh"]
    calm = make_run({"rollout/tool_calls/mean": flat(2.0), "rollout/tool_calls/std": flat(0.5)})
    assert {f.status for f in findings(calm, "tool_calls_at_cap")} == {"ok"}


# ---------------------------------------------------------------- every template, both languages

def run_of(**series: Any) -> Callable[[], Run]:
    """A factory for a run of the given canonical series (``actor__entropy`` for ``actor/entropy``)."""
    return lambda: make_run({k.replace("__", "/"): v for k, v in series.items()})


LONGER = ramp(200, 400, 100, 150)
CASES: dict[tuple[str, str], Callable[[], Run]] = {
    ("entropy_collapse", "ok"): lambda: make_run(sim(collapse_at=None)),
    ("entropy_collapse", "fail"): lambda: make_run(sim()),
    ("entropy_collapse", "fail_early"): lambda: make_run(sim(collapse_at=30)),
    ("entropy_collapse", "learning"): fast_learning_run,
    ("entropy_collapse", "converged"): lambda: fast_learning_run(reward_at=0.95),
    ("entropy_collapse", "warn_learning"): lambda: collapse_with_outcome((0.22, 0.88), (0.2, 0.3)),
    ("entropy_collapse", "warn_reward_rising"): lambda: collapse_with_outcome(None, (0.2, 0.9)),
    ("entropy_flat", "short"): run_of(actor__entropy=flat(0.7, n=60)),
    ("entropy_flat", "ok"): lambda: make_run(sim()),
    ("entropy_flat", "ok_learning"): lambda: make_run({"actor/entropy": flat(0.7), **reward(0.2, 0.8)}),
    ("entropy_flat", "ok_solved"): lambda: make_run({"actor/entropy": flat(0.03), **reward(0.95, 0.95)}),
    ("entropy_flat", "warn"): lambda: make_run({"actor/entropy": flat(0.7), **reward(0.4, 0.4)}),
    ("entropy_flat", "warn_no_reward"): run_of(actor__entropy=flat(0.7)),
    ("entropy_surge", "ok"): lambda: make_run(sim()),
    ("entropy_surge", "shift"): run_of(actor__entropy=flat(0.3) * np.where(np.arange(N) >= 149, 2.5, 1)),
    ("entropy_surge", "spike"): run_of(actor__entropy=flat(0.3) * np.where(np.arange(N) == 199, 1.8, 1)),
    ("entropy_clip_joint", "ok_exploring"): lambda: make_run(sim(collapse_at=None)),
    ("entropy_clip_joint", "ok_converging"): run_of(actor__entropy=ramp(1, 0.2, 10, 100),
                                                    actor__pg_clipfrac=flat(0.01)),
    ("entropy_clip_joint", "ok_clip_high"): run_of(actor__entropy=flat(1.0), actor__pg_clipfrac=flat(0.35)),
    ("entropy_clip_joint", "warn"): run_of(actor__entropy=ramp(1, 0.2, 100, 110),
                                           actor__pg_clipfrac=flat(0.01) + np.where(np.arange(N) // 10 == 15, 0.4, 0)),
    ("entropy_clip_joint", "fail"): lambda: make_run(sim()),
    ("entropy_collapse", "fail_despite_reward"): lambda: make_run({
        "actor/entropy": np.where(np.arange(N) < 100, flat(1.55, sd=0.005), 0.005), **reward(0.3, 0.6, 100, 110)}),
    ("length_reward_hacking", "short"): run_of(response_length__mean=flat(200, n=30),
                                               critic__score__mean=flat(0.5, n=30)),
    ("length_reward_hacking", "ok"): lambda: make_run(sim()),
    ("length_reward_hacking", "ok_growth"): lambda: make_run({"response_length/mean": ramp(200, 400, 50, 250),
                                                              **reward(0.2, 0.8, 50, 250)}),
    ("length_reward_hacking", "hacking"): lambda: make_run({"response_length/mean": ramp(300, 150, 100, 120),
                                                            **reward(0.3, 0.8, 100, 120)}),
    ("length_reward_hacking", "spurious"): lambda: make_run({"response_length/mean": LONGER, **reward(0.5, 0.5)}),
    ("length_reward_hacking", "spurious_corr"): lambda: make_run({"response_length/mean": LONGER, **reward(0.5, 0.5),
                                                                  "rollout/length_correct_corr": np.zeros(N)}),
    ("length_reward_hacking", "overthinking"): lambda: make_run({"response_length/mean": LONGER, **reward(0.5, 0.5),
                                                                 "rollout/length_correct_corr": np.full(N, -0.4)}),
    ("entropy_surge", "climb"): run_of(actor__entropy=ramp(0.25, 0.8, 10, 290) * np.exp(rng(3).normal(0, 0.03, N))),
    ("entropy_surge", "climb_learning"): run_of(
        actor__entropy=ramp(0.25, 0.8, 10, 290) * np.exp(rng(3).normal(0, 0.03, N)),
        critic__score__mean=np.linspace(0.2, 0.8, N)),
    ("response_length_collapse", "ok"): run_of(response_length__mean=flat(300.0)),
    ("response_length_collapse", "fail"): run_of(response_length__mean=np.where(np.arange(N) < 100, 900.0, 3.0)),
    ("response_length_collapse", "warn"): run_of(response_length__mean=np.where(np.arange(N) < 100, 900.0, 120.0)),
    ("turns_surge", "ok"): run_of(num_turns__max=np.full(N, 6.0)),
    ("turns_collapse", "ok"): run_of(num_turns__mean=flat(6.0)),
    ("turns_collapse", "warn"): run_of(num_turns__mean=np.where(np.arange(N) < 100, 6.0, 2.0)),
    ("turns_surge", "spike"): run_of(num_turns__max=np.where(np.arange(N) == 119, 20.0, 6.0)),
    ("turns_surge", "shift"): run_of(num_turns__max=np.where(np.arange(N) >= 99, 14.0, 6.0)),
    ("tool_calls_at_cap", "cap_ok"): run_of(rollout__tool_calls__at_cap=np.full(N, 0.01)),
    ("tool_calls_at_cap", "cap_warn"): run_of(rollout__tool_calls__at_cap=np.where(np.arange(N) >= 79, 0.15, 0.0)),
    ("tool_calls_at_cap", "cap_fail"): run_of(rollout__tool_calls__at_cap=np.where(np.arange(N) >= 79, 0.4, 0.0)),
    ("tool_calls_at_cap", "ok_mean"): run_of(tool_call_counts__mean=flat(1.0)),
    ("tool_calls_at_cap", "near_max"): run_of(tool_call_counts__mean=np.full(N, 4.8),
                                              tool_call_counts__max=np.full(N, 5.0)),
    ("tool_calls_at_cap", "ok_spread"): run_of(rollout__tool_calls__mean=flat(2.0), rollout__tool_calls__std=flat(0.5)),
    ("tool_calls_at_cap", "spread"): run_of(rollout__tool_calls__mean=flat(2.0), rollout__tool_calls__std=flat(3.0)),
}
for _check, _key, _warn in (("response_clip_high", "response_length/clip_ratio", 0.2),
                            ("prompt_clip_high", "prompt_length/clip_ratio", 0.03),
                            ("aborted_high", "response/aborted_ratio", 0.1)):
    CASES[(_check, "ok")] = lambda k=_key: make_run({k: np.zeros(N)})
    CASES[(_check, "warn")] = lambda k=_key, w=_warn: make_run({k: np.full(N, w)})
    CASES[(_check, "fail")] = lambda k=_key: make_run({k: np.full(N, 0.6)})
_AT_CAP = np.arange(N)
CASES[("response_clip_high", "capped")] = run_of(response_length__mean=np.where(_AT_CAP % 3 == 0, 256.0, 200.0))
CASES[("response_clip_high", "capped_ok")] = run_of(response_length__mean=np.where(_AT_CAP % 50 == 0, 256.0, 200.0))
CASES[("response_clip_high", "no_ratio")] = run_of(response_length__mean=300 + np.arange(N) * 0.1)
CASES[("response_clip_high", "early")] = run_of(response_length__clip_ratio=np.where(_AT_CAP < 40, 0.6, 0.0))
CASES[("response_clip_high", "receding")] = run_of(response_length__clip_ratio=np.linspace(0.6, 0.15, N))


@pytest.mark.parametrize("case", sorted(CASES), ids=lambda c: f"{c[0]}-{c[1]}")
def test_every_template_formats_in_both_languages(case: tuple[str, str]) -> None:
    check_id, template = case
    run = CASES[case]()
    assert template in [o.template for o in outcomes(run, check_id)]
    for f in findings(run, check_id):
        for lang in ("en", "zh"):
            assert f.message[lang] and "{" not in f.message[lang] and "}" not in f.message[lang], f.message[lang]
            assert f.title[lang] and f.advice[lang]


def test_the_cases_cover_every_template_of_every_l2_check() -> None:
    checks = {c.id: c for c in load_checks()}
    # every L2 check whose function lives in the behaviour package (the rollout-derived L2 checks have their own tests)
    assert set(MINE) == {c.id for c in checks.values()
                         if c.layer == "L2" and c.fn.__module__.startswith("rlvitals.checks.behaviour.")}
    for cid in MINE:
        assert set(checks[cid].en.messages) == set(checks[cid].zh.messages), cid
        assert {t for c, t in CASES if c == cid} == set(checks[cid].en.messages), cid
        assert all(isinstance(v, (int, float)) for v in checks[cid].params.values()), cid


# ---------------------------------------------------------------- real logs


def test_deepseek_grpo_entropy_reads_as_fast_learning_then_smooth_decay(real: Path) -> None:
    # entropy 0.39 → 0.10 in the first 20 steps while the train reward climbs 0.26 → 0.82 (the answer
    # format is learned), then a slow decay to 0.023 over 1,100 steps with the clip fraction at 0.000–0.004
    d = diagnose(rlvitals.load(real / "verl__verl_training_log__grpo_run_deepseek7b_llm.log")[0])
    collapse = finding(d, "entropy_collapse")
    # entropy is 0.392 at step 2, 0.361 and 0.355 at steps 3-4, 0.295 at step 5: the fall departs there
    assert collapse.status == "note" and 4 <= collapse.onset_step <= 6  # a healthy run (its corpus label): a note
    assert collapse.evidence["reward_before"] < 0.7 < 0.8 < collapse.evidence["reward_after"]
    joint = finding(d, "entropy_clip_joint")
    assert joint.status == "ok" and "converging without its updates fighting it" in joint.message["en"]
    assert finding(d, "entropy_flat").status == "ok" and finding(d, "entropy_surge").status == "ok"
    assert finding(d, "length_reward_hacking").status == "ok"  # 192 → 130 tokens happens in 30 of 1,119 steps
    assert finding(d, "response_clip_high").status == "ok" and finding(d, "prompt_clip_high").status == "ok"


def test_megatron_gpg_entropy_decays_smoothly_which_is_no_collapse(real: Path) -> None:
    """0.336 -> 0.06 over 60 steps as a smooth decay (about the same share lost in every 20-step window)
    while the score sits at 0.93-0.98: the corpus label (shared__verl_gpg_qwen2_7b_megatron) says no
    entropy-collapse warning; it was a "solved task" warning before collapse() told a decay from a fall."""
    d = diagnose(rlvitals.load(real / "verl__verldata__qwen2-7b_math_megatron.log")[0])
    assert finding(d, "entropy_collapse").status == "ok"


# ---------------------------------------------------------------- response_length_collapse

def test_a_length_collapse_in_the_first_steps_fails_from_the_run_s_first_values() -> None:
    """Real (corpus verl__agent-opd__qwen3-4b-klreward-length-collapse): 1,759 tokens at step 1, 623 at 7,
    87.9 at 9, 1.0 from step 12 to 261 — the baseline is the run's start, not a window after the damage."""
    f = finding(diagnose(corpus_run("verl__agent-opd__qwen3-4b-klreward-length-collapse")), "response_length_collapse")
    assert f.status == "fail" and 6 <= f.onset_step <= 8
    assert f.evidence["baseline"] > 1500 and f.evidence["value"] <= 1.5
    assert "stopped answering the task" in f.message["en"] and "KL" in f.advice["en"]


def test_a_length_collapse_is_read_on_four_records() -> None:
    """Real (corpus trlconsole__trldapo_qwen25vl3b_grpo_interrupted): completions/mean_length 15.05 at step
    10, then 2.0 at steps 20, 30 and 40 before the run was interrupted — four records are enough."""
    f = finding(diagnose(corpus_run("trlconsole__trldapo_qwen25vl3b_grpo_interrupted")), "response_length_collapse")
    assert f.status == "fail" and f.onset_step == 20


def test_a_length_that_drifts_or_recovers_is_no_collapse() -> None:
    """Real (corpus must-nots): gemma-3 GRPO drifts 542.7 -> 340.4 tokens while correctness rises; a
    healthy veRL agent run's ~1k-token responses move with its tool use."""
    for run_id in ("trlstate__gemma3-1b-grpo-gsm8k", "verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy"):
        assert finding(diagnose(corpus_run(run_id)), "response_length_collapse").status == "ok", run_id


def test_a_noisy_length_with_short_batches_is_no_collapse(real: Path) -> None:
    """Real (shared gpt-oss 2048 table): single batches of 48-68 tokens among 200-580 are noise."""
    name = "trl-unsloth__notebooks__gpt_oss_20B_Reinforcement_Learning_2048_Game_BF16.training_table.csv"
    run = rlvitals.load(real / name)[0]
    assert finding(diagnose(run), "response_length_collapse").status == "ok"


# ---------------------------------------------------------------- entropy_surge

def test_an_entropy_ramp_no_window_shift_sees_is_a_climb() -> None:
    """Real (corpus verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge): 0.24-0.30 on steps 1-13, then a
    steady ramp to 0.84 by step 50 that never leaves: x3 its start, dated where it began (about step 14)."""
    f = finding(diagnose(corpus_run("verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge")), "entropy_surge")
    assert f.status == "fail" and 12 <= f.onset_step <= 20 and "climbed" in f.message["en"]
    assert f.evidence["ratio_at_end"] > 2


def test_a_climb_that_comes_most_of_the_way_back_only_warns() -> None:
    """Real (corpus verl__agent-opd__qwen2.5-3b-tokenkl0.02-truncation, a may-find that must not fail):
    0.25 -> 0.63 at step 96, back to ~0.3 by step 200."""
    f = finding(diagnose(corpus_run("verl__agent-opd__qwen2.5-3b-tokenkl0.02-truncation")), "entropy_surge")
    assert f.status == "warn"


def test_a_wiggle_after_a_collapse_to_zero_is_no_surge() -> None:
    """Real (corpus verl__agent-opd__qwen3-4b-klreward-length-collapse): entropy ~0.0002 after its collapse;
    a step at 0.001 is five times that, and nothing against the 0.23 it started at."""
    f = finding(diagnose(corpus_run("verl__agent-opd__qwen3-4b-klreward-length-collapse")), "entropy_surge")
    assert f.status == "ok"


def test_a_small_spike_long_after_the_fall_is_not_read(real: Path) -> None:
    """Real (shared Qwen2.5-0.5B PPO, whose corpus label says no entropy surge): 0.06 -> 0.096 at step 328,
    long after the early fall from 0.53 — under a tenth of the starting entropy. It used to warn."""
    run = rlvitals.load(real / "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log")[0]
    assert finding(diagnose(run), "entropy_surge").status == "ok"


def test_entropy_spikes_are_point_events() -> None:
    x = flat(0.5, sd=0.01)
    x[[120, 200]] = 1.2
    f = finding(diagnose(make_run({"actor/entropy": x})), "entropy_surge")
    assert f.status == "warn" and f.points == (121, 201) and f.onset_step == 121


def test_turn_spikes_are_point_events() -> None:
    turns = np.full(N, 6.0)
    turns[[119, 199]] = 20.0
    f = finding(diagnose(make_run({"num_turns/max": turns})), "turns_surge")
    assert f.status in ("warn", "fail") and f.points == (120, 200)


def test_flat_entropy_on_a_solved_task_is_no_warning() -> None:
    """Real (corpus verl__dstack-configs__qwen2.5-7b-ppo-gsm8k-resumed, healthy in its label): a PPO run
    resumed at step 101 near the GSM8K ceiling — score ~0.95 of a 0..1 range, entropy 0.033 -> 0.031."""
    f = finding(diagnose(corpus_run("verl__dstack-configs__qwen2.5-7b-ppo-gsm8k-resumed")), "entropy_flat")
    assert f.status == "ok" and f.message["en"].startswith("Entropy stayed flat") and "solved task" in f.message["en"]


def test_an_agent_that_stops_calling_its_tools_warns() -> None:
    """Real (corpus verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse): num_turns/mean 6.6 at step 1,
    3.75 at 25, 2.0 (the run's minimum: one question, one answer) from step 42 on."""
    f = finding(diagnose(corpus_run("verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse")), "turns_collapse")
    assert f.status == "warn" and 15 <= f.onset_step <= 35 and f.evidence["floor"] == 2.0


def test_tools_dropped_within_the_first_steps_are_measured_from_before_the_fall() -> None:
    """Real (corpus verl__agent-opd__qwen3-4b-klreward-length-collapse): num_turns/mean 7.68 (1), 7.16 (2), 5.45
    (3), 3.79 (4), 2.68 (6), 2.06 (9), then 2.0 to step 261. The run's first twentieth (13 steps) already holds the
    fall: its median (2.68) read as the start made it "2.68 to 2", no collapse, while the live watcher had said it
    at step 8 under the KL jump. The start is now where the agent began."""
    f = finding(diagnose(corpus_run("verl__agent-opd__qwen3-4b-klreward-length-collapse")), "turns_collapse")
    assert f.status == "warn" and f.onset_step == 3 and f.evidence["baseline"] > 7 and f.evidence["floor"] == 2.0


def test_steady_tool_use_is_no_collapse() -> None:
    """Real (corpus wandb__open-agentrl-opd__qwen2.5-3b-tokenkl0.1-xx1oj7kk, healthy): num_turns/mean 6.46 ->
    6.27 over 38 steps."""
    f = finding(diagnose(corpus_run("wandb__open-agentrl-opd__qwen2.5-3b-tokenkl0.1-xx1oj7kk")), "turns_collapse")
    assert f.status == "ok"


def test_entropy_coming_back_down_after_a_surge_is_no_collapse() -> None:
    """Real (corpus trlconsole__nips-grpo-dynamics__qwen25-7b-grpo-entropy-blowup): entropy 0.15 -> 7.0 (the
    surge, a must-find) then 7.0 -> 2.25 at step 110: a fall, but to far above where the run started."""
    d = diagnose(corpus_run("trlconsole__nips-grpo-dynamics__qwen25-7b-grpo-entropy-blowup"))
    assert finding(d, "entropy_collapse").status == "ok" and finding(d, "entropy_surge").status == "fail"


def test_truncation_that_comes_back_above_the_level_is_one_finding_to_the_end() -> None:
    """The ReTool run whose answers grow to the 8096-token cap: clip_ratio above 0.1 over steps 85-103,
    then again on 99 % of the steps from 150 (labels.toml quotes the raw values). The finding runs from the
    first stretch to the last one, not only over the first."""
    d = diagnose(corpus_run("verl__agent-opd__qwen2.5-3b-tokenkl0.02-truncation"))
    f = finding(d, "response_clip_high")
    # dated at 85, the first step that shows it and goes on showing it: 0.119 at 83, 0.068 at 84, then 0.127,
    # 0.121, 0.145 (the rolling level crossed at 84, a step whose own value is below the level)
    assert f.status == "warn" and f.onset_step == 85 and f.span == (85, 238)
    assert f.message["en"].startswith("From step 85 to 238 (154 steps)")


def test_an_entropy_climb_while_the_outcome_rises_is_a_note() -> None:
    """Real (corpus verl__econ-agent-grpo__qwen25-7b-lora-final-ckpt-disk-full, whose label rules out a surge):
    entropy 10-step means 0.11-0.14 to step 60, 0.21-0.26 after, with entropy_coeff 0.1 as the lr warms up,
    while the score rises and the answers stay valid JSON. The same climb with a flat outcome still warns."""
    f = finding(diagnose(corpus_run("verl__econ-agent-grpo__qwen25-7b-lora-final-ckpt-disk-full")), "entropy_surge")
    assert (f.status, f.template) == ("note", "climb_learning") and "critic/score/mean rose" in f.message["en"]
    climb = ramp(0.25, 0.8, 10, 290) * np.exp(rng(3).normal(0, 0.03, N))
    flat = finding(diagnose(make_run({"actor/entropy": climb, "critic/score/mean": 0.5 + rng(4).normal(0, 0.01, N)},
                                     config={"algorithm.adv_estimator": "grpo"})), "entropy_surge")
    assert (flat.status, flat.template) == ("fail", "climb")


def test_an_entropy_climb_that_came_back_ends_where_it_fell_below_its_rise() -> None:
    t = np.arange(300)
    # 0.4 nats → 1.0 at step 120 → back to 0.5: still 1.25× the start at the end, below the 1.3× of a rise
    bump = 1.0 + 1.5 * np.exp(-(((t - 120) / 40.0) ** 2)) + 0.25 * (t > 120)
    # the reward flat: with a rising outcome the same climb is a note (entropy_surge's climb_learning)
    s = {"actor/entropy": 0.4 * bump * np.exp(rng(3).normal(0, 0.02, 300)),
         "critic/score/mean": 0.4 + rng(4).normal(0, 0.01, 300)}
    o = [o for o in outcomes(make_run(s, config={"algorithm.adv_estimator": "grpo"}), "entropy_surge")][0]
    assert (o.status, o.template) == ("warn", "climb"), o
    assert o.span is not None and 150 <= o.span[1] <= 200, o.span  # not the run's last step

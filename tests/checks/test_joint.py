"""Joint readings: reward collapse with its causes, the pass@k table, prompt scale, faithfulness."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runs import corpus_run, finding, make_run

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.synthetic.pathologies import Spec, scenario

LEFTOVER = re.compile(r"\{[a-z_]+[^}]*\}")


def _check_words(f: object) -> None:
    for lang in ("en", "zh"):
        text = f.message[lang]  # type: ignore[attr-defined]
        assert text and not LEFTOVER.search(text), text


def _crash(cause: str, scale: float = 1.0) -> dict[str, np.ndarray]:
    s = scenario(Spec(300, 2))
    t = np.arange(1, 301)
    drop = np.clip((t - 160) / 10, 0, 1)
    s["critic/score/mean"] = s["critic/score/mean"] - 0.35 * drop
    s["critic/rewards/mean"] = s["critic/score/mean"].copy()
    early = np.clip((t - 150) / 6, 0, 1)
    if cause in ("entropy", "entropy_and_clip"):
        s["actor/entropy"] = s["actor/entropy"] * (1 - 0.8 * early)
    if cause in ("clip", "entropy_and_clip"):
        s["actor/pg_clipfrac"] = s["actor/pg_clipfrac"] + 0.3 * early
    s["actor/entropy"] = s["actor/entropy"] * scale
    return s


@pytest.mark.parametrize("cause", ["entropy", "clip", "entropy_and_clip", "unexplained"])
@pytest.mark.parametrize("scale", [0.05, 1.0, 4.0])
def test_reward_collapse_names_its_cause(cause: str, scale: float) -> None:
    f = finding(diagnose(make_run(_crash(cause, scale))), "reward_collapse")
    assert f.status == "fail" and abs(f.onset_step - 160) <= 4
    assert f.evidence["entropy_dropped"] == cause.startswith("entropy")
    assert f.evidence["clip_spiked"] == ("clip" in cause)
    _check_words(f)


def test_healthy_reward_is_ok() -> None:
    f = finding(diagnose(make_run(scenario(Spec(300, 2)))), "reward_collapse")
    assert f.status == "ok"
    _check_words(f)


def test_reward_crash_pathology() -> None:
    f = finding(diagnose(make_run(scenario(Spec(300, 1, pathology="reward_crash", at=150)))), "reward_collapse")
    assert f.status == "fail" and f.evidence["entropy_dropped"]


def test_a_reward_at_its_floor_from_the_first_steps_fails() -> None:
    """Real (corpus verl__agent-opd__qwen3-4b-klreward-length-collapse): the ±1 score -0.676 at step 1,
    -0.944 at 6, -1.0 (every response at the floor) from step 11 — measured from the run's first values and
    as the share of the reward above its floor lost, not as a share of the whole run's range."""
    f = finding(diagnose(corpus_run("verl__agent-opd__qwen3-4b-klreward-length-collapse")), "reward_collapse")
    assert f.status == "fail" and 2 <= f.onset_step <= 5
    assert f.evidence["at_floor"] is True and f.evidence["floor"] == -1.0 and f.evidence["share_lost"] > 0.95


def test_a_verifier_score_falling_from_a_quarter_to_a_few_percent_correct_is_a_collapse() -> None:
    """Real (corpus verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge): the ±1 score sits at -0.49..-0.65
    over steps 1-15, then -0.77 (16) ... -0.93 (31): 0.15 of a 2-wide range, but most of what was above the
    floor (the batch minimum, -1) is gone."""
    f = finding(diagnose(corpus_run("verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge")), "reward_collapse")
    assert f.status in ("warn", "fail") and 14 <= f.onset_step <= 32 and f.evidence["share_lost"] > 0.5


@pytest.mark.parametrize("run_id", ["verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy",
                                    "verl__agent-opd__qwen2.5-3b-tokenkl0.02-truncation",
                                    "trlstate__gemma3-1b-grpo-gsm8k"])
def test_a_rising_or_noisy_reward_is_no_collapse(run_id: str) -> None:
    """Real (corpus must-nots): scores that improve with batch-to-batch noise."""
    assert finding(diagnose(corpus_run(run_id)), "reward_collapse").status == "ok"


def _passes(p1: float, pk: float) -> dict[str, np.ndarray]:
    n = 40
    return {"actor/entropy": np.full(n, 0.5), "pass@1": np.full(n, p1), "pass@8": np.full(n, pk)}


@pytest.mark.parametrize(("p1", "pk", "status", "word"), [
    (0.4, 0.75, "ok", "Large gap"), (0.9, 0.95, "ok", "stably"), (0.1, 0.15, "warn", "stably cannot"),
    (0.5, 0.55, "ok", "pass@8 0.55"),
])
def test_passk_gap_table(p1: float, pk: float, status: str, word: str) -> None:
    f = finding(diagnose(make_run(_passes(p1, pk))), "passk_gap")
    assert f.status == status and word in f.message["en"]
    _check_words(f)


def test_passk_gap_needs_pass_at_1() -> None:
    f = finding(diagnose(make_run({"actor/entropy": np.full(30, 0.5)})), "passk_gap")
    assert f.status == "skipped"


def test_prompt_concentration() -> None:
    share = np.full(60, 0.3)
    share[30:] = 0.7
    f = finding(diagnose(make_run({"actor/entropy": np.full(60, 0.5), "prompt/top_share": share})),
                "prompt_concentration")
    assert f.status == "warn" and f.onset_step == 31
    _check_words(f)
    f = finding(diagnose(make_run({"actor/entropy": np.full(60, 0.5), "prompt/top_share": np.full(60, 0.3)})),
                "prompt_concentration")
    assert f.status == "ok"
    _check_words(f)


@pytest.mark.parametrize(("easy", "hard", "template"), [(0.7, 0.1, "curriculum is out of date"),
                                                         (0.1, 0.7, "left behind"), (0.2, 0.2, "Easy 20%")])
def test_difficulty_mix(easy: float, hard: float, template: str) -> None:
    n = 30
    run = make_run({"actor/entropy": np.full(n, 0.5), "prompt/difficulty/easy/share": np.full(n, easy),
                    "prompt/difficulty/hard/share": np.full(n, hard),
                    "prompt/difficulty/medium/share": np.full(n, 1 - easy - hard),
                    "prompt/difficulty/medium/adv_share": np.full(n, 0.6)})
    f = finding(diagnose(run), "difficulty_mix")
    assert template in f.message["en"] and f.status == ("ok" if template.startswith("Easy") else "warn")
    assert "carry 60% of |advantage|" in f.message["en"] and "60%" in f.message["zh"]
    _check_words(f)


def test_difficulty_mix_without_advantages_leaves_their_share_out() -> None:
    """The demo's rollouts carry no per-rollout advantage: the words said 'medium prompts carry nan%'."""
    n = 30
    run = make_run({"actor/entropy": np.full(n, 0.5), "prompt/difficulty/easy/share": np.full(n, 0.7),
                    "prompt/difficulty/hard/share": np.full(n, 0.1), "prompt/difficulty/medium/share": np.full(n, 0.2)})
    f = finding(diagnose(run), "difficulty_mix")
    assert f.status == "warn" and "nan" not in f.message["en"] + f.message["zh"] and "advantage" not in f.message["en"]


def test_faithfulness_probes_and_step_verification() -> None:
    n = 10
    run = make_run({"actor/entropy": np.full(n, 0.5), "reasoning/faithfulness/truncate": np.full(n, 0.3),
                    "reasoning/faithfulness/paraphrase": np.full(n, 0.9),
                    "reasoning/step_verification": np.full(n, 0.4)})
    found = [f for f in diagnose(run).findings if f.check == "faithfulness"]
    by_text = {f.message["en"]: f.status for f in found}
    assert len(found) == 3
    assert by_text["Probe 'truncate': only 30% of probed answers react to the intervention as a faithful "
                   "chain would — the chain of thought looks decorative, not causal."] == "warn"
    assert any(s == "ok" and "paraphrase" in m for m, s in by_text.items())
    assert any(s == "warn" and "intermediate steps" in m for m, s in by_text.items())
    for f in found:
        _check_words(f)


def test_faithfulness_without_probes_is_skipped() -> None:
    f = finding(diagnose(make_run({"actor/entropy": np.full(20, 0.5)})), "faithfulness")
    assert f.status == "skipped"


def test_a_reward_that_never_moves_in_ten_thousand_steps_fails() -> None:
    """Real (corpus other__minimind-from-scratch__grpo-v1-model-reward-30m, plain-console format): the reward-
    model score is -1.872 over steps 1-100 and -1.868 over the last 100 of 9,751, every 500-step window
    between -1.80 and -1.90."""
    f = finding(diagnose(corpus_run("other__minimind-from-scratch__grpo-v1-model-reward-30m")), "reward_flat")
    assert f.status == "fail" and "without learning" in f.message["en"]


def test_reward_flat_leaves_short_rising_and_solved_runs_alone(real: Path) -> None:
    """A 500-step run with no batch min and max (no range to say what a rise worth seeing is) is not judged
    before 1,000 steps; the deepseek GRPO reward rises (0.26 -> 0.97); a reward pinned at the top of its
    range is solved."""
    f = finding(diagnose(corpus_run("other__minimind-from-scratch__grpo-v2-rule-reward-30m")), "reward_flat")
    assert f.status == "skipped" and f.template == "no_range" and "from 1000 steps on" in f.message["en"]
    assert "没有 batch 的最小值和最大值" in f.message["zh"] and "要从 1000 步起才判断" in f.message["zh"]
    d = diagnose(rlvitals.load(real / "verl__verl_training_log__grpo_run_deepseek7b_llm.log")[0])
    assert finding(d, "reward_flat").status == "ok"
    t = np.arange(1200)
    solved = make_run({"critic/score/mean": 0.96 + 0.01 * np.sin(t), "critic/score/max": np.ones(1200),
                       "critic/score/min": np.zeros(1200), "actor/entropy": np.full(1200, 0.3)})
    f = finding(diagnose(solved), "reward_flat")
    assert f.status == "ok" and "a solved task" in f.message["en"]


def _verl_reward(mean: np.ndarray) -> rlvitals.Run:
    """A veRL-like run logging the batch mean reward of a 0/1 verifier with its batch min and max."""
    n = len(mean)
    return make_run({"critic/score/mean": mean, "critic/score/min": np.zeros(n), "critic/score/max": np.ones(n),
                     "actor/entropy": np.full(n, 0.5)})


def test_a_flat_reward_is_judged_as_early_as_its_noise_allows() -> None:
    """Constructed: a 0/1 verifier's batch mean around 0.30 with a step-to-step noise of 0.03, batch min 0 and
    max 1 (veRL logs both). Over 250 steps the test could have seen a rise of 0.023 (2 % of the range): the
    reward is flat, a warning; over its first 100 steps (a rise of 0.037 excluded) the same is a note, the
    reward may still take off; a rising reward is ok; a falling one is reward_collapse's."""
    rng = np.random.default_rng(3)
    flat = 0.30 + rng.normal(0, 0.03, 250)
    f = finding(diagnose(_verl_reward(flat)), "reward_flat")
    assert (f.status, f.template, f.onset_step) == ("warn", "flat_early", 1)
    assert f.message["en"] == ("Over 250 steps critic/score/mean did not rise beyond its noise: 0.296 at the start, "
                               "best 0.307, 0.296 at the end. A rise of 0.023 or more (2% of its range 0..1) would "
                               "have shown and is excluded; a smaller one is not.")
    assert f.message["zh"] == ("250 步里 critic/score/mean 没有超出噪声上升：开始 0.296，最好 0.307，结束 0.296。0.023 "
                               "及以上的上升（其范围 0..1 的 2%）本来能看出来，可以排除；更小的上升不能排除。")
    assert f.evidence["threshold"] == pytest.approx(0.023, abs=5e-4) and f.evidence["threshold_share"] == 0.1
    early = finding(diagnose(_verl_reward(flat[:100])), "reward_flat")
    assert (early.status, early.template) == ("note", "flat_early")
    assert "A rise of 0.037 or more (4% of its range 0..1)" in early.message["en"]
    assert "0.037 及以上的上升（其范围 0..1 的 4%）" in early.message["zh"]
    # the healthy control: the same noise on a reward rising 0.30 -> 0.45
    rising = finding(diagnose(_verl_reward(flat + np.linspace(0, 0.15, 250))), "reward_flat")
    assert rising.status == "ok"
    falling = finding(diagnose(_verl_reward(flat - np.linspace(0, 0.15, 250))), "reward_flat")
    assert (falling.status, falling.template) == ("skipped", "falling")
    assert "read reward_collapse" in falling.message["en"] and "请看 reward_collapse" in falling.message["zh"]


def test_a_reward_too_noisy_to_judge_says_what_it_could_not_exclude() -> None:
    """Constructed: the same flat reward with a step-to-step noise of 0.25 (a batch of a few prompts): over 60
    steps only a rise of 0.4 (40 % of the range) would have shown, so it is not judged, and the words say how
    many steps a rise of a tenth needs (970: the tolerance falls as one over the root of the steps). Under 30
    steps nothing is judged."""
    rng = np.random.default_rng(5)
    noisy = np.clip(0.30 + rng.normal(0, 0.25, 60), 0, 1)
    f = finding(diagnose(_verl_reward(noisy)), "reward_flat")
    assert (f.status, f.template) == ("skipped", "noisy")
    assert ("only a rise of more than 0.4 (40% of its range 0..1) would have shown: a smaller one cannot be "
            "excluded yet. About 970 steps are needed to see a rise of 10% of the range.") in f.message["en"]
    assert ("只有超过 0.4 的上升（其范围 0..1 的 40%）才看得出来：更小的上升还不能排除。要看出范围 10% 的上升，"
            "大约需要 970 步。") in f.message["zh"]
    short = finding(diagnose(_verl_reward(noisy[:20])), "reward_flat")
    assert short.status == "skipped" and "judged from 30 steps on" in short.message["en"]
    assert "要从 30 步起才判断" in short.message["zh"]


def test_a_short_real_run_whose_reward_has_not_moved_is_a_note() -> None:
    """Real (corpus wandb__open-agentrl-opd__qwen2.5-3b-tokenkl0.1-xx1oj7kk, veRL, W&B history): critic/score/mean
    in -1..1, -0.547 over steps 1-10 and -0.531 over 29-38 — no gain in 38 steps. The test could have seen a rise
    of 0.14 (7 % of the range): flat, but 38 steps is early for a reward to take off, so a note (the run is
    labelled healthy, the verdict stays ok)."""
    d = diagnose(corpus_run("wandb__open-agentrl-opd__qwen2.5-3b-tokenkl0.1-xx1oj7kk"))
    f = finding(d, "reward_flat")
    assert (f.status, f.template) == ("note", "flat_early")
    assert "Over 38 steps critic/score/mean did not rise beyond its noise" in f.message["en"]
    assert "(7% of its range -1..1) would have shown and is excluded" in f.message["en"]
    assert "38 步里 critic/score/mean 没有超出噪声上升" in f.message["zh"] and "的 7%）本来能看出来" in f.message["zh"]


def _probed(faith: Sequence[float], reward: Sequence[float], every: int = 10) -> rlvitals.Run:
    """A run logging the reward at every step and the faithfulness score at every ``every``-th step (a probed
    checkpoint), as rlvitals probe's results joined onto a run look."""
    n = len(reward)
    score = np.full(n, np.nan)
    score[every - 1::every][:len(faith)] = faith
    return make_run({"critic/score/mean": np.asarray(reward, float), "reasoning/faithfulness": score})


def _trend(run: rlvitals.Run) -> Any:
    found = [f for f in diagnose(run).findings if f.check == "faithfulness" and "aithfulness" in f.message["en"]
             and "Probe" not in f.message["en"]]
    assert len(found) == 1, [f.message["en"] for f in found]
    return found[0]


def test_faithfulness_falling_while_the_reward_rises_is_a_warning_dated_at_the_fall() -> None:
    rng = np.random.default_rng(0)
    reward = np.linspace(0.2, 0.8, 80) + rng.normal(0, 0.01, 80)
    f = _trend(_probed([0.8, 0.82, 0.79, 0.8, 0.62, 0.45, 0.4, 0.38], reward))
    assert f.status == "warn"
    assert f.message["en"].startswith("Faithfulness fell 0.81 → 0.39 over steps 10–80 while critic/score/mean rose")
    assert f.onset_step == 60  # the first checkpoint below the middle of the fall (0.81 + 0.39) / 2 = 0.60
    assert "靠推理之外的东西" in f.message["zh"] and "Turpin" in f.advice["en"]
    _check_words(f)


def test_faithfulness_holding_while_the_reward_rises_is_ok() -> None:
    rng = np.random.default_rng(1)
    reward = np.linspace(0.2, 0.8, 80) + rng.normal(0, 0.01, 80)
    f = _trend(_probed([0.7, 0.72, 0.69, 0.71, 0.7, 0.68, 0.71, 0.7], reward))
    assert f.status == "ok" and f.onset_step is None


def test_faithfulness_falling_while_the_reward_is_flat_is_not_the_reward_hacking_finding() -> None:
    rng = np.random.default_rng(2)
    reward = 0.5 + rng.normal(0, 0.01, 80)
    f = _trend(_probed([0.8, 0.82, 0.79, 0.8, 0.6, 0.45, 0.4, 0.38], reward))
    assert f.status == "ok" and f.evidence["reward_end"] - f.evidence["reward_start"] < f.evidence["reward_noise"]


def test_faithfulness_at_two_checkpoints_has_no_trend_yet() -> None:
    f = _trend(_probed([0.8, 0.3], np.linspace(0.2, 0.8, 80)))
    assert f.status == "skipped" and "needs 3 or more" in f.message["en"] and "至少需要 3 个" in f.message["zh"]


def test_faithfulness_falling_with_no_reward_is_still_said() -> None:
    run = make_run({"reasoning/faithfulness": [0.8, 0.8, 0.7, 0.5, 0.4, 0.4], "actor/entropy": np.full(6, 0.5)})
    f = _trend(run)
    assert f.status == "warn" and "no reward logged" in f.message["en"] and f.onset_step == 4


def test_a_probe_that_fell_below_its_threshold_is_dated_where_it_stayed_below() -> None:
    score = [0.8, 0.75, 0.7, 0.2, 0.1, 0.0, 0.0]
    run = make_run({"reasoning/faithfulness/filler": score, "actor/entropy": np.full(7, 0.5)})
    f = next(f for f in diagnose(run).findings if f.check == "faithfulness" and "'filler'" in f.message["en"])
    assert f.status == "warn" and f.onset_step == 4  # steps 1..7: above 0.6 until step 3

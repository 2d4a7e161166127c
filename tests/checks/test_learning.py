"""L3 learning-signal and L4 exploration checks: constructed runs that trigger each at a known step,
healthy controls, scale-freeness, every message template in both languages, and the real logs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runs import corpus_run, finding, make_run

import rlvitals
from rlvitals.checks import Outcome, RunView, load_checks
from rlvitals.checks.config import CheckSettings, DiagnoseConfig
from rlvitals.diagnosis import diagnose
from rlvitals.run.run import Run
from rlvitals.synthetic.simulate import Scenario, simulate

L3 = ("zero_variance_groups", "reward_std_collapse", "advantage_collapse")
L4 = ("reward_passk_decoupling", "diversity_collapse", "group_size_concentration")
N = 300
T = np.arange(N)


def noise(sd: float, seed: int = 0, n: int = N) -> np.ndarray:
    out: np.ndarray = np.random.default_rng(seed).normal(0, sd, n)
    return out


def step_to(a: float, b: float, at: int, sd: float = 0.0, seed: int = 0) -> np.ndarray:
    """a before index ``at``, b from it on, with multiplicative noise ``sd``."""
    out: np.ndarray = np.where(at <= T, b, a) * np.exp(noise(sd, seed))
    return out


def ramp(a: float, b: float, start: int, end: int) -> np.ndarray:
    out: np.ndarray = np.interp(T, [start, end], [a, b])
    return out


def score(level: float | np.ndarray, sd: float = 0.01) -> dict[str, np.ndarray]:
    return {"critic/score/mean": np.clip(level + noise(sd, 9), 0, 1), "critic/score/max": np.ones(N),
            "critic/score/min": np.zeros(N)}


def outcomes(run: Run, check_id: str) -> list[Outcome]:
    check = {c.id: c for c in load_checks()}[check_id]
    return check.fn(RunView(run), check.params)


def findings(run: Run, check_id: str, config: DiagnoseConfig | None = None) -> list[Any]:
    return [f for f in diagnose(run, config).findings if f.check == check_id]


# ---------------------------------------------------------------- zero_variance_groups

def zero_run(share: float = 0.9, easy: float | None = 0.85, hard: float | None = 0.05,
             reward: float | None = None, framework: str = "verl") -> Run:
    key = "frac_reward_zero_std" if framework == "trl" else "group/zero_std/share"
    series = {key: np.clip(step_to(0.2, share, 100) + noise(0.02, 1), 0, 1)}
    if easy is not None and hard is not None:
        series["group/zero_std/all_correct"] = step_to(0.1, easy, 100)
        series["group/zero_std/all_wrong"] = step_to(0.1, hard, 100)
    if reward is not None:
        series.update(score(reward))
    return make_run(series, framework=framework)


def test_zero_variance_groups_fail_and_name_the_side() -> None:
    f = finding(diagnose(zero_run()), "zero_variance_groups")
    assert f.status == "fail" and abs(f.onset_step - 101) <= 5
    assert "too easy" in f.message["en"] and "太简单" in f.message["zh"] and f.evidence["easy"] == pytest.approx(0.85)
    hard = finding(diagnose(zero_run(share=0.6, easy=0.1, hard=0.5)), "zero_variance_groups")
    assert hard.status == "warn" and "too hard" in hard.message["en"] and "太难" in hard.message["zh"]


def test_zero_variance_split_is_inferred_from_the_reward_and_said_so() -> None:
    easy = finding(diagnose(zero_run(easy=None, hard=None, reward=0.93)), "zero_variance_groups")
    assert easy.status == "fail" and "inferred from the reward" in easy.message["en"] and "推断" in easy.message["zh"]
    assert "probably all correct" in easy.message["en"]
    hard = finding(diagnose(zero_run(easy=None, hard=None, reward=0.04)), "zero_variance_groups")
    assert "probably all wrong" in hard.message["en"]
    unknown = finding(diagnose(zero_run(easy=None, hard=None)), "zero_variance_groups")
    assert unknown.status == "fail" and "cannot be told" in unknown.message["en"]
    assert "无法判断" in unknown.message["zh"]
    # a reward without its batch min/max gives no range to place it in: nothing is inferred
    no_range = zero_run(easy=None, hard=None, reward=0.93)
    no_range = make_run({k: no_range.series(k)[1] for k in ("group/zero_std/share", "critic/score/mean")})
    assert "cannot be told" in finding(diagnose(no_range), "zero_variance_groups").message["en"]


def test_trl_frac_reward_zero_std_at_78_percent_is_not_passed() -> None:
    # the peer's binomial estimate called a run with ~78% dead groups healthy; the logged share is read as is
    run = zero_run(share=0.78, easy=None, hard=None, reward=0.5, framework="trl")
    f = finding(diagnose(run), "zero_variance_groups")
    assert f.status == "warn" and f.evidence["value"] == pytest.approx(0.78, abs=0.02)
    ok = finding(diagnose(make_run({"group/zero_std/share": np.full(N, 0.3)})), "zero_variance_groups")
    assert ok.status == "ok"


def test_brief_crossings_of_a_long_quantised_share_do_not_warn() -> None:
    """Three groups per logged batch: the share is 0, 1/3, 2/3 or 1. Over 2,000 logged steps its 10-step median
    crosses 0.5 for a dozen steps by chance; only a level held for 2 % of the run (40 steps) is a state."""
    rng = np.random.default_rng(7)
    share = rng.binomial(3, 0.36, 2000) / 3
    f = finding(diagnose(make_run({"group/zero_std/share": share})), "zero_variance_groups")
    assert f.status == "ok", f.message["en"]
    share[1200:1260] = rng.binomial(3, 0.75, 60) / 3  # a real stretch: 60 steps with three quarters dead
    f = finding(diagnose(make_run({"group/zero_std/share": share})), "zero_variance_groups")
    assert f.status == "warn" and 1195 <= f.onset_step <= 1215


# ---------------------------------------------------------------- reward_std_collapse

@pytest.mark.parametrize("unit", [0.01, 1.0, 100.0])
def test_sigma_g_collapse_fails_in_any_reward_unit(unit: float) -> None:
    sigma = step_to(0.4, 0.04, 150, sd=0.05) * unit
    f = finding(diagnose(make_run({"group/reward_std/mean": sigma, **score(0.5)})), "reward_std_collapse")
    assert f.status == "fail" and abs(f.onset_step - 151) <= 5
    assert "learning signal is vanishing" in f.message["en"] and "学习信号正在消失" in f.message["zh"]
    # the same fall as the reward reaches the top of its known range (batch min 0, max 1): the run solved its
    # data — a warning to move the data on, not a broken run
    solved = finding(diagnose(make_run({"group/reward_std/mean": sigma, **score(ramp(0.3, 0.95, 0, 150))})),
                     "reward_std_collapse")
    assert (solved.status, solved.template) == ("warn", "fall_solved") and abs(solved.onset_step - 151) <= 5
    assert "the prompts are solved" in solved.message["en"] and "move the data on" in solved.advice["en"]
    partial = finding(diagnose(make_run({"group/reward_std/mean": step_to(0.4, 0.15, 150, sd=0.05) * unit})),
                      "reward_std_collapse")
    assert partial.status == "warn" and abs(partial.onset_step - 151) <= 5


def test_two_rollout_sigma_flipping_between_0_and_1_41_is_not_a_collapse() -> None:
    # gpt-oss 2048 notebook: two generations per step, σ_G is 0 or 1.41 and its median flips with no signal lost
    coin = np.random.default_rng(4).random(N) < 0.45
    sigma = np.where(coin, 0.0, 1.41)
    sigma[250:] = np.where(np.random.default_rng(5).random(50) < 0.55, 0.0, 1.41)
    f = finding(diagnose(make_run({"group/reward_std/mean": sigma})), "reward_std_collapse")
    assert f.status == "warn" and "exactly 0" in f.message["en"] and f.evidence["zero_steps"] > 0.4


def test_reward_std_controls_and_batch_std_fallback() -> None:
    assert finding(diagnose(make_run({"group/reward_std/mean": step_to(0.4, 0.4, 0, sd=0.05)})),
                   "reward_std_collapse").status == "ok"
    batch = finding(diagnose(make_run({"critic/score/std": step_to(0.5, 0.01, 200, sd=0.05)})), "reward_std_collapse")
    assert batch.status == "fail" and "critic/score/std" in batch.message["en"]
    short = finding(diagnose(make_run({"group/reward_std/mean": np.full(20, 0.4)})), "reward_std_collapse")
    assert short.status == "skipped" and "Only 20 steps" in short.message["en"]


def test_sigma_g_fall_with_live_groups_is_a_note_and_with_dead_groups_still_fails() -> None:
    """GRPO scales each group by its own σ_G: the mean spread may shrink 90 % and every group still teach.
    The logged zero-variance share tells the two apart."""
    sigma = step_to(0.4, 0.04, 150, sd=0.05)
    live = finding(diagnose(make_run({"group/reward_std/mean": sigma, "group/zero_std/share": np.full(N, 0.2)})),
                   "reward_std_collapse")
    assert live.status == "note" and abs(live.onset_step - 151) <= 5
    assert "only 20% of the groups had identical rewards" in live.message["en"] and "20%" in live.message["zh"]
    assert live.evidence["zero_share"] == pytest.approx(0.2) and "Dr. GRPO" in live.advice["en"]
    dead = finding(diagnose(make_run({"group/reward_std/mean": sigma,
                                      "group/zero_std/share": step_to(0.2, 0.9, 150)})), "reward_std_collapse")
    assert dead.status == "fail" and "learning signal is vanishing" in dead.message["en"]


def test_real_dapo_loss_run_whose_groups_get_solved_is_not_a_collapse() -> None:
    """yang-zhuang/schema-linking-dapo: 17,056 TRL steps, reward 0.61 → 2.54, σ_G 1.38 → 0.20 as the
    partial-credit rewards are learnt, a quarter of the groups dead after the fall: a note, not a fail."""
    run = corpus_run("trlstate__schema-linking-dapo__qwen3-0.6b-lora-dapo-loss")
    f = finding(diagnose(run), "reward_std_collapse")
    assert f.status == "note" and "the groups still teach" in f.message["en"]
    assert 0.2 < f.evidence["zero_share"] < 0.3 and f.evidence["drop"] > 0.8
    assert finding(diagnose(run), "zero_variance_groups").status == "ok"  # 10-30-record crossings of 0.5


# ---------------------------------------------------------------- advantage_collapse

def test_advantage_range_collapse_and_dead_steps() -> None:
    top = step_to(1.79, 0.0, 200) + np.abs(noise(0.001, 2))
    f = finding(diagnose(make_run({"critic/advantages/max": top, "critic/advantages/min": -top})), "advantage_collapse")
    assert f.status == "fail" and abs(f.onset_step - 201) <= 5
    top = np.full(N, 1.79)
    top[::8] = 0.0  # one step in eight: every group of the batch identical
    run = make_run({"critic/advantages/max": top, "critic/advantages/min": -top})
    dead = finding(diagnose(run), "advantage_collapse")
    assert dead.status == "warn" and dead.onset_step == 1 and "taught nothing" in dead.message["en"]
    healthy = finding(diagnose(make_run(simulate(Scenario()))), "advantage_collapse")
    assert healthy.status == "ok"


# ---------------------------------------------------------------- reward_passk_decoupling

def passk_run(passk: np.ndarray) -> Run:
    return make_run({**score(ramp(0.3, 0.8, 0, N)), "pass@8": passk + noise(0.005, 3)})


def test_reward_rising_while_pass_at_k_stalls_warns_from_where_it_stalled() -> None:
    f = finding(diagnose(passk_run(ramp(0.6, 0.8, 0, 100))), "reward_passk_decoupling")
    assert f.status == "warn" and 80 <= f.onset_step <= 120
    assert "early sign of mode collapse" in f.message["en"] and "mode collapse 的早期信号" in f.message["zh"]
    falling = finding(diagnose(passk_run(ramp(0.8, 0.6, 0, N))), "reward_passk_decoupling")
    # dated where pass@k left its peak by more than its noise (a steady fall from the start: its first steps)
    assert falling.status == "fail" and falling.onset_step <= 20
    together = finding(diagnose(passk_run(ramp(0.6, 0.9, 0, N))), "reward_passk_decoupling")
    assert together.status == "ok"


def test_a_pass_at_k_already_at_one_is_not_read() -> None:
    """The corpus's Logic-RL rollouts: pass@16 is 1 from the first step, so 'pass@16 stayed flat (1 -> 1)'
    while the reward rose was a false warning — a pass@k at its ceiling cannot rise."""
    f = finding(diagnose(passk_run(np.ones(N))), "reward_passk_decoupling")
    assert f.status == "skipped" and "already solved" in f.message["en"]


def test_validation_best_at_n_stands_in_for_pass_at_k() -> None:
    val = np.full(N, np.nan)
    val[9::10] = 0.7 + noise(0.003, 6)[9::10]
    run = make_run({**score(ramp(0.3, 0.8, 0, N)), "val-core/gsm8k/acc/best@8/mean": val,
                    "val-core/gsm8k/acc/mean@8": val - 0.2})
    f = finding(diagnose(run), "reward_passk_decoupling")
    assert f.status == "warn" and "best@8" in f.message["en"] and f.onset_step == 10
    none = finding(diagnose(make_run(score(ramp(0.3, 0.8, 0, N)))), "reward_passk_decoupling")
    assert none.status == "skipped" and "pass@k" in none.message["en"]


# ---------------------------------------------------------------- diversity_collapse

def test_diversity_collapse_in_both_directions() -> None:
    run = make_run({"diversity/distinct_2": step_to(0.6, 0.15, 150, sd=0.03),
                    "diversity/embedding_cosine": step_to(0.6, 0.95, 150, sd=0.005),
                    "diversity/duplicate_rate": step_to(0.05, 0.4, 150, sd=0.02),
                    "diversity/answer_entropy": ramp(1.2, 1.05, 0, N) + noise(0.01, 7)})
    by = {f.metrics[0]: f for f in findings(run, "diversity_collapse")}
    assert by["diversity/distinct_2"].status == "fail" and abs(by["diversity/distinct_2"].onset_step - 151) <= 5
    cosine = by["diversity/embedding_cosine"]
    assert cosine.status == "fail" and "rose" in cosine.message["en"]
    assert cosine.evidence["value"] == pytest.approx(0.95, abs=0.01)
    assert by["diversity/duplicate_rate"].status == "warn"
    assert by["diversity/answer_entropy"].status == "ok"  # a slow 12% fall as the policy sharpens


# ---------------------------------------------------------------- group_size_concentration

STEP_GROUPS = "group/step_groups/size/mean"


def test_group_sizes_concentrating_at_n() -> None:
    sizes = ramp(3.0, 7.6, 100, 130) + noise(0.1, 8)
    f = finding(diagnose(make_run({STEP_GROUPS: sizes}, config={"env.rollout.n": 8})), "group_size_concentration")
    assert f.status == "warn" and abs(f.onset_step - 126) <= 6 and "exploration is being lost" in f.message["en"]
    ok = finding(diagnose(make_run({STEP_GROUPS: 3.0 + noise(0.1, 8)}, config={"env.rollout.n": 8})),
                 "group_size_concentration")
    assert ok.status == "ok"
    unknown = finding(diagnose(make_run({STEP_GROUPS: sizes})), "group_size_concentration")
    assert unknown.status == "warn" and "not in the config" in unknown.message["en"]
    cfg = DiagnoseConfig({"group_size_concentration": CheckSettings(params={"group_size": 16})})
    assert findings(make_run({STEP_GROUPS: sizes}), "group_size_concentration", cfg)[0].status == "ok"


# ---------------------------------------------------------------- every template, both languages

def _cases() -> dict[tuple[str, str], Callable[[], Run]]:
    flat_passk = lambda: passk_run(ramp(0.6, 0.8, 0, 100))  # noqa: E731
    falling_sigma, rising_cosine = step_to(0.4, 0.04, 150, sd=0.05), step_to(0.6, 0.95, 150, sd=0.005)
    n8 = {"env.rollout.n": 8}
    return {
        ("zero_variance_groups", "ok"): lambda: make_run({"group/zero_std/share": np.full(N, 0.1)}),
        ("zero_variance_groups", "easy"): zero_run,
        ("zero_variance_groups", "hard"): lambda: zero_run(share=0.6, easy=0.1, hard=0.5),
        ("zero_variance_groups", "mixed"): lambda: zero_run(share=0.6, easy=0.3, hard=0.3),
        ("zero_variance_groups", "easy_inferred"): lambda: zero_run(easy=None, hard=None, reward=0.93),
        ("zero_variance_groups", "hard_inferred"): lambda: zero_run(easy=None, hard=None, reward=0.04),
        ("zero_variance_groups", "mixed_inferred"): lambda: zero_run(share=0.6, easy=None, hard=None, reward=0.5),
        ("zero_variance_groups", "unknown"): lambda: zero_run(easy=None, hard=None),
        ("zero_variance_groups", "constant"): lambda: corpus_run("made__trl-cpu__grpo-constant-reward"),
        ("zero_variance_groups", "learning"): lambda: corpus_run("made__trl-cpu__grpo-healthy"),
        ("reward_std_collapse", "short"): lambda: make_run({"group/reward_std/mean": np.full(20, 0.4)}),
        ("reward_std_collapse", "ok"): lambda: make_run({"group/reward_std/mean": step_to(0.4, 0.4, 0, sd=0.05)}),
        ("reward_std_collapse", "dead"): lambda: make_run({"group/reward_std/mean": np.where(T % 4 == 0, 0.0, 0.5)}),
        ("reward_std_collapse", "dead_easy"): lambda: make_run({
            "group/reward_std/mean": np.where((T > 100) & (T < 200) & (T % 20 != 0), 0.0, 0.5),
            "critic/score/mean": np.where((T > 100) & (T < 200), 1.0, 0.6)}),
        ("reward_std_collapse", "dead_constant"): lambda: corpus_run("made__trl-cpu__grpo-constant-reward"),
        ("reward_std_collapse", "fall"): lambda: make_run({"group/reward_std/mean": step_to(0.4, 0.04, 150, sd=0.05)}),
        ("reward_std_collapse", "fall_reward"): lambda: make_run({"group/reward_std/mean": falling_sigma,
                                                                  **score(0.5)}),
        ("reward_std_collapse", "fall_solved"): lambda: make_run({"group/reward_std/mean": falling_sigma,
                                                                  **score(0.95)}),
        ("reward_std_collapse", "fall_converged"): lambda: make_run({"group/reward_std/mean": falling_sigma,
                                                                     **score(ramp(0.2, 0.7, 100, 290))}),
        ("reward_std_collapse", "fall_live"): lambda: make_run({"group/reward_std/mean": falling_sigma,
                                                                "group/zero_std/share": np.full(N, 0.2)}),
        ("advantage_collapse", "ok"): lambda: make_run(simulate(Scenario())),
        ("advantage_collapse", "dead"): lambda: make_run({"critic/advantages/max": np.where(T % 8 == 0, 0.0, 1.79),
                                                          "critic/advantages/min": np.where(T % 8 == 0, 0.0, -1.79)}),
        ("advantage_collapse", "collapse"): lambda: make_run({"critic/advantages/max": step_to(1.79, 0.0, 200),
                                                              "critic/advantages/min": step_to(-1.79, 0.0, 200)}),
        ("reward_passk_decoupling", "ok"): lambda: passk_run(ramp(0.6, 0.9, 0, N)),
        ("reward_passk_decoupling", "warn"): flat_passk,
        ("reward_passk_decoupling", "fail"): lambda: passk_run(ramp(0.8, 0.6, 0, N)),
        ("reward_passk_decoupling", "no_passk"): lambda: make_run(score(0.5)),
        ("reward_passk_decoupling", "at_ceiling"): lambda: passk_run(np.ones(N)),
        ("diversity_collapse", "short"): lambda: make_run({"diversity/distinct_1": np.full(20, 0.5)}),
        ("diversity_collapse", "ok"): lambda: make_run({"diversity/distinct_1": np.full(N, 0.5)}),
        ("diversity_collapse", "fall"): lambda: make_run({"diversity/distinct_2": step_to(0.6, 0.15, 150, sd=0.03)}),
        ("diversity_collapse", "rise"): lambda: make_run({"diversity/embedding_cosine": rising_cosine}),
        ("group_size_concentration", "ok"): lambda: make_run({STEP_GROUPS: np.full(N, 3.0)}, config=n8),
        ("group_size_concentration", "warn"): lambda: make_run({STEP_GROUPS: ramp(3, 7.6, 100, 130)}, config=n8),
        ("group_size_concentration", "ok_unknown_n"): lambda: make_run({STEP_GROUPS: np.full(N, 3.0)}),
        ("group_size_concentration", "warn_rising"): lambda: make_run({STEP_GROUPS: ramp(3, 7.6, 100, 130)}),
    }


CASES = _cases()


@pytest.mark.parametrize("case", sorted(CASES), ids=lambda c: f"{c[0]}-{c[1]}")
def test_every_template_formats_in_both_languages(case: tuple[str, str]) -> None:
    check_id, template = case
    run = CASES[case]()
    assert template in [o.template for o in outcomes(run, check_id)]
    for f in findings(run, check_id):
        for lang in ("en", "zh"):
            assert f.message[lang] and "{" not in f.message[lang] and "}" not in f.message[lang], f.message[lang]
            assert f.title[lang] and f.advice[lang]


def test_the_cases_cover_every_template_of_every_l3_l4_check() -> None:
    checks = {c.id: c for c in load_checks()}
    assert {c.id for c in checks.values() if c.layer in ("L3", "L4") and c.id in L3 + L4} == set(L3 + L4)
    for cid in L3 + L4:
        assert checks[cid].layer == ("L3" if cid in L3 else "L4")
        assert set(checks[cid].en.messages) == set(checks[cid].zh.messages), cid
        assert {t for c, t in CASES if c == cid} == set(checks[cid].en.messages), cid
        assert all(isinstance(v, (int, float)) for v in checks[cid].params.values()), cid


# ---------------------------------------------------------------- real logs


def test_deepseek_grpo_learning_signal(real: Path) -> None:
    # GRPO with n=5: the advantage range stays at ±1.789 (one correct of five) on every step — never a dead
    # batch — while the train reward saturates at 0.97; validation logs only mean@1, so pass@k is not judged
    d = diagnose(rlvitals.load(real / "verl__verl_training_log__grpo_run_deepseek7b_llm.log")[0])
    adv = finding(d, "advantage_collapse")
    assert adv.status == "ok" and adv.evidence == {} and "3.58" in adv.message["en"]
    assert finding(d, "reward_passk_decoupling").status == "skipped"


def test_trl_notebook_runs_waste_a_quarter_of_their_steps(real: Path) -> None:
    """One prompt per step: a step with reward_std exactly 0 had its only group dead. How bad depends on
    where (the corpus labels): Qwen2.5-3B's first half is 42 % dead (worst fifth 52 %: at risk, a warning);
    the checkpoint-250 run's 26 % is scattered while the reward climbs (worst fifth 38 %: a note)."""
    for name, share, status in (("trl-unsloth__notebooks__Qwen2.5_3B-GRPO.training_table.csv", 0.31, "warn"),
                                ("trl__UnslothGRPO__checkpoint-250_trainer_state.json", 0.26, "note")):
        f = finding(diagnose(rlvitals.load(real / name)[0]), "reward_std_collapse")
        assert f.status == status and f.evidence["zero_steps"] == pytest.approx(share, abs=0.01), name


def test_a_short_run_of_dead_steps_is_judged_on_its_few_records() -> None:
    """Real (corpus trlconsole__nips-grpo-dynamics__qwen35-9b-g3-nosignal-oom): reward_std 0 on all 14
    records before the OOM — no window is needed to see that nothing was learned."""
    run = corpus_run("trlconsole__nips-grpo-dynamics__qwen35-9b-g3-nosignal-oom")
    f = finding(diagnose(run), "reward_std_collapse")
    assert f.status == "fail" and f.onset_step == 1


def test_dead_steps_have_the_reward_at_its_top_only_in_its_top_tenth_and_untruncated() -> None:
    """"With the reward at its top there" (dead_easy) needs the reward at the dead steps in the top tenth of its
    range (the batch min..max) and answers not cut at the length limit: the run's own 90th percentile said so of
    a reward at 0 (corpus made__trl-cpu__grpo-lr-too-high) and of batches 88-100 % truncated."""
    dead = T % 4 == 0
    batch = {"group/reward_std/mean": np.where(dead, 0.0, 0.5), "critic/score/min": np.zeros(N),
             "critic/score/max": np.ones(N)}
    top = np.where(dead, 0.97 + 0.01 * np.sin(T), 0.5)
    said = finding(diagnose(make_run({**batch, "critic/score/mean": top})), "reward_std_collapse")
    assert said.template == "dead_easy" and "at its top" in said.message["en"]
    for other in ({"critic/score/mean": np.where(dead, 0.7 + 0.01 * np.sin(T), 0.5)},
                  {"critic/score/mean": top, "response_length/clip_ratio": np.full(N, 0.5)}):
        f = finding(diagnose(make_run({**batch, **other})), "reward_std_collapse")
        assert f.template == "dead" and "at its top" not in f.message["en"] and "处于顶部" not in f.message["zh"]


def test_a_reward_the_same_for_every_completion_is_named_the_cause() -> None:
    """Real (corpus made__trl-cpu__grpo-constant-reward): a reward function returning 1.0 for every completion;
    frac_reward_zero_std 1.0 and reward 1.0 on all 30 steps, while clipped_ratio varies 0.5-1.0 — the answers
    differ, their scores do not. The made grpo-tiny-length run (every answer cut at a 4-token cap, reward 0
    throughout) is not: answers all cut are alike, and the limit is the cause."""
    d = diagnose(corpus_run("made__trl-cpu__grpo-constant-reward"))
    f = finding(d, "zero_variance_groups")
    assert (f.status, f.template, f.onset_step) == ("fail", "constant", 1)
    assert "the reward was exactly 1 on every step" in f.message["en"] and "reward 函数区分不了答案" in f.message["zh"]
    assert finding(d, "reward_std_collapse").template == "dead_constant"
    assert d.headline is not None and d.headline.finding.check == "zero_variance_groups"
    cut = diagnose(corpus_run("made__trl-cpu__grpo-tiny-length"))
    assert finding(cut, "zero_variance_groups").template == "unknown"
    assert cut.headline is not None and cut.headline.finding.check == "response_clip_high"
    # a reward that varied before settling at its top is a solved batch, not a reward blind to the answers
    learnt = {"group/zero_std/share": np.where(T > 100, 1.0, 0.2),
              "critic/score/mean": np.where(T > 100, 1.0, 0.5 + 0.004 * T), "critic/score/min": np.zeros(N),
              "critic/score/max": np.ones(N)}
    assert finding(diagnose(make_run(learnt)), "zero_variance_groups").template != "constant"


def test_gpt_oss_two_rollout_sigma_is_dead_steps_not_a_collapse(real: Path) -> None:
    name = "trl-unsloth__notebooks__gpt_oss_20B_Reinforcement_Learning_2048_Game_BF16.training_table.csv"
    run = rlvitals.load(real / name)[0]
    f = finding(diagnose(run), "reward_std_collapse")
    assert f.status == "warn" and "exactly 0" in f.message["en"]
    assert f.evidence["zero_steps"] == pytest.approx(0.45, abs=0.01)


def test_zero_variance_is_dated_where_its_lasting_regime_starts() -> None:
    """The 7B entropy blow-up (TRL console, every 5 steps): a competent start whose groups are nearly all
    right (frac_reward_zero_std 0.8-1.0 at steps 5-20, reward 0.825-0.95), then a broken policy whose groups
    are all wrong (reward 0 from step 30, share 1.0): one stretch above the level, two opposite conditions.
    The lasting one starts at the break, not at step 5 (which a healthy competent run shows too)."""
    run = corpus_run("trlconsole__nips-grpo-dynamics__qwen25-7b-grpo-entropy-blowup")
    d = diagnose(run)
    groups, spread = finding(d, "zero_variance_groups"), finding(d, "reward_std_collapse")
    assert groups.status == "fail" and 25 <= groups.onset_step <= 30, groups.onset_step
    assert spread.status == "fail" and 25 <= spread.onset_step <= 30, spread.onset_step
    # without the reward's move the stretch is one regime, dated where it starts
    steady = make_run({"group/zero_std/share": np.full(100, 0.9), "critic/score/mean": np.full(100, 0.95)},
                      config={"algorithm.adv_estimator": "grpo"})
    assert finding(diagnose(steady), "zero_variance_groups").onset_step == 1

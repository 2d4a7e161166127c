"""Reward hacking through one reward function (checks/rewards.py, docs/reading-rules.md#reward-component-hacking).

Real runs that must stay quiet: the Unsloth Llama-3.1-8B GRPO notebook (five reward functions, correctness
driving the total), the corpus's TRL trainer states and notebooks with several reward functions (a format reward
rising while a tiny model's accuracy stays at noise). No public log in the corpus shows the hacking itself, so
the firing cases are constructed TRL trainer states (``trainer_state.json`` as TRL writes it, read by the real
reader), each test saying what it holds; every template is formatted in both languages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from runs import corpus_input, finding, make_run

import rlvitals
from rlvitals.checks import load_checks
from rlvitals.checks.rewards import accuracy_like
from rlvitals.diagnosis import diagnose
from rlvitals.run.run import Run

CHECK = "reward_component_hacking"
N = 120


def trainer_state(tmp: Path, components: Mapping[str, np.ndarray], suffix: str = "/mean") -> Run:
    """A TRL trainer_state.json whose log_history holds the reward functions ``components`` (``rewards/<fn>/mean``,
    or ``rewards/<fn>`` as TRL before 0.17 wrote them with ``suffix=""``) and their sum as ``reward``."""
    rng = np.random.default_rng(1)
    n = len(next(iter(components.values())))
    hist = []
    for i in range(n):
        row = {"step": i + 1, "loss": 0.01, "grad_norm": 0.3 + 0.01 * float(rng.normal()), "learning_rate": 1e-6,
               "kl": 0.01 * i / n, "completion_length": 200 + float(rng.normal(0, 5)), "reward_std": 0.3,
               "reward": float(sum(c[i] for c in components.values()))}
        row |= {f"rewards/{k}{suffix}": float(v[i]) for k, v in components.items()}
        hist.append(row)
    path = tmp / "trainer_state.json"
    path.write_text(json.dumps({"global_step": n, "log_history": hist}), encoding="utf-8")
    (run,) = rlvitals.load(str(path))
    return run


def _curves(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The reports' case: a format reward 0.1 → 1.0 while the accuracy reward goes 0.3 → 0 (batch noise on both)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, N)
    return (np.clip(0.1 + 0.9 * t + rng.normal(0, 0.05, N), 0, 1),
            np.clip(0.3 - 0.3 * t + rng.normal(0, 0.04, N), 0, 1))


@pytest.mark.parametrize("suffix", ["/mean", ""], ids=["trl>=0.17", "trl<0.17"])
def test_format_rising_while_accuracy_falls_fails(tmp_path: Path, suffix: str) -> None:
    fmt, acc = _curves()
    f = finding(diagnose(trainer_state(tmp_path, {"format_reward": fmt, "accuracy_reward": acc}, suffix)), CHECK)
    assert f.status == "fail"
    v = f.evidence
    assert (v["rose"], v["fell"]) == ("reward_fn/format_reward/mean", "reward_fn/accuracy_reward/mean")
    assert v["rose_from"] < 0.2 and v["rose_to"] > 0.9 and v["fell_from"] > 0.2 and v["fell_to"] < 0.05
    assert 20 <= f.onset_step <= 50, f.onset_step
    assert "through format_reward, not the task" in f.message["en"]
    assert "通过 format_reward 拿到奖励" in f.message["zh"]


def test_a_smaller_fall_of_accuracy_warns(tmp_path: Path) -> None:
    """Accuracy 0.45 → 0.3 (a third of it lost) while an XML-tag reward climbs: hacking under way, not done."""
    rng = np.random.default_rng(3)
    t = np.linspace(0, 1, N)
    tags, acc = 0.2 + 0.6 * t + rng.normal(0, 0.04, N), 0.45 - 0.15 * t + rng.normal(0, 0.02, N)
    f = finding(diagnose(trainer_state(tmp_path, {"xmlcount_reward_func": tags, "correctness_reward_func": acc})),
                CHECK)
    assert f.status == "warn" and f.template == "hacking"
    assert f.evidence["fell"] == "reward_fn/correctness_reward_func/mean" and f.evidence["share_lost"] < 0.5


def test_two_other_functions_trading_off_is_a_note(tmp_path: Path) -> None:
    """No accuracy-like name: a length bonus rising while a format reward falls is one reward bought with another."""
    rng = np.random.default_rng(4)
    t = np.linspace(0, 1, N)
    f = finding(diagnose(trainer_state(tmp_path, {"length_bonus": 0.1 + 0.8 * t + rng.normal(0, 0.03, N),
                                                  "format_reward": 0.9 - 0.5 * t + rng.normal(0, 0.03, N)})), CHECK)
    assert f.status == "note" and f.template == "trade_off"


def test_format_saturating_early_while_accuracy_rises_slowly_is_healthy(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    t = np.linspace(0, 1, N)
    fmt = np.clip(1 - 0.9 * np.exp(-30 * t) + rng.normal(0, 0.03, N), 0, 1)
    f = finding(diagnose(trainer_state(tmp_path, {"format_reward": fmt,
                                                  "accuracy_reward": 0.2 + 0.3 * t + rng.normal(0, 0.04, N)})), CHECK)
    assert f.status == "ok"


def test_accuracy_rising_while_a_penalty_deepens_is_no_hacking(tmp_path: Path) -> None:
    """The rising function is the accuracy itself: the task improves, whatever a length penalty does."""
    rng = np.random.default_rng(5)
    t = np.linspace(0, 1, N)
    f = finding(diagnose(trainer_state(tmp_path, {"accuracy_reward": 0.2 + 0.6 * t + rng.normal(0, 0.03, N),
                                                  "overlong_penalty": -0.5 * t + rng.normal(0, 0.03, N)})), CHECK)
    assert f.status == "ok"


def test_a_falling_total_is_left_to_reward_collapse(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    t = np.linspace(0, 1, N)
    f = finding(diagnose(trainer_state(tmp_path, {"format_reward": 0.1 + 0.2 * t + rng.normal(0, 0.02, N),
                                                  "accuracy_reward": 0.9 - 0.8 * t + rng.normal(0, 0.02, N)})), CHECK)
    assert f.status == "ok" and f.template == "total_falling"


@pytest.mark.parametrize("run_id", [
    "shared__unsloth_grpo_llama31_8b",                    # five functions, correctness drives the total
    "trlstate__qwen2-0p5b-grpo-numina-trl016",            # format rises, a 0.5B model's accuracy stays at noise
    "trlstate__gemma3-1b-grpo-gsm8k",
    "trlstate__schema-linking-dapo__qwen3-0.6b-lora-dapo-loss",  # seven functions over 1,705 steps
    "shared__unsloth_grpo_llama32_3b_advanced",
    "shared__unsloth_grpo_qwen25vl_7b",                   # formatting saturates, correctness flat
    "notebook__unsloth_gemma4_e2b_grpo",                  # noisy functions, total flat
    "trlconsole__trldapo_qwen25vl3b_grpo_collapse",       # one function falls, none rises
])
def test_real_runs_with_several_reward_functions_stay_quiet(run_id: str) -> None:
    (run,) = rlvitals.load(str(corpus_input(run_id)))
    f = finding(diagnose(run), CHECK)
    assert f.status in ("ok", "skipped"), (f.status, f.message["en"])


def test_skipped_without_two_functions_or_with_too_few_steps(tmp_path: Path) -> None:
    """One reward function is the total itself; a second function logged 6 times is too short to read."""
    t = np.linspace(0, 1, N)
    one = finding(diagnose(trainer_state(tmp_path, {"correct_sum": 0.2 + 0.5 * t})), CHECK)
    assert one.status == "skipped" and "two or more reward functions" in one.message["en"]
    fmt, acc = _curves()
    short = finding(diagnose(trainer_state(tmp_path, {"format_reward": fmt[::20], "accuracy_reward": acc[::20]})),
                    CHECK)
    assert short.status == "skipped" and "奖励函数" in short.message["zh"]


def test_validation_falling_while_a_function_rises_warns() -> None:
    """One non-accuracy reward function beside the total, and a veRL validation curve that falls."""
    rng = np.random.default_rng(7)
    t = np.linspace(0, 1, N)
    style = 0.1 + 0.8 * t + rng.normal(0, 0.03, N)
    answer = 0.5 + 0.05 * rng.normal(size=N)
    val = np.full(N, np.nan)
    val[::10] = 0.6 - 0.2 * t[::10] + rng.normal(0, 0.01, len(val[::10]))
    run = make_run({"critic/score/mean": style + answer, "reward_fn/style_reward/mean": style,
                    "reward_fn/answer_given/mean": answer, "val-core/gsm8k/acc/mean@1": val})
    f = finding(diagnose(run), CHECK)
    assert f.status in ("warn", "fail") and f.template == "validation", f.message["en"]
    assert f.evidence["rose"] == "reward_fn/style_reward/mean" and "gsm8k" in str(f.evidence["fell"])


def test_accuracy_like_names_come_from_the_catalog() -> None:
    assert [accuracy_like(n) for n in ("accuracy_reward", "correctness_reward_func", "math_verify", "acc",
                                       "isCorrect", "check_answer", "format_reward", "accept_rate")] == \
        [True, True, True, True, True, False, False, False]


def test_every_template_formats_in_both_languages() -> None:
    (check,) = [c for c in load_checks() if c.id == CHECK]
    values = {"components": "a, b", "total": "critic/score/mean", "total_from": 0.1, "total_to": 0.9, "rose": "a",
              "rose_from": 0.1, "rose_to": 0.9, "rose_step": 10, "fell": "b", "fell_from": 0.3, "fell_to": 0.0,
              "fell_step": 12, "fell_share": 1.0, "onset": 12, "fail_loss": 0.5}
    for lang in ("en", "zh"):
        text = check.text(lang)
        for name, template in text.messages.items():
            said = template.format(**values)
            assert "{" not in said and said, (lang, name)
        assert text.advice and text.advice_for("trade_off") != text.advice

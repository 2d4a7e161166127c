"""Degenerate text in the responses (checks/degeneration.py, docs/reading-rules.md#text-degeneration), on the path a
user takes: rollouts → analyze_rollouts → joined onto the run → diagnose.

Real text: the 576 training rollouts of the corpus's Logic-RL run (healthy: must stay quiet), and responses the
real SmolLM2-135M-Instruct samples at temperature 0.7 and at 2.5 (garbage; marked ``model``). The loops and the
glued words are constructed by editing the real Logic-RL responses from a given step on (each test says how), as
no public dump shows them; every template is formatted in both languages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from optional import unavailable
from runs import finding, make_run

from checks.test_rollout import logic_rl_rollouts
from rlvitals.checks import load_checks
from rlvitals.diagnosis import diagnose
from rlvitals.rollout.analysis import analyze_rollouts

CHECK = "text_degeneration"
Edit = Callable[[str], str]


def _diagnosed(edit: Edit | None = None, since: int = 5, reward_rises: bool = False) -> Any:
    """The Logic-RL rollouts (steps 1–9), ``edit`` applied to every response from step ``since`` on, joined onto a
    run logging a training reward (flat, or rising through the run)."""
    rows = logic_rl_rollouts()
    records = [{"step": s, "prompt": r["prompt"], "score": r["score"],
                "response": edit(r["response"]) if edit is not None and s >= since else r["response"]}
               for s, rs in rows.items() for r in rs]
    steps = sorted(rows)
    reward = np.linspace(0.1, 0.9, len(steps)) if reward_rises else np.full(len(steps), 0.5)
    run = make_run({"critic/score/mean": reward, "actor/entropy": np.full(len(steps), 0.4)}, steps=steps)
    return diagnose(analyze_rollouts(records).join(run))


def test_real_healthy_rollouts_stay_quiet() -> None:
    f = finding(_diagnosed(), CHECK)
    assert f.status == "ok", f.message["en"]
    assert "0%" in f.message["en"] and "0.0%" in f.message["zh"]


def test_a_loop_appended_to_every_response_fails_from_its_step() -> None:
    """From step 5 every response ends in the same phrase written 20 times: the loop that runs to the limit."""
    f = finding(_diagnosed(lambda r: r + " Let me check again." * 20), CHECK)
    assert f.status == "fail" and f.template == "runs_fail"
    assert f.onset_step == 5 and f.metrics[0] == "rollout/degenerate/char_run"
    assert "looping" in f.message["en"] and "打转" in f.message["zh"]


def test_loops_in_a_quarter_of_the_responses_warn() -> None:
    """A run of '!' in every fourth response (by its length) from step 4."""
    f = finding(_diagnosed(lambda r: r + "!" * 40 if len(r) % 4 == 0 else r, since=4), CHECK)
    assert f.status in ("warn", "fail") and f.template.startswith("runs_")


def test_glued_words_rising_warn_and_say_the_reward_paid() -> None:
    """From step 5 every second pair of words is glued as a model writing garbage glues them ("todayPositive"),
    while the training reward keeps rising: the non-word share rises from 0."""
    def glue(text: str) -> str:
        words = text.split()
        out = [a + (b[:1].upper() + b[1:] if a.isalpha() and b.isalpha() and len(a) >= 4 and len(b) >= 3 else " " + b)
               for a, b in zip(words[::2], words[1::2], strict=False)]
        return " ".join(out)

    f = finding(_diagnosed(glue, reward_rises=True), CHECK)
    assert f.status == "warn" and f.template.startswith("nonwords_"), f.message["en"]
    assert f.onset_step is not None and 4 <= f.onset_step <= 6
    assert f.evidence["reward_to"] > f.evidence["reward_from"]
    assert "乱码" in f.message["zh"] or "退化" in f.message["zh"]


def test_a_collapsing_vocabulary_warns() -> None:
    """From step 5 each response keeps its length but only its first eight words, repeated in turn."""
    def narrow(text: str) -> str:
        words = text.split()
        return " ".join(words[i % 8] for i in range(len(words)))

    f = finding(_diagnosed(narrow), CHECK)
    assert f.status in ("warn", "fail"), f.message["en"]
    assert f.template in ("vocab", "runs_fail", "runs_warn", "runs_rising")


def test_skipped_without_response_text_or_with_too_few_steps() -> None:
    run = make_run({"critic/score/mean": np.linspace(0, 1, 20)})
    assert finding(diagnose(run), CHECK).status == "skipped"
    records = [{"step": s, "prompt": "p", "response": "The answer is 4.", "score": 1.0} for s in (1, 2)]
    short = finding(diagnose(analyze_rollouts(records).join(make_run({"critic/score/mean": [0.1, 0.2]}))), CHECK)
    assert short.status == "skipped" and "2" in short.message["en"] and "2" in short.message["zh"]


def test_every_template_formats_in_both_languages() -> None:
    (check,) = [c for c in load_checks() if c.id == CHECK]
    values = {"runs": 0.0, "nonwords": 0.01, "n": 2, "needed": 3, "onset": 4, "end": 9, "steps": 6, "level": 0.6,
              "peak": 0.7, "threshold": 0.5, "first": 0.01, "last": 0.2, "rise": 0.1, "ratio_first": 0.5,
              "ratio_last": 0.2}
    for lang in ("en", "zh"):
        for name, template in check.text(lang).messages.items():
            said = template.format(**values)
            assert said and "{" not in said, (lang, name)


@pytest.mark.model
def test_real_garbage_from_the_small_model_reads_as_non_words() -> None:
    """SmolLM2-135M-Instruct sampled at temperature 2.5 writes garbage; at 0.7 it writes sentences."""
    from rlvitals.synthetic.sampler import INSTALL, load_policy, missing_packages, sample_steps

    if missing_packages():
        unavailable(f"the small model needs {missing_packages()}; install with: {INSTALL}")
    policy = load_policy()
    shares = {}
    for temperature in (0.7, 2.5):
        records = [r for _, rs in sample_steps(policy, steps=1, prompts=2, samples=4, max_new_tokens=64,
                                               temperature=temperature, seed=1) for r in rs]
        a = analyze_rollouts(records)
        shares[temperature] = a.steps["rollout/degenerate/nonword"].to_list()[0]
    assert shares[0.7] <= 0.01 and shares[2.5] >= 0.04, shares

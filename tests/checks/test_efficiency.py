"""Efficiency checks: time breakdown, generation vs update, throughput, MFU, load balance and
memory pressure — on simulated runs with injected slowdowns, healthy controls and the real logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runs import finding, make_run

import rlvitals
from rlvitals.checks import RunView, load_checks
from rlvitals.checks.config import CheckSettings, DiagnoseConfig
from rlvitals.diagnosis import _finding, diagnose
from rlvitals.run.run import Run
from rlvitals.synthetic.pathologies import Spec, scenario
from rlvitals.synthetic.simulate import Scenario, simulate

MINE = ("time_breakdown", "gen_update_balance", "throughput_drop", "mfu_low", "seqlen_imbalance", "oom_risk")
CONFIG = {"algorithm.adv_estimator": "grpo", "data.max_response_length": 1024}
T = np.arange(1, 301, dtype=float)
LATE = T >= 150


def series(**kw: Any) -> dict[str, np.ndarray]:
    return scenario(Spec(300, **kw))


def run(s: dict[str, np.ndarray], config: dict[str, Any] | None = None) -> Run:
    return make_run(s, config=CONFIG if config is None else config)


def no_placeholder(f: Any) -> None:
    for lang in ("en", "zh"):
        assert "{" not in f.message[lang] and f.message[lang], (f.check, lang, f.message[lang])


def dec2024(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The keys a Dec-2024 veRL log has: phase timers, no step total, no throughput or MFU."""
    keep = ("timing_s/gen", "timing_s/ref", "timing_s/update_actor", "timing_s/adv", "response_length/mean",
            "prompt_length/mean", "critic/score/mean", "actor/entropy")
    return {k.replace("timing_s/", "timing/"): v for k, v in s.items() if k in keep}


# -- time_breakdown --------------------------------------------------------------------------------

def test_time_breakdown_ranks_the_phases_of_a_healthy_run() -> None:
    f = finding(diagnose(run(series())), "time_breakdown")
    assert f.status == "ok" and "the largest share is gen at 55%" in f.message["en"]
    assert "Shares of the step time: gen 55%, update_actor 31%" in f.message["en"]
    assert "占比最大的是 gen，55%" in f.message["zh"]
    assert f.evidence["shares"]["gen"] == pytest.approx(0.55, abs=0.01)


def test_a_slow_reward_is_a_note_from_the_step_it_became_slow() -> None:
    s = series()
    s["timing_s/reward"] = np.where(T >= 100, 150.0, s["timing_s/reward"])
    s["timing_s/step"] = s["timing_s/step"] + np.where(T >= 100, 150.0, 0.0)
    f = finding(diagnose(run(s)), "time_breakdown")
    assert f.status == "note" and abs(f.onset_step - 100) <= 6
    assert f.message["en"].startswith("Computing the reward takes 3") and "model-based" in f.message["en"]
    assert "用模型打分" in f.message["zh"] and f.evidence["phase"] == "reward"


def test_a_heavy_recompute_phase_is_named_in_a_note() -> None:
    s = series()
    s["timing_s/old_log_prob"] = s["timing_s/old_log_prob"] + 120.0
    s["timing_s/step"] = s["timing_s/step"] + 120.0
    f = finding(diagnose(run(s)), "time_breakdown")
    assert f.status == "note" and f.message["en"].startswith("old_log_prob takes 4") and f.onset_step == 1


def test_time_breakdown_without_a_step_total_sums_the_phases() -> None:
    f = finding(diagnose(run(dec2024(series()))), "time_breakdown")
    assert f.status == "ok" and f.message["en"].startswith("No step total was logged; summing the phases")


# -- gen_update_balance ----------------------------------------------------------------------------

def test_generation_to_update_ratio_and_its_drift() -> None:
    ok = finding(diagnose(run(series())), "gen_update_balance")
    assert ok.status == "ok" and "Generation takes 1.8× the update time" in ok.message["en"]
    assert "generation-bound" in ok.message["en"]
    s = series()
    s["timing_s/gen"] = np.where(LATE, 3 * s["timing_s/gen"], s["timing_s/gen"])
    f = finding(diagnose(run(s)), "gen_update_balance")
    assert f.status == "note" and abs(f.onset_step - 150) <= 5 and "grew 3.1× (from 1.8× to 5.4×" in f.message["en"]
    assert "response length 199 → 247" in f.message["en"]
    s = series()
    s["timing_s/update_actor"] = np.where(LATE, 4 * s["timing_s/update_actor"], s["timing_s/update_actor"])
    f = finding(diagnose(run(s)), "gen_update_balance")
    assert f.status == "note" and abs(f.onset_step - 150) <= 5 and "fell to 0.25×" in f.message["en"]
    fast = series()
    fast["timing_s/gen"] = fast["timing_s/gen"] / 5
    f = finding(diagnose(run(fast)), "gen_update_balance")
    assert f.status == "ok" and "0.35× the update time" in f.message["en"] and "update-bound" in f.message["en"]


# -- throughput_drop -------------------------------------------------------------------------------

def test_injected_throughput_drop_is_found_at_its_step() -> None:
    f = finding(diagnose(run(series(pathology="throughput_drop", at=150))), "throughput_drop")
    assert f.status == "note" and f.onset_step == 150 and "Throughput dropped 30% at step 150" in f.message["en"]
    assert "骤降 30%" in f.message["zh"]
    ok = finding(diagnose(run(series())), "throughput_drop")
    assert ok.status == "ok" and "no sudden drop or steady decline" in ok.message["en"]


def test_a_drop_that_follows_shorter_responses_is_explained_not_noted() -> None:
    # the example's entropy collapse at step 180 shrinks the answers: tokens per step fall ~30%
    f = finding(diagnose(run(simulate(Scenario()))), "throughput_drop")
    assert f.status == "ok" and "the tokens per step fell 3" in f.message["en"]
    assert "at step 18" in f.message["en"] and "不是机器变慢了" in f.message["zh"]


def test_a_steady_throughput_decline() -> None:
    s = series()
    s["perf/throughput"] = s["perf/throughput"] * np.linspace(1.0, 0.45, 300)
    f = finding(diagnose(run(s)), "throughput_drop")
    assert f.status == "note" and "declined steadily" in f.message["en"] and 60 <= f.onset_step <= 160


def test_validation_steps_do_not_count_as_throughput_drops() -> None:
    s = series()
    testing = np.where(T % 10 == 0, 60.0, np.nan)
    s["timing_s/testing"] = testing
    s["perf/throughput"] = np.where(T % 10 == 0, 0.4 * s["perf/throughput"], s["perf/throughput"])
    assert finding(diagnose(run(s)), "throughput_drop").status == "ok"


def test_without_throughput_the_step_time_per_token_is_read() -> None:
    s = dec2024(series())
    ok = finding(diagnose(run(s)), "throughput_drop")
    assert ok.status == "ok" and ok.message["en"].startswith("Throughput is not logged; the tokens per second")
    s["timing/gen"] = np.where(LATE, 2.5 * s["timing/gen"], s["timing/gen"])
    f = finding(diagnose(run(s)), "throughput_drop")
    assert f.status == "note" and abs(f.onset_step - 150) <= 3 and "over timing_s/*) dropped" in f.message["en"]
    slow = dec2024(series())
    slow["timing/update_actor"] = slow["timing/update_actor"] * np.linspace(1, 4, 300)
    f = finding(diagnose(run(slow)), "throughput_drop")
    assert f.status == "note" and "declined steadily" in f.message["en"]


def test_without_lengths_the_step_rate_is_read() -> None:
    s = {k: v for k, v in series().items() if k in ("timing_s/gen", "timing_s/update_actor", "timing_s/step",
                                                         "critic/score/mean")}
    assert finding(diagnose(run(s)), "throughput_drop").message["en"].startswith("Throughput is not logged; the step")
    s["timing_s/step"] = np.where(LATE, 2 * s["timing_s/step"], s["timing_s/step"])
    f = finding(diagnose(run(s)), "throughput_drop")
    assert f.status == "note" and f.message["en"].startswith("Steps became slower at step 15")


# -- mfu_low ---------------------------------------------------------------------------------------

def test_mfu_low_from_the_injected_step_and_ok_otherwise() -> None:
    f = finding(diagnose(run(series(pathology="mfu_low", at=150))), "mfu_low")
    assert f.status == "note" and abs(f.onset_step - 150) <= 5 and "below 30% from step 1" in f.message["en"]
    ok = finding(diagnose(run(series())), "mfu_low")
    assert ok.status == "ok" and ok.message["en"] == "MFU (median over the run): actor 38%, at or above 30%."


def test_the_mfu_threshold_can_be_overridden() -> None:
    r = run(series(pathology="mfu_low", at=150))
    d = diagnose(r, DiagnoseConfig({"mfu_low": CheckSettings(params={"low": 0.1})}))
    f = finding(d, "mfu_low")
    assert f.status == "ok" and "at or above 10%" in f.message["en"]


def test_an_all_zero_mfu_is_not_measured() -> None:
    s = series()
    s["perf/mfu/actor"] = np.zeros(300)
    f = finding(diagnose(run(s)), "mfu_low")
    assert f.status == "skipped" and "did not know this GPU's peak FLOPs" in f.message["en"]
    assert "并没有被测量" in f.message["zh"]
    s["perf/mfu/critic"] = np.full(300, 0.12)
    f = finding(diagnose(run(s)), "mfu_low")
    assert f.status == "note" and f.message["en"].startswith("MFU is low: critic 12%")
    assert f.evidence["unmeasured"] == ["perf/mfu/actor"]


# -- seqlen_imbalance ------------------------------------------------------------------------------

def test_imbalance_after_balancing_is_a_note() -> None:
    s = series()
    extra = 0.3 * s["global_seqlen/mean"] * (T >= 100)
    s["global_seqlen/balanced_max"] = s["global_seqlen/balanced_max"] + extra / 2
    s["global_seqlen/balanced_min"] = s["global_seqlen/balanced_min"] - extra / 2
    f = finding(diagnose(run(s)), "seqlen_imbalance")
    assert f.status == "note" and abs(f.onset_step - 100) <= 6 and "Even after balance_batch" in f.message["en"]
    ok = finding(diagnose(run(series())), "seqlen_imbalance")
    assert ok.status == "ok" and "After balance_batch the heaviest rank carries 0.0% more" in ok.message["en"]


def test_plain_split_imbalance_without_balanced_keys() -> None:
    s = {k: v for k, v in series().items() if "balanced" not in k}
    assert finding(diagnose(run(s)), "seqlen_imbalance").status == "ok"
    s["global_seqlen/minmax_diff"] = s["global_seqlen/minmax_diff"] + 0.3 * s["global_seqlen/mean"] * (T >= 100)
    f = finding(diagnose(run(s)), "seqlen_imbalance")
    assert f.status == "note" and abs(f.onset_step - 100) <= 6 and "other ranks wait" in f.message["en"]


def test_imbalance_before_balancing_only_is_not_a_problem() -> None:
    # veRL's minmax_diff is the plain split *before* balance_batch; the balanced ranks are even
    s = series()
    extra = 0.45 * s["global_seqlen/mean"] * (np.arange(1, 301) >= 150)
    s["global_seqlen/minmax_diff"] = s["global_seqlen/minmax_diff"] + extra
    s["global_seqlen/max"] = s["global_seqlen/max"] + extra / 2
    s["global_seqlen/min"] = s["global_seqlen/min"] - extra / 2
    f = finding(diagnose(run(s)), "seqlen_imbalance")
    assert f.status == "ok" and "before balancing would have been 45.0%" in f.message["en"]


def test_imbalance_that_survives_balancing_is_a_note() -> None:
    f = finding(diagnose(run(series(pathology="seqlen_imbalance", at=150))), "seqlen_imbalance")
    assert f.status == "note" and abs(f.onset_step - 150) <= 2


# -- oom_risk --------------------------------------------------------------------------------------

def test_growing_per_rank_tokens_are_a_note_without_a_memory_reading() -> None:
    """Tokens per rank say how the load grows, not how close the memory is to its end: a note, which the
    peak-memory reading below turns into a warning."""
    f = finding(diagnose(run(series(pathology="oom_risk", at=150))), "oom_risk")
    assert f.status == "note" and 150 <= f.onset_step <= 180 and "memory pressure is rising" in f.message["en"]
    assert "Longest response 1024 / 1024" in f.message["en"]


def test_growing_peak_memory_warns() -> None:
    s = series()
    s["perf/max_memory_allocated_gb"] = np.where(T >= 100, 40 + 0.3 * (T - 100), 40.0)
    f = finding(diagnose(run(s)), "oom_risk")
    assert f.status == "warn" and f.message["en"].startswith("Peak GPU memory (perf/max_memory_allocated_gb) grew")
    assert 100 <= f.onset_step <= 190


def test_reaching_the_response_cap_is_reported_not_warned() -> None:
    f = finding(diagnose(run(series())), "oom_risk")
    assert f.status == "ok" and "reached its cap at step 14" in f.message["en"]
    f = finding(diagnose(run(series(), config={})), "oom_risk")
    assert f.status == "ok" and f.message["en"].startswith("No growing memory pressure")
    assert f.metrics[0] == "global_seqlen/max" and "response_length/max" in f.metrics  # what it judged


def test_lengths_below_their_cap_alone_judge_nothing() -> None:
    """Without the tokens per rank or the memory, a response length below its cap says nothing of memory
    pressure: the check says what it needs (it said "no growing memory pressure", and the efficiency layer of
    an Unsloth table was ok on nothing)."""
    lengths = {"response_length/max": np.full(len(T), 300.0), "prompt_length/max": np.full(len(T), 200.0)}
    d = diagnose(run(lengths))
    f = finding(d, "oom_risk")
    assert f.status == "skipped" and "global_seqlen/max" in f.message["en"] and "回复长度" in f.message["zh"]
    assert d.layers["efficiency"] == "skipped"
    capped = finding(diagnose(run({**lengths, "response_length/max": np.full(len(T), 1024.0)})), "oom_risk")
    assert capped.status == "ok" and "at its cap" in capped.message["en"] and capped.metrics == (
        "response_length/max", "prompt_length/max")


# -- the real logs ---------------------------------------------------------------------------------

GRPO = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
PPO = "verl__verl_training_log__ppo_run_deepseek7b_llm.log"
QWEN = "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log"
GEMMA = "verl__verl-data__gemma-2-2b-it-ppo-bsz512_4-prompt1024-resp-512-0.640.log"
MEGATRON = "verl__verldata__qwen2-7b_math_megatron.log"

# what a careful engineer reads in each log (status, words in the English message)
REAL = {
    GRPO: {"time_breakdown": ("ok", "the largest share is gen at 50%"),
           "gen_update_balance": ("ok", "Generation takes 1.6× the update time"),
           "throughput_drop": ("ok", "Throughput 1842 → 1920 tokens/s/GPU"),
           "mfu_low": ("note", "MFU is low: actor 19%"),
           "seqlen_imbalance": ("ok", "before balancing would have been 7.1%"),
           "oom_risk": ("ok", "longest response 1024 / 1024, longest prompt 235 / 512")},
    PPO: {"time_breakdown": ("ok", "gen 55%, update_actor 15%, update_critic 13%"),
          "mfu_low": ("note", "actor 14%, critic 17%"),
          "throughput_drop": ("ok", "732.3 → 751.9")},
    # Dec 2024: timing/* without a step total, no throughput, no MFU, no global_seqlen
    QWEN: {"time_breakdown": ("ok", "summing the phases, a step takes 66.3 s (median) and the largest share is "
                                    "update_actor at 29%"),
           "gen_update_balance": ("ok", "0.48× the update time"),
           "throughput_drop": ("ok", "Throughput is not logged"),
           "mfu_low": ("skipped", "needs perf/mfu/actor"),
           "seqlen_imbalance": ("skipped", "needs global_seqlen/mean"),
           "oom_risk": ("ok", "sits at its cap on most steps (512 / 512)")},
    GEMMA: {"time_breakdown": ("ok", "the largest share is gen at 31%"),
            "mfu_low": ("skipped", "did not log")},
    MEGATRON: {"time_breakdown": ("ok", "update_actor 49%, old_log_prob 23%, gen 20%"),
               "gen_update_balance": ("ok", "update-bound"),
               "mfu_low": ("note", "actor 22%"),
               "oom_risk": ("ok", "(1024 / 1024)")},
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_logs(real: Path, name: str) -> None:
    d = diagnose(rlvitals.load(real / name)[0])
    for check, (status, words) in REAL[name].items():
        f = finding(d, check)
        assert f.status == status and words in f.message["en"], (check, f.message["en"])


def test_no_fail_from_efficiency_checks_on_any_real_log(real: Path) -> None:
    for path in sorted(p for p in real.iterdir() if p.suffix not in (".txt", ".md")):
        d = diagnose(rlvitals.load(path)[0])
        for f in d.findings:
            if f.check in MINE:
                assert f.status in ADVISORY.get(f.check, ("ok", "note", "skipped")), (path.name, f.message["en"])
                no_placeholder(f)


# -- notes are advice, not a verdict ---------------------------------------------------------------

#: what each efficiency check may say: "could be better" is a note; only growing memory (a run at risk) warns
ADVISORY = {"oom_risk": ("ok", "note", "warn", "skipped")}


def test_efficiency_notes_leave_the_verdict_ok() -> None:
    # constructed: a healthy simulated run whose MFU falls to 17% at step 150 and whose reward takes 150 s a
    # step (no real log shows a run healthy in every other way with these two)
    s = series(pathology="mfu_low", at=150)
    s["timing_s/reward"] = np.full(300, 150.0)
    s["timing_s/step"] = s["timing_s/step"] + 150
    d = diagnose(run(s))
    notes = {f.check for f in d.findings if f.status == "note"}
    assert {"mfu_low", "time_breakdown"} <= notes
    assert d.layers["efficiency"] == "ok"
    assert all(f.status not in ("warn", "fail") for f in d.findings if f.layer == "efficiency")
    assert d.verdict == "ok", [(f.check, f.status) for f in d.findings if f.status in ("warn", "fail")]
    # the growing memory of the same run is a risk: it warns, and the layer says so
    s["perf/max_memory_allocated_gb"] = np.where(T >= 100, 40 + 0.3 * (T - 100), 40.0)
    d = diagnose(run(s))
    assert finding(d, "oom_risk").status == "warn" and d.layers["efficiency"] == "warn" and d.verdict == "warn"


# -- every template, both languages ---------------------------------------------------------------

def _runs() -> list[Run]:
    out = [run(series()), run(series(pathology="throughput_drop", at=150)), run(series(pathology="mfu_low", at=150)),
           run(series(pathology="oom_risk", at=150)), run(series(), config={})]
    reward = series()
    reward["timing_s/reward"] = np.full(300, 150.0)
    reward["timing_s/step"] = reward["timing_s/step"] + 150
    heavy = series()
    heavy["timing_s/ref"] = heavy["timing_s/ref"] + 150
    heavy["timing_s/step"] = heavy["timing_s/step"] + 150
    gen_up, upd_up = series(), series()
    gen_up["timing_s/gen"] = np.where(LATE, 3 * gen_up["timing_s/gen"], gen_up["timing_s/gen"])
    upd_up["timing_s/update_actor"] = np.where(LATE, 4 * upd_up["timing_s/update_actor"],
                                               upd_up["timing_s/update_actor"])
    decline = series()
    decline["perf/throughput"] = decline["perf/throughput"] * np.linspace(1.0, 0.45, 300)
    zero = series()
    zero["perf/mfu/actor"] = np.zeros(300)
    balanced = series()
    balanced["global_seqlen/balanced_max"] += 0.2 * balanced["global_seqlen/mean"]
    plain = {k: v for k, v in series().items() if "balanced" not in k}
    plain_bad = dict(plain)
    plain_bad["global_seqlen/minmax_diff"] = 0.3 * plain["global_seqlen/mean"]
    memory = series()
    memory["perf/max_memory_allocated_gb"] = 40 + 0.2 * T
    capped = series()
    capped["response_length/max"] = np.full(300, 1024.0)
    out += [run(x) for x in (reward, heavy, gen_up, upd_up, decline, zero, balanced, plain, plain_bad, memory, capped)]
    upd_bound = series()
    upd_bound["timing_s/gen"] = upd_bound["timing_s/gen"] / 5
    dec = dec2024(series())
    dec_shift = dict(dec)
    dec_shift["timing/gen"] = np.where(LATE, 2.5 * dec["timing/gen"], dec["timing/gen"])
    dec_slow = dict(dec)
    dec_slow["timing/update_actor"] = dec["timing/update_actor"] * np.linspace(1, 4, 300)
    bare = {k: v for k, v in series().items() if k in ("timing_s/gen", "timing_s/update_actor", "timing_s/step")}
    bare_shift = dict(bare)
    bare_shift["timing_s/step"] = np.where(LATE, 2 * bare["timing_s/step"], bare["timing_s/step"])
    bare_slow = dict(bare)
    bare_slow["timing_s/step"] = bare["timing_s/step"] * np.linspace(1, 3, 300)
    out += [run(x) for x in (upd_bound, dec, dec_shift, dec_slow, bare, bare_shift, bare_slow, simulate(Scenario()))]
    return out


def test_every_template_is_used_and_formats_in_both_languages() -> None:
    checks = {c.id: c for c in load_checks() if c.id in MINE}
    seen: set[tuple[str, str]] = set()
    for r in _runs():
        view = RunView(r)
        for check in checks.values():
            for out in check.fn(view, check.params):
                no_placeholder(_finding(check, out))
                seen.add((check.id, out.template))
                assert out.status in ADVISORY.get(check.id, ("ok", "note", "skipped")), (check.id, out.template)
    expected = {(c.id, name) for c in checks.values() for name in c.en.messages}
    assert expected - seen == set(), sorted(expected - seen)
    for c in checks.values():
        assert set(c.en.messages) == set(c.zh.messages), c.id
        assert all(isinstance(v, (int, float)) for v in c.params.values()), c.id

"""The story of a run's findings: links only where the mechanism, the timing and the evidence hold, and the
root cause that explains the most first."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import rlvitals
from rlvitals.story import Scale, tell

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"


@dataclass(frozen=True)
class F:
    check: str
    status: str
    onset_step: int | None
    span: tuple[int, int] | None = None
    points: tuple[int, ...] = ()
    metrics: tuple[str, ...] = ()
    template: str = "fail"


KL_IN_REWARD = ("actor/reward_kl_penalty",)


def _chain(story, root: int) -> list[str]:
    return [story.events[i].check for i in story.consequences(root)]


def test_a_kl_penalty_in_the_reward_explains_the_collapse_that_follows_it() -> None:
    found = [F("entropy_collapse", "fail", 12, (12, 60)), F("response_length_collapse", "fail", 7, (7, 60)),
             F("kl_band", "fail", 4, (4, 60), metrics=KL_IN_REWARD, template="fail_ceiling"),
             F("reward_collapse", "fail", 11, (11, 60), template="fail_unexplained")]
    story = tell(found, Scale(1, 60))
    assert story.headline is not None and story.headline.check == "kl_band" and len(story.roots) == 1
    assert _chain(story, story.roots[0]) == ["response_length_collapse", "reward_collapse", "entropy_collapse"]
    # the proximate cause: the entropy followed the length, not the KL directly
    by = {e.check: story.events[e.caused_by].check for e in story.events if e.caused_by is not None}
    assert by == {"response_length_collapse": "kl_band", "reward_collapse": "response_length_collapse",
                  "entropy_collapse": "response_length_collapse"}


def test_a_kl_that_is_not_in_the_reward_does_not_explain_short_answers() -> None:
    found = [F("kl_band", "fail", 4, (4, 60), metrics=("actor/kl_loss",), template="fail_ceiling"),
             F("response_length_collapse", "fail", 7, (7, 60))]
    story = tell(found, Scale(1, 60))
    assert len(story.roots) == 2 and all(e.caused_by is None for e in story.events)


def test_a_cause_dated_well_after_its_effect_explains_nothing() -> None:
    late = [F("response_clip_high", "warn", 80, (80, 200), template="warn"),
            F("throughput_drop", "warn", 50, (50, 200), template="warn")]
    story = tell(late, Scale(1, 200))
    assert all(e.caused_by is None for e in story.events), "truncation from 80 cannot explain a slowdown from 50"
    within = [F("response_clip_high", "warn", 53, (53, 200), template="warn"),
              F("throughput_drop", "warn", 50, (50, 200), template="warn")]
    story = tell(within, Scale(1, 200))  # 3 % of 200 steps: 6 steps of tolerance
    assert story.headline is not None and story.headline.check == "response_clip_high"


def test_a_reward_that_fell_before_the_answers_ran_on_explains_them() -> None:
    """Real shape (corpus trlconsole__nips-grpo-dynamics__qwen25-7b-adabalance-cap-collapse): the reward falls
    from step 70 while the answers still end (clipped_ratio 0.0 at 75), and they run to the cap from 85. A cause
    dated at or before its effect wins over one dated a little after it, within the tolerance."""
    found = [F("response_clip_high", "fail", 85, (85, 200), template="fail"),
             F("reward_collapse", "fail", 70, (70, 200), template="fail_clip")]
    story = tell(found, Scale(5, 200))
    assert story.headline is not None and story.headline.check == "reward_collapse"
    assert [story.events[i].link.id for i in story.consequences(story.roots[0])] == ["broken_policy_writes_on"]
    # answers cut first, the reward after: the cut answers score as wrong
    found = [F("response_clip_high", "fail", 60, (60, 200), template="fail"),
             F("reward_collapse", "fail", 70, (70, 200), template="fail_clip")]
    story = tell(found, Scale(5, 200))
    assert story.headline is not None and story.headline.check == "response_clip_high"


def test_a_mechanism_that_needs_its_cause_first_takes_no_cause_dated_after_the_effect() -> None:
    """tools_dropped_answers_degrade (timing "first"): answers worked out in text after the tools went. The
    corpus's qwen3-4b KL-in-reward run lost its score at step 2 and its tools from step 3: both the KL penalty's
    doing (its jump dated 4), not the score a consequence of the tools. Dated after the turns, it follows them."""
    kl = F("kl_jump", "fail", 4, (4, 261), metrics=KL_IN_REWARD, template="fail_early")
    found = [kl, F("reward_collapse", "fail", 2, (2, 261), template="fail_unexplained"),
             F("turns_collapse", "warn", 3, (3, 261), template="warn")]
    by = {e.check: story.events[e.caused_by].check for story in [tell(found, Scale(1, 261))]
          for e in story.events if e.caused_by is not None}
    assert by["reward_collapse"] == "kl_jump" and by["turns_collapse"] == "kl_jump"
    after = [F("turns_collapse", "warn", 3, (3, 261), template="warn"),
             F("reward_collapse", "fail", 5, (5, 261), template="fail_unexplained")]
    story = tell(after, Scale(1, 261))
    assert [story.events[i].link.id for i in story.consequences(story.roots[0])] == ["tools_dropped_answers_degrade"]


def test_the_effect_must_start_while_the_cause_lasts() -> None:
    over = [F("response_clip_high", "warn", 10, (10, 20), template="warn"),
            F("reward_collapse", "fail", 150, (150, 200), template="fail_clip")]
    assert all(e.caused_by is None for e in tell(over, Scale(1, 200)).events)


def test_a_sparse_validation_is_dated_to_its_evaluation_interval() -> None:
    found = [F("response_length_collapse", "fail", 34, (34, 60)), F("val_progress", "fail", 20, (20, 60),
                                                                  template="falling")]
    assert all(e.caused_by is None for e in tell(found, Scale(1, 60)).events)
    story = tell(found, Scale(1, 60), resolution=[1, 20])  # evaluated every 20 steps
    assert story.headline is not None and story.headline.check == "response_length_collapse"


def test_a_gradient_spike_moves_the_policy_only_at_its_own_step() -> None:
    spike = F("grad_norm_spike", "warn", 40, (40, 90), points=(40, 90), template="warn")
    same = F("kl_jump", "warn", 90, (90, 91), points=(90,), template="spike")
    other = F("kl_jump", "warn", 70, (70, 71), points=(70,), template="spike")
    assert tell([spike, same], Scale(1, 200)).events[1].caused_by == 0
    assert all(e.caused_by is None for e in tell([spike, other], Scale(1, 200)).events)


def test_a_link_asks_for_what_the_cause_found() -> None:
    jump = F("lr_schedule", "warn", 30, (30, 30), points=(30,), template="warn_jump")
    constant = F("lr_schedule", "warn", 1, (1, 100), template="warn_constant")
    kl = F("kl_jump", "fail", 31, (31, 40), template="shift")
    assert tell([jump, kl], Scale(1, 100)).headline.check == "lr_schedule"
    assert all(e.caused_by is None for e in tell([constant, kl], Scale(1, 100)).events)


def test_a_feedback_loop_is_never_gone_round() -> None:
    """KL in the reward → short answers → a swinging gradient → a KL jump: the loop of mechanics is cut where it
    would come back to its start."""
    found = [F("kl_band", "fail", 4, (4, 60), metrics=KL_IN_REWARD, template="fail_ceiling"),
             F("response_length_collapse", "fail", 5, (5, 60)),
             F("grad_norm_explosion", "fail", 6, (6, 60), template="fail"),
             F("kl_jump", "fail", 3, (3, 60), metrics=KL_IN_REWARD, template="shift")]
    story = tell(found, Scale(1, 60))
    assert len(story.roots) == 1
    for i in range(len(story.events)):
        assert i not in story.consequences(i)


def test_the_headline_is_the_worst_chain_then_the_one_explaining_most_then_the_earliest() -> None:
    warn_root = [F("response_clip_high", "warn", 5, (5, 100), template="warn"),
                 F("throughput_drop", "warn", 6, (6, 100), template="shift_step")]
    fail_alone = [F("nan_inf", "fail", 90, (90, 90))]
    story = tell(warn_root + fail_alone, Scale(1, 100))
    assert story.headline.check == "nan_inf", "a chain holding a failure goes before one of warnings"
    two = [F("response_clip_high", "warn", 5, (5, 100), template="warn"),
           F("throughput_drop", "warn", 6, (6, 100), template="shift_step"),
           F("oom_risk", "warn", 7, (7, 100), template="seqlen"),
           F("aborted_high", "warn", 2, (2, 100), template="warn")]
    story = tell(two, Scale(1, 100))
    assert [story.events[r].check for r in story.roots] == ["response_clip_high", "aborted_high"]


def test_a_run_with_nothing_to_act_on_has_no_headline() -> None:
    story = tell([F("mfu_low", "note", 1, (1, 100), template="low"), F("kl_band", "ok", None, template="ok")],
                 Scale(1, 100))
    assert story.headline is None and story.events == () and story.roots == ()


@pytest.mark.parametrize("run", ["verl__agent-opd__qwen3-4b-klreward-length-collapse"])
def test_a_real_kl_in_reward_explosion_is_one_root_cause_with_its_consequences(run: str) -> None:
    """The 4B on-policy distillation run: the KL penalty in the reward rises from step 3 (0.83 → 1.3 → 2.0 at 4 →
    16.9), the answers shrink from step 7 (1759 → 1 token), the score sits at its floor from step 11, the entropy
    falls to ~2e-4 from step 12 (labels.toml quotes the raw values)."""
    d = rlvitals.diagnose(rlvitals.load(CORPUS / run / "output.log")[0])
    head = d.headline
    assert head is not None and head.finding.check in ("kl_jump", "kl_band") and 3 <= head.onset_step <= 5
    explained = {m.finding.check for m in head.explains}
    assert {"response_length_collapse", "entropy_collapse", "reward_collapse"} <= explained
    assert len(d.causes()) == 1, [c.finding.check for c in d.causes()]
    moments = d.timeline
    assert [m.step for m in moments] == sorted(m.step for m in moments)
    assert all(m.because is not None and m.because["zh"] for m in moments if m.caused_by is not None)


def test_a_later_reading_never_takes_an_event_from_its_earlier_cause() -> None:
    """The 3B KL-in-reward run: the KL's runaway is dated at 32, the answers collapse at 34, the gradient
    explodes at 35. The explosion could explain the KL (dated 3 steps after it, within the tolerance), but the
    KL explains the answers and they the gradient: causes dated before their effects are settled first."""
    found = [F("kl_shape", "warn", 32, (32, 59), metrics=KL_IN_REWARD, template="runaway_flat"),
             F("response_length_collapse", "fail", 34, (34, 59)),
             F("grad_norm_explosion", "fail", 35, (35, 59), template="fail")]
    story = tell(found, Scale(1, 59))
    assert story.headline is not None and story.headline.check == "kl_shape" and len(story.roots) == 1
    by = {e.check: story.events[e.caused_by].check for e in story.events if e.caused_by is not None}
    assert by == {"response_length_collapse": "kl_shape", "grad_norm_explosion": "response_length_collapse"}


def test_a_link_can_ask_how_bad_the_cause_is() -> None:
    """Entropy that surged and came most of the way back (a warning) does not drive the answers to the cap;
    one that blew up and stayed up (a failure) does."""
    clip = F("response_clip_high", "warn", 30, (30, 100), template="warn")
    came_back = F("entropy_surge", "warn", 20, (20, 100), template="climb")
    blew_up = F("entropy_surge", "fail", 20, (20, 100), template="climb")
    assert all(e.caused_by is None for e in tell([came_back, clip], Scale(1, 100)).events)
    assert tell([blew_up, clip], Scale(1, 100)).headline.check == "entropy_surge"


def test_between_equals_the_problem_still_going_on_is_the_headline() -> None:
    over = F("entropy_surge", "warn", 24, (24, 150), template="climb")
    going_on = F("response_clip_high", "warn", 84, (84, 238), template="warn")
    story = tell([over, going_on], Scale(1, 238))
    assert [story.events[r].check for r in story.roots] == ["response_clip_high", "entropy_surge"]
    both = F("entropy_surge", "warn", 24, (24, 238), template="climb")
    story = tell([both, going_on], Scale(1, 238))
    assert story.headline.check == "entropy_surge", "then the earliest"


def test_one_quantity_read_twice_needs_no_cause_still_going_on() -> None:
    """The KL that ran away early (a jump at 60 that stayed, the jump's own evidence over by 80) is the one that
    sits above 2 nats per token from 360: the same KL read twice, linked whatever lies between."""
    jump = F("kl_jump", "fail", 60, (60, 80), metrics=("actor/kl_loss",), template="early")
    band = F("kl_band", "fail", 360, (360, 1400), metrics=("actor/kl_loss",), template="fail_ceiling")
    story = tell([jump, band], Scale(1, 1400))
    assert story.headline.check == "kl_jump" and len(story.roots) == 1
    clip = F("response_clip_high", "warn", 10, (10, 20), template="warn")
    late = F("reward_collapse", "fail", 360, (360, 1400), template="fail_unexplained")
    assert len(tell([clip, late], Scale(1, 1400)).roots) == 2, "a mechanism needs its cause still going on"

"""RunBuilder → Run: step axis, NaN vs not-logged, duplicates, coalescing, train mask, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tiny_catalog import CATALOG

from rlvitals.catalog.aliases import KeyResolver
from rlvitals.ingest import Record, SourceMeta
from rlvitals.run.builder import RunBuilder

RESOLVER = KeyResolver(CATALOG)


def _run(records: list[Record], framework: str | None = "verl", config: dict | None = None):
    meta = SourceMeta(format="test", framework=framework, config=config or {})
    builder = RunBuilder(meta)
    for rec in records:
        builder.add(rec)
    return builder.finish("mem", CATALOG, RESOLVER)


def test_steps_are_sorted_and_records_of_one_step_merge() -> None:
    run = _run([
        Record(2, {"actor/entropy": 0.4}, "f:2"),
        Record(1, {"actor/entropy": 0.5}, "f:1"),
        Record(2, {"val/test_score/openai/gsm8k": 0.7}, "f:3"),
    ])
    assert run.steps.tolist() == [1, 2]
    assert run.frame["val-core/openai/gsm8k/reward/mean@1"].to_list() == [None, 0.7]


def test_logged_nan_is_kept_and_differs_from_not_logged() -> None:
    run = _run([Record(1, {"actor/entropy": math.nan, "actor/lr(1e-4)": 0.01}, "f:1"),
                Record(2, {"actor/lr(1e-4)": 0.02}, "f:2")])
    col = run.frame["actor/entropy"]
    assert col.is_nan().to_list()[0] is True and col.is_null().to_list() == [False, True]
    steps, values = run.series("actor/entropy")
    assert steps.tolist() == [1] and math.isnan(values[0])
    assert run.series("actor/entropy", finite=True)[0].tolist() == []


def test_scale_is_applied_to_canonical_but_raw_is_verbatim() -> None:
    run = _run([Record(1, {"actor/lr(1e-4)": 0.01}, "f:1")])
    assert run.frame["actor/lr"][0] == pytest.approx(1e-6)
    assert run.raw["actor/lr(1e-4)"][0] == 0.01
    assert run.raw_keys_for("actor/lr") == ["actor/lr(1e-4)"]


def test_duplicate_step_keeps_later_value_with_a_note() -> None:
    run = _run([Record(1, {"actor/entropy": 0.5}, "f:1"), Record(1, {"actor/entropy": 0.3}, "f:9")])
    assert run.frame["actor/entropy"].to_list() == [0.3]
    assert any("logged twice" in n for n in run.notes)


def test_evaluation_only_steps_are_not_training_steps() -> None:
    run = _run([Record(0, {"val/test_score/openai/gsm8k": 0.2}, "f:1"),
                Record(1, {"actor/entropy": 0.5}, "f:2"),
                Record(2, {"actor/entropy": 0.4, "val/test_score/openai/gsm8k": 0.3}, "f:3")])
    assert run.train_steps.tolist() == [1, 2]
    assert run.validation["openai/gsm8k"]["step"].to_list() == [0, 2]
    assert run.validation["openai/gsm8k"]["reward/mean@1"].to_list() == [0.2, 0.3]


def test_a_series_cut_only_at_its_ends_is_the_frame_s_memory_and_one_with_gaps_is_a_copy() -> None:
    """veRL validates before its first training step: every training series drops that row. Dropped only at the
    ends, the series is a read-only view of the frame (no copy a check per metric); dropped inside, a copy."""
    run = _run([Record(0, {"val/test_score/openai/gsm8k": 0.2}, "f:1"),
                *[Record(s, {"actor/entropy": 1.0 / s, "actor/loss": float(s)}, f"f:{s + 1}") for s in (1, 2, 3)],
                Record(4, {"actor/entropy": math.inf, "actor/loss": 4.0}, "f:5"),
                Record(5, {"actor/entropy": 0.2, "actor/loss": math.nan}, "f:6")])
    column = run.frame["actor/entropy"].slice(1).to_numpy()  # its logged values, polars' own buffer
    steps, values = run.series("actor/entropy")  # the row of step 0 dropped: a stretch, steps 1-5
    assert steps.tolist() == [1, 2, 3, 4, 5] and values.tolist() == [1.0, 0.5, 1.0 / 3, math.inf, 0.2]
    assert np.shares_memory(values, column) and not values.flags.writeable and not steps.flags.writeable
    steps, values = run.series("actor/loss", finite=True)  # the NaN at the end dropped too
    assert steps.tolist() == [1, 2, 3, 4] and values.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert np.shares_memory(values, run.frame["actor/loss"].slice(1).to_numpy())
    steps, values = run.series("actor/entropy", finite=True)  # the inf at step 4 dropped: a gap
    assert steps.tolist() == [1, 2, 3, 5] and values.tolist() == [1.0, 0.5, 1.0 / 3, 0.2]
    assert not np.shares_memory(values, column)


def test_eval_split_keys_group_under_eval() -> None:
    run = _run([Record(1, {"rewards/chosen": 0.1}, "f:1"), Record(1, {"eval_rewards/chosen": 0.2}, "f:2")],
               framework="trl")
    assert run.algorithm == "dpo-family"
    assert run.validation["eval"]["rewards/chosen"].to_list() == [0.2]
    assert run.train_steps.tolist() == [1]


def test_unmapped_keys_are_listed_and_count_as_training_unless_named_eval() -> None:
    run = _run([Record(5, {"my_loss": 1.0, "eval_thing": 2.0}, "f:1"), Record(6, {"eval_thing": 1.0}, "f:2"),
                Record(7, {"actor/entropy": 0.1}, "f:3"), Record(8, {"my_loss": 0.5}, "f:4")],
               framework=None)
    assert run.unmapped == ["eval_thing", "my_loss"]
    assert run.train_steps.tolist() == [5, 7, 8]


def test_coalescing_prefers_literal_over_mangled() -> None:
    run = _run([Record(1, {"actor/entropy": 0.5, "train/actor/entropy": 0.9}, "f:1"),
                Record(2, {"train/actor/entropy": 0.8}, "f:2")])
    assert run.frame["actor/entropy"].to_list() == [0.5, 0.8]


def test_text_values_and_summary_are_kept_apart() -> None:
    run = _run([Record(1, {"actor/entropy": 0.5, "resize/mode": "schedule"}, "f:1"),
                Record(0, {"train_runtime": 5.5}, "f:2", kind="summary")])
    assert run.text == {"resize/mode": {1: "schedule"}}
    assert run.summary == {"train_runtime": 5.5}
    assert run.steps.tolist() == [1]


def test_config_beats_keys_for_the_algorithm() -> None:
    run = _run([Record(1, {"actor/entropy": 0.5}, "f:1")], config={"algorithm.adv_estimator": "gae"})
    assert (run.algorithm, run.family) == ("ppo", "rl")
    assert _run([Record(1, {"actor/entropy": 0.5}, "f:1")]).algorithm == "grpo"


def test_framework_version_window_is_reported() -> None:
    run = _run([Record(1, {"entropy": 0.5, "reward_std": 0.1}, "f:1")], framework="trl")
    assert run.framework_era == ">=0.20"
    assert run.frame.columns == ["step", "actor/entropy", "group/reward_std/mean"]
    assert any("reward_std" in n for n in run.notes)


def test_train_steps_view() -> None:
    run = _run([Record(s, {"actor/entropy": 1.0 / s}, f"f:{s}") for s in (3, 1, 2)])
    steps, values = run.series("actor/entropy")
    assert steps.tolist() == [1, 2, 3]
    np.testing.assert_allclose(values, [1.0, 0.5, 1 / 3])


def _long_builder() -> RunBuilder:
    """Steps arriving out of order and twice, evaluation-only steps, text values."""
    builder = RunBuilder(SourceMeta(format="test", framework="verl"))
    for step in [*range(1, 30), 35, *range(30, 35), *range(36, 61)]:
        values: dict[str, float | str] = {"actor/entropy": 1.0 / step, "actor/lr(1e-4)": 0.01}
        if step % 10 == 0:
            values["note"] = f"checkpoint {step}"
        builder.add(Record(step, values, f"f:{step}"))
        if step % 7 == 0:
            builder.add(Record(step, {"val/test_score/openai/gsm8k": step / 100}, f"f:{step}v"))
    builder.add(Record(61, {"val/test_score/openai/gsm8k": 0.9}, "f:61"))  # evaluation only
    builder.add(Record(12, {"actor/entropy": 0.5}, "f:12b"))  # logged again, later
    return builder


def test_tail_keeps_the_last_steps_with_their_real_numbers() -> None:
    whole = _long_builder().finish("mem", CATALOG, RESOLVER)
    last = whole.tail(12)
    assert last.steps.tolist() == list(range(50, 62)) and last.cut == 49
    assert last.train_steps.tolist() == list(range(50, 61))  # step 61 is evaluation only
    assert last.frame["actor/entropy"].to_list() == whole.frame["actor/entropy"].to_list()[-12:]
    assert last.validation["openai/gsm8k"]["step"].to_list() == [56, 61]
    assert last.text == {"note": {50: "checkpoint 50", 60: "checkpoint 60"}}
    assert last.key_map == whole.key_map and last.framework == whole.framework
    assert whole.tail(61) is whole and whole.tail(1000).cut == 0
    assert last.tail(5).steps.tolist() == list(range(57, 62)) and last.tail(5).cut == 56


def test_finish_with_last_builds_what_tail_cuts_from_the_whole_run() -> None:
    builder = _long_builder()
    whole = builder.finish("mem", CATALOG, RESOLVER)
    for n in (1, 12, 40, 61, 500):
        direct, cut = builder.finish("mem", CATALOG, RESOLVER, last=n), whole.tail(n)
        assert direct.frame.equals(cut.frame) and direct.raw.equals(cut.raw), n
        assert direct.train_mask.tolist() == cut.train_mask.tolist() and direct.cut == cut.cut, n
        assert direct.validation.keys() == cut.validation.keys()
        assert all(direct.validation[k].equals(cut.validation[k]) for k in cut.validation), n
        assert direct.text == cut.text and direct.key_map == cut.key_map and direct.notes == cut.notes, n

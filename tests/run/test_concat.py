"""load_launches(): the logs of a resumed run's launches read as one run. A real veRL console log
(1,119 training steps) is cut into two launches that overlap the way a resume from an earlier
checkpoint does; the joined run must be the original, step for step, and say how many steps the
second launch logged again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import REAL

import rlvitals
from rlvitals.errors import EmptyInputError, InputError, MissingInputError
from rlvitals.run.concat import JoinNote, load_launches, spans

GRPO = REAL / "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
CRASHED = (Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
           / "verl__verl-maze__ppo-reward-fn-crash" / "verl_demo.log")
HEADER_LINES = 52  # the launch script and config the log starts with, before "step:1 - ..."


def _real() -> list[str]:
    return GRPO.read_text(encoding="utf-8").splitlines(keepends=True)


def _line_of(lines: list[str], step: int) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(f"step:{step} - "))


def _launches(tmp_path: Path, end_first: int = 600, resume_at: int = 551) -> tuple[Path, Path]:
    """Launch 1: the log up to step ``end_first`` (it died there); launch 2: the same header, then
    every step from ``resume_at`` (resumed from the checkpoint before it) to the end."""
    lines = _real()
    a, b = tmp_path / "launch1.log", tmp_path / "launch2.log"
    a.write_text("".join(lines[: _line_of(lines, end_first) + 1]), encoding="utf-8")
    b.write_text("".join(lines[:HEADER_LINES] + lines[_line_of(lines, resume_at):]), encoding="utf-8")
    return a, b


def test_two_overlapping_launches_read_as_the_original_run(tmp_path: Path) -> None:
    a, b = _launches(tmp_path)
    original = rlvitals.load(GRPO)[0]
    for given in ([a, b], [b, a]):  # in step order whatever the order given
        run = load_launches(given)
        assert run.frame.equals(original.frame) and run.raw.equals(original.raw)
        assert list(run.train_steps) == list(original.train_steps) and len(run.train_steps) == 1119
        assert run.files == [str(a), str(b)] and run.path == f"{a} + {b}"
        again = [n for n in run.notes if "logged again" in n]
        assert again == [f"50 steps (551–600) that {a} logged were logged again by {b} (a launch resumed from an "
                         "earlier checkpoint): at those steps the later launch's values were kept"]


def test_the_later_launch_values_win_where_they_overlap(tmp_path: Path) -> None:
    a, b = _launches(tmp_path)
    text = b.read_text(encoding="utf-8")
    # the resumed launch computed its repeated steps again: other values (here its entropy)
    resumed = re.sub(r"^(step:(5[5-9]\d|600) - .*?actor/entropy_loss:)[0-9.]+", r"\g<1>9.875", text, flags=re.M)
    assert resumed.count("actor/entropy_loss:9.875") == 50
    b.write_text(resumed, encoding="utf-8")
    told: list[JoinNote] = []
    run = load_launches([a, b], tell=told.append)
    original = rlvitals.load(GRPO)[0]
    entropy = run.frame.select("step", "actor/entropy").join(original.frame.select("step", "actor/entropy"),
                                                             on="step", suffix="_original")
    inside = entropy.filter(pl.col("step").is_between(551, 600))
    assert inside["actor/entropy"].to_list() == [9.875] * 50
    outside = entropy.filter(~pl.col("step").is_between(551, 600))
    assert outside["actor/entropy"].to_list() == outside["actor/entropy_original"].to_list()
    assert [t.en for t in told] == [n for n in run.notes if "logged again" in n]
    assert told[0].en.startswith("50 steps (551–600)")
    assert told[0].text("zh") == (f"{a} 记录过的 50 个 step（551–600）又被 {b} 记录了一次（从更早的 checkpoint "
                                  "恢复的一次启动）：这些 step 取后一次启动的值")
    assert "50 values were logged twice for the same step with different values" in " ".join(run.notes)


def test_verl_jsonl_launches_of_the_real_values(tmp_path: Path) -> None:
    """veRL's file logger format (``{"step": N, "data": {...}}``), one file per launch, written from the
    real log's values; three launches, the last resumed twice over the same steps."""
    _real()
    original = rlvitals.load(GRPO)[0]
    rows = original.raw.to_dicts()

    def write(name: str, lo: int, hi: int) -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps({"step": r["step"], "data": {k: v for k, v in r.items()
                                                                          if k != "step" and v is not None}}) + "\n"
                                for r in rows if lo <= r["step"] <= hi))
        return path

    files = [write("m-1.jsonl", 1, 300), write("m-2.jsonl", 201, 700), write("m-3.jsonl", 651, 1120)]
    run = load_launches(files)
    assert run.format == "verl-jsonl" and run.framework == "verl"
    assert run.raw.equals(original.raw.select(run.raw.columns))
    again = [n for n in run.notes if "logged again" in n]
    assert [n.split(" (a launch")[0] for n in again] == [
        f"100 steps (201–300) that {files[0]} logged were logged again by {files[1]}",
        f"50 steps (651–700) that {files[1]} logged were logged again by {files[2]}"]


def test_keys_only_the_earlier_launch_logged_at_a_step_are_kept(tmp_path: Path) -> None:
    """veRL validates a resumed checkpoint at the checkpoint's own step: the second launch logs step 4
    with only the validation, and step 4's training values are the first launch's."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"step": s, "data": {"actor/entropy": s / 10, "actor/pg_loss": -s}}) + "\n"
                         for s in range(1, 7)))
    b.write_text(json.dumps({"step": 4, "data": {"val-core/gsm8k/reward/mean@1": 0.5}}) + "\n"
                 + "".join(json.dumps({"step": s, "data": {"actor/entropy": s / 100, "actor/pg_loss": -s}}) + "\n"
                           for s in range(5, 9)))
    run = load_launches([a, b])
    frame = run.frame
    assert frame["step"].to_list() == list(range(1, 9))
    assert frame["actor/entropy"].to_list() == [0.1, 0.2, 0.3, 0.4, 0.05, 0.06, 0.07, 0.08]
    assert any(n.startswith(f"3 steps (4–6) that {a} logged were logged again by {b}") for n in run.notes)


def test_an_earlier_launch_crash_is_a_note_and_the_last_launch_decides(tmp_path: Path) -> None:
    if not CRASHED.is_file():
        pytest.skip(f"{CRASHED} not found")
    a, b = _launches(tmp_path)
    crashed = CRASHED.read_text(encoding="utf-8").splitlines(keepends=True)
    tail = crashed[max(i for i, line in enumerate(crashed) if line.startswith("Traceback")):]
    a.write_text(a.read_text(encoding="utf-8") + "".join(tail), encoding="utf-8")
    assert rlvitals.load(a)[0].crash is not None  # the launch alone reads as crashed
    run = load_launches([a, b])
    assert run.crash is None
    assert any(n.startswith(f"{a} ended in NotImplementedError") and n.endswith("a later launch went on")
               for n in run.notes)
    assert load_launches([b, a]).crash is None  # the order given does not matter


def test_errors_name_the_file(tmp_path: Path) -> None:
    a, _ = _launches(tmp_path)
    with pytest.raises(MissingInputError, match=re.escape(str(tmp_path / "nope.log"))):
        load_launches([a, tmp_path / "nope.log"])
    with pytest.raises(InputError, match="no log given: pass the logs of the run's launches"):
        load_launches([])
    folder = tmp_path / "runs"
    for name in ("x", "y"):
        (folder / name).mkdir(parents=True)
        (folder / name / "m.jsonl").write_text(json.dumps({"step": 1, "data": {"actor/entropy": 1.0}}) + "\n")
    with pytest.raises(InputError, match=rf"{re.escape(str(folder))}: it holds 2 runs \(.*\), and a launch of one "
                                         "run is one log; pass each launch's log itself"):
        load_launches([a, folder])


def test_logs_of_two_frameworks_are_refused(tmp_path: Path) -> None:
    a, _ = _launches(tmp_path)
    state = REAL / "trl__UnslothGRPO__checkpoint-250_trainer_state.json"
    if not state.is_file():
        pytest.skip(f"{state} not found")
    with pytest.raises(InputError, match=r"these logs are not the launches of one run: .* is a verl log, .* is a "
                                         r"trl log; give the logs of one run \(or leave out --one-run"):
        load_launches([a, state])


def test_a_launch_without_metrics_is_said_and_all_empty_is_an_error(tmp_path: Path) -> None:
    a, _ = _launches(tmp_path)
    empty = tmp_path / "launch3.jsonl"
    empty.write_text(json.dumps({"step": 1, "data": {}}) + "\n")
    run = load_launches([a, empty])
    assert f"{empty} holds no metrics; the run was read from the other logs" in run.notes
    with pytest.raises(EmptyInputError, match="none of these logs holds metrics"):
        load_launches([empty, empty])


def test_spans() -> None:
    import numpy as np

    assert spans(np.array([1, 2, 3])) == "1–3"
    assert spans(np.array([1, 3, 5, 7, 9, 10])) == "1, 3, 5, 7, …"
    assert spans(np.array([], dtype=np.int64)) == ""


def _tb_launch(folder: Path, steps: range, t0: float, per_step: float) -> None:
    tbx = pytest.importorskip("tensorboardX")
    w = tbx.SummaryWriter(str(folder))
    for i, step in enumerate(steps):
        w.add_scalar("actor/entropy", 1 / step, step, walltime=t0 + per_step * (i + 1))
    w.close()


def test_the_wall_clock_goes_on_across_launches_and_the_gap_is_real(tmp_path: Path) -> None:
    """TensorBoard launches of one run: launch 1 logged steps 1–10 (10 s each) and died; launch 2 started an
    hour later from the checkpoint at step 8. The clock is one clock: the steps launch 2 logged again take
    its times, and the hour between the launches is on it."""
    _tb_launch(tmp_path / "a", range(1, 11), 1_700_000_000.0, 10.0)
    _tb_launch(tmp_path / "b", range(8, 16), 1_700_003_700.0, 10.0)
    run = load_launches([tmp_path / "b", tmp_path / "a"])
    steps, seconds = run.wall_times
    assert steps.tolist() == list(range(1, 16))
    assert seconds.tolist() == [1_700_000_000.0 + 10 * s for s in range(1, 8)] + \
        [1_700_003_700.0 + 10 * (i + 1) for i in range(8)]
    assert run.wall.source == "TensorBoard wall_time" and run.wall.epoch
    first = rlvitals.load(tmp_path / "a")[0].wall
    assert run.wall.started == first.started  # the earliest launch's start
    assert "actor/entropy" in run.metrics and len(run.metrics) == 1


def test_launches_timed_only_from_their_own_start_are_not_joined(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"step": s, "loss": 0.5, "_runtime": 2.0 * s}) + "\n" for s in range(1, 4)))
    b.write_text("".join(json.dumps({"step": s, "loss": 0.5, "_runtime": 2.0 * (s - 3)}) + "\n" for s in range(4, 7)))
    told: list[JoinNote] = []
    run = load_launches([a, b], tell=told.append)
    assert run.wall is None
    assert [t.en for t in told] == [f"{a}, {b}: the wall clock (W&B _runtime) counts from each launch's own start, "
                                    "so the launches' clocks were not joined"]
    assert told[0].zh == f"{a}, {b} 的时间只从各自启动算起（W&B _runtime），各次启动的墙钟时间没有接起来"

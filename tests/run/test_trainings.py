"""Several trainings in one console log: the restart rule on the step column (constructed step sequences), and
load() giving a run per training on logs made of real corpus logs the way a second launch makes them (the
bytes of one real log appended to another's, or a real log cut and its start-up lines written again between
the two parts). No public log holding two trainings was found (searched: the corpus, the repositories its
runs come from, veRL/TRL log repositories indexed by path); each test says what it was made of."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from corpus import corpus_input

from rlvitals import load
from rlvitals.ingest import SkipLog, SourceMeta, find_reader

VERL_A = "verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge"  # steps 0 (validation), 1..69
VERL_B = "verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse"  # steps 0 (validation), 1..59


def _steps(*runs: list[int]) -> np.ndarray:
    return np.array([s for run in runs for s in run], dtype=np.int64)


@pytest.mark.parametrize(("steps", "starts"), [
    (_steps([1, 2, 3], [1, 2, 3, 4]), [3]),  # 1..50 then 1..80: a new training
    (_steps([1, 2, 3], [4, 5, 6]), []),  # a resumed run that goes on counting is one
    (_steps([1, 2, 3, 4, 5], [3, 4, 5, 6]), []),  # resumed from step 2's checkpoint: steps 3..5 logged again
    (_steps([0, 1, 2, 3], [0, 1, 2]), [4]),  # veRL's validation at step 0 before each training
    (_steps([0, 1, 2, 3], [1, 2]), [4]),  # the second launch does not validate first
    (_steps([0, 1, 1, 2, 2, 3]), []),  # a step's validation after its training line is no restart
    (_steps([101, 102, 103], [101, 102]), [3]),  # two launches resumed from the same checkpoint
    (_steps([0, 1, 2], [0, 1], [0, 1, 2, 3]), [3, 5]),  # three trainings
    (_steps([0]), []),
    (_steps([5, 5, 5]), []),
])
def test_the_step_count_starting_again_begins_a_training(steps: np.ndarray, starts: list[int]) -> None:
    from rlvitals.run.trainings import Restarts, restarts

    assert restarts(steps) == starts
    rule = Restarts()  # the record-by-record form (a followed log) says the same
    assert [row for row, step in enumerate(steps.tolist()) if rule.step(step)] == starts


def test_a_step_no_run_can_have_says_nothing_of_the_count() -> None:
    from rlvitals.run.trainings import Restarts

    rule = Restarts()
    assert [rule.step(s) for s in (1 << 70, 1, 2, 3, 1)] == [False, False, False, False, True]


def _appended(tmp_path: Path, *parts: bytes) -> Path:
    path = tmp_path / "train.log"
    path.write_bytes(b"".join(parts))
    return path


def test_two_verl_launches_appended_to_one_log_are_two_runs(tmp_path: Path) -> None:
    # constructed: the bytes of one real veRL console log appended to another's, as `>> train.log` would
    a, b = corpus_input(VERL_A), corpus_input(VERL_B)
    path = _appended(tmp_path, a.read_bytes(), b.read_bytes())
    runs = load(path)
    first, second = (load(a)[0], load(b)[0])
    assert [r.path for r in runs] == [str(path), f"{path}#2"]
    assert [r.steps.tolist() for r in runs] == [first.steps.tolist(), second.steps.tolist()]
    assert runs[1].frame.drop("step").equals(second.frame.drop("step"))
    lines_a, text_b = a.read_bytes().count(b"\n"), b.read_bytes()
    begins = 1 + lines_a + text_b[: text_b.index(b"step:0 - ")].count(b"\n")
    ends = 1 + lines_a + text_b[: text_b.rindex(b"step:59 - ")].count(b"\n")
    assert f"{path}: this log holds 2 trainings, one after the other (the step count starts again at line {begins}" \
           in runs[0].notes[-1]
    assert runs[1].notes[-1].endswith(f"this is training 2 of 2, lines {begins}–{ends}, read as {path}#2")
    assert "训练" in runs[1].notes[-1].zh and all(r.crash is None and r.crash_scanned for r in runs)


def test_the_split_is_the_same_when_two_processes_read_the_log(tmp_path: Path) -> None:
    # constructed as above; a large log is read by two processes, the second starting mid-file with no
    # knowledge of the first half's steps: the cut is made on the whole step column after
    a, b = corpus_input(VERL_A), corpus_input(VERL_B)
    path = _appended(tmp_path, a.read_bytes(), b.read_bytes())
    reader = find_reader(path)
    assert reader.columns is not None
    whole = reader.columns(path, SourceMeta(format=reader.format), SkipLog(), min_bytes=1 << 40)
    halves = reader.columns(path, SourceMeta(format=reader.format), SkipLog(), min_bytes=1 << 16)
    assert whole.lines is not None and halves.lines is not None
    assert halves.lines.tolist() == whole.lines.tolist() and halves.steps.tolist() == whole.steps.tolist()
    from rlvitals.run.trainings import restarts

    assert restarts(np.frombuffer(halves.steps, dtype=np.int64)) == [len(load(a)[0].steps)]


def test_a_resumed_launch_that_goes_on_counting_is_one_run(tmp_path: Path) -> None:
    # constructed from one real log: cut after step 40, its start-up lines written again (the relaunch),
    # then the rest (the relaunch resumed at step 41)
    a = corpus_input(VERL_A)
    lines = a.read_bytes().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if b"step:0 - " in line)
    cut = next(i for i, line in enumerate(lines) if b"step:41 - " in line)
    path = _appended(tmp_path, *lines[:cut], *lines[:first], *lines[cut:])
    runs = load(path)
    assert [r.path for r in runs] == [str(path)]
    assert runs[0].steps.tolist() == load(a)[0].steps.tolist()


def test_a_launch_resumed_from_an_earlier_checkpoint_is_one_run(tmp_path: Path) -> None:
    # constructed from one real log: cut after step 47, its start-up lines again, then from step 41 on (the
    # relaunch resumed from the checkpoint of step 40 and logged 41..47 a second time)
    a = corpus_input(VERL_A)
    lines = a.read_bytes().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if b"step:0 - " in line)
    cut = next(i for i, line in enumerate(lines) if b"step:48 - " in line)
    again = next(i for i, line in enumerate(lines) if b"step:41 - " in line)
    runs = load(_appended(tmp_path, *lines[:cut], *lines[:first], *lines[again:]))
    assert len(runs) == 1 and runs[0].steps.tolist() == load(a)[0].steps.tolist()


def test_a_trl_relaunch_appended_after_a_crash_is_a_run_with_its_own_ending(tmp_path: Path) -> None:
    # constructed: the real TRL console of a run killed by SIGHUP after bar 935/936, then the real console
    # of its relaunch (which ran to its end), appended as `>> grpo.log` would
    died = corpus_input("trlconsole__hotpotqa_qwen25_3b_grpo_v2_sighup")
    relaunch = corpus_input("trlconsole__hotpotqa_qwen25_3b_grpo_v3")
    path = _appended(tmp_path, died.read_bytes(), relaunch.read_bytes())
    runs = load(path)
    assert [r.path for r in runs] == [str(path), f"{path}#2"]
    assert [len(r.train_steps) for r in runs] == [46, 46]
    crash = runs[0].crash
    assert crash is not None and (crash.kind, crash.last_step) == ("signal", 935)
    assert crash.where == f"{path}:140"  # the traceback's line in the first launch
    assert runs[1].crash is None and runs[1].summary["train_runtime"] == load(relaunch)[0].summary["train_runtime"]


def test_a_script_that_trains_twice_is_two_runs(tmp_path: Path) -> None:
    # constructed: the real TRL console of an SFT run (ending in its summary), then the real console of the
    # GRPO run trained from it, as one script's output
    sft = corpus_input("trlconsole__hotpotqa_qwen25_3b_sft")
    grpo = corpus_input("trlconsole__hotpotqa_qwen25_3b_grpo_v3")
    path = _appended(tmp_path, sft.read_bytes(), grpo.read_bytes())
    runs = load(path)
    assert [r.path for r in runs] == [str(path), f"{path}#2"]
    assert [r.train_steps.tolist() for r in runs] == [load(sft)[0].train_steps.tolist(),
                                                      load(grpo)[0].train_steps.tolist()]
    assert [r.algorithm for r in runs] == [load(sft)[0].algorithm, load(grpo)[0].algorithm]


def test_lines_skipped_stay_with_their_training(tmp_path: Path) -> None:
    # constructed: two short veRL trainings, the second with a line that is no number
    path = tmp_path / "train.log"
    path.write_text("step:1 - actor/pg_loss:0.1\nstep:2 - actor/pg_loss:0.2\n"
                    "step:1 - actor/pg_loss:0.3\nstep:2 - actor/pg_loss:x\nstep:3 - actor/pg_loss:0.4\n")
    runs = load(path)
    assert [r.steps.tolist() for r in runs] == [[1, 2], [1, 3]]
    assert [r.skipped.count for r in runs] == [0, 1]
    assert runs[1].skipped.reasons[0].startswith(f"{path}:4: ")

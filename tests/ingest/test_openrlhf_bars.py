"""OpenRLHF's DPO, RM, SFT and KTO trainers' consoles, read from what the real trainers wrote.

``tests/ingest/data/openrlhf/<trainer>-<version>/`` holds two runs of each trainer, made on a CPU by
``scripts/captures/openrlhf_trainers.py`` with openrlhf's own CLI (``source.toml`` says how, and what
was replaced): one logging to W&B offline, one to TensorBoard, each with its console as
``> train.log 2>&1`` captured it. The console values are checked against what the same run logged to
its tracker, rounded as tqdm rounds them (tqdm's own ``format_num``).
"""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import polars as pl
import pytest
import tomllib
from hypothesis import given
from hypothesis import strategies as st

from rlvitals import diagnose, load
from rlvitals.cli import main
from rlvitals.errors import RlvitalsError
from rlvitals.ingest import SkipLog, SourceMeta, find_reader
from rlvitals.ingest._bar_steps import pairs, values
from rlvitals.ingest.formats.openrlhf_bars import read
from rlvitals.run import Run
from rlvitals.words import in_lang

from .fuzzing import Seed, inputs
from .serving import served

tqdm = pytest.importorskip("tqdm")

DATA = Path(__file__).parent / "data" / "openrlhf"
CAPTURES = {"dpo": "dpo-0.11.2", "rm": "rm-0.11.2", "sft": "sft-0.11.2", "kto": "kto-0.9.5", "prm": "prm-0.9.5"}
ALGORITHMS = {"dpo": "dpo-family", "rm": "rm", "sft": "sft", "kto": "kto", "prm": "prm"}
#: optimizer steps (gradient accumulation 4): 32 micro-batches an epoch, the PRM data 64, for 2 epochs
STEPS = {"dpo": 16, "rm": 16, "sft": 16, "kto": 16, "prm": 32}
#: what each trainer prints at every micro-batch, in order (its optional keys are off in these runs)
POSTFIX = {"dpo": ["loss", "acc", "chosen_reward", "reject_reward", "lr", "grad_norm"],
           "rm": ["loss", "acc", "chosen_reward", "reject_reward", "lr", "grad_norm"],
           "sft": ["gpt_loss", "lr", "grad_norm"],
           "kto": ["kto_loss", "chosen_reward", "reject_reward", "lr", "kl"],
           "prm": ["prm_loss", "acc", "lr"]}
EVAL = {"dpo": ["eval_loss", "acc_mean"], "rm": ["eval_loss", "acc_mean", "reward_mean", "reward_std"],
        "sft": ["eval gpt_loss"], "kto": ["eval_loss", "chosen_reward", "reject_reward"],
        "prm": ["eval prm_loss", "eval acc"]}


def _console(trainer: str, logger: str = "wandb") -> Path:
    return DATA / CAPTURES[trainer] / f"{logger}-run" / "train.log"


def _tracker(trainer: str, logger: str) -> Path:
    run = DATA / CAPTURES[trainer] / f"{logger}-run"
    return next((run / "wandb").glob("offline-run-*")) if logger == "wandb" else run / "tensorboard"


def _tqdm(value: float) -> float:
    """The number tqdm prints for ``value`` in a postfix (its own format_num), read back."""
    return float(tqdm.tqdm.format_num(value))


def _by_step(run: Run) -> dict[int, dict[str, float]]:
    return {row["step"]: {k: v for k, v in row.items() if k != "step" and v is not None} for row in run.raw.to_dicts()}


def _read(path: Path) -> tuple[list, SourceMeta, SkipLog]:
    meta, skips = SourceMeta(format="openrlhf-trainer-console"), SkipLog()
    return list(read(path, meta, skips)), meta, skips


def test_every_capture_says_where_it_came_from() -> None:
    for trainer, folder in CAPTURES.items():
        source = tomllib.loads((DATA / folder / "source.toml").read_text(encoding="utf-8"))
        assert source["licence"] == "Apache-2.0" and source["package"] == f"openrlhf=={folder.split('-')[1]}"
        assert source["produced_by"] == "scripts/captures/openrlhf_trainers.py" and source["replaced"]
        for f in source["file"]:
            assert (DATA / folder / f["saved_as"]).stat().st_size == f["bytes"], (trainer, f)


@pytest.mark.parametrize("trainer", CAPTURES)
@pytest.mark.parametrize("logger", ["wandb", "tensorboard"])
def test_the_console_holds_what_the_run_logged_to_its_tracker(trainer: str, logger: str) -> None:
    console = load(_console(trainer, logger))[0]
    logged = load(_tracker(trainer, logger))[0]
    assert (console.format, console.framework) == ("openrlhf-trainer-console", "openrlhf")
    assert list(console.steps) == list(logged.steps) == list(range(1, STEPS[trainer] + 1))
    ours, theirs = _by_step(console), _by_step(logged)
    compared = 0
    for step, row in theirs.items():
        for key, value in row.items():
            name = key.removeprefix("train/")
            if key.startswith("train/") and name in POSTFIX[trainer]:
                assert ours[step][name] == _tqdm(value), (step, key)
            elif key.startswith("eval/") and key.removeprefix("eval/") in EVAL[trainer]:
                assert ours[step][key] == _tqdm(value), (step, key)
            else:
                assert name in ("global_step", "loss_mean", "acc_mean"), key  # W&B only: not in the postfix
                continue
            compared += 1
    assert compared == STEPS[trainer] * len(POSTFIX[trainer]) + 2 * len(EVAL[trainer])
    assert set(ours[STEPS[trainer]]) == set(POSTFIX[trainer]) | {f"eval/{k}" for k in EVAL[trainer]}


@pytest.mark.parametrize("trainer", CAPTURES)
def test_each_trainer_is_recognised_and_every_key_is_in_the_catalog(trainer: str) -> None:
    for path in (_console(trainer), _console(trainer, "tensorboard"), _tracker(trainer, "wandb"),
                 _tracker(trainer, "tensorboard")):
        run = load(path)[0]
        assert (run.framework, run.algorithm) == ("openrlhf", ALGORITHMS[trainer]), path
        assert run.unmapped == [], (path, run.unmapped)
    assert find_reader(_console(trainer)).format == "openrlhf-trainer-console"


def test_chosen_reward_is_the_implicit_reward_in_dpo_and_the_score_in_the_reward_model() -> None:
    dpo, rm = load(_console("dpo"))[0], load(_console("rm"))[0]
    assert dpo.key_map["chosen_reward"].canonical == "rewards/chosen"
    assert rm.key_map["chosen_reward"].canonical == "rm/reward_chosen/mean"
    assert rm.key_map["eval/reward_mean"].canonical == "eval/rm/reward/mean"
    assert load(_tracker("rm", "wandb"))[0].key_map["train/chosen_reward"].canonical == "rm/reward_chosen/mean"


def test_the_versions_the_keys_tell() -> None:
    assert load(_console("dpo"))[0].framework_era == ">=0.9.6"  # grad_norm came in 0.9.6
    assert load(_console("kto"))[0].framework_era == ">=0.4.0,<0.9.6"  # lr came in 0.4.0, KTO left in 0.9.6
    assert load(_console("prm"))[0].framework_era == ">=0.4.5,<0.9.6"  # the PRM trainer's own life


def test_accuracy_is_the_step_labels_in_the_process_reward_model() -> None:
    run = load(_console("prm"))[0]
    assert run.key_map["acc"].canonical == "prm/accuracy" and run.key_map["prm_loss"].canonical == "prm/loss"
    assert run.key_map["eval/eval acc"].canonical == "eval/prm/accuracy"
    assert load(_console("rm"))[0].key_map["acc"].canonical == "rm/accuracy"


@pytest.mark.parametrize("trainer", ["dpo", "rm", "kto", "prm"])
def test_the_accumulation_comes_from_the_evaluations_and_a_note_says_what_a_step_is(trainer: str) -> None:
    records, meta, skips = _read(_console(trainer))
    assert skips.count == 0 and len(records) == STEPS[trainer] + 2
    (note,) = meta.notes
    assert "an optimizer step (OpenRLHF's global_step, W&B's train/global_step) is 4 of them" in note
    assert f"the values of the other {3 * STEPS[trainer]} micro-batches were not used" in note
    assert "优化步" in in_lang(note, "zh")
    classes = {"dpo": "dpotrainer", "rm": "rewardmodeltrainer", "kto": "ktotrainer",
               "prm": "processrewardmodeltrainer"}
    assert meta.config["trainer_class"] == classes[trainer]


def test_sft_draws_a_window_of_micro_batches_at_its_end() -> None:
    records, meta, skips = _read(_console("sft"))
    assert skips.count == 0 and [r.step for r in records if "gpt_loss" in r.values] == list(range(1, 17))
    (note,) = meta.notes
    assert ("the values of the 4 micro-batches of an optimizer step together at its end (its first values at 4/32)"
            in note)
    assert [r.values for r in records if "eval/eval gpt_loss" in r.values][0] == {"eval/eval gpt_loss": 4.26}


def test_the_record_names_the_line_of_the_frame_it_was_read_from() -> None:
    records, _, _ = _read(_console("dpo"))
    lines = _console("dpo").read_bytes().split(b"\n")
    for r in records:
        path, line = r.where.rsplit(":", 1)
        assert path == str(_console("dpo"))
        key, value = next(iter(r.values.items()))
        shown = f"{key.removeprefix('eval/')}={tqdm.tqdm.format_num(value)}".encode()
        assert shown in lines[int(line) - 1], (r.step, key, line)


def test_without_an_evaluation_the_optimizer_steps_come_from_grad_norm_and_lr(tmp_path: Path) -> None:
    text = _console("dpo").read_bytes()
    log = tmp_path / "train.log"
    log.write_bytes(re.sub(rb"\rEval stage of global_step \d+:[^\r\n\x1b]*", b"", text))
    records, meta, skips = _read(log)
    (note,) = meta.notes
    assert "grad_norm and lr move every 4 of them" in note and "每 4 个 micro-batch 变一次" in in_lang(note, "zh")
    by_step = {r.step: r.values for r in _read(_console("dpo"))[0] if "loss" in r.values}
    assert skips.count == 0 and {r.step: r.values for r in records} == by_step


def test_without_an_evaluation_each_record_is_a_micro_batch(tmp_path: Path) -> None:
    """No evaluation, and no grad_norm or lr moving: nothing says what an optimizer step is."""
    text = _console("dpo").read_bytes()
    log = tmp_path / "train.log"
    text = re.sub(rb"\rEval stage of global_step \d+:[^\r\n\x1b]*", b"", text)
    log.write_bytes(re.sub(rb", (lr|grad_norm)=[^,\]]+", b"", text))
    records, meta, skips = _read(log)
    assert skips.count == 0 and [r.step for r in records] == list(range(1, 65))
    (note,) = meta.notes
    assert "each of the 64 records is one micro-batch (1, 2, 3, ... across epochs), not an optimizer step" in note
    assert "不是优化步" in in_lang(note, "zh")
    by_step = {r.step: r.values for r in _read(_console("dpo"))[0] if "loss" in r.values}
    drop = ("lr", "grad_norm")
    assert all(records[4 * k - 1].values == {key: v for key, v in by_step[k].items() if key not in drop}
               for k in range(1, 17))  # micro-batch 4k ended step k


def test_a_cut_frame_and_a_value_that_is_no_number_are_counted_skips(tmp_path: Path) -> None:
    text = _console("dpo").read_bytes()
    first = b"loss=0.693, acc=0, chosen_reward=0, reject_reward=0, lr=0.003"  # what micro-batch 4 showed
    at = text.index(first)
    log = tmp_path / "train.log"
    log.write_bytes(text[:at] + first.replace(b"0.693", b"broken") + text[at + len(first):]
                    + b"\rTrain step of epoch 1:  50%|\xe2\x96\x88| 16/32 [00:03<00:03, loss=0.6")
    records, _, skips = _read(log)
    line = text[:at].count(b"\n") + 1
    last = log.read_bytes().count(b"\n") + 1
    assert skips.count == 2
    assert skips.reasons[0] == (f"{log}:{last}: a frame of the bar 'Train step of epoch 1' at 16/32 was cut off "
                                "before its closing ']'; it was skipped")
    assert in_lang(skips.reasons[0], "zh") == (f"{log}:{last}: 进度条“Train step of epoch 1”在 16/32 处的一帧在结尾的"
                                               "“]”之前被截断了；已跳过")
    assert skips.reasons[1] == (f"{log}:{line}: the value 'broken' of 'loss' in the bar's postfix is not a number; "
                                "that value was skipped")
    assert in_lang(skips.reasons[1], "zh") == (f"{log}:{line}: 进度条 postfix 里 'loss' 的值 'broken' 不是数；"
                                               "这个值已跳过")
    assert "loss" not in records[0].values and records[0].values["lr"] == 0.003


def test_a_postfix_that_is_not_key_value_pairs_is_a_counted_skip(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("Train step of epoch 0:   0%|          | 0/2 [00:00<?, ?it/s, no pairs here]\n"
                   "Train step of epoch 0:  50%|#####     | 1/2 [00:00<00:00, 2.0it/s, loss=0.5]\n"
                   "Train step of epoch 0: 100%|##########| 2/2 [00:00<00:00, 2.0it/s, loss=0.5]\n")
    records, _, skips = _read(log)
    assert [r.values for r in records] == [{"loss": 0.5}]
    assert skips.reasons == [f"{log}:1: the bar's postfix 'no pairs here' is not tqdm's 'key=value, ...'; "
                             "the frame was skipped"]


def test_kto_of_0_9_5_dies_saving_the_model_after_its_training_ended() -> None:
    run = load(_console("kto"))[0]
    assert run.crash is not None and run.crash.after_end and run.crash.last_step == 16
    assert (run.crash.exception, run.crash.origin) == (
        "AttributeError", "openrlhf/utils/deepspeed/deepspeed.py:370 in save_model")
    assert load(_console("dpo"))[0].crash is None


def test_the_cli_inspects_a_capture() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", "--json", str(_console("rm"))], out=out, err=err) == 0
    got = json.loads(out.getvalue())
    assert (got["format"], got["framework"], got["steps"], got["unmapped"]) == (
        "openrlhf-trainer-console", "openrlhf", 16, [])


_KEY = st.text(st.sampled_from("abcxyz_ "), min_size=1, max_size=12).map(str.strip).filter(bool)


@given(st.dictionaries(_KEY, st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=6))
def test_a_postfix_tqdm_draws_reads_back_as_the_numbers_it_shows(logs: dict[str, float]) -> None:
    bar = tqdm.tqdm(total=4, file=io.StringIO(), ascii=True)
    bar.set_postfix(logs)
    shown = bar.postfix
    bar.close()
    got = pairs(shown)
    assert got is not None and [k for k, _ in got] == list(logs)
    skips = SkipLog()
    read_back = values(shown, "train.log:1", skips)
    assert skips.count == 0 and list(read_back) == list(logs)
    for key, value in logs.items():
        number = float(read_back[key])
        assert (math.isnan(number) and math.isnan(value)) or number == _tqdm(value)


@pytest.mark.parametrize("trainer", ["dpo", "sft"])
def test_mutated_captures_read_or_fail_clearly(trainer: str, tmp_path: Path) -> None:
    """The fuzzer's structure-aware mutations (:mod:`.fuzzing`) of a real capture: runs that diagnose, or
    a clear RlvitalsError, never another exception."""
    seed = Seed("openrlhf-trainer-console", "train.log", _console(trainer).read_bytes())
    for i, data in inputs(seed, 40):
        path = tmp_path / f"case{i}.log"
        path.write_bytes(data)
        try:
            for run in load(path):
                diagnose(run)
        except RlvitalsError:
            pass


def test_watch_follows_a_trainer_console_as_it_grows(tmp_path: Path) -> None:
    """The real DPO capture written in pieces cut anywhere (mid-frame too): once the log shows what an optimizer
    step is (grad_norm and lr moving every 4 micro-batches, before the first evaluation), each look holds a
    prefix of the run the finished file reads to, step for step and value for value, and the last look is that
    run; a look before that counts micro-batches and says so."""
    from rlvitals import load
    from rlvitals.watch.state import WatchState
    from rlvitals.watch.view import PlainView
    from rlvitals.watch.watcher import Watcher, WatchOptions

    source = _console("dpo")
    data = source.read_bytes()
    whole = load(source)[0]
    live = tmp_path / "train.log"
    live.write_bytes(b"")
    now = [1000.0]
    w = Watcher([live], WatchState(tmp_path / "state.sqlite"), [], WatchOptions(min_gap=0.0),
                view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: now[0], timer=lambda: 0.0)
    try:
        seen, stepped = [], 0
        for share in (0.3, 0.4, 0.45, 0.5, 0.55, 0.61, 0.75, 0.9, 1.0):
            with live.open("ab") as f:
                f.write(data[live.stat().st_size: int(len(data) * share)])
            now[0] += 10
            w.cycle()
            d = w.full.get(str(live))
            if d is None:
                continue
            run = d.run
            if any("is one micro-batch" in str(n) for n in run.notes):
                assert not seen  # only before the log shows an optimizer step: never after
                continue
            stepped += any("the log has no evaluation yet; grad_norm and lr move every 4" in str(n) for n in run.notes)
            steps = run.steps.tolist()
            assert steps == whole.steps.tolist()[: len(steps)]
            for key in run.metrics:  # every value read so far is the finished file's
                got = run.frame.select(["step", key]).drop_nulls()
                want = whole.frame.select(["step", key]).filter(pl.col("step").is_in(got["step"].implode()))
                assert got.equals(want.drop_nulls()), key
            seen.append(len(steps))
        assert seen == sorted(seen) and seen[-1] == len(whole.steps) and len(set(seen)) > 3 and stepped >= 1
    finally:
        w.close()


def test_an_experiment_folder_reads_every_log_in_it_whatever_its_logger() -> None:
    """``dpo-0.11.2/`` holds a TensorBoard run and a W&B run, each beside its console: four runs of the
    same 16 steps. Taking the folder whole as TensorBoard (it holds event files two levels down) lost the
    consoles and the W&B run."""
    folder = DATA / CAPTURES["dpo"]
    got = sorted((r.format, Path(r.path).relative_to(folder).parts[0], r.last_step) for r in load(folder))
    assert got == [("openrlhf-trainer-console", "tensorboard-run", 16), ("openrlhf-trainer-console", "wandb-run", 16),
                   ("tensorboard", "tensorboard-run", 16), ("wandb-offline", "wandb-run", 16)]


def test_serve_lists_every_capture_and_says_which_logs_hold_no_metrics(tmp_path: Path) -> None:
    """Served, the captures folder lists each trainer's four runs (PRM's W&B and TensorBoard too), and the
    PPO samples' runs, which hold only tables and text, are named in a note instead of vanishing."""
    runs, notes = served(DATA, tmp_path, sort="name")
    by_trainer = {t: sorted(r["steps"] for r in runs if f"/{folder}/" in r["path"]) for t, folder in CAPTURES.items()}
    assert by_trainer == {t: [STEPS[t]] * 4 for t in CAPTURES}
    assert len(runs) == 4 * len(CAPTURES) and {r["status"] for r in runs} == {"ready"}
    empty = [n for n in notes if "ppo-samples-0.11.2" in n]
    assert [n.split("ppo-samples-0.11.2/")[1] for n in empty] == [
        "tensorboard-run/ppo_samples_capture: read as tensorboard but it holds no metrics; "
        "waiting for it to be written",
        f"wandb-run/{_tracker_run('ppo-samples-0.11.2')}: read as wandb-offline but it holds no metrics; "
        "waiting for it to be written"]
    assert [in_lang(n, "zh").split("ppo-samples-0.11.2/")[1] for n in empty][0] == (
        "tensorboard-run/ppo_samples_capture：按 tensorboard 读取，但其中没有指标；等它写入")


def _tracker_run(folder: str) -> str:
    return next((DATA / folder / "wandb-run").glob("offline-run-*")).name


def test_a_step_bar_drawn_again_after_a_traceback_is_no_progress(tmp_path: Path) -> None:
    """tqdm draws a bar once more when it is closed, as a dying program's objects are: a real DPO capture cut
    mid-epoch, a CUDA out-of-memory traceback, then the step bar redrawn at its last count is a crash."""
    text = _console("dpo").read_bytes()
    frames = [m for m in re.finditer(rb"Train step of epoch \d+: +\d+%\|[^|]*\| *(\d+)/(\d+) \[[^\]\r\n]*\]", text)]
    last = next(m for m in frames if 0 < int(m.group(1)) < int(m.group(2)))  # a frame mid-epoch
    cut = text[:last.end()]
    trace = (b"\nTraceback (most recent call last):\n  File \"train_dpo.py\", line 9, in <module>\n    train()\n"
             b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    log = tmp_path / "train.log"
    log.write_bytes(cut + trace + b"\r" + last.group(0) + b"\n")
    run = load(log)[0]
    assert run.crash is not None and run.crash.exception == "torch.OutOfMemoryError"
    assert load(_console("dpo"))[0].crash is None

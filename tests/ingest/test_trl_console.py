"""TRL console output (HF ProgressCallback prints ``str(logs)`` through tqdm). Built from the
documented format (research/framework_metrics.md §4.1) and the real GRPO line quoted there."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest
from corpus import corpus_input

from rlvitals import load
from rlvitals.cli import main
from rlvitals.ingest import Record, SkipLog, SourceMeta, find_reader
from rlvitals.ingest.formats.trl_console import read

TRAIN1 = (
    "{'loss': -0.0982, 'grad_norm': 0.12353515625, 'learning_rate': 1e-05, 'num_tokens': 10222.0, "
    "'completions/mean_length': 506.75, 'rewards/code_reward_func/mean': 0.5, "
    "'rewards/code_reward_func/std': 0.3257, 'reward': 0.5, 'reward_std': 0.3257, "
    "'frac_reward_zero_std': 0.0, 'entropy': 0.4012, 'clip_ratio/low_mean': 0.0, "
    "'clip_ratio/region_mean': 0.0, 'step_time': 238.3, 'epoch': 0.03}"
)
TRAIN2 = "{'loss': 0.0123, 'grad_norm': nan, 'learning_rate': 9e-06, 'kl': None, 'reward': 0.55, 'epoch': 0.07}"
TRAIN4 = "{'loss': 0.02, 'grad_norm': 0.2, 'learning_rate': 7e-06, 'reward': 0.6, 'epoch': 0.13}"
EVAL = ("{'eval_loss': 0.5, 'eval_reward': 0.61, 'eval_runtime': 3.2, 'eval_samples_per_second': 10.0, "
        "'eval_steps_per_second': 1.0, 'epoch': 0.13}")
TRAIN6 = "{'loss': 0.01, 'grad_norm': 0.1, 'learning_rate': 5e-06, 'reward': 0.7, 'epoch': 0.2}"
SUMMARY = ("{'train_runtime': 62.1, 'train_samples_per_second': 0.8, 'train_steps_per_second': 0.1, "
           "'train_loss': 0.02, 'epoch': 0.2}")


def bar(n: int, total: int = 6) -> str:
    return f" {100 * n // total:2d}%|██        | {n}/{total} [00:{n:02d}<00:10,  1.00s/it]"


# a terminal capture: tqdm redraws with '\r', tqdm.write clears the bar and prints the dict
WITH_BARS = [
    "{'bos_token_id': 1, 'eos_token_id': 2}",  # a model config printed at start: not a log
    "\r" + bar(0) + "\r" + bar(1) + "\r" + " " * 50 + "\r" + TRAIN1,
    "\r" + bar(1) + "\rProcessed prompts: 100%|██████████| 8/8 [00:05<00:00,  1.6it/s]",  # vLLM's bar
    "\r" + bar(2) + "\r" + " " * 50 + "\r" + TRAIN2,
    "\r" + bar(2) + "\r" + bar(3) + "\r" + bar(4) + "\r" + " " * 50 + "\r" + TRAIN4,
    "\r" + bar(4) + "\r  0%|          | 0/3 [00:00<?, ?it/s]\r 67%|██████▋   | 2/3 [00:01<00:00]",
    "\r" + " " * 50 + "\r" + EVAL,
    "\r" + bar(5) + "\r{'loss': 0.1, 'grad_norm': tensor(nan, 'epoch': 0.17}",
    "\r" + bar(6) + "\r" + " " * 50 + "\r" + TRAIN6,
    "\r" + bar(6) + "\r" + " " * 50 + "\r" + SUMMARY,
    "\r100%|██████████| 6/6 [01:02<00:00, 10.4s/it]",
]


@pytest.fixture
def with_bars(tmp_path: Path) -> Path:
    path = tmp_path / "train.log"
    path.write_bytes("\n".join(WITH_BARS).encode() + b"\n\xff\xfe stray bytes\n")
    return path


def test_steps_come_from_the_training_bar(with_bars: Path) -> None:
    meta, skips = SourceMeta(format="trl-console"), SkipLog()
    records = list(read(with_bars, meta, skips))
    assert [(r.step, r.kind, r.where) for r in records] == [
        (1, "metrics", f"{with_bars}:2"), (2, "metrics", f"{with_bars}:4"), (4, "metrics", f"{with_bars}:5"),
        (4, "metrics", f"{with_bars}:7"), (6, "metrics", f"{with_bars}:9"), (6, "summary", f"{with_bars}:10"),
    ]
    assert len(records[0].values) == 15 and records[0].values["completions/mean_length"] == 506.75
    assert math.isnan(float(records[1].values["grad_norm"])) and math.isnan(float(records[1].values["kl"]))
    assert records[3].values == {"eval_loss": 0.5, "eval_reward": 0.61, "eval_runtime": 3.2,
                                 "eval_samples_per_second": 10.0, "eval_steps_per_second": 1.0}
    assert records[5].values["train_loss"] == 0.02
    assert meta.notes == [] and meta.framework == "trl"
    assert skips.count == 1
    assert re.match(rf"^{re.escape(str(with_bars))}:8: the logged dict is not a Python dict repr "
                    r"\(at character \d+: .*\); the line was skipped$", skips.reasons[0])


def test_load_with_bars(with_bars: Path) -> None:
    assert find_reader(with_bars).format == "trl-console"
    run = load(with_bars)[0]
    assert (run.format, run.framework) == ("trl-console", "trl")
    assert list(run.steps) == [1, 2, 4, 6] and list(run.train_steps) == [1, 2, 4, 6]
    assert run.raw.filter(run.raw["step"] == 4)["eval_reward"][0] == 0.61
    assert run.summary["train_runtime"] == 62.1
    assert not any("logged twice" in n for n in run.notes)  # eval 'epoch' does not collide
    assert set(run.raw.columns) - {"step"} == set(run.unmapped) | set(run.key_map)


PIPED = [  # disable_tqdm=True or a non-terminal: only the dicts
    "***** Running training *****",
    TRAIN1,
    TRAIN2,
    EVAL,
    TRAIN4,
    SUMMARY,
]


def test_without_bars_steps_are_numbered_and_noted(tmp_path: Path) -> None:
    path = tmp_path / "piped.log"
    path.write_text("\n".join(PIPED) + "\n")
    meta = SourceMeta(format="trl-console")
    records = list(read(path, meta, SkipLog()))
    assert [(r.step, r.kind) for r in records] == [(1, "metrics"), (2, "metrics"), (2, "metrics"),
                                                   (3, "metrics"), (3, "summary")]
    assert len(meta.notes) == 1
    assert re.search(r"3 of 3 training dicts .* inferred by order .* trainer_state\.json", meta.notes[0])
    out = io.StringIO()
    assert main(["inspect", "--json", str(path)], out=out, err=io.StringIO()) == 0
    got = json.loads(out.getvalue())
    assert (got["framework"], got["format"], got["steps"], got["last_step"]) == ("trl", "trl-console", 3, 3)
    assert got["summary"]["train_loss"] == 0.02


def test_first_dict_after_a_long_startup_is_found(tmp_path: Path) -> None:
    path = tmp_path / "late.log"
    noise = "".join(f"Map: {i}%|██| {i}/100 [00:01<00:00, 50.0 examples/s]\n" for i in range(1500))
    path.write_text(noise + TRAIN4 + "\n")
    assert len(noise) > 64 << 10
    assert find_reader(path).format == "trl-console"
    assert [r.step for r in read(path, SourceMeta(format="x"), SkipLog())] == [1]


def test_a_bar_not_redrawn_between_two_dicts_is_not_reused(tmp_path: Path) -> None:
    # fast steps: tqdm's mininterval skipped drawing 2/6, and the evaluation bar (0/5 .. 5/5)
    # was the last bar before the next training dict
    lines = ["\r" + bar(1) + "\r" + TRAIN1, "\r" + bar(1), TRAIN2,
             "\r  0%|          | 0/5 [00:00<?, ?it/s]\r100%|██████████| 5/5 [00:01<00:00]", EVAL, TRAIN4]
    path = tmp_path / "fast.log"
    path.write_text("\n".join(lines) + "\n")
    meta = SourceMeta(format="trl-console")
    assert [r.step for r in read(path, meta, SkipLog())] == [1, 2, 2, 3]
    assert len(meta.notes) == 1
    assert meta.notes[0].startswith(f"{path}: 2 of 3 training dicts had no usable progress bar before them and "
                                    "logging_steps is not in the log, so their steps were inferred by order")


# -- real logs from the corpus (benchmarks/corpus/runs/<id>/) ----------------------------------------------

def _train(path: Path) -> tuple[list[int], list[Record], SourceMeta]:
    meta = SourceMeta(format="trl-console")
    records = list(read(path, meta, SkipLog()))
    return [r.step for r in records if r.kind == "metrics" and "loss" in r.values], records, meta


def test_quoted_values_are_training_records() -> None:
    # transformers formats every float as f"{v:.4g}" before printing: {'loss': '0.6969', ...}
    path = corpus_input("trlconsole__deltacoder_qwen35_9b_dpo_quoted")
    steps, records, meta = _train(path)
    assert steps == list(range(5, 281, 5))  # 56 dicts, each after its own bar (5/283, 10/283, ...)
    first = records[0].values
    assert first["loss"] == 0.6969 and first["learning_rate"] == pytest.approx(6.897e-07)
    assert all(isinstance(v, float) for v in first.values())
    assert any(re.search(r": 856 values were printed as quoted strings .* read as the numbers they print, to 4 "
                         r"significant digits$", n) for n in meta.notes)
    run = load(path)[0]
    assert (run.algorithm, len(run.train_steps), run.last_step) == ("dpo-family", 56, 280)
    # the summary dict prints train_loss '0.5384'; the TrainOutput(metrics={...}) printed after it has it whole
    assert run.summary["train_loss"] == pytest.approx(0.5384172828795631) and run.crash is None


def test_quoted_values_without_bars_are_numbered_by_logging_steps() -> None:
    # a markdown terminal capture: no bar before 10 of the 11 dicts; the bar reached 111/111 (the Unsloth
    # banner's 'Total steps = 111'), so 11 dicts in 111 steps leave logging_steps = 10
    path = corpus_input("trlconsole__llmscgen_granite4_1b_sft_quoted")
    steps, records, meta = _train(path)
    assert steps == list(range(10, 111, 10))
    evals = [(r.step, r.values["eval_loss"]) for r in records if "eval_loss" in r.values]
    assert evals == [(100, 0.3695), (110, 0.3656)]
    assert f"{path}: 10 of 11 metric dicts had no training progress bar of their own; the 11 training dicts were " \
           "numbered by order × logging_steps = 10 (11 dicts in the 111 steps the bar reached, and their epochs " \
           "agree)" in meta.notes
    assert meta.config["max_steps"] == 111 and meta.config["num_train_epochs"] == 3


@pytest.mark.parametrize(("run_id", "count", "logging", "total"), [
    ("trlconsole__hotpotqa_qwen25_3b_grpo_klrunaway", 93, 20, 1875),  # first dict follows bar 620, is step 20
    ("trlconsole__hotpotqa_qwen25_3b_sft", 30, 50, 1524),  # first dict follows bar 509, is step 50
    ("trlconsole__cleancodeqwen_coder7b_dpo", 16, 10, 160),  # first dict glued to bar 50, is step 10
])
def test_bars_drawn_ahead_of_the_dicts_are_not_their_steps(run_id: str, count: int, logging: int,
                                                           total: int) -> None:
    path = corpus_input(run_id)
    steps, _, meta = _train(path)
    assert steps == [logging * i for i in range(1, count + 1)]
    assert steps[-1] <= total  # never beyond the run's total optimisation steps
    note = next(n for n in meta.notes if "numbered by order" in n)
    assert note.startswith(f"{path}: the progress bar ran ahead of the metric dicts (buffered output): a dict "
                           f"follows bar ")
    assert f"numbered by order × logging_steps = {logging} ({count} dicts in the {total} steps" in note


def test_evaluations_attach_to_the_training_step_before_them() -> None:
    path = corpus_input("trlconsole__cleancodeqwen_coder7b_dpo")
    run = load(path)[0]
    assert list(run.train_steps) == list(range(10, 161, 10))
    assert run.validation["eval"]["step"].to_list() == [50, 100, 150]
    assert run.summary["train_runtime"] == 4849.001


def test_dicts_inside_a_markdown_capture_with_banners() -> None:
    # the 📊 banners repeat a subset of each dict's values: they are not records
    path = corpus_input("trlconsole__trldapo_qwen25vl3b_grpo_collapse")
    steps, _, meta = _train(path)
    assert steps == list(range(10, 491, 10)) and meta.crash is None


def test_a_signal_after_step_935_is_a_crash() -> None:
    # the last dict is step 920 (logging every 20 steps), but the bar drew 935/936 before the signal: the
    # crash's last step is the last step the log shows finished, from any line
    path = corpus_input("trlconsole__hotpotqa_qwen25_3b_grpo_v2_sighup")
    run = load(path)[0]
    assert (len(run.train_steps), run.last_step) == (46, 920)
    crash = run.crash
    assert crash is not None and crash.kind == "signal" and crash.last_step == 935
    assert crash.exception == "torch.distributed.elastic.multiprocessing.api.SignalException"
    assert crash.message == "Process 12152 got signal: 1" and crash.where == f"{path}:140"


def test_an_nccl_warning_after_a_normal_end_is_no_crash() -> None:
    run = load(corpus_input("trlconsole__hotpotqa_qwen25_3b_grpo_v3"))[0]
    assert (len(run.train_steps), run.last_step, run.crash, run.crash_scanned) == (46, 920, None, True)


def test_keyboard_interrupt_mid_run() -> None:
    path = corpus_input("trlconsole__trldapo_qwen25vl3b_grpo_interrupted")
    run = load(path)[0]
    assert list(run.train_steps) == [10, 20, 30, 40]
    assert run.crash is not None and (run.crash.exception, run.crash.kind, run.crash.last_step) == (
        "KeyboardInterrupt", "signal", 44)  # the last dict is step 40; the bar drew 44/29790 before Ctrl-C
    assert run.crash.origin == "trl/trainer/attention_metrics.py:105 in _collect_llm_attention_for_sample"


# -- constructed: cases no corpus log shows --------------------------------------------------------------

def _dict(loss: float, epoch: float) -> str:
    return f"{{'loss': {loss}, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': {epoch}}}"


def test_logging_steps_printed_in_the_log_numbers_the_dicts(tmp_path: Path) -> None:
    # constructed: TrainingArguments printed, dicts piped without bars (disable_tqdm)
    path = tmp_path / "args.log"
    path.write_text("TrainingArguments(\n_n_gpu=1,\nlogging_steps=25,\nmax_steps=100,\n)\n"
                    + "\n".join(_dict(0.5 - i / 10, 0.25 * i) for i in range(1, 5)) + "\n")
    steps, _, meta = _train(path)
    assert steps == [25, 50, 75, 100]
    assert meta.notes == [f"{path}: no training progress bar was drawn before the metric dicts; the 4 training dicts "
                          "were numbered by order × logging_steps = 25 (as printed in the log)"]


def test_logging_first_step_is_read_from_the_epochs(tmp_path: Path) -> None:
    # constructed: logging_first_step=True puts a dict at step 1, then every 10 steps of 100 (1 epoch)
    path = tmp_path / "first.log"
    lines = [_dict(0.9, 0.01), _dict(0.8, 0.1), _dict(0.7, 0.2), _dict(0.6, 0.3),
             "{'train_runtime': 10.0, 'train_samples_per_second': 1.0, 'train_steps_per_second': 1.0, "
             "'train_loss': 0.7, 'epoch': 1.0}", "  Num Epochs = 1", "  Total optimization steps = 100"]
    path.write_text("\n".join(lines[-2:] + lines[:-2]) + "\n")
    steps, _, meta = _train(path)
    assert steps == [1, 10, 20, 30]
    assert meta.notes[0].endswith("logging_steps = 10 (the dicts' epochs at 100 steps per epoch), after step 1")


def test_a_dict_glued_to_text_that_does_not_parse_is_skipped_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.log"
    path.write_text(" 10%|█| 1/10 [00:01<00:09]" + _dict(0.5, 0.1) + "\n"
                    + " 20%|█| 2/10 [00:02<00:08]{'loss': 0.4, 'grad_norm': 0.5, 'epoch': 0.2\n")
    meta, skips = SourceMeta(format="trl-console"), SkipLog()
    assert [r.step for r in read(path, meta, skips)] == [1]
    assert skips.count == 1
    assert re.match(rf"^{re.escape(str(path))}:2: the logged dict is not a Python dict repr \(at character \d+: "
                    r"expected .*\); the line was skipped$", skips.reasons[0])


def test_a_dict_cut_at_4096_characters_keeps_its_whole_values(tmp_path: Path) -> None:
    # constructed: a W&B output.log line of a long GRPO dict, cut at 4,096 characters inside a value
    items = ", ".join(f"'rewards/f{i}/mean': 0.{i:04d}" for i in range(200))
    line = ("{'loss': 0.25, 'grad_norm': 0.5, " + items)[:4096]
    path = tmp_path / "output.log"
    path.write_text(line + "\n")
    meta, skips = SourceMeta(format="trl-console"), SkipLog()
    [record] = list(read(path, meta, skips))
    assert record.values["loss"] == 0.25 and record.values["rewards/f1/mean"] == 0.0001
    whole = [piece.lstrip("{").split("':")[0].strip("'") for piece in line.split(", ")[:-1]]  # before the cut
    assert list(record.values) == whole
    assert skips.reasons == [f"{path}:1: the line is 4096 characters long, where W&B's console capture cuts "
                             f"lines: the dict was cut off; the value the cut went through was skipped and the "
                             f"{len(record.values)} values before it were kept"]


def test_a_pretty_printed_dict_over_several_lines_is_one_record(tmp_path: Path) -> None:
    # constructed: pprint(trainer.state.log_history[-1]) / pprint(metrics) put one item on a line
    path = tmp_path / "pp.log"
    path.write_text(_dict(0.5, 0.5) + "\n" + _dict(0.4, 1.0) + "\n"
                    "{'train_loss': 0.45,\n 'train_runtime': 5.0,\n 'train_samples_per_second': 1.0,\n"
                    " 'train_steps_per_second': 1.0}\n"
                    "{'loss': 0.3,\n 'grad_norm': 'oops\n")
    meta, skips = SourceMeta(format="trl-console"), SkipLog()
    records = list(read(path, meta, skips))
    assert [(r.step, r.kind) for r in records] == [(1, "metrics"), (2, "metrics"), (2, "summary")]
    assert records[2].values["train_runtime"] == 5.0
    assert skips.reasons == [f"{path}:7: a dict printed over 2 lines does not close before the end of the log; "
                             "its lines were skipped"]


def test_a_pretty_printed_dict_cut_by_other_output_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "pp.log"
    path.write_text("{'train_loss': 0.45,\n 'train_runtime': 5.0,\nSaving model checkpoint to out/\n"
                    + _dict(0.4, 1.0) + "\n")
    meta, skips = SourceMeta(format="trl-console"), SkipLog()
    assert [r.step for r in read(path, meta, skips)] == [1]
    assert skips.reasons == [f"{path}:1: a dict printed over 2 lines does not close; its lines were skipped"]


_CONSOLES = sorted(p.parent for p in (Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs").glob(
    "trlconsole__*/labels.toml"))


#: logs whose stdout reached the file in blocks during the run (the bar ahead of the dicts): an estimate from the
#: bar drawn before each dict numbers every cut as the whole log is numbered. (The qwen35 logs got every dict
#: after the bar had finished: a cut of them is an estimate that the end changes, and says so.)
_BLOCK_BUFFERED = {"trlconsole__nips-grpo-dynamics__qwen25-7b-grpo-entropy-blowup",
                   "trlconsole__nips-grpo-dynamics__qwen25-7b-adabalance-cap-collapse",
                   "trlconsole__hotpotqa_qwen25_3b_grpo_klrunaway", "trlconsole__hotpotqa_qwen25_3b_sft",
                   "trlconsole__cleancodeqwen_coder7b_dpo"}


@pytest.mark.parametrize("folder", _CONSOLES, ids=lambda p: p.name)
def test_a_cut_console_reads_as_the_start_of_the_whole_or_says_its_steps_are_estimated(
        folder: Path, tmp_path: Path) -> None:
    """A log cut at any line, as a watcher sees it while the run writes it: its steps are the first steps of
    the whole log's reading, or the reading says they are an estimate; they never pass the bar's total."""
    import tomllib

    from rlvitals.errors import RlvitalsError
    from rlvitals.run.load import load

    source = folder / tomllib.loads((folder / "labels.toml").read_text())["run"]["input"]
    whole = load(source)[0]
    final = [int(s) for s in whole.steps]
    lines = source.read_bytes().splitlines(keepends=True)
    cut = tmp_path / source.name
    for k in range(1, 20):
        cut.write_bytes(b"".join(lines[: len(lines) * k // 20]))
        try:
            run = load(cut)[0]
        except RlvitalsError:
            continue  # no dict yet
        steps = [int(s) for s in run.steps]
        assert max(steps) <= max(final[-1], whole.reached or 0), (k, steps[-3:])
        if not run.estimated_steps or folder.name in _BLOCK_BUFFERED:
            assert steps == final[: len(steps)], (k, steps[:4], final[:4])


def test_dicts_flushed_from_stdout_after_the_traceback_do_not_undo_the_crash(tmp_path: Path) -> None:
    """``python train.py > log 2>&1`` dying of an exception: the traceback (stderr) reaches the file first, the
    metric dicts still in stdout's buffer after it, as the process exits. The bar did not move after the
    traceback: the run died; it did not go on. (A real OOM log, its 13 dicts moved after the traceback.)"""
    from rlvitals.run.load import load

    folder = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
    source = folder / "trlconsole__nips-grpo-dynamics__qwen35-9b-g3-nosignal-oom" / "w6_G3_rho0.70_seed44.log"
    lines = source.read_bytes().splitlines(keepends=True)
    dicts = [i for i, line in enumerate(lines) if line.startswith(b"{'loss'")]
    assert len(dicts) == 13 and dicts == list(range(dicts[0], dicts[-1] + 1))
    flushed = tmp_path / source.name
    flushed.write_bytes(b"".join(lines[: dicts[0]] + lines[dicts[-1] + 1:] + lines[dicts[0]: dicts[-1] + 1]))
    as_written, at_exit = load(source)[0], load(flushed)[0]
    assert as_written.crash is not None and at_exit.crash is not None
    assert at_exit.crash.exception == as_written.crash.exception == "torch.OutOfMemoryError"
    assert list(at_exit.train_steps) == list(as_written.train_steps)


def test_a_capture_whose_bar_stays_at_zero_is_numbered_by_its_epochs_at_every_cut(tmp_path: Path) -> None:
    """A terminal capture pasted into markdown (the bar's redraws lost: it shows 0/111, then 100/111 before the
    dict of step 110): with the banner's 111 steps in 3 epochs the dicts' epochs give their steps exactly, so a
    cut after any dict reads as the start of the whole, exact, never as steps 1, 2, 3 by order, nor as the
    multiples of 9 the bar's 100 would allow."""
    from rlvitals.run.load import load

    source = corpus_input("trlconsole__llmscgen_granite4_1b_sft_quoted")
    final = [int(s) for s in load(source)[0].steps]
    lines = source.read_bytes().splitlines(keepends=True)
    dicts = [i for i, line in enumerate(lines) if line.startswith(b"{'loss'")]
    cut = tmp_path / source.name
    for i in dicts:
        cut.write_bytes(b"".join(lines[: i + 1]))
        run = load(cut)[0]
        steps = [int(s) for s in run.steps]
        assert steps == final[: len(steps)] and not run.estimated_steps, (i, steps[:4])

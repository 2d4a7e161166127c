"""veRL console logs: the real public logs, and a crafted log with every edge case at once."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rlvitals
from rlvitals import load
from rlvitals.cli import main
from rlvitals.ingest import SkipLog, SourceMeta, find_reader
from rlvitals.ingest.formats.verl_console import hydra_overrides, parse_step_line, read, sniff, split_prefix

GRPO = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
PPO = "verl__verl_training_log__ppo_run_deepseek7b_llm.log"
QWEN = "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log"
GEMMA = "verl__verl-data__gemma-2-2b-it-ppo-bsz512_4-prompt1024-resp-512-0.640.log"
SFT = "verl__verl-data__gemma-2-2b-it-sft-0.411.log"
MEGATRON = "verl__verldata__qwen2-7b_math_megatron.log"

# (file, steps on the axis, first, last, steps with training metrics, first, last, adv_estimator)
# The deepseek runs print a validation-only line for step 1120 after the last training step 1119;
# the SFT run's step 58 is its final validation; the Megatron run validates before training.
REAL = [
    (GRPO, 1120, 1, 1120, 1119, 1, 1119, "grpo"),
    (PPO, 1120, 1, 1120, 1119, 1, 1119, None),
    (QWEN, 435, 0, 434, 435, 0, 434, "gae"),
    (GEMMA, 106, 0, 105, 106, 0, 105, "gae"),
    (SFT, 59, 0, 58, 58, 0, 57, None),
    (MEGATRON, 106, 0, 105, 105, 1, 105, "gpg"),
]


def _at(run: rlvitals.Run, key: str, step: int, frame: str = "raw") -> float:
    df = getattr(run, frame).filter(pl.col("step") == step)
    assert df.height == 1, f"step {step} is not on the axis"
    return float(df[key][0])


@pytest.mark.parametrize(("name", "n", "first", "last", "n_train", "first_train", "last_train", "adv"), REAL)
def test_real_logs_steps_and_config(real: Path, name: str, n: int, first: int, last: int, n_train: int,
                                    first_train: int, last_train: int, adv: str | None) -> None:
    path = real / name
    assert find_reader(path).format == "verl-console"
    run = load(path)[0]
    assert (run.format, run.framework) == ("verl-console", "verl")
    assert (len(run.steps), run.steps[0], run.steps[-1]) == (n, first, last)
    train = run.train_steps
    assert (len(train), train[0], train[-1]) == (n_train, first_train, last_train)
    # the same count straight from the raw keys, independent of the catalog
    keys = [c for c in run.raw.columns if c != "step" and not c.startswith(("val", "test"))]
    has_train = run.raw.select(pl.any_horizontal([pl.col(k).is_not_null() for k in keys])).to_series()
    assert int(has_train.sum()) == n_train
    assert run.config.get("algorithm.adv_estimator") == adv
    assert run.skipped.count == 0
    assert set(run.raw.columns) - {"step"} == set(run.unmapped) | set(run.key_map)


def test_real_values_dec_2024_ppo(real: Path) -> None:
    run = load(real / QWEN)[0]
    assert _at(run, "actor/lr(1e-4)", 0) == pytest.approx(0.010)
    assert _at(run, "actor/lr", 0, "frame") == pytest.approx(1e-6)  # printed divided by 1e-4
    assert _at(run, "critic/vf_loss", 0) == 14.012
    assert _at(run, "critic/kl", 0) == 0.0 and math.copysign(1, _at(run, "critic/kl", 0)) == -1
    assert _at(run, "actor/pg_loss", 434) == -0.011
    # the config dump spans 98 lines with a worker's output interleaved
    assert run.config["actor_rollout_ref.actor.optim.lr"] == 1e-06
    assert run.config["trainer.logger"] == ["console"]
    assert run.config["trainer.total_epochs"] == 15  # its last line, after the worker's lines


def test_real_values_validation_line_merges_with_training_line(real: Path) -> None:
    run = load(real / GEMMA)[0]
    assert _at(run, "test_score/openai/gsm8k", 0) == 0.521  # "step:0 - test_score/..." line
    assert _at(run, "critic/vf_loss", 0) == 1.319  # the next line, also step 0
    assert _at(run, "prompt_length/min", 105) == 37.0  # the last line, which has no newline
    assert any(re.search(r"\.log:529: the last line has no newline", n) for n in run.notes)


def test_real_config_dump_with_lines_lost_to_ray_dedup(real: Path) -> None:
    run = load(real / GEMMA)[0]
    # Ray dropped lines that repeated other workers' output and glued a worker's line onto
    # 'experiment_name'; the settings are still placed by their indentation
    assert run.config["reward_model.model.path"] == "~/models/FsfairX-LLaMA3-RM-v0.1"
    assert run.config["reward_model.strategy"] == "fsdp"
    assert run.config["critic.optim.lr"] == 1e-05
    assert run.config["trainer.experiment_name"] == "gemma2b_function_rm"
    assert run.config["trainer.logger"] == ["console", "wandb"]  # after the glued line
    assert not any(k.startswith("reward_model.trainer") for k in run.config)
    assert any(re.search(r"\.log:9: lines of the config dump are missing", n) for n in run.notes)


def test_real_values_mar_2025_grpo(real: Path) -> None:
    run = load(real / GRPO)[0]
    assert _at(run, "val/test_score/openai/gsm8k", 10) == 0.648
    assert _at(run, "actor/kl_loss", 10) == 0.030
    assert _at(run, "Tokens/Sec/GPU", 1) == 1448.439
    assert _at(run, "val/test_score/openai/gsm8k", 1120) == 0.697
    assert run.raw.filter(pl.col("step") == 1120)["actor/kl_loss"][0] is None  # validation only
    # from the command line, continued over lines with '\'
    assert run.config["actor_rollout_ref.rollout.n"] == 5
    assert run.config["trainer.val_before_train"] is False  # '+trainer.val_before_train=False'
    assert run.config["trainer.project_name"] == "grpo_deepseek7b_llm"  # quotes removed
    assert run.config["trainer.logger"] == ["console", "wandb"]
    assert run.config["actor_rollout_ref.model.path"] == "$MODEL_PATH"


def test_real_values_ppo_and_megatron(real: Path) -> None:
    run = load(real / PPO)[0]
    assert _at(run, "critic/vf_loss", 1) == 0.161
    assert run.config["critic.optim.lr"] == 1e-5
    run = load(real / MEGATRON)[0]
    assert _at(run, "val-core/openai/gsm8k/reward/mean@1", 0) == 0.212
    assert _at(run, "actor/entropy", 105, "frame") == 0.064
    assert run.config["data.train_files"] == ["/root/data/gsm8k/train.parquet"]
    assert run.config["actor_rollout_ref.actor.checkpoint.load_contents"] == ["model", "optimizer", "extra"]


def test_real_sft_log(real: Path) -> None:
    run = load(real / SFT)[0]
    assert _at(run, "train/lr(1e-3)", 0) == 0.002
    # step 29 is printed twice: "step:29 - val/loss:0.420" (line 92), then the training line 102
    assert (_at(run, "val/loss", 29), _at(run, "train/loss", 29)) == (0.420, 0.010)
    assert _at(run, "val/loss", 58) == 0.411
    # the one-line dump says 4 where the command line said 8 (veRL divides by the dp size)
    assert run.config["data.micro_batch_size"] == 4
    assert run.config["data.prompt_dict_keys"] == ["question"]
    assert run.config["optim.betas"] == [0.9, 0.95]


def test_cli_inspect_json(real: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", "--json", str(real / QWEN)], out=out, err=err) == 0
    got = json.loads(out.getvalue())
    assert (got["framework"], got["format"]) == ("verl", "verl-console")
    assert (got["steps"], got["first_step"], got["last_step"]) == (435, 0, 434)
    assert got["config_keys"] == 99
    assert err.getvalue() == ""


# -- a crafted log with every edge case ------------------------------------------------------------
P = b"\x1b[36m(TaskRunner pid=1234)\x1b[0m "
CRAFTED = [
    b"++ python3 -m verl.trainer.main_ppo \\",
    b"    algorithm.adv_estimator=gae \\",
    b"    '+trainer.val_before_train=True' ++data.train_batch_size=8",
    P + b"{'actor_rollout_ref': {'actor': {'optim': {'lr': 1e-06}}},",
    b"\x1b[36m(WorkerDict pid=99)\x1b[0m  interleaved worker output",
    P + b" 'algorithm': {'adv_estimator': 'grpo', 'kl_ctrl': {'kl_coef': nan, 'max': inf}},",
    P + b" 'trainer': {'total_epochs': 2}}",
    b"\x1b[2m" + P + b"step:0 - val-core/openai/gsm8k/reward/mean@1:0.212",
    P + b"step:1 - actor/pg_loss:np.float64(0.0070) - actor/entropy:0.5 - critic/score/mean:nan"
        b" - actor/grad_norm:inf - mfu/actor:np.int64(3)",
    b"Training Progress:  50%|\xe2\x96\x88\xe2\x96\x88    | 1/2 [00:10<00:10,  1.0s/it]\r"
        b"step:2 - actor/ppo_kl:np.float64(nan - actor/entropy:0.4 - actor/lr(1e-4):0.010"
        b" - response_length/mean:12\xff",
    b"Let's solve it step by step: step:3 - not:1",
    P + b"step:3 - actor/entropy:0.3 - actor/pg_loss:-inf\r Training Progress: 100%| 2/2 [00:20<00:00]",
    b"step:4 - garbage",
    b"\xc3\x28 model output with a broken byte",
    b"step:5 - actor/entropy:0.25 - actor/pg_lo",
]


@pytest.fixture
def crafted(tmp_path: Path) -> Path:
    path = tmp_path / "run.log"
    path.write_bytes(b"\n".join(CRAFTED))  # no newline at the end: the trainer is still writing
    return path


def _same(a: dict[str, float | str], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(
        (math.isnan(b[k]) and math.isnan(float(a[k]))) or a[k] == b[k] for k in a)


def test_crafted_log_records(crafted: Path) -> None:
    meta, skips = SourceMeta(format="verl-console"), SkipLog()
    records = list(read(crafted, meta, skips))
    expected = [
        (0, 8, {"val-core/openai/gsm8k/reward/mean@1": 0.212}),
        (1, 9, {"actor/pg_loss": 0.007, "actor/entropy": 0.5, "critic/score/mean": math.nan,
                "actor/grad_norm": math.inf, "mfu/actor": 3.0}),
        (2, 10, {"actor/entropy": 0.4, "actor/lr(1e-4)": 0.010}),
        (3, 12, {"actor/entropy": 0.3, "actor/pg_loss": -math.inf}),
        (5, 15, {"actor/entropy": 0.25}),
    ]
    assert len(records) == len(expected)
    for record, (step, line, values) in zip(records, expected, strict=True):
        assert record.step == step and record.where == f"{crafted}:{line}"
        assert _same(record.values, values), record.values
    assert meta.framework == "verl"


def test_crafted_log_skips(crafted: Path) -> None:
    meta, skips = SourceMeta(format="verl-console"), SkipLog()
    list(read(crafted, meta, skips))
    where = re.escape(str(crafted))
    patterns = [
        rf"^{where}:10: value 'np\.float64\(nan' for 'actor/ppo_kl' is not a number; the value was skipped$",
        rf"^{where}:10: value '12\ufffd' for 'response_length/mean' is not a number; the value was skipped$",
        rf"^{where}:13: no readable key:value pair after 'step:4' \('garbage' is not a key:value pair\);"
        r" the line was skipped$",
        rf"^{where}:15: 'actor/pg_lo' is not a key:value pair; the value was skipped$",
    ]
    assert skips.count == len(patterns)
    for reason, pattern in zip(skips.reasons, patterns, strict=True):
        assert re.match(pattern, reason), reason
    assert any(re.match(rf"^{where}:15: the last line has no newline", n) for n in meta.notes)


def test_crafted_log_config(crafted: Path) -> None:
    meta = SourceMeta(format="verl-console")
    list(read(crafted, meta, SkipLog()))
    config = meta.config
    assert config["algorithm.adv_estimator"] == "grpo"  # the dump beats the command line's 'gae'
    assert config["trainer.val_before_train"] is True and config["data.train_batch_size"] == 8
    assert config["actor_rollout_ref.actor.optim.lr"] == 1e-06
    assert math.isnan(config["algorithm.kl_ctrl.kl_coef"]) and config["algorithm.kl_ctrl.max"] == math.inf
    assert config["trainer.total_epochs"] == 2


def test_crafted_log_through_load(crafted: Path) -> None:
    assert find_reader(crafted).format == "verl-console"
    run = load(crafted)[0]
    assert list(run.steps) == [0, 1, 2, 3, 5]
    assert list(run.train_steps) == [1, 2, 3, 5]
    assert run.skipped.count == 4


def test_sniff_looks_past_a_long_startup(tmp_path: Path) -> None:
    path = tmp_path / "late.log"
    noise = b"".join(b"(WorkerDict pid=7) loading layer #%d...\n" % i for i in range(5000))
    path.write_bytes(noise + P + b"step:1 - actor/entropy:0.5\n")
    assert len(noise) > 64 << 10
    assert find_reader(path).format == "verl-console"
    assert [r.step for r in read(path, SourceMeta(format="x"), SkipLog())] == [1]


def test_timestamped_lines(tmp_path: Path) -> None:
    path = tmp_path / "ts.log"
    path.write_bytes(b"2025-06-19 03:10:00 starting\n"
                     b"2025-06-19 03:10:05 step:1 - actor/entropy:0.5\n"
                     b"[2025-06-19 03:10:09] " + P + b"step:2 - actor/entropy:0.4\n"
                     b"2025-06-19 03:10:12 we are at step:3 - x:1\n")
    assert find_reader(path).format == "verl-console"
    records = list(read(path, SourceMeta(format="x"), SkipLog()))
    assert [(r.step, r.values) for r in records] == [(1, {"actor/entropy": 0.5}), (2, {"actor/entropy": 0.4})]


def test_sniff_refuses_prose(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"first step: install\nLet's think step:1 - x:2 by step\n")
    assert not sniff(path, path.read_bytes())


def test_split_prefix() -> None:
    assert split_prefix("\x1b[2m\x1b[36m(main_task pid=64899)\x1b[0m  'a': 1") == ("(main_task pid=64899)", " 'a': 1")
    assert split_prefix("(WorkerDict pid=1, ip=10.0.0.2) text") == ("(WorkerDict pid=1, ip=10.0.0.2)", "text")
    assert split_prefix("(not a prefix) text") == ("", "(not a prefix) text")


def test_hydra_overrides() -> None:
    command = ("torchrun --nproc_per_node=2 -m verl.trainer.fsdp_sft_trainer data.micro_batch_size=8 "
               "'+data.prompt_dict_keys=[question]' ++model.lr=1e-5 trainer.logger=['console','wandb'] "
               "'data.train_files=['\\''/root/a.parquet'\\'']' trainer.default_hdfs_dir=null x.flag=True "
               "--config-name=ppo_trainer ~drop.me")
    assert hydra_overrides(command) == {
        "data.micro_batch_size": 8, "data.prompt_dict_keys": ["question"], "model.lr": 1e-5,
        "trainer.logger": ["console", "wandb"], "data.train_files": ["/root/a.parquet"],
        "trainer.default_hdfs_dir": None, "x.flag": True,
    }
    assert hydra_overrides("echo algorithm.adv_estimator=grpo") == {}
    assert hydra_overrides("python3 -m verl.trainer.main_ppo 'unbalanced=x") == {}


keys = st.text(st.sampled_from("abcxyz_/@-.():0123456789"), min_size=1, max_size=24).filter(
    lambda k: " - " not in k and not k.startswith(" ") and not k.endswith(" "))


@given(st.integers(0, 10**6), st.dictionaries(keys, st.floats()), st.sampled_from(["full", "3f", "np"]))
def test_step_line_round_trips(step: int, metrics: dict[str, float], style: str) -> None:
    def fmt(v: float) -> str:
        if style == "3f" and math.isfinite(v):
            return f"{v:.3f}"
        return f"np.float64({v!r})" if style == "np" else repr(v)

    line = " - ".join([f"step:{step}"] + [f"{k}:{fmt(v)}" for k, v in metrics.items()])
    skips = SkipLog()
    record = parse_step_line(line, step, "x:1", skips)
    if not metrics:
        assert record is None and skips.count == 1
        return
    assert record is not None and skips.count == 0 and record.step == step
    expected = {k: float(fmt(v).removeprefix("np.float64(").removesuffix(")")) for k, v in metrics.items()}
    assert _same(record.values, expected)


# -- logs that end in a traceback (the corpus, benchmarks/corpus/runs/<id>/) -----------------------------

@pytest.mark.parametrize(("run_id", "exception", "kind", "line", "origin"), [
    ("verl__agent-opd__qwen2.5-3b-resp16k-cuda-oom", "torch.OutOfMemoryError", "oom", 83,
     "verl/workers/actor/dp_actor.py:483 in update_policy"),
    ("verl__chrisytz-verl__tpu-ppo-hbm-oom", "RuntimeError", "oom", 5119,
     "verl/workers/critic/dp_critic.py:141 in _optimizer_step"),
    ("verl__crrl__search-r1-ppo-cuda-oom", "torch.cuda.OutOfMemoryError", "oom", 4333,
     "verl/workers/actor/dp_actor.py:276 in update_policy"),
    ("verl__logic-rl-formula__grpo-worker-import-crash", "ImportError", "import", 224,
     "flash_attn/flash_attn_interface.py:15 in <module>"),
    ("verl__verl-maze__ppo-reward-fn-crash", "NotImplementedError", "error", 292,
     "verl/utils/reward_score/__init__.py:37 in _default_compute_score"),
])
def test_a_log_that_is_only_a_traceback_is_a_crashed_run(run_id: str, exception: str, kind: str, line: int,
                                                         origin: str) -> None:
    from corpus import corpus_input, corpus_labels

    path = corpus_input(run_id)
    assert find_reader(path).format == "verl-console"  # never "not a training log"
    run = load(path)[0]
    labels = corpus_labels(run_id)
    assert (run.format, run.framework, run.algorithm) == ("verl-console", "verl", labels["algorithm"])
    assert (len(run.train_steps), run.last_step) == (0, None)
    crash = run.crash
    assert crash is not None
    assert (crash.exception, crash.kind, crash.where, crash.origin, crash.last_step) == (
        exception, kind, f"{path}:{line}", origin, None)


def test_the_oom_message_is_the_one_that_killed_it() -> None:
    from corpus import corpus_input

    run = load(corpus_input("verl__chrisytz-verl__tpu-ppo-hbm-oom"))[0]
    assert run.crash is not None and run.crash.oom
    assert run.crash.message.startswith("XLA:TPU compile permanent error. Ran out of memory in memory space hbm.")
    # the algorithm of a run that died before its first step comes from Hydra's last words
    assert run.config["data.train_batch_size"] == 256


def test_an_import_crash_names_the_import_and_keeps_what_followed() -> None:
    from corpus import corpus_input

    crash = load(corpus_input("verl__logic-rl-formula__grpo-worker-import-crash"))[0].crash
    assert crash is not None and "undefined symbol" in crash.message
    assert "AssertionError: failed to get register_center_actor: V9zrH5_register_center in []" in crash.causes


def test_hydra_overrides_beside_the_log_are_its_config() -> None:
    # a W&B output.log starts after veRL's config dump; the Hydra overrides.yaml was copied beside it
    from corpus import corpus_input

    path = corpus_input("verl__agent-opd__qwen2.5-3b-resp16k-cuda-oom")
    run = load(path)[0]
    assert run.config["algorithm.adv_estimator"] == "grpo" and run.config["data.max_response_length"] == 16384
    assert f"{path.parent / 'overrides.yaml'}: 56 Hydra overrides beside the log were read as its config" in run.notes


def test_a_sigterm_after_the_final_validation_is_no_crash(real: Path) -> None:
    run = load(real / MEGATRON)[0]
    assert (run.crash, run.crash_scanned) == (None, True)


def test_a_traceback_the_training_went_on_after_is_no_crash(tmp_path: Path) -> None:
    # constructed: a worker printed a traceback at step 2 and training went on to step 3
    path = tmp_path / "survived.log"
    path.write_text("step:1 - actor/pg_loss:0.1\nstep:2 - actor/pg_loss:0.2\nTraceback (most recent call last):\n"
                    '  File "/x/verl/workers/reward_manager/naive.py", line 3, in __call__\n'
                    "ValueError: cannot parse answer\nstep:3 - actor/pg_loss:0.3\n")
    assert load(path)[0].crash is None


def test_a_traceback_after_the_last_step_is_a_crash_with_that_step(tmp_path: Path) -> None:
    # constructed: the same traceback after the last step line, behind Ray prefixes, with caret lines
    path = tmp_path / "died.log"
    path.write_text("step:1 - actor/pg_loss:0.1\nstep:2 - actor/pg_loss:0.2\n"
                    "\x1b[36m(TaskRunner pid=7)\x1b[0m Traceback (most recent call last):\n"
                    '\x1b[36m(TaskRunner pid=7)\x1b[0m   File "/x/verl/trainer/ppo/ray_trainer.py", line 9, in fit\n'
                    "\x1b[36m(TaskRunner pid=7)\x1b[0m     batch = next(it)\n"
                    "\x1b[36m(TaskRunner pid=7)\x1b[0m             ^^^^^^^^\n"
                    "\x1b[36m(TaskRunner pid=7)\x1b[0m ray.exceptions.ActorDiedError: The actor died unexpectedly\n"
                    "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")
    crash = load(path)[0].crash
    assert crash is not None
    assert (crash.exception, crash.kind, crash.last_step, crash.where) == (
        "ray.exceptions.ActorDiedError", "worker", 2, f"{path}:7")
    assert crash.origin == "verl/trainer/ppo/ray_trainer.py:9 in fit"


def test_lines_cut_at_4096_characters_keep_their_other_values() -> None:
    # W&B's console capture (files/output.log) cuts lines at 4,096 characters: the validation-step lines of
    # these runs end in the middle of a value
    from corpus import corpus_input

    path = corpus_input("verl__agent-opd__qwen3-4b-klreward-length-collapse")
    run = load(path)[0]
    cut = [r for r in run.skipped.reasons if "4096 characters long" in r]
    # the file has 27 lines of exactly 4,096 characters: one skip each, the first 20 reasons kept verbatim
    assert (run.skipped.count, len(cut)) == (27, 20)
    assert cut[0] == (f"{path}:207: the line is 4096 characters long, where W&B's console capture cuts lines: the "
                      "last value ('val-aux/aime_2024/score/best@30/mean') was cut off and skipped; the 58 values "
                      "before it were kept")
    with open(path, encoding="utf-8") as fh:
        line = fh.readlines()[206].rstrip("\n")
    assert len(line) == 4096
    # the value before the cut one is read as printed
    last_kept = line.split(" - ")[-2]
    key, _, printed = last_kept.rpartition(":")
    assert run.raw.filter(pl.col("step") == int(line[5:line.index(" ")]))[key].item() == pytest.approx(
        float(printed.removeprefix("np.float64(").rstrip(")")))


def test_a_cut_value_that_still_parses_is_not_kept(tmp_path: Path) -> None:
    # constructed: the cut falls inside a number, which still reads as a (wrong) number
    head = "step:1 - actor/pg_loss:0.5 - actor/entropy:"
    path = tmp_path / "output.log"
    path.write_text(head + "1" * (4096 - len(head)) + "\nstep:2 - actor/pg_loss:0.4 - actor/entropy:1.2\n")
    run = load(path)[0]
    assert run.raw.filter(pl.col("step") == 1)["actor/entropy"].item() is None
    assert run.skipped.count == 1 and "the last value ('actor/entropy') was cut off" in run.skipped.reasons[0]


def test_a_resumed_run_keeps_its_own_step_numbers() -> None:
    # resumed from global_step_100: the log's first training line is step:101, and its job ends cleanly
    from corpus import corpus_input

    run = load(corpus_input("verl__dstack-configs__qwen2.5-7b-ppo-gsm8k-resumed"))[0]
    assert (int(run.train_steps[0]), run.last_step, len(run.train_steps)) == (101, 435, 335)
    assert (run.algorithm, run.crash, run.skipped.count) == ("ppo", None, 0)

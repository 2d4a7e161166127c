"""W&B offline runs written by the real wandb client (offline, no network), read back without it."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wandb_env import offline_wandb

import rlvitals
from rlvitals import load
from rlvitals.ingest import _leveldb, find_reader, wandb_offline
from rlvitals.ingest.record import SkipLog, SourceMeta
from rlvitals.words import Words

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

wandb = pytest.importorskip("wandb")

PROFILING = "profiling/Time taken: GRPOTrainer._prepare_inputs"


def _trl_like(root: Path) -> None:
    """What HF's WandbCallback and TRL do: train/global_step as the step metric with step_sync,
    profiling timings logged in their own calls, eval rows, a completions table, summary totals."""
    run = wandb.init(mode="offline", dir=str(root), project="rlvitals-test", name="trl-like",
                     config={"learning_rate": 1e-6, "beta": 0.04, "model": {"name": "SmolLM2", "layers": 2}})
    run.define_metric("train/global_step")
    run.define_metric("*", step_metric="train/global_step", step_sync=True)
    for gs in range(1, 7):
        run.log({PROFILING: 0.5 + gs})
        run.log({"train/loss": gs / 10, "train/reward": -gs / 3, "train/kl": math.nan if gs == 3 else gs * 1e-3,
                 "train/clip": {"low": gs, "high": gs + 0.5}, "train/global_step": gs})
        if gs % 3 == 0:
            run.log({"eval/loss": 2.0 / gs, "train/global_step": gs})
    table = wandb.Table(columns=["step", "prompt", "completion", "reward"], data=[[6, "1+1?", "2", 1.0]])
    run.log({"completions": table, "train/global_step": 6})
    run.summary["train_runtime"] = 12.5
    run.summary["total_flos"] = 1e12
    run.finish()


def _verl_like(root: Path) -> None:
    """What veRL's wandb backend does: wandb.log(data, step=step) with the verl keys verbatim.
    A long text value makes records span 32 KiB blocks (FIRST/MIDDLE/LAST)."""
    config = {"algorithm": {"adv_estimator": "grpo"}, "actor_rollout_ref": {"actor": {"ppo_mini_batch_size": 4}}}
    run = wandb.init(mode="offline", dir=str(root), project="rlvitals-test", name="verl-like", config=config)
    for step in range(1, 41):
        data = {"actor/pg_loss": step / 100, "critic/score/mean": step / 40,
                "actor/entropy": math.inf if step == 7 else -math.inf if step == 8 else 1 / step}
        if step % 10 == 0:
            data["val-core/openai/gsm8k/reward/mean@4"] = step / 50
        if step == 20:
            data["sample"] = "x" * 70_000
        run.log(data, step=step)
    run.finish()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two real offline runs in one wandb/ folder (written once: wandb starts a service)."""
    root = tmp_path_factory.mktemp("wb")
    with pytest.MonkeyPatch.context() as mp:
        offline_wandb(mp, root)
        _trl_like(root)
        _verl_like(root)
        wandb.teardown()
    yield root / "wandb"


def _runs(written: Path) -> dict[str, Path]:
    """Run folder by run name, read from the run's own wandb file without rlvitals."""
    out = {}
    for folder in sorted(written.glob("offline-run-*")):
        data = next(folder.glob("*.wandb")).read_bytes()
        out["trl-like" if b"trl-like" in data else "verl-like"] = folder
    return out


def at(run: rlvitals.Run, key: str, step: int) -> float | None:
    return run.raw.filter(pl.col("step") == step)[key].item()


def test_a_wandb_folder_holds_one_run_per_run_folder(written: Path) -> None:
    assert find_reader(written).format == "wandb-offline"
    assert wandb_offline.runs(written) == sorted(written.glob("offline-run-*"))
    runs = load(written)
    assert len(runs) == 2 and {r.format for r in runs} == {"wandb-offline"}
    # the service's own log beside the runs is JSON lines of events, not a run of metrics
    assert (written / "debug-internal.log").read_text().startswith('{"time":')


def test_trl_like_run_uses_train_global_step(written: Path) -> None:
    folder = _runs(written)["trl-like"]
    assert find_reader(folder).format == "wandb-offline"
    [run] = load(folder)
    assert run.skipped.count == 0
    # step 0 held only TRL's profiling (logged while the first step ran): no training step, left out and said
    assert run.steps.tolist() == [1, 2, 3, 4, 5, 6]
    assert [n for n in run.notes if "step 0" in n] == [
        f"{next(folder.glob('*.wandb'))}: 1 value at step 0 was TRL's profiling timing alone (logged while the first "
        "step ran, before the trainer's step 1) and was left out: the trainer took no step 0"]
    assert [at(run, "train/loss", s) for s in range(1, 7)] == [s / 10 for s in range(1, 7)]
    assert [at(run, "train/reward", s) for s in range(1, 7)] == [-s / 3 for s in range(1, 7)]
    assert math.isnan(at(run, "train/kl", 3))  # type: ignore[arg-type]
    assert at(run, "train/kl", 4) == 4e-3
    assert [at(run, "train/clip.low", s) for s in (1, 6)] == [1.0, 6.0]
    assert at(run, "train/clip.high", 2) == 2.5
    assert [at(run, "eval/loss", s) for s in (3, 6)] == [2 / 3, 1 / 3]
    # with step_sync W&B itself stamps each profiling row with the last global step seen (0 before any: left out)
    assert run.raw.select("step", PROFILING).drop_nulls().rows() == [(s, s + 1.5) for s in range(1, 6)]
    for gone in ("_step", "_runtime", "_timestamp", "train/global_step"):
        assert gone not in run.raw.columns
    assert not any(c.startswith("completions") for c in run.raw.columns)  # the table is not a metric
    assert run.summary == {"train_runtime": 12.5, "total_flos": 1e12}
    assert run.config == {"learning_rate": 1e-6, "beta": 0.04, "model.name": "SmolLM2", "model.layers": 2}


def test_verl_like_run_uses_the_logged_step(written: Path) -> None:
    folder = _runs(written)["verl-like"]
    file = next(folder.glob("*.wandb"))
    assert find_reader(file).format == "wandb-offline"
    [run] = load(file)
    assert run.skipped.count == 0
    assert run.steps.tolist() == list(range(1, 41))
    assert run.raw["actor/pg_loss"].to_list() == [s / 100 for s in range(1, 41)]
    assert at(run, "actor/entropy", 7) == math.inf and at(run, "actor/entropy", 8) == -math.inf
    assert run.raw.select("step", "val-core/openai/gsm8k/reward/mean@4").drop_nulls().rows() == [
        (s, s / 50) for s in (10, 20, 30, 40)]
    assert run.text["sample"] == {20: "x" * 70_000}
    assert run.config["algorithm.adv_estimator"] == "grpo"
    assert run.config["actor_rollout_ref.actor.ppo_mini_batch_size"] == 4


def _read(path: Path) -> tuple[list[tuple[int, dict[str, object]]], SkipLog]:
    skips = SkipLog()
    got = [(r.step, r.values) for r in wandb_offline.read(path, SourceMeta("wandb-offline"), skips)
           if r.kind == "metrics"]
    return got, skips


@pytest.mark.parametrize("keep", [0.35, 0.5, 0.8, 0.999])
def test_a_killed_run_reads_every_complete_record_and_counts_the_tail(written: Path, tmp_path: Path,
                                                                       keep: float) -> None:
    source = next(_runs(written)["verl-like"].glob("*.wandb"))
    full, _ = _read(source)
    data = source.read_bytes()
    assert len(data) > 2 * _leveldb.BLOCK  # the long value spans blocks
    cut = tmp_path / "run-killed.wandb"
    cut.write_bytes(data[: int(len(data) * keep)])
    got, skips = _read(cut)
    assert skips.count == 1
    assert skips.reasons[0].startswith(f"{cut}#record ")
    assert skips.reasons[0].endswith("truncated record at the end of the file (the run was killed or is "
                                     "still writing); the incomplete tail was skipped")
    assert got == full[: len(got)] and len(got) < len(full)
    if keep > 0.99:
        assert len(got) >= len(full) - 1


def _inside_a_record(data: bytes, after: int) -> int:
    """The middle of the data of the first record in block 0 that starts after ``after``: there a flipped
    byte breaks only the checksum. (Byte positions move with the run's timestamps, so a fixed one may
    fall on a record's length field instead, which is another kind of corruption.)"""
    pos = _leveldb.HEADER_LEN
    while pos + 7 <= _leveldb.BLOCK:
        length = int.from_bytes(data[pos + 4:pos + 6], "little")
        if pos > after and length > 2:
            return pos + 7 + length // 2
        pos += 7 + length
    raise AssertionError(f"no record starts between byte {after} and the end of block 0")


def test_a_corrupt_block_loses_only_that_block(written: Path, tmp_path: Path) -> None:
    source = next(_runs(written)["verl-like"].glob("*.wandb"))
    full, _ = _read(source)
    data = bytearray(source.read_bytes())
    data[_inside_a_record(bytes(data), after=3000)] ^= 0xFF  # a data byte in block 0, after the header records
    bad = tmp_path / "run-bad.wandb"
    bad.write_bytes(bytes(data))
    got, skips = _read(bad)
    assert skips.count == 1 and "corrupt record (checksum mismatch); the rest of its 32 KiB block was skipped" \
        in skips.reasons[0]
    assert got[-1] == full[-1]  # later blocks are read
    assert len(got) < len(full)
    assert {repr(row) for row in got} <= {repr(row) for row in full}


def test_not_a_wandb_file(tmp_path: Path) -> None:
    f = tmp_path / "run-x.wandb"
    f.write_bytes(b"hello world, no header here")
    assert not wandb_offline.sniff(f, f.read_bytes())
    got, skips = _read(f)
    assert got == [] and skips.reasons == [f"{f}#record 1: no W&B header (':W&B' + 0xBEE1); the file was skipped"]


def test_history_jsonl_fallback(tmp_path: Path) -> None:
    """Older wandb kept files/wandb-history.jsonl; no writer here makes one any more, so the test
    writes the documented shape with json.dumps (which, like wandb, writes NaN and Infinity)."""
    folder = tmp_path / "wandb" / "run-20240101_000000-abc123"
    (folder / "files").mkdir(parents=True)
    rows = [{"_step": 0, "_runtime": 1.0, "_timestamp": 1.7e9, "train/loss": 0.5, "train/global_step": 10,
             "train/clip": {"low": 0.1}},
            {"_step": 1, "_runtime": 2.0, "train/loss": math.nan, "train/global_step": 20,
             "samples": {"_type": "table-file", "nrows": 3}},
            {"_step": 2, "eval/loss": math.inf, "train/global_step": 20, "flag": True}]
    text = "\n".join(json.dumps(r) for r in rows) + "\nnot json\n"
    (folder / "files" / "wandb-history.jsonl").write_text(text)
    assert find_reader(tmp_path / "wandb").format == "wandb-offline"
    [run] = load(tmp_path / "wandb")
    assert run.steps.tolist() == [10, 20]
    assert at(run, "train/loss", 10) == 0.5 and math.isnan(at(run, "train/loss", 20))  # type: ignore[arg-type]
    assert at(run, "train/clip.low", 10) == 0.1 and at(run, "eval/loss", 20) == math.inf
    assert at(run, "flag", 20) == 1.0
    assert not any(c.startswith("samples") for c in run.raw.columns)
    assert run.skipped.count == 1 and run.skipped.reasons[0].startswith(f"{folder}/files/wandb-history.jsonl:4:")


def test_latest_run_link_is_not_a_second_run(written: Path, tmp_path: Path) -> None:
    copy = tmp_path / "wandb"
    shutil.copytree(written, copy, symlinks=True)
    assert (copy / "latest-run").is_symlink()
    assert len(wandb_offline.runs(copy)) == 2


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damage_is_skipped_never_fatal(written: Path, tmp_path_factory: pytest.TempPathFactory,
                                           data: st.DataObject) -> None:
    """Flip bytes, cut or splice garbage anywhere in a real .wandb file: reading never raises,
    and every row it returns is a row of the intact file."""
    source = next(_runs(written)["trl-like"].glob("*.wandb"))
    full, _ = _read(source)
    damaged = bytearray(source.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(damaged) - 1))
        kind = data.draw(st.sampled_from(["flip", "cut", "splice"]))
        if kind == "flip":
            damaged[pos] ^= data.draw(st.integers(1, 255))
        elif kind == "cut":
            del damaged[pos:]
            break
        else:
            damaged[pos:pos] = data.draw(st.binary(min_size=1, max_size=40))
    f = tmp_path_factory.mktemp("damaged") / "run-x.wandb"
    f.write_bytes(bytes(damaged))
    got, skips = _read(f)
    intact = {repr(row) for row in full}  # repr: a logged NaN equals itself
    for row in got:
        assert repr(row) in intact


def test_a_verl_run_without_a_config_is_told_by_its_keys(tmp_path: Path) -> None:
    # written by the real client: veRL's wandb.log(data, step=step) with no config at all (the published
    # folders in the corpus lack config.yaml too), so only the keys' namespaces can say veRL
    with pytest.MonkeyPatch.context() as mp:
        offline_wandb(mp, tmp_path)
        run = wandb.init(mode="offline", dir=str(tmp_path), project="rlvitals-test", name="verl-no-config")
        for step in range(1, 11):
            run.log({"actor/pg_loss": step / 100, "actor/entropy": 1 / step, "critic/score/mean": step / 10,
                     "critic/advantages/mean": 0.0, "critic/returns/mean": 0.0, "timing_s/gen": 2.0}, step=step)
        run.finish()
        wandb.teardown()
    [loaded] = load(next((tmp_path / "wandb").glob("offline-run-*")))
    assert loaded.config == {}
    assert (loaded.framework, loaded.algorithm, len(loaded.train_steps)) == ("verl", "grpo", 10)


def test_the_console_copy_says_how_the_run_ended(written: Path, tmp_path: Path) -> None:
    # W&B keeps the console in files/output.log (the client here wrote none: WANDB_CONSOLE=off); with a
    # traceback at its end the run crashed, after the last step the .wandb file holds
    folder = tmp_path / "run"
    shutil.copytree(_runs(written)["verl-like"], folder)
    [before] = load(folder)
    assert (before.crash, before.crash_scanned) == (None, False)
    (folder / "files").mkdir(exist_ok=True)
    (folder / "files" / "output.log").write_text(
        "step:40 - actor/pg_loss:0.4\nTraceback (most recent call last):\n"
        '  File "/w/verl/workers/actor/dp_actor.py", line 483, in update_policy\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.78 GiB.\n")
    [after] = load(folder)
    assert after.crash is not None and (after.crash.kind, after.crash.last_step) == ("oom", 40)


def test_a_real_console_copy_without_a_traceback() -> None:
    from corpus import corpus_input

    path = corpus_input("wandb__open-agentrl-opd__qwen2.5-3b-tokenkl0.1-b91ltsnz")
    [run] = load(path)
    assert (run.crash, run.crash_scanned) == (None, True)


def _history_clock(folder: Path) -> list[tuple[dict[str, float], float, float]]:
    """``(metrics, _timestamp, _runtime)`` of every history row of the run's .wandb file, as wandb's own
    protobuf classes parse it."""
    from wandb.proto import wandb_internal_pb2 as pb

    out = []
    found = next(folder.glob("*.wandb"))
    for _, payload in _leveldb.frames(found, SourceMeta("wandb-offline"), SkipLog(), wandb_offline.MAGIC,
                                      Words("", "")):
        record = pb.Record()
        record.ParseFromString(payload)
        if record.WhichOneof("record_type") == "history":
            row = {".".join(i.nested_key) or i.key: i.value_json for i in record.history.item}
            out.append((row, float(row["_timestamp"]), float(row["_runtime"])))
    return out


def test_the_wall_clock_is_wandbs_timestamp(written: Path) -> None:
    """Each step's wall time is the _timestamp wandb wrote on its row; the run started at
    _timestamp - _runtime; neither is a metric."""
    folder = _runs(written)["verl-like"]
    [run] = load(folder)
    rows = _history_clock(folder)
    want = {int(row["_step"]): stamp for row, stamp, _ in rows}
    steps, seconds = run.wall_times
    assert run.wall.source == "W&B _timestamp" and run.wall.epoch
    assert steps.tolist() == list(range(1, 41)) and seconds.tolist() == [want[s] for s in range(1, 41)]
    _, stamp, runtime = rows[0]
    assert run.wall.started == stamp - runtime
    assert not {"_timestamp", "_runtime", "_step"} & set(run.raw.columns)


def test_rows_placed_at_a_global_step_time_it_by_the_latest(written: Path) -> None:
    """TRL-like: a step's time is the latest _timestamp of the rows placed at it, never before its own
    training row's."""
    folder = _runs(written)["trl-like"]
    [run] = load(folder)
    steps, seconds = run.wall_times
    train = {int(float(row["train/global_step"])): stamp for row, stamp, _ in _history_clock(folder)
             if "train/loss" in row}
    timed = dict(zip(steps.tolist(), seconds.tolist(), strict=True))
    assert set(train) <= set(timed)
    assert all(timed[s] >= train[s] for s in train)
    assert (seconds[1:] >= seconds[:-1]).all()


def test_history_jsonl_fallback_keeps_the_clock(tmp_path: Path) -> None:
    folder = tmp_path / "run-20240101_000000-abc"
    (folder / "files").mkdir(parents=True)
    rows = [{"_step": i, "_timestamp": 1_700_000_100.5 + 10 * i, "_runtime": 100.5 + 10 * i, "loss": 1 / (i + 1)}
            for i in range(4)]
    (folder / "files" / "wandb-history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    [run] = load(folder)
    assert run.wall_times[1].tolist() == [r["_timestamp"] for r in rows]
    assert run.wall.started == 1_700_000_000.0


def test_a_fifo_named_like_a_runs_wandb_file_is_counted_and_never_opened(written: Path, tmp_path: Path) -> None:
    from .specials import load_in_child, plant

    copy = tmp_path / _runs(written)["verl-like"].name
    shutil.copytree(_runs(written)["verl-like"], copy)
    fifo = plant(copy / "run-zzzzzzzz.wandb", "fifo")
    [got] = load_in_child(copy)["runs"]
    assert got["steps"] == 40 and got["reasons"] == [f"{fifo}: a FIFO, not a log file; it was not opened"]


#: a training whose config holds a value nested 2,000 levels deep: its JSON, as wandb writes it, is deeper
#: than the standard parser goes (reading it raised RecursionError)
DEEP_SCRIPT = """
import sys
sys.setrecursionlimit(20000)  # wandb serialises the config by recursion
import wandb
deep = 1
for _ in range(2000):
    deep = {"x": deep}
run = wandb.init(mode="offline", dir=sys.argv[1], project="rlvitals-test", name="deep-config",
                 config={"algorithm": {"adv_estimator": "grpo"}, "deep": deep, "lr": 1e-6})
for step in range(1, 6):
    run.log({"actor/entropy": 1 / step, "critic/score/mean": step / 10}, step=step)
run.finish()
"""


@pytest.mark.process
def test_a_config_value_nested_2000_deep_is_cut_with_a_counted_skip_and_the_rest_kept(tmp_path: Path) -> None:
    import subprocess
    import sys

    from rlvitals.words import in_lang

    with pytest.MonkeyPatch.context() as mp:
        offline_wandb(mp, tmp_path)  # the child inherits the environment: offline, silent, inside tmp_path
        subprocess.run([sys.executable, "-c", DEEP_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                       timeout=300, check=True)
    [folder] = (tmp_path / "wandb").glob("offline-run-*")
    [file] = folder.glob("*.wandb")
    assert b'{"x": ' * 1000 in file.read_bytes()  # the real client wrote it all
    [run] = load(folder)
    assert len(run.steps) == 5 and run.skipped.count == 1
    [reason] = run.skipped.reasons
    assert reason.startswith(f"{file}#record ")
    assert reason.endswith(": the config value 'deep' nests deeper than 64 levels; it was left out (the rest of "
                           "the config was read)")
    assert in_lang(reason, "zh").endswith(": 配置项 'deep' 的嵌套超过 64 层；已略去（其余配置照常读取）")
    assert run.config["algorithm.adv_estimator"] == "grpo" and run.config["lr"] == 1e-6
    assert not [k for k in run.config if k.startswith("deep")]


def test_the_console_copy_is_sniffed_in_the_registry_order() -> None:
    """A W&B run's console copy is read by the first console format that takes it, in the order the registry
    sniffs them (the reader cannot ask the registry: that would be an import circle)."""
    from rlvitals.ingest import READER_MODULES
    from rlvitals.ingest.formats.wandb_offline import CONSOLES

    trainings = [m for m in READER_MODULES
                 if any(r.trainings for r in (m.READERS if hasattr(m, "READERS") else (m.READER,)))]
    assert [m for m in READER_MODULES if m in CONSOLES] == list(CONSOLES)
    assert set(trainings) <= set(CONSOLES), [m.__name__ for m in trainings]

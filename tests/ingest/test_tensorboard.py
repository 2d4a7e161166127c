"""TensorBoard event files written by the real writers (tensorboardX, tensorboard), read back
without tensorflow: exact values, nested runs, restarts, truncation and corruption."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlvitals
from rlvitals import load
from rlvitals.errors import EmptyInputError
from rlvitals.ingest import find_reader, tensorboard
from rlvitals.ingest.record import SkipLog, SourceMeta

tbx = pytest.importorskip("tensorboardX")


def f32(x: float) -> float:
    return float(np.float32(x))


def event_file(folder: Path) -> Path:
    files = sorted(folder.glob("events.out.tfevents.*"))
    assert len(files) == 1, files
    return files[0]


def records(path: Path) -> list[tuple[int, int]]:
    """``(offset, payload_length)`` of every TFRecord in ``path`` (test-side framing)."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        out.append((pos, length))
        pos += 16 + length
    assert pos == len(data)
    return out


def at(run: rlvitals.Run, key: str, step: int) -> float | None:
    return run.raw.filter(pl.col("step") == step)[key].item()


# the values a trainer might log, including the awkward ones
VALUES = [0.1, -2.5e-7, 3.4e38, 1e-45, 12345.678, float("nan"), float("inf"), -float("inf"), 0.0]
STEPS = [0, 1, 127, 128, 16384, 2**21 + 3, 2**28 + 5, 2**40]  # 1..6-byte varints; > 2**28 is the slow path


@pytest.fixture
def tbx_run(tmp_path: Path) -> Path:
    """An OpenRLHF/TRL-style run: train/ and eval/ scalars, a histogram and a text sample."""
    folder = tmp_path / "tb" / "run_a"
    w = tbx.SummaryWriter(str(folder))
    for i, step in enumerate(STEPS):
        w.add_scalar("train/policy_loss", VALUES[i], step)
        w.add_scalar("train/kl", i / 7, step)
        if i % 3 == 0:
            w.add_scalar("eval/eval_openai/gsm8k_pass1", 1 / (i + 3), step)
        w.add_histogram("train/advantages", np.linspace(-1, 1, 50), step)
        w.add_text("train/generated_samples", f"Sample {i}\n\nReward: 1", step)
    w.close()
    return folder


def test_tensorboardx_scalars_read_back_exactly(tbx_run: Path) -> None:
    assert find_reader(tbx_run).format == "tensorboard"
    assert find_reader(event_file(tbx_run)).format == "tensorboard"
    [run] = load(tbx_run)
    assert run.format == "tensorboard" and run.skipped.count == 0
    assert run.steps.tolist() == STEPS
    assert set(run.raw.columns) == {"step", "train/policy_loss", "train/kl", "eval/eval_openai/gsm8k_pass1"}
    for i, step in enumerate(STEPS):
        got = at(run, "train/policy_loss", step)
        assert got == f32(VALUES[i]) or (math.isnan(VALUES[i]) and math.isnan(got))  # type: ignore[arg-type]
        assert at(run, "train/kl", step) == f32(i / 7)
        assert at(run, "eval/eval_openai/gsm8k_pass1", step) == (f32(1 / (i + 3)) if i % 3 == 0 else None)
    notes = [n for n in run.notes if "non-scalar" in n]
    assert notes == ["2 non-scalar TensorBoard tags (histograms, images, text) are not metrics and were not "
                     "read: train/advantages, train/generated_samples/text_summary"]
    assert run.files == [str(event_file(tbx_run))]


def test_a_single_event_file_is_a_run(tbx_run: Path) -> None:
    file = event_file(tbx_run)
    [run] = load(file)
    assert run.path == str(file) and run.steps.tolist() == STEPS


def test_fast_path_and_general_decoder_agree(tbx_run: Path, tmp_path: Path) -> None:
    from tensorboard.summary import Writer

    own = tmp_path / "own"
    w = Writer(str(own))
    for step in STEPS:
        w.add_scalar("actor/entropy", step / 3, step)
    w.close()
    for file in (event_file(tbx_run), event_file(own)):
        hits = {}
        for fast in (True, False):
            from rlvitals.ingest.tfevents import EventScanner

            chunks = EventScanner(file, SourceMeta("tensorboard"), SkipLog(), set(), fast=fast).chunks()
            hits[fast] = [(h.numbers.tolist(), h.steps.tolist(), h.tags, h.values, h.walls.tolist()) for h in chunks]
        assert repr(hits[True]) == repr(hits[False])  # repr: NaN == NaN


def test_tensorboards_own_writer_tensor_scalars(tmp_path: Path) -> None:
    from tensorboard.summary import Writer

    w = Writer(str(tmp_path))
    for step in STEPS:
        w.add_scalar("critic/score/mean", step / 3 - 1, step)  # step 0 is left out of the Event
        w.add_scalar("response_length/mean", 2 * step, step)
    w.close()
    [run] = load(tmp_path)
    assert run.steps.tolist() == STEPS and run.skipped.count == 0
    assert run.raw["critic/score/mean"].to_list() == [f32(s / 3 - 1) for s in STEPS]
    assert run.raw["response_length/mean"].to_list() == [f32(2 * s) for s in STEPS]


def test_every_scalar_tensor_encoding(tmp_path: Path) -> None:
    """TF2-style tensors (float_val, double_val, int64_val, tensor_content of several dtypes,
    half) written as real protobufs by tensorboard's event file writer."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    scalars = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    shape = tensor_shape_pb2.TensorShapeProto
    tensors = {
        "double": tensor_pb2.TensorProto(dtype=2, double_val=[0.1]),
        "int64": tensor_pb2.TensorProto(dtype=9, int64_val=[-7]),
        "int32": tensor_pb2.TensorProto(dtype=3, int_val=[-3]),
        "bool": tensor_pb2.TensorProto(dtype=10, bool_val=[True]),
        "half": tensor_pb2.TensorProto(dtype=19, half_val=[int(np.float16(1.5).view(np.uint16))]),
        "content_f32": tensor_pb2.TensorProto(dtype=1, tensor_content=np.float32(2.25).tobytes()),
        "content_f64": tensor_pb2.TensorProto(dtype=2, tensor_content=np.float64(1 / 3).tobytes(),
                                              tensor_shape=shape(dim=[shape.Dim(size=1)])),
        "content_bf16": tensor_pb2.TensorProto(dtype=14, tensor_content=np.float32(3.0).tobytes()[2:]),
        "vector": tensor_pb2.TensorProto(dtype=1, float_val=[1.0, 2.0], tensor_shape=shape(dim=[shape.Dim(size=2)])),
        "words": tensor_pb2.TensorProto(dtype=7, string_val=[b"hi"]),
    }
    w = EventFileWriter(str(tmp_path))
    for step in (-5, 3):
        summary = summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=tag, tensor=t, metadata=scalars) for tag, t in tensors.items()])
        w.add_event(event_pb2.Event(wall_time=1.0, step=step, summary=summary))
    w.add_event(event_pb2.Event(wall_time=2.0, step=4, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="simple", simple_value=0.5)])))
    w.close()
    [run] = load(tmp_path)
    assert run.steps.tolist() == [-5, 3, 4] and run.skipped.count == 0
    row = {k: at(run, k, 3) for k in run.raw.columns if k != "step"}
    assert row == {"double": 0.1, "int64": -7.0, "int32": -3.0, "bool": 1.0, "half": 1.5, "content_f32": 2.25,
                   "content_f64": 1 / 3, "content_bf16": 3.0, "simple": None}
    assert at(run, "simple", 4) == 0.5
    assert any("2 non-scalar TensorBoard tags" in n and "vector, words" in n for n in run.notes)


def test_nested_runs_and_a_restarted_run(tmp_path: Path) -> None:
    root = tmp_path / "tensorboard_log" / "proj"
    first = tbx.SummaryWriter(str(root / "exp_a"), filename_suffix=".0")
    for step in range(1, 4):
        first.add_scalar("actor/pg_loss", step * 0.5, step)
    first.close()
    second = tbx.SummaryWriter(str(root / "exp_a"), filename_suffix=".1")  # resumed from step 3
    for step in range(3, 6):
        second.add_scalar("actor/pg_loss", step * 10.0, step)
    second.close()
    other = tbx.SummaryWriter(str(root / "exp_b"))
    other.add_scalar("actor/pg_loss", 1.0, 7)
    other.close()
    tbx.SummaryWriter(str(root / "exp_c_crashed")).close()  # opened, never written: not a run
    assert tensorboard.runs(tmp_path) == [root / "exp_a", root / "exp_b"]
    a, b = load(tmp_path / "tensorboard_log")
    assert a.path == str(root / "exp_a") and len(a.files) == 2
    assert a.raw["actor/pg_loss"].to_list() == [0.5, 1.0, 30.0, 40.0, 50.0]  # the restart's value wins at step 3
    assert any("logged twice" in n for n in a.notes)
    assert b.steps.tolist() == [7]


def test_hparams_folder_of_hf_callback_is_not_a_run(tmp_path: Path) -> None:
    w = tbx.SummaryWriter(str(tmp_path / "runs" / "Nov29_10-00-00_host"))
    w.add_hparams({"learning_rate": 1e-6, "beta": 0.04}, metric_dict={})  # what HF's TensorBoardCallback does
    w.add_scalar("train/loss", 0.25, 10)
    w.close()
    assert [r.name for r in tensorboard.runs(tmp_path)] == ["Nov29_10-00-00_host"]
    [run] = load(tmp_path)
    assert run.raw["train/loss"].to_list() == [0.25]


def _written(tmp_path: Path, steps: int = 40) -> Path:
    w = tbx.SummaryWriter(str(tmp_path))
    for step in range(steps):
        w.add_scalar("train/reward", step / 4, step)
        w.add_scalar("train/loss", -step / 8, step)
    w.close()
    return event_file(tmp_path)


def test_truncated_file_keeps_complete_records_and_counts_one_skip(tmp_path: Path) -> None:
    file = _written(tmp_path)
    recs = records(file)
    for cut in (3, recs[-1][1] + 16 - 5):  # inside the last payload; inside the last header
        data = file.read_bytes()
        file.write_bytes(data[:-cut])
        [run] = load(tmp_path)
        assert run.skipped.count == 1
        assert run.skipped.reasons == [
            f"{file}#record {len(recs)}: truncated record (the file ends mid-record; still being "
            "written?); the rest of the file was skipped"]
        assert run.raw["train/reward"].to_list() == [s / 4 for s in range(40)]
        assert run.raw["train/loss"].to_list()[-1] is None and run.raw["train/loss"].to_list()[-2] == -38 / 8
        file.write_bytes(data)


@pytest.mark.parametrize(("where", "reason"), [
    (lambda off, length: off + 12 + length - 3, "payload checksum mismatch"),  # the float value
    (lambda off, length: off + 12 + 20, "payload checksum mismatch"),  # inside the tag
    (lambda off, length: off + 12 + length, "payload checksum mismatch"),  # the stored CRC
    (lambda off, length: off + 1, "length checksum mismatch"),
    (lambda off, length: off + 9, "length checksum mismatch"),
])
def test_a_corrupt_byte_stops_the_file_with_one_skip(tmp_path: Path, where, reason) -> None:  # type: ignore[no-untyped-def]
    file = _written(tmp_path, steps=60)
    recs = records(file)
    n = 51  # 1-based: record 1 is the file_version header, then two per step -> step 24, train/loss
    off, length = recs[n - 1]
    data = bytearray(file.read_bytes())
    data[where(off, length)] ^= 0x40
    file.write_bytes(bytes(data))
    [run] = load(tmp_path)
    assert run.skipped.reasons == [f"{file}#record {n}: corrupt record ({reason}); the rest of the file was skipped"]
    assert run.steps.tolist() == list(range(25))
    assert run.raw["train/loss"].to_list()[-1] is None and run.raw["train/reward"].to_list()[-1] == 24 / 4


def test_a_file_of_garbage_is_no_event_file(tmp_path: Path) -> None:
    bad = tmp_path / "events.out.tfevents.123.host"
    bad.write_bytes(b"not a tfrecord at all, just text\n" * 10)
    assert not tensorboard.sniff(bad, bad.read_bytes())
    with pytest.raises(EmptyInputError, match=r"read as tensorboard but it holds no metrics; 1 records were "
                                              r"unreadable, first: .*#record 1: corrupt record \(length"):
        load(bad, "tensorboard")


def test_framed_file_without_the_usual_name_is_sniffed_by_content(tbx_run: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "copy.bin"
    renamed.write_bytes(event_file(tbx_run).read_bytes())
    assert find_reader(renamed).format == "tensorboard"


def test_a_folder_without_event_files_is_not_tensorboard(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "notes.txt").write_text("hi")
    assert not tensorboard.sniff(tmp_path, b"")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damage_is_skipped_never_fatal(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """Flip, cut or append bytes anywhere: every record wholly before the damage is read exactly,
    nothing raises, and at most one skip is counted per file."""
    folder = tmp_path_factory.mktemp("tb")
    file = _written(folder, steps=30)
    clean = file.read_bytes()
    recs = records(file)
    kind = data.draw(st.sampled_from(["flip", "cut", "append"]))
    pos = data.draw(st.integers(0, len(clean) - 1))
    damaged = bytearray(clean)
    if kind == "flip":
        damaged[pos] ^= data.draw(st.integers(1, 255))
    elif kind == "cut":
        damaged = damaged[:pos]
    else:
        damaged += data.draw(st.binary(min_size=1, max_size=64))
        pos = len(clean)
    file.write_bytes(bytes(damaged))
    meta, skips = SourceMeta("tensorboard"), SkipLog()
    got = {(r.step, k): v for r in tensorboard.read(folder, meta, skips) for k, v in r.values.items()}
    assert skips.count <= 1
    intact = sum(1 for off, length in recs if off + 16 + length <= pos) - 1  # minus the header record
    want = {(s, k): v for s in range(30) for k, v in (("train/reward", f32(s / 4)), ("train/loss", f32(-s / 8)))}
    order = [(s, k) for s in range(30) for k in ("train/reward", "train/loss")]
    for key in order[:max(intact, 0)]:
        assert key in got
    for key, value in got.items():
        assert value == want[key]


def _tb_walls(file: Path) -> tuple[float, dict[int, float]]:
    """The writer's wall_time of the file's first Event and the last wall_time of each step's scalars,
    read with tensorboard's own EventAccumulator."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(file), size_guidance={"scalars": 0})
    acc.Reload()
    last: dict[int, float] = {}
    events = sorted((e.wall_time, e.step) for tag in acc.Tags()["scalars"] for e in acc.Scalars(tag))
    for wall, step in events:
        last[step] = wall
    return acc.FirstEventTimestamp(), last


def test_each_steps_wall_time_is_the_writers(tmp_path: Path) -> None:
    """tensorboardX with given wall times (every step, the slow path's large steps too): the Run's clock
    is the writer's wall_time of each step's last value, and not a metric."""
    w = tbx.SummaryWriter(str(tmp_path))
    for i, step in enumerate(STEPS):
        w.add_scalar("train/loss", i / 10, step, walltime=1_700_000_000.0 + 60 * i)
        w.add_scalar("train/kl", i / 7, step, walltime=1_700_000_000.0 + 60 * i + 1.5)
    w.close()
    [run] = load(tmp_path)
    assert run.wall is not None and run.wall.source == "TensorBoard wall_time" and run.wall.epoch
    steps, seconds = run.wall_times
    _, want = _tb_walls(event_file(tmp_path))
    assert steps.tolist() == STEPS and seconds.tolist() == [want[s] for s in STEPS]
    assert seconds.tolist() == [1_700_000_000.0 + 60 * i + 1.5 for i in range(len(STEPS))]
    assert set(run.raw.columns) == {"step", "train/loss", "train/kl"}  # the clock is not a metric


@pytest.mark.model  # torch
def test_torch_summary_writer_clock_and_start(tmp_path: Path) -> None:
    """torch's SummaryWriter on the real clock: the wall times and the start (its file_version header)
    are the ones tensorboard reads back."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path))
    for step in range(1, 21):
        w.add_scalar("actor/entropy", 1 / step, step)
        w.add_scalar("critic/score/mean", step / 20, step)
    w.close()
    [run] = load(tmp_path)
    first, want = _tb_walls(event_file(tmp_path))
    steps, seconds = run.wall_times
    assert steps.tolist() == list(range(1, 21)) and seconds.tolist() == [want[s] for s in steps.tolist()]
    assert run.wall.started == first and first <= seconds[0]


def test_a_restarted_folder_starts_at_its_first_file(tmp_path: Path) -> None:
    """Two writers in one folder (a restart): the start is the earliest file's, a step logged again takes
    the later time."""
    first = tbx.SummaryWriter(str(tmp_path), filename_suffix=".0")
    for step in range(1, 6):
        first.add_scalar("train/loss", step, step, walltime=1000.0 + step)
    first.close()
    second = tbx.SummaryWriter(str(tmp_path), filename_suffix=".1")
    for step in range(4, 9):
        second.add_scalar("train/loss", -step, step, walltime=5000.0 + step)
    second.close()
    [run] = load(tmp_path)
    steps, seconds = run.wall_times
    assert steps.tolist() == list(range(1, 9))
    assert seconds.tolist() == [1001.0, 1002.0, 1003.0, 5004.0, 5005.0, 5006.0, 5007.0, 5008.0]
    starts = [_tb_walls(f)[0] for f in sorted(tmp_path.glob("events.out.tfevents.*"))]
    assert run.wall.started == min(starts)
    assert run.tail(3).wall_times[1].tolist() == [5006.0, 5007.0, 5008.0]


def _tb_run(folder: Path) -> Path:
    w = tbx.SummaryWriter(str(folder))
    w.add_scalar("train/loss", 1.0, 1)
    w.close()
    return folder


def test_a_folder_of_runs_is_tensorboards_and_an_empty_run_folder_breaks_nothing(tmp_path: Path) -> None:
    _tb_run(tmp_path / "tb" / "run_a")
    _tb_run(tmp_path / "tb" / "run_b")
    (tmp_path / "tb" / "run_c").mkdir()  # a run not begun yet
    assert tensorboard.sniff(tmp_path / "tb", b"")
    assert tensorboard.sniff(tmp_path, b"")  # runs/<date>/ of HF's Trainer: a folder of folders of runs


def test_a_run_folder_keeps_its_own_files(tmp_path: Path) -> None:
    run = _tb_run(tmp_path / "run")
    (run / "hparams.yaml").write_text("lr: 1e-6\n")
    (run / "plugins" / "profile").mkdir(parents=True)
    assert tensorboard.sniff(run, b"")


@pytest.mark.parametrize("beside", ["train.log", "wandb/run-1/files/config.yaml"])
def test_an_experiment_folder_holding_tensorboard_beside_other_logs_is_not_taken_whole(
        tmp_path: Path, beside: str) -> None:
    """Taken whole as TensorBoard, the console or the W&B run beside it would be lost; the folder is a plain
    folder, and its TensorBoard sub-folder a run of its own."""
    exp = tmp_path / "exp"
    _tb_run(exp / "tensorboard" / "run")
    (exp / beside).parent.mkdir(parents=True, exist_ok=True)
    (exp / beside).write_text("step 1\n")
    assert not tensorboard.sniff(exp, b"")
    assert tensorboard.sniff(exp / "tensorboard", b"")
    assert [(r.format, Path(r.path)) for r in load(exp)] == [("tensorboard", exp / "tensorboard" / "run")]


def test_a_console_beside_the_event_files_is_read_with_the_run(tmp_path: Path) -> None:
    run = _tb_run(tmp_path / "run")
    (run / "train.log").write_text("".join(f"step:{i} - actor/entropy:{1 / i:.4f} - critic/score/mean:{i / 10}\n"
                                           for i in range(1, 6)))
    assert tensorboard.sniff(run, b"")
    assert [(r.format, Path(r.path).name) for r in load(run)] == [("tensorboard", "run"), ("verl-console", "train.log")]


def test_a_fifo_or_a_device_named_like_an_event_file_is_counted_and_never_opened(tmp_path: Path) -> None:
    """Beside a run's event file, a FIFO and a link to /dev/urandom named like event files: neither is opened
    (a FIFO waits for a writer forever, a device never ends); each is a counted skip, the run is read."""
    from .specials import load_in_child, plant

    run = _tb_run(tmp_path / "run")
    fifo = plant(run / "events.out.tfevents.2.host", "fifo")
    device = plant(run / "events.out.tfevents.3.host", "urandom")
    [got] = load_in_child(run)["runs"]
    assert got["steps"] == 1 and got["reasons"] == [f"{fifo}: a FIFO, not a log file; it was not opened",
                                                    f"{device}: a device, not a log file; it was not opened"]

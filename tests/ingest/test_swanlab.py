"""SwanLab runs as the real SDK writes them offline (``swanlab.init(mode="offline")``), read without it.

Each run is written by the SDK in a process of its own, as a training script does; what rlvitals reads is
compared value for value with what the script logged and with SwanLab's own reader of the file.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from rlvitals import load
from rlvitals.errors import InputError
from rlvitals.ingest import find_reader, swanlab
from rlvitals.ingest.record import SkipLog, SourceMeta

from .serving import served

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

pytest.importorskip("swanlab")

STEPS = 60

#: the training script: veRL keys at every step, a validation key every 20, one logged only from step 30,
#: a text sample, zeros (proto3 leaves them out of the file), a NaN and infinities
SCRIPT = """
import math, sys, swanlab
swanlab.init(project="rlv", experiment_name="exp-a", mode="offline", logdir=sys.argv[1],
             config={"algorithm": {"adv_estimator": "grpo"}, "actor_rollout_ref": {"actor": {"lr": 1e-6}},
                     "n": 8, "tags": ["a", "b"]})
for step in range(int(sys.argv[2])):
    data = {"actor/entropy": 1.0 / (step + 1), "critic/score/mean": step / STEPS,
            "actor/pg_loss": 0.0 if step % 7 == 0 else -0.01 * step,
            "actor/grad_norm": math.nan if step == 5 else math.inf if step == 6 else 0.5 + step % 3}
    if step % 20 == 19:
        data["val-core/openai/gsm8k/reward/mean@4"] = step / 100
    if step >= 30:
        data["response_length/mean"] = 100.0 + step
    swanlab.log(data, step=step)
    if step % 20 == 0:
        swanlab.log({"sample": swanlab.Text("the answer is 4")}, step=step)
if len(sys.argv) > 3:
    import glob, os, time
    want, until = int(sys.argv[3]), time.monotonic() + 60
    # killed once the file holds ``want`` bytes (SwanLab writes from a thread of its own, when its buffer fills)
    def written():
        return sum(map(os.path.getsize, glob.glob(sys.argv[1] + "/run-*/*.swanlab")))
    while want and time.monotonic() < until and written() < want:
        time.sleep(0.01)
    os._exit(0)  # no finish record, nothing flushed since the last full buffer
swanlab.finish()
""".replace("STEPS", str(STEPS))


def logged(step: int) -> dict[str, float]:
    """What SCRIPT logs at ``step``."""
    out = {"actor/entropy": 1.0 / (step + 1), "critic/score/mean": step / STEPS,
           "actor/pg_loss": 0.0 if step % 7 == 0 else -0.01 * step,
           "actor/grad_norm": math.nan if step == 5 else math.inf if step == 6 else 0.5 + step % 3}
    if step % 20 == 19:
        out["val-core/openai/gsm8k/reward/mean@4"] = step / 100
    if step >= 30:
        out["response_length/mean"] = 100.0 + step
    return out


def write(root: Path, *, steps: int = STEPS, killed: int | None = None) -> Path:
    """The ``swanlog/`` folder of one run the SDK wrote; ``killed``: the process is killed (``os._exit``) once
    its file holds that many bytes (0: at once)."""
    logdir = root / "swanlog"
    args = [sys.executable, "-c", SCRIPT, str(logdir), str(steps)] + ([str(killed)] if killed is not None else [])
    subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=300, check=True)
    return logdir


@pytest.fixture(scope="module")
def swanlog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("sw"))


def run_file(logdir: Path) -> Path:
    (file,) = logdir.glob("run-*/run-*.swanlab")
    return file


def swanlab_scalars(file: Path) -> dict[tuple[str, int], float]:
    """Every scalar of the file as SwanLab's own reader and protobuf classes see it."""
    from swanlab.proto.swanlab.record.v1.record_pb2 import Record
    from swanlab.sdk.internal.core_python.store import DataStoreReader

    reader = DataStoreReader()
    reader.open(file)
    out = {}
    while (data := reader.scan()) is not None:
        record = Record()
        record.ParseFromString(data)
        if record.WhichOneof("record_type") == "scalar":
            out[(record.scalar.key, record.scalar.step)] = record.scalar.value.number
    reader.close()
    return out


def at(frame: pl.DataFrame, key: str, step: int) -> float | None:
    hit = frame.filter(pl.col("step") == step)
    return None if hit.is_empty() or key not in hit.columns else hit[key].item()


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


@pytest.mark.process
def test_a_run_reads_what_the_script_logged_value_for_value(swanlog: Path) -> None:
    assert find_reader(swanlog).format == "swanlab"
    [run] = load(swanlog)
    assert run.format == "swanlab" and run.skipped.count == 0
    assert run.steps.tolist() == list(range(STEPS))
    frame = pl.concat([run.raw, *run.validation.values()], how="diagonal") if run.validation else run.raw
    for step in range(STEPS):
        for key, value in logged(step).items():
            got = at(run.raw, key, step)
            if got is None:  # validation keys live in their own frame
                got = at(frame.filter(pl.col(key).is_not_null()), key, step)
            assert same(got, value), (key, step, got, value)
    assert at(run.raw, "response_length/mean", 10) is None  # not logged before step 30: not a zero
    assert run.config["algorithm.adv_estimator"] == "grpo"
    assert run.config["actor_rollout_ref.actor.lr"] == 1e-6 and run.config["n"] == 8
    assert run.config["swanlab.name"] == "exp-a" and run.config["swanlab.project"] == "rlv"
    assert run.framework == "verl" and run.algorithm == "grpo"
    assert not any(c.startswith("sample") for c in run.raw.columns)
    assert f"{run_file(swanlog)}: media (1: sample; text, images) are not metrics; they were left out" in [
        str(n) for n in run.notes]
    assert not any("no finish record" in str(n) for n in run.notes)


@pytest.mark.process
def test_every_scalar_is_what_swanlabs_own_reader_reads(swanlog: Path) -> None:
    file = run_file(swanlog)
    theirs = swanlab_scalars(file)
    ours: dict[tuple[str, int], float] = {}
    for record in swanlab.read(file, SourceMeta("swanlab"), SkipLog()):
        for key, value in record.values.items():
            assert isinstance(value, float)
            ours[(key, record.step)] = value
    assert ours.keys() == theirs.keys()
    assert all(same(ours[k], theirs[k]) for k in theirs)


@pytest.mark.process
def test_the_run_folder_and_the_file_are_the_same_run(swanlog: Path) -> None:
    file = run_file(swanlog)
    assert swanlab.runs(swanlog) == [file.parent]
    a, b = load(file.parent)[0], load(file)[0]
    assert a.raw.equals(b.raw) and a.config == b.config


def _read(path: Path) -> tuple[list[tuple[int, dict[str, object]]], SkipLog, SourceMeta]:
    skips, meta = SkipLog(), SourceMeta("swanlab")
    return [(r.step, r.values) for r in swanlab.read(path, meta, skips)], skips, meta


@pytest.mark.process
@pytest.mark.parametrize("keep", [0.3, 0.55, 0.8, 0.97])
def test_a_file_cut_while_writing_keeps_every_complete_record(swanlog: Path, tmp_path: Path, keep: float) -> None:
    source = run_file(swanlog)
    full, _, _ = _read(source)
    data = source.read_bytes()
    cut = tmp_path / "run-cut.swanlab"
    cut.write_bytes(data[: int(len(data) * keep)])
    got, skips, meta = _read(cut)
    assert skips.count <= 1
    if skips.count:
        assert skips.reasons[0].endswith("truncated record at the end of the file (the run was killed or is "
                                         "still writing); the incomplete tail was skipped")
    # each step read holds what the full file holds for it, except the step the cut fell in
    assert [s for s, _ in got] == [s for s, _ in full[: len(got)]]
    for (step, values), (_, want) in zip(got[:-1], full, strict=False):
        assert values == want or all(same(values[k], want[k]) for k in values), step  # type: ignore[arg-type]
    assert any("no finish record" in str(n) for n in meta.notes)


@pytest.mark.process
def test_a_run_killed_at_once_is_an_empty_run_said_plainly(tmp_path: Path) -> None:
    logdir = write(tmp_path, steps=3, killed=0)
    assert run_file(logdir).stat().st_size == 0  # SwanLab had flushed nothing, not even its header
    with pytest.raises(InputError) as got:
        load(logdir)
    assert str(got.value).endswith("#record 1: the file is empty: SwanLab had written nothing to it yet (the run "
                                   "was killed at once, or has only just started)")
    assert got.value.text("zh").endswith("文件是空的：SwanLab 还没有往里写任何东西（运行一开始就被杀掉了，"
                                         "或者刚刚开始）")


@pytest.mark.process
def test_a_killed_run_keeps_what_reached_the_file(tmp_path: Path) -> None:
    logdir = write(tmp_path, steps=3000, killed=100_000)  # 18,000 scalars: killed after 100 kB reached the file
    [run] = load(logdir)
    assert 0 < len(run.steps) < 3000
    assert any("no finish record: the run was killed or is still running" in str(n) for n in run.notes)
    assert run.steps.tolist() == list(range(len(run.steps)))
    for step in run.steps.tolist()[:-1]:
        assert same(at(run.raw, "actor/entropy", step), 1.0 / (step + 1))


def _store(path: Path, records: Iterator[bytes]) -> None:
    """A .swanlab file written by SwanLab's own store (its framing and header)."""
    from swanlab.sdk.internal.core_python.store import DataStoreWriter

    writer = DataStoreWriter()
    writer.open(path)
    for data in records:
        writer.write(data)
    writer.close()


def _scalar(key: str, step: int, value: float, num: int) -> bytes:
    from swanlab.proto.swanlab.record.v1.record_pb2 import Record

    record = Record(num=num)
    record.scalar.key, record.scalar.step, record.scalar.value.number = key, step, value
    record.scalar.timestamp.seconds = 1_750_000_000 + step
    return record.SerializeToString()


def test_system_metrics_long_records_and_a_crash_as_swanlabs_store_writes_them(tmp_path: Path) -> None:
    """System samples (``__swanlab__.*``, their own step counter) are left out and named; a record longer
    than a 32 KiB block (FIRST/MIDDLE/LAST) is read whole; a crashed finish record is told."""
    from swanlab.proto.swanlab.record.v1.record_pb2 import Record

    def records() -> Iterator[bytes]:
        start = Record(num=-1)
        start.start.name, start.start.project = "long", "rlv"
        yield start.SerializeToString()
        for step in range(1, 11):
            yield _scalar("actor/entropy", step, 1 / step, 2 * step)
            yield _scalar("__swanlab__.cpu.pct", step * 3, 50.0, 2 * step + 1)
        yield _scalar("x" * 70_000, 10, 1.5, 100)
        finish = Record(num=-2)
        finish.finish.state, finish.finish.error = 2, "Traceback ...\nRuntimeError: CUDA error: an illegal memory"
        yield finish.SerializeToString()

    file = tmp_path / "run-x.swanlab"
    _store(file, records())
    got, skips, meta = _read(file)
    assert skips.count == 0
    assert [s for s, _ in got] == list(range(1, 11))
    assert got[-1][1] == {"actor/entropy": 0.1, "x" * 70_000: 1.5}
    assert not any(k.startswith("__swanlab__") for _, v in got for k in v)
    notes = [str(n) for n in meta.notes]
    assert f"{file}: SwanLab's system metrics (1: __swanlab__.cpu.pct) are sampled on their own clock, not at " \
           "training steps; they were left out" in notes
    assert any("SwanLab recorded that the run crashed: RuntimeError: CUDA error: an illegal memory" in n
               for n in notes)
    assert meta.config == {"swanlab.name": "long", "swanlab.project": "rlv"}


def test_a_swanlab_file_from_before_0_8_is_refused_in_both_languages(tmp_path: Path) -> None:
    old = tmp_path / "backup.swanlab"
    old.write_bytes(swanlab.MAGIC + b"\x01" + b"\x00" * 64)
    assert find_reader(old).format == "swanlab"
    with pytest.raises(InputError) as got:
        load(old)
    assert str(got.value).endswith("a SwanLab log of format version 1 (SwanLab before 0.8, backup.swanlab); "
                                   "rlvitals reads version 2 (SwanLab 0.8 and later)")
    assert got.value.text("zh").endswith("这是格式版本 1 的 SwanLab 日志（SwanLab 0.8 之前的 backup.swanlab）；"
                                         "rlvitals 读取的是版本 2（SwanLab 0.8 及以后）")


@pytest.mark.process
def test_a_config_that_is_not_yaml_is_said_not_fatal(swanlog: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "run-copy"
    shutil.copytree(run_file(swanlog).parent, folder)
    (folder / "files" / "config.yaml").write_text("a: [unclosed\n")
    [run] = load(folder)
    assert any("config.yaml: not YAML" in str(n) and "the run config was not read" in str(n) for n in run.notes)
    assert len(run.steps) == STEPS


@pytest.mark.process
def test_watch_follows_a_swanlab_run_as_its_file_grows(swanlog: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A live run's file is a prefix of the file it ends as: ``watch`` reads only what each poll finds past
    the last complete record it read (every record of the file is decoded once over the whole follow,
    however the prefixes cut it), and ends with the run ``load`` reads from the finished file."""
    import io
    import shutil

    from rlvitals.run.table_source import TableSource
    from rlvitals.watch.state import WatchState
    from rlvitals.watch.view import PlainView
    from rlvitals.watch.watcher import Watcher, WatchOptions

    source = run_file(swanlog)
    folder = tmp_path / "swanlog" / source.parent.name
    shutil.copytree(source.parent, folder)
    live = folder / source.name
    data = source.read_bytes()
    decoded: list[str] = []
    take = swanlab._take
    monkeypatch.setattr(swanlab, "_take", lambda payload, where, *a: (decoded.append(where), take(payload, where, *a)))
    now = [1000.0]
    w = Watcher([folder], WatchState(tmp_path / "state.sqlite"), [], WatchOptions(min_gap=0.0),
                view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: now[0], timer=lambda: 0.0)
    seen = []
    for share in (0.25, 0.4, 0.5, 0.77, 1.0):
        live.write_bytes(data[: int(len(data) * share)])
        now[0] += 10
        w.cycle()
        run = w.full[str(folder)].run
        steps = run.steps.tolist()
        assert steps == sorted(set(steps)) and (not seen or len(steps) >= len(seen[-1]))
        seen.append(steps)
    assert seen[0] != seen[-1] and seen[-1] == list(range(STEPS))
    assert isinstance(w.follows[0].inner, TableSource)
    assert len(decoded) == len(set(decoded))  # no record decoded twice
    followed = len(decoded)
    whole = load(folder)[0]
    assert len(decoded) == 2 * followed  # the whole read decodes each record once too
    assert w.full[str(folder)].run.raw.equals(whole.raw)
    w.close()


@pytest.mark.process
def test_serve_lists_each_run_of_a_swanlog_folder(swanlog: Path, tmp_path: Path) -> None:
    """A served folder holding a ``swanlog/`` of two runs lists two runs, each diagnosed with its steps."""
    import shutil

    root = tmp_path / "exp"
    source = run_file(swanlog).parent
    for name in (source.name, source.name.replace("run-", "run-2", 1)):
        shutil.copytree(source, root / "swanlog" / name)
    runs, notes = served(root, tmp_path)
    assert len(runs) == 2, notes
    assert [(r["status"], r["steps"], r["last_step"], r["framework"]) for r in runs] == [
        ("ready", STEPS, STEPS - 1, "verl")] * 2


# --- what a run folder may hold besides a log: a config nested deep, or bombed with aliases; FIFOs, devices ------

#: a training whose config nests 500 levels deep (SwanLab writes it to files/config.yaml, whose YAML parser
#: composes by recursion: reading it raised RecursionError)
DEEP_SCRIPT = """
import sys
sys.setrecursionlimit(20000)  # the SDK dumps the config by recursion too
import swanlab
deep = 1
for _ in range(500):
    deep = {"x": deep}
swanlab.init(project="rlv", experiment_name="deep", mode="offline", logdir=sys.argv[1],
             config={"algorithm": {"adv_estimator": "grpo"}, "deep": deep, "lr": 1e-6})
for step in range(5):
    swanlab.log({"actor/entropy": 1.0 / (step + 1), "critic/score/mean": step / 5}, step=step)
t = swanlab.echarts.Table()
t.add(["prompt", "response"], [["1+1", "2"], ["2+2", "4"]])
swanlab.log({"samples": t}, step=4)
swanlab.finish()
"""


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run folder of DEEP_SCRIPT, written by the SDK."""
    root = tmp_path_factory.mktemp("deep")
    subprocess.run([sys.executable, "-c", DEEP_SCRIPT, str(root / "swanlog")], cwd=root, capture_output=True,
                   text=True, timeout=300, check=True)
    return run_file(root / "swanlog").parent


@pytest.mark.process
def test_a_config_nested_500_deep_is_cut_with_a_counted_skip_and_the_rest_kept(deep: Path) -> None:
    from rlvitals.words import in_lang

    config = deep / "files" / "config.yaml"
    assert config.read_text().count("x:") == 500
    [run] = load(deep)
    assert len(run.steps) == 5 and run.skipped.count == 1
    [reason] = run.skipped.reasons
    shown = "deep" + ".x" * 38 + "…"  # the key down to the cut, shortened
    assert reason == (f"{config}: the config value {shown!r} nests deeper than 64 levels; it was left out (the rest "
                      "of the config was read)")
    assert in_lang(reason, "zh") == f"{config}: 配置项 {shown!r} 的嵌套超过 64 层；已略去（其余配置照常读取）"
    assert run.config["algorithm.adv_estimator"] == "grpo" and run.config["lr"] == 1e-6
    assert not [k for k in run.config if k.startswith("deep")]


@pytest.mark.process
def test_a_config_of_yaml_aliases_a_billion_values_large_is_cut_not_flattened(deep: Path, tmp_path: Path) -> None:
    """Forty lines of YAML aliases, each doubling the last, make 2**40 values: flattening them never ended."""
    import shutil

    from .specials import load_in_child

    folder = tmp_path / deep.name
    shutil.copytree(deep, folder)
    config = folder / "files" / "config.yaml"
    lines = ["lr: {value: 0.5, desc: '', sort: 0}", "l0: &l0 {a: 1, b: 2}"]
    lines += [f"l{i}: &l{i} {{p: *l{i - 1}, q: *l{i - 1}}}" for i in range(1, 40)]
    config.write_text("\n".join(lines) + "\n")
    got = load_in_child(folder)
    [run] = got["runs"]
    assert run["steps"] == 5 and run["skipped"] == 1 and run["config"]["lr"] == 0.5
    assert len(run["config"]) == 100_000 + 3  # the cap, and swanlab.project, .name, .id
    [reason] = run["reasons"]
    assert reason.startswith(f"{config}: the config holds more than 100000 values (YAML aliases can repeat one value "
                             "a billion times); the rest, ")
    assert reason.endswith(" on, was left out")


@pytest.mark.process
def test_a_fifo_or_a_device_inside_a_run_folder_is_counted_and_never_opened(deep: Path, tmp_path: Path) -> None:
    """The run's config a link to /dev/zero, its logged table a FIFO: neither is opened (a FIFO waits for a
    writer forever), each a counted skip; the run and its other files are read."""
    import json
    import shutil

    from .specials import in_child, load_in_child, plant

    folder = tmp_path / deep.name
    shutil.copytree(deep, folder)
    (folder / "files" / "config.yaml").unlink()
    config = plant(folder / "files" / "config.yaml", "zero")
    [table] = (folder / "media" / "echarts").iterdir()
    table.unlink()
    plant(table, "fifo")
    [run] = load_in_child(folder)["runs"]
    assert run["steps"] == 5 and run["reasons"] == [f"{config}: a device, not a log file; it was not opened"]
    code = ("import json, sys; from pathlib import Path; from rlvitals.ingest import SkipLog, swanlab; s = SkipLog(); "
            "t = swanlab.tables(Path(sys.argv[1]), s); print(json.dumps([len(t), s.reasons]))")
    assert json.loads(in_child(code, str(folder))) == [0, [
        f"{table}: the table logged as 'samples' at step 4 cannot be read (InputError); it was skipped"]]


@pytest.mark.process
def test_a_config_value_python_cannot_hold_is_said_not_fatal(deep: Path, tmp_path: Path) -> None:
    """Found by the fuzzer: an integer of 5,000 digits is YAML, but Python refuses to read it (ValueError)."""
    import shutil

    folder = tmp_path / deep.name
    shutil.copytree(deep, folder)
    (folder / "files" / "config.yaml").write_text("lr: {value: " + "9" * 5000 + ", desc: '', sort: 0}\n")
    [run] = load(folder)
    assert f"{folder / 'files' / 'config.yaml'}: not YAML (ValueError); the run config was not read" in run.notes
    assert len(run.steps) == 5

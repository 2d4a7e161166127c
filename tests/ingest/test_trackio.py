"""Trackio projects as the real library writes them (``trackio.init``/``log``/``finish``, ``TRACKIO_DIR``),
read from their SQLite files without trackio: value for value what the script logged and what Trackio's own
storage reads back, read while a training still writes them, and followed by ``watch`` as they grow."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from rlvitals import load
from rlvitals.errors import InputError
from rlvitals.ingest import SkipLog, SourceMeta, find_reader, trackio

from .serving import served

#: a real veRL console (a training's ``> train.log``), to sit beside a store
REAL_VERL_CONSOLE = (Path(__file__).resolve().parents[1] / "fixtures" / "real"
                     / "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log")

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

pytest.importorskip("trackio")

STEPS = 40

#: a training script: veRL keys at every step, a key logged in a call of its own at the same step, a
#: validation key every 10, NaN and infinities, a completions table; two runs of one project, and a third
#: run with the first one's name
SCRIPT = """
import math, sys, time, trackio
steps, pause = int(sys.argv[1]), float(sys.argv[2])
for name in sys.argv[3:]:
    trackio.init(project="rl.vitals demo", name=name,
                 config={"algorithm": {"adv_estimator": "grpo"}, "actor_rollout_ref": {"actor": {"lr": 1e-6}}, "n": 8})
    for step in range(steps):
        trackio.log({"actor/entropy": 1.0 / (step + 1), "critic/score/mean": step / STEPS,
                     "actor/grad_norm": math.nan if step == 5 else math.inf if step == 6 else -math.inf if step == 7
                     else 0.5 + step % 3}, step=step)
        trackio.log({"response_length/mean": 100.0 + step}, step=step)
        if step % 10 == 9:
            trackio.log({"val-core/openai/gsm8k/reward/mean@4": step / 100}, step=step)
        if pause:
            time.sleep(pause)
    trackio.log({"completions": trackio.Table(columns=["step", "prompt", "completion", "reward"],
                                              data=[[steps - 1, "1+1?", "2", 1.0]])}, step=steps - 1)
    trackio.finish()
""".replace("STEPS", str(STEPS))


def logged(step: int) -> dict[str, float]:
    out = {"actor/entropy": 1.0 / (step + 1), "critic/score/mean": step / STEPS,
           "actor/grad_norm": math.nan if step == 5 else math.inf if step == 6 else -math.inf if step == 7
           else 0.5 + step % 3, "response_length/mean": 100.0 + step}
    if step % 10 == 9:
        out["val-core/openai/gsm8k/reward/mean@4"] = step / 100
    return out


def start(store: Path, *names: str, steps: int = STEPS, pause: float = 0.0) -> subprocess.Popen[str]:
    env = {**os.environ, "TRACKIO_DIR": str(store)}
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(steps), str(pause), *names], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@contextlib.contextmanager
def running(store: Path, *names: str, steps: int = STEPS, pause: float = 0.0) -> Iterator[subprocess.Popen[str]]:
    """:func:`start`, the training killed and its pipes drained (closed) when the block fails: a failure stays in
    its own test (left open, the pipes' ResourceWarnings end a later test on the same worker)."""
    proc = start(store, *names, steps=steps, pause=pause)
    try:
        yield proc
    except BaseException:
        proc.kill()
        proc.communicate()
        raise


def write(store: Path, *names: str) -> Path:
    proc = start(store, *names)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("tk") / "trackio", "exp-a", "exp-b", "exp-a")


def at(run_frame: pl.DataFrame, key: str, step: int) -> float | None:
    hit = run_frame.filter(pl.col("step") == step)
    return None if hit.is_empty() or key not in hit.columns else hit[key].item()


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


def value_at(run: object, key: str, step: int) -> float | None:
    for frame in [run.raw, *run.validation.values()]:  # type: ignore[attr-defined]
        got = at(frame.filter(pl.col(key).is_not_null()) if key in frame.columns else frame, key, step)
        if got is not None:
            return got
    return None


@pytest.mark.process
def test_a_project_holds_its_runs_and_each_reads_what_was_logged(store: Path) -> None:
    (db,) = store.glob("*.db")
    assert db.name == "rlvitalsdemo.db" and find_reader(store).format == "trackio"
    roots = trackio.runs(store)
    assert [r.name.split("#")[1] for r in roots][1] == "exp-b" and len(roots) == 3
    assert roots[0] != roots[2]  # two runs named exp-a: told apart by their ids
    runs = load(store)
    assert len(runs) == 3 and {r.format for r in runs} == {"trackio"}
    for run in runs:
        assert run.skipped.count == 0 and run.steps.tolist() == list(range(STEPS))
        for step in range(STEPS):
            for key, value in logged(step).items():
                assert same(value_at(run, key, step), value), (key, step)
        assert run.config["algorithm.adv_estimator"] == "grpo" and run.config["n"] == 8
        assert run.config["actor_rollout_ref.actor.lr"] == 1e-6 and run.config["trackio.project"] == "rlvitalsdemo"
        assert not any(k.startswith("_") for k in run.config)
        assert run.framework == "verl" and run.algorithm == "grpo"
        assert not any(c.startswith("completions") for c in run.raw.columns)
        assert any("media and tables (1: completions) are not metrics" in str(n) for n in run.notes)


#: Trackio's own read of every run (``SQLiteStorage.get_logs``), in a process whose TRACKIO_DIR is the store
#: (trackio settles its folder when imported)
THEIRS = """
import json, sqlite3, sys
from trackio.sqlite_storage import SQLiteStorage
db = SQLiteStorage.get_project_db_path("rl.vitals demo")
runs = sqlite3.connect(db).execute("SELECT run_id, run_name FROM metrics GROUP BY run_id ORDER BY MIN(id)")
print(json.dumps([SQLiteStorage.get_logs("rl.vitals demo", name, run_id=run_id) for run_id, name in runs]))
"""


@pytest.mark.process
def test_every_value_is_what_trackios_own_storage_reads(store: Path) -> None:
    import json

    done = subprocess.run([sys.executable, "-c", THEIRS], env={**os.environ, "TRACKIO_DIR": str(store)},
                          capture_output=True, text=True, timeout=120, check=True)
    logs = json.loads(done.stdout)
    (db,) = store.glob("*.db")
    assert len(logs) == len(trackio.runs(db)) == 3
    for run_logs, root in zip(logs, trackio.runs(db), strict=True):
        theirs = {(key, log["step"]): float(value) for log in run_logs for key, value in log.items()
                  if key not in ("step", "timestamp") and isinstance(value, (int, float))}
        ours = {(key, record.step): value for record in trackio.read(root, SourceMeta("trackio"), SkipLog())
                for key, value in record.values.items()}
        assert ours.keys() == theirs.keys() and len(theirs) > 4 * STEPS
        assert all(same(ours[k], theirs[k]) for k in theirs)  # type: ignore[arg-type]


@pytest.mark.process
def test_a_project_read_while_a_training_writes_it(tmp_path: Path) -> None:
    """Reads opened read-only while the training logs: each sees a prefix of the run, and the training
    (Trackio flushes every 0.5 s, from a thread of its own) never meets a locked database."""
    store = tmp_path / "trackio"
    with running(store, "live", steps=400, pause=0.005) as proc:
        seen: list[int] = []
        until = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < until:
            if list(store.glob("*.db")):
                try:
                    [run] = load(store)
                except InputError:  # the file exists, no row yet
                    pass
                else:
                    steps = run.steps.tolist()
                    assert steps == list(range(len(steps)))
                    seen.append(len(steps))
            time.sleep(0.2)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "locked" not in err, err
    assert seen == sorted(seen) and len(set(seen)) > 1
    [run] = load(store)
    assert len(run.steps) == 400


@pytest.mark.process
def test_watch_follows_a_project_as_it_grows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each poll reads only the rows written since the last (a query from the last row id): over the whole
    training the records read add up to one read of the finished run, plus at most one per poll (a step a
    poll cut in two), however many polls there were."""
    import io

    from rlvitals.run.table_source import TableSource
    from rlvitals.watch.state import WatchState
    from rlvitals.watch.view import PlainView
    from rlvitals.watch.watcher import Watcher, WatchOptions

    store = tmp_path / "trackio"
    read = []
    scan = trackio._scan
    monkeypatch.setattr(trackio, "_scan", lambda *a, **k: (read.append(r) or r for r in scan(*a, **k)))
    now = [1000.0]
    w = Watcher([store], WatchState(tmp_path / "state.sqlite"), [], WatchOptions(min_gap=0.0),
                view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: now[0], timer=lambda: 0.0)
    lengths = []
    with running(store, "live", steps=300, pause=0.01) as proc:
        until = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < until:
            now[0] += 10
            w.cycle()
            for followed in w.full.values():  # one run: <store>/rlvitalsdemo.db#live
                lengths.append(len(followed.run.steps))
            time.sleep(0.3)
        proc.communicate(timeout=120)
    now[0] += 10
    w.cycle()
    (followed,) = w.full.values()
    assert len(followed.run.steps) == 300 and followed.run.path.endswith("rlvitalsdemo.db#live")
    assert lengths == sorted(lengths) and len(set(lengths)) > 1
    assert isinstance(w.follows[0].inner, TableSource)
    polls, followed_records = len(lengths) + 1, len(read)
    read.clear()
    [whole] = load(store)
    assert len(read) <= followed_records <= len(read) + polls  # each row once, not once per poll
    assert followed.run.raw.equals(whole.raw)
    w.close()


@pytest.mark.process
def test_a_damaged_row_is_a_counted_skip(store: Path, tmp_path: Path) -> None:
    import shutil

    (db,) = store.glob("*.db")
    copy = tmp_path / db.name
    shutil.copy(db, copy)
    con = sqlite3.connect(copy)
    con.execute("UPDATE metrics SET metrics = '{\"actor/entropy\": ' WHERE id = 3")
    con.commit()
    con.close()
    root = trackio.runs(copy)[0]
    run = load(copy)[0]
    assert run.path == str(root) and run.skipped.count == 1
    assert run.skipped.reasons[0] == (f"{root} row 3: expected a step and a JSON object of metrics, got step 1; "
                                      "the row was skipped")
    assert run.steps.tolist() == list(range(STEPS))  # step 1's other call is still read


@pytest.mark.process
def test_a_folder_of_several_projects_read_whole_is_told_in_both_languages(store: Path, tmp_path: Path) -> None:
    import shutil

    (db,) = store.glob("*.db")
    for name in ("a.db", "b.db"):
        shutil.copy(db, tmp_path / name)
    assert len(load(tmp_path)) == 6
    with pytest.raises(InputError) as got:
        list(trackio.read(tmp_path, SourceMeta("trackio"), SkipLog()))
    assert str(got.value) == (f"{tmp_path}: 2 Trackio projects in this folder; read it with load() to get their "
                              "runs, or pass one project's .db")
    assert got.value.text("zh") == (f"{tmp_path}：这个文件夹里有 2 个 Trackio 项目；用 load() 读取它们的运行，"
                                    "或者传入某一个项目的 .db 文件")


@pytest.mark.process
def test_system_samples_are_left_out_and_counted(store: Path, tmp_path: Path) -> None:
    """The machine's samples (Trackio's system_metrics table: a timestamp, no step) are no training steps."""
    import shutil

    (db,) = store.glob("*.db")
    copy = tmp_path / db.name
    shutil.copy(db, copy)
    root = trackio.runs(copy)[1]
    run_id = root.name.split("#")[1]
    con = sqlite3.connect(copy)
    (run_id,) = con.execute("SELECT run_id FROM metrics WHERE run_name = ? LIMIT 1", (run_id,)).fetchone()
    for i in range(3):
        con.execute("INSERT INTO system_metrics (run_id, timestamp, run_name, metrics) VALUES (?, ?, ?, ?)",
                    (run_id, f"2026-12-03T17:00:0{i}+00:00", "exp-b", b'{"cpu/utilization": 12.5}'))
    con.commit()
    con.close()
    run = load(copy)[1]
    assert f"{root}: Trackio's system metrics (3 samples: CPU, GPU, memory) are on their own clock, not at " \
           "training steps; they were left out" in [str(n) for n in run.notes]
    assert "cpu/utilization" not in run.raw.columns


#: as transformers' Trackio callback and TRL log: the trainer's metrics with train/global_step (Trackio counts
#: the step), TRL's profiling with its own step (the global step before the one being computed)
HF_SCRIPT = """
import trackio
trackio.init(project="hf", name="grpo", auto_log_gpu=False, auto_log_cpu=False)
for k in range(1, 5):
    trackio.log({"profiling/Time taken: GRPOTrainer.compute_loss": 0.1 * k}, step=k - 1)
    trackio.log({"train/loss": 1.0 / k, "train/reward": 0.2 * k, "train/global_step": k})
trackio.finish()
"""


@pytest.mark.process
def test_hf_global_step_is_the_axis_and_rows_logged_inside_a_step_join_it(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", HF_SCRIPT], env={**os.environ, "TRACKIO_DIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [run] = load(tmp_path / "hf.db")
    assert run.train_steps.tolist() == [1, 2, 3, 4]
    assert run.raw.select("step", "train/reward").rows() == [(k, pytest.approx(0.2 * k)) for k in range(1, 5)]
    # the profiled call of step k was logged while step k ran (Trackio step k - 1): it joins step k
    assert run.series("timing_s/trl/GRPOTrainer.compute_loss")[1].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert "train/global_step" not in run.raw.columns
    db = tmp_path / "hf.db"
    said = [n for n in run.notes if "train/global_step" in str(n)]
    assert [str(n) for n in said] == [f"{db}#grpo: the steps are HF's train/global_step; 4 rows without it (TRL's "
                                      "profiling and completions, logged while the next step ran) were placed at "
                                      "the next global step"]
    assert said[0].zh == (f"{db}#grpo：步数取 HF 的 train/global_step；4 行没有它（TRL 的性能剖析计时和补全表，"
                          "在下一步计算时记录），放在下一个 global step 上")


@pytest.mark.process
def test_serve_lists_each_run_of_a_project(store: Path, tmp_path: Path) -> None:
    """A served experiment folder holding Trackio's store lists the project's three runs, the two named
    ``exp-a`` apart, each diagnosed with its steps."""
    runs, notes = served(store.parent, tmp_path, sort="name")
    assert len(runs) == 3, notes
    assert [(r["status"], r["steps"], r["last_step"], r["framework"]) for r in runs] == [
        ("ready", STEPS, STEPS - 1, "verl")] * 3
    twins = sorted(r["label"].split("#")[1] for r in runs if "#exp-a@" in r["label"])
    assert len(twins) == 2 and twins[0] != twins[1], [r["label"] for r in runs]  # the name, and the id apart


@pytest.mark.process
def test_a_console_in_the_store_folder_is_a_run_beside_the_projects(store: Path, tmp_path: Path) -> None:
    """TRACKIO_DIR pointed at the experiment folder, where the training's console is captured too: the folder
    is Trackio's, and the console beside its database is read as well, not lost."""
    import shutil

    folder = tmp_path / "exp"
    shutil.copytree(store, folder)
    console = Path(__file__).parent / "data" / "openrlhf" / "dpo-0.11.2" / "wandb-run" / "train.log"
    shutil.copy(console, folder / "train.log")
    assert find_reader(folder).format == "trackio"
    got = [(r.format, Path(r.path).name.split("#")[0], r.last_step) for r in load(folder)]
    assert got == [("trackio", "rlvitalsdemo.db", STEPS - 1)] * 3 + [("openrlhf-trainer-console", "train.log", 16)]
    assert [r.format for r in load(folder, "trackio")] == ["trackio"] * 3  # --format trackio: its own alone


@pytest.mark.process
def test_a_project_that_cannot_be_opened_for_a_moment_is_read_at_the_next_poll(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer checkpointing its WAL can make an open fail ("disk I/O error", seen under load): that poll
    reads nothing and skips nothing, and the next one reads the rows from where the last one stopped."""
    root = trackio.runs(store)[0]
    real = trackio.connect_read_only
    calls = []

    def flaky(db: Path) -> sqlite3.Connection:
        calls.append(db)
        if len(calls) == 1:
            raise sqlite3.OperationalError("disk I/O error")
        return real(db)

    monkeypatch.setattr(trackio, "connect_read_only", flaky)
    skips, meta = SkipLog(), SourceMeta(format="trackio", files=[str(root)])
    assert trackio.since(root, meta, skips, None) == ([], None) and skips.count == 0
    records, _ = trackio.since(root, meta, skips, None)
    monkeypatch.setattr(trackio, "connect_read_only", real)
    clean, _ = trackio.since(root, SourceMeta(format="trackio", files=[str(root)]), SkipLog(), None)
    assert records and [r.step for r in records] == [r.step for r in clean] and skips.count == 0


def test_a_file_gone_before_its_sniff_is_left_out_of_the_folder(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite removes a project's ``-wal`` at a checkpoint while a training writes: a file listed in the folder
    and gone when a reader opens it to sniff past its head is no log (the read of the folder used to end in
    FileNotFoundError); the console beside it is still found."""
    from rlvitals.ingest import _folder, readers, text

    console = tmp_path / "train.log"
    shutil.copyfile(REAL_VERL_CONSOLE, console)
    gone = tmp_path / "rlvitalsdemo.db-wal"
    gone.write_bytes(b"\0" * (1 << 17))  # past the head: a console's sniff opens it to look further
    real_open = text.open_file

    def open_file(path: Path) -> object:
        if path == gone:
            path.unlink()  # removed after the listing, its size and its head were read
        return real_open(path)

    monkeypatch.setattr(text, "open_file", open_file)
    store = next(r for r in readers() if r.format == "trackio" and r.takes_dir)
    found = _folder.beside(tmp_path, store, readers())
    assert [(r.format, p.name) for r, p in found] == [("verl-console", "train.log")] and not gone.exists()

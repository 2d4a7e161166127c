"""Aim repositories as the real aim library writes them (``aim.Run(repo=…, experiment=…)``, ``run["hparams"]``,
``run.track(value, name=…, step=…, context=…)``, in a process of its own): value for value what the script
tracked, from a run that ended, a run killed in the middle of its training and a run still being written; a
run killed between two of Aim's own writes; and never a byte written into the repository while it is read."""

from __future__ import annotations

import hashlib
import inspect
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from rlvitals import load
from rlvitals.errors import InputError, MissingExtraError
from rlvitals.ingest import SkipLog, SourceMeta, aim_repo, find_reader

from .serving import served

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

pytest.importorskip("aim")

STEPS = 40
KILLED_AT = 17


def tracked(step: int) -> list[tuple[str, float, dict[str, str]]]:
    """What the training script tracks at ``step``: (name, value, context)."""
    grad = math.nan if step == 5 else math.inf if step == 6 else -math.inf if step == 7 else 0.5 + step % 3
    out = [("actor/entropy", 1.0 / (step + 1), {"subset": "train"}),
           ("critic/score/mean", step / 40, {"subset": "train"}),
           ("actor/grad_norm", grad, {"subset": "train"}),
           ("response_length/mean", 100 + step, {"subset": "train"}),  # an int
           ("kl", step / 1000, {}),
           ("acc", step / 50, {"subset": "train", "sub_dataset": "gsm8k"})]
    if step % 10 == 9:
        out.append(("reward", step / 100, {"subset": "eval"}))
    return out


#: the training: ``repo experiment steps pause end``; ``end`` is ``close`` (run.close()), or ``hold`` (after its
#: last step it waits, never closing, to be killed there). Aim's defaults stay: system metrics, terminal capture.
SCRIPT = inspect.getsource(tracked) + """
import math, sys, time, aim
repo, experiment, steps, pause, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
run = aim.Run(repo=repo, experiment=experiment)
run["hparams"] = {"algorithm": {"adv_estimator": "grpo"}, "actor_rollout_ref": {"actor": {"lr": 1e-6}}, "n": 8}
print(run.hash, flush=True)
for step in range(steps):
    for name, value, context in tracked(step):
        run.track(value, name=name, step=step, context=context)
    print(step, flush=True)
    time.sleep(pause)
if end == "close":
    run.close()
else:
    time.sleep(600)
"""

#: the keys rlvitals reads the tracked metrics as
KEYS = {"actor/entropy": "train/actor/entropy", "critic/score/mean": "train/critic/score/mean",
        "actor/grad_norm": "train/actor/grad_norm", "response_length/mean": "train/response_length/mean",
        "kl": "kl", "acc": "train/acc[sub_dataset=gsm8k]", "reward": "eval/reward"}


def start(folder: Path, experiment: str, steps: int, pause: float, end: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(folder), experiment, str(steps), str(pause), end],
                            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_after(proc: subprocess.Popen[str], step: int) -> str:
    """Kill the training (SIGKILL) once it has tracked ``step`` (where it holds); its run hash."""
    assert proc.stdout is not None
    run_hash = proc.stdout.readline().strip()
    for line in proc.stdout:
        if line.strip() == str(step):
            break
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    return run_hash


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository of two runs: one that ended, one killed (never closed) after step KILLED_AT."""
    folder = tmp_path_factory.mktemp("aim")
    done = start(folder, "grpo", STEPS, 0.0, "close")
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    kill_after(start(folder, "grpo-killed", KILLED_AT + 1, 0.0, "hold"), KILLED_AT)
    return folder


def value_at(run: object, key: str, step: int) -> float | None:
    for frame in [run.raw, *run.validation.values()]:  # type: ignore[attr-defined]
        if key not in frame.columns:
            continue
        hit = frame.filter((pl.col("step") == step) & pl.col(key).is_not_null())
        if not hit.is_empty():
            return float(hit[key].item())
    return None


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


def assert_tracked(run: object, steps: range) -> None:
    for step in steps:
        for name, value, _ in tracked(step):
            assert same(value_at(run, KEYS[name], step), float(value)), (name, step)
    assert run.steps.tolist() == list(steps)  # type: ignore[attr-defined]


@pytest.mark.process
def test_a_repository_holds_its_runs_and_each_reads_what_was_tracked(store: Path) -> None:
    assert find_reader(store).format == "aim" and find_reader(store / ".aim").format == "aim"
    roots = aim_repo.runs(store)
    assert len(roots) == 2 and all(r.name.startswith(f"{store.name}#") for r in roots)
    done, killed = load(store)
    assert {done.format, killed.format} == {"aim"}
    assert_tracked(done, range(STEPS))
    assert_tracked(killed, range(KILLED_AT + 1))
    for run, experiment in ((done, "grpo"), (killed, "grpo-killed")):
        assert run.skipped.count == 0, run.skipped.reasons
        assert run.config["algorithm.adv_estimator"] == "grpo" and run.config["actor_rollout_ref.actor.lr"] == 1e-6
        assert run.config["n"] == 8 and run.config["aim.experiment"] == experiment
        assert not any(k.startswith("__") for k in run.config)  # Aim's own system params
        assert run.framework == "verl" and run.algorithm == "grpo"
        assert any("Aim's system metrics (4: __system__cpu" in str(n) for n in run.notes)
        assert not any(c.startswith("__system__") for c in run.raw.columns)
    assert any("no end time: it was killed, or is still running" in str(n) for n in killed.notes)
    assert not any("no end time" in str(n) for n in done.notes)
    assert done.wall is not None and killed.wall is not None


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[str(path.relative_to(folder))] = (st.st_mtime_ns, st.st_size, digest)
    return out


@pytest.mark.process
def test_reading_writes_nothing_into_the_repository(store: Path) -> None:
    """Aim's own read-only open of the killed run would replay its write-ahead log into new files of the
    user's repository; the reader reads a copy, so every file keeps its bytes and times."""
    wals = [p for p in (store / ".aim" / "seqs" / "chunks").rglob("*.log") if p.stat().st_size]
    assert wals  # the killed run's log was never flushed: what Aim would rewrite
    before = snapshot(store)
    assert len(load(store)) == 2
    assert snapshot(store) == before


@pytest.mark.process
def test_a_run_still_being_written_reads_as_far_as_it_has_gone(tmp_path: Path) -> None:
    steps = 120
    proc = start(tmp_path, "live", steps, 0.05, "close")
    seen = []
    while proc.poll() is None:
        try:
            [run] = load(tmp_path)
        except InputError:  # the repository or the run's first values are not written yet
            time.sleep(0.1)
            continue
        got = run.steps.tolist()
        assert got == list(range(len(got)))
        for step in got[:-1]:  # the last step may be between its tracks
            for name, value, _ in tracked(step):
                assert same(value_at(run, KEYS[name], step), float(value)), (name, step)
        seen.append(len(got))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err  # the training was never disturbed
    assert any(0 < n < steps for n in seen), seen
    [run] = load(tmp_path)
    assert_tracked(run, range(steps))
    assert run.skipped.count == 0 and not any("no end time" in str(n) for n in run.notes)


#: a training killed between two of Aim's writes of one value: Aim writes a value's columns one by one (value,
#: epoch, time, then step); the step column of the loss is wrapped so that the process kills itself (SIGKILL)
#: just before it would write the step of ``step == cut``
TORN = """
import os, signal, sys
import aim
from aim.sdk.tracker import RunTracker

cut = int(sys.argv[2])
init = RunTracker._init_sequence_info


class KilledBeforeTheStep:
    def __init__(self, column):
        self.column = column

    def __setitem__(self, key, step):
        if step == cut:
            os.kill(os.getpid(), signal.SIGKILL)
        self.column[key] = step


def wrapped(self, ctx_id, name, val):
    info = init(self, ctx_id, name, val)
    if name == "loss":
        info.step_view = KilledBeforeTheStep(info.step_view)
    return info


RunTracker._init_sequence_info = wrapped
run = aim.Run(repo=sys.argv[1], experiment="torn")
for step in range(100):
    run.track(float(step), name="reward", step=step, context={"subset": "train"})
    run.track(1.0 / (step + 1), name="loss", step=step, context={"subset": "train"})
"""


@pytest.mark.process
def test_a_run_killed_between_two_of_aims_writes_keeps_each_value_at_its_own_step(tmp_path: Path) -> None:
    """Aim's own ``items_list()`` pairs a run's columns by position, so the loss of step 7 (its step never
    written) would shift into step 2 and on; rlvitals pairs each value with its step by their key."""
    cut = 7
    done = subprocess.run([sys.executable, "-c", TORN, str(tmp_path), str(cut)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    [run] = load(tmp_path)
    assert run.steps.tolist() == list(range(cut + 1))  # the reward of step 7 was written whole
    for step in range(cut):
        assert value_at(run, "train/loss", step) == 1.0 / (step + 1)
    assert value_at(run, "train/loss", cut) is None and value_at(run, "train/reward", cut) == float(cut)
    assert run.skipped.count == 1 and "1 value(s) without their step" in run.skipped.reasons[0]


#: what Aim's Hugging Face callback (aim.hugging_face.AimCallback.on_log) tracks for HF Trainer's logs: the keys
#: of a training step as they are, ``eval_*`` as ``*`` under the subset ``eval``, and at the end the Trainer's
#: totals (``train_runtime``, ``train_loss``…) as ``runtime``, ``loss``… under the subset ``train``
HF = """
import sys, aim
run = aim.Run(repo=sys.argv[1], experiment="hf", system_tracking_interval=None)
for step in range(1, 7):
    for name, value in {"loss": 1.0 / step, "reward": step / 10, "learning_rate": 1e-6, "epoch": step / 6}.items():
        run.track(value, name=name, step=step, context={})
    if step % 3 == 0:
        run.track(2.0 / step, name="loss", step=step, context={"subset": "eval"})
for name, value in {"runtime": 12.5, "samples_per_second": 3.0, "steps_per_second": 0.5, "loss": 0.42}.items():
    run.track(value, name=name, step=6, context={"subset": "train"})
run.track(1e12, name="total_flos", step=6, context={})
run.close()
"""


@pytest.mark.process
def test_hf_trainers_end_of_training_totals_are_the_summary(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", HF, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    [run] = load(tmp_path)
    assert run.summary == {"train_runtime": 12.5, "train_samples_per_second": 3.0, "train_steps_per_second": 0.5,
                           "train_loss": 0.42, "total_flos": 1e12}
    assert "train/loss" not in run.raw.columns and "total_flos" not in run.raw.columns
    assert [value_at(run, "loss", s) for s in range(1, 7)] == [1.0 / s for s in range(1, 7)]
    assert [value_at(run, "eval/loss", s) for s in (3, 6)] == [2.0 / 3, 2.0 / 6]
    assert run.skipped.count == 0 and not any("system metrics" in str(n) for n in run.notes)


@pytest.mark.process
def test_a_repository_of_several_runs_or_a_run_it_lacks_is_said_in_both_languages(store: Path) -> None:
    with pytest.raises(InputError, match=r"this Aim repository holds 2 runs; read it with load\(\)") as caught:
        list(aim_repo.read(store, SourceMeta(format="aim"), SkipLog()))
    assert "这个 Aim 记录库里有 2 个运行" in caught.value.text("zh")
    with pytest.raises(InputError, match=r"#0123: this Aim repository has no run '0123'; its runs: [0-9a-f]{24}, "):
        list(aim_repo.read(Path(f"{store}#0123"), SourceMeta(format="aim"), SkipLog()))


@pytest.mark.process
def test_without_the_aim_package_the_error_names_the_install(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aim", None)  # what `import aim` meets where aim is not installed
    root = aim_repo.runs(store)[0]
    with pytest.raises(MissingExtraError, match=r"an Aim repository; reading it needs the aim package, which is not "
                                                r"installed; install it with: pip install 'rlvitals\[aim\]'") as caught:
        list(aim_repo.read(root, SourceMeta(format="aim"), SkipLog()))
    assert "请用 pip install 'rlvitals[aim]' 安装" in caught.value.text("zh")


@pytest.mark.process
def test_a_damaged_run_is_counted_and_named_not_a_crash(store: Path, tmp_path: Path) -> None:
    """The killed run's values log with every seventh byte flipped: RocksDB recovers none of it; the run's
    metadata still names the steps its metrics reached, so the loss is said, not silent."""
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(store), str(copy)], check=True)
    damaged = [p for p in (copy / ".aim" / "seqs" / "chunks").rglob("*.log") if p.stat().st_size]
    assert damaged
    for wal in damaged:
        data = bytearray(wal.read_bytes())
        for i in range(0, len(data), 7):
            data[i] ^= 0x5A
        wal.write_bytes(bytes(data))
    [done] = load(copy)  # the killed run holds no metric any more: left out, and said
    assert_tracked(done, range(STEPS))
    [said] = [str(n) for n in done.notes if "skipped an empty run" in str(n)]
    assert "read as aim but it holds no metrics; 1 records were unreadable" in said
    assert "the values of 7 metric(s) end before the last step Aim recorded for them (" in said
    assert "(eval/reward: none of 9; kl: none of 17; train/acc[sub_dataset=gsm8k]: none of 17; …)" in said


@pytest.mark.process
def test_watch_follows_a_run_as_it_is_written(tmp_path: Path) -> None:
    """``watch`` reads the repository again whenever its files change: each look a prefix of what the script
    tracks, the last one the whole run."""
    import io

    from rlvitals.watch.state import WatchState
    from rlvitals.watch.view import PlainView
    from rlvitals.watch.watcher import Watcher, WatchOptions

    folder = tmp_path / "exp"
    folder.mkdir()
    steps = 60
    proc = start(folder, "live", steps, 0.05, "close")
    now = [1000.0]
    w = Watcher([folder], WatchState(tmp_path / "state.sqlite"), [], WatchOptions(min_gap=0.0),
                view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: now[0], timer=lambda: 0.0)
    seen = []
    while True:
        running = proc.poll() is None
        now[0] += 10
        w.cycle()
        for followed in w.full.values():
            got = followed.run.steps.tolist()
            assert got == list(range(len(got)))
            seen.append(len(got))
        if not running:
            break
        time.sleep(0.2)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert any(0 < n < steps for n in seen) and seen[-1] == steps
    [followed] = w.full.values()
    assert_tracked(followed.run, range(steps))
    w.close()


@pytest.mark.process
def test_serve_lists_each_run_of_a_repository(store: Path, tmp_path: Path) -> None:
    """A served folder holding an Aim repository of two runs lists two runs, each diagnosed with its steps,
    and serving it writes nothing into the repository."""
    before = snapshot(store)
    runs, notes = served(store, tmp_path)
    assert len(runs) == 2, notes
    assert sorted((r["status"], r["steps"], r["last_step"]) for r in runs) == [
        ("ready", KILLED_AT + 1, KILLED_AT), ("ready", STEPS, STEPS - 1)]
    assert snapshot(store) == before


@pytest.mark.process
def test_a_fifo_or_a_device_among_a_runs_files_is_counted_and_never_copied(store: Path, tmp_path: Path) -> None:
    """A run is read from a copy of its files: a link to /dev/zero among them was copied for ever (filling the
    disk), a FIFO waited for a writer. Neither is opened now; each is a counted skip, the run is read."""
    from .specials import load_in_child, plant

    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(store), str(copy)], check=True)
    finished = next(h for h in aim_repo._hashes(copy / ".aim") if (copy / ".aim" / "seqs" / "chunks" / h).is_dir())
    device = plant(copy / ".aim" / "seqs" / "chunks" / finished / "999999.sst", "zero")
    fifo = plant(copy / ".aim" / "meta" / "chunks" / finished / "999998.sst", "fifo")
    got = load_in_child(copy)
    [run] = [r for r in got["runs"] if r["path"].endswith(finished)]
    assert run["steps"] == STEPS
    assert sorted(run["reasons"]) == [f"{fifo}: a FIFO, not a log file; it was not opened",
                                      f"{device}: a device, not a log file; it was not opened"]


@pytest.mark.process
def test_mutated_repositories_read_or_fail_clearly(store: Path, tmp_path: Path) -> None:
    """The fuzzer's byte mutations (:mod:`.fuzzing`) of the ended run's values table and of the repository's
    metadata database, written back into a copy of the real repository: each read gives runs or a clear
    RlvitalsError, within the deadline (a quarter of the other readers' inputs: each read copies the run and
    opens it with Aim)."""
    from .fuzzing import BUDGET, Seed, check_one, fuzz

    repo = store / ".aim"
    finished, killed = aim_repo._hashes(repo)  # the ended run alone is copied: each read is of one run
    files = {p.relative_to(store).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*"))
             if p.is_file() and p.name != "LOCK" and not p.name.startswith("LOG") and killed not in p.parts}
    for mutated in (next(k for k in files if f"seqs/chunks/{finished}/" in k and k.endswith(".sst")),
                    ".aim/run_metadata.sqlite"):
        seed = Seed("aim", mutated, files[mutated], "binary", tuple((k, v) for k, v in files.items() if k != mutated),
                    ".")
        crashes = fuzz(seed, tmp_path / Path(mutated).name, lambda p: check_one(p, None, False), BUDGET // 4)
        assert not crashes, f"{len(crashes)} of {BUDGET // 4} inputs of {mutated} crashed; the first:\n{crashes[0]}"

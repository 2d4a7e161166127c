"""ClearML offline sessions as the real clearml library writes them (``Task.set_offline(True)``), read
without it: value for value what the script reported, from the session folder and from its zip, and from a
session whose process was killed while it reported."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from rlvitals import load
from rlvitals.errors import InputError
from rlvitals.ingest import SkipLog, SourceMeta, clearml_offline, find_reader

from .serving import served

pytest.importorskip("clearml")

STEPS = 30

#: a training script: veRL-style titles and series (``actor`` / ``entropy`` is ``actor/entropy``), HF's
#: ``train``/``eval`` titles, a NaN and infinities, a single value; killed (``os._exit``) when asked
SCRIPT = """
import math, os, sys, time
from clearml import Task
Task.set_offline(offline_mode=True)
task = Task.init(project_name="rlv", task_name="exp-a", auto_resource_monitoring=False,
                 auto_connect_frameworks=False, auto_connect_arg_parser=False)
task.connect({"algorithm": {"adv_estimator": "grpo"}, "lr": 1e-6, "n": 8, "use_kl": True, "model": "qwen"})
log = task.get_logger()
for i in range(int(sys.argv[1])):
    log.report_scalar(title="actor", series="entropy", value=1.0 / (i + 1), iteration=i)
    log.report_scalar(title="critic", series="score/mean", value=i / STEPS, iteration=i)
    log.report_scalar(title="actor", series="grad_norm",
                      value=math.nan if i == 5 else math.inf if i == 6 else 0.5 + i % 3, iteration=i)
    if i % 10 == 9:
        log.report_scalar(title="eval", series="loss", value=i / 100, iteration=i)
log.report_single_value("final_score", 0.75)
if len(sys.argv) > 2:
    log.flush()
    time.sleep(2)  # the reporter thread writes its last batch
    os._exit(0)  # killed: no close, no zip
task.close()
""".replace("STEPS", str(STEPS))


def reported(step: int) -> dict[str, float]:
    """What the file holds for what SCRIPT reports at ``step``: ClearML writes a NaN or an infinity as 0.0."""
    out = {"actor/entropy": 1.0 / (step + 1), "critic/score/mean": step / STEPS,
           "actor/grad_norm": 0.0 if step in (5, 6) else 0.5 + step % 3}
    if step % 10 == 9:
        out["eval/loss"] = step / 100
    return out


def write(root: Path, steps: int = STEPS, killed: bool = False) -> Path:
    """The cache's ``offline/`` folder after the script ran (HOME and the cache inside ``root``)."""
    (root / "home").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(root / "home"), "CLEARML_CACHE_DIR": str(root / "cache")}
    args = [sys.executable, "-c", SCRIPT, str(steps)] + (["killed"] if killed else [])
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return root / "cache" / "offline"


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("cm"))


def at(frame: pl.DataFrame, key: str, step: int) -> float | None:
    hit = frame.filter(pl.col("step") == step)
    return None if hit.is_empty() or key not in hit.columns else hit[key].item()


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


def value_at(run: object, key: str, step: int) -> float | None:
    for frame in [run.raw, *run.validation.values()]:  # type: ignore[attr-defined]
        if key in frame.columns:
            got = at(frame.filter(pl.col(key).is_not_null()), key, step)
            if got is not None:
                return got
    return None


def test_a_session_reads_what_the_script_reported(offline: Path) -> None:
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    (archive,) = offline.glob("*.zip")
    assert archive.stem == folder.name  # closed: the folder and its zip
    assert find_reader(offline).format == "clearml" and clearml_offline.runs(offline) == [folder]
    assert clearml_offline.runs(offline.parent) == [folder]  # the cache folder itself
    [run] = load(offline)
    assert run.skipped.count == 0 and run.steps.tolist() == list(range(STEPS))
    for step in range(STEPS):
        for key, value in reported(step).items():
            assert same(value_at(run, key, step), value), (key, step)
    assert run.summary == {"final_score": 0.75}
    config = run.config
    assert (config["algorithm.adv_estimator"], config["lr"], config["n"], config["use_kl"], config["model"]) == (
        "grpo", 1e-6, 8, True, "qwen")
    assert config["clearml.name"] == "exp-a" and config["clearml.project_name"] == "rlv"
    assert run.framework == "verl" and run.algorithm == "grpo"


def test_the_zip_is_the_same_session(offline: Path) -> None:
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    (archive,) = offline.glob("*.zip")
    assert find_reader(archive).format == "clearml"
    a, b = load(folder)[0], load(archive)[0]
    assert a.raw.equals(b.raw) and a.config == b.config and a.summary == b.summary


def test_a_killed_session_is_read_as_far_as_it_was_written(tmp_path: Path) -> None:
    offline = write(tmp_path, steps=200, killed=True)
    assert not list(offline.glob("*.zip"))  # never closed
    [run] = load(offline)
    assert 0 < len(run.steps) <= 200
    for step in run.steps.tolist()[:-1]:
        assert same(value_at(run, "actor/entropy", step), 1.0 / (step + 1))


def test_a_line_cut_by_a_kill_is_a_counted_skip(offline: Path, tmp_path: Path) -> None:
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    metrics = copy / "metrics.jsonl"
    data = metrics.read_bytes()
    metrics.write_bytes(data + data.splitlines(keepends=True)[0][:50])
    [run] = load(copy)
    assert run.skipped.count == 1
    assert run.skipped.reasons[0].endswith("an incomplete last line (the session was killed or is still writing); "
                                           "it was skipped")
    assert run.steps.tolist() == list(range(STEPS))


def test_not_a_session_is_told_in_both_languages(tmp_path: Path) -> None:
    with pytest.raises(InputError) as got:
        list(clearml_offline.read(tmp_path, SourceMeta("clearml"), SkipLog()))
    assert str(got.value) == (f"{tmp_path}: not a ClearML offline session (an offline-<id>/ folder with task.json, "
                              "or its .zip); pass a session or the cache's offline/ folder")
    assert got.value.text("zh") == (f"{tmp_path}：不是 ClearML 的离线会话（含 task.json 的 offline-<id>/ 文件夹或其 "
                                    ".zip）；请传入某个会话，或缓存里的 offline/ 文件夹")


def test_the_session_is_followed_as_it_grows(offline: Path, tmp_path: Path) -> None:
    """``watch`` re-reads a session when it changes (its metrics file grows by batches)."""
    import io

    from rlvitals.watch.state import WatchState
    from rlvitals.watch.view import PlainView
    from rlvitals.watch.watcher import Watcher, WatchOptions

    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    import orjson

    # a short session flushes one batch (one line); a long one writes a batch per flush: ten of them here
    events = [e for line in (folder / "metrics.jsonl").read_bytes().splitlines() for e in orjson.loads(line)]
    lines = [orjson.dumps(events[i * len(events) // 10:(i + 1) * len(events) // 10]) + b"\n" for i in range(10)]
    now = [1000.0]
    w = Watcher([copy], WatchState(tmp_path / "state.sqlite"), [], WatchOptions(min_gap=0.0),
                view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: now[0], timer=lambda: 0.0)
    seen = []
    for share in (0.3, 0.6, 1.0):
        (copy / "metrics.jsonl").write_bytes(b"".join(lines[: max(1, int(len(lines) * share))]))
        time.sleep(0.01)
        now[0] += 10
        w.cycle()
        seen.append(len(w.full[str(copy)].run.steps))
    assert seen == sorted(seen) and seen[-1] == STEPS and seen[0] < STEPS
    w.close()


def test_serve_lists_the_session_of_the_cache_folder(offline: Path, tmp_path: Path) -> None:
    runs, notes = served(offline.parent, tmp_path)
    assert [(r["status"], r["steps"], r["last_step"]) for r in runs] == [("ready", STEPS, STEPS - 1)], notes

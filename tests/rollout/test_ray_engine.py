"""--engine ray on a real local Ray cluster gives the local engine's result, value for value: the cluster is
started by the tests (``ray.init`` with several worker processes; ``ray start --head`` with a second node
process for the command line), and a worker killed in the middle of its task is retried."""

from __future__ import annotations

import io
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import polars as pl
import pytest

from rlvitals.cli import main
from rlvitals.rollout.analysis import RolloutAnalysis, analyze
from rlvitals.rollout.options import RolloutSettings
from rlvitals.rollout.readers import ColumnMap
from rlvitals.rollout.shards import Folded, Job, fold_job
from rlvitals.rollout.writers import write_trl_completions, write_verl_dump

from .test_sharded import _rows, assert_same

ray = pytest.importorskip("ray", reason="the ray extra is not installed")
pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray cluster of three worker CPUs; the tests' own fold functions travel to the workers by value."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def _both(path: Path, settings: RolloutSettings) -> tuple[RolloutAnalysis, RolloutAnalysis]:
    from dataclasses import replace

    return analyze(path, settings), analyze(path, replace(settings, engine="ray"))


def test_a_real_learners_dump_on_ray_is_the_local_result(cluster: None, tmp_path: Path) -> None:
    from rlvitals.synthetic.demo import run_demo

    folder = run_demo(tmp_path, steps=12).rollouts
    local, on_ray = _both(folder, RolloutSettings(ks=(1, 2, 4)))
    assert_same(on_ray, local)
    assert on_ray.shards is not None and sorted(on_ray.shards.by_step) == list(range(1, 13))


def test_inputs_where_shards_guess_and_fold_again_agree_on_ray(cluster: None, tmp_path: Path) -> None:
    scores = tmp_path / "scores"
    write_verl_dump(_rows(1, [1.0, 0.0, 0.0, 1.0]), scores, 1)
    write_verl_dump(_rows(2, [0.5, 2.5, 0.0, 1.0, 1.0]), scores, 2)  # not 0/1 and a larger group: both refolded
    with (scores / "2.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{broken\n")
    local, on_ray = _both(scores, RolloutSettings(ks="all", group_size=4))
    assert_same(on_ray, local)
    assert on_ray.ks == (1, 2, 3, 4, 5) and on_ray.rollouts is not None and on_ray.rollouts.skips.count == 1
    trl = tmp_path / "trl"
    for step, n in ((10, 4), (20, 2), (30, 4)):
        write_trl_completions([{"step": step, "prompt": f"p{p}", "response": f"r{i}", "score": float(i % 2)}
                               for p in range(3) for i in range(n)], trl, step)
    assert_same(*reversed(_both(trl, RolloutSettings(ks=(1, 2)))))
    parts = tmp_path / "parts"
    parts.mkdir()
    for part in range(4):
        pl.DataFrame([{"step": part, "gid": f"g{g}", "text": f"t{i} {g}", "reward": float((i * g + part) % 3 == 0)}
                      for g in range(5) for i in range(4)]).write_parquet(parts / f"part-{part}.parquet")
    mapped = RolloutSettings(ks=(1, 2, 4), columns=ColumnMap(group="gid", response="text", score="reward"))
    assert_same(*reversed(_both(parts, mapped)))


# --- the workers are processes of their own; one that dies mid-task is replaced -----------------------

def pid_recording_fold(job: Job) -> Folded:
    """fold_job, leaving the worker's process id in a file beside the shard, and holding its task until a
    second worker process has left one too (or a minute has passed): shards folded one after another by a
    single process fail the test, whatever the machine's speed."""
    import time

    marks = Path(job.files[0]).parent / "pids"
    marks.mkdir(exist_ok=True)
    (marks / f"{job.index}-{os.getpid()}").touch()
    deadline = time.monotonic() + 60
    while len({name.split("-")[1] for name in os.listdir(marks)}) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    return fold_job(job)


def dying_fold(job: Job) -> Folded:
    """fold_job, but the first attempt at the second shard kills its own worker process half-way."""
    mark = Path(job.files[0]).parent / "killed-once"
    if job.index == 1 and not mark.exists():
        mark.touch()
        os.kill(os.getpid(), signal.SIGKILL)  # the worker dies in the middle of its task
    return fold_job(job)


def test_shards_are_folded_in_several_worker_processes(cluster: None, tmp_path: Path) -> None:
    from rlvitals.rollout.ray_engine import engine

    for step in range(1, 9):
        write_verl_dump(_rows(step, [1.0, 0.0, float(step % 2)]), tmp_path, step)
    settings = RolloutSettings(ks=(1, 2))
    got = analyze(tmp_path, settings, engine=engine(fold=pid_recording_fold))
    assert_same(got, analyze(tmp_path, settings))
    pids = {name.split("-")[1] for name in os.listdir(tmp_path / "pids")}
    assert len(os.listdir(tmp_path / "pids")) == 8 and len(pids) >= 2 and str(os.getpid()) not in pids


def test_a_worker_killed_mid_task_is_retried_and_the_result_is_the_same(cluster: None, tmp_path: Path) -> None:
    from rlvitals.rollout.ray_engine import engine

    for step in range(1, 5):
        write_verl_dump(_rows(step, [1.0, 0.0, 0.0]), tmp_path, step)
    settings = RolloutSettings(ks=(1, 2))
    got = analyze(tmp_path, settings, engine=engine(fold=dying_fold))
    assert (tmp_path / "killed-once").exists()  # the kill did happen
    assert_same(got, analyze(tmp_path, settings))


def test_a_bad_file_is_the_readers_own_error_on_ray(cluster: None, tmp_path: Path) -> None:
    from rlvitals.errors import InputError

    (tmp_path / "3.jsonl").write_text('{"prompt": "q", "score": 1.0}\n', encoding="utf-8")  # no input/output keys
    with pytest.raises(InputError) as local:
        analyze(tmp_path, RolloutSettings())
    with pytest.raises(InputError) as on_ray:
        analyze(tmp_path, RolloutSettings(engine="ray"))
    assert str(on_ray.value) == str(local.value)


def test_address_without_the_ray_engine_is_refused_in_both_languages(tmp_path: Path) -> None:
    for lang, said in (("en", "--address 1.2.3.4:6379: the address of a Ray cluster needs --engine ray"),
                       ("zh", "--address 1.2.3.4:6379：Ray 集群的地址要和 --engine ray 一起用")):
        err = io.StringIO()
        assert main(["rollouts", str(tmp_path), "--address", "1.2.3.4:6379", "--lang", lang], io.StringIO(), err) == 2
        assert said in err.getvalue()


def test_without_ray_installed_the_engine_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvitals.errors import RlvitalsError
    from rlvitals.rollout import ray_engine

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError, as where it is not installed
    with pytest.raises(RlvitalsError) as exc:
        ray_engine.start()
    assert str(exc.value) == "--engine ray needs Ray: pip install 'rlvitals[ray]'"
    assert exc.value.text("zh") == "--engine ray 需要 Ray：pip install 'rlvitals[ray]'"


@pytest.mark.model
def test_embedding_cosine_runs_in_actors_and_agrees_with_the_local_engine(cluster: None, tmp_path: Path) -> None:
    """The embedding model loads once per actor; each step's responses are one batch in both engines, so the
    cosines agree to float32 rounding (1e-6), and every other value exactly."""
    pytest.importorskip("sentence_transformers", reason="the embed extra is not installed")
    texts = ["the cat sat on the mat", "a cat is sitting on a mat", "stock prices fell sharply today",
             "the dog ran in the park"]
    for step in (1, 2, 3):
        write_verl_dump([{"prompt": f"p{g}", "response": texts[(i + g + step) % 4], "score": float(i % 2)}
                         for g in range(2) for i in range(4)], tmp_path, step)
    local, on_ray = _both(tmp_path, RolloutSettings(ks=(1, 2), embed=True))
    key = "diversity/embedding_cosine"
    assert on_ray.steps[key].to_list() == pytest.approx(local.steps[key].to_list(), abs=1e-6)
    assert on_ray.steps.drop(key).equals(local.steps.drop(key))


def test_watch_reads_a_backlog_of_step_files_on_ray_as_it_does_here(cluster: None, tmp_path: Path) -> None:
    from polars.testing import assert_frame_equal

    from rlvitals.watch.rollouts import RolloutFollow

    for step in range(1, 6):
        write_verl_dump(_rows(step, [1.0, 0.0, float(step % 2)]), tmp_path, step)
    (tmp_path / "6.jsonl").write_text('{"prompt": "no input or output keys"}\n', encoding="utf-8")  # unreadable
    here, there = RolloutFollow(tmp_path, RolloutSettings(ks=(1, 2))), \
        RolloutFollow(tmp_path, RolloutSettings(ks=(1, 2), engine="ray"))
    assert here.poll() and there.poll()
    assert sorted(there.frames) == sorted(here.frames) == [1, 2, 3, 4, 5]
    for step in here.frames:
        assert_frame_equal(there.frames[step], here.frames[step], check_exact=True)
    assert there.messages == here.messages and len(here.messages) == 1 and "6.jsonl" in here.messages[0]


def test_diagnose_with_rollouts_on_ray_is_the_local_diagnosis(cluster: None, tmp_path: Path) -> None:
    from rlvitals.synthetic.demo import run_demo

    demo = run_demo(tmp_path, steps=12)
    base = ["diagnose", "--json", "--rollouts", str(demo.rollouts), str(demo.log)]
    local, on_ray = io.StringIO(), io.StringIO()
    assert main(base, local, io.StringIO()) == main([*base, "--engine", "ray"], on_ray, io.StringIO())
    assert orjson.loads(on_ray.getvalue()) == orjson.loads(local.getvalue())


def test_an_address_where_no_cluster_listens_is_refused_at_once() -> None:
    import socket

    from rlvitals.errors import RlvitalsError
    from rlvitals.rollout import ray_engine

    with socket.socket() as s:  # a port that was free a moment ago, now closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if ray.is_initialized():
        ray.shutdown()
    with pytest.raises(RlvitalsError) as exc:
        ray_engine.start(f"127.0.0.1:{port}")
    assert str(exc.value).startswith(f"--engine ray: no Ray cluster answers at 127.0.0.1:{port} (")
    assert exc.value.text("zh").startswith(f"--engine ray：127.0.0.1:{port} 上没有 Ray 集群应答（")

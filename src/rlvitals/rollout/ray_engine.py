"""Rollout shards folded on a Ray cluster: ``rlvitals rollouts --engine ray [--address ADDR] PATH``.

veRL and OpenRLHF already run on Ray, so the cluster a team has is a Ray cluster. Each shard
(:mod:`.shards`: a step file, a completions file, a table file) is one Ray task: the worker reads it with the
reader a local read uses, folds it into the families' mergeable states (group metrics, diversity, every
other family) and hands back the states, not the rollouts; the driver merges them and computes. The
result is the local engine's, value for value, because the merge is exact whatever the order results
arrive in. With ``embed``, the shards go to a pool of actors instead, each loading the embedding model
once and embedding its shards' responses step by step in batches.

A worker that dies mid-task (killed, out of memory) has its task run again elsewhere (``max_retries``);
a task fails for good only after that, and the error says which shard. At most two tasks per CPU of the
cluster are in flight, so the driver holds a bounded number of states at a time.

The workers read the shards' paths themselves: on a cluster of several machines the files must be at the
same path on every node (a shared file system), as veRL's ``rollout_data_dir`` on a cluster is.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import RlvitalsError
from ..words import Words
from .shards import Engine, Folded, Job, fold_job

__all__ = ["engine", "run_each", "start"]

T = TypeVar("T")
R = TypeVar("R")

#: task retries after a worker died (Ray's own default for tasks is 3)
RETRIES = 3


def start(address: str | None = None, workers: int | None = None) -> None:
    """Join the Ray cluster at ``address`` (``"auto"``: the one this machine is part of), or start a local one
    with ``workers`` CPUs (default: every core) when none is running and no address is given."""
    try:
        import ray
    except ImportError as exc:
        raise RlvitalsError(Words("--engine ray needs Ray: pip install 'rlvitals[ray]'",
                                  "--engine ray 需要 Ray：pip install 'rlvitals[ray]'")) from exc
    if ray.is_initialized():
        return
    if address is not None:
        _reachable(address)
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
    try:
        if address is not None:  # the cluster's own settings (its authentication among them) stand
            ray.init(address=address, **kw)
        else:
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a cluster of this process's, on this machine
            ray.init(num_cpus=workers, **kw)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a local cluster"
        raise RlvitalsError(Words(f"--engine ray: could not join {where} ({type(exc).__name__}: {exc}); start one "
                                  "with 'ray start --head' or give --address HOST:PORT",
                                  f"--engine ray：连不上 {where}（{type(exc).__name__}：{exc}）；请用 "
                                  "'ray start --head' 启动一个集群，或用 --address HOST:PORT 指定")) from exc


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse at once an address ``HOST:PORT`` where nothing listens (Ray itself would retry for minutes)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto", "ray://…": Ray's own to resolve
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise RlvitalsError(Words(f"--engine ray: no Ray cluster answers at {address} ({exc.strerror or exc}); start "
                                  "one there with 'ray start --head', or give the address it printed",
                                  f"--engine ray：{address} 上没有 Ray 集群应答（{exc.strerror or exc}）；请在那里用 "
                                  "'ray start --head' 启动一个，或给出它打印的地址")) from exc


def engine(address: str | None = None, workers: int | None = None,
           fold: Callable[[Job], Folded] = fold_job) -> Engine:
    """The Ray engine: each job folded by ``fold`` in a Ray task on the cluster (:func:`start` is called
    first); with embedding, in a pool of ``workers`` actors (default: the cluster's CPUs)."""

    def run(todo: Sequence[Job], done: Callable[[Folded], None]) -> None:
        if not todo:
            return
        start(address, workers)
        import ray

        cpus = max(int(ray.cluster_resources().get("CPU", 1)), 1)  # type: ignore[no-untyped-call]
        if todo[0].settings.embed:
            _actors(todo, done, workers or cpus, fold)
        else:
            _tasks(todo, done, 2 * cpus, fold)

    return run


def _tasks(todo: Sequence[Job], done: Callable[[Folded], None], in_flight: int,
           fold: Callable[[Job], Folded]) -> None:
    import ray

    task = ray.remote(max_retries=RETRIES, num_cpus=1)(fold)
    pending: dict[Any, Job] = {}
    queue = list(todo)
    while queue or pending:
        while queue and len(pending) < in_flight:
            job = queue.pop(0)
            pending[task.remote(job)] = job
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            job = pending.pop(ref)
            done(_got(ref, job))


def _got(ref: Any, job: Job) -> Folded:
    import ray

    try:
        return ray.get(ref)  # type: ignore[no-any-return]
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, Exception) else exc
        if isinstance(cause, RlvitalsError):
            raise cause from None  # the reader's own error (a bad file), as a local read raises it
        raise RlvitalsError(Words(f"{job.files[0]}: the Ray task failed ({type(cause).__name__}: {cause})",
                                  f"{job.files[0]}：Ray 任务失败（{type(cause).__name__}：{cause}）")) from exc
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.RayError) as exc:
        raise RlvitalsError(Words(f"{job.files[0]}: the Ray worker folding it died {RETRIES + 1} times ({exc})",
                                  f"{job.files[0]}：处理它的 Ray worker 死了 {RETRIES + 1} 次（{exc}）")) from exc


class _Folder:
    """An actor folding shards with the embedding model loaded once (on its first shard)."""

    def __init__(self, fold: Callable[[Job], Folded]) -> None:
        self.fold = fold

    def run(self, job: Job) -> Folded:
        return self.fold(job)


def _actors(todo: Sequence[Job], done: Callable[[Folded], None], size: int, fold: Callable[[Job], Folded]) -> None:
    import ray
    from ray.util import ActorPool

    actor = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_Folder)
    pool = ActorPool([actor.remote(fold) for _ in range(max(min(size, len(todo)), 1))])
    for result in pool.map_unordered(lambda a, job: a.run.remote(job), list(todo)):
        done(result)


def run_each(fn: Callable[[T], R], items: Sequence[T], address: str | None = None,
             workers: int | None = None) -> list[R | Exception]:
    """``fn`` of every item in Ray tasks on the cluster (:func:`start` first), in the items' order; an item
    whose task raised gets the exception (the task's own, as a local call raises it), so a caller can treat
    each item as it would locally (``watch --rollouts``: one step file each)."""
    if not items:
        return []
    start(address, workers)
    import ray

    task = ray.remote(max_retries=RETRIES, num_cpus=1)(fn)
    refs = [task.remote(item) for item in items]
    out: list[R | Exception] = []
    for ref in refs:
        try:
            out.append(ray.get(ref))
        except ray.exceptions.RayTaskError as exc:
            out.append(exc.cause if isinstance(exc.cause, Exception) else exc)
    return out

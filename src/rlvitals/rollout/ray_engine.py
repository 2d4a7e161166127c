"""Rollout shards folded on a Ray cluster: ``rlvitals rollouts --engine ray [--address ADDR] PATH``.

veRL and OpenRLHF already run on Ray, so the cluster a team has is a Ray cluster. Each shard
(:mod:`.shards`: a step file, a completions file, a table file) is one row of a Ray Dataset, mapped one row
a Ray Data task (Ray Data schedules them, holds back when the workers are busy, and runs a task again when
its worker died): the worker reads the shard's files with the reader a local read uses (its skips with
``file:line``, the veRL and TRL field mappings; Ray Data's own file readers know none of them), folds them
into the families' mergeable states (group metrics, diversity, every other family) and hands back the
states, not the rollouts; the driver merges them and computes. The
result is the local engine's, value for value, because the merge is exact whatever the order results
arrive in. With ``embed``, the shards go to a pool of actors instead, each loading the embedding model
once and embedding its shards' responses step by step in batches.

A worker that dies mid-task (killed, out of memory) has its task run again elsewhere (``max_retries``);
a shard whose reader raises an error raises it on the driver, as the local engine would.

The workers read the shards' paths themselves: on a cluster of several machines the files must be at the
same path on every node (a shared file system), as veRL's ``rollout_data_dir`` on a cluster is.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ..errors import RlvitalsError
from ..words import Words
from .shards import Engine, Folded, Job, fold_job

__all__ = ["engine", "run_each", "start"]

T = TypeVar("T")
R = TypeVar("R")


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
    """The Ray engine: the jobs as a Ray Dataset of one row each, folded by ``fold`` in Ray Data tasks on the
    cluster (:func:`start` is called first); with embedding, in a pool of ``workers`` actors (default: the
    cluster's CPUs)."""

    def run(todo: Sequence[Job], done: Callable[[Folded], None]) -> None:
        for job, got in _mapped(fold, list(todo), address, workers, actors=bool(todo) and todo[0].settings.embed):
            done(_kept(got, job))

    return run


def run_each(fn: Callable[[T], R], items: Sequence[T], address: str | None = None,
             workers: int | None = None) -> list[R | Exception]:
    """``fn`` of every item on the cluster, in the items' order; an item whose call raised gets the exception
    (the call's own, as a local call raises it), so a caller can treat each item as it would locally
    (``watch --rollouts``: one step file each)."""
    out: dict[int, R | Exception] = {}
    for i, (_, got) in enumerate(_mapped(fn, list(items), address, workers, actors=False, order=True)):
        out[i] = got
    return [out[i] for i in range(len(items))]


def _mapped(fn: Callable[[Any], Any], items: list[Any], address: str | None, workers: int | None, *,
            actors: bool, order: bool = False) -> Iterator[tuple[Any, Any]]:
    """``(item, fn(item) or the exception it raised)`` as the tasks finish (in the items' order with
    ``order``): a Ray Dataset of one row per item, mapped one row a task (``actors``: in a pool of actors)."""
    if not items:
        return
    start(address, workers)
    import ray
    import ray.data

    logging.getLogger("ray.data").setLevel(logging.ERROR)  # its progress and statistics are not the user's
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars, ctx.print_on_execution_start, ctx.execution_options.preserve_order = False, False, order
    rows = ray.data.from_items([{"i": i, "item": pickle.dumps(item)} for i, item in enumerate(items)],
                               override_num_blocks=len(items))
    if actors:
        cpus = max(int(ray.cluster_resources().get("CPU", 1)), 1)  # type: ignore[no-untyped-call]
        # Ray Data restarts a dead actor and retries its task (its defaults for actor pools)
        mapped = rows.map_batches(_Apply, fn_constructor_kwargs={"fn": fn}, batch_size=1, num_cpus=1,
                                  concurrency=max(min(workers or cpus, len(items)), 1))
    else:  # a task whose worker died is run again: Ray's default of 3 retries for tasks
        mapped = rows.map_batches(_apply, fn_kwargs={"fn": fn}, batch_size=1, num_cpus=1)  # type: ignore[arg-type]
    for row in mapped.iter_rows():
        yield items[int(row["i"])], pickle.loads(row["out"])


def _apply(batch: dict[str, Any], fn: Callable[[Any], Any]) -> dict[str, Any]:
    """One row's call, its result or its exception pickled (an error is data, re-raised on the driver)."""
    import numpy as np

    out = []
    for blob in batch["item"]:
        try:
            got = fn(pickle.loads(blob))
        except Exception as exc:  # the driver raises it as the local engine would
            got = exc
        out.append(pickle.dumps(got))
    return {"i": batch["i"], "out": np.array(out, dtype=object)}


class _Apply:
    """An actor for :func:`_apply`: what ``fn`` loads on its first call (the embedding model) stays loaded."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        return _apply(batch, self.fn)


def _kept(got: Folded | Exception, job: Job) -> Folded:
    """A shard's result, or its error raised as a local fold raises it (a reader's error is the reader's)."""
    if isinstance(got, RlvitalsError):
        raise got
    if isinstance(got, Exception):
        raise RlvitalsError(Words(f"{job.files[0]}: folding this shard on Ray failed ({type(got).__name__}: {got})",
                                  f"{job.files[0]}：在 Ray 上处理这个分片失败（{type(got).__name__}：{got}）")) from got
    return got

"""Probing while a run trains: every ``every`` steps, that step's rollouts probed as a checkpoint, in a thread of
its own, and the results merged into the probe file beside the rollouts, which everything that reads rollouts
joins by step (:mod:`rlvitals.rollout.probe_results`).

One rule decides which steps are probed, wherever the probing happens (``rlvitals demo --probe``,
``rlvitals watch --probe-every``, the TRL callback's ``probe_every``): :func:`due`, a step whose number is a
multiple of ``every``, as a trainer counts its logging and saving steps. :func:`probe_into` probes one step
and merges its record into the file (:func:`merge_steps`: a later record of a step replaces the earlier, the
others stay, the file replaced whole as ``rlvitals probe`` writes it). :class:`ProbeWorker` does that in a
daemon thread: :meth:`ProbeWorker.submit` returns at once, the backend is made in the worker on its first job
(a model loads there, not in the training loop or the watch loop), and what goes wrong is said, never raised.

>>> [s for s in range(1, 11) if due(s, 4)]
[4, 8]
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import ProbeError, RlvitalsError
from ..rollout import RolloutSet
from ..words import Words
from .backends import Backend
from .chain import Chain
from .result import DEFAULT_OPTIONS, run_probe, write_steps
from .runner import ProbeOptions
from .steps import ARITHMETIC, Verifier

__all__ = ["PeriodicProbe", "ProbeSource", "ProbeWorker", "due", "merge_steps", "probe_into"]

#: what a step's rollouts to probe are: a rollout path, a read table, or chains already made
ProbeSource = str | Path | RolloutSet | Sequence[Chain]


def due(step: int, every: int) -> bool:
    """Whether ``step`` is probed when probing every ``every`` steps (its number a multiple of ``every``)."""
    return every > 0 and step > 0 and step % every == 0


def _records(path: Path) -> list[dict[str, Any]]:
    """The records of a probe file as they are (a line that is not a JSON object with a whole step is
    dropped: :func:`~rlvitals.rollout.probe_results.read_probe_results` would skip it too)."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ProbeError(Words(f"{path}: the probe results cannot be read ({exc.strerror or exc})",
                               f"{path}：无法读取探针结果（{exc.strerror or exc}）")) from None
    out = []
    for line in lines:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("step"), int) and not isinstance(obj.get("step"), bool):
            out.append(obj)
    return out


def merge_steps(result: dict[str, object], path: Path) -> int:
    """The per-step records of ``result`` (a :func:`~rlvitals.probe.run_probe` result) merged into the probe
    file at ``path``: each replaces the record of its step, the other steps' records stay (with the model that
    answered them), in step order; the file is replaced whole. How many records it holds."""
    steps = result.get("steps")
    new = {int(r["step"]): {"model": result["model"], **r} for r in (steps if isinstance(steps, list) else [])
           if isinstance(r, dict) and isinstance(r.get("step"), int)}
    kept = {int(r["step"]): r for r in _records(path) if r["step"] not in new}
    # write_steps puts its model first and each record's own over it: every record keeps the model that answered it
    return write_steps({"model": result["model"], "steps": [r for _, r in sorted({**kept, **new}.items())]}, path)


def probe_into(source: ProbeSource, backend: Backend, path: Path, options: ProbeOptions = DEFAULT_OPTIONS, *,
               max_rollouts: int | None = None, verifier: Verifier = ARITHMETIC) -> dict[str, object]:
    """Probe the rollouts of ``source`` (one step's, as a checkpoint) with ``backend`` and merge the per-step
    results into the probe file at ``path`` (:func:`merge_steps`); the probe's result."""
    result = run_probe(source, backend, options, max_rollouts=max_rollouts, verifier=verifier)
    merge_steps(result, path)
    return result


@dataclass(frozen=True)
class PeriodicProbe:
    """How a run is probed while it trains: every ``every`` steps (:func:`due`), with the backend ``backend()``
    makes (called once, in the probing thread: ``rlvitals probe``'s ``--base-url``/``--local``), the probes of
    ``options``, at most ``max_rollouts`` of the step's rollouts, their steps checked by ``verifier``. Checked
    when made.

    Example:
        >>> PeriodicProbe(every=0, backend=lambda: None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rlvitals.errors.ProbeError: probe every 0 steps: expected a whole number of steps >= 1 ...
    """

    every: int
    backend: Callable[[], Backend]
    options: ProbeOptions = DEFAULT_OPTIONS
    max_rollouts: int = 8
    verifier: Verifier = field(default=ARITHMETIC)
    #: the probes waiting at most; a step due while so many wait drops the oldest waiting one (said)
    backlog: int = 4

    def __post_init__(self) -> None:
        bad = [f"{name} {value}" for name, value in (("every", self.every), ("max_rollouts", self.max_rollouts),
                                                     ("backlog", self.backlog))
               if not isinstance(value, int) or isinstance(value, bool) or value < 1]
        if bad:
            raise ProbeError(Words(f"probe {' '.join(bad)}{' steps' if bad[0].startswith('every') else ''}: "
                                   "expected a whole number of steps >= 1 (every), of rollouts >= 1 (max_rollouts) "
                                   "and of waiting probes >= 1 (backlog)",
                                   f"probe {' '.join(bad)}：every（步数）、max_rollouts（rollout 条数）和 backlog"
                                   "（等待的探测数）都应为不小于 1 的整数"))


class ProbeWorker:
    """Probes steps in a daemon thread as :class:`PeriodicProbe` says, merging each step's results into
    ``path``. :meth:`submit` never blocks and never raises; :meth:`messages` hands over what the user should
    read (a step probed, a probe that failed, a step dropped from a full backlog), in both languages;
    :meth:`wait` waits on the work, not on a clock.

    Example:
        >>> worker = ProbeWorker(PeriodicProbe(every=5, backend=make_backend), Path("rlvitals-probes.jsonl"))
        ... # doctest: +SKIP
        >>> worker.submit(5, "rollout_data/5.jsonl"); worker.wait(60); worker.messages()  # doctest: +SKIP
    """

    def __init__(self, plan: PeriodicProbe, path: Path, *, on_written: Callable[[Path], None] | None = None,
                 name: str = "rlvitals-probe") -> None:
        self.plan, self.path, self.on_written = plan, path, on_written
        self._jobs: deque[tuple[int, Callable[[], ProbeSource]]] = deque()
        self._said: list[Words] = []
        #: what went wrong (a probe that failed, a model that could not be loaded), also in what :meth:`messages` says
        self.failures: list[Words] = []
        self._cond = threading.Condition()
        self._busy = self._closed = False
        self._backend: Backend | None = None
        self._broken: Words | None = None  # the backend could not be made: said once, nothing more is probed
        #: the steps probed (their results are in the file), and those asked for (probed, waiting or dropped)
        self.probed: list[int] = []
        self.asked: set[int] = set()
        self.dropped = 0
        self.thread = threading.Thread(target=self._work, name=name, daemon=True)
        self.thread.start()

    def submit(self, step: int, source: ProbeSource | Callable[[], ProbeSource]) -> None:
        """Probe ``step`` on ``source`` (or what ``source()`` gives, called in the worker) once the work before
        it is done; a step asked for before is not probed again. Returns at once."""
        load = source if callable(source) else (lambda: source)
        with self._cond:
            if self._closed or step in self.asked or self._broken is not None:
                return
            self.asked.add(step)
            if len(self._jobs) >= self.plan.backlog:
                old, _ = self._jobs.popleft()
                self.dropped += 1
                self._said.append(Words(f"the probe of step {old} was skipped: {self.plan.backlog} probes were "
                                        f"already waiting when step {step} was due (probing is slower than "
                                        "training: probe less often or fewer rollouts)",
                                        f"跳过了第 {old} 步的探测：第 {step} 步到期时已有 {self.plan.backlog} 个探测在"
                                        "排队（探测比训练慢：请降低探测频率或减少 rollout 数）"))
            self._jobs.append((step, load))
            self._cond.notify_all()

    def messages(self) -> list[Words]:
        """What happened since the last call, to say to the user (then forgotten here)."""
        with self._cond:
            said, self._said = self._said, []
        return said

    def idle(self) -> bool:
        with self._cond:
            return not self._jobs and not self._busy

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every step submitted so far is probed (or failed); whether it was in time."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._jobs and not self._busy, timeout)

    def close(self, timeout: float | None = None) -> list[int]:
        """Probe what waits (``timeout`` seconds at most), then stop; the steps left unprobed."""
        self.wait(timeout)
        with self._cond:
            self._closed = True
            left = sorted(step for step, _ in self._jobs)
            self._jobs.clear()
            self._cond.notify_all()
            if left:
                self._said.append(Words(f"the probes of steps {', '.join(map(str, left))} did not run before the "
                                        "end", f"第 {'、'.join(map(str, left))} 步的探测在结束前没有运行"))
        return left

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._closed)
                if self._closed:
                    return
                step, load = self._jobs.popleft()
                self._busy = True
            failed = None
            try:
                said = self._probe(step, load)
            except Exception as exc:  # noqa: BLE001 (a probe that fails is said; the run goes on)
                said = failed = self._failure(step, exc)
            with self._cond:
                self._said.append(said)
                if failed is not None:
                    self.failures.append(failed)
                if self._broken is not None:
                    self._jobs.clear()  # no model to ask: the steps waiting are not probed
                self._busy = False
                self._cond.notify_all()

    def _failure(self, step: int, exc: Exception) -> Words:
        why = _why(exc)
        if self._backend is None:  # no model to ask: said once, and nothing more is probed
            self._broken = Words(f"probing stopped: the probe model could not be loaded ({why}); the run goes on "
                                 "without probes",
                                 f"探测已停止：无法加载探测模型（{why.zh}）；训练继续，不再探测")
            return self._broken
        return Words(f"the probe of step {step} failed ({why}); the run goes on",
                     f"第 {step} 步的探测失败（{why.zh}）；训练继续")

    def _probe(self, step: int, load: Callable[[], ProbeSource]) -> Words:
        if self._backend is None:
            self._backend = self.plan.backend()
        result = probe_into(load(), self._backend, self.path, self.plan.options, max_rollouts=self.plan.max_rollouts,
                            verifier=self.plan.verifier)
        self.probed.append(step)
        if self.on_written is not None:
            self.on_written(self.path)
        faith = result.get("faithfulness")
        score = f"{faith:.2f}" if isinstance(faith, float) else None
        return Words(f"probed step {step}: {result['rollouts']} rollouts, faithfulness "
                     f"{score or 'not measured'}; written to {self.path}",
                     f"已探测第 {step} 步：{result['rollouts']} 条 rollout，faithfulness {score or '未测出'}；"
                     f"已写入 {self.path}")


def _why(exc: Exception) -> Words:
    """What went wrong, in both languages where rlvitals wrote it."""
    if isinstance(exc, RlvitalsError):
        return Words(exc.text("en"), exc.text("zh"))
    return Words(f"{type(exc).__name__}: {exc}", f"{type(exc).__name__}: {exc}")

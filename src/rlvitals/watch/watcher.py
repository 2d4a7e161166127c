"""The watch loop: poll the logs, rebuild the Runs that grew, diagnose them, decide, alert.

One cycle: every watched path is polled (:class:`rlvitals.run.follow.Follow`); each Run that changed is rebuilt
from its records and diagnosed, unless its last diagnosis was so recent that doing it again
would spend more than a third of a core on it (``WatchOptions.diagnose_gap``: it is diagnosed
at a later cycle, with everything read by then). Meanwhile its last ``WatchOptions.tail_steps``
steps are read with the sudden checks alone (:mod:`.tail_pass`), which may raise a finding but never
clear one, so a spike is alerted within a cycle however long the run; the live path watch shares with
``serve`` and the ``Monitor`` (:class:`rlvitals.live.Alerting`: pace, confirm, decide) turns the findings
into alerts (of one run watched through two files, only one file's: :mod:`.twins`); the
cursors, the records read, the policy state and the alerts are committed to the state file in
one transaction;
then the sinks are called and each delivery is struck off. The clock and the sleep are
parameters, so tests drive cycles without waiting.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from ..checks import STATUS_RANK
from ..checks.config import DiagnoseConfig
from ..diagnosis import Diagnosis, diagnose
from ..errors import RlvitalsError
from ..ingest.rotated import RotationRules
from ..live.alerting import Alerting, read_to
from ..live.alerts import Alert, Cooldown, KeyState, Observation
from ..live.confirm import Confirm
from ..live.dispatch import messages
from ..live.pace import Pace
from ..probe.periodic import PeriodicProbe
from ..render.diagnosis import STATUS_WORDS
from ..rollout import Progress
from ..rollout.options import RolloutSettings
from ..run.follow import Follow
from ..run.load import load
from ..run.run import Run
from ..run.unterminated import Unterminated
from ..words import Words, in_lang
from .exports import LiveExports, WandbTarget
from .launches import Launches
from .outbox import Outbox
from .probing import LiveProbes
from .rollouts import RolloutFollow
from .sinks import Sink
from .state import WatchState
from .tail_pass import TailPass
from .twins import Twins
from .view import PlainView

EXIT_OK, EXIT_FINDINGS = 0, 1


@dataclass(frozen=True)
class WatchOptions:
    """How the watcher behaves. ``min_gap``: the least time between two whole re-reads of a
    TensorBoard, W&B or trainer_state log. ``diagnose_gap``: after a log's Run took ``c`` seconds
    to rebuild and diagnose, its next diagnosis waits ``diagnose_gap × c`` seconds at least (the
    log is still read at every poll), so diagnosing never takes more than ``1 / (1 + diagnose_gap)``
    of a core however long the run gets; a line waits at most about ``interval + (1 +
    diagnose_gap) × c`` for its diagnosis. ``tail_steps``: between two diagnoses of a log that
    grew, its last this many steps are read with the sudden checks only (0: never), throttled by
    their own cost in the same way; an abrupt event (a spike, a jump, NaN, a collapse) is then
    alerted within about ``interval`` plus that pass's cost (a tenth of a full diagnosis).
    ``export_tensorboard`` / ``export_wandb``: after each full diagnosis, append the run's rollout
    series, findings and verdict to a live event file in this folder (one sub-folder per run when
    several are watched) / log them to a W&B run (see :mod:`.exports`). ``rollout_settings``: how the
    followed rollouts (``--rollouts``) are read and analysed (the rollout options of ``rlvitals rollouts``).
    ``one_run``: the paths are the logs of one run's launches, watched as one run (:mod:`.launches`;
    no tail pass: each full diagnosis reads the launches again). ``rotation``: where the text logs' rotated
    files go that no rotation tool's default names (``--rotated-into``, ``--rotation-pattern``). ``probe``: probe
    the followed rollouts' due steps in the background (``--probe-every``, :mod:`.probing`; needs ``rollouts``)."""

    interval: float = 0.5
    exit_on: Literal["warn", "fail"] | None = None
    lang: str = "en"
    fmt: str | None = None
    config: DiagnoseConfig | None = None
    cooldown: Cooldown = field(default_factory=Cooldown)
    min_gap: float = 0.5
    diagnose_gap: float = 2.0
    tail_steps: int = 2000
    export_tensorboard: Path | None = None
    export_wandb: WandbTarget | None = None
    rollout_settings: RolloutSettings = field(default_factory=RolloutSettings)
    one_run: bool = False
    #: the algorithm id the watched runs are (``--algorithm``): their keys are read as its, whatever they look like;
    #: None: detected from the keys
    algorithm: str | None = None
    #: how long a new finding must hold before it is alerted (:mod:`rlvitals.live.confirm`): as ``rlvitals watch``
    #: by default (two looks, ``--confirm-looks``; a failure over half the steps read); ``Confirm(looks=1)``: at once
    confirm: Confirm = field(default_factory=Confirm)
    rotation: RotationRules = field(default_factory=RotationRules)
    #: a text log whose last line has had no newline for this many seconds is read whole once
    #: (:mod:`rlvitals.run.unterminated`), as ``rlvitals diagnose`` reads it
    settle: float = 10.0
    probe: PeriodicProbe | None = None

    def __post_init__(self) -> None:
        if self.tail_steps < 0:
            raise ValueError(f"WatchOptions: tail_steps={self.tail_steps}; expected 0 (no tail pass) or more steps")
        if self.algorithm is not None:  # a name the catalog does not know fails here, not at the first diagnosis
            from ..catalog import load_catalog
            from ..run.detect import checked_algorithm

            checked_algorithm(self.algorithm, load_catalog(), "WatchOptions: algorithm=")


#: the words of the banner ``watch`` shows when it starts, per language
_BANNER = {
    "en": {"and": ", ", "one run": " as the launches of one run (--one-run)", "rollouts": "; rollouts from {folder}",
           "probe": ", probing every {every} steps in the background (results into {file})",
           "terminal": "this terminal only (--alert SINK sends them on)", "stop": "; exits 1 at a {code}",
           "banner": "watching {follows}{more}\n  state: {state}\n  alerts: {sinks}\n  polls every {interval:g} s "
                     "and diagnoses what grew (at most {share:.0f} % of a core){stop}; Ctrl-C stops"},
    "zh": {"and": "、", "one run": "（--one-run：同一个 run 的各次启动，合成一个 run）",
           "rollouts": "；rollout 数据来自 {folder}", "terminal": "只显示在本终端（用 --alert SINK 转发）",
           "probe": "，每 {every} 步在后台做一次忠实性探测（结果写入 {file}）",
           "stop": "；结论达到“{status}”时以退出码 1 退出",
           "banner": "正在监控 {follows}{more}\n  状态文件：{state}\n  告警发往：{sinks}\n"
                     "  每 {interval:g} 秒查看一次，只诊断有新内容的日志（最多占用一个核的 {share:.0f}%）"
                     "{stop}；按 Ctrl-C 停止"},
}


class Watcher:
    """Follows ``paths`` and alerts through ``sinks``; its memory lives in ``state``.

    Example:
        >>> w = Watcher([Path("run.log")], WatchState(Path("w.sqlite")), [])  # doctest: +SKIP
        >>> w.run(once=True)  # doctest: +SKIP
        0
    """

    def __init__(self, paths: Sequence[Path], state: WatchState, sinks: Sequence[Sink],
                 options: WatchOptions | None = None, *, view: PlainView | None = None,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 rollouts: Path | None = None, timer: Callable[[], float] | None = None,
                 rollout_progress: Progress | None = None) -> None:
        import sys

        self.options = options or WatchOptions()
        self.state = state
        self.sinks = list(sinks)
        self.view = view or PlainView(sys.stdout, sys.stderr, self.options.lang)
        self.clock = clock
        self.sleep = sleep
        #: what a pass costs is read on this timer, the clock unless one is given (a test injects CPU
        #: time: the clock says when things are due, the timer how long the work took)
        self.timer = timer or clock
        saved = state.sources()
        self.follows = [Follow(p, self.options.fmt, self.options.min_gap, saved.get(str(p)), state.packed(str(p)),
                               self.options.rotation, self.options.algorithm) for p in paths]
        # a rollout dump folder whose per-step series are joined onto every run before diagnosing
        # ``rollout_progress`` hears how far the reading and analysis of those rollouts got (the CLI's bar)
        self.rollouts = (RolloutFollow(rollouts, self.options.rollout_settings, rollout_progress)
                         if rollouts is not None else None)
        if self.options.probe is not None and self.rollouts is None:
            raise ValueError("WatchOptions.probe probes the followed rollouts: give rollouts=DIR too")
        self.probes = LiveProbes(self.options.probe, self.rollouts) if self.options.probe and self.rollouts else None
        self._once = False  # run(once=True): a log that is not there yet is an error, not something to wait for
        self.diagnoses: dict[str, Diagnosis] = {}
        self.twins = Twins()
        self.launches = (Launches(paths, self.options.fmt, self.options.lang, self.options.algorithm)
                         if self.options.one_run else None)
        self._cost: dict[int, float] = {}
        self._dirty: set[Follow] = set()  # grew since their last diagnosis
        self._fresh: set[Follow] = set()  # grew since their last diagnosis or tail pass
        # the throttle of each (log, tail pass?): its next pass waits diagnose_gap × what the last one cost
        self.pace = Pace(gap=self.options.diagnose_gap)
        self.full: dict[str, Diagnosis] = {}  # each run's last full diagnosis (``diagnoses`` adds the tail's)
        self._alerted: set[str] = set()  # runs whose findings reach the policy (a twin's do not)
        # the alert path watch shares with serve and the Monitor: new findings wait until they have held, runs
        # whose steps are an estimate are held until their numbering is stable (rlvitals.live)
        self.alerting = Alerting(self.options.confirm, self.options.cooldown, keys=state.keys(), commit=self._commit,
                                 say=self.view.alert, sinks=self.sinks, send=self._send)
        self.unterminated = Unterminated(self.options.settle)  # quiet logs whose last line has no newline
        self.tails = TailPass(self.options.tail_steps, self.options.config)
        # a webhook or a command is called from its own thread: a receiver that hangs cannot stall the loop
        self.outboxes = {s.name: Outbox(s) for s in self.sinks if getattr(s, "threaded", False)}
        opts = self.options
        self.exports = LiveExports(opts.export_tensorboard, opts.export_wandb, paths,
                                   self.rollouts.derived_keys if self.rollouts is not None else list, opts.lang,
                                   self.view.note)
        self._redeliver()

    def _redeliver(self) -> None:
        """Send what a previous watcher committed but had not delivered when it stopped."""
        names = {s.name: s for s in self.sinks}
        waiting: dict[str, list[tuple[int, Alert]]] = {}
        for alert_id, alert, pending in self.state.pending():
            for name in pending:
                if name not in names:
                    self.state.delivered(alert_id, name)  # that sink is no longer configured
                    continue
                waiting.setdefault(name, []).append((alert_id, alert))
        for name, pairs in waiting.items():
            for ids, alert in messages(pairs, names[name]):
                self._send(names[name], ids, alert)

    def _send(self, sink: Sink, ids: list[int], alert: Alert) -> None:
        box = self.outboxes.get(sink.name)
        if box is not None:
            error = box.put(ids, alert)
            if error is not None:
                self.view.note(error)
            return
        error = sink.send(alert)
        for alert_id in ids:
            self._delivered(alert_id, sink.name, error if alert_id == ids[0] else None)

    def _delivered(self, alert_id: int, sink: str, error: str | None) -> None:
        if error is not None:
            self.view.note(error)
        # a failed delivery is reported and not retried: retrying every cycle would flood the
        # receiver once it is back, and the alert is kept in the state file
        self.state.delivered(alert_id, sink)

    def _collect(self) -> None:
        """Strike off what the sinks' threads delivered (in this thread: the state file is its)."""
        for name, box in self.outboxes.items():
            for ids, error in box.deliveries():  # one message may have carried several alerts: said once
                for alert_id in ids:
                    self._delivered(alert_id, name, error if alert_id == ids[0] else None)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every alert sent so far has been delivered (or failed); whether in time."""
        done = all(box.wait(timeout) for box in self.outboxes.values())
        self._collect()
        return done

    def _poll(self, now: float) -> list[Follow]:
        changed = []
        for i, follow in enumerate(self.follows):
            t0 = self.timer()
            if follow.poll(now, self._cost.get(i, 0.0)):
                changed.append(follow)
                self._cost[i] = self.timer() - t0
            if follow.moved:
                self.alerting.moved(str(follow.path), now)
            for message in follow.messages:
                if not (self._once and message == follow.waiting):  # --once does not wait: run() says so
                    self.view.note(message)
            follow.messages.clear()
        return changed

    def cycle(self, *, force: bool = False) -> list[Alert]:
        """One poll → diagnose → decide → alert pass; returns the alerts it raised. A log that grew
        is diagnosed in full when its throttle allows, and gets a tail pass when it does not (see
        :meth:`_tail_due`). Each log's alerts go out as soon as its own pass is done, not after every
        log's. ``force``: diagnose every log that grew in full, throttled or not (a last cycle after
        the trainer stopped)."""
        now = self.clock()
        sent: list[Alert] = []
        self._collect()
        changed = self._poll(now)
        if self.rollouts is not None:
            if self.rollouts.poll():  # new rollouts change every run's diagnosis, grown or not
                changed = [f for f in self.follows if f in changed or f.inner is not None]
            for message in [*self.rollouts.messages, *(self.probes.poll() if self.probes is not None else ())]:
                self.view.note(message)
            self.rollouts.messages.clear()
        self._dirty.update(changed)
        self._fresh.update(changed)
        shown = False
        if self.launches is not None:  # --one-run: the logs are one run, diagnosed when any of them grew
            due = bool(self._dirty) and (force or self.pace.due((self.follows[0].path, False), now))
            if due:
                sent.extend(self._pass(self.follows[0], now, tail=False))
                shown = True
        for follow in self.follows if self.launches is None else ():
            due = follow in self._dirty and (force or self.pace.due((follow.path, False), now))
            if not force and self._tail_due(follow, now, due):
                sent.extend(self._pass(follow, now, tail=True))
                shown = True
            whole = self.unterminated.due(follow, now)  # quiet, its last line without a newline: read whole once
            if due or whole:
                sent.extend(self._pass(follow, now, tail=False, whole=whole))
                shown = True
        # a run that stopped moving while a new finding of it waited: what waits has held (.confirm)
        sent.extend(self.alerting.quiet(now, max(2.0, 4 * self.options.interval)))
        steps = {run: read_to(d.run) for run, d in self.full.items() if run in self._alerted}
        sent.extend(self.alerting.settle(now, steps))
        if shown:
            self.view.show(self.diagnoses)
        self.view.status(self.status(now))
        return sent

    def ended(self) -> list[Alert]:
        """The logs will not grow any more (the caller knows its trainer stopped): what waits for a later look to
        hold is alerted now, at its own level; the alerts raised."""
        return self.alerting.release(self.clock())

    def status(self, now: float) -> str:
        """One line per log: what was read, its last step, and when its next diagnosis may come."""
        zh = self.options.lang == "zh"
        lines = []
        for follow in self.follows:
            read = follow.progress
            if follow.waiting:
                said = follow.waiting
            elif read is None:
                d = self.diagnoses.get(str(follow.path))
                steps = len(d.run.train_steps) if d is not None else None
                if zh:
                    said = f"上次诊断时共 {steps} 步" if steps is not None else "还没有读取"
                else:
                    said = f"{steps} steps at the last diagnosis" if steps is not None else "not read yet"
            else:
                last = read[1] if read[1] is not None else "–"
                said = f"已读 {read[0]:,} 条记录，最后一步是第 {last} 步" if zh else \
                    f"{read[0]:,} records read, last step {last}"
            d = self.full.get(str(follow.path))
            if d is not None and d.run.estimated_steps:
                said += "（步数为估计）" if zh else " (steps estimated)"
            wait = self.pace.wait((follow.path, False), now)
            due = ""
            if follow in self._dirty and wait > 0:
                due = f"；{wait:.0f} 秒后再诊断" if zh else f"; next diagnosis in {wait:.0f} s"
            lines.append(f"{follow.path.name}{'：' if zh else ': '}{said}{due}")
        return "\n".join(lines)

    def _tail_due(self, follow: Follow, now: float, full_due: bool) -> bool:
        """Whether ``follow`` gets a tail pass now: it grew since its last pass, it was diagnosed in
        full before (the tail pass adds to that), the throttle allows, and its full diagnosis is not
        due — or is, but costs over four times as much (a long run: the tail pass answers before the
        full diagnosis has ended; on a shorter one it would only add to the cycle's cost)."""
        full = self.pace.cost((follow.path, False))
        if self.options.tail_steps <= 0 or follow not in self._fresh or full is None:
            return False
        if not self.pace.due((follow.path, True), now):
            return False
        return not full_due or full > 4 * (self.pace.cost((follow.path, True)) or 0.0)

    def _pass(self, follow: Follow, now: float, *, tail: bool, whole: bool = False) -> list[Alert]:
        """A full diagnosis or a tail pass of ``follow``, throttled by its own cost; its alerts. ``whole``: of
        the log read whole (its last line has no newline), not of what the follower holds."""
        started = self.timer()
        observed = self._tail(follow) if tail else self._diagnose(
            follow, load(follow.path, self.options.fmt, algorithm=self.options.algorithm) if whole else None)
        self._fresh.discard(follow)
        if not tail:
            self._dirty.difference_update(self.follows if self.launches is not None else (follow,))
        # the cost of rebuilding and diagnosing, on the watcher's timer (a test's timer that stands
        # still never throttles); storing what was read is not part of it (the first commit of a
        # long log stores all of it once)
        self.pace.spent((follow.path, tail), self.clock(), self.timer() - started)
        alerts = self.alerting.observe(observed, now, at_once=self._once)
        self.exports.flush()  # after the alerts: starting W&B takes seconds
        return alerts

    def _diagnose(self, follow: Follow, read: list[Run] | None = None) -> list[Observation]:
        """Rebuild and diagnose ``follow``'s runs (or the runs ``read`` of its whole log); what the alert policy
        is to see of them."""
        observed = []
        runs = read if read is not None else follow.runs() if self.launches is None else self._one_run()
        for run in runs:
            if self.rollouts is not None:
                run = self.rollouts.join(run)
            d = diagnose(run, self.options.config)
            self.diagnoses[run.path] = self.full[run.path] = d
            self.tails.reset(run.path)
            # a run watched through two files is alerted once, as its primary file's
            if self.twins.primary(run, [o.run for o in self.diagnoses.values()]) == run.path:
                self._alerted.add(run.path)
                # --once reads what is there now, as diagnose does: no later look to hold an estimate for
                observed += self.alerting.look(run, d, at_once=self._once)
                self.exports.queue(d, several=len(runs) > 1)
            else:
                self._alerted.discard(run.path)
        for message in [*self.twins.notes, *self.alerting.estimates.messages]:
            self.view.note(message)
        self.twins.notes.clear()
        self.alerting.estimates.messages.clear()
        return observed

    def _one_run(self) -> list[Run]:
        """``--one-run``: the one run of the launch logs found so far (none before any holds a step)."""
        assert self.launches is not None
        run = self.launches.run(self.follows)
        for message in self.launches.messages:
            self.view.note(message)
        self.launches.messages.clear()
        return [] if run is None else [run]

    def _tail(self, follow: Follow) -> list[Observation]:
        """The sudden checks on the last steps of ``follow``'s runs, merged into their last full
        diagnoses; what the alert policy is to see of them (raises only: see :mod:`.tail`)."""
        observed = []
        steps = self.options.tail_steps
        for run in follow.runs(last=steps):
            full = self.full.get(run.path)
            if full is None or run.path not in self._alerted:
                continue  # a run not diagnosed in full yet, or a twin: its full diagnosis decides
            if self.rollouts is not None:
                run = self.rollouts.join(run).tail(steps)
            d = self.tails.read(run, full, self.alerting.keys)
            self.diagnoses[run.path] = d
            observed.append(self.alerting.part(run, d))
        return observed

    def _commit(self, changed: Mapping[str, KeyState], alerts: Sequence[Alert]) -> list[int]:
        """The policy state and the alerts, in one transaction with every log's cursor and new records."""
        sources = {str(f.path): f.state() for f in self.follows}
        records = {str(f.path): f.pending() for f in self.follows}
        ids = self.state.commit(sources, changed, list(alerts), [s.name for s in self.sinks],
                                {p: r for p, r in records.items() if r[0] or r[1]})
        for follow in self.follows:
            follow.stored()
        return ids

    def banner(self) -> str:
        """What this watcher does, in a few lines: what it follows, where it keeps its state, where
        alerts go, how often it looks (shown when it starts)."""
        w, exit_on = _BANNER[self.options.lang], self.options.exit_on
        follows = w["and"].join(str(f.path) for f in self.follows)
        follows += w["one run"] if self.launches is not None else ""
        more = w["rollouts"].format(folder=self.rollouts.folder) if self.rollouts is not None else ""
        if self.probes is not None:
            more += w["probe"].format(every=self.probes.plan.every, file=self.probes.path)
        sinks = w["and"].join(s.name for s in self.sinks) or w["terminal"]
        stop = w["stop"].format(status=STATUS_WORDS[self.options.lang][exit_on], code=exit_on) if exit_on else ""
        share = 100 / (1 + self.options.diagnose_gap)
        return w["banner"].format(follows=follows, more=more, state=self.state.path, sinks=sinks,
                                  interval=self.options.interval, share=share, stop=stop)

    def exit_code(self) -> int:
        """EXIT_FINDINGS once a finding at ``exit_on`` or worse has been alerted and still holds — a stable
        finding, not one of a run whose steps are still an estimate
        (:attr:`rlvitals.live.alerts.Observation.held`) — else EXIT_OK. With ``--once`` everything there is was
        read, as ``diagnose`` reads it: the verdict decides."""
        threshold = self.options.exit_on
        if threshold is None:
            return EXIT_OK
        if self._once:
            worst = max((STATUS_RANK[d.verdict] for d in self.diagnoses.values()), default=-1)
        else:
            standing = [s.alerted for s in self.alerting.keys.values() if s.active and s.run in self._alerted]
            worst = max((STATUS_RANK[status] for status in standing), default=-1)
        return EXIT_FINDINGS if worst >= STATUS_RANK[threshold] else EXIT_OK

    def run(self, *, once: bool = False, max_cycles: int | None = None) -> int:
        """Cycle until ``exit_on`` is reached (EXIT_FINDINGS), ``max_cycles`` ran or, with
        ``once``, after one cycle over what is there now."""
        cycles = 0
        self._once = once
        try:
            while True:
                started = self.clock()
                self.cycle()
                cycles += 1
                waiting = [f.waiting for f in self.follows if f.waiting]
                if once and waiting:  # what is there now does not include this log: waiting is for a long watch
                    said = waiting[0]
                    raise RlvitalsError(Words(f"{said.split('; waiting')[0]} (--once reads only what is there now)",
                                              f"{in_lang(said, 'zh').rsplit('；', 1)[0]}"
                                              "（--once 只读取现在已有的内容）"))
                code = self.exit_code()
                if code != EXIT_OK or once or (max_cycles is not None and cycles >= max_cycles):
                    return code
                self.sleep(max(self.options.interval - (self.clock() - started), 0.0))
        finally:
            self.view.close()

    def close(self, timeout: float = 10.0) -> None:
        """Deliver what is queued (``timeout`` seconds at most in all), report what was not, close
        the state file. What was not delivered stays pending there for the next watcher. A second
        Ctrl-C or SIGTERM meanwhile is ignored: the state file is closed whole, never half."""
        with _signals_ignored():
            deadline = time.monotonic() + timeout
            for name, box in self.outboxes.items():
                left = box.close(max(deadline - time.monotonic(), 0.0))
                if left:
                    self.view.note(Words(f"{name}: {left} alert(s) not delivered when the watcher stopped (no "
                                         f"answer within {timeout:g} s); they stay pending in the state file and "
                                         "the next watcher sends them",
                                         f"{name}：watch 停止时还有 {left} 条告警没有送达（{timeout:g} 秒内没有"
                                         "应答）；它们留在状态文件里，由下一个 watch 发送"))
            self._collect()
            for message in self.probes.close(max(deadline - time.monotonic(), 0.0)) if self.probes else ():
                self.view.note(message)  # a probe under way finishes, within what is left of the timeout
            for sink in self.sinks:  # a JSONL sink streaming to a pipe holds it open
                getattr(sink, "close", lambda: None)()
            self.exports.close()
            self.state.close()


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change handlers, and only it receives the signals
        return
    before = [signal.signal(s, signal.SIG_IGN) for s in _STOP_SIGNALS]
    try:
        yield
    finally:
        for sig, handler in zip(_STOP_SIGNALS, before, strict=True):
            signal.signal(sig, handler)


def ignore_stop_signals() -> None:
    """From now on Ctrl-C and SIGTERM are ignored: the process is on its way out (``watch`` after
    the first one), and a second must not interrupt the close or end in a traceback."""
    if threading.current_thread() is threading.main_thread():
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (what Slurm, systemd and ``kill`` send) stops the watcher as Ctrl-C does: the loop
    ends with KeyboardInterrupt, and the caller closes the watcher in its ``finally``.

    Example:
        >>> with terminate_as_interrupt():  # doctest: +SKIP
        ...     watcher.run()
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def open_watcher(paths: Sequence[Path], sinks: Sequence[Sink], state_path: Path | None = None,
                 options: WatchOptions | None = None, *, out: IO[str] | None = None,
                 err: IO[str] | None = None, live: bool = False,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 rollouts: Path | None = None, rollout_progress: Progress | None = None) -> Watcher:
    """A watcher with its state file (``--state`` or the default beside the first log) and view;
    ``rollouts``: a rollout dump folder or table followed too (``--rollouts``), read with
    ``options.rollout_settings``; ``rollout_progress(phase, done, total)`` hears how far their reading
    and analysis got (a :data:`rlvitals.rollout.Progress`, e.g. the CLI's progress bar)."""
    import sys

    from .state import default_state_path
    from .view import LiveView

    options = options or WatchOptions()
    out, err = out or sys.stdout, err or sys.stderr
    state = WatchState(state_path or default_state_path(paths[0]))
    view = LiveView(out, err, options.lang) if live else PlainView(out, err, options.lang)
    return Watcher(paths, state, sinks, options, view=view, clock=clock, sleep=sleep, rollouts=rollouts,
                   rollout_progress=rollout_progress)

"""The runs a dashboard serves: served folders and files, each log followed as it grows and diagnosed again.

A served PATH is a *root*. A log file, or a folder a reader recognises (TensorBoard, W&B, …), is
one source; any other folder is looked into every ``rescan`` seconds, down to ``discover.MAX_DEPTH`` levels
of sub-folders (``runs/exp1/train.log``), and each log in it becomes a source, so a run started
after the server shows up by itself. The list holds runs, not files: rollout dumps, rlvitals' own
files and other files are no runs, and a counted line in the notes says what was passed over
(:mod:`.discover`). A rollout folder found beside a log (veRL's ``rollout_data_dir``, TRL's
``completions/``) is joined to that log's runs (:func:`.discover.pair`); a root given its own
rollout folder (``WorkspaceOptions.rollouts``, one per root) joins that one instead, to the run of
that root only: the rollouts of one run are no other's. Rollouts are read and analysed with
``WorkspaceOptions.rollout_settings`` (the rollout options of ``rlvitals rollouts``) and joined by
the same rule as ``rlvitals diagnose --rollouts``. Every source is a
:class:`~rlvitals.run.follow.Follow`; when it gives new data the run is diagnosed again, at
most once per ``max(interval, 2 × last diagnosis time)`` so a 100k-step run cannot keep a core busy
(:class:`rlvitals.live.Pace`, the throttle of ``watch`` and the ``Monitor`` too). Each diagnosis goes on to the
live alert path those share (:mod:`.live_alerts`): a run page lists what ``watch`` would have said of its run
while it grew, where no watcher wrote its alerts into the served folders (:mod:`.alert_files`).
Each new diagnosis bumps the run's *version* and a workspace-wide *sequence* number that clients
poll (``events``). Page models are built on first request and kept for the current version only;
once a run's page has been asked for, the poll thread builds the page model of each new version
right after its diagnosis, so a reader of a growing 100k-step run does not wait for it.

A log not written for ``settle`` seconds when first found (a finished run of a sweep) is not followed but read
whole, in ``workers`` processes when given, and kept only as what the run list says of it until its page is
asked for or it is written again (:mod:`.quiet`); ``progress()`` says how many of the logs found have been
read so far, and the list shows each run as soon as it is. Such a reading is kept in the state file with the
log's signature: a restart lists an unchanged log's runs from there, reading only the logs that changed.

A followed text log is read by complete lines only (a trainer may be mid-line). A log whose last
line has no newline and that stays unchanged for ``settle`` seconds is a finished file cut short,
not a line being written: it is then read whole once (:func:`rlvitals.run.load.load`), so the
dashboard shows the same last step as ``rlvitals report``.

A run once read keeps its last good reading when a newer one fails, and when its log is gone, empty, or
rewritten into no training log, or holds it no more: the run list and the run's page say why, and mark
the reading stale (:mod:`.stale`); a change of that is an event the pages hear of.

A run's id is a hash of its path: opaque in URLs, stable across restarts. The state file
(:mod:`.store`) lists the runs with their last step and verdict before their logs are read again.
Runs are listed most recently written first (the log's mtime: the runs being trained now lead), or
by name in natural order (``run2`` before ``run10``): :func:`sort_runs`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..diagnosis import Diagnosis, diagnose
from ..errors import RlvitalsError
from ..ingest import real_path
from ..live import Pace, read_to
from ..rollout import PROBES_FILE
from ..run.follow import Follow, signature
from ..run.run import Run
from ..run.unterminated import Unterminated
from ..words import Words
from .alert_files import AlertFiles, Said
from .discover import Discovery, named_apart, passed_line
from .listing import SORTS, Served, folder_entries, modified, natural_key, run_id, sort_runs, unreadable
from .live_alerts import LiveAlerts
from .options import WorkspaceOptions
from .quiet import Reader, Readers, Reading
from .security import AccessError
from .sources import Source, inside, pair_rollouts, result_of, signature_now
from .stale import Freshness, left_out, no_metrics
from .store import RunRow, ServeState
from .views import rollout_groups_of, series_of

if TYPE_CHECKING:
    from ..rollout.analysis import RolloutAnalysis

MAX_MESSAGES = 50


class Workspace:
    """The served runs of ``paths``; ``poll_once()`` advances them, ``start()`` polls in a thread.

    Example:
        >>> ws = Workspace([Path("runs")], ServeState(Path("serve.sqlite")))  # doctest: +SKIP
        >>> ws.poll_once(); [s["verdict"] for s in ws.summaries()]  # doctest: +SKIP
        ['warn']
    """

    def __init__(self, paths: Sequence[Path], state: ServeState, options: WorkspaceOptions | None = None,
                 *, clock: Callable[[], float] = time.time, timer: Callable[[], float] = time.perf_counter,
                 reader: Reader | None = None) -> None:
        if not paths:
            raise RlvitalsError(Words("serve: no PATH given; pass log files or folders of runs to serve",
                                      "serve：没有给出 PATH；请传入要展示的日志文件或运行文件夹"))
        self.roots = [Path(p).resolve() for p in paths]
        self.options = options or WorkspaceOptions()
        self.state = state
        self.clock, self.timer = clock, timer  # when things are due; what a diagnosis cost
        self.messages: list[str] = []
        # each log is diagnosed again no sooner than max(interval, 2 × what its last diagnosis cost)
        self.pace = Pace(floor=self.options.interval, gap=2.0)
        # the run pages' own alerts, on the live path of watch and the Monitor
        self.live_alerts = LiveAlerts(self.options.confirm, self.options.cooldown)
        self._given = pair_rollouts(self.roots, self.options.rollouts)  # each root's --rollouts folder
        self._found: dict[Path, tuple[Path, ...]] = {}  # rollout folders found beside logs, with their dumps
        self._paired: dict[Path, Path] = {}  # log -> the rollout folder found beside it
        self._passed: dict[int, str] = {}  # each root's counted line: what its last scan passed over
        self._rollouts: dict[Path, RolloutAnalysis] = {}
        self._rollout_sig: dict[Path, tuple[tuple[str, int, int, int], ...]] = {}
        self._discovery = Discovery(self.options.fmt, [d for d in self._given if d is not None], [state.path])
        self._unterminated = Unterminated(self.options.settle)
        self._alert_files = AlertFiles()  # what `rlvitals watch --alert jsonl:` wrote into the served folders
        self._sources: dict[Path, Source] = {}
        self._served: dict[str, Served] = {}
        self._memo: dict[tuple[str, str], tuple[int, Any, object]] = {}
        self._owner: dict[str, Source] = {}  # run id -> the source it was read from
        self._dropped: dict[str, str] = {}  # run id -> why no reading of its source holds it any more
        self._moved: dict[str, str] = {}  # run id -> the id of the training folder's run now read in its place
        self._lock = threading.Lock()
        self._reading = threading.RLock()  # one source read at a time: by the poll thread, or by a page asked for
        self._readers = Readers(self.options.workers, *([reader] if reader else []))
        self._readings = state.readings()  # the quiet logs' last whole readings, by path
        self._seq = 0
        self._next_scan = 0.0
        self._saved = state.sources()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._remember()

    # --- reading and following -------------------------------------------------------------
    def _remember(self) -> None:
        """Runs the state file knows under these roots, listed as loading until read again."""
        roots = {str(r): i for i, r in enumerate(self.roots)}
        for row in self.state.runs().values():
            if row.root in roots:
                self._served[row.id] = Served(row.id, row.path, roots[row.root], row.version, row.last_step,
                                              row.verdict, 0, row.seen, modified=modified(Path(row.path)) or row.seen)

    def _note(self, message: str) -> None:
        if message not in self.messages:
            self.messages.append(message)
            del self.messages[:-MAX_MESSAGES]

    def _add(self, path: Path, root: int) -> None:
        if path not in self._sources:
            training = path in self._discovery.trainings  # one training logged to several places: read whole
            src = self._sources[path] = Source(path, root, Follow(
                path, self.options.fmt, self.options.min_gap, self._saved.get(str(path)), rules=self.options.rotation,
                algorithm=self.options.algorithm, training=training), tried=training)  # never read as a quiet log
            saved = self._readings.pop(str(path), None)
            if saved is not None and saved.signature == signature_now(path):  # unchanged since: not read again
                src.tried, src.modified = True, modified(path)
                self._hold(src, saved, self.clock(), again=False)

    def _scan(self) -> None:
        """Find the sources of every root (new logs in a served folder and its sub-folders included), and
        pair the rollout folders found beside logs with them (:mod:`.discover`)."""
        found: dict[Path, tuple[Path, ...]] = {}
        paired: dict[Path, Path] = {}
        alert_files: list[Path] = []
        for i, root in enumerate(self.roots):
            seen = self._discovery.scan(root)
            alert_files += seen.alerts
            for log in seen.logs:
                self._add(log, i)
            for path in inside(self._sources, seen.logs, i, self.roots):  # read with the folder that holds it now
                self._retire(self._sources.pop(path))
            pairing = seen.pairing() if self._given[i] is None else None
            for message in seen.notes + list(pairing.notes if pairing else ()):
                self._note(message)
            if pairing is not None:
                paired.update(pairing.pairs)
                found.update({f: seen.rollouts[f] for f in pairing.pairs.values()})
            line = passed_line(root, seen, len(pairing.pairs) if pairing else 0)
            if line is None:
                self._passed.pop(i, None)
            else:
                self._passed[i] = line
        for log in set(paired) | set(self._paired):
            if paired.get(log) != self._paired.get(log) and log in self._sources:
                self._sources[log].dirty = True  # joined to other rollouts, or to none any more
        self._found, self._paired = found, paired
        self._said(self._alert_files.update(alert_files))

    def _retire(self, src: Source) -> None:
        """``src`` is read with the training folder that holds it now (a console, once the trainer wrote its first
        checkpoint): its runs leave the list and the state file, and their ids lead to the folder's run."""
        folder = run_id(str(src.path.parent))
        with self._lock:
            for rid in src.runs:
                self._served.pop(rid, None)
                self._owner.pop(rid, None)
                self._dropped.pop(rid, None)
                self._moved[rid] = folder
            self._memo = {key: hit for key, hit in self._memo.items() if key[1] not in src.runs}
        self.state.forget_source(str(src.path), src.runs)
        if src.runs:
            self._note(f"{src.path}: read with the training in {src.path.parent} from now on")

    def moved_to(self, rid: str) -> str | None:
        """The id of the run now read in the place of run ``rid`` (a console read with its training folder), or
        None."""
        new = self._moved.get(rid)
        return new if new is not None and new in self._served else None

    def _said(self, runs: set[str]) -> None:
        """New alerts of the runs at ``runs`` (real paths): their pages change, so their version moves on."""
        if not runs:
            return
        with self._lock:
            for rid, served in list(self._served.items()):
                if served.ready and str(real_path(Path(served.path))) in runs:
                    self._seq += 1
                    self._served[rid] = replace(served, version=served.version + 1, seq=self._seq)

    def _alerted(self, runs: set[str]) -> None:
        """The dashboard's own alerts of ``runs`` (paths as read) changed: their pages change."""
        self._said({str(real_path(Path(run))) for run in runs})

    def alerts_of(self, served: Served) -> tuple[list[Said], bool]:
        """The alerts of ``served``'s run, oldest first, and whether ``rlvitals watch`` said them: those it wrote
        into the served folders, else the dashboard's own (:mod:`.live_alerts`)."""
        said = self._alert_files.of(served.path)
        return (said, True) if said else (self.live_alerts.of(served.path), False)

    def _rollout_dir(self, src: Source) -> Path | None:
        """The rollout folder joined to ``src``'s runs: its root's --rollouts folder, else one found beside it."""
        return self._given[src.root] or self._paired.get(src.path)

    def _scan_rollouts(self) -> None:
        from ..rollout.analysis import analyze

        wanted = {d for d in self._given if d is not None} | set(self._paired.values())
        for gone in set(self._rollouts) - wanted:
            del self._rollouts[gone]
            self._rollout_sig.pop(gone, None)
        for folder in sorted(wanted):
            try:
                dumps = self._found.get(folder)
                # a folder found beside a log may hold that log too: only its dumps say it changed
                sig = signature(folder) if dumps is None else tuple(sig for f in dumps for sig in signature(f))
                probed = folder / PROBES_FILE  # rlvitals probe's results: a re-probe changes the rollout series
                sig += signature(probed) if dumps is not None and probed.is_file() else ()
                if sig == self._rollout_sig.get(folder):
                    continue
                self._rollouts[folder] = analyze(folder, self.options.rollout_settings)
            except (RlvitalsError, OSError) as exc:
                self._note(f"rollouts {folder}: {exc}")
                continue
            self._rollout_sig[folder] = sig
            for src in self._sources.values():
                if self._rollout_dir(src) == folder:
                    src.dirty = True  # its runs join the new rollout series

    def _rollouts_of(self, src: Source, runs: int) -> RolloutAnalysis | None:
        """The rollouts to join to the runs read from ``src``: its root's, when that root serves one run,
        or those found beside it, when it holds one run."""
        folder = self._rollout_dir(src)
        analysis = self._rollouts.get(folder) if folder is not None else None
        if analysis is None:
            return None
        if self._given[src.root] is None:
            if runs > 1:
                self._note(f"rollouts {folder}: {src.path} holds {runs} runs, so the rollouts beside it are joined "
                           "to none of them; serve the run as its own PATH with --rollouts DIR")
                return None
            return analysis
        if runs > 1 or sum(s.root == src.root for s in self._sources.values()) > 1:
            self._note(f"rollouts {folder}: {self.roots[src.root]} serves several runs, so "
                       "its rollouts are joined to none of them; serve each run as its own PATH with its own "
                       "--rollouts")
            return None
        return analysis

    def poll_once(self) -> list[str]:
        """Look for new logs (every ``rescan`` s), read what every log appended, diagnose the runs that
        grew (when their throttle allows); the ids of the runs updated."""
        now = self.clock()
        if now >= self._next_scan:
            with self._reading:
                self._scan()  # first: it finds the rollout folders beside the logs
                self._scan_rollouts()
            self._next_scan = now + self.options.rescan
        updated: list[str] = []
        for src in list(self._sources.values()):
            with self._reading:
                whole = self._is_quiet(src, now)
            if whole:  # not under the lock: read here without workers, and a page asked for meanwhile is read
                src.reading = self._readers.submit(src.path, self.options.fmt, self.options.algorithm,
                                                   self.options.config)
            with self._reading:
                updated += self._poll_source(src, now)
        if not any(src.reading is not None for src in self._sources.values()):
            self._readers.idle()  # every quiet log is read: the worker processes go until another is found
        self._alerted(self.live_alerts.tick(now, max(2.0, 4 * self.options.interval)))
        return updated

    def _poll_source(self, src: Source, now: float) -> list[str]:
        if src.reading is not None or src.quiet is not None:
            return self._poll_quiet(src, now)
        before = src.error
        try:
            if src.follow.poll(now, self.pace.cost(src.path) or 0.0):
                src.dirty = True
            if src.follow.moved:
                self.live_alerts.moved(str(src.path), now)
            src.error = src.follow.error
        except RlvitalsError as exc:
            if str(exc) != src.error:
                self._note(str(exc))
            src.error = Words(str(exc), exc.text("zh"))
        self._look(src, before)
        for message in src.follow.messages:
            self._note(message)
        src.follow.messages.clear()
        updated = self._diagnose(src, now) if src.dirty and self.pace.due(src.path, now) else []
        return updated + self._settle(src, now)

    def _look(self, src: Source, before: str | None) -> None:
        """Whether ``src``'s last good reading is still what its path holds; its runs hear of a change of that."""
        if src.runs:  # read before: say so when that reading is not what the path holds any more
            src.fresh = src.fresh or Freshness(src.path, self.options.fmt)
            src.error = src.fresh.look(src.follow) or src.error
        if src.error != before:
            self._touch(src.runs)

    def _is_quiet(self, src: Source, now: float) -> bool:
        """A log found not written for ``settle`` s, never read, with no rollouts to join: read it whole."""
        if src.tried or src.follow.inner is not None or self._rollout_dir(src) is not None:
            return False
        src.tried = True
        written = modified(src.path)
        return 0 < written <= now - self.options.settle

    def _poll_quiet(self, src: Source, now: float) -> list[str]:
        """A quiet log: take what its whole read gave, or see whether it was written since."""
        if src.reading is not None:
            if not src.reading.done():
                return []
            reading, src.reading = result_of(src.reading), None
            if reading is None or reading.signature is None or reading.signature != signature_now(src.path):
                return self._poll_source(src, now)  # it could not be read whole, or moved meanwhile: follow it
            src.modified = modified(src.path)
            self.state.save_reading(reading)
            return self._hold(src, reading, now, again=True)
        before = src.error
        if src.quiet != signature_now(src.path):  # written to (or gone) since: followed from now on
            src.quiet = None
            self.state.forget_reading(str(src.path))
            return self._poll_source(src, now)
        self._look(src, before)
        return []

    def _hold(self, src: Source, reading: Reading, now: float, *, again: bool) -> list[str]:
        """List the runs of a quiet log's ``reading`` by their facts alone; ``again``: a new reading (its
        version moves on), else the state file's, of the log as it still is (the version stays)."""
        ids = []
        for found in reading.runs:
            rid = run_id(found.path)
            src.runs.add(rid)
            self._owner[rid] = src
            self._dropped.pop(rid, None)
            with self._lock:
                old = self._served.get(rid)
                self._seq += 1
                version = (old.version if old else 0) + (1 if again or old is None else 0)
                served = Served(rid, found.path, src.root, version, found.last_step, found.verdict, self._seq,
                                now if again or old is None else old.updated, modified=src.modified,
                                facts=found.facts)
                self._served[rid] = served
            if again:
                self.state.save_run(RunRow(rid, found.path, str(self.roots[src.root]), found.last_step,
                                           found.verdict, version, now))
            ids.append(rid)
        src.quiet, src.read = reading.signature, True
        return ids

    def _wake(self, rid: str) -> None:
        """Read the quiet log of run ``rid`` (held as its facts) and follow it from now on: its page is asked
        for. The reading is the same log, so the run's version stays."""
        with self._reading:
            src = self._owner.get(rid)
            if src is None or src.quiet is None:
                return
            src.quiet = None
            now = self.clock()
            try:
                src.follow.poll(now)
            except RlvitalsError as exc:
                self._note(str(exc))
                return
            for message in src.follow.messages:
                self._note(message)
            src.follow.messages.clear()
            self._diagnose(src, now, keep=True)

    def _settle(self, src: Source, now: float) -> list[str]:
        """Read a quiet text log whole when its last line has no newline (:mod:`rlvitals.run.unterminated`)."""
        if not self._unterminated.due(src.follow, now):
            return []
        from ..run.load import load

        try:
            runs = load(src.path, self.options.fmt, algorithm=self.options.algorithm)
        except RlvitalsError as exc:
            self._note(str(exc))
            return []
        return self._diagnose(src, now, runs)

    def _diagnose(self, src: Source, now: float, runs: list[Run] | None = None, *, keep: bool = False) -> list[str]:
        """Diagnose the runs read from ``src`` (``runs``: as read whole) and publish them; ``keep``: the same
        reading as the one listed (a quiet log read for its page), so their versions stay."""
        t0 = self.timer()
        ids = []
        found = src.follow.runs() if runs is None else runs
        src.modified = modified(src.path)
        analysis = self._rollouts_of(src, len(found))
        for run in found:
            try:
                if analysis is not None:
                    run = analysis.join(run, f"rollouts in {self._rollout_dir(src)}")
                d = diagnose(run, self.options.config)
                told = self.live_alerts.seen(run, d, now)  # before the new version: its page carries them
                rid = self._publish(src, run, d, now, analysis, keep=keep)
                self._alerted(told - {run.path})
                if ("page", rid) in self._memo:  # someone looks at this run: have its next page ready
                    self.page(self._served[rid])
                ids.append(rid)
            except (RlvitalsError, ValueError) as exc:
                self._note(f"{run.path}: could not be diagnosed ({exc}); it is shown when the next lines fix it")
        left = src.runs - {run_id(r.path) for r in found} - self._dropped.keys()
        for rid in left:  # read before, in no reading now: its last good reading stays, marked stale
            self._dropped[rid] = left_out(self._served[rid].path, src.path) if found else no_metrics(src.path)
        self._touch(left)
        src.dirty, src.read = False, True
        self.pace.spent(src.path, now, self.timer() - t0)
        self.state.save_source(str(src.path), src.follow.state())
        return ids

    def _touch(self, ids: set[str]) -> None:
        """The runs ``ids`` changed without a new reading (their error did): clients polling events hear of it."""
        with self._lock:
            for rid in ids & self._served.keys():
                self._seq += 1
                self._served[rid] = replace(self._served[rid], seq=self._seq)

    def _publish(self, src: Source, run: Run, d: Diagnosis, now: float, analysis: RolloutAnalysis | None,
                 *, keep: bool = False) -> str:
        rid = run_id(run.path)
        src.runs.add(rid)
        self._owner[rid] = src
        self._dropped.pop(rid, None)
        with self._lock:
            old = self._served.get(rid)
            keep = keep and old is not None and read_to(run) == old.last_step  # the reading listed, held whole
            self._seq += 0 if keep else 1
            served = Served(rid, run.path, src.root, (old.version if old else 0) + (0 if keep else 1), read_to(run),
                            d.verdict, old.seq if keep and old else self._seq, old.updated if keep and old else now,
                            run, d, analysis, src.modified)
            self._served[rid] = served
        self.state.save_run(RunRow(rid, run.path, str(self.roots[src.root]), served.last_step, served.verdict,
                                   served.version, now))
        return rid

    def start(self) -> None:
        """Poll every ``interval`` seconds in a background thread until :meth:`close`."""
        self._thread = threading.Thread(target=self._loop, name="rlvitals-serve-poll", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:  # noqa: BLE001 - one bad log must not stop following the others
                self._note(f"serve: polling failed ({exc!r}); will retry")
            self._stop.wait(self.options.interval)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._readers.close()
        self.state.close()

    # --- what the routes read ----------------------------------------------------------------
    def summaries(self, sort: str = "updated") -> list[dict[str, Any]]:
        """Every served run, and every log that could not be read, with its error: a run already read
        keeps its last good reading and says why the newer one failed; a log never read is listed as
        ``unreadable``. Most recently written first, or with ``sort="name"`` by name (:func:`sort_runs`)."""
        with self._lock:
            served = sorted(self._served.values(), key=lambda s: (s.root, s.path))
        labels = self.labels()
        out = [{**s.summary(self.error_of(s)), "label": labels[s.id]} for s in served]
        shown = {s.path for s in served}
        out += [unreadable(src.path, src.root, src.error) for src in list(self._sources.values())
                if src.error and not src.runs and str(src.path) not in shown
                and not any(p.startswith(f"{src.path}/") or p.startswith(f"{src.path}#") for p in shown)]
        named_apart(out, len(served))  # a log never read is named apart from the others too (exp2/train.log)
        return sort_runs(out, sort)

    def error_of(self, served: Served) -> str | None:
        """Why the newest reading of a served run failed, or why its last good reading is stale (its log
        is gone, empty, no training log any more, or holds it no more: :mod:`.stale`); None when neither."""
        src = self._owner.get(served.id) or self._sources.get(Path(served.path))
        return (src.error if src is not None else None) or self._dropped.get(served.id)

    def progress(self) -> dict[str, int]:
        """How many of the logs found so far have been read (``read``, of ``total``): the run list says "reading
        k of N" until they all are. A log waiting to be written, or that could not be read, counts as read."""
        sources = list(self._sources.values())
        done = sum(src.read or src.error is not None or bool(src.follow.waiting)
                   or (src.follow.inner is not None and not src.dirty) for src in sources)
        return {"read": done, "total": len(sources)}

    def notes(self) -> list[str]:
        """What the run list's notes show: each served folder's counted line (what its last scan passed
        over: rollout folders, rlvitals' own files, files that are not logs), then the messages."""
        return [*(self._passed[i] for i in sorted(self._passed)), *self.messages]

    def labels(self) -> dict[str, str]:
        """Run id → a name unique among the served runs (parent folders added where file names clash)."""
        from ..report.model import unique_labels

        with self._lock:
            served = list(self._served.values())
        return dict(zip((s.id for s in served), unique_labels([s.path for s in served]), strict=True))

    def get(self, rid: str, *, ready: bool = True) -> Served:
        """The run with id ``rid``; :class:`AccessError` 404 for an unknown id, and with ``ready`` 503
        while a remembered run's log is read again."""
        served = self._served.get(rid)
        if served is None and (moved := self.moved_to(rid)) is not None:
            raise AccessError(404, f"run {rid!r} is read with its training folder now: it is run {moved!r}")
        if served is None:
            raise AccessError(404, f"run {rid!r}: no such run in this workspace; list them with GET /api/runs")
        if served.diagnosis is None and served.facts is not None:  # listed by its facts alone: read it now
            self._wake(rid)
            served = self._served[rid]
        if ready and served.diagnosis is None:
            raise AccessError(503, f"run {rid!r}: its log is being read again after a restart; retry in a moment")
        return served

    def memo(self, kind: str, served: Served, build: Callable[[], Any], also: object = None) -> Any:
        """``build()`` once per run version (a page model, a rendered page) and ``also`` (what else it shows)."""
        hit = self._memo.get((kind, served.id))
        if hit is not None and hit[0] == served.version and hit[2] == also:
            return hit[1]
        value = build()
        self._memo[(kind, served.id)] = (served.version, value, also)
        return value

    def page(self, served: Served) -> dict[str, Any]:
        """The report's page model of one run at its current version."""
        from ..report.model import build_page

        assert served.run is not None and served.diagnosis is not None  # get() returns ready runs only
        run, d, label = served.run, served.diagnosis, self.labels()[served.id]
        page: dict[str, Any] = self.memo("page", served, lambda: build_page([run], [d], served.rollouts,
                                                                            labels=[label]))
        return page

    def series(self, served: Served, key: str, start: float | None, end: float | None,
               buckets: int) -> dict[str, Any]:
        """One metric of a run between two steps, downsampled (:func:`.views.series_of`)."""
        return series_of(served, key, start, end, buckets)

    def rollout_groups(self, served: Served, step: int | None) -> dict[str, Any]:
        """A run's steps with rollouts, and one step's groups (:func:`.views.rollout_groups_of`)."""
        return rollout_groups_of(served, step)

    def events(self, after: int) -> dict[str, Any]:
        """The runs updated since sequence number ``after`` (a client keeps the returned ``seq``)."""
        with self._lock:
            changed = [s for s in self._served.values() if s.seq > after]
            seq = self._seq
        moved = {old: new for old in list(self._moved) if (new := self.moved_to(old)) is not None}
        return {"seq": seq, "runs": [s.summary(self.error_of(s)) for s in changed], "moved": moved}

    def files(self, root: int, rel: str) -> dict[str, Any]:
        """What lies at ``rel`` inside served root ``root`` and which runs each entry serves."""
        return folder_entries(self.roots, root, rel, list(self._served.values()))


__all__ = ["SORTS", "Served", "Workspace", "WorkspaceOptions", "natural_key", "run_id", "sort_runs"]

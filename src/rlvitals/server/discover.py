"""Which entries of a served folder are runs, which folders hold rollouts, and which run each rollout
folder belongs to: ``rlvitals serve`` lists runs, not files.

A served folder is walked down to ``MAX_DEPTH`` levels of sub-folders, at most ``MAX_SCAN`` entries:

* a file or folder a log reader recognises (:func:`rlvitals.ingest.find_reader`) is a run's log;
* a folder holding rollout dumps as ``rlvitals diagnose --rollouts`` reads them
  (:func:`rlvitals.rollout.readers.dump_files`: veRL's ``rollout_data_dir`` of ``<step>.jsonl``,
  TRL's ``completions/`` of ``completions_<step>.parquet``) is a *rollout folder*: its dumps are not
  runs. Its other entries are still looked at, since veRL may dump beside its log; a run folder a
  reader takes whole (a TRL ``output_dir``) is looked into for the rollout folders it holds;
* rlvitals' own files are not runs: ``.rlvitals/`` (the watch state), the state files
  ``watch.sqlite`` and ``serve.sqlite`` (with their ``-wal``/``-shm``/``-journal`` files) and this
  server's own, ``rlvitals-live.json`` (a live TensorBoard export's memo), ``rlvitals-probes.jsonl`` (the
  probe results ``rlvitals probe`` writes beside rollouts; read with those rollouts), and alert files written
  by ``--alert jsonl:FILE`` (JSONL whose first object begins with ``"alert_id"``; listed on the pages of
  the runs they name: :mod:`.alert_files`);
* anything else — a README, a config, hidden entries, links out of the served folder, FIFOs — is
  not a log.

A folder no reader takes whole but that holds one training logged to several places — a trainer's
``output_dir`` before its first checkpoint: the console ``train.log`` beside the trackers' copies (``runs/``,
``wandb/``, ``mlflow.db``, ``trackio/``) and ``completions/`` — is one log too, read whole as ``rlvitals
diagnose FOLDER`` reads it (:func:`rlvitals.run.load.load` folds the copies into one run): a *training
folder* (:attr:`Discovery.trainings`). It is one when the logs found in it are at least two, of at least two
formats, all directly in it (a file, or a tracker's folder), one a tracker's and one a file (diagnose folds copies
only into a log whose folder holds them: two trackers' folders alone stay two runs); a log in a plain sub-folder
makes it a folder of runs instead. Once a training folder, it stays one (a trainer writing its
first ``checkpoint-N/`` makes it a Trainer output_dir: the same path, the same run).

A served log file is one run; the rollout folders beside it are paired with it exactly as they would
be were the folder holding them served: its parent folder when a sub-folder of that holds dumps
(veRL's default layout, below), else its own folder. The other logs found there count for the
pairing but are not served, and nothing else found there is counted.

Each scan counts what it passed over (:class:`Found`) so the dashboard says it in its notes
(:func:`passed_line`), never silently. A file once judged is judged again only when its size or
mtime changes, so a scan every few seconds reads nothing twice.

:func:`pair` gives each rollout folder its run: the log in the rollout folder itself (dumps beside
the log), else the log or run folder beside it or holding it (``exp/train.log`` beside
``exp/rollout_data/``; a TRL ``output_dir`` holding ``completions/``), else the one log below the
folder that holds it (veRL's default ``<project>/<experiment>.jsonl`` beside ``rollout_data_dir``).
Several logs at the nearest of these places: none is chosen, and a note says so. Several rollout
folders for one log: a veRL log (a reader of veRL's formats read it) keeps only veRL dumps, a TRL
log only TRL completions; of those left, the ones whose name starts with ``val`` are validation
dumps (veRL's ``validation_data_dir``) and are set aside; if several remain, none is joined, and a
note says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EmptyInputError, InputError
from ..ingest import SPECIAL_ZH, find_reader, real_path, special_kind, unique
from ..rollout import PROBES_FILE, Pairing, owners, pair
from ..rollout.readers import dump_files
from ..run import TRACKERS, one_training
from ..words import Words

MAX_DEPTH = 4  # sub-folder levels of a served folder searched for logs (runs/exp1/seed0/train.log)
MAX_SCAN = 5000  # entries looked at per served folder and scan
MAX_INNER = 200  # entries of a run folder looked at for the rollout folders it holds
#: rlvitals' own files by name (the state files' WAL, shared-memory and journal files too)
OWN_NAMES = frozenset({".rlvitals", "watch.sqlite", "serve.sqlite", "rlvitals-live.json", PROBES_FILE})
_OWN_TAILS = ("", "-wal", "-shm", "-journal")
#: how an alert file written by ``--alert jsonl:FILE`` begins (``JsonlSink`` writes the alert id first)
ALERT_HEAD = b'{"alert_id":'


@dataclass
class Found:
    """What one scan of a served path found: the logs (those seen before included), the rollout
    folders with their dumps, notes, and how many entries it passed over as rlvitals' own or as not
    logs. :meth:`pairing` joins its rollout folders to its logs."""

    logs: list[Path] = field(default_factory=list)
    #: logs beside a served log file: not served, but a rollout folder beside both is not clearly its
    beside: list[Path] = field(default_factory=list)
    formats: dict[Path, str] = field(default_factory=dict)  # each log's reader format ("" if not known yet)
    rollouts: dict[Path, tuple[Path, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: alert files written by ``rlvitals watch --alert jsonl:FILE`` (counted as rlvitals' own, and shown on the
    #: pages of the runs they name: :mod:`.alert_files`)
    alerts: list[Path] = field(default_factory=list)
    own: int = 0
    other: int = 0
    #: the real paths looked at so far: a folder or file reached through links as well is looked at once
    walked: set[Path] = field(default_factory=set, repr=False)

    def pairing(self) -> Pairing:
        """Its rollout folders joined to its logs (:func:`pair`; the logs beside a served file count too)."""
        found = pair(self.rollouts, self.logs + self.beside, self.formats)
        return Pairing({log: f for log, f in found.pairs.items() if log in self.logs}, found.alone, found.notes)


def _is_own(path: Path, extra: frozenset[Path]) -> bool:
    """Whether ``path`` is a file rlvitals wrote other than an alert file (see the module docstring)."""
    return any(path.name == name + tail for name in OWN_NAMES for tail in _OWN_TAILS) or \
        any(str(path) == str(p) + tail for p in extra for tail in _OWN_TAILS)


def _is_alerts(path: Path) -> bool:
    """Whether ``path`` is an alert file ``--alert jsonl:FILE`` wrote."""
    if path.suffix not in (".jsonl", ".ndjson", ".json") or not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return head.lstrip().startswith(ALERT_HEAD)


class Discovery:
    """Walks served folders for logs and rollout folders; remembers its judgments between scans.
    ``exclude``: folders never looked into (a path's ``--rollouts`` folder); ``own``: files this
    server writes (its state file).

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp()); _ = (d / "notes.txt").write_text("hello")
        >>> found = Discovery(None).scan(d); found.logs, found.other
        ([], 1)
    """

    def __init__(self, fmt: str | None, exclude: Iterable[Path] = (), own: Iterable[Path] = ()) -> None:
        self.fmt = fmt
        self.exclude = frozenset(p.resolve() for p in exclude)
        self.own = frozenset(p.resolve() for p in own)
        self._logs: dict[Path, str] = {}  # every log seen, with its reader's format
        #: the training folders found (see the module docstring): each is one log, read whole
        self.trainings: set[Path] = set()
        self._judged: dict[Path, tuple[tuple[int, int], str]] = {}  # size and mtime when judged, and how

    def scan(self, root: Path) -> Found:
        """Everything under served path ``root`` (a resolved path)."""
        found = Found()
        whole = self._whole(root) if root.is_dir() else ""
        if whole is None and root in self.trainings:
            whole = self._logs[root]  # a training folder once, one log for good
        if whole is not None:
            # a log file (or one not written yet: it is waited for), or a run folder a reader takes whole
            found.logs.append(root)
            found.formats[root] = whole
            if root.is_dir():
                self._inner(root, found)
            else:
                self._beside(root, found)
            return found
        budget = [MAX_SCAN]
        found.walked.add(real_path(root))
        self._walk(root, root, 0, budget, found, MAX_DEPTH)
        if budget[0] <= 0:
            found.notes.append(Words(f"serve: {root} holds more than {MAX_SCAN} files and folders; only the first "
                                     f"{MAX_SCAN} were looked at for logs — serve its run folders as separate PATHs",
                                     f"serve：{root} 里的文件和文件夹超过 {MAX_SCAN} 个，只在前 {MAX_SCAN} 个里找了"
                                     "日志；请把其中的运行文件夹分别作为 PATH 传入"))
        if not found.logs:
            found.notes.append(Words(f"serve: no training log found yet in {root} or its sub-folders ({MAX_DEPTH} "
                                     "levels deep); logs written there later are picked up",
                                     f"serve：{root} 及其子文件夹（{MAX_DEPTH} 层）里还没有训练日志；"
                                     "之后写进去的日志会被读到"))
        return found

    def _whole(self, folder: Path) -> str | None:
        """The format of the reader that takes ``folder`` whole (TensorBoard, W&B, a Trainer's output_dir …);
        None for a plain folder (the logs are in it or in its sub-folders)."""
        try:
            return find_reader(folder, self.fmt).format
        except EmptyInputError:
            return ""  # recognised, nothing logged yet
        except InputError:
            return None

    def _beside(self, log: Path, found: Found) -> None:
        """The rollout folders a served log file owns, as if the folder holding them were served: the
        log's parent folder when one of its sub-folders holds dumps (veRL's default
        ``<project>/<experiment>.jsonl`` beside ``rollout_data/``), else the log's own folder, two levels
        deep (every place :func:`pair` looks for a log's rollouts there). The other logs found count for
        the pairing (rollouts beside two logs are neither's) but are not served; nothing else is counted."""
        around = Found()
        home, up = log.parent, log.parent.parent
        if up != home and self._holds_dumps(up, skip=home):
            # two levels, as pair() looks: the parent may be a crowded folder (a home, /tmp) and is walked
            # again at every rescan
            self._walk(up, up, 0, [MAX_INNER], around, 2)
        else:
            self._walk(home, home, 0, [MAX_SCAN], around, 2)
        if log not in around.logs:
            around.logs.append(log)  # not judged a log yet (nothing logged, say): still the served one
        found.rollouts = {f: d for f, d in around.rollouts.items() if log in owners(f, around.logs)}
        found.beside = [p for p in around.logs if p != log]
        found.formats = {**around.formats, log: found.formats[log] or around.formats.get(log, "")}

    @staticmethod
    def _holds_dumps(folder: Path, skip: Path) -> bool:
        """Whether a sub-folder of ``folder`` (other than ``skip``) holds rollout dumps."""
        try:
            subs = [c for c in sorted(folder.iterdir())[:MAX_INNER]
                    if c != skip and not c.name.startswith(".") and c.is_dir()]
        except OSError:
            return False
        for sub in subs:
            try:
                if dump_files(sorted(sub.iterdir())):
                    return True
            except OSError:
                continue
        return False

    def _walk(self, folder: Path, root: Path, depth: int, budget: list[int], found: Found, levels: int) -> None:
        """Look at the entries of ``folder``, and into its sub-folders down to ``levels``; an entry reached
        through links as well (``runs/latest -> exp3``, a link back up, a loop) is looked at once, by the
        path that is no link where there is one (:func:`rlvitals.ingest.unique`)."""
        try:
            children = unique(sorted(folder.iterdir()))
        except OSError:
            return
        dumps = dump_files(children)
        if dumps:
            found.rollouts[folder] = tuple(dumps)
        skip = set(dumps)
        start = (len(found.logs), found.own, found.other)
        for child in children:
            real = real_path(child)
            if child in skip or real in found.walked:
                continue
            found.walked.add(real)
            if budget[0] <= 0:
                return
            budget[0] -= 1
            if self._consider(child, real, root, found) and depth + 1 < levels:
                self._walk(child, root, depth + 1, budget, found, levels)
        self._training(folder, found, start)

    def _training(self, folder: Path, found: Found, start: tuple[int, int, int]) -> None:
        """Make ``folder`` one log when the logs its walk found (from ``found.logs[start[0]]`` on) are one training
        logged to several places (see the module docstring): a tracker's copy and another log of another format, all
        directly in it, one of them a file (the console, ``mlflow.db``: only into a log whose folder holds the copies
        does diagnose fold them, :mod:`rlvitals.run.twins`); a training folder among them is a run of its own
        (``folder`` then holds runs). What the walk passed over in it is then not counted, as in a run folder a
        reader takes whole (``start``: the counts before)."""
        logs = found.logs[start[0]:]
        formats = [found.formats.get(log, "") for log in logs]
        if any(log in self.trainings for log in logs) or not one_training(folder, list(zip(logs, formats,
                                                                                             strict=True))):
            return
        del found.logs[start[0]:]
        found.own, found.other = start[1:]
        for log in logs:
            del found.formats[log]
        # the format a rollout folder beside it is judged by (pair(): a TRL console's completions/): its console's
        shown = next((f for f in formats if f.endswith("-console")), next(f for f in formats if f in TRACKERS))
        self.trainings.add(folder)
        self._logs[folder] = shown
        found.logs.append(folder)
        found.formats[folder] = shown

    def _inner(self, folder: Path, found: Found) -> None:
        """The rollout folders a run folder holds (TRL's ``output_dir/completions/``)."""
        try:
            subs = [c for c in sorted(folder.iterdir())[:MAX_INNER] if c.is_dir() and not c.name.startswith(".")]
        except OSError:
            return
        for sub in subs:
            try:
                dumps = dump_files(sorted(sub.iterdir()))
            except OSError:
                continue
            if dumps:
                found.rollouts[sub] = tuple(dumps)

    def _consider(self, child: Path, real: Path, root: Path, found: Found) -> bool:
        """Count or follow ``child`` (``real``: its real path); True for a folder no reader takes (look inside
        it)."""
        if child in self._logs:
            found.logs.append(child)
            found.formats[child] = self._logs[child]
            if child.is_dir():
                self._inner(child, found)
            return False
        if child.name in OWN_NAMES:
            found.own += 1
            return False
        if child.name.startswith(".") or (real != root and not real.is_relative_to(root)):
            found.other += 1  # hidden, or a symbolic link out of the served folder: not served
            return False
        if real in self.exclude:
            return False  # a --rollouts folder: its dumps are JSONL too, but not training logs
        try:
            st = child.stat()
        except OSError:
            return False
        seen = (st.st_size, st.st_mtime_ns)
        judged = self._judged.get(child)
        kind = judged[1] if judged is not None and judged[0] == seen else self._judge(child, found)
        if kind.startswith("log:"):
            self._logs[child] = kind[4:]
            return self._consider(child, real, root, found)
        if kind == "folder":
            return True  # a folder of runs; looked into again at the next scan (it may fill)
        self._judged[child] = (seen, kind)
        if kind in ("own", "alerts"):
            found.own += 1
            if kind == "alerts":
                found.alerts.append(child)
        else:
            found.other += 1
        return False

    def _judge(self, child: Path, found: Found) -> str:
        """``log:FORMAT``, ``folder`` (look inside), ``alerts`` (an alert file), ``own`` (rlvitals wrote it) or
        ``other``."""
        special = special_kind(child)
        if special is not None:  # a FIFO would block the scan forever: never opened, said once
            found.notes.append(Words(f"serve: {child}: a {special}, not a log file; it was not opened",
                                     f"serve：{child}：这是{SPECIAL_ZH[special]}，不是日志文件；没有打开它"))
            return "other"
        if _is_own(child, self.own):
            return "own"
        if _is_alerts(child):
            return "alerts"
        if child.is_dir():
            whole = self._whole(child)
            return "folder" if whole is None else f"log:{whole}"
        try:
            return f"log:{find_reader(child, self.fmt).format}"
        except EmptyInputError:
            return "log:"  # recognised but nothing logged yet: follow it anyway
        except InputError:
            return "other"


def named_apart(entries: list[dict[str, Any]], start: int) -> None:
    """Label the run list's ``entries`` from ``start`` on (the logs never read) by the shortest end of their
    paths that tells them from every entry's (``exp1/train.log``, ``exp2/train.log``), as the runs are named.

    Example:
        >>> entries = [{"path": "/r/exp1/train.log", "label": "exp1/train.log"},
        ...            {"path": "/r/exp2/train.log", "label": "train.log"}]
        >>> named_apart(entries, 1); entries[1]["label"]
        'exp2/train.log'
    """
    if len(entries) <= start:
        return
    from ..report.model import unique_labels

    for entry, label in list(zip(entries, unique_labels([e["path"] for e in entries]), strict=True))[start:]:
        entry["label"] = label


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def passed_line(root: Path, found: Found, paired: int) -> Words | None:
    """The counted line the dashboard's notes show for served folder ``root``: its rollout folders
    paired and not, and what it passed over (in English and Chinese); None when there is nothing to say.

    Example:
        >>> line = passed_line(Path("/runs"), Found(own=2, other=1, rollouts={Path("/runs/a/r"): ()}), 1)
        >>> line
        'serve: in /runs: 1 rollout folder paired with its log, 2 rlvitals files skipped, 1 other file is not a log'
        >>> line.zh
        'serve：/runs 中：1 个 rollout 文件夹已与日志关联，跳过 2 个 rlvitals 文件，另有 1 个文件不是日志'
    """
    parts: list[tuple[str, str]] = []
    if paired:
        parts.append((_count(paired, "rollout folder paired with its log", "rollout folders paired with their logs"),
                      f"{paired} 个 rollout 文件夹已与日志关联"))
    if len(found.rollouts) > paired:
        alone = len(found.rollouts) - paired
        parts.append((_count(alone, "rollout folder not paired", "rollout folders not paired"),
                      f"{alone} 个 rollout 文件夹未关联"))
    if found.own:
        parts.append((_count(found.own, "rlvitals file skipped", "rlvitals files skipped"),
                      f"跳过 {found.own} 个 rlvitals 文件"))
    if found.other:
        parts.append((_count(found.other, "other file is not a log", "other files are not logs"),
                      f"另有 {found.other} 个文件不是日志"))
    if not parts:
        return None
    return Words(f"serve: in {root}: " + ", ".join(en for en, _ in parts),
                 f"serve：{root} 中：" + "，".join(zh for _, zh in parts))


__all__ = ["MAX_DEPTH", "MAX_SCAN", "Discovery", "Found", "Pairing", "named_apart", "pair", "passed_line"]

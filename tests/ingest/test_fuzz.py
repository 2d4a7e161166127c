"""Every reader and rollout reader fuzzed: structure-aware mutations of a seed per reader
(:mod:`.fuzzing`), a fixed number of inputs each, the same inputs on every machine.

An input passes when reading it gives runs or a clear ``RlvitalsError``, and diagnosing each run
it gave raises nothing. ``RLVITALS_FUZZ_INPUTS`` sets the inputs per reader (the suite's smoke run:
120); ``RLVITALS_FUZZ_SAVE=1`` copies a crashing input into ``tests/ingest/regressions/``, where
:func:`test_every_regression_input_reads_or_fails_clearly` keeps it from coming back.

Seeds are real files cut short (veRL, TRL and the other consoles, the Unsloth CSV, a notebook, a
TensorBoard event file and a W&B ``.wandb`` file from the corpus) or written by the real writers
(polars for Parquet, MLflow for its SQLite and file stores, SwanLab and Trackio for theirs, rlvitals' own dump
writers for rollouts). Folders of runs holding odd entries (FIFOs, links to devices, to nothing or in a loop,
names that are not UTF-8, a folder named like a log) are made around those seeds; they are read and served.
A ClearML session's zip and an Aim repository are fuzzed in their own modules, from the real sessions and
repositories those write (``test_clearml.py``, ``test_aim.py``).

No input may take more than :data:`.fuzzing.HANG` seconds (a loop guard, not a speed limit) or grow the
process's peak memory by :data:`.fuzzing.MEMORY` bytes.
"""

from __future__ import annotations

import os
import random
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from rlvitals import load
from rlvitals.errors import RlvitalsError
from rlvitals.rollout import analyze, read_rollouts

from .fuzzing import (
    BUDGET,
    READERS,
    REGRESSIONS,
    Seed,
    build_seeds,
    check_one,
    checked,
    fuzz,
    guarded,
    rollout_seeds,
)
from .odd_folders import odd_folder


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Seed]:
    return build_seeds(tmp_path_factory.mktemp("seeds"))


def check_rollouts(path: Path) -> str | None:
    try:
        rs = guarded(lambda: read_rollouts(path))
        guarded(lambda: analyze(rs.table))
    except RlvitalsError:
        return None
    except Exception:  # noqa: BLE001
        return traceback.format_exc(limit=-6)
    return None


def _save(reader: str, name: str, data: bytes) -> Path | None:
    if os.environ.get("RLVITALS_FUZZ_SAVE") != "1":
        return None
    import hashlib

    out = REGRESSIONS / f"{reader}__{hashlib.sha1(data).hexdigest()[:10]}__{name}"
    out.write_bytes(data)
    return out




def _fuzz(seed: Seed, folder: Path, check: Callable[[Path], str | None]) -> list[str]:
    return fuzz(seed, folder, check, BUDGET, _save)


@pytest.mark.parametrize("reader", READERS)
def test_mutated_inputs_read_or_fail_clearly(reader: str, seeds: dict[str, Seed], tmp_path: Path) -> None:
    seed = seeds[reader]
    assert check_one(_written(tmp_path, seed), None, True) is None  # the seed itself reads
    crashes = _fuzz(seed, tmp_path, checked(seed.format))
    assert not crashes, f"{len(crashes)} of {BUDGET} inputs crashed the {reader} reader; the first:\n{crashes[0]}"


@pytest.mark.parametrize("reader", ["mlflow-file", "mlflow-meta", "swanlab", "swanlab-config", "trackio"])
def test_a_trackers_seed_is_its_run(reader: str, seeds: dict[str, Seed], tmp_path: Path) -> None:
    """The seeds of a tracker's files, written back among the run's other files, read as the run the writer
    logged (so the fuzzer starts from a run, not from something each reader refuses)."""
    seed = seeds[reader]
    [run] = load(_written(tmp_path, seed))
    assert len(run.steps) == (7 if seed.format == "mlflow" else 12) and run.skipped.count == 0


def _written(folder: Path, seed: Seed) -> Path:
    (folder / "seed").mkdir(parents=True)
    return seed.write(folder / "seed", seed.data)


#: seconds a folder of a few small logs may take to be read or scanned (a loop guard: a FIFO opened would
#: wait for ever, and every folder holding one would take it, so the test stops at the first)
FOLDER_HANG = 30


def check_scan(folder: Path) -> str | None:
    """What went wrong when ``serve`` looked for runs in ``folder`` (a traceback), or None."""
    from rlvitals.server.discover import Discovery

    try:
        guarded(lambda: Discovery(None).scan(folder.resolve()), FOLDER_HANG)
    except Exception:  # noqa: BLE001 - what the fuzzer is here to find
        return traceback.format_exc(limit=-6)
    return None


def test_folders_holding_odd_entries_read_or_fail_clearly(seeds: dict[str, Seed], tmp_path: Path) -> None:
    """Folders of runs holding, around real logs, FIFOs and links to devices under logs' names, links to
    nothing, to themselves or in loops, empty files, folders named like logs, names that are not UTF-8: read
    (and some diagnosed) they give runs or a clear error, and ``serve`` lists them, within the deadline."""
    logs = [seeds[r] for r in ("verl-jsonl", "trl-console", "jsonl", "trl-state", "verl-console")]
    rng = random.Random("odd-folders")
    for i in range(BUDGET // 2):
        folder = tmp_path / f"case{i}"
        odd_folder(folder, logs, rng)
        problem = check_one(folder, None, i % 6 == 0, FOLDER_HANG) or check_scan(folder)
        listing = sorted(os.fsencode(os.path.relpath(os.path.join(at, n), folder))
                         for at, dirs, files in os.walk(folder) for n in dirs + files)
        assert problem is None, f"folder {i} ({listing}) crashed a reader:\n{problem}"


@pytest.mark.parametrize("reader", ["verl-dump", "trl-completions"])
def test_mutated_rollout_dumps_read_or_fail_clearly(reader: str, tmp_path: Path) -> None:
    seed = {s.reader: s for s in rollout_seeds(tmp_path / "seeds")}[reader]
    assert check_rollouts(_written(tmp_path, seed)) is None
    crashes = _fuzz(seed, tmp_path, check_rollouts)
    assert not crashes, f"{len(crashes)} of {BUDGET} inputs crashed the {reader} reader; the first:\n{crashes[0]}"


@pytest.mark.parametrize("path", sorted(p for p in REGRESSIONS.iterdir() if p.is_file()), ids=lambda p: p.name)
def test_every_regression_input_reads_or_fails_clearly(path: Path, tmp_path: Path) -> None:
    """Each input that once crashed a reader, as it was found."""
    reader, _, rest = path.name.partition("__")  # <reader>__<hash>__<name>, or a name of its own
    name = rest.partition("__")[2] or path.name
    target = tmp_path / name
    target.write_bytes(path.read_bytes())
    problem = check_rollouts(target) if reader in ("verl-dump", "trl-completions") else check_one(target, None, True)
    assert problem is None, problem

"""Every reader and rollout reader fuzzed: structure-aware mutations of a seed per reader
(:mod:`.fuzzing`), a fixed number of inputs each, the same inputs on every machine.

An input passes when reading it gives runs or a clear ``RlvitalsError``, and diagnosing each run
it gave raises nothing. ``RLVITALS_FUZZ_INPUTS`` sets the inputs per reader (the suite's smoke run:
120); ``RLVITALS_FUZZ_SAVE=1`` copies a crashing input into ``tests/ingest/regressions/``, where
:func:`test_every_regression_input_reads_or_fails_clearly` keeps it from coming back.

Seeds are real files cut short (veRL, TRL and the other consoles, the Unsloth CSV, a notebook, a
TensorBoard event file and a W&B ``.wandb`` file from the corpus) or written by the real writers
(polars for Parquet, MLflow for its SQLite store, rlvitals' own dump writers for rollouts).
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rlvitals import diagnose, load
from rlvitals.errors import RlvitalsError
from rlvitals.rollout import analyze, read_rollouts

from .fuzzing import READERS, REGRESSIONS, Seed, build_seeds, inputs, rollout_seeds

BUDGET = int(os.environ.get("RLVITALS_FUZZ_INPUTS", "120"))
HANG = 120  # seconds one small input may take before it counts as a hang (not a speed limit: a loop guard)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Seed]:
    return build_seeds(tmp_path_factory.mktemp("seeds"))


class Hang(Exception):
    pass


def _guarded(fn: Callable[[], Any]) -> Any:
    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {HANG} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def check_one(path: Path, fmt: str | None, deep: bool) -> str | None:
    """What went wrong reading ``path`` (a traceback), or None: runs, or an RlvitalsError."""
    try:
        runs = _guarded(lambda: load(path, fmt))
        if deep:
            for run in runs:
                _guarded(lambda run=run: diagnose(run))
    except RlvitalsError:
        return None
    except Exception:  # noqa: BLE001 - what the fuzzer is here to find
        return traceback.format_exc(limit=-6)
    return None


def check_rollouts(path: Path) -> str | None:
    try:
        rs = _guarded(lambda: read_rollouts(path))
        _guarded(lambda: analyze(rs.table))
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
    crashes: list[str] = []
    for i, data in inputs(seed, BUDGET):
        case = folder / f"case{i}"
        case.mkdir()
        path = case / seed.name
        path.write_bytes(data)
        problem = check(path)
        if problem is not None:
            saved = _save(seed.reader, seed.name, data)
            crashes.append(f"input {i} ({len(data)} bytes{f', saved as {saved.name}' if saved else ''}):\n{problem}")
    return crashes


@pytest.mark.parametrize("reader", READERS)
def test_mutated_inputs_read_or_fail_clearly(reader: str, seeds: dict[str, Seed], tmp_path: Path) -> None:
    seed = seeds[reader]
    assert check_one(_written(tmp_path, seed), None, True) is None  # the seed itself reads
    deep = iter(range(10**9))
    crashes = _fuzz(seed, tmp_path, lambda p: check_one(p, reader if next(deep) % 3 == 0 else None,
                                                         next(deep) % 8 == 0))
    assert not crashes, f"{len(crashes)} of {BUDGET} inputs crashed the {reader} reader; the first:\n{crashes[0]}"


def _written(folder: Path, seed: Seed) -> Path:
    path = folder / "seed" / seed.name
    path.parent.mkdir()
    path.write_bytes(seed.data)
    return path


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

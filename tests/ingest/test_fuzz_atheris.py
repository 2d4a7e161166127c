"""Coverage-guided fuzzing of every reader with atheris (``atheris_target.py``): libFuzzer grows a
corpus from each reader's seed (the same seeds as the mutation fuzzer), keeping the inputs that
reach new code, for a fixed number of runs (``RLVITALS_ATHERIS_RUNS``, the suite's smoke run: 300
per reader) with a fixed seed, so the smoke run is the same on every machine.

A crash (any exception but an ``RlvitalsError``) or a hang (one input over 60 s: a loop guard, not a
speed limit) fails the test with libFuzzer's report; the input it saved is copied beside the
regression inputs when ``RLVITALS_FUZZ_SAVE=1``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .fuzzing import READERS, REGRESSIONS, Seed, build_seeds, rollout_seeds, tfrecords, wandb_records

pytest.importorskip("atheris", reason="atheris has wheels up to Python 3.11")

TARGET = Path(__file__).with_name("atheris_target.py")
RUNS = int(os.environ.get("RLVITALS_ATHERIS_RUNS", "300"))
SEPARATOR = b"\n\x00\xffRECORD\xff\x00\n"  # as atheris_target.SEPARATOR (not imported: it imports atheris)


def _corpus(seed: Seed, folder: Path) -> Path:
    corpus = folder / "corpus"
    corpus.mkdir()
    if seed.kind == "tfrecord":
        data = SEPARATOR.join(tfrecords(seed.data))
    elif seed.kind == "wandb":
        data = SEPARATOR.join(wandb_records(seed.data))
    else:
        data = seed.data
    (corpus / "seed").write_bytes(data)
    return corpus


def _fuzz(seed: Seed, folder: Path) -> None:
    corpus = _corpus(seed, folder)
    crashes = folder / "crashes"
    crashes.mkdir()
    args = [sys.executable, str(TARGET), seed.reader, seed.name, seed.kind, f"-runs={RUNS}", "-seed=1",
            "-timeout=60", "-rss_limit_mb=4096", f"-max_len={max(4096, 2 * len(seed.data))}",
            f"-artifact_prefix={crashes}/", str(corpus)]
    done = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=1800)
    found = sorted(crashes.iterdir())
    if found and os.environ.get("RLVITALS_FUZZ_SAVE") == "1":
        for crash in found:
            shutil.copyfile(crash, REGRESSIONS / f"{seed.reader}__atheris-{crash.name[-10:]}__{seed.name}")
    assert done.returncode == 0 and not found, (
        f"atheris found a crash in the {seed.reader} reader (exit {done.returncode}); its report:\n"
        + done.stderr[-6000:])


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Seed]:
    return build_seeds(tmp_path_factory.mktemp("seeds"))


@pytest.mark.slow
@pytest.mark.parametrize("reader", READERS)
def test_coverage_guided_fuzzing_finds_no_crash(reader: str, seeds: dict[str, Seed], tmp_path: Path) -> None:
    _fuzz(seeds[reader], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["verl-dump", "trl-completions"])
def test_coverage_guided_fuzzing_of_rollout_dumps_finds_no_crash(reader: str, tmp_path: Path) -> None:
    seed = {s.reader: s for s in rollout_seeds(tmp_path / "seeds")}[reader]
    _fuzz(seed, tmp_path)

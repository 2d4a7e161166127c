"""Coverage-guided fuzzing of every reader with atheris (``atheris_target.py``, one process for all of
them): libFuzzer grows a corpus from each reader's seed (the same seeds as the mutation fuzzer),
keeping the inputs that reach new code, for a fixed number of runs (``RLVITALS_ATHERIS_RUNS`` per
reader, the suite's smoke run: 40) with a fixed seed, so the smoke run is the same on every machine.

A crash (any exception but an ``RlvitalsError``) or a hang (one input over 60 s: a loop guard, not a
speed limit) fails the test with libFuzzer's report; the input it saved is copied beside the
regression inputs when ``RLVITALS_FUZZ_SAVE=1`` (its first byte picks the reader).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .fuzzing import (
    READERS,
    REGRESSIONS,
    Seed,
    build_seeds,
    frame_tfrecords,
    frame_wandb,
    rollout_seeds,
    tfrecords,
    wandb_records,
)

pytest.importorskip("atheris", reason="atheris has wheels up to Python 3.11")

TARGET = Path(__file__).with_name("atheris_target.py")
RUNS = int(os.environ.get("RLVITALS_ATHERIS_RUNS", "40"))  # per reader
SEPARATOR = b"\n\x00\xffRECORD\xff\x00\n"  # as atheris_target.SEPARATOR (not imported: it imports atheris)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[Seed]:
    tmp = tmp_path_factory.mktemp("seeds")
    return [*build_seeds(tmp).values(), *rollout_seeds(tmp / "rollouts")]


def _payload(seed: Seed) -> bytes:
    if seed.kind == "tfrecord":
        return SEPARATOR.join(tfrecords(seed.data))
    if seed.kind in ("wandb", "swanlab"):
        return SEPARATOR.join(wandb_records(seed.data))
    return seed.data


def _target(seed: Seed, folders: Path) -> list[str]:
    """The manifest's entry of ``seed``: a run folder's other files are written once, into a folder of their own."""
    for name, content in seed.beside:
        (folders / seed.reader / name).parent.mkdir(parents=True, exist_ok=True)
        (folders / seed.reader / name).write_bytes(content)
    return [seed.reader, seed.name, seed.kind, str(folders / seed.reader) if seed.beside else "", seed.root or ""]


@pytest.mark.process
@pytest.mark.slow
def test_coverage_guided_fuzzing_of_every_reader_finds_no_crash(seeds: list[Seed], tmp_path: Path) -> None:
    assert {s.reader for s in seeds} == {*READERS, "verl-dump", "trl-completions"}
    manifest = tmp_path / "targets.json"
    manifest.write_text(json.dumps([_target(s, tmp_path / "folders") for s in seeds]))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, seed in enumerate(seeds):
        (corpus / seed.reader).write_bytes(bytes([i]) + _payload(seed))
    crashes = tmp_path / "crashes"
    crashes.mkdir()
    args = [sys.executable, str(TARGET), str(manifest), f"-runs={RUNS * len(seeds)}", "-seed=1", "-timeout=60",
            "-rss_limit_mb=4096", f"-max_len={max(4096, 2 * max(len(s.data) for s in seeds))}",
            f"-artifact_prefix={crashes}/", str(corpus)]
    done = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=3600)
    found = sorted(crashes.iterdir())
    if found and os.environ.get("RLVITALS_FUZZ_SAVE") == "1":
        for crash in found:  # kept as the file the reader was given (the first byte picked the reader)
            data = crash.read_bytes() or b"\0"
            seed = seeds[data[0] % len(seeds)]
            body = data[1:]
            if seed.kind == "tfrecord":
                body = frame_tfrecords(body.split(SEPARATOR))
            elif seed.kind in ("wandb", "swanlab"):
                header = b":W&B\xe1\xbe\x00" if seed.kind == "wandb" else b":SWL\xd6\xe1\x02"
                body = frame_wandb(header, body.split(SEPARATOR))
            # the file alone (a run folder's file is named by its own name: the replay reads it by itself)
            (REGRESSIONS / f"{seed.reader}__atheris-{crash.name[-10:]}__{Path(seed.name).name}").write_bytes(body)
    assert done.returncode == 0 and not found, (
        f"atheris found a crash (exit {done.returncode}); its report:\n" + done.stderr[-6000:])

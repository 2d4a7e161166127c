"""Folders of runs holding odd entries, for the fuzzer (:mod:`.fuzzing`): around copies of real logs, what
no reader expects to meet in a folder — FIFOs and links to devices under logs' names, links to nothing, to
the folder itself or in a loop, empty files, folders named like logs, names that are not UTF-8."""

from __future__ import annotations

import os
import random
from pathlib import Path

from .fuzzing import Seed, mutate

#: names a folder's entries are given: a log's, a tracker's, none that is UTF-8, a newline, a leading dash, long
ODD_NAMES = [b"train.log", b"metrics.jsonl", b"run\xff.jsonl", b"\xe4\xb8\xad\xff.log", b"line\nbreak.jsonl",
             b"-rf.log", b" .log", b"x" * 250 + b".log", b"events.out.tfevents.1.host", b"run-odd.wandb",
             b"trainer_state.json", b"mlflow.db", b"offline-odd.zip", b"output.log", b"1.jsonl", b"wandb",
             b"mlruns", b"\xff\xfe"]


def odd_folder(folder: Path, logs: list[Seed], rng: random.Random) -> None:
    """A folder of runs holding, around copies of real logs (``logs``' seeds), entries no reader expects: a
    FIFO or a link to a device under a log's name, links to nothing, to the folder itself or in a loop, empty
    files, a folder named like a log, names that are no UTF-8; a level of sub-folders too."""
    folder.mkdir()
    subs = [folder, folder, folder / os.fsdecode(rng.choice(ODD_NAMES)), folder / "exp1"]
    for _ in range(rng.randint(2, 8)):
        where = rng.choice(subs)
        if os.path.lexists(where) and not where.is_dir():
            continue
        where.mkdir(exist_ok=True)
        path = where / os.fsdecode(rng.choice(ODD_NAMES))
        if os.path.lexists(path):
            continue
        op, log = rng.randrange(10), rng.choice(logs)
        if op <= 1:
            path.write_bytes(log.data if op == 0 else mutate(log, rng))
        elif op == 2:
            path.write_bytes(b"")
        elif op == 3:
            os.mkfifo(path)
        elif op == 4:
            path.symlink_to(rng.choice(["/dev/zero", "/dev/urandom", "/dev/null"]))
        elif op == 5:
            path.symlink_to(rng.choice(["nowhere", "../nowhere", "/nonexistent/run.log"]))
        elif op == 6:
            path.symlink_to(path.name + "2")
            path.with_name(path.name + "2").symlink_to(path.name)
        elif op == 7:
            path.symlink_to(rng.choice([".", "..", str(folder)]))
        else:  # a folder named like a log: empty, or holding one
            path.mkdir()
            if op == 9:
                (path / log.name).write_bytes(log.data)

"""Special files planted inside real stores, and a load of the store in a child process with a deadline: a FIFO
waits for a writer forever once opened and ``/dev/zero`` never ends, so a reader that opens one would hang the
suite; in a child, that is a failed test instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: what each planted name is: a FIFO, or a link to a device that never ends
DEVICES = {"zero": "/dev/zero", "urandom": "/dev/urandom"}
#: seconds a child may take to load a small store (a loop guard, not a speed limit)
DEADLINE = 120

_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))  # a reader copying /dev/zero fails, not the disk
import rlvitals
from rlvitals.errors import RlvitalsError
try:
    runs = rlvitals.load(sys.argv[1])
except RlvitalsError as exc:
    print(json.dumps({"error": str(exc)}))
else:
    print(json.dumps({"runs": [{"path": r.path, "steps": len(r.steps), "skipped": r.skipped.count,
                                "reasons": [str(x) for x in r.skipped.reasons], "notes": [str(n) for n in r.notes],
                                "config": r.config} for r in runs]}, default=str))
"""


def plant(path: Path, kind: str) -> Path:
    """A FIFO (``kind`` ``fifo``) or a link to ``/dev/zero`` or ``/dev/urandom`` at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(DEVICES[kind])
    return path


def in_child(code: str, *args: str) -> str:
    """What ``python -c code args…`` printed; a child that does not end within :data:`DEADLINE` fails the test
    (it hung on a special file)."""
    try:
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{args} did not end within {DEADLINE} s: a reader opened a FIFO or a device") from None
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def load_in_child(path: Path) -> dict[str, Any]:
    """``rlvitals.load(path)`` in a child process (:func:`in_child`): its runs (path, steps, skips, notes,
    config) or its clear error."""
    answer: dict[str, Any] = json.loads(in_child(_CHILD, str(path)))
    return answer

"""A one-shot command keeps the memory it frees: the next array of the same size faults no page in."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlvitals.cli import main
from rlvitals.ingest.columnar import SPLIT_BYTES
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

#: four arrays of 1 MiB made and dropped together, 40 times: the page faults of the whole loop (glibc's moving
#: threshold takes them from the heap after the first, and trims the heap's top when they are dropped)
_LOOP = """
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from rlvitals.cli._memory import keep_freed_memory
    assert keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    a = [np.ones(1 << 17) for _ in range(4)]
    del a
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", _LOOP, mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.process
@pytest.mark.skipif(not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"), reason="glibc's mallopt")
def test_freed_memory_is_kept_for_the_next_array() -> None:
    # every round faults its 4 MiB in again (1,024 pages); kept, only the first round does
    plain, kept = _faults("plain"), _faults("keep")
    assert plain > 40 * 1024 * 0.9
    assert kept < 3 * 1024


@pytest.mark.process
def test_a_one_shot_command_keeps_freed_memory_and_says_the_same(tmp_path: Path) -> None:
    # the setting changes no output: a log large enough to be read by two processes (the worker inherits it) is
    # diagnosed the same through run() as through main()
    path = tmp_path / "metrics.jsonl"
    with path.open("wb") as fh:
        for line in jsonl_lines(Scenario(steps=12_000, val_every=50)):
            fh.write(line + b"\n")
    assert path.stat().st_size > SPLIT_BYTES
    log = str(path)
    done = subprocess.run([sys.executable, "-m", "rlvitals", "diagnose", log, "--json"], capture_output=True,
                          text=True, check=False)
    out = io.StringIO()
    code = main(["diagnose", log, "--json"], out=out, err=io.StringIO())
    assert (done.returncode, done.stdout) == (code, out.getvalue())

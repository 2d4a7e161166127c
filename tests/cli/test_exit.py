"""The console entry point after a one-shot command ends the process at once, its output whole: the JSON
read through a pipe parses, the exit code is the command's, and nothing registered to run at exit runs;
with Ray loaded, or after a command that is not one-shot, Python's exit runs as usual."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from rlvitals.cli import ONE_SHOT, main
from rlvitals.cli._common import EXIT_FINDINGS, EXIT_OK

WARN_LOG = "trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv"  # its verdict is warn

MARKED = ("import atexit, sys\n"
          "atexit.register(lambda: sys.stderr.write('EXIT-HANDLERS-RAN\\n'))\n"
          "{before}\n"
          "from rlvitals.cli import run\n"
          "sys.argv = ['rlvitals', *sys.argv[1:]]\n"
          "run()\n")


def _run(args: list[str], before: str = "") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", MARKED.format(before=before), *args], capture_output=True,
                          timeout=300, check=False)


@pytest.mark.process
def test_a_one_shot_command_ends_at_once_with_all_its_output(real: Path) -> None:
    assert "diagnose" in ONE_SHOT and "watch" not in ONE_SHOT and "export" not in ONE_SHOT
    done = _run(["diagnose", str(real / WARN_LOG), "--json", "--fail-on", "warn"])
    assert done.returncode == EXIT_FINDINGS, done.stderr
    assert orjson.loads(done.stdout)["runs"][0]["verdict"] == "warn"
    assert b"EXIT-HANDLERS-RAN" not in done.stderr
    here = io.StringIO()
    assert main(["diagnose", str(real / WARN_LOG), "--json"], out=here, err=io.StringIO()) == EXIT_OK
    assert done.stdout.decode() == here.getvalue()  # every byte the command wrote, through the pipe


@pytest.mark.process
def test_with_ray_loaded_or_without_a_command_python_exits_as_usual(real: Path) -> None:
    done = _run(["diagnose", str(real / WARN_LOG), "--json"], before="import types; sys.modules['ray'] = "
                "types.ModuleType('ray')")
    assert done.returncode == EXIT_OK and orjson.loads(done.stdout)["runs"]
    assert b"EXIT-HANDLERS-RAN" in done.stderr
    done = _run(["--version"])
    assert done.returncode == 0 and b"EXIT-HANDLERS-RAN" in done.stderr

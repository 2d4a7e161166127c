"""``--alert jsonl:TARGET`` when the target is not a regular file. Into a pipe (``jsonl:/dev/stdout`` under
``| jq``) the sink read its target back to find redelivered alerts, failed, and dropped every alert while the
watcher exited 0; on a device it read without end (21 GB, then the OOM killer). A pipe or a terminal is now
streamed to and never read; a target that cannot be written is refused at start, exit 2."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from rlvitals.cli import main
from rlvitals.synthetic.simulate import Scenario, jsonl_lines


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(jsonl_lines(Scenario(steps=120, collapse_at=80))) + b"\n")
    return path


def _watch(log: Path, target: str, tmp_path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["watch", "--once", "--state", str(tmp_path / "s.sqlite"), "--alert", f"jsonl:{target}", str(log)],
                out, err)
    return code, out.getvalue(), err.getvalue()


def _alerts(text: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.mark.process
def test_into_a_pipe_every_alert_is_streamed(log: Path, tmp_path: Path) -> None:
    into_file, state = tmp_path / "alerts.jsonl", tmp_path / "to-file"
    state.mkdir()
    assert _watch(log, str(into_file), state)[0] == 0
    expected = [(a["check"], a["status"], a["step"]) for a in _alerts(into_file.read_text())]
    assert expected
    done = subprocess.run([sys.executable, "-m", "rlvitals", "watch", "--once", "--state", str(tmp_path / "p.sqlite"),
                           "--alert", "jsonl:/dev/stdout", str(log)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "could not" not in done.stderr, done.stderr
    assert [(a["check"], a["status"], a["step"]) for a in _alerts(done.stdout)] == expected


def test_a_fifo_with_a_reader_gets_each_alert_and_one_without_is_refused(log: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "alerts.fifo"
    os.mkfifo(fifo)
    code, _, err = _watch(log, str(fifo), tmp_path)
    assert (code, err) == (2, f"rlvitals: --alert jsonl:{fifo}: cannot be written (No such device or address); "
                              "a pipe needs a process reading it\n")
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a process reading the pipe
    try:
        code, _, err = _watch(log, str(fifo), tmp_path)
        got = os.read(reader, 1 << 16)  # the pipe's buffer holds what was written; the write end is closed
    finally:
        os.close(reader)
    assert code == 0 and err == "", err
    assert _alerts(got.decode()) and got.endswith(b"\n")


@pytest.mark.process
def test_a_device_is_written_to_not_read(log: Path, tmp_path: Path) -> None:
    """Read back, /dev/zero never ends: in a process of its own, held to 2 GB and a minute, so that a
    regression fails here instead of taking the machine's memory."""
    import resource

    def held() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run([sys.executable, "-m", "rlvitals", "watch", "--once", "--state", str(tmp_path / "s.sqlite"),
                           "--alert", "jsonl:/dev/zero", str(log)], capture_output=True, text=True, timeout=60,
                          preexec_fn=held)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_folder_is_refused_at_start(log: Path, tmp_path: Path, lang: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["watch", "--once", "--lang", lang, "--state", str(tmp_path / "s.sqlite"), "--alert",
                 f"jsonl:{tmp_path}", str(log)], out, err)
    said = {"en": f"rlvitals: --alert jsonl:{tmp_path}: is a folder; give a file's path\n",
            "zh": f"rlvitals：--alert jsonl:{tmp_path}：是一个文件夹；请给出文件的路径\n"}[lang]
    assert (code, err.getvalue()) == (2, said)

"""Progress on long work — reading a log, analysing rollouts, ``sample``, ``report`` — on a terminal only:
never in a pipe or with --json. The terminal is a real pty (the command runs as a process whose stderr is
the pty), so what is checked is what a person's terminal receives."""

from __future__ import annotations

import fcntl
import importlib
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from rlvitals.cli import main
from rlvitals.cli.progress import Throttle, working
from rlvitals.synthetic.demo import DemoFiles, run_demo
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

load_module = importlib.import_module("rlvitals.run.load")  # the module; rlvitals.run.load is also its function
STEPS = 6  # the demo's steps: a veRL rollout_data_dir of 6 step files


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(argv: list[str], terminal: bool) -> tuple[int, bytes, bytes]:
    """``rlvitals argv`` as a process: stdout a pipe, stderr a real pty 120 columns wide (``terminal``) or a
    pipe; the exit code and the bytes of each."""
    env = {**os.environ, "TERM": "xterm-256color"}
    command = [sys.executable, "-m", "rlvitals", *argv]
    if not terminal:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=300)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:  # read as it comes: a full pty would block the command
        while True:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: the command closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join()
    os.close(master)
    return proc.returncode, out, b"".join(chunks)


def _frames(raw: bytes) -> list[str]:
    """What the terminal showed, one redraw a line: control sequences and the bar's glyphs left out."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw.decode("utf-8"))
    text = re.sub("[━╸╺]+", " ", text)
    return [" ".join(line.split()) for line in re.split(r"[\r\n]", text) if line.strip()]


def _gone(raw: bytes) -> bool:
    """Whether the display erased itself: after rich's last erase-line, nothing but control codes."""
    tail = raw[raw.rindex(b"\x1b[2K"):]
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]|[\r\n]", b"", tail) == b""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoFiles:
    """A small real RL run (the demo's learner) with its veRL log and rollout_data/<step>.jsonl dumps."""
    return run_demo(tmp_path_factory.mktemp("demo"), steps=STEPS)


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(load_module, "PROGRESS_EVERY", 50)  # a long log's updates on a short one
    path = tmp_path / "train.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=120))))
    return path


# --- reading a log ---------------------------------------------------------------------------------

def test_a_terminal_sees_how_far_the_reading_got(log: Path) -> None:
    err = _Terminal()
    assert main(["inspect", str(log)], out=io.StringIO(), err=err) == 0
    said = err.getvalue()
    assert "reading train.jsonl: 50 records" in said and "reading train.jsonl: 100 records" in said


@pytest.mark.parametrize("argv, err", [(["inspect"], io.StringIO()), (["inspect", "--json"], _Terminal()),
                                       (["diagnose", "--json"], _Terminal())])
def test_no_progress_in_a_pipe_or_with_json(log: Path, argv: list[str], err: io.StringIO) -> None:
    main([*argv, str(log)], out=io.StringIO(), err=err)
    assert "reading" not in err.getvalue()


def test_load_reports_progress_every_so_many_records(log: Path) -> None:
    seen: list[tuple[str, int]] = []
    load_module.load(log, progress=lambda root, n: seen.append((root.name, n)))
    assert seen == [("train.jsonl", 50), ("train.jsonl", 100)]


# --- the bar and its throttle ----------------------------------------------------------------------

def test_the_bar_is_redrawn_on_a_new_phase_at_its_end_and_else_only_when_time_has_passed() -> None:
    now = [0.0]
    err = _Terminal()
    with working(err, "rollouts in d", clock=lambda: now[0]) as told:
        assert told is not None
        for done in range(51):  # the clock stands still: the first and the last are drawn, none between
            told("reading", done, 50)
        for done in range(5):  # a new phase is drawn at once; then one redraw each 0.1 s of the clock
            told("group", done, 18)
            now[0] += 0.06
    drawn = [f for f in _frames(err.getvalue().encode()) if ": " in f]
    group = "rollouts in d: group metrics (σ_G, pass@k)"
    assert drawn == ["rollouts in d: reading 0/50 files", "rollouts in d: reading 50/50 files",
                     f"{group} 0/18", f"{group} 2/18", f"{group} 4/18",
                     f"{group} 4/18"]  # once more as the display stops


def test_throttle_counts_time_only_within_a_phase() -> None:
    now = [5.0]
    redraw = Throttle(lambda: now[0], interval=1.0)
    assert [redraw("sampling", d, None) for d in range(3)] == [True, False, False]
    now[0] = 6.0
    assert redraw("sampling", 3, None) and not redraw("sampling", 4, None) and redraw("writing", 0, 1)


def test_no_callback_off_a_terminal_or_when_not_wanted() -> None:
    with working(io.StringIO(), "x") as piped, working(_Terminal(), "x", enabled=False) as unwanted:
        assert piped is None and unwanted is None


# --- on a real terminal ----------------------------------------------------------------------------

@pytest.mark.process
def test_rollouts_on_a_terminal_show_the_phases_and_leave_stdout_alone(demo: DemoFiles) -> None:
    code, out, err = _run(["rollouts", str(demo.rollouts)], terminal=True)
    frames = _frames(err)
    assert code == 0
    for shown in (f"rollouts in rollout_data: reading 0/{STEPS} files",
                  f"rollouts in rollout_data: reading {STEPS}/{STEPS} files",
                  "rollouts in rollout_data: group metrics (σ_G, pass@k) 0/24",
                  "rollouts in rollout_data: metrics over the whole table 24/24"):
        assert shown in frames, frames
    assert _gone(err)
    assert out == _run(["rollouts", str(demo.rollouts)], terminal=False)[1]  # the tables, byte for byte


@pytest.mark.process
def test_diagnose_with_rollouts_shows_the_analysis(demo: DemoFiles) -> None:
    code, _, err = _run(["diagnose", str(demo.log), "--rollouts", str(demo.rollouts)], terminal=True)
    assert code == 0 and f"rollouts in rollout_data: reading {STEPS}/{STEPS} files" in _frames(err)
    assert _gone(err)


@pytest.mark.process
def test_report_on_a_terminal_shows_its_build(demo: DemoFiles, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    code, out, err = _run(["report", str(demo.log), "--rollouts", str(demo.rollouts), "-o", str(page)],
                          terminal=True)
    frames = _frames(err)
    assert code == 0 and out.startswith(f"wrote {page}: 1 run(s)".encode()) and page.stat().st_size > 0
    for shown in ("rollouts in rollout_data: reading 0/6 files", "report r.html: diagnosing 0/1 runs",
                  "report r.html: drawing the charts 0/8 sections", "report r.html: drawing the charts 8/8 sections",
                  "report r.html: writing the page"):
        assert shown in frames, frames
    steps = [f for f in frames if f.startswith("report r.html: choosing the rollouts to show")]
    assert steps[0].endswith(" 0/6 steps") and steps[-1].endswith(" 6/6 steps")  # every step of 6 is browsed
    assert _gone(err)


@pytest.mark.process
@pytest.mark.parametrize("argv", [["rollouts", "--json", "{dir}"],
                                  ["diagnose", "--json", "{log}", "--rollouts", "{dir}"]])
def test_nothing_at_all_on_a_terminal_with_json(demo: DemoFiles, argv: list[str]) -> None:
    code, out, err = _run([a.format(dir=demo.rollouts, log=demo.log) for a in argv], terminal=True)
    assert code == 0 and out.startswith(b"{") and err == b""


@pytest.mark.process
def test_nothing_at_all_in_a_pipe(demo: DemoFiles, tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    code, _, err = _run(["rollouts", str(demo.rollouts), str(missing)], terminal=False)
    assert code == 2
    assert err == f"rlvitals: {missing}: no such file or folder; give the path of a rollout dump\n".encode()
    code, _, err = _run(["report", str(demo.log), "--rollouts", str(demo.rollouts), "-o", str(tmp_path / "r.html")],
                        terminal=False)
    assert code == 0 and err == b""


@pytest.mark.process
def test_an_error_is_said_after_the_bar_is_gone(demo: DemoFiles, tmp_path: Path) -> None:
    page = tmp_path / "no" / "r.html"
    code, _, err = _run(["report", str(demo.log), "-o", str(page)], terminal=True)
    said = f"rlvitals: report: cannot write {str(page)!r}: the folder {str(page.parent)!r} does not exist; create " \
           "it or choose another -o path"
    assert code == 2 and _frames(err)[-1] == said and "report r.html: diagnosing 0/1 runs" in _frames(err)
    assert not _gone(err)  # the message stays: it was written after the display erased itself


@pytest.mark.process
@pytest.mark.model
def test_sample_on_a_terminal_shows_the_groups_it_samples(tmp_path: Path) -> None:
    from rlvitals.synthetic.sampler import INSTALL, missing_packages

    if missing_packages():
        from optional import unavailable

        unavailable(f"the small model needs {missing_packages()}; install with: {INSTALL}")
    code, out, err = _run(["sample", str(tmp_path / "out"), "--steps", "2", "--prompts", "2", "--samples", "2",
                           "--max-new-tokens", "4", "--format", "verl"], terminal=True)
    frames = _frames(err)
    assert code == 0 and b"sampled 8 rollouts" in out
    for shown in ("sample out: loading the model", "sample out: sampling 0/4 prompt groups",
                  "sample out: sampling 4/4 prompt groups"):
        assert shown in frames, frames
    assert _gone(err)

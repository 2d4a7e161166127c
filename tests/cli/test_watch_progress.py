"""``watch --once --rollouts`` shows how far the reading of the rollout folder got, on a terminal only, in one
line redrawn in place and wiped before the watch's own output."""

from __future__ import annotations

import io
from pathlib import Path

from rlvitals.cli import main
from rlvitals.cli.progress import status_line
from rlvitals.rollout import write_verl_dump
from rlvitals.synthetic.simulate import write_example


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_status_line_is_redrawn_in_place_and_wiped_at_the_end() -> None:
    now = [0.0]
    err = Terminal()
    told = status_line(err, "rollouts in r", clock=lambda: now[0])
    assert told is not None and status_line(io.StringIO(), "x") is None  # not a terminal: nothing
    told("reading", 0, 3)
    told("reading", 1, 3)  # within the interval: not redrawn
    now[0] = 1.0
    told("reading", 2, 3)
    told("reading", 3, 3)
    assert err.getvalue() == ("\r\x1b[2Krollouts in r: reading 0/3 files\r\x1b[2Krollouts in r: reading 2/3 files"
                              "\r\x1b[2K")


def test_watch_once_shows_the_reading_of_its_rollouts(tmp_path: Path) -> None:
    log = write_example(tmp_path)["jsonl"]
    folder = tmp_path / "rollouts"
    for step in (1, 2, 3):
        write_verl_dump([{"prompt": "1 + 1?", "response": "2", "score": float(i % 2), "target": "2"}
                         for i in range(4)], folder, step)
    out, err = io.StringIO(), Terminal()
    code = main(["watch", str(log), "--once", "--rollouts", str(folder), "--state", str(tmp_path / "s.json")],
                out, err)
    assert code in (0, 1), err.getvalue()
    assert "\r\x1b[2Krollouts in rollouts: reading 0/3 files" in err.getvalue()
    assert err.getvalue().count("\r\x1b[2K") >= 2 and "\x1b" not in out.getvalue()
    piped = io.StringIO()
    main(["watch", str(log), "--once", "--rollouts", str(folder), "--state", str(tmp_path / "t.json")],
         io.StringIO(), piped)
    assert "reading" not in piped.getvalue() and "\x1b" not in piped.getvalue()

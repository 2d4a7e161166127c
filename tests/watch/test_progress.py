"""``watch --rollouts`` tells a progress callback (:data:`rlvitals.rollout.Progress`, the CLI's bar) how far
the reading of a rollout folder got: the first poll of a large folder reads every step file."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rlvitals.rollout.writers import write_verl_dump
from rlvitals.watch.rollouts import RolloutFollow
from rlvitals.watch.sinks import JsonlSink
from rlvitals.watch.watcher import WatchOptions, open_watcher
from watch.test_rollouts import LINES, dump


def test_the_watcher_tells_its_rollout_progress_how_far_reading_got(tmp_path: Path) -> None:
    log = tmp_path / "gsm8k.jsonl"
    log.write_bytes(b"".join(LINES[:12]))
    dumps = tmp_path / "rollout_data"
    for step in range(1, 13):
        write_verl_dump(dump(step), dumps, step)
    heard: list[tuple[str, int, int | None]] = []
    out = io.StringIO()
    w = open_watcher([log], [JsonlSink(tmp_path / "alerts.jsonl", name="jsonl")], tmp_path / "w.sqlite",
                     WatchOptions(interval=0.01, min_gap=0.0), out=out, err=out, sleep=lambda s: None,
                     rollouts=dumps, rollout_progress=lambda *a: heard.append(a))
    w.cycle()
    assert heard == [("reading", done, 12) for done in range(13)]
    assert 12 in w.rollouts.frames if w.rollouts is not None else False  # the files were really read
    heard.clear()
    w.cycle()
    assert heard == []  # nothing new: nothing read, nothing told
    write_verl_dump(dump(13), dumps, 13)
    w.cycle()
    assert heard == [("reading", 0, 1), ("reading", 1, 1)]


def test_a_table_read_whole_tells_the_readers_phases(tmp_path: Path) -> None:
    table = tmp_path / "rollouts.jsonl"
    table.write_text("".join(json.dumps(dict(r, step=s)) + "\n" for s in (1, 2) for r in dump(s)), encoding="utf-8")
    heard: list[tuple[str, int, int | None]] = []
    follow = RolloutFollow(table, progress=lambda *a: heard.append(a))
    assert follow.poll() and sorted(follow.frames) == [1, 2]
    assert heard and {phase for phase, _, _ in heard} >= {"reading"}
    assert heard[-1][0] == "reading" and heard[-1][1] == heard[-1][2]

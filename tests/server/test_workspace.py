"""What ``rlvitals serve`` lists for a console log holding several trainings: a run for each, read whole or
followed as it grows. The logs are constructed from real corpus logs the way a second launch makes them (the
bytes of one appended to another's); no public log holding two trainings was found."""

from __future__ import annotations

from pathlib import Path

from corpus import corpus_input
from ingest.serving import served

from rlvitals.server import ServeState, Workspace

VERL_A = "verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge"  # steps 0 (validation), 1..69
VERL_B = "verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse"  # steps 0 (validation), 1..59


def test_a_served_folder_lists_each_training_of_a_log(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    log = folder / "train.log"
    log.write_bytes(corpus_input(VERL_A).read_bytes() + corpus_input(VERL_B).read_bytes())
    runs, _ = served(folder, tmp_path, sort="name")
    assert [(r["path"], r["last_step"]) for r in runs] == [(str(log), 69), (f"{log}#2", 59)]
    assert [r["label"] for r in runs] == ["train.log", "train.log#2"]


def test_a_training_appended_to_a_followed_log_is_listed_beside_the_first(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(corpus_input(VERL_A).read_bytes())
    now = [1000.0]

    def clock() -> float:
        now[0] += 60.0
        return now[0]

    ws = Workspace([log], ServeState(tmp_path / "serve.sqlite"), clock=clock)
    try:
        ws.poll_once()
        before = ws.summaries()
        assert [(r["path"], r["last_step"]) for r in before] == [(str(log), 69)]
        with log.open("ab") as fh:  # the relaunch writes into the same log
            fh.write(corpus_input(VERL_B).read_bytes())
        ws.poll_once()
        ws.poll_once()
        after = sorted(ws.summaries(), key=lambda r: r["path"])
        assert [(r["path"], r["last_step"]) for r in after] == [(str(log), 69), (f"{log}#2", 59)]
        assert after[0]["id"] == before[0]["id"]  # the first training keeps its name, and its place in the list
        assert any("the step count starts again" in m for m in ws.notes())
    finally:
        ws.close()

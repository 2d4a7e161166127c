"""`watch --rollouts` follows rlvitals probe's results beside the dumps as they are written (each re-probe
replaces the file), joined as diagnose --rollouts joins them, and alerts on the faithfulness finding."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rlvitals.cli import main
from rlvitals.rollout import PROBES_FILE
from rlvitals.rollout.analysis import analyze
from rlvitals.rollout.writers import write_verl_dump
from rlvitals.run.load import load
from rlvitals.watch.rollouts import RolloutFollow
from watch.test_rollouts import LINES, dump

FALL = (0.8, 0.82, 0.79, 0.8, 0.62, 0.45, 0.4, 0.38)


def _write_probes(folder: Path, values: tuple[float, ...], first: int = 3) -> None:
    """As rlvitals probe writes them: the whole file replaced at once."""
    tmp = folder / f".{PROBES_FILE}.tmp"
    tmp.write_text("".join(json.dumps({"model": "ckpt", "step": first + 3 * i, "rollouts": 4,
                                       "reasoning/faithfulness": v}) + "\n" for i, v in enumerate(values)),
                   encoding="utf-8")
    tmp.replace(folder / PROBES_FILE)


def test_the_follower_reads_the_probe_results_when_they_change(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    for step in range(1, 25):
        write_verl_dump(dump(step), dumps, step)
    follow = RolloutFollow(dumps)
    assert follow.poll() and follow.probed is None
    _write_probes(dumps, FALL[:2])
    assert follow.poll() and follow.probed is not None and follow.probed.frame.height == 2
    assert not follow.poll()  # unchanged: not read again
    _write_probes(dumps, FALL)
    assert follow.poll() and "reasoning/faithfulness" in follow.derived_keys()
    log = tmp_path / "gsm8k.jsonl"
    log.write_bytes(b"".join(LINES[:30]))
    run = load(log)[0]
    live, whole = follow.join(run), analyze(dumps).join(run, f"rollouts in {dumps}")
    assert live.frame.equals(whole.frame)
    steps, values = live.series("reasoning/faithfulness")
    assert steps.tolist() == [3 + 3 * i for i in range(8)] and values.tolist() == list(FALL)


def test_a_bad_probe_line_is_told_once(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    write_verl_dump(dump(1), dumps, 1)
    (dumps / PROBES_FILE).write_text('{"step": 1, "reasoning/faithfulness": 0.5}\nnope\n', encoding="utf-8")
    follow = RolloutFollow(dumps)
    assert follow.poll()
    assert len(follow.messages) == 1 and f"{PROBES_FILE}:2: invalid JSON" in follow.messages[0]
    assert not follow.poll() and len(follow.messages) == 1


def test_cli_watch_alerts_on_faithfulness_falling_while_the_reward_rises(tmp_path: Path) -> None:
    log = tmp_path / "gsm8k.jsonl"
    rows = [{"step": s, "critic/score/mean": 0.2 + 0.02 * s, "actor/entropy": 0.5} for s in range(1, 31)]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    dumps = tmp_path / "dumps"
    for step in range(1, 31):
        write_verl_dump(dump(step), dumps, step)
    _write_probes(dumps, FALL)
    out, err = io.StringIO(), io.StringIO()
    main(["watch", str(log), "--rollouts", str(dumps), "--once", "--state", str(tmp_path / "s.sqlite"),
          "--alert", f"jsonl:{tmp_path / 'a.jsonl'}"], out, err)
    alerts = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    found = [a for a in alerts if a.get("check") == "faithfulness"]
    assert found and found[0]["status"] == "warn" and found[0]["onset_step"] == 18, (alerts, err.getvalue())

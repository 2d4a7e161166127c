"""``watch`` on the files the frameworks write, growing while it watches, with no code in the trainer.

veRL: ``trainer.logger=['console','file']`` writes ``{"step", "data"}`` JSONL lines (here the
simulator's, as veRL's FileLogger writes them) and ``trainer.rollout_data_dir`` one
``<step>.jsonl`` per step (written by :func:`rlvitals.rollout.writers.write_verl_dump`, veRL's
dump format). From step 21 every group's rollouts are all correct: only the rollouts show it
(veRL logs no group statistic), so the ``zero_variance_groups`` finding must come from the
followed folder. OpenRLHF: its console lines (``✨ Global step N: {dict repr}``) and a
TensorBoard folder with ``train/<key>`` tags (written by the real tensorboardX writer) carry a
clip-fraction surge from step 40.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import polars as pl
import pytest

from rlvitals.cli import main
from rlvitals.rollout.readers import read_rollouts
from rlvitals.rollout.writers import write_verl_dump
from rlvitals.synthetic.simulate import Scenario, jsonl_lines, simulate
from rlvitals.watch.rollouts import RolloutFollow, step_frame
from rlvitals.watch.sinks import JsonlSink
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions

SC = Scenario(steps=60, collapse_at=None, grad_spike_at=None)
LINES = [line + b"\n" for line in jsonl_lines(SC)]
EASY_FROM = 21


def dump(step: int) -> list[dict[str, object]]:
    """8 prompts × 4 samples; before EASY_FROM half of each group is right, then all are."""
    recs = []
    for g in range(8):
        for s in range(4):
            right = step >= EASY_FROM or s < 2
            recs.append({"prompt": f"Q{g}: {g} + {step % 5} = ?", "response": f"step {s}. The answer is "
                         f"{g + step % 5 if right else 99}.", "score": float(right), "target": str(g + step % 5)})
    return recs


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def watcher(tmp: Path, log: Path, rollouts: Path | None, out: io.StringIO) -> tuple[Watcher, Path]:
    alerts = tmp / ("alerts-r.jsonl" if rollouts else "alerts.jsonl")
    state = WatchState(tmp / ("state-r.sqlite" if rollouts else "state.sqlite"))
    w = Watcher([log], state, [JsonlSink(alerts, name="jsonl")], WatchOptions(interval=0.01, min_gap=0.0),
                view=PlainView(out, out), clock=Clock(), sleep=lambda s: None, rollouts=rollouts)
    return w, alerts


def test_verl_log_and_rollout_dumps_followed_together(tmp_path: Path) -> None:
    log = tmp_path / "verl_examples" / "gsm8k.jsonl"  # FileLogger's default path
    dumps = tmp_path / "rollout_data"
    out, plain = io.StringIO(), io.StringIO()
    with_r, alerts_r = watcher(tmp_path, log, dumps, out)
    without, alerts = watcher(tmp_path, log, None, plain)
    with_r.cycle()
    assert "rollout_data: no such rollout folder yet; waiting" in out.getvalue()
    log.parent.mkdir(parents=True)
    for start in range(0, SC.steps, 10):
        with log.open("ab") as fh:
            fh.writelines(LINES[start:start + 10])
        for step in range(start + 1, start + 11):
            write_verl_dump(dump(step), dumps, step)
        with_r.cycle()
        without.cycle()
    d = with_r.diagnoses[str(log)]
    steps, share = d.run.series("group/zero_std/share")
    assert list(steps) == list(range(1, SC.steps + 1))
    assert list(share) == [0.0] * (EASY_FROM - 1) + [1.0] * (SC.steps - EASY_FROM + 1)
    zero = next(f for f in d.findings if f.check == "zero_variance_groups")
    assert zero.status == "fail" and "too easy" in zero.message["en"]
    sent = [json.loads(line) for line in alerts_r.read_text().splitlines()]
    # live: it warns while the all-correct stretch is short, and escalates once, never repeats
    assert [(a["status"], a["kind"]) for a in sent if a["check"] == "zero_variance_groups"] == [
        ("warn", "new"), ("fail", "escalated")]
    # the same log without its rollouts cannot know it
    plain_zero = next(f for f in without.diagnoses[str(log)].findings if f.check == "zero_variance_groups")
    assert plain_zero.status == "skipped"
    assert "zero_variance_groups" not in alerts.read_text()


def test_a_step_file_caught_mid_write_is_reread(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    full = write_verl_dump(dump(3), dumps, 3).read_bytes()
    path = dumps / "3.jsonl"
    path.write_bytes(full[: len(full) // 2])  # veRL is still writing it
    follow = RolloutFollow(dumps)
    assert follow.poll()
    half = follow.frames[3]
    assert not follow.poll()  # unchanged: not read again
    path.write_bytes(full)
    assert follow.poll()
    want = step_frame(read_rollouts(path).table)
    assert follow.frames[3].equals(want) and not half.equals(want)
    assert want["group/zero_std/share"].to_list() == [0.0]


def test_an_unreadable_step_file_is_reported_once_and_retried(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    bad = dumps / "4.jsonl"
    bad.write_text('{"something": "else"}\n', encoding="utf-8")
    follow = RolloutFollow(dumps)
    assert not follow.poll()
    assert len(follow.messages) == 1 and "4.jsonl: could not read these rollouts" in follow.messages[0]
    bad.write_text('{"something": "else", "x": 1}\n', encoding="utf-8")
    assert not follow.poll() and len(follow.messages) == 1
    write_verl_dump(dump(4), dumps, 4)
    assert follow.poll() and 4 in follow.frames


def test_the_follower_joins_what_diagnose_joins(tmp_path: Path) -> None:
    """One rule for which rollout columns become a Run's series: the follower's per-step rows joined
    onto a run give the same run as ``diagnose --rollouts`` (one analysis of the whole dump), with the
    same settings. Groups of 4 leave pass@8 undefined at every step and maj@k has no answers to vote
    on: neither joins in either way."""
    from rlvitals.rollout.analysis import analyze
    from rlvitals.rollout.options import RolloutSettings
    from rlvitals.run.load import load

    log = tmp_path / "gsm8k.jsonl"
    log.write_bytes(b"".join(LINES[:30]))
    dumps = tmp_path / "dumps"
    for step in range(15, 31):
        write_verl_dump(dump(step), dumps, step)
    settings = RolloutSettings(ks=(1, 4, 8), tool_call_cap=2)
    follow = RolloutFollow(dumps, settings)
    assert follow.poll()
    run = load(log)[0]
    live, whole = follow.join(run), analyze(dumps, settings).join(run, f"rollouts in {dumps}")
    assert live.frame.equals(whole.frame) and live.notes == whole.notes
    assert {"pass@4", "rollout/tool_calls/at_cap"} <= set(live.metrics)
    assert not {"pass@8", "maj@4"} & set(live.metrics)


def test_cli_watch_with_rollouts(tmp_path: Path) -> None:
    log = tmp_path / "gsm8k.jsonl"
    log.write_bytes(b"".join(LINES))
    for step in range(1, SC.steps + 1):
        write_verl_dump(dump(step), tmp_path / "dumps", step)
    out, err = io.StringIO(), io.StringIO()
    code = main(["watch", str(log), "--rollouts", str(tmp_path / "dumps"), "--once", "--exit-on", "fail",
                 "--state", str(tmp_path / "s.sqlite"), "--alert", f"jsonl:{tmp_path / 'a.jsonl'}"], out, err)
    assert code == 1, err.getvalue()
    assert "zero_variance_groups" in (tmp_path / "a.jsonl").read_text()


# --- OpenRLHF: console output and TensorBoard folder ----------------------------------------------

ORL = Scenario(steps=80, collapse_at=40, grad_spike_at=None)
_ORL_KEYS = {"policy_loss": "actor/pg_loss", "actor_lr": "actor/lr", "actor_grad_norm": "actor/grad_norm",
             "ppo_clip_ratio": "actor/pg_clipfrac", "ppo_kl": "actor/ppo_kl", "kl": "actor/kl_loss",
             "reward": "critic/score/mean", "response_length": "response_length/mean"}


def openrlhf_status(i: int) -> dict[str, float]:
    series = simulate(ORL)
    return {k: float(series[v][i]) for k, v in _ORL_KEYS.items()}


def openrlhf_line(step: int, status: dict[str, float]) -> str:
    # logger.info(f"✨ Global step {global_step}: {log_status}") with openrlhf's log format
    return f"INFO 08-13 19:{step % 60:02d}:45 ppo_trainer.py:547] ✨ Global step {step}: {status!r}\n"


@pytest.mark.parametrize("kind", ["console", "tensorboard"])
def test_openrlhf_console_and_tensorboard_followed(tmp_path: Path, kind: str) -> None:
    from tensorboardX import SummaryWriter

    statuses = [openrlhf_status(i) for i in range(ORL.steps)]
    assert all(math.isfinite(v) for s in statuses for v in s.values())
    target = tmp_path / ("train.log" if kind == "console" else "tb")
    out = io.StringIO()
    w, alerts = watcher(tmp_path, target, None, out)
    writer = SummaryWriter(str(target / "run")) if kind == "tensorboard" else None
    for start in range(0, ORL.steps, 20):
        for i in range(start, start + 20):
            if writer is not None:  # TensorboardLogger: add_scalar(f"train/{k}", v, global_step)
                for key, value in statuses[i].items():
                    writer.add_scalar(f"train/{key}", value, i + 1)
                writer.flush()
            else:
                with target.open("a", encoding="utf-8") as fh:
                    fh.write(openrlhf_line(i + 1, statuses[i]))
        w.clock.now += 10  # type: ignore[attr-defined]  # past the whole-file re-read throttle
        w.cycle()
    if writer is not None:
        writer.close()  # training ended; the watcher's next poll sees the closed file
        w.clock.now += 10  # type: ignore[attr-defined]
        w.cycle()
    d = w.diagnoses[next(iter(w.diagnoses))]
    assert d.run.framework == "openrlhf"
    assert list(d.run.train_steps) == list(range(1, ORL.steps + 1))
    found = {f.check: f for f in d.findings}
    assert found["clipfrac_high"].status in ("warn", "fail"), found["clipfrac_high"].message["en"]
    assert 38 <= (found["clipfrac_high"].onset_step or 0) <= 50
    # each problem is announced once; a warning that turns into a failure says so once more (escalated)
    sent = [(a["check"], a["kind"]) for a in map(json.loads, alerts.read_text().splitlines())]
    new = [c for c, kind in sent if kind == "new"]
    assert "clipfrac_high" in new and len(new) == len(set(new)) and len(sent) == len(set(sent))
    assert {kind for _, kind in sent} <= {"new", "escalated"}
    frame = pl.DataFrame(statuses)
    assert d.run.series("actor/pg_clipfrac")[1].tolist() == pytest.approx(frame["ppo_clip_ratio"].to_list(),
                                                                         rel=1e-6)

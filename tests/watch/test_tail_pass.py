"""The tail pass: what the sudden checks on the last steps may raise over a full diagnosis (real runs
from the simulator), and the watcher on a 30,000-step JSONL log that a spike, a KL jump or an entropy
collapse is appended to: alerted by the tail pass at the next cycle, once, never cleared by it."""

from __future__ import annotations

import io
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from runs import make_run

from rlvitals.checks import sudden_checks
from rlvitals.diagnosis import Diagnosis, diagnose
from rlvitals.live import Confirm
from rlvitals.live.alerts import Alert, KeyState, alert_key, finding_key
from rlvitals.run.run import Run
from rlvitals.synthetic.simulate import Scenario, jsonl_lines, simulate
from rlvitals.watch.state import WatchState
from rlvitals.watch.tail_pass import TailPass, merge, raised
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions

#: these tests are about the tail pass: every finding is alerted as soon as it is seen
AT_ONCE = Confirm(looks=1)

SUDDEN = {c.id for c in sudden_checks()}
N = 3000


def _series(n: int = N) -> dict[str, np.ndarray]:
    return simulate(Scenario(steps=n, collapse_at=None, grad_spike_at=None))


def _upto(series: dict[str, np.ndarray], steps: int) -> Run:
    return make_run({k: v[:steps] for k, v in series.items()})


def _kick(s: dict[str, np.ndarray], index: int, factor: float) -> None:
    """A KL spike made the way a too-large update makes one: the per-update KL and the gradient norm of that
    step jump together (a KL spike with nothing else moving is isolated: a note, not an alert)."""
    s["actor/ppo_kl"][index] *= factor
    s["actor/grad_norm"][index] *= 8


def _tail(run: Run, steps: int = 500) -> Diagnosis:
    return diagnose(run.tail(steps), checks=sudden_checks())


def _alerting(d: Diagnosis) -> set[tuple[str, str]]:
    return {(f.check, f.status) for f in d.findings if f.status in ("warn", "fail")}


def test_a_kl_jump_in_the_last_steps_raises_over_a_full_diagnosis_made_before_it() -> None:
    s = _series()
    _kick(s, 2949, 12)
    full, run = diagnose(_upto(s, 2900)), _upto(s, N)
    assert ("kl_jump", "warn") not in _alerting(full)
    (f,) = raised(full, _tail(run), {})
    assert (f.check, f.status, f.onset_step) == ("kl_jump", "warn", 2950)
    assert f.message["en"].endswith("(seen in the last 500 steps, 2501–3000, before the full diagnosis)")
    assert f.message["zh"].endswith("（在最近 500 步（第 2501–3000 步）中发现，完整诊断随后进行）")
    assert f.evidence["tail_window"] == [2501, 3000] and f.evidence["jump_steps"] == [2950]
    assert raised(diagnose(run), _tail(run), {}) == []  # a full diagnosis that holds it already


def test_only_a_worse_status_raises_a_key_the_full_diagnosis_reports() -> None:
    s = _series()
    for step in (2950, 2970):  # two spikes of 30x its level that come back, the gradient with them: a warning
        _kick(s, step - 1, 30)
    s["actor/ppo_kl"][2989:] *= 30  # then 30x for good: a jump that stays fails
    full = diagnose(_upto(s, 2960))
    assert ("kl_jump", "warn") in _alerting(full)
    assert [(f.check, f.status) for f in raised(full, _tail(_upto(s, N)), {})] == [("kl_jump", "fail")]
    assert raised(full, _tail(_upto(s, 2965)), {}) == []  # warn again: nothing new


def test_a_nan_in_another_metric_is_more_of_the_nan_finding_not_a_new_one() -> None:
    s = _series()
    s["actor/pg_loss"][2950] = np.nan
    s = {("actor/pg_loss!nan" if k == "actor/pg_loss" else k): v for k, v in s.items()}
    healthy = diagnose(_upto(s, 2900))
    (new,) = raised(healthy, _tail(_upto(s, N)), {})
    assert (new.check, new.status, new.metrics) == ("nan_inf", "fail", ("actor/pg_loss",))
    s["actor/entropy"][100] = np.inf  # long before the last steps: the full diagnosis names it alone
    s = {("actor/entropy!nan" if k == "actor/entropy" else k): v for k, v in s.items()}
    early = diagnose(_upto(s, 2900))
    assert [f.metrics for f in early.findings if f.check == "nan_inf"] == [("actor/entropy",)]
    assert raised(early, _tail(_upto(s, N)), {}) == []


def test_a_key_a_full_diagnosis_cleared_is_raised_again_only_on_later_evidence() -> None:
    s = _series()
    _kick(s, 2949, 12)
    full, tail = diagnose(_upto(s, 2900)), _tail(_upto(s, N))
    (f,) = raised(full, tail, {})
    key = alert_key(full.path, f.check)

    def cleared(step: int) -> dict[str, KeyState]:
        return {key: KeyState(full.path, f.check, f.metrics, "warn", "ok", False, 0.0, 2950, 5.0, step)}

    assert f.span is not None and f.span[1] == 2950
    assert raised(full, tail, cleared(2950)) == []  # the diagnosis that cleared it had seen step 2950
    assert [g.check for g in raised(full, tail, cleared(2949))] == ["kl_jump"]


def test_a_non_sudden_finding_never_comes_from_the_tail_and_what_was_raised_is_held_until_reset() -> None:
    s = _series()
    s["critic/score/mean"][2950:] -= 0.5  # the reward crashes: reward_collapse, not a sudden check
    s["critic/rewards/mean"][2950:] -= 0.5
    s["actor/grad_norm"][[2975, 2977, 2979]] *= 15  # three within 50 steps (one isolated spike is a note)
    full, run = diagnose(_upto(s, 2900)), _upto(s, N)
    everything = _alerting(diagnose(run.tail(500)))
    assert ("reward_collapse", "fail") in everything and ("reward_collapse", "fail") not in _alerting(full)
    tails = TailPass(500)
    shown = tails.read(run.tail(500), full, {})
    assert _alerting(shown) - _alerting(full) == {("grad_norm_spike", "fail")}
    assert {f.check for f in tails.held[full.path].values()} == {"grad_norm_spike"} <= SUDDEN
    again = tails.read(_upto(s, 2905).tail(500), full, {})  # the spike is not in these steps
    assert ("grad_norm_spike", "fail") in _alerting(again)
    tails.reset(full.path)
    assert tails.read(_upto(s, 2905).tail(500), full, {}).findings == full.findings


def test_merge_replaces_by_key_and_judges_again() -> None:
    s = _series()
    s["actor/grad_norm"][[2975, 2977, 2979]] *= 15
    full = diagnose(_upto(s, 2900))
    spike = raised(full, _tail(_upto(s, N)), {})
    merged = merge(full, {finding_key(full.path, f): f for f in spike})
    assert len(merged.findings) == len(full.findings)
    grad = [f for f in merged.findings if f.check == "grad_norm_spike"]
    assert [f.status for f in grad] == ["fail"] and "seen in the last" in grad[0].message["en"]
    assert merged.layers["L1"] in ("warn", "fail") and merged.run is full.run
    assert merge(full, {}).findings == full.findings


def test_tail_steps_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match=r"WatchOptions: tail_steps=-1; expected 0 \(no tail pass\) or more steps"):
        WatchOptions(tail_steps=-1)


# ---------------------------------------------------------------- the watcher on a 30,000-step log

PREFILL = 30_000
LONG = Scenario(steps=PREFILL + 200, collapse_at=None, grad_spike_at=None)


@lru_cache(maxsize=1)
def _long_lines() -> tuple[bytes, ...]:
    return tuple(line + b"\n" for line in jsonl_lines(LONG))


def _line(step: int, **scale: float) -> bytes:
    """Line ``step`` of the long run with some metrics multiplied (``actor__grad_norm=14``)."""
    row = orjson.loads(_long_lines()[step - 1])
    for key, factor in scale.items():
        name = key.replace("__", "/")
        row["data"][name] *= factor
    return orjson.dumps(row) + b"\n"


class Clock:
    """The watcher's clock: it moves only when a test skips ahead. What a pass costs is read on the
    process's CPU time (``TIMER``), which other processes on a loaded machine do not stretch; the
    process's, not the thread's, as a diagnosis judges its checks in threads of its own."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return 1000.0 + self.skipped


TIMER = time.process_time


def _spikes(first: int) -> bytes:
    """Lines ``first`` to ``first + 5`` with the grad norm 14x at ``first``, ``first + 2`` and ``first + 4``:
    three spikes within 50 steps (a failure; one isolated spike is a note, which never alerts)."""
    return b"".join(_line(s, actor__grad_norm=14.0) if (s - first) % 2 == 0 else _line(s)
                    for s in range(first, first + 6))


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def _long_watcher(tmp: Path, **options: Any) -> tuple[Watcher, Path, Clock, list[Alert]]:
    log = tmp / "run.jsonl"
    log.write_bytes(b"".join(_long_lines()[:PREFILL]))
    clock = Clock()
    # a full diagnosis waits a thousand times its cost: far off, however fast this machine is
    options = {"diagnose_gap": 1000.0, "confirm": AT_ONCE, **options}
    w = Watcher([log], WatchState(tmp / "state.sqlite"), [], WatchOptions(**options),
                view=PlainView(io.StringIO(), io.StringIO()), clock=clock, timer=TIMER)
    first = w.cycle()
    return w, log, clock, first


def _until_full(w: Watcher, log: Path, clock: Clock) -> None:
    """Skip ahead to when the throttled full diagnosis of ``log`` is due."""
    clock.skipped += w.pace.wait((log, False), clock()) + 0.01


EVENTS = {  # check -> the lines appended after step 30,000: the event and what the trainer writes after
    "grad_norm_spike": lambda: _line(30_001) + _spikes(30_002),
    # a KL spike with the gradient of its update (alone it is isolated: a note)
    "kl_jump": lambda: _line(30_001) + _line(30_002, actor__ppo_kl=12.0, actor__grad_norm=8.0) + _line(30_003)
    + _line(30_004),
    "entropy_collapse": lambda: b"".join(_line(s, actor__entropy=0.2) for s in range(30_001, 30_011)),
}


@pytest.mark.parametrize("check", sorted(EVENTS))
def test_an_abrupt_event_on_a_30k_step_log_is_alerted_by_the_next_cycle_once(tmp_path: Path, check: str) -> None:
    w, log, clock, first = _long_watcher(tmp_path)
    assert first and not any(a.check == check for a in first)
    _append(log, EVENTS[check]())
    clock.skipped += 0.5  # one poll interval later
    assert w.pace.wait((log, False), clock()) > 0, "the full diagnosis must not be due yet"
    sent = w.cycle()
    assert [a.check for a in sent] == [check]
    assert "(seen in the last 2000 steps, " in sent[0].message["en"] and sent[0].evidence["tail_window"][0] > 28_000
    assert w.full[str(log)].run.steps[-1] == PREFILL  # the full diagnosis has not run since
    assert any(f.check == check and "seen in the last" in f.message["en"] for f in w.diagnoses[str(log)].findings)
    _append(log, b"".join(_line(s) for s in range(30_011, 30_021)))
    _until_full(w, log, clock)
    assert w.cycle() == []  # the full diagnosis confirms it: nothing is sent again
    confirmed = [f for f in w.full[str(log)].findings if f.check == check]
    assert any(f.status in ("warn", "fail") for f in confirmed) and w.full[str(log)].run.steps[-1] == 30_020
    assert w.diagnoses[str(log)] is w.full[str(log)]
    assert [(a.check, a.kind) for a in w.state.alerts()][-1] == (check, "new")
    w.close()


def test_on_a_long_run_the_tail_pass_goes_before_a_full_diagnosis_that_is_due(tmp_path: Path) -> None:
    """Without a throttle the full diagnosis is due at every cycle; on 30,000 steps it costs ten times
    the tail pass, which therefore answers first, in the same cycle."""
    w, log, clock, _ = _long_watcher(tmp_path, diagnose_gap=0.0)
    _append(log, _line(30_001))
    assert w.cycle() == []  # both passes ran: their costs are known now
    assert w.pace.cost((log, False)) > 4 * w.pace.cost((log, True))
    _append(log, _spikes(30_002))
    (spike,) = w.cycle()
    assert spike.check == "grad_norm_spike" and "tail_window" in spike.evidence
    assert w.full[str(log)].run.steps[-1] == 30_007  # the full diagnosis ran after it and sent nothing more
    w.close()


def test_the_tail_pass_never_clears_and_a_restarted_watcher_goes_on_without_repeating(tmp_path: Path) -> None:
    w, log, clock, first = _long_watcher(tmp_path)
    full_keys = {a.key for a in first}
    assert {a.check for a in first} - SUDDEN, "the full diagnosis has findings the tail pass does not read"
    _append(log, EVENTS["kl_jump"]())
    clock.skipped += 0.5
    assert [a.check for a in w.cycle()] == ["kl_jump"]
    for key in full_keys:  # what the tail pass does not report stays as the full diagnosis left it
        assert w.alerting.keys[key].active and w.alerting.keys[key].cleared_at is None, key
    w.close()

    w2 = Watcher([log], WatchState(tmp_path / "state.sqlite"), [], WatchOptions(diagnose_gap=1000.0, confirm=AT_ONCE),
                 view=PlainView(io.StringIO(), io.StringIO()), clock=clock, timer=TIMER)
    assert w2.cycle() == []  # rebuilt from the state file and diagnosed in full: the KL jump is known
    assert w2.full[str(log)].run.steps[-1] == 30_004
    _append(log, _spikes(30_005))
    clock.skipped += 0.5
    assert w2.pace.wait((log, False), clock()) > 0
    assert [a.check for a in w2.cycle()] == ["grad_norm_spike"]
    assert [a.check for a in w2.state.alerts()].count("kl_jump") == 1
    w2.close()


def _rounded_kl_lines(steps: int) -> list[bytes]:
    """A 3,000-step run whose KL is logged with three decimals, ~0.001, then 0.02 from step 3,001: the
    whole run stays "within a few rounding steps of zero" for kl_jump (too coarse to read), while its
    last 500 steps show the 20x jump. A tail finding that the full diagnosis does not confirm."""
    rng = np.random.default_rng(3)
    out = []
    for raw in jsonl_lines(Scenario(steps=steps, collapse_at=None, grad_spike_at=None)):
        row = orjson.loads(raw)
        kl = row["data"]["actor/ppo_kl"] if row["step"] <= N else 0.02 + rng.normal(0, 0.001)
        row["data"]["actor/ppo_kl"] = round(kl, 3)
        out.append(orjson.dumps(row) + b"\n")
    return out


def test_a_tail_finding_the_full_diagnosis_does_not_confirm_does_not_come_back(tmp_path: Path) -> None:
    lines = _rounded_kl_lines(N + 200)
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(lines[:N]))
    clock = Clock()
    w = Watcher([log], WatchState(tmp_path / "state.sqlite"), [],
                WatchOptions(diagnose_gap=1000.0, tail_steps=500, exit_on="fail", confirm=AT_ONCE),
                view=PlainView(io.StringIO(), io.StringIO()), clock=clock, timer=TIMER)
    w.cycle()
    assert w.exit_code() == 0
    _append(log, b"".join(lines[N : N + 60]))
    clock.skipped += 0.5
    (jump,) = w.cycle()
    assert (jump.check, jump.status, jump.metrics, jump.kind) == ("kl_jump", "fail", ("actor/ppo_kl",), "new")
    assert w.exit_code() == 1  # --exit-on fail: the tail pass's failure counts
    _until_full(w, log, clock)
    assert w.cycle() == []
    assert not w.alerting.keys[jump.key].active  # the full diagnosis reads the whole run as too coarse: cleared
    assert w.exit_code() == 0
    said = []
    for start in (N + 60, N + 70):  # more of the same, then past the 10-minute cooldown
        _append(log, b"".join(lines[start : start + 10]))
        clock.skipped += 0.5 if start == N + 60 else 700.0
        said.extend(w.cycle())
        assert not w.alerting.keys[jump.key].active, "the tail pass raised again what the full diagnosis cleared"
    assert [(a.key, a.kind) for a in said] == [(jump.key, "cleared")]  # the alert is withdrawn, once
    assert [a.kind for a in w.state.alerts() if a.key == jump.key] == ["new", "cleared"]
    w.close()


def test_the_tail_pass_reads_the_rollout_series_joined_onto_the_last_steps(tmp_path: Path) -> None:
    """With --rollouts, the last steps carry the series derived from the dumps, as a full diagnosis does."""
    from rlvitals.rollout.writers import write_verl_dump

    lines = [line + b"\n" for line in jsonl_lines(Scenario(steps=N + 10, collapse_at=None, grad_spike_at=None))]
    log, dumps = tmp_path / "run.jsonl", tmp_path / "rollouts"
    log.write_bytes(b"".join(lines[:N]))
    rollouts = [{"prompt": f"Q{g}", "response": "The answer is 1.", "score": float(s < 2), "target": "1"}
                for g in range(4) for s in range(4)]
    for step in (N - 5, N + 2):
        write_verl_dump(rollouts, dumps, step)
    clock = Clock()
    w = Watcher([log], WatchState(tmp_path / "state.sqlite"), [],
                WatchOptions(diagnose_gap=1000.0, tail_steps=300, confirm=AT_ONCE),
                view=PlainView(io.StringIO(), io.StringIO()), clock=clock, timer=TIMER, rollouts=dumps)
    w.cycle()
    read, seen = w.tails.read, []

    def spy(tail: Run, full: Diagnosis, keys: Any) -> Diagnosis:
        seen.append(tail)
        return read(tail, full, keys)

    w.tails.read = spy  # type: ignore[method-assign]
    rows = [orjson.loads(line) for line in lines[N : N + 6]]  # steps N + 1 .. N + 6
    for row in rows[1::2]:  # spikes at N + 2, N + 4 and N + 6: three within 50 steps
        row["data"]["actor/grad_norm"] *= 14
    _append(log, b"".join(orjson.dumps(row) + b"\n" for row in rows))
    clock.skipped += 0.5
    assert [a.check for a in w.cycle()] == ["grad_norm_spike"]
    (tail,) = seen
    assert tail.steps.tolist() == list(range(N - 293, N + 7)) and tail.cut == N - 294
    shares = dict(zip(*tail.series("group/zero_std/share"), strict=True))
    assert set(shares) == {N - 5, N + 2}  # the dump read before and the one written with the spike
    w.close()


def test_a_spike_written_to_a_growing_tensorboard_folder_is_alerted_by_the_tail_pass(tmp_path: Path) -> None:
    """TensorBoard is re-read whole (not by lines) when its event file changes; the tail pass still reads
    only its last steps, so a spike tensorboardX writes is alerted before the throttled full diagnosis."""
    tbx = pytest.importorskip("tensorboardX", reason="tensorboardX is a test dependency (pip install -e '.[test]')")
    steps = 400
    lines = [orjson.loads(line) for line in jsonl_lines(Scenario(steps=steps + 6, collapse_at=None,
                                                                  grad_spike_at=None))]
    folder = tmp_path / "tb"
    writer = tbx.SummaryWriter(str(folder))

    def write(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            for key, value in row["data"].items():
                writer.add_scalar(key, value, row["step"])
        writer.flush()

    write(lines[:steps])
    clock = Clock()
    w = Watcher([folder], WatchState(tmp_path / "state.sqlite"), [],
                WatchOptions(diagnose_gap=1000.0, min_gap=0.0, tail_steps=300, confirm=AT_ONCE),
                view=PlainView(io.StringIO(), io.StringIO()), clock=clock, timer=TIMER)
    first = w.cycle()
    assert first is not None and not any(a.check == "grad_norm_spike" for a in first)
    assert w.full[str(folder)].run.steps[-1] == steps
    for i in (1, 3, 5):  # three spikes within 50 steps (one isolated spike would be a note)
        lines[steps + i]["data"]["actor/grad_norm"] *= 14
    write(lines[steps:])
    writer.close()  # tensorboardX writes from its own thread: closed, every event is on disk
    clock.skipped += 0.5
    assert w.pace.wait((folder, False), clock()) > 0, "the full diagnosis must not be due yet"
    sent = w.cycle()
    assert [a.check for a in sent] == ["grad_norm_spike"]
    assert sent[0].evidence["tail_window"][1] == steps + 6 and sent[0].evidence["tail_window"][0] > 100
    assert w.full[str(folder)].run.steps[-1] == steps  # the full diagnosis has not run since
    w.close()

"""One event, one message: a check that reports one finding per metric (a diversity collapse seen in
distinct-n, the duplicate rate, edit distance and answer entropy at once) reaches a webhook (a real
local HTTP server) and a command hook once, as one combined alert, while the JSONL file keeps one line
per finding; a restarted watcher sends nothing again."""

from __future__ import annotations

import io
import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlvitals.live import Confirm
from rlvitals.live.alerts import Alert, combine, grouped
from rlvitals.rollout.writers import write_verl_dump
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch.sinks import parse_sink
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions

STEPS = 120
LINES = [line + b"\n" for line in jsonl_lines(Scenario(steps=STEPS, collapse_at=None, grad_spike_at=None))]
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def _dumps(folder: Path) -> None:
    """Four prompts × four rollouts per step: varied texts and answers until step 70, then every
    rollout of a prompt the same text (diversity lost in every measure at once)."""
    for step in range(1, STEPS + 1, 2):
        rows = []
        for g in range(4):
            for s in range(4):
                if step < 70:
                    words = " ".join(WORDS[(g * 5 + s * 3 + step + k) % len(WORDS)] for k in range(8))
                    text = f"{words}. The answer is {(s + step) % 5}."
                else:
                    text = f"{' '.join(WORDS[:8])}. The answer is 3."
                rows.append({"prompt": f"Q{g}", "response": text, "target": "3", "score": float(text.endswith("3."))})
        write_verl_dump(rows, folder, step)


def _watcher(tmp: Path, sinks: list[Any]) -> Watcher:
    return Watcher([tmp / "run.jsonl"], WatchState(tmp / "state.sqlite"), sinks,
                   WatchOptions(diagnose_gap=0.0, min_gap=0.0, tail_steps=0, confirm=Confirm(looks=1)),
                   view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: 1000.0, rollouts=tmp / "rollouts")


def test_a_check_with_many_metrics_is_one_alert_for_every_sink(tmp_path: Path, hook: Any) -> None:
    """A diversity collapse read on several measures is one fault: one alert naming every measure, one webhook
    message, one JSONL line, one command call — and each measure's finding kept in its evidence."""
    (tmp_path / "run.jsonl").write_bytes(b"".join(LINES))
    _dumps(tmp_path / "rollouts")
    calls = tmp_path / "calls.jsonl"
    script = f"import sys; open({str(calls)!r}, 'a').write(sys.stdin.read() + '\\n')"
    sinks = [parse_sink(f"webhook:{hook.url}"), parse_sink(f"jsonl:{tmp_path / 'alerts.jsonl'}"),
             parse_sink(f"command:{shlex.join([sys.executable, '-c', script])}")]
    w = _watcher(tmp_path, sinks)
    alerts = w.cycle()
    assert w.flush(30)
    w.close()
    (diversity,) = [a for a in alerts if a.check == "diversity_collapse"]
    found = diversity.evidence["findings"]
    assert len(found) >= 4 and len(diversity.metrics) >= 4, diversity.metrics  # one finding per measure
    assert diversity.message["en"].startswith(f"{len(found)} findings:\n• ")
    lines = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert sorted(x["key"] for x in lines) == sorted(a.key for a in alerts)  # the file: one line per alert
    bodies = [body["rlvitals"] for _, body in hook.received]
    assert len(bodies) == len(alerts)
    (body,) = [b for b in bodies if b["check"] == "diversity_collapse"]  # the webhook: one message
    assert body["metrics"] == list(diversity.metrics)
    runs = [json.loads(line) for line in calls.read_text().splitlines() if line.strip()]
    assert [r["check"] for r in runs].count("diversity_collapse") == 1  # the command: run once
    assert len(runs) == len(bodies)
    again = _watcher(tmp_path, sinks)  # every alert was struck off: nothing is resent
    assert again.cycle() == [] and again.flush(30)
    again.close()
    assert len(hook.received) == len(bodies)


def _alert(check: str, metric: str, kind: str = "new", status: str = "fail", step: int = 40) -> Alert:
    return Alert(json.dumps([check, metric]), kind, "run.log", check, "L4", status, None, step, 0.0,  # type: ignore[arg-type]
                 31, {"en": check}, {"en": f"{metric} fell", "zh": f"{metric} 下降"}, {"en": "advice"}, (metric,),
                 {"value": 0.1})


def test_only_alerts_of_one_event_are_combined() -> None:
    a, b = _alert("diversity_collapse", "d1"), _alert("diversity_collapse", "d2", status="warn")
    others = [_alert("diversity_collapse", "d3", kind="escalated"), _alert("diversity_collapse", "d5", step=41),
              _alert("kl_jump", "kl")]
    groups = grouped(list(enumerate([b, *others, a])))
    assert [ids for ids, _ in groups] == [[0, 4], [1], [2], [3]]
    both = groups[0][1]
    assert both.status == "fail" and both.key == a.key  # the worst of them speaks for the event
    assert both.metrics == ("d2", "d1") and both.message == {"en": "2 findings:\n• WARN d2 fell\n• FAIL d1 fell",
                                                             "zh": "2 项发现：\n• 警告 d2 下降\n• 失败 d1 下降"}
    assert both.evidence == {"alerts": [{"key": b.key, "status": "warn", "metrics": ["d2"], "value": 0.1},
                                        {"key": a.key, "status": "fail", "metrics": ["d1"], "value": 0.1}]}
    assert combine([a]) is a and replace(both, message=a.message, metrics=a.metrics, evidence=a.evidence) == a

"""Alert dispatch shared by `watch` and `Monitor`: decide → commit → say → deliver, grouped per sink."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from rlvitals.diagnosis import Finding
from rlvitals.live.alerts import Alert, KeyState, Observation
from rlvitals.live.dispatch import dispatch, messages
from rlvitals.watch.sinks import CommandSink, JsonlSink


def _finding(metric: str) -> Finding:
    return Finding("kl_spike", "L1", "fail", {"en": "KL spike", "zh": "KL"}, {"en": f"{metric} spiked", "zh": "z"},
                   {"en": "a", "zh": "a"}, (metric,), onset_step=40)


def test_the_four_steps_run_in_order_and_each_sink_gets_its_form(tmp_path: Path) -> None:
    steps: list[str] = []
    stored: list[tuple[dict[str, KeyState], list[Alert]]] = []

    def commit(changed: Mapping[str, KeyState], alerts: Sequence[Alert]) -> list[int]:
        steps.append("commit")
        stored.append((dict(changed), list(alerts)))
        return [10 + i for i in range(len(alerts))]

    machine = JsonlSink(tmp_path / "alerts.jsonl", name="jsonl")  # one line per alert
    person = CommandSink(["true"], name="cmd")  # grouped: one call per event
    sent: list[tuple[str, list[int], Alert]] = []

    def send(sink: JsonlSink | CommandSink, ids: list[int], alert: Alert) -> None:
        steps.append(f"send {sink.name}")
        sent.append((sink.name, ids, alert))
        assert sink.send(alert) is None

    observed = [Observation("run.log", 41, (_finding("actor/ppo_kl"), _finding("actor/kl_loss")))]
    alerts, keys = dispatch({}, observed, 100.0, None, commit=commit, say=lambda a: steps.append("say"),
                            sinks=[machine, person], send=send)
    # one check read on two metrics is one fault: one alert, one key, one line for the machine, one call
    assert len(alerts) == 1 and len(keys) == 1 and stored[0][1] == alerts and set(stored[0][0]) == set(keys)
    assert steps == ["commit", "say", "send jsonl", "send cmd"]
    assert [(name, ids) for name, ids, _ in sent] == [("jsonl", [10]), ("cmd", [10])]
    lines = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert [line["metrics"] for line in lines] == [["actor/ppo_kl", "actor/kl_loss"]]
    assert [f["metrics"] for f in lines[0]["evidence"]["findings"]] == [["actor/ppo_kl"], ["actor/kl_loss"]]

    steps.clear()
    again, _ = dispatch(keys, observed, 101.0, None, commit=commit, say=lambda a: steps.append("say"),
                        sinks=[machine, person], send=send)
    assert again == [] and steps == ["commit"]  # nothing new: the state is still committed, nothing is said


def test_messages_groups_only_for_a_grouped_sink(tmp_path: Path) -> None:
    """Alerts of one event stored by an older watcher (one per metric) and redelivered now: one call for a
    person's sink, one line each for a machine's."""
    (alert,), _ = dispatch({}, [Observation("run.log", 41, (_finding("a"),))], 1.0, None,
                           commit=lambda c, a: [1], say=lambda a: None, sinks=[], send=lambda s, i, a: None)
    pairs = [(1, alert), (2, replace(alert, key="other", metrics=("b",)))]
    assert [ids for ids, _ in messages(pairs, JsonlSink(tmp_path / "x.jsonl"))] == [[1], [2]]
    assert [ids for ids, _ in messages(pairs, CommandSink(["true"]))] == [[1, 2]]

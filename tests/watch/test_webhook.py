"""The webhook sink against a real local HTTP server: the bodies Slack incoming webhooks and Discord
webhooks document (shapes, escaping, limits), 429 with Retry-After, and a receiver that never answers
while the watcher goes on (its alerts stay pending for the next watcher)."""

from __future__ import annotations

import io
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlvitals.diagnosis import Finding
from rlvitals.live import Confirm
from rlvitals.live.alerts import Alert, Observation, decide
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch.sinks import parse_sink
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions
from rlvitals.watch.webhook import (
    DISCORD_LIMIT,
    EMBED_LIMITS,
    SLACK_LIMITS,
    WebhookSink,
    flavour,
    retry_after,
    slack_escape,
)

NASTY = "KL < 0.1 & clip > 0.3 <!channel> @everyone <script>x</script> "




def _alert(message: str = NASTY, metrics: int = 1) -> Alert:
    f = Finding("entropy_collapse", "L4", "fail", {"en": "Entropy <collapsed>"}, {"en": message},
                {"en": "Lower the LR & check <clip>"}, tuple(f"m/{i}" for i in range(metrics)), onset_step=180,
                evidence={"value": 0.10623, "threshold": 0.5, "peak": 0.346})
    return decide({}, [Observation("runs/a&b/run.log", 190, [f])], 1_700_000_000.0)[0][0]


def _slack_texts(body: dict[str, Any]) -> list[str]:
    out = [body["text"]]
    for block in body["blocks"]:
        if "text" in block and block["text"]["type"] == "mrkdwn":
            out.append(block["text"]["text"])
        out.extend(f["text"] for f in block.get("fields", []))
    return out


def test_slack_body_is_escaped_and_fits_block_limits(hook: Any) -> None:
    sink = parse_sink(f"slack:{hook.url}")
    assert sink.send(_alert(NASTY * 400)) is None  # a 24k-character message
    ((_, body),) = hook.received
    assert set(body) == {"text", "blocks"}
    assert [b["type"] for b in body["blocks"]] == ["header", "section", "section", "section"]
    header = body["blocks"][0]["text"]
    assert header == {"type": "plain_text", "text": "FAIL entropy_collapse since step 180, seen at step 190"}
    assert len(header["text"]) <= SLACK_LIMITS["header"]
    assert len(body["blocks"][1]["text"]["text"]) <= SLACK_LIMITS["section"]
    fields = body["blocks"][2]["fields"]
    assert len(fields) <= SLACK_LIMITS["fields"] and all(len(f["text"]) <= SLACK_LIMITS["field"] for f in fields)
    names = [f["text"].split("\n")[0] for f in fields]
    assert names == ["*Layer*", "*Status*", "*Onset step*", "*Seen at step*", "*Value*", "*Threshold*", "*Metrics*",
                     "*Run*"]
    assert fields[4]["text"] == "*Value*\n0.1062" and fields[5]["text"] == "*Threshold*\n0.5"
    assert fields[7]["text"] == "*Run*\nruns/a&amp;b/run.log"
    for text in _slack_texts(body):  # no raw control character is left: no <!channel> notifies anyone
        assert "<" not in text and ">" not in text and "&" not in text.replace("&amp;", "").replace(
            "&lt;", "").replace("&gt;", "")
    assert "&lt;!channel&gt;" in body["text"] and body["blocks"][1]["text"]["text"].startswith(
        "*Entropy &lt;collapsed&gt;*\nKL &lt; 0.1 &amp; clip")


def test_discord_body_fits_the_documented_limits(hook: Any) -> None:
    sink = parse_sink(f"discord:{hook.url}")
    assert sink.send(_alert(NASTY * 400, metrics=300)) is None
    ((_, body),) = hook.received
    assert set(body) == {"content", "embeds", "allowed_mentions"}
    assert body["allowed_mentions"] == {"parse": []}  # "@everyone" in a message notifies nobody
    assert len(body["content"]) <= DISCORD_LIMIT and body["content"].startswith("rlvitals: FAIL entropy_collapse")
    assert len(body["embeds"]) == 1
    embed = body["embeds"][0]
    assert len(embed["title"]) <= EMBED_LIMITS["title"] and len(embed["description"]) <= EMBED_LIMITS["description"]
    assert len(embed["fields"]) <= EMBED_LIMITS["fields"]
    assert all(len(f["name"]) <= EMBED_LIMITS["name"] and len(f["value"]) <= EMBED_LIMITS["value"]
               for f in embed["fields"])
    total = len(embed["title"]) + len(embed["description"]) + len(embed["footer"]["text"]) + sum(
        len(f["name"]) + len(f["value"]) for f in embed["fields"])
    assert total <= EMBED_LIMITS["total"]
    got = {f["name"]: f["value"] for f in embed["fields"]}
    assert got["Layer"] == "L4 · Exploration: is it still exploring?" and got["Status"] == "FAIL"
    assert (got["Onset step"], got["Seen at step"], got["Value"], got["Threshold"]) == ("180", "190", "0.1062", "0.5")
    assert got["Advice"] == "Lower the LR & check <clip>"  # Discord shows text as it is
    assert embed["title"] == "FAIL entropy_collapse since step 180, seen at step 190: Entropy <collapsed>"
    assert embed["color"] == 0xD62728 and embed["timestamp"] == "2023-11-14T22:13:20+00:00"


def test_the_body_follows_the_url_host_or_carries_both() -> None:
    assert flavour("https://hooks.slack.com/services/T/B/x") == "slack"
    assert flavour("https://discord.com/api/webhooks/1/t") == flavour("https://discordapp.com/api/webhooks/1/t")
    assert flavour("https://example.org/hook") == "any"
    assert slack_escape("a<b>&c") == "a&lt;b&gt;&amp;c"


def test_a_429_is_retried_after_retry_after(hook: Any) -> None:
    waits: list[float] = []
    hook.answers = [(429, {"Retry-After": "2"}, b""),  # Slack: seconds in the header
                    (429, {"Content-Type": "application/json"}, b'{"retry_after": 0.25, "global": false}'),  # Discord
                    (200, {}, b"ok")]
    sink = WebhookSink(hook.url, sleep=waits.append)
    assert sink.send(_alert()) is None
    assert waits == [2.0, 0.25] and len(hook.received) == 3
    assert hook.received[0] == hook.received[2]  # the same alert, sent again


def test_a_429_asking_too_long_is_given_up_and_reported(hook: Any) -> None:
    waits: list[float] = []
    hook.answers = [(429, {"Retry-After": "120"}, b"")]
    sink = WebhookSink(hook.url, sleep=waits.append, max_wait=30.0)
    assert sink.send(_alert()) == (f"webhook {hook.url}: the server answered 429 Too Many Requests 1 time(s) "
                                   "(it asked to wait 120 s more, 0 s were waited); the alert was not accepted")
    assert waits == [] and len(hook.received) == 1
    hook.answers = [(429, {"Retry-After": "1"}, b"")] * 4
    assert "429 Too Many Requests 4 time(s)" in (WebhookSink(hook.url, sleep=waits.append).send(_alert()) or "")
    assert waits == [1.0, 1.0, 1.0]  # bounded: RETRIES retries


def test_retry_after_reads_an_http_date() -> None:
    assert retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, b"", now=1445412480.0) == 10.0
    assert retry_after({"Retry-After": "soon"}, b"") is None and retry_after({}, b"not json") is None


def test_a_receiver_that_never_answers_does_not_stall_the_watcher(tmp_path: Path, hook: Any) -> None:
    """A blackholed webhook (it accepts the connection and never answers): the watch loop goes on and
    the other sinks get the alerts; at the end the watcher says how many it could not deliver, and they
    stay pending in the state file until the next watcher delivers them."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)  # the kernel completes the handshakes; nobody ever reads the requests
    url = f"http://127.0.0.1:{hole.getsockname()[1]}/hook"
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=120, collapse_at=80))))
    jsonl = tmp_path / "alerts.jsonl"
    stuck = WebhookSink(url, timeout=3.0, name=f"webhook:{url}")
    err = io.StringIO()
    w = Watcher([log], WatchState(tmp_path / "s.sqlite"), [stuck, parse_sink(f"jsonl:{jsonl}")],
                WatchOptions(confirm=Confirm(looks=1)), view=PlainView(io.StringIO(), err))
    alerts = w.cycle()
    # the cycle is over while the first POST still waits for its answer
    assert alerts and len(jsonl.read_text().splitlines()) == len(alerts)
    assert not w.outboxes[stuck.name].wait(0.0)
    w.close(timeout=0.2)
    assert (f"rlvitals: webhook:{url}: {len(alerts)} alert(s) not delivered when the watcher stopped (no answer "
            "within 0.2 s); they stay pending in the state file and the next watcher sends them") in err.getvalue()
    hole.close()
    state = WatchState(tmp_path / "s.sqlite")
    assert [p for _, _, p in state.pending()] == [[stuck.name]] * len(alerts)
    state.close()
    good = WebhookSink(hook.url, name=stuck.name)  # the receiver is back, under the same sink name
    w2 = Watcher([log], WatchState(tmp_path / "s.sqlite"), [good], view=PlainView(io.StringIO(), io.StringIO()))
    assert w2.flush(30)
    assert sorted(b["rlvitals"]["key"] for _, b in hook.received) == sorted(a.key for a in alerts)
    assert w2.state.pending() == []
    w2.close()


def _zh_alert(kind: str = "new", onset: int | None = 180) -> Alert:
    f = Finding("entropy_collapse", "L4", "fail", {"en": "Entropy collapse", "zh": "熵坍缩"},
                {"en": "entropy fell", "zh": "熵跌到了起点的 30%"}, {"en": "lower the LR", "zh": "调低学习率"},
                ("actor/entropy",), onset_step=onset, evidence={"value": 0.1, "threshold": 0.5})
    alert = decide({}, [Observation("runs/a/run.log", 190, [f])], 1_700_000_000.0)[0][0]
    return replace(alert, kind=kind, previous="warn" if kind == "escalated" else None)  # type: ignore[arg-type]


def test_slack_and_generic_webhook_headers_in_chinese(hook: Any) -> None:
    """With --lang zh the header names the status, the check, the onset step and the step seen in Chinese,
    and so do the fields and the Discord title; the generic body's ``rlvitals`` object stays as it is."""
    for spec in ("slack", "webhook"):
        assert parse_sink(f"{spec}:{hook.url}", "zh").send(_zh_alert()) is None
    (_, slack), (_, generic) = hook.received
    header = "失败 · 熵坍缩（entropy_collapse）· 自第 180 步起，第 190 步时发现"
    for body in (slack, generic):
        assert body["blocks"][0]["text"]["text"] == header
        fields = [f["text"] for f in body["blocks"][2]["fields"]]
        assert fields[:4] == ["*所在层*\nL4 · 探索：模型还在探索吗？", "*状态*\n失败", "*起始步*\n180",
                              "*发现于第几步*\n190"]
        assert [f.split("\n")[0] for f in fields[4:]] == ["*数值*", "*阈值*", "*指标*", "*训练日志*"]
        assert body["blocks"][3]["text"]["text"] == "*建议*\n调低学习率"
        assert body["text"] == f"rlvitals: {header}（runs/a/run.log）：熵跌到了起点的 30%"
    assert generic["embeds"][0]["title"] == header
    assert [f["name"] for f in generic["embeds"][0]["fields"]][-1] == "建议"
    assert generic["rlvitals"]["title"] == {"en": "Entropy collapse", "zh": "熵坍缩"}  # language-neutral keys


def test_chinese_headers_of_an_escalation_a_return_and_a_finding_without_onset(hook: Any) -> None:
    sink = parse_sink(f"slack:{hook.url}", "zh")
    for alert in (_zh_alert("escalated"), _zh_alert("again", onset=190), _zh_alert(onset=None)):
        assert sink.send(alert) is None
    heads = [b["blocks"][0]["text"]["text"] for _, b in hook.received]
    assert heads == ["失败（之前是警告） · 熵坍缩（entropy_collapse）· 自第 180 步起，第 190 步时发现",
                     "失败（再次出现） · 熵坍缩（entropy_collapse）· 第 190 步",
                     "失败 · 熵坍缩（entropy_collapse）· 第 190 步"]
    assert hook.received[0][1]["blocks"][2]["fields"][1]["text"] == "*状态*\n失败（之前是警告）"
    assert hook.received[2][1]["blocks"][2]["fields"][2]["text"] == "*起始步*\n—"


def test_an_alert_without_chinese_words_keeps_english_headers(hook: Any) -> None:
    assert parse_sink(f"slack:{hook.url}", "zh").send(_alert("plain")) is None
    ((_, body),) = hook.received
    assert body["blocks"][0]["text"]["text"] == "FAIL entropy_collapse since step 180, seen at step 190"
    assert body["blocks"][2]["fields"][0]["text"].startswith("*Layer*")

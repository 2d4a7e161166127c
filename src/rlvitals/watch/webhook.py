"""The webhook sink: an alert as the JSON Slack and Discord incoming webhooks document, POSTed with
a bounded wait on HTTP 429.

The body is chosen by the URL's host (or by the spec: ``slack:URL``, ``discord:URL`` for a
receiver that speaks one of them elsewhere, such as Mattermost's Slack-compatible hooks).
``hooks.slack.com`` gets Slack's shape: ``text`` (the
one-line alert, the notification fallback) and ``blocks`` (a header naming the status, the check,
the onset step and the step the finding was seen at, the message, the fields layer, status, onset
step, step seen, value, threshold, metrics, run, and the advice; all in the sink's language, with
``watch --lang zh`` in Chinese). Slack reads ``&``,
``<`` and ``>`` as markup (``<!channel>`` notifies everyone), so every text it parses is escaped
to ``&amp;``, ``&lt;``, ``&gt;``, and each text fits its block's limit (section 3000
characters, a field 2000, at most 10 fields; header 150). ``discord.com`` and ``discordapp.com``
get Discord's: ``content`` (at most 2000 characters), one embed with the same fields (title 256,
description 4096, at most 25 fields of 256/1024, footer 2048, 6000 in all) and
``allowed_mentions: {"parse": []}`` so that an ``@everyone`` in a message notifies nobody. Any
other URL gets both shapes in one body, and the whole alert under ``rlvitals``.

A 429 answer (both services rate-limit webhooks) is retried after its ``Retry-After`` (header,
or Discord's ``retry_after`` in the body), at most :data:`RETRIES` times and never after more
than ``max_wait`` seconds in all; other failures are reported, not retried.
"""

from __future__ import annotations

import email.utils
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal
from urllib.parse import urlsplit

from ..diagnosis import LAYER_NAMES
from ..live.alerts import Alert
from ..render.diagnosis import STATUS_WORDS
from ..words import Words

#: Discord refuses a ``content`` longer than this
DISCORD_LIMIT = 2000
#: Discord's embed limits (title, description, field name, field value, footer, fields, all text)
EMBED_LIMITS = {"title": 256, "description": 4096, "name": 256, "value": 1024, "footer": 2048, "fields": 25,
                "total": 6000}
#: Slack's block limits (header text, section text, a field's text, fields per section)
SLACK_LIMITS = {"header": 150, "section": 3000, "field": 2000, "fields": 10}
#: how many times a 429 answer is retried
RETRIES = 3
_COLOUR = {"fail": 0xD62728, "warn": 0xFFB000}
#: the colour of a ``cleared`` alert (the finding no longer holds)
_CLEARED = 0x2CA02C
Flavour = Literal["slack", "discord", "any"]


def flavour(url: str) -> Flavour:
    """Which body a URL's host documents.

    Example:
        >>> flavour("https://hooks.slack.com/services/T0/B0/x"), flavour("https://discord.com/api/webhooks/1/a")
        ('slack', 'discord')
    """
    host = (urlsplit(url).hostname or "").lower()
    if host == "hooks.slack.com":
        return "slack"
    if host in ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"):
        return "discord"
    return "any"


def slack_escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as Slack wants them in text it parses (and nothing else).

    Example:
        >>> slack_escape("loss < 0 & KL > 1 <!channel>")
        'loss &lt; 0 &amp; KL &gt; 1 &lt;!channel&gt;'
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _slack_fit(text: str, limit: int) -> str:
    """``text`` escaped, cut so that the escaped text fits ``limit`` (never inside an entity)."""
    out = slack_escape(text)
    if len(out) <= limit:
        return out
    parts, used = [], 0
    for ch in text:
        piece = slack_escape(ch)
        if used + len(piece) > limit - 1:
            break
        parts.append(piece)
        used += len(piece)
    return "".join(parts) + "…"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


#: the names of an alert's fields, per language (the English ones are also the keys a test or a receiver reads)
FIELD_NAMES = {
    "en": {"layer": "Layer", "status": "Status", "onset": "Onset step", "step": "Seen at step", "value": "Value",
           "threshold": "Threshold", "metrics": "Metrics", "run": "Run", "advice": "Advice",
           "followed": "What followed"},
    "zh": {"layer": "所在层", "status": "状态", "onset": "起始步", "step": "发现于第几步", "value": "数值",
           "threshold": "阈值", "metrics": "指标", "run": "训练日志", "advice": "建议", "followed": "随后发生"},
}


def _lang(alert: Alert, lang: str) -> str:
    """``lang`` when the alert has its words in it, else English."""
    return lang if lang in FIELD_NAMES and lang in alert.message else "en"


def alert_fields(alert: Alert, lang: str = "en") -> list[tuple[str, str]]:
    """(name, value) pairs of what an alert says besides its message, named in ``lang``: layer,
    status, onset step, the step it was seen at, value and threshold (when the check reports them),
    metrics, run.

    Example:
        >>> a = Alert("k", "escalated", "run.log", "kl_spike", "L1", "fail", "warn", 40, 0.0, 38, {}, {"zh": "m"}, {})
        >>> alert_fields(a, "zh")[1:4]
        [('状态', '失败（之前是警告）'), ('起始步', '38'), ('发现于第几步', '40')]
    """
    lang = _lang(alert, lang)
    names = FIELD_NAMES[lang]
    layer = LAYER_NAMES.get(alert.layer, (alert.layer, alert.layer))[0 if lang == "en" else 1]
    if lang == "zh":
        words = STATUS_WORDS["zh"]
        status = words[alert.status] + (f"（之前是{words[alert.previous]}）" if alert.previous in words else "")
    else:
        status = alert.status.upper() + (f" (was {alert.previous})" if alert.previous else "")
    out = [(names["layer"], f"{alert.layer} · {layer}"), (names["status"], status),
           (names["onset"], "—" if alert.onset_step is None else str(alert.onset_step)),
           (names["step"], str(alert.step))]
    for key in ("value", "threshold"):
        value = alert.evidence.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((names[key], _number(value)))
    if alert.metrics:
        out.append((names["metrics"], ", ".join(alert.metrics)))
    out.append((names["run"], alert.run))
    return out


def _texts(alert: Alert, lang: str) -> tuple[str, str, str, str]:
    lang = _lang(alert, lang)
    return ("rlvitals: " + alert.text(lang), alert.title.get(lang, alert.check), alert.message.get(lang, ""),
            alert.advice.get(lang, ""))


def slack_body(alert: Alert, lang: str = "en") -> dict[str, Any]:
    """What a Slack incoming webhook reads: ``text`` and ``blocks`` (see the module docstring)."""
    line, title, message, advice = _texts(alert, lang)
    fields = [{"type": "mrkdwn", "text": _slack_fit(f"*{name}*\n{value}", SLACK_LIMITS["field"])}
              for name, value in alert_fields(alert, lang)][: SLACK_LIMITS["fields"]]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text",
                                    "text": _cut(alert.headline(_lang(alert, lang)),
                                                 SLACK_LIMITS["header"])}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _slack_fit(f"*{title}*\n{message}",
                                                                          SLACK_LIMITS["section"])}},
        {"type": "section", "fields": fields}]
    followed = "\n".join(line.strip() for line in alert.followed(_lang(alert, lang)))
    if followed:  # the root cause's consequences, under its message: one fault, one message
        said = f"*{FIELD_NAMES[_lang(alert, lang)]['followed']}*\n{followed}"
        text = {"type": "mrkdwn", "text": _slack_fit(said, SLACK_LIMITS["section"])}
        blocks.insert(2, {"type": "section", "text": text})
    if advice:
        said = f"*{FIELD_NAMES[_lang(alert, lang)]['advice']}*\n{advice}"
        blocks.append({"type": "section",
                       "text": {"type": "mrkdwn", "text": _slack_fit(said, SLACK_LIMITS["section"])}})
    return {"text": slack_escape(line), "blocks": blocks}


def discord_body(alert: Alert, lang: str = "en") -> dict[str, Any]:
    """What a Discord webhook reads: ``content``, one embed, ``allowed_mentions`` (see above)."""
    line, title, message, advice = _texts(alert, lang)
    lim = EMBED_LIMITS
    names = FIELD_NAMES[_lang(alert, lang)]
    wide = (names["metrics"], names["run"])
    fields = [{"name": _cut(n, lim["name"]), "value": _cut(v, lim["value"]), "inline": n not in wide}
              for n, v in alert_fields(alert, lang)]
    followed = "\n".join(line.strip() for line in alert.followed(_lang(alert, lang)))
    if followed:
        fields.append({"name": names["followed"], "value": _cut(followed, lim["value"]), "inline": False})
    if advice:
        fields.append({"name": names["advice"], "value": _cut(advice, lim["value"]), "inline": False})
    embed: dict[str, Any] = {
        "title": _cut(alert.headline("zh") if _lang(alert, lang) == "zh" else f"{alert.headline()}: {title}",
                      lim["title"]),
        "color": _CLEARED if alert.kind == "cleared" else _COLOUR.get(alert.status, 0x808080),
        "fields": fields[: lim["fields"]],
        "footer": {"text": "rlvitals watch"},
        "timestamp": datetime.fromtimestamp(alert.at, tz=timezone.utc).isoformat()}
    used = len(embed["title"]) + len(embed["footer"]["text"]) + sum(len(f["name"]) + len(f["value"])
                                                                     for f in embed["fields"])
    embed["description"] = _cut(message, max(min(lim["description"], lim["total"] - used), 1))
    return {"content": _cut(line, DISCORD_LIMIT), "embeds": [embed], "allowed_mentions": {"parse": []}}


def webhook_body(alert: Alert, lang: str = "en", kind: Flavour = "any") -> dict[str, Any]:
    """The JSON a webhook receives: Slack's shape, Discord's, or (any other receiver) both and
    the whole alert under ``rlvitals``.

    Example:
        >>> sorted(webhook_body(Alert.from_json({"key": "k", "kind": "new", "run": "r", "check": "c",
        ...     "layer": "L1", "status": "warn", "previous": None, "step": 3, "at": 0.0, "onset_step": 2,
        ...     "title": {}, "message": {"en": "m"}, "advice": {}})))
        ['allowed_mentions', 'blocks', 'content', 'embeds', 'rlvitals', 'text']
    """
    if kind == "slack":
        return slack_body(alert, lang)
    if kind == "discord":
        return discord_body(alert, lang)
    return {**slack_body(alert, lang), **discord_body(alert, lang), "rlvitals": alert.payload()}


def retry_after(headers: Mapping[str, str] | Any, body: bytes, now: float | None = None) -> float | None:
    """Seconds a 429 answer asks to wait: its ``Retry-After`` header (seconds or an HTTP date), else
    Discord's ``retry_after`` in a JSON body; None when it says nothing readable.

    Example:
        >>> retry_after({"Retry-After": "2"}, b""), retry_after({}, b'{"retry_after": 0.25}')
        (2.0, 0.25)
    """
    value = headers.get("Retry-After") if headers is not None else None
    if value:
        try:
            return max(float(value), 0.0)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
            return max(when.timestamp() - (time.time() if now is None else now), 0.0)
    try:
        got = json.loads(body).get("retry_after")
    except (ValueError, AttributeError):
        return None
    return max(float(got), 0.0) if isinstance(got, (int, float)) else None


@dataclass
class WebhookSink:
    """POSTs the alert to a URL with a timeout; on 429 waits as asked (``max_wait`` seconds at most
    in all) and tries again, :data:`RETRIES` times at most. ``threaded``: the watcher sends through
    it from a worker thread (:class:`~rlvitals.watch.outbox.Outbox`), so a receiver that never answers
    cannot stall the watch loop."""

    url: str
    lang: str = "en"
    timeout: float = 5.0
    name: str = ""
    max_wait: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    threaded: bool = True
    grouped: bool = True  # a person reads it: one message per event, not one per metric
    kind: Flavour | None = None  # the body's shape; None: by the URL's host

    def send(self, alert: Alert) -> str | None:
        body = json.dumps(webhook_body(alert, self.lang, self.kind or flavour(self.url)), ensure_ascii=False).encode()
        waited = 0.0
        for attempt in range(RETRIES + 1):
            error, wait = self._post(body)
            if wait is None:
                return error
            if attempt == RETRIES or waited + wait > self.max_wait:
                return Words(f"webhook {self.url}: the server answered 429 Too Many Requests {attempt + 1} time(s) "
                             f"(it asked to wait {wait:g} s more, {waited:g} s were waited); the alert was not "
                             "accepted",
                             f"webhook {self.url}：服务器回了 {attempt + 1} 次 429 Too Many Requests（要求再等 "
                             f"{wait:g} 秒，已等 {waited:g} 秒）；告警没有被接收")
            self.sleep(wait)
            waited += wait
        return None  # not reached: the loop returns

    def _post(self, body: bytes) -> tuple[str | None, float | None]:
        """(error or None, seconds to wait before a retry or None for no retry)."""
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "User-Agent": "rlvitals-watch"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (http/https checked)
                response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 429:
                wait = retry_after(exc.headers, exc.read())
                return None, 1.0 if wait is None else wait
            return Words(f"webhook {self.url}: the server answered {exc.code} {exc.reason}; the alert was not accepted",
                         f"webhook {self.url}：服务器回了 {exc.code} {exc.reason}；告警没有被接收"), None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return Words(f"webhook {self.url}: could not deliver the alert ({reason}); "
                         "check the URL and that the receiver is up",
                         f"webhook {self.url}：告警没能送达（{reason}）；请检查 URL，以及接收端是否在运行"), None
        return None, None


__all__ = ["DISCORD_LIMIT", "EMBED_LIMITS", "FIELD_NAMES", "RETRIES", "SLACK_LIMITS", "WebhookSink", "alert_fields",
           "discord_body", "flavour", "retry_after", "slack_body", "slack_escape", "webhook_body"]

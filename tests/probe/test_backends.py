"""The HTTP backend against real local HTTP servers: retries with backoff on 503, no retry on 400, a clear
error for a server that is not there or does not speak the OpenAI format, order kept under concurrency, and
the cache: a re-run sends nothing; a reply slower than the timeout tried again, and a server that dies mid-run:
what it answered is kept, and a re-run sends only the rest."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from openai_servers import completion, follows_reasoning, scripted, serving

from rlvitals.errors import ProbeError
from rlvitals.probe import Cache, Cached, HttpBackend
from rlvitals.probe.prompts import Request

ASK = Request("completions",
              "Question: q\nAnswer: Let's think step by step. 3 + 4 = 7.\nTherefore, the final answer is", 8)


def test_a_busy_server_is_retried_with_backoff() -> None:
    waits: list[float] = []
    with serving(scripted([(503, b"busy"), (429, b"slow down"), (200, completion(" 7.", False))])) as (url, seen):
        backend = HttpBackend(url, "m", api_key="k", sleep=waits.append, backoff=0.5)
        assert backend.generate([ASK]) == [" 7."]
    assert waits == [0.5, 1.0] and len(seen) == 3
    assert seen[0]["path"] == "/v1/completions" and seen[0]["auth"] == "Bearer k" and seen[0]["model"] == "m"
    assert seen[0]["prompt"] == ASK.prompt and seen[0]["max_tokens"] == 8 and seen[0]["temperature"] == 0.0


def test_a_refusal_is_not_retried_and_says_what_the_server_said() -> None:
    waits: list[float] = []
    refused = pytest.raises(ProbeError, match=r"/v1/completions: the server answered HTTP 400: .*model m not found")
    with serving(scripted([(400, b'{"detail": "model m not found"}')])) as (url, seen), refused as e:
        HttpBackend(url, "m", sleep=waits.append).generate([ASK])
    assert len(seen) == 1 and waits == []
    assert "服务器返回 HTTP 400" in e.value.text("zh")


def test_no_server_and_a_wrong_reply_are_clear_errors() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    waits: list[float] = []
    with pytest.raises(ProbeError, match=r"no answer after 3 tries .*ending in /v1") as e:
        HttpBackend(f"http://127.0.0.1:{port}/v1", "m", retries=2, sleep=waits.append).generate([ASK])
    assert waits == [0.5, 1.0] and "尝试 3 次仍无响应" in e.value.text("zh")
    wrong = pytest.raises(ProbeError, match="not an OpenAI-compatible completion")
    with serving(scripted([(200, b'{"choices": []}')])) as (url, _), wrong:
        HttpBackend(url, "m").generate([ASK])
    with pytest.raises(ProbeError, match="--concurrency 0"):
        HttpBackend("http://x/v1", "m", concurrency=0)


def test_concurrent_requests_come_back_in_order_and_chat_uses_messages() -> None:
    asks = [Request("completions", f"Question: q\nAnswer: Let's think step by step. {i} + 0 = {i}.\n"
                                   "Therefore, the final answer is", 8) for i in range(12)]
    with serving(follows_reasoning) as (url, seen):
        assert HttpBackend(url, "m", concurrency=4).generate(asks) == [f" {i}." for i in range(12)]
        chat = Request("chat", "What is 2 + 2?\n\nHere is the beginning of a solution:\n2 + 2 = 4.", 8)
        assert HttpBackend(url, "m").generate([chat]) == ["\\boxed{4}"]
    assert seen[-1]["path"] == "/v1/chat/completions" and seen[-1]["messages"] == [{"role": "user",
                                                                                  "content": chat.prompt}]


def test_the_cache_answers_a_rerun_without_sending(tmp_path: Path) -> None:
    with serving(follows_reasoning) as (url, seen):
        cache = Cache(tmp_path / "probe.sqlite")
        first = Cached(HttpBackend(url, "m"), cache).generate([ASK, ASK])
        assert len(seen) == 1 and cache.misses == 1 and cache.hits == 1  # the same request twice: asked once
        cache.close()
        again = Cache(tmp_path / "probe.sqlite")
        assert Cached(HttpBackend(url, "m"), again).generate([ASK]) == first[:1] and len(seen) == 1
        Cached(HttpBackend(url, "other"), again).generate([ASK])  # another model: another key
        Cached(HttpBackend(url, "m"), again).generate([Request(ASK.api, ASK.prompt, 8, 0.7, 1)])
        assert len(seen) == 3
        again.close()
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(ProbeError, match="probe cache cannot be opened"):
        Cache(tmp_path / "dir.sqlite")


def test_a_slow_reply_times_out_and_is_tried_again() -> None:
    """A reply that never comes (the server holds it until the test ends) times out whatever the machine's
    load; the next try is answered at once, well inside the 5 s timeout."""
    release = threading.Event()
    calls: list[int] = []

    def held_first(body: dict[str, object]) -> tuple[int, bytes]:
        calls.append(1)
        if len(calls) == 1:
            release.wait(30)  # no reply until the client has given up on it
        return follows_reasoning(body)

    waits: list[float] = []
    try:
        with serving(held_first) as (url, _):
            backend = HttpBackend(url, "m", timeout=5.0, retries=2, sleep=waits.append)
            asked = Request("completions", "Question: q\nAnswer: Let's think step by step. 3.", 4)
            assert backend.generate([asked]) == [" 3."]
            release.set()
    finally:
        release.set()
    assert len(calls) == 2 and waits == [0.5]
    never = threading.Event()
    try:
        with serving(lambda body: (never.wait(30), follows_reasoning(body))[1]) as (url, _), \
                pytest.raises(ProbeError, match=r"no answer after 2 tries \(timed out\)"):
            HttpBackend(url, "m", timeout=0.5, retries=1, sleep=lambda s: None).generate(
                [Request("completions", "Q", 4)])
            never.set()
    finally:
        never.set()


def _dying(after: int) -> tuple[list[int], Callable[[dict[str, object]], tuple[int, bytes]]]:
    """A rule-following model that answers ``after`` requests, then hangs up on every one."""
    answered: list[int] = []

    def reply(body: dict[str, object]) -> tuple[int, bytes]:
        if len(answered) >= after:
            return 0, b""
        answered.append(1)
        return follows_reasoning(body)
    return answered, reply


def test_a_server_that_dies_mid_run_keeps_what_it_answered_and_a_rerun_goes_on(tmp_path: Path) -> None:
    from probe.test_runner import _chains
    from rlvitals.probe import ProbeOptions, run_probe

    chains, options = _chains(), ProbeOptions(max_tokens=8)
    with serving(follows_reasoning) as (url, clean_seen):
        clean = run_probe(chains, HttpBackend(url, "m"), options)
    answered, reply = _dying(after=9)
    cache = Cache(tmp_path / "c.sqlite")
    with serving(reply) as (url, _), pytest.raises(ProbeError, match="no answer after 2 tries"):
        run_probe(chains, Cached(HttpBackend(url, "m", retries=1, sleep=lambda s: None, concurrency=4), cache),
                  options)
    assert len(answered) == 9 and cache.stored == 9  # every reply that arrived is kept
    with serving(follows_reasoning) as (url, seen):
        again = run_probe(chains, Cached(HttpBackend(url, "m"), cache), options)
    cache.close()
    assert len(seen) == len({orjson.dumps(b, option=orjson.OPT_SORT_KEYS) for b in clean_seen}) - 9
    assert again["faithfulness"] == clean["faithfulness"] and again["probes"] == clean["probes"]


def test_the_cli_says_where_the_replies_of_a_cut_run_are_kept(tmp_path: Path) -> None:
    import io

    from rlvitals.cli import main
    from rlvitals.rollout import write_verl_dump

    write_verl_dump([{"prompt": "Ann has 2 apples and gets 3 more. How many?", "response": "2 + 3 = 5. The answer "
                      "is 5.", "score": 1.0, "target": "5"}], tmp_path / "r", 1)
    _, reply = _dying(after=3)
    for lang, said in (("en", "the 3 replies received are kept in"), ("zh", "已收到的 3 条回复保存在")):
        cache = tmp_path / f"{lang}.sqlite"
        out, err = io.StringIO(), io.StringIO()
        with serving(reply) as (url, _):
            code = main(["probe", str(tmp_path / "r"), "--base-url", url, "--model", "m", "--retries", "0",
                         "--cache", str(cache), "--lang", lang], out, err)
        assert code == 2 and said in err.getvalue() and str(cache) in err.getvalue(), err.getvalue()
        _, reply = _dying(after=3)

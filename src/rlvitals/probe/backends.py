"""Where the probes' generations come from: any OpenAI-compatible HTTP endpoint (vLLM, SGLang, llama.cpp
server, TGI, ``transformers serve``), with a concurrency limit, retries with backoff and timeouts, and a cache
keyed by (model, request) so that a re-run costs nothing. The in-process model is :mod:`.local`.

Only the standard library speaks HTTP here (``urllib``), so probing needs no extra package.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

import orjson

from .._sqlite import connect_wal
from ..errors import ProbeError
from ..words import Words
from ._http import Retry, post
from .prompts import Reply, Request, logprob_of

#: what to check when a generator does not answer (the end of :func:`._http.post`'s message)
_NO_ANSWER = Words("is the server running, and is --base-url its OpenAI-compatible root (ending in /v1)?",
                   "服务器是否在运行？--base-url 是否为它的 OpenAI 兼容根地址（以 /v1 结尾）？")

__all__ = ["Backend", "Cache", "Cached", "HttpBackend"]


class Backend(Protocol):
    """Generates the reply text of each request, in order."""

    model: str

    def generate(self, requests: Sequence[Request]) -> list[str]: ...


class HttpBackend:
    """An OpenAI-compatible server at ``base_url`` (``http://host:8000/v1``: the ``/chat/completions`` and
    ``/completions`` routes are under it). ``api_key`` defaults to ``$OPENAI_API_KEY``. Each request gets
    ``timeout`` seconds; a refused connection, a timeout or a status in :data:`._http.RETRY_STATUSES` is tried
    ``retries`` more times, waiting ``backoff · 2^i`` seconds (``sleep`` is injectable for tests)."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 120.0,
                 retries: int = 3, backoff: float = 0.5, concurrency: int = 4,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if concurrency < 1 or retries < 0 or timeout <= 0:
            raise ProbeError(Words(f"--concurrency {concurrency}, --retries {retries}, --timeout {timeout}: "
                                   "expected at least 1 concurrent request, 0 or more retries and a timeout above 0",
                                   f"--concurrency {concurrency}、--retries {retries}、--timeout {timeout}："
                                   "并发请求数至少为 1，重试次数不能为负，超时必须大于 0"))
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout, self.retries, self.backoff, self.concurrency = timeout, retries, backoff, concurrency
        self.sleep = sleep

    def _url(self, request: Request) -> str:
        return f"{self.base_url}/{'chat/completions' if request.api == 'chat' else 'completions'}"

    def _post(self, request: Request) -> bytes:
        url = self._url(request)
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = orjson.dumps(request.body(self.model))
        return post(url, data, headers, Retry(self.retries, self.backoff, self.timeout, self.sleep), _NO_ANSWER)

    def _text(self, request: Request) -> str:
        raw = self._post(request)
        try:
            choice = orjson.loads(raw)["choices"][0]
            text = choice["message"]["content"] if request.api == "chat" else choice["text"]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
            raise ProbeError(Words(f"{self._url(request)}: the reply is not an OpenAI-compatible "
                                   f"{'chat completion' if request.api == 'chat' else 'completion'}: "
                                   f"{raw[:200].decode('utf-8', 'replace')}",
                                   f"{self._url(request)}：回复不是 OpenAI 兼容的"
                                   f"{'chat completion' if request.api == 'chat' else 'completion'}："
                                   f"{raw[:200].decode('utf-8', 'replace')}")) from None
        total = _logprob(choice, request) if request.logprobs else None
        return str(text or "") if total is None else Reply(str(text or ""), total)

    def generate(self, requests: Sequence[Request]) -> list[str]:
        """The replies in order; when one cannot be had, :class:`Interrupted` with the replies that did arrive."""
        got: dict[int, str] = {}
        failed: ProbeError | None = None
        if len(requests) <= 1 or self.concurrency == 1:
            for i, r in enumerate(requests):
                try:
                    got[i] = self._text(r)
                except ProbeError as exc:
                    failed = exc
                    break
        else:
            with ThreadPoolExecutor(self.concurrency, thread_name_prefix="rlvitals-probe") as pool:
                futures = [pool.submit(self._text, r) for r in requests]
                for i, future in enumerate(futures):
                    try:
                        got[i] = future.result()
                    except ProbeError as exc:
                        failed = failed or exc
        if failed is not None:
            raise Interrupted(failed.args[0], got) from None
        return [got[i] for i in range(len(requests))]


class Interrupted(ProbeError):
    """A batch cut off by a failed request (its message is that request's); ``replies`` are those that did
    arrive, by their place in the batch, for the cache to keep."""

    def __init__(self, message: str, replies: dict[int, str]) -> None:
        super().__init__(message)
        self.replies = replies


def _logprob(choice: object, request: Request) -> float | None:
    """The sum of the reply's token log-probabilities in an OpenAI-compatible choice (completions:
    ``logprobs.token_logprobs``; chat: ``logprobs.content[].logprob``), or None when the server gave none."""
    got = choice.get("logprobs") if isinstance(choice, dict) else None
    if not isinstance(got, dict):
        return None
    raw = got.get("content") if request.api == "chat" else got.get("token_logprobs")
    if not isinstance(raw, list) or not raw:
        return None
    values = [t.get("logprob") for t in raw if isinstance(t, dict)] if request.api == "chat" else raw
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    whole = len(numbers) == len(raw) and all(math.isfinite(v) for v in numbers)  # a token without one: no total
    return sum(numbers) if whole else None


_TABLES = ("CREATE TABLE IF NOT EXISTS schema (version INTEGER NOT NULL)",
           "CREATE TABLE IF NOT EXISTS reply (key TEXT PRIMARY KEY, text TEXT NOT NULL)",
           # a reply's log-probability, when the request asked for it and the server gave it
           "CREATE TABLE IF NOT EXISTS logprob (key TEXT PRIMARY KEY, value REAL NOT NULL)")


class Cache:
    """Replies by request key, in one SQLite file (WAL, safe for two probes at once)."""

    def __init__(self, path: Path) -> None:
        try:
            self.db = connect_wal(path, _TABLES, threads=True)
        except (sqlite3.Error, OSError) as exc:
            raise ProbeError(Words(f"{path}: the probe cache cannot be opened ({exc}); give another with --cache",
                                   f"{path}：无法打开探针缓存（{exc}）；请用 --cache 指定另一个文件")) from None
        self.lock = threading.Lock()
        self.hits = self.misses = self.stored = 0

    def get(self, key: str) -> str | None:
        """The reply kept for ``key`` (a :class:`Reply` when its log-probability was kept too), or None."""
        with self.lock:
            row = self.db.execute("SELECT reply.text, logprob.value FROM reply LEFT JOIN logprob USING (key) "
                                  "WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return str(row[0]) if row[1] is None else Reply(str(row[0]), float(row[1]))

    def put(self, key: str, text: str) -> None:
        total = logprob_of(text)
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO reply (key, text) VALUES (?, ?)", (key, str(text)))
            self.stored += 1
            if total is not None:
                self.db.execute("INSERT OR REPLACE INTO logprob (key, value) VALUES (?, ?)", (key, total))

    def close(self) -> None:
        self.db.close()


class Cached:
    """``backend`` behind ``cache``: only requests never answered before are sent (in one batch)."""

    def __init__(self, backend: Backend, cache: Cache) -> None:
        self.backend, self.cache, self.model = backend, cache, backend.model

    def generate(self, requests: Sequence[Request]) -> list[str]:
        keys = [r.key(self.model) for r in requests]
        known = {k: t for k in dict.fromkeys(keys) if (t := self.cache.get(k)) is not None}
        todo = {k: r for k, r in zip(keys, requests, strict=True) if k not in known}  # a repeat is asked once
        self.cache.hits += len(requests) - len(todo)
        self.cache.misses += len(todo)
        asked = list(todo)
        try:
            replies = self.backend.generate(list(todo.values()))
        except Interrupted as exc:  # a server gone mid-run: what it did answer is kept, so a re-run goes on
            for i, text in exc.replies.items():
                self.cache.put(asked[i], text)
            raise
        for key, text in zip(asked, replies, strict=True):
            self.cache.put(key, text)
            known[key] = text
        return [known[k] for k in keys]

"""One JSON POST with retries, shared by the probe's HTTP clients (the OpenAI-compatible generator and the
pooling reward scorer): a refused connection, a timeout or a busy status is tried again after ``backoff · 2^i``
seconds; any other status, or the last failure, is a :class:`ProbeError` naming the URL."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import ProbeError
from ..words import Words

#: statuses that mean "busy or briefly down, ask again": timeout, conflict, rate limit, server errors
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Retry:
    """How a client asks again: ``retries`` more tries after the first, ``backoff · 2^i`` seconds apart,
    waiting with ``sleep`` (injected, so tests do not wait)."""

    retries: int
    backoff: float
    timeout: float
    sleep: Callable[[float], None]


def post(url: str, data: bytes, headers: Mapping[str, str], retry: Retry, hint: Words,
         on_try: Callable[[], None] = lambda: None) -> bytes:
    """The body of the server's answer to POSTing ``data`` to ``url``; ``hint`` ends the message when no
    answer came (what to check: is the server there, is the URL its root); ``on_try`` is called before each
    try (a client counting its requests).

    Example:
        >>> r = Retry(retries=1, backoff=0.0, timeout=0.5, sleep=lambda s: None)
        >>> try:
        ...     post("http://127.0.0.1:9/x", b"{}", {}, r, Words("is it up?", "它在运行吗？"))
        ... except ProbeError as e:
        ...     print(str(e).split(" (")[0], str(e).endswith("is it up?"))
        http://127.0.0.1:9/x: no answer after 2 tries True
    """
    for attempt in range(retry.retries + 1):
        on_try()
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data, dict(headers), method="POST"),
                                        timeout=retry.timeout) as reply:
                return bytes(reply.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            if exc.code not in RETRY_STATUSES or attempt == retry.retries:
                raise ProbeError(Words(f"{url}: the server answered HTTP {exc.code}: {detail}",
                                       f"{url}：服务器返回 HTTP {exc.code}：{detail}")) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            if attempt == retry.retries:
                reason = getattr(exc, "reason", exc)
                raise ProbeError(Words(f"{url}: no answer after {retry.retries + 1} tries ({reason}); {hint}",
                                       f"{url}：尝试 {retry.retries + 1} 次仍无响应（{reason}）；{hint.zh}")) from None
        retry.sleep(retry.backoff * 2 ** attempt)
    raise AssertionError("unreachable")  # pragma: no cover

"""Compressed answers: what the dashboard sends a browser that accepts ``br`` or ``gzip``.

Pages, scripts, stylesheets and JSON are text that shrinks three- to tenfold; a run page with its Plotly crosses
the wire in a quarter of its bytes or less. ``br`` (Brotli) is offered only when the ``brotli`` module can be
imported (it is not a dependency of rlvitals); ``gzip`` always (the standard library). A body under
``MIN_SIZE`` bytes is sent as it is: it fits in a packet either way. Every answer of a compressible type says
``Vary: Accept-Encoding``, compressed or not, so no cache between hands a compressed body to a client that did
not ask for one.

:class:`Compression` is the ASGI middleware for what the routes compute (at a fast level: a page is made per
request); the static route compresses its fixed files once, at the best level that still takes well under a
second (:func:`compress` with ``best=True``), and the middleware leaves an answer that already has a
``Content-Encoding`` alone.
"""

from __future__ import annotations

import gzip
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from functools import lru_cache
from typing import Any

MIN_SIZE = 1024
#: the media types compressed: the pages, their scripts and styles, the API's JSON
COMPRESSIBLE = ("text/html", "text/javascript", "application/javascript", "text/css", "application/json")
#: (fast, best) levels: a page made per request is compressed fast; a static file once, at the best level that
#: still takes under a quarter of a second for Plotly (Brotli 10 and 11 take two seconds and more for 7 % less)
LEVELS = {"br": (5, 9), "gzip": (6, 9)}

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


@lru_cache(maxsize=1)
def offered() -> tuple[str, ...]:
    """The encodings this server can write, preferred first: ``br`` when ``brotli`` is importable, ``gzip``."""
    try:
        import brotli  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return ("gzip",)
    return ("br", "gzip")


def pick(accept: str | None, encodings: Sequence[str]) -> str | None:
    """The encoding to answer a request whose ``Accept-Encoding`` is ``accept`` with, among ``encodings``
    (preferred first), or None for the body as it is. The highest ``q`` wins, ties go to the earlier of
    ``encodings``; ``q=0`` refuses one; ``*`` stands for any not named.

    Example:
        >>> pick("gzip, deflate, br", ("br", "gzip")), pick("gzip;q=0.5, br;q=0", ("br", "gzip"))
        ('br', 'gzip')
        >>> pick(None, ("gzip",)), pick("identity", ("gzip",)), pick("*;q=0.1", ("gzip",))
        (None, None, 'gzip')
    """
    if not accept:
        return None
    weights: dict[str, float] = {}
    for part in accept.split(","):
        name, _, params = part.strip().partition(";")
        q = 1.0
        key, _, value = params.strip().partition("=")
        if key.strip().lower() == "q":
            try:
                q = float(value)
            except ValueError:
                q = 0.0  # a q that is not a number accepts nothing: never guess a client can decode
        weights[name.strip().lower()] = q
    best = max(encodings, key=lambda e: (weights.get(e, weights.get("*", 0.0)), -encodings.index(e)), default=None)
    if best is None or weights.get(best, weights.get("*", 0.0)) <= 0:
        return None
    return best


def compressible(content_type: str | None) -> bool:
    """Whether a body of ``content_type`` is text worth compressing.

    Example:
        >>> compressible("text/html; charset=utf-8"), compressible("image/png"), compressible(None)
        (True, False, False)
    """
    return content_type is not None and content_type.split(";")[0].strip().lower() in COMPRESSIBLE


def compress(body: bytes, encoding: str, *, best: bool = False) -> bytes:
    """``body`` in ``encoding`` (``br`` or ``gzip``, the latter without a timestamp: the same body gives the same
    bytes); ``best``: the slower, smaller level for a file compressed once.

    Example:
        >>> gzip.decompress(compress(b"a" * 2000, "gzip")) == b"a" * 2000
        True
    """
    level = LEVELS[encoding][best]
    if encoding == "br":
        import brotli  # type: ignore[import-untyped, import-not-found, unused-ignore]

        return bytes(brotli.compress(body, quality=level, mode=brotli.MODE_TEXT))
    return gzip.compress(body, compresslevel=level, mtime=0)


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    return next((v for k, v in headers if k.lower() == name), None)


def vary(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` (raw ASGI pairs) with ``Accept-Encoding`` in their ``Vary``, once.

    Example:
        >>> vary([(b"vary", b"Cookie")])
        [(b'vary', b'Cookie, Accept-Encoding')]
    """
    old = _header(headers, b"vary")
    if old is not None and b"accept-encoding" in old.lower():
        return headers
    rest = [(k, v) for k, v in headers if k.lower() != b"vary"]
    return [*rest, (b"vary", old + b", Accept-Encoding" if old else b"Accept-Encoding")]


class Compression:
    """ASGI middleware: the answers of ``app`` compressed for a client that accepts it (see the module docstring).
    The body of a compressible answer is gathered whole first (the routes answer whole bodies; FastAPI's own
    middleware hands them on in parts); any other answer passes as it comes."""

    def __init__(self, app: ASGIApp, minimum: int = MIN_SIZE) -> None:
        self.app, self.minimum = app, minimum

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        accept = _header(list(scope.get("headers", ())), b"accept-encoding")
        encoding = pick(accept.decode("latin-1") if accept else None, offered())
        start: Message | None = None
        parts: list[bytes] = []

        async def answer(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", ())]
                kind = _header(headers, b"content-type")
                if compressible(kind.decode("latin-1") if kind else None):
                    start = {**message, "headers": vary(headers)}  # held until the whole body is here
                    return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            parts.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                await self._send(start, b"".join(parts), encoding, send)

        await self.app(scope, receive, answer)

    async def _send(self, start: Message, data: bytes, encoding: str | None, send: Send) -> None:
        headers = list(start["headers"])
        if (encoding is not None and len(data) >= self.minimum and _header(headers, b"content-encoding") is None
                and start["status"] not in (204, 304)):
            data = compress(data, encoding)
            headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
            headers += [(b"content-encoding", encoding.encode()), (b"content-length", str(len(data)).encode())]
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": data, "more_body": False})


__all__ = ["COMPRESSIBLE", "Compression", "MIN_SIZE", "compress", "compressible", "offered", "pick", "vary"]

"""Compressed answers and cache headers of the dashboard, over a real log: gzip (and br when the brotli module is
there) exactly when the request accepts it, bodies that decode to the very bytes of the plain answer, Vary on
every compressible answer, tiny bodies left alone; static files immutable under their digest and revalidated
(304) without it; pages and the API never cached; and the same over a real uvicorn server with urllib."""

from __future__ import annotations

import gzip
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REAL
from fastapi.testclient import TestClient

from rlvitals.report import plotly_bundle
from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, create_app, run_id
from rlvitals.server.compress import MIN_SIZE, compress, offered, pick, vary
from rlvitals.server.page import PLOTLY_PATH

LOG = "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log"
IMMUTABLE = "max-age=31536000, immutable"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    w = Workspace([REAL / LOG], ServeState(tmp_path_factory.mktemp("state") / "serve.sqlite"), WorkspaceOptions())
    w.poll_once()
    yield w
    w.close()


@pytest.fixture(scope="module")
def client(ws: Workspace) -> TestClient:
    return TestClient(create_app(ws), base_url="http://127.0.0.1")


def raw(client: TestClient, url: str, accept: str) -> tuple[dict[str, str], bytes]:
    """The headers and the bytes as they crossed the wire (httpx would otherwise decode them)."""
    with client.stream("GET", url, headers={"Accept-Encoding": accept}) as r:
        assert r.status_code == 200, url
        return dict(r.headers), b"".join(r.iter_raw())


def decoded(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(body)
    import brotli  # type: ignore[import-untyped, import-not-found, unused-ignore]

    return bytes(brotli.decompress(body))


def page_url() -> str:
    return f"/runs/{run_id(str((REAL / LOG).resolve()))}"


ENCODINGS = [pytest.param("gzip", id="gzip"), pytest.param(
    "br", id="br", marks=pytest.mark.skipif("br" not in offered(), reason="the brotli module is not installed"))]


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("url", ["page", "/", "api", "/static/report.js", "/static/report.css",
                                 "/static/plotly.min.js"])
def test_compressed_exactly_when_accepted_and_decodes_to_the_same_bytes(client: TestClient, url: str,
                                                                         encoding: str) -> None:
    url = {"page": page_url(), "api": "/api" + page_url()}.get(url, url)  # the run page, the run's diagnosis
    plain_headers, plain = raw(client, url, "identity")
    headers, body = raw(client, url, f"{encoding}, deflate")
    assert "content-encoding" not in plain_headers and len(plain) >= MIN_SIZE
    assert headers["content-encoding"] == encoding and int(headers["content-length"]) == len(body)
    assert decoded(body, encoding) == plain and len(body) < len(plain) / 2
    for h in (headers, plain_headers):  # both variants say they vary, so no cache hands one for the other
        assert "accept-encoding" in h["vary"].lower()
        assert h["x-content-type-options"] == "nosniff" and "content-security-policy" in h  # the guard's headers kept


def test_no_accept_encoding_or_a_refused_one_gets_the_plain_body(client: TestClient) -> None:
    _, plain = raw(client, page_url(), "identity")
    for accept in ("", "gzip;q=0", "br;q=0, gzip;q=0", "compress, deflate"):
        headers, body = raw(client, page_url(), accept)
        assert "content-encoding" not in headers and body == plain, accept


def test_tiny_and_empty_bodies_are_sent_as_they_are(client: TestClient) -> None:
    events = client.get("/api/events", params={"after": 10**9}, headers={"Accept-Encoding": "gzip"})
    assert len(events.content) < MIN_SIZE and "content-encoding" not in events.headers
    assert "accept-encoding" in events.headers["vary"].lower()
    favicon = client.get("/favicon.ico", headers={"Accept-Encoding": "gzip"})
    assert favicon.status_code == 204 and "content-encoding" not in favicon.headers


def test_static_files_are_immutable_under_their_digest_and_revalidated_without(client: TestClient) -> None:
    bundle = plotly_bundle()
    assert PLOTLY_PATH.endswith(f"/static/plotly.min.js?v={bundle.digest}")
    html = client.get(page_url()).text
    assert html.count(f'src="{PLOTLY_PATH}"') == 1 and html.count(f'href="{PLOTLY_PATH}"') == 1  # preload, script
    pinned = client.get(PLOTLY_PATH)
    assert pinned.headers["cache-control"] == IMMUTABLE and pinned.content == bundle.text.encode("utf-8")
    assert pinned.headers["etag"] == f'W/"{bundle.digest}"'
    for url in ("/static/plotly.min.js", "/static/plotly.min.js?v=0123456789abcdef", "/static/live.js"):
        answer = client.get(url)  # an old page's digest, or none: asked again each time, never kept stale
        assert answer.status_code == 200 and answer.headers["cache-control"] == "no-cache", url
        again = client.get(url, headers={"If-None-Match": answer.headers["etag"]})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == answer.headers["etag"]
    changed = client.get("/static/live.js", headers={"If-None-Match": 'W/"0000000000000000"'})
    assert changed.status_code == 200 and len(changed.content) > 0


def test_pages_and_the_api_are_never_cached(client: TestClient) -> None:
    for url in (page_url(), "/", "/api/runs", "/api/events", f"/api/runs/{run_id(str((REAL / LOG).resolve()))}"):
        answer = client.get(url)
        assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store", url
        assert "etag" not in answer.headers


def test_pick_reads_q_values_wildcards_and_refusals() -> None:
    both = ("br", "gzip")
    assert pick("gzip, deflate, br, zstd", both) == "br"
    assert pick("br;q=0.5, gzip", both) == "gzip"
    assert pick("GZIP;Q=1.0", both) == "gzip"
    assert pick("*", both) == "br" and pick("*, br;q=0", both) == "gzip"
    assert pick("gzip;q=nonsense", both) is None
    assert pick("gzip", ("br",)) is None and pick("", both) is None and pick("deflate", both) is None
    assert vary([(b"Vary", b"accept-encoding")]) == [(b"Vary", b"accept-encoding")]
    assert vary([]) == [(b"vary", b"Accept-Encoding")]
    assert gzip.decompress(compress(b"x" * 5000, "gzip", best=True)) == b"x" * 5000
    assert compress(b"x" * 5000, "gzip") == compress(b"x" * 5000, "gzip")  # no timestamp inside


@pytest.mark.process
def test_a_real_server_compresses_over_the_wire(tmp_path: Path) -> None:
    ws = Workspace([REAL / LOG], ServeState(tmp_path / "serve.sqlite"), WorkspaceOptions())
    ws.poll_once()
    try:
        with ServerThread(ws, "127.0.0.1") as srv:
            def get(path: str, accept: str | None) -> tuple[dict[str, str], bytes]:
                request = urllib.request.Request(srv.url.rstrip("/") + path)
                if accept is not None:
                    request.add_header("Accept-Encoding", accept)
                with urllib.request.urlopen(request, timeout=60) as r:  # urllib never decodes: the wire's bytes
                    return {k.lower(): v for k, v in r.headers.items()}, r.read()

            for path in (page_url(), PLOTLY_PATH):
                plain_headers, plain = get(path, None)
                headers, body = get(path, "gzip")
                assert "content-encoding" not in plain_headers and headers["content-encoding"] == "gzip"
                assert gzip.decompress(body) == plain and len(body) < len(plain) / 2
                assert headers["vary"] == plain_headers["vary"] == "Accept-Encoding"
    finally:
        ws.close()

"""Shared test fixtures: where the real logs are, and small helpers."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# CI replays the same examples every run (a rare random example must not flake a submission);
# local runs keep exploring new ones
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
REAL = SHARED / "fixtures" / "real"
REF = SHARED / "fixtures" / "ref"


@pytest.fixture
def real() -> Path:
    """The folder of real public training logs (../shared/fixtures/real beside the clone)."""
    if not REAL.is_dir():
        pytest.skip(f"real fixtures not found at {REAL}; CI lays ../shared beside the clone")
    return REAL


class _Hook(BaseHTTPRequestHandler):
    """Records each POST as (Content-Type, JSON body) and answers the next queued (code, headers, body),
    else ``server.code`` with "ok"."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        server: Any = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.received.append((self.headers["Content-Type"], body))
        code, headers, payload = server.answers.pop(0) if server.answers else (server.code, {}, b"ok")
        self.send_response(code)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet: the tests read what arrived, not the access log."""


@pytest.fixture
def hook() -> Iterator[Any]:
    """A real local HTTP server receiving webhooks: ``received`` [(content type, body)], ``code`` (the
    default answer), ``answers`` (queued answers first), ``url``."""
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.received, server.answers, server.code = [], [], 200
    server.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()

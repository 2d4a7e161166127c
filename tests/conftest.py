"""Shared test fixtures: where the real logs are, and small helpers."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
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

#: what the tests marked browser, model, trl, ray or tracker need; with RLVITALS_TEST_LIGHT=1 importing any of them
#: fails, which proves that the fast inner loop (-m "not browser and not model and not trl and not slow and not ray
#: and not tracker and not process") needs none
HEAVY = ("torch", "transformers", "sentence_transformers", "trl", "playwright", "gguf", "accelerate",
         "ray", "wandb", "mlflow", "swanlab", "trackio", "clearml", "aim")


class _Blocked(importlib.abc.Loader):
    """Found (so that a library asking whether it is installed still gets an answer), but never loaded."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: object) -> None:
        # as when it is not installed: pytest.importorskip skips on that error, and only on it
        raise ModuleNotFoundError(f"{getattr(module, '__name__', module)} is blocked: RLVITALS_TEST_LIGHT=1 runs the "
                          "tests that need no model, browser, Ray or tracker SDK")


class _NoHeavy(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name.split(".")[0] in HEAVY:
            return importlib.machinery.ModuleSpec(name, _Blocked())
        return None


if os.environ.get("RLVITALS_TEST_LIGHT"):
    sys.meta_path.insert(0, _NoHeavy())

# one pytest-xdist worker per core (scripts/test runs two): a worker's torch and BLAS take one thread, or two
# workers' OpenMP pools spin against each other on two cores (a model test took 3.6× as long). Set before any
# test imports torch; the processes a test starts inherit it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

#: the marks of a costly test; files holding one are handed out first
COSTLY = ("slow", "model", "trl", "ray", "browser")


#: a costly test against any other, roughly, as measured on two cores (a browser test ~6 s, the rest ~0.2 s)
COSTLY_WEIGHT, PLAIN_WEIGHT = 5.0, 0.2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The costliest files first (by their costly and plain tests' rough weights), each file's tests in their own
    order: pytest-xdist hands whole files to the workers in this order (``--dist loadfile``), so the suite ends on
    short files on both workers rather than on one long file on one of them while the other waits."""
    cost: dict[Path, float] = {}
    for item in items:
        heavy = any(item.get_closest_marker(mark) for mark in COSTLY)
        cost[item.path] = cost.get(item.path, 0.0) + (COSTLY_WEIGHT if heavy else PLAIN_WEIGHT)
    items.sort(key=lambda item: -cost[item.path])  # a stable sort: a file's tests keep their order


ROOT = Path(__file__).resolve().parents[1]
#: the real public training logs (each with a .source.txt sidecar: repository, commit, licence), and
#: reference values of other tools; see tests/fixtures/real/README.md
REAL = ROOT / "tests" / "fixtures" / "real"
REF = ROOT / "tests" / "fixtures" / "ref"


@pytest.fixture
def real() -> Path:
    """The folder of real public training logs (tests/fixtures/real)."""
    return REAL


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Real headless Chromium, one per test module (tests/browser.py: skipped with the install command when it is
    missing, a failure under CI)."""
    from browser import launch

    yield from launch()


@pytest.fixture
def tab(browser: Any) -> Iterator[Any]:
    """A 1400 × 900 page of ``browser`` recording its console errors and failed requests (:class:`browser.Tab`)."""
    from browser import Tab

    t = Tab(browser)
    yield t
    t.close()


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

"""A light page: the report and the dashboard's run page with Plotly's basic bundle and compression, against the
full Plotly bundle sent as it is (what rlvitals did before) measured in the same run.

Run:  python benchmarks/bench_page.py [--repeat N] [--log PATH] [--no-record]

On a real corpus run (a veRL PPO log by default), printed:

- report:  the size of ``rlvitals report``'s file with the basic bundle inlined, against the same report with
  the full bundle (``plotly.offline.get_plotlyjs()``) inlined instead;
- wire:    the bytes a browser receives for the dashboard's run page and everything it loads from the server
  (the page, Plotly, the scripts and stylesheets it names), fetched with urllib from a real ``rlvitals serve``
  started as a subprocess on a free port: without Accept-Encoding, with ``gzip``, and with ``br`` when the
  brotli module is there; the baseline is the page sent plain with the full bundle in place of the basic one;
- headline: the time from the navigation's start to the headline (``.rlv-cause[data-root=headline]``, else
  ``#story``) being visible, and to the first chart drawn, in real Chromium (a fresh browser context each
  time: nothing cached), ``performance.now()`` read in the page at the first frame that shows it; for the
  report file with each bundle inlined, and for the served run page: as served (the basic bundle, compressed),
  and as before (the page's Plotly request sent on to a plain stdlib HTTP server on loopback that answers with
  the full bundle, uncompressed, as ``rlvitals serve`` did). Medians of ``--repeat`` runs, the pages in turn.

Ratios are light / baseline (lower is better); the figures go to benchmarks/results/bench_page.jsonl.
"""

from __future__ import annotations

import argparse
import http.server
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from _record import Figure, record  # noqa: E402

import rlvitals  # noqa: E402
from rlvitals.diagnosis import diagnose  # noqa: E402
from rlvitals.report import build_page, plotly_bundle, render_html  # noqa: E402
from rlvitals.server.compress import offered  # noqa: E402
from rlvitals.server.page import PLOTLY_PATH  # noqa: E402

LOG = HERE / "corpus" / "runs" / "verl__verl-data__qwen2.5-0.5b-ppo-gsm8k-resp256" / \
    "Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538.log"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
#: runs in the page before its own scripts: the time of the first frame that shows the headline, and the first chart
WATCH = """(() => {
  const seen = {};
  function visible(el) {
    return el && el.getBoundingClientRect().height > 0 && getComputedStyle(el).visibility !== 'hidden';
  }
  function look() {
    const head = document.querySelector('.rlv-cause[data-root=headline]') || document.getElementById('story');
    if (seen.headline === undefined && visible(head)) { seen.headline = performance.now(); }
    const chart = document.querySelector('.js-plotly-plot .main-svg');
    if (seen.chart === undefined && chart) { seen.chart = performance.now(); }
    if (seen.headline === undefined || seen.chart === undefined) { requestAnimationFrame(look); }
  }
  window.__rlvSeen = seen;
  requestAnimationFrame(look);
})();"""


def full_bundle() -> str:
    from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

    return str(get_plotlyjs())


def inline(js: str) -> str:
    return js.replace("</", "<\\/")  # as the report inlines a script


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch(url: str, accept: str | None) -> tuple[int, bytes, dict[str, str]]:
    """Bytes received for ``url`` (urllib never decodes a body: these are the wire's), the decoded body, headers."""
    request = urllib.request.Request(url)
    if accept is not None:
        request.add_header("Accept-Encoding", accept)
    with urllib.request.urlopen(request, timeout=120) as r:
        body = r.read()
        headers = {k.lower(): v for k, v in r.headers.items()}
    encoding = headers.get("content-encoding")
    if encoding == "gzip":
        import gzip

        return len(body), gzip.decompress(body), headers
    if encoding == "br":
        import brotli  # type: ignore[import-untyped]

        return len(body), bytes(brotli.decompress(body)), headers
    return len(body), body, headers


def wait_ready(base: str, timeout: float = 300.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            runs = orjson.loads(fetch(base + "/api/runs", None)[1])["runs"]
            if runs and runs[0]["status"] == "ready":
                return str(runs[0]["id"])
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"rlvitals serve on {base} did not list a ready run within {timeout:.0f} s")


def assets(html: str) -> list[str]:
    """What the run page loads from the server, in its order."""
    import re

    return list(dict.fromkeys(re.findall(r'(?:src|href)="(/static/[^"]+)"', html)))


def wire(base: str, rid: str) -> dict[str, int]:
    """Bytes over the wire for the run page and its assets, per Accept-Encoding; ``baseline``: all sent plain with
    the full Plotly in place of the basic one."""
    _, page, _ = fetch(f"{base}/runs/{rid}", None)
    urls = [f"/runs/{rid}", *assets(page.decode("utf-8"))]
    assert PLOTLY_PATH in urls, urls
    out: dict[str, int] = {}
    for name, accept in [("plain", None), ("gzip", "gzip"), *([("br", "br")] if "br" in offered() else [])]:
        total = 0
        for url in urls:
            size, body, headers = fetch(base + url, accept)
            if name != "plain":
                assert headers.get("content-encoding") == name or size < 1024, (url, headers)
            total += size
        out[name] = total
    plotly_plain = len(plotly_bundle().text.encode("utf-8"))
    out["baseline"] = out["plain"] - plotly_plain + len(full_bundle().encode("utf-8"))
    return out


class Before(http.server.ThreadingHTTPServer):
    """The full bundle sent as rlvitals sent it before: plain, over loopback, from a thread."""

    def __init__(self, body: bytes) -> None:
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                served.hits += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/javascript")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.hits = 0
        self.url = f"http://127.0.0.1:{self.server_address[1]}/plotly.min.js"
        threading.Thread(target=self.serve_forever, daemon=True).start()


def headline(browser: Any, url: str, plotly: str | None) -> tuple[float, float]:
    """(headline visible, first chart drawn), ms from the navigation's start, in a fresh context; ``plotly``: where
    the page's Plotly request is sent on to (the baseline of a served page), or None."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        if plotly is not None:
            context.route("**/static/plotly.min.js*", lambda route: route.continue_(url=plotly))
        context.add_init_script(WATCH)
        tab = context.new_page()
        tab.goto(url, wait_until="commit", timeout=600_000)
        tab.wait_for_function("() => window.__rlvSeen && window.__rlvSeen.headline !== undefined && "
                              "window.__rlvSeen.chart !== undefined", timeout=600_000)
        seen = tab.evaluate("() => window.__rlvSeen")
        return float(seen["headline"]), float(seen["chart"])
    finally:
        context.close()


def timings(browser: Any, pages: dict[str, tuple[str, str | None]], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (headline, chart) per page, the pages taken in turn ``repeat`` times (after one warm-up each)."""
    for url, plotly in pages.values():
        headline(browser, url, plotly)
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in pages}
    for _ in range(repeat):
        for name, (url, plotly) in pages.items():
            seen[name].append(headline(browser, url, plotly))
    return {name: (statistics.median(h for h, _ in v), statistics.median(c for _, c in v)) for name, v in seen.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, default=LOG, help="the run to show (default: a veRL PPO run of the corpus)")
    ap.add_argument("--repeat", type=int, default=5, help="Chromium loads per page and bundle (median)")
    ap.add_argument("--no-record", action="store_true", help="do not append the figures to benchmarks/results/")
    args = ap.parse_args()
    run = rlvitals.load(args.log)[0]
    html = render_html(build_page([run], [diagnose(run)]))
    basic, full = plotly_bundle().text, full_bundle()
    full_html = html.replace(inline(basic), inline(full), 1)
    assert full_html != html
    report = (len(html.encode("utf-8")), len(full_html.encode("utf-8")))
    print(f"Plotly: basic {len(basic.encode()) / 1e6:.2f} MB (plotly.js {plotly_bundle().version}), "
          f"full {len(full.encode()) / 1e6:.2f} MB")
    print(f"report  {args.log.name}: {report[0] / 1e6:.2f} MB with the basic bundle, {report[1] / 1e6:.2f} MB with "
          f"the full one: {report[0] / report[1]:.2f}x")

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        light_file, full_file = Path(tmp) / "light.html", Path(tmp) / "full.html"
        light_file.write_text(html, encoding="utf-8")
        full_file.write_text(full_html, encoding="utf-8")
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "rlvitals", "serve", str(args.log), "--port", str(port),
                                   "--state", str(Path(tmp) / "serve.sqlite")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            rid = wait_ready(base)
            sizes = wire(base, rid)
            before = Before(full.encode("utf-8"))
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                times = timings(browser, {
                    "report, basic": (light_file.as_uri(), None), "report, full": (full_file.as_uri(), None),
                    "served, basic": (f"{base}/runs/{rid}", None),
                    "served, full": (f"{base}/runs/{rid}", before.url)}, args.repeat)
                browser.close()
            before.shutdown()
            assert before.hits == args.repeat + 1, f"the baseline's Plotly was asked for {before.hits} times"
        finally:
            server.terminate()
            server.wait(timeout=30)
    figures = report_figures(report, sizes, times)
    if not args.no_record:
        record("bench_page", [a for a in sys.argv[1:] if a != "--no-record"], figures)


def report_figures(report: tuple[int, int], sizes: dict[str, int],
                   times: dict[str, tuple[float, float]]) -> list[Figure]:
    """Print the wire and Chromium figures; the figures to record."""
    base = sizes["baseline"]
    print(f"wire    the run page and its assets: {sizes['plain'] / 1e6:.2f} MB plain, "
          + ", ".join(f"{sizes[e] / 1e6:.2f} MB {e}" for e in ("gzip", "br") if e in sizes)
          + f"; before (full Plotly, plain): {base / 1e6:.2f} MB")
    for e in ("plain", "gzip", "br"):
        if e in sizes:
            print(f"        {e:5s} / before: {sizes[e] / base:.3f}x")
    for name, (head, chart) in times.items():
        print(f"Chromium {name:14s} headline {head:7.0f} ms   first chart {chart:7.0f} ms")
    figures = [Figure("report_size_vs_full", report[0] / report[1], "x", "ratio", "lower"),
               Figure("wire_plain_vs_before", sizes["plain"] / base, "x", "ratio", "lower"),
               Figure("wire_gzip_vs_before", sizes["gzip"] / base, "x", "ratio", "lower")]
    if "br" in sizes:
        figures.append(Figure("wire_br_vs_before", sizes["br"] / base, "x", "ratio", "lower"))
    for where in ("report", "served"):
        (h1, c1), (h0, c0) = times[f"{where}, basic"], times[f"{where}, full"]
        print(f"        {where}: headline basic/full {h1 / h0:.2f}x, first chart basic/full {c1 / c0:.2f}x")
        figures += [Figure(f"{where}_headline_basic_vs_full", h1 / h0, "x", "ratio", "lower"),
                    Figure(f"{where}_first_chart_basic_vs_full", c1 / c0, "x", "ratio", "lower"),
                    Figure(f"{where}_headline_basic_ms", h1 / 1000, "s", "time", "lower")]
    return figures


if __name__ == "__main__":
    main()

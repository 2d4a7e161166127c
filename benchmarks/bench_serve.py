"""Dashboard speed: first paint of a run page in Chromium for a 100k-step × 200-metric run, and the JSON per chart.

Run:  python benchmarks/bench_serve.py [--quick] [--steps N]

The run is the one bench_diagnose.py times (a simulated GRPO run with an entropy collapse, widened to
200 metrics), written once as a veRL JSONL file to benchmarks/_data/ (values at 6 significant digits)
and served by a real uvicorn server on 127.0.0.1. Printed:

- ready:   the workspace reading the file (Follow) and diagnosing it, before any page is asked for;
- page:    the first request of the run page (page model built, HTML rendered) and a cached one;
- Chromium, a fresh tab each time: first-contentful-paint (Performance API) and the time until the
  first chart is drawn, for the first visit (Plotly not cached yet) and later ones, against the time
  Plotly alone takes to load and run in a blank page (the floor of any first chart);
- bytes:   JSON per chart in the page (mean, max, total) and per /api/runs/{id}/series answer, against
  a baseline measured in the same run: the same series un-downsampled as JSON, and the plain full
  report (``rlvitals report``, Plotly inlined).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import polars as pl

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from bench_diagnose import wide_run  # noqa: E402

from rlvitals.report.html import render_html  # noqa: E402
from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def write_log(steps: int) -> Path:
    """The wide run as veRL's file logger writes it: ``{"step": s, "data": {key: value}}`` per line."""
    path = DATA / f"serve_{steps}.jsonl"
    if path.exists():
        return path
    DATA.mkdir(exist_ok=True)
    frame = wide_run(steps).frame
    metrics = [c for c in frame.columns if c != "step"]
    rounded = frame.select(pl.col("step"), *[pl.col(k).round_sig_figs(6) for k in metrics])
    rounded.select(pl.col("step"), pl.struct(metrics).alias("data")).write_ndjson(path)
    return path


def fetch(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:
        body = r.read()
    return time.perf_counter() - t0, len(body)


def paint(browser: Any, url: str) -> tuple[float, float]:
    """(first-contentful-paint, first chart drawn), ms since the navigation started, in a fresh tab."""
    page = browser.new_page()
    try:
        page.goto(url, wait_until="commit", timeout=600_000)
        page.wait_for_selector(".js-plotly-plot", timeout=600_000)
        chart = float(page.evaluate("() => performance.now()"))
        page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0")
        fcp = float(page.evaluate("() => performance.getEntriesByName('first-contentful-paint')[0].startTime"))
        return fcp, chart
    finally:
        page.close()


def plotly_floor(browser: Any, url: str) -> float:
    """ms to load and run Plotly alone in a blank page: the least any first chart can take."""
    page = browser.new_page()
    try:
        page.goto(url)  # the run list: a page of this server without Plotly
        return float(page.evaluate("""() => new Promise(done => { const t0 = performance.now();
            const s = document.createElement('script'); s.src = '/static/plotly.min.js';
            s.onload = () => done(performance.now() - t0); document.body.appendChild(s); })"""))
    finally:
        page.close()


def json_sizes(page_model: dict[str, Any], ws: Workspace, served: Any, url: str) -> None:
    charts = [len(orjson.dumps(c, option=orjson.OPT_SERIALIZE_NUMPY)) for c in page_model["charts"].values()]
    print(f"  page JSON per chart: mean {sum(charts) / len(charts) / 1e3:.1f} kB, max {max(charts) / 1e3:.1f} kB, "
          f"{len(charts)} charts, {sum(charts) / 1e6:.2f} MB in all")
    key = "actor/entropy"
    _, api = fetch(f"{url}api/runs/{served.id}/series?key={key}")
    _, part = fetch(f"{url}api/runs/{served.id}/series?key={key}&start=40000&end=41000&buckets=400")
    x, y = served.run.series(key, train_only=False)
    full = len(orjson.dumps({"x": x.tolist(), "y": [None if v != v else v for v in y.tolist()]}))
    print(f"  /api/runs/{{id}}/series {key}: {api / 1e3:.1f} kB (400 buckets), zoomed 1k steps {part / 1e3:.1f} kB;"
          f" baseline un-downsampled {full / 1e3:.1f} kB ({full / api:.0f}x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k steps instead of 100k")
    ap.add_argument("--steps", type=int, default=None)
    args = ap.parse_args()
    steps = args.steps or (10_000 if args.quick else 100_000)
    t0 = time.perf_counter()
    log = write_log(steps)
    print(f"log {log.name}: {log.stat().st_size / 1e6:.0f} MB ({time.perf_counter() - t0:.1f} s to have it)")

    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace([log], ServeState(Path(tmp) / "s.sqlite"), WorkspaceOptions())
        t0 = time.perf_counter()
        ws.poll_once()
        (summary,) = ws.summaries()
        print(f"ready: read + diagnosed in {time.perf_counter() - t0:.1f} s "
              f"({summary['steps']} steps, verdict {summary['verdict']})")
        served = ws.get(summary["id"])
        from playwright.sync_api import sync_playwright

        with ServerThread(ws, "127.0.0.1") as srv, sync_playwright() as pw:
            url = f"{srv.url}runs/{served.id}"
            cold, size = fetch(url)
            warm, _ = fetch(url)
            print(f"page: first request {cold:.2f} s (page model + HTML), cached {warm * 1e3:.0f} ms, "
                  f"{size / 1e6:.2f} MB of HTML (Plotly served apart, cached by the browser)")
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            ctx = browser.new_context(viewport={"width": 1400, "height": 900})
            first = paint(ctx, url)
            later = [paint(ctx, url) for _ in range(3)]
            fcp, chart = min(p[0] for p in later), min(p[1] for p in later)
            floor = min(plotly_floor(ctx, srv.url) for _ in range(3))
            print(f"Chromium: first visit FCP {first[0]:.0f} ms, first chart {first[1]:.0f} ms; "
                  f"later visits (best of 3) FCP {fcp:.0f} ms, first chart {chart:.0f} ms; "
                  f"baseline: Plotly alone loads and runs in {floor:.0f} ms "
                  f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
            browser.close()
            json_sizes(ws.page(served), ws, served, srv.url)
        t0 = time.perf_counter()
        report = render_html(ws.page(served), cdn=False)
        print(f"  baseline: the plain full report HTML {len(report.encode()) / 1e6:.2f} MB "
              f"(render {time.perf_counter() - t0:.2f} s with the page model cached)")
        ws.close()


if __name__ == "__main__":
    main()

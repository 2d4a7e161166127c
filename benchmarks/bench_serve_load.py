"""``rlvitals serve`` under load on loopback: latency percentiles and errors per route.

Run:  python benchmarks/bench_serve_load.py [--requests 3000] [--clients 16] [--steps 5000]

A real ``rlvitals serve`` process (uvicorn) serves a folder of four simulated veRL GRPO runs
(``--steps`` steps each, one growing while the load runs). ``--clients`` threads, each with its own
keep-alive HTTP connection, send ``--requests`` requests in all, spread over the routes a dashboard
and its users hit: the run list, a run, its findings, a metric's series, the events poll and a run
page. Printed per route: requests, errors (any answer but 200, and any failed connection), p50,
p95, p99 and max latency, against the baseline measured in the same run: a static file of the same
server (``/static/serve.css``), the floor of any answer.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from rlvitals.synthetic.simulate import Scenario, jsonl_lines


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--steps", type=int, default=5000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "runs"
        for i in range(4):
            (folder / f"run{i}").mkdir(parents=True)
            lines = jsonl_lines(Scenario(steps=args.steps, seed=i, collapse_at=args.steps // 2 if i % 2 else None))
            (folder / f"run{i}" / "metrics.jsonl").write_bytes(b"".join(x + b"\n" for x in lines))
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "rlvitals", "serve", str(folder), "--port", str(port),
                                   "--state", str(Path(tmp) / "serve.sqlite")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            ids = _wait_for_runs(base, 4)
            routes = {
                "static (baseline)": lambda r: "/static/serve.css",
                "/api/runs": lambda r: "/api/runs",
                "/api/runs/{id}": lambda r: f"/api/runs/{r.choice(ids)}",
                "/api/runs/{id}/findings": lambda r: f"/api/runs/{r.choice(ids)}/findings",
                "/api/runs/{id}/series": lambda r: f"/api/runs/{r.choice(ids)}/series?key=actor/entropy&buckets=400",
                "/api/events": lambda r: "/api/events?after=0",
                "/runs/{id} (page)": lambda r: f"/runs/{r.choice(ids)}",
            }
            grow = threading.Thread(target=_grow, args=(folder / "run0" / "metrics.jsonl", args.steps), daemon=True)
            grow.start()
            results: dict[str, list[float]] = {name: [] for name in routes}
            errors: dict[str, int] = dict.fromkeys(routes, 0)
            lock = threading.Lock()
            per_client = args.requests // args.clients

            def client(seed: int) -> None:
                rng = random.Random(seed)
                with httpx.Client(base_url=base, timeout=60) as http:
                    for _ in range(per_client):
                        name = rng.choice(list(routes))
                        t0 = time.perf_counter()
                        try:
                            ok = http.get(routes[name](rng)).status_code == 200
                        except httpx.HTTPError:
                            ok = False
                        took = time.perf_counter() - t0
                        with lock:
                            results[name].append(took)
                            errors[name] += not ok

            t0 = time.perf_counter()
            threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
        finally:
            server.terminate()
            server.wait(timeout=30)
    floor = statistics.median(results["static (baseline)"]) or 1e-9
    print(f"{args.clients} clients, {sum(len(v) for v in results.values())} requests in {wall:.1f} s "
          f"({sum(len(v) for v in results.values()) / wall:.0f}/s), 4 runs of {args.steps} steps, one growing")
    print(f"{'route':<26} {'n':>5} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'p50/static':>10}")
    for name, took in results.items():
        ms = [t * 1000 for t in took]
        print(f"{name:<26} {len(ms):>5} {errors[name]:>6} {_pct(ms, .5):>8.1f} {_pct(ms, .95):>8.1f} "
              f"{_pct(ms, .99):>8.1f} {max(ms, default=float('nan')):>8.1f} "
              f"{statistics.median(took) / floor if took else float('nan'):>10.1f}")


def _wait_for_runs(base: str, n: int) -> list[str]:
    for _ in range(1200):
        try:
            runs = httpx.get(f"{base}/api/runs", timeout=5).json()["runs"]
            if len(runs) >= n and all(r["status"] == "ready" for r in runs):
                return [r["id"] for r in runs]
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.25)
    raise SystemExit("the server did not list the runs")


def _grow(log: Path, start: int) -> None:
    """One run keeps growing by a step every 20 ms while the load runs (its page and series change)."""
    lines = list(jsonl_lines(Scenario(steps=start + 3000, seed=0)))[start:]
    with log.open("ab") as fh:
        for line in lines:
            fh.write(line + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
            time.sleep(0.02)


if __name__ == "__main__":
    main()

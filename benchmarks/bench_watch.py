"""``rlvitals watch`` on a log growing at 100 steps/s: alert latency, CPU and memory, against a naive loop.

Run:  python benchmarks/bench_watch.py [--seconds 20] [--interval 0.5]

A writer thread appends a veRL JSONL log and a veRL console log (the same simulated GRPO run,
~60 metrics a step) at 100 steps/s; the entropy collapses at a known step. Two watchers run in
turn, each as its own process, each alerting through a webhook to a real local HTTP server:

- ``rlvitals watch`` (the CLI: byte-window reading, one RunBuilder per log, diagnose per cycle);
- the baseline: a loop that re-runs ``load()`` + ``diagnose()`` on each whole file every cycle,
  with the same alert policy.

For each, it prints the latency from the write of the line that makes the collapse detectable
(found afterwards by bisecting prefixes of the file) to the webhook receiving the alert, the
watcher's CPU seconds per wall second and its peak RSS (both from ``wait4`` of that process).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rlvitals.diagnosis import diagnose  # noqa: E402
from rlvitals.loader import load  # noqa: E402
from rlvitals.simulate import Scenario, console_lines, jsonl_lines  # noqa: E402

RATE = 100  # steps per second
EXTRA = 12  # metrics added to the simulator's ~48 so a step carries ~60
CHECK = "entropy_collapse"


def _lines(steps: int, collapse_at: int) -> tuple[list[bytes], list[bytes], int]:
    """(jsonl lines, console lines, console header lines), one line per step after the header."""
    sc = Scenario(steps=steps, collapse_at=collapse_at, grad_spike_at=None)
    js = []
    for i, raw in enumerate(jsonl_lines(sc)):
        obj = json.loads(raw)
        obj["data"].update({f"timing_s/extra_{k}": 0.01 * (i % 7 + k) for k in range(EXTRA)})
        js.append(json.dumps(obj).encode() + b"\n")
    con = [(line + "\n").encode() for line in console_lines(sc)]
    header = len(con) - steps
    extra = "".join(f" - timing_s/extra_{k}:0.0{k}" for k in range(EXTRA))
    con = con[:header] + [c[:-1] + extra.encode() + b"\n" for c in con[header:]]
    return js, con, header


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server: Any = self.server
        server.received.append((time.time(), body["rlvitals"]))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet."""


def _write(paths: tuple[Path, Path], js: list[bytes], con: list[bytes], header: int, written: list[float]) -> None:
    """Append one step to each log every 1/RATE s, remembering when each step's line was flushed."""
    with paths[0].open("ab") as fj, paths[1].open("ab") as fc:
        fc.write(b"".join(con[:header]))
        fc.flush()
        t0 = time.time()
        for i, (a, b) in enumerate(zip(js, con[header:], strict=True)):
            delay = t0 + i / RATE - time.time()
            if delay > 0:
                time.sleep(delay)
            fj.write(a)
            fc.write(b)
            fj.flush()
            fc.flush()
            written.append(time.time())


def _naive_child(paths: list[str], url: str, interval: float) -> None:
    """The baseline: every cycle, load() and diagnose() each whole file; same policy and sink."""
    from rlvitals.errors import RlvitalsError
    from rlvitals.watch.alerts import Observation, decide
    from rlvitals.watch.sinks import WebhookSink

    sink = WebhookSink(url)
    keys: dict[str, Any] = {}
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.is_set():
        started = time.time()
        observed = []
        for path in paths:
            try:
                run = load(path)[0]
            except RlvitalsError:
                continue
            observed.append(Observation(run.path, int(run.steps[-1]), diagnose(run).findings))
        alerts, keys = decide(keys, observed, started)
        for alert in alerts:
            sink.send(alert)
        stop.wait(max(interval - (time.time() - started), 0.0))


def _trigger(path: Path, lines: list[bytes], header: int) -> int:
    """The first step whose line makes ``CHECK`` warn or fail (bisection over prefixes)."""
    tmp = path.with_suffix(".prefix" + path.suffix)

    def fires(n: int) -> bool:
        tmp.write_bytes(b"".join(lines[: header + n]))
        return any(f.check == CHECK and f.status in ("warn", "fail") for f in diagnose(load(tmp)[0]).findings)

    lo, hi = 1, len(lines) - header
    while lo < hi:
        mid = (lo + hi) // 2
        if fires(mid):
            hi = mid
        else:
            lo = mid + 1
    tmp.unlink()
    return lo


def _one(mode: str, folder: Path, args: argparse.Namespace, data: tuple[list[bytes], list[bytes], int],
         server: Any) -> dict[str, Any]:
    js, con, header = data
    paths = (folder / f"{mode}.jsonl", folder / f"{mode}.log")
    for p in paths:
        p.write_bytes(b"")
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    followed = paths if args.logs == "both" else paths[:1]
    if mode == "watch":
        cmd = [sys.executable, "-m", "rlvitals", "watch", *map(str, followed), "--alert", f"webhook:{url}",
               "--state", str(folder / "w.sqlite"), "--interval", str(args.interval)]
    else:
        cmd = [sys.executable, __file__, "--naive-child", url, str(args.interval), *map(str, followed)]
    server.received.clear()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(3.0)  # imports done before the first line is written
    written: list[float] = []
    t0 = time.time()
    _write(paths, js, con, header, written)
    time.sleep(2.0)  # let the last cycle finish
    proc.send_signal(signal.SIGINT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.time() - t0 + 3.0
    out: dict[str, Any] = {"mode": mode, "cpu": usage.ru_utime + usage.ru_stime, "wall": wall,
                           "rss_mb": usage.ru_maxrss / 1024, "alerts": len(server.received), "latency": {}}
    for received, alert in server.received:
        if alert["check"] != CHECK or alert["kind"] != "new":
            continue
        which = 0 if alert["run"].endswith(".jsonl") else 1
        step = _trigger(paths[which], [js, con][which], [0, header][which])
        out["latency"][Path(alert["run"]).suffix] = (step, alert["step"], received - written[step - 1])
    return out


def _breakdown(folder: Path, js: list[bytes]) -> str:
    """One cycle's parts at the end of the run: what the naive loop pays (load) against what the
    watcher pays (read the last 50 lines + rebuild the Run), and what both pay (diagnose)."""
    from rlvitals.ingest import find_reader
    from rlvitals.watch.sources import LineSource

    log = folder / "cycle.jsonl"
    log.write_bytes(b"".join(js[:-50]))
    src = LineSource(log, find_reader(log))
    src.poll()
    with log.open("ab") as fh:
        fh.write(b"".join(js[-50:]))
    t0 = time.perf_counter()
    src.poll()
    run = src.run()
    t1 = time.perf_counter()
    loaded = load(log)[0]
    t2 = time.perf_counter()
    assert run is not None and run.frame.equals(loaded.frame)
    diagnose(run)
    t3 = time.perf_counter()
    return (f"one cycle at step {len(js)}: naive load() {1000 * (t2 - t1):.0f} ms; watcher read 50 lines + "
            f"rebuild Run {1000 * (t1 - t0):.0f} ms ({(t2 - t1) / (t1 - t0):.0f}x less); diagnose (both) "
            f"{1000 * (t3 - t2):.0f} ms")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--logs", choices=("both", "jsonl"), default="both",
                   help="follow the JSONL and the console log, or the JSONL only")
    p.add_argument("--naive-child", nargs="+", default=None)
    args = p.parse_args()
    if args.naive_child:
        url, interval, *paths = args.naive_child
        _naive_child(paths, url, float(interval))
        return
    steps = int(args.seconds * RATE)
    data = _lines(steps, collapse_at=int(steps * 0.7))
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.received = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    which = "veRL JSONL + console" if args.logs == "both" else "veRL JSONL"
    print(f"log growing at {RATE} steps/s for {args.seconds:.0f} s ({steps} steps, "
          f"{len(json.loads(data[0][0])['data'])} metrics a step), {which} followed; interval {args.interval} s")
    results = []
    with tempfile.TemporaryDirectory(prefix="rlvitals-bench-watch-") as tmp:
        for mode in ("watch", "naive"):
            results.append(_one(mode, Path(tmp), args, data, server))
        breakdown = _breakdown(Path(tmp), data[0])
    for r in results:
        lat = ", ".join(f"{suffix}: trigger step {t}, alerted at step {s}, {1000 * dt:.0f} ms"
                        for suffix, (t, s, dt) in sorted(r["latency"].items())) or "no collapse alert!"
        print(f"{r['mode']:>6}: CPU {r['cpu']:.1f} s / {r['wall']:.1f} s wall = {r['cpu'] / r['wall']:.2f} cores; "
              f"peak RSS {r['rss_mb']:.0f} MB; {r['alerts']} alerts; latency {lat}")
    w, n = results
    print(f"ratio naive/watch: CPU {n['cpu'] / w['cpu']:.2f}x, peak RSS {n['rss_mb'] / w['rss_mb']:.2f}x")
    print(breakdown)


if __name__ == "__main__":
    main()

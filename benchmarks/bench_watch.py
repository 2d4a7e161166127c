"""``rlvitals watch`` on long runs growing at 100 steps/s: line->alert latency, CPU and memory, against a naive loop.

Run:  python benchmarks/bench_watch.py [--prefill 30000] [--seconds 8] [--trials 2] [--sources jsonl,tensorboard]
      [--modes watch,no-tail,naive]

Two sources, each a simulated veRL GRPO run (~60 metrics a step) whose entropy collapses at a
known step of the growing part:

- ``jsonl``: a veRL JSONL log that already holds ``--prefill`` steps (30,000: a long run) when
  the watcher starts, then grows at 100 steps/s;
- ``tensorboard``: a TensorBoard folder (tensorboardX, one flush per step) that holds
  ``--tb-prefill`` steps, then grows at 100 steps/s.

For each source three watchers run in turn, each as its own process, ``--trials`` times each,
alerting through a webhook to a real local HTTP server:

- ``watch``: the ``rlvitals watch`` CLI (window reading of text logs, records kept, full diagnosis
  throttled by its own cost: ``WatchOptions.diagnose_gap``; between two of them, the tail pass:
  the sudden checks on the last 2,000 steps, ``WatchOptions.tail_steps``);
- ``no-tail``: the same with ``--tail-steps 0`` (full diagnoses only: how it was before the tail
  pass);
- ``naive``, the baseline: a loop that re-runs ``load()`` + ``diagnose()`` on the whole source
  every cycle, with the same alert policy and sink.

A trial starts writing once the watcher has gone through what is there (its CPU goes idle, or the
naive loop says its first cycle is done). Latency is from the flush of the step that makes the
collapse detectable (found beforehand by bisecting prefixes of the same records) to the webhook
receiving the alert (and whether the tail pass sent it: its evidence names the window); CPU is
the watcher's CPU seconds per wall second while the source grows (``/proc``); peak RSS is the
process's ``VmHWM``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rlvitals.diagnosis import diagnose  # noqa: E402
from rlvitals.ingest import Record, SourceMeta  # noqa: E402
from rlvitals.run.builder import RunBuilder  # noqa: E402
from rlvitals.synthetic.simulate import Scenario, jsonl_lines  # noqa: E402

RATE = 100  # steps per second
EXTRA = 12  # metrics added to the simulator's ~48 so a step carries ~60
CHECK = "entropy_collapse"
TICK = os.sysconf("SC_CLK_TCK")


def _records(steps: int, collapse_at: int, float32: bool) -> list[dict[str, float]]:
    """One dict of metrics per step (index i is step i + 1)."""
    out = []
    for i, raw in enumerate(jsonl_lines(Scenario(steps=steps, collapse_at=collapse_at, grad_spike_at=None))):
        data = {k: v for k, v in json.loads(raw)["data"].items() if v is not None}
        data.update({f"timing_s/extra_{k}": 0.01 * (i % 7 + k) for k in range(EXTRA)})
        out.append({k: float(np.float32(v)) for k, v in data.items()} if float32 else data)
    return out


def _trigger(rows: list[dict[str, float]], lo: int, fmt: str) -> int:
    """The first step whose record makes ``CHECK`` warn or fail (bisection over prefixes of the
    records, built as a reader would build them)."""
    def fires(n: int) -> bool:
        builder = RunBuilder(SourceMeta(format=fmt))
        for step, row in enumerate(rows[:n], start=1):
            builder.add(Record(step, dict(row), f"#{step}"))
        found = diagnose(builder.finish("prefix")).findings
        return any(f.check == CHECK and f.status in ("warn", "fail") for f in found)

    hi = len(rows)
    while lo < hi:
        mid = (lo + hi) // 2
        if fires(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server: Any = self.server
        server.received.append((time.time(), body["rlvitals"]))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet."""


class _Source:
    """Where the run is written: a JSONL file or a TensorBoard folder."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind = kind
        self.path = folder / ("run.jsonl" if kind == "jsonl" else "tb")
        self._fh: Any = None
        self._tb: Any = None

    def open(self) -> None:
        if self.kind == "jsonl":
            self._fh = self.path.open("ab")
        else:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(str(self.path), flush_secs=3600)

    def write(self, step: int, row: dict[str, float], flush: bool = True) -> None:
        if self._fh is not None:
            self._fh.write(json.dumps({"step": step, "data": row}).encode() + b"\n")
            if flush:
                self._fh.flush()
        else:
            for key, value in row.items():
                self._tb.add_scalar(key, value, step)
            if flush:
                self._tb.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
        if self._tb is not None:
            self._tb.close()


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) of a live process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _wait_ready(proc: subprocess.Popen[bytes], mode: str, timeout: float = 300.0) -> None:
    """Until the watcher has gone through what is there: the naive loop says so; the watcher's CPU
    goes idle for a second."""
    deadline = time.monotonic() + timeout
    if mode == "naive":
        assert proc.stdout is not None
        while time.monotonic() < deadline and b"cycle" not in proc.stdout.readline():
            pass
        return
    last, quiet = _cpu(proc.pid), 0
    while time.monotonic() < deadline and quiet < 4:
        time.sleep(0.25)
        now = _cpu(proc.pid)
        quiet = quiet + 1 if now - last < 0.02 else 0
        last = now


def _naive_child(path: str, url: str, interval: float) -> None:
    """The baseline: every cycle, load() and diagnose() the whole source; same policy and sink."""
    from rlvitals.errors import RlvitalsError
    from rlvitals.live.alerts import Observation, decide
    from rlvitals.run.load import load
    from rlvitals.watch.webhook import WebhookSink

    sink = WebhookSink(url)
    keys: dict[str, Any] = {}
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.is_set():
        started = time.time()
        observed = []
        try:
            run = load(path)[0]
            observed.append(Observation(run.path, int(run.steps[-1]), diagnose(run).findings))
        except RlvitalsError:
            pass
        alerts, keys = decide(keys, observed, started)
        for alert in alerts:
            sink.send(alert)
        print("cycle", flush=True)
        stop.wait(max(interval - (time.time() - started), 0.0))


def _trial(mode: str, kind: str, folder: Path, args: argparse.Namespace, rows: list[dict[str, float]],
           prefill: int, trigger: int, server: Any) -> dict[str, Any]:
    folder.mkdir(parents=True)
    source = _Source(kind, folder)
    source.open()
    for step in range(1, prefill + 1):
        source.write(step, rows[step - 1], flush=step == prefill)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    if mode in ("watch", "no-tail"):
        cmd = [sys.executable, "-m", "rlvitals", "watch", str(source.path), "--alert", f"webhook:{url}",
               "--state", str(folder / "w.sqlite"), "--interval", str(args.interval)]
        cmd += ["--tail-steps", "0"] if mode == "no-tail" else []
    else:
        cmd = [sys.executable, __file__, "--naive-child", url, str(args.interval), str(source.path)]
    server.received.clear()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    _wait_ready(proc, mode)
    written: dict[int, float] = {}
    cpu0, t0 = _cpu(proc.pid), time.time()
    for i, step in enumerate(range(prefill + 1, len(rows) + 1)):
        delay = t0 + i / RATE - time.time()
        if delay > 0:
            time.sleep(delay)
        source.write(step, rows[step - 1])
        written[step] = time.time()
    cpu1, t1 = _cpu(proc.pid), time.time()
    deadline = time.time() + args.tail
    while time.time() < deadline and not _alerted(server):
        time.sleep(0.05)
    source.close()
    peak = _peak_rss_mb(proc.pid)
    proc.send_signal(signal.SIGINT)
    proc.wait()
    got = _alerted(server)
    latency = None if got is None else got[0] - written[trigger]
    tail = got is not None and "tail_window" in got[1].get("evidence", {})
    return {"cpu": (cpu1 - cpu0) / (t1 - t0), "rss_mb": peak, "latency": latency, "tail": tail}


def _peak_rss_mb(pid: int) -> float:
    """The process's peak RSS (VmHWM: since its exec; wait4's ru_maxrss would include the parent's
    size at fork)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _alerted(server: Any) -> tuple[float, dict[str, Any]] | None:
    return next(((t, a) for t, a in server.received if a["check"] == CHECK and a["kind"] == "new"), None)


def _summary(values: list[float]) -> str:
    if not values:
        return "no collapse alert!"
    p95 = float(np.percentile(values, 95))
    return f"median {1000 * statistics.median(values):.0f} ms, p95 {1000 * p95:.0f} ms (n={len(values)})"


def _source(kind: str, args: argparse.Namespace, server: Any, tmp: Path, say: Callable[[str], None]) -> None:
    prefill = args.prefill if kind == "jsonl" else args.tb_prefill
    grow = int(args.seconds * RATE)
    collapse = prefill + int(grow * 0.6)
    rows = _records(prefill + grow, collapse, float32=kind == "tensorboard")
    trigger = _trigger(rows, prefill + 1, "verl-jsonl" if kind == "jsonl" else "tensorboard")
    say(f"{kind}: {prefill} steps already there, then {grow} more at {RATE} steps/s, {len(rows[0])} metrics a "
        f"step; entropy collapses at step {collapse}, detectable from step {trigger}")
    results: dict[str, list[dict[str, Any]]] = {}
    for mode in args.modes.split(","):
        results[mode] = [_trial(mode, kind, tmp / f"{kind}-{mode}-{n}", args, rows, prefill, trigger, server)
                         for n in range(args.trials)]
    for mode, trials in results.items():
        lat = [t["latency"] for t in trials if t["latency"] is not None]
        cpu = statistics.mean(t["cpu"] for t in trials)
        rss = max(t["rss_mb"] for t in trials)
        by_tail = f"; sent by the tail pass in {sum(t['tail'] for t in trials)} of {len(trials)}" \
            if mode == "watch" else ""
        say(f"  {mode:>7}: line->alert {_summary(lat)}; CPU {100 * cpu:.0f}% of a core while it grows; "
            f"peak RSS {rss:.0f} MB{by_tail}")
    w = results.get("watch")
    for other in ("no-tail", "naive"):
        o = results.get(other)
        if w is None or o is None:
            continue
        lw = [t["latency"] for t in w if t["latency"] is not None]
        lo = [t["latency"] for t in o if t["latency"] is not None]
        latency = f"median latency {statistics.median(lo) / statistics.median(lw):.2f}x, " if lw and lo else ""
        cpu = statistics.mean(t["cpu"] for t in o) / statistics.mean(t["cpu"] for t in w)
        say(f"  ratio {other}/watch: {latency}CPU {cpu:.2f}x, "
            f"peak RSS {max(t['rss_mb'] for t in o) / max(t['rss_mb'] for t in w):.2f}x")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--prefill", type=int, default=30_000, help="steps in the JSONL log before the watcher starts")
    p.add_argument("--tb-prefill", type=int, default=2_000, help="steps in the TensorBoard folder before it starts")
    p.add_argument("--seconds", type=float, default=8.0, help="how long the source grows at 100 steps/s")
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--tail", type=float, default=20.0, help="seconds to wait for the alert after the last step")
    p.add_argument("--sources", default="jsonl,tensorboard")
    p.add_argument("--modes", default="watch,no-tail,naive", help="watchers to compare (watch, no-tail, naive)")
    p.add_argument("--naive-child", nargs=3, default=None)
    args = p.parse_args()
    if args.naive_child:
        url, interval, path = args.naive_child
        _naive_child(path, url, float(interval))
        return
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.received = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"interval {args.interval} s; {args.trials} trial(s) per watcher and source; a 2-core machine", flush=True)
    with tempfile.TemporaryDirectory(prefix="rlvitals-bench-watch-") as tmp:
        for kind in args.sources.split(","):
            _source(kind, args, server, Path(tmp), lambda s: print(s, flush=True))


if __name__ == "__main__":
    main()

"""A team's folder: how long ``rlvitals serve`` takes until every run of a sweep is ready, and its peak memory.

Run:  python benchmarks/bench_team.py [--sizes 200,1000] [--steps 2000] [--baseline-ref REF] [--no-record]

Each size N is a folder of N runs (``sweep/run_0000/train.jsonl`` …), each a veRL JSONL log of ``--steps`` steps
with the ~50 keys veRL logs (``rlvitals.synthetic``: a healthy run or one of its pathologies, a seed each; values
at 6 significant digits), written once to ``benchmarks/_data/team/``. The real ``rlvitals serve`` is started
on it in a process of its own (a fresh state file), and ``/api/runs`` is polled until all N runs are ``ready``.
Printed per size: seconds until the first run is listed and until all are ready, the CPU seconds spent by the
server and its workers (unlike the wall time, hardly moved by other load on the machine), the peak RSS of the
server process (``VmHWM``) and of its worker processes (the sum of their peaks: an upper bound of what they held at
once), then the same server restarted on its state file with nothing changed (every run ready from the
state, no log read again).

The baseline, measured in the same run: the same serve at ``--baseline-ref`` (a git commit; default: the one
before the team-folder work), exported to a temporary folder with ``git archive`` and run from there on the
first size. The figures recorded (``benchmarks/_record.py``): ready time and peak memory per size, and the
ratios of the baseline's ready time and CPU seconds to ours at that size. Target (docs/DESIGN.md): 1,000 runs of
2,000 steps ready within 60 s under 1 GB on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import orjson
import polars as pl
from _record import Figure, record

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data" / "team"
sys.path.insert(0, str(ROOT / "src"))

from rlvitals.synthetic.pathologies import PATHOLOGIES, Spec, scenario  # noqa: E402

BASELINE = "4ae9cde"  # the commit before the team-folder work (serve reading every run in one thread)
KINDS = [None, *PATHOLOGIES]  # a healthy run, then each pathology in turn


def write_run(path: Path, steps: int, i: int) -> None:
    """One run as veRL's file logger writes it: ``{"step": s, "data": {key: value}}`` a line."""
    kind = KINDS[i % len(KINDS)]
    algorithm = PATHOLOGIES[kind].algorithm if kind else "grpo"  # a PPO pathology needs a critic's keys
    series = scenario(Spec(steps=steps, seed=i, algorithm=algorithm, pathology=kind,
                           at=int(steps * 0.6) if kind else None))
    frame = pl.DataFrame({"step": range(1, steps + 1), **{k: v for k, v in series.items()}})
    metrics = [c for c in frame.columns if c != "step"]
    rounded = frame.select(pl.col("step"), *[pl.col(k).fill_nan(None).round_sig_figs(6) for k in metrics])
    path.parent.mkdir(parents=True, exist_ok=True)
    rounded.select(pl.col("step"), pl.struct(metrics).alias("data")).write_ndjson(path)


def sweep(n: int, steps: int) -> Path:
    """The folder of ``n`` runs (written once; a larger sweep's first runs are the smaller one's)."""
    folder = DATA / f"{steps}steps" / f"sweep{n}"
    done = folder / ".complete"
    if done.exists():
        return folder
    for i in range(n):
        log = folder / f"run_{i:04d}" / "train.jsonl"
        if not log.exists():
            write_run(log, steps, i)
    done.write_text("ok\n")
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _hwm(pid: int) -> float:
    """Peak RSS (MiB) of a live process, 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cpu(pid: int, children: bool = True) -> float:
    """CPU seconds (user + system) of a live process, and of its children it has waited for; 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = sum(int(f) for f in fields[11:15 if children else 13])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return [int(c) for t in tasks for c in (t / "children").read_text().split()]
    except OSError:
        return []


def _runs(url: str) -> list[dict[str, object]] | None:
    try:
        with urllib.request.urlopen(url + "api/runs", timeout=60) as r:
            runs: list[dict[str, object]] = orjson.loads(r.read())["runs"]
            return runs
    except OSError:
        return None


def measure(folder: Path, n: int, state: Path, src: Path, timeout: float) -> dict[str, float]:
    """Start serve on ``folder`` (the package at ``src``), poll until ``n`` runs are ready; its figures."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, "-m", "rlvitals", "serve", str(folder), "--port", str(port), "--state", str(state)]
    with tempfile.TemporaryFile() as err:  # not a pipe: a worker left behind would hold it open
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            figures = watch(proc, f"http://127.0.0.1:{port}/", n, t0, timeout)
        finally:
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: serve stops its workers and closes its state file
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if figures["ready"] != figures["ready"]:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            print(f"  not all {n} runs ready within {timeout:.0f} s (exit {proc.returncode}) {tail}")
    return figures


def watch(proc: subprocess.Popen[bytes], url: str, n: int, t0: float, timeout: float) -> dict[str, float]:
    """Poll the server until ``n`` runs are ready: when the first was listed, when all were ready, its peak
    memory, its workers' (the sum of their peaks) and the CPU seconds they all spent."""
    first = ready = float("nan")
    workers: dict[int, float] = {}
    cpu: dict[int, float] = {}  # each worker's CPU seconds, as last seen alive
    while time.perf_counter() - t0 < timeout and proc.poll() is None:
        runs = _runs(url)
        for child in _children(proc.pid):
            workers[child] = max(workers.get(child, 0.0), _hwm(child))
            cpu[child] = max(cpu.get(child, 0.0), _cpu(child, children=False))
        if runs and first != first:
            first = time.perf_counter() - t0
        if runs is not None and sum(r["status"] == "ready" for r in runs) >= n:
            ready = time.perf_counter() - t0
            break
        time.sleep(1.0)  # an answer of 1,000 runs costs the server too: ask once a second
    alive = _children(proc.pid)
    for child in alive:
        workers[child] = max(workers.get(child, 0.0), _hwm(child))
        cpu[child] = max(cpu.get(child, 0.0), _cpu(child, children=False))
    # the server's own, its reaped workers' (in its children's times), and those still alive
    spent = _cpu(proc.pid) + sum(cpu.get(c, 0.0) for c in alive)
    return {"first": first, "ready": ready, "peak": _hwm(proc.pid), "workers": sum(workers.values()), "cpu": spent}


def exported(ref: str, into: Path) -> Path:
    """The package of commit ``ref``, exported with ``git archive`` (the checkout is left as it is)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def line(name: str, n: int, m: dict[str, float]) -> str:
    return (f"{name:>9} {n:>6} {m['first']:>8.1f} {m['ready']:>8.1f} {m['cpu']:>7.0f} {m['peak']:>9.0f}"
            f" {m['workers']:>10.0f} {m['peak'] + m['workers']:>9.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200,1000")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--baseline-ref", default=BASELINE, help="git commit of the baseline serve ('' for none)")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--no-record", action="store_true", help="do not append the figures to benchmarks/results/")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    t0 = time.perf_counter()
    folders = {n: sweep(n, args.steps) for n in sizes}
    print(f"sweeps of {', '.join(map(str, sizes))} runs × {args.steps} steps ready in {time.perf_counter() - t0:.0f} s "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'serve':>9} {'runs':>6} {'listed':>8} {'ready s':>8} {'cpu s':>7} {'peak MiB':>9} {'workers':>10} "
          f"{'sum MiB':>9}")
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        base: dict[str, float] | None = None
        if args.baseline_ref:
            src = exported(args.baseline_ref, Path(tmp))
            base = measure(folders[sizes[0]], sizes[0], Path(tmp) / "base.sqlite", src, args.timeout)
            print(line(args.baseline_ref[:9], sizes[0], base))
        for n in sizes:
            state = Path(tmp) / f"team{n}.sqlite"
            m = measure(folders[n], n, state, ROOT / "src", args.timeout)
            print(line("now", n, m))
            again = measure(folders[n], n, state, ROOT / "src", args.timeout)
            print(line("restart", n, again))
            figures += [Figure(f"ready {n} runs", m["ready"], "s", "time", "lower"),
                        Figure(f"peak {n} runs", m["peak"] + m["workers"], "MiB", "memory", "lower"),
                        Figure(f"ready {n} runs after a restart", again["ready"], "s", "time", "lower")]
            if base is not None and n == sizes[0]:
                figures += [Figure(f"ready {n} runs vs baseline", base["ready"] / m["ready"], "x", "ratio", "higher"),
                            Figure(f"cpu {n} runs vs baseline", base["cpu"] / m["cpu"], "x", "ratio", "higher")]
                print(f"  {n} runs ready {base['ready'] / m['ready']:.1f}x sooner than at {args.baseline_ref}, "
                      f"with {base['cpu'] / m['cpu']:.1f}x less CPU time")
    if not args.no_record:
        record("bench_team", [a for a in sys.argv[1:] if a != "--no-record"], figures)


if __name__ == "__main__":
    main()

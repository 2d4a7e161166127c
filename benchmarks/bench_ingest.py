"""Ingestion throughput: MB/s per reader, against the floor of reading the same bytes.

Run:  python benchmarks/bench_ingest.py [--quick] [--steps-console N] [--steps-jsonl N]

For every real fixture (tests/fixtures/real) and for generated large logs (a >=100 MB veRL
console log and a >=100k-step veRL JSONL, plus TensorBoard, CSV and generic JSONL when their writers
are installed), it measures in this one process, pinned to one core:

- floor:   reading the file's bytes in 1 MiB chunks (what any reader must pay),
- reader:  the format reader alone, streaming records,
- load:    rlvitals.load() end to end (reader + Run: detection, key mapping, frames),

and prints MB/s and the ratio load/floor. Peak memory of load() is measured in a child process
(VmHWM), next to the peak of a child that only imports rlvitals, so the cost of the parse itself
is visible.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data"
REAL = ROOT / "tests" / "fixtures" / "real"
sys.path.insert(0, str(ROOT / "src"))

from _timing import best  # noqa: E402

import rlvitals  # noqa: E402
from rlvitals.ingest import SkipLog, SourceMeta, find_reader  # noqa: E402
from rlvitals.synthetic.simulate import Scenario, console_lines, jsonl_lines  # noqa: E402


def floor_read(path: Path) -> None:
    with path.open("rb") as fh:
        while fh.read(1 << 20):
            pass


def reader_only(path: Path) -> int:
    reader = find_reader(path)
    n = 0
    for root in reader.runs(path):
        meta = SourceMeta(reader.format)
        for _ in reader.read(root, meta, SkipLog()):
            n += 1
    return n


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _floor_any(path: Path) -> None:
    for p in [path] if path.is_file() else sorted(q for q in path.rglob("*") if q.is_file()):
        floor_read(p)


def peak_rss_mb(code: str) -> float:
    """Peak resident memory of a child Python running ``code`` (MiB), as the child itself reports it:
    VmHWM, its own address space's high-water mark. (``ru_maxrss`` would not do: Linux carries the
    parent's peak at the fork over the exec, so every child would report this large process's size.)"""
    probe = code + ("\nprint(next(int(line.split()[1]) for line in open('/proc/self/status') "
                    "if line.startswith('VmHWM:')))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def measure(label: str, path: Path, repeat: int, memory: bool) -> dict[str, object]:
    size = _size(path)
    mb = size / 1e6
    t_floor = best(lambda: _floor_any(path), repeat)
    t_reader = best(lambda: reader_only(path), repeat)
    t_load = best(lambda: rlvitals.load(path), repeat)
    row: dict[str, object] = {
        "label": label, "format": find_reader(path).format, "MB": mb,
        "floor MB/s": mb / t_floor, "reader MB/s": mb / t_reader, "load MB/s": mb / t_load,
        "load/floor": t_load / t_floor,
    }
    if memory:
        row["peak MiB"] = peak_rss_mb(f"import rlvitals; rlvitals.load({str(path)!r})")
    return row


def make_console(steps: int) -> Path:
    path = DATA / f"verl_console_{steps}.log"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        sc = Scenario(steps=steps, val_every=50)
        with path.open("w", encoding="utf-8") as fh:
            for line in console_lines(sc):
                fh.write(line + "\n")
    return path


def make_jsonl(steps: int) -> Path:
    path = DATA / f"verl_file_{steps}.jsonl"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        sc = Scenario(steps=steps, val_every=50)
        with path.open("wb") as fh:
            for line in jsonl_lines(sc):
                fh.write(line + b"\n")
    return path


def make_generic_jsonl(steps: int) -> Path:
    import orjson

    path = DATA / f"generic_{steps}.jsonl"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        with make_jsonl(steps).open("rb") as src, path.open("wb") as dst:
            for line in src:
                obj = orjson.loads(line)
                dst.write(orjson.dumps({"step": obj["step"], **obj["data"]}) + b"\n")
    return path


def make_csv(steps: int) -> Path:

    path = DATA / f"table_{steps}.csv"
    if not path.exists():
        run = rlvitals.load(make_jsonl(steps))[0]
        run.raw.rename({"step": "Step"}).write_csv(path)
    return path


def make_tensorboard(steps: int) -> Path | None:
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        return None
    path = DATA / f"tb_{steps}"
    if not path.exists():
        run = rlvitals.load(make_jsonl(steps))[0]
        writer = SummaryWriter(str(path))
        cols = [c for c in run.raw.columns if c != "step"]
        for row in run.raw.iter_rows(named=True):
            for key in cols:
                value = row[key]
                if value is not None:
                    writer.add_scalar(key, value, row["step"])
        writer.close()
    return path


def _table(rows: list[dict[str, object]]) -> str:
    cols = ["label", "format", "MB", "floor MB/s", "reader MB/s", "load MB/s", "load/floor", "peak MiB"]
    cols = [c for c in cols if any(c in r for r in rows)]
    fmt = {c: (lambda v: f"{v:,.2f}" if isinstance(v, float) and v < 1 else
               f"{v:,.1f}" if isinstance(v, float) else str(v)) for c in cols}
    cells = [[fmt[c](r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]

    def line(vals: list[str]) -> str:
        pairs = enumerate(zip(vals, widths, strict=True))
        return "  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in pairs)

    return "\n".join([line(cols), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small generated files (smoke test)")
    ap.add_argument("--steps-console", type=int, default=60_000)
    ap.add_argument("--steps-jsonl", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    if args.quick:
        args.steps_console, args.steps_jsonl, args.repeat = 2_000, 2_000, 1

    rows = [measure(path.name[:48], path, args.repeat, memory=False)
            for path in sorted(REAL.iterdir()) if path.suffix not in (".txt", ".md")]
    print("real fixtures (one core):")
    print(_table(rows))

    big = [("veRL console (generated)", make_console(args.steps_console)),
           ("veRL JSONL (generated)", make_jsonl(args.steps_jsonl)),
           ("generic JSONL (generated)", make_generic_jsonl(args.steps_jsonl // 4)),
           ("CSV table (generated)", make_csv(args.steps_jsonl // 4))]
    tb = make_tensorboard(args.steps_jsonl // 10)
    if tb is not None:
        big.append(("TensorBoard (tensorboardX)", tb))
    rows = [measure(label, path, max(1, args.repeat - 1), memory=True) for label, path in big]
    print("\ngenerated large logs (one core):")
    print(_table(rows))
    base = peak_rss_mb("import rlvitals, polars, numpy")
    print(f"\npeak memory of a child that only imports rlvitals: {base:.0f} MiB")


if __name__ == "__main__":
    main()

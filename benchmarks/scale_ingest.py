"""Metric-log ingestion against its parse floor: ``rlvitals diagnose`` end to end, whole process.

Run:  python benchmarks/scale_ingest.py [--steps 10000,100000,1000000] [--quick] [--no-console]

For each length a simulated veRL GRPO run is written as veRL JSONL (``{"step", "data"}`` lines), as a
W&B history (one flat object a line with ``train/global_step``, ``_step``, ``_runtime`` and ``_timestamp``:
the generic JSONL reader) and as a veRL console log (``step:N - key:value - ...`` lines behind a Ray
prefix). Each is measured in processes
of its own (wall time and peak RSS, :func:`_timing.child`), the pair in the same run:

- floor: a bare ``python -c`` that ``orjson.loads`` every line of the JSONL, or that splits every console
  step line into ``key:value`` pairs and ``float()`` s the values (what any parser must pay);
- diagnose: ``python -m rlvitals diagnose LOG --json``, import included.

It prints MB/s, seconds, peak MiB and diagnose/floor. The targets (issue 16): a 100k-step JSONL in
<= 3x its floor with a peak < 500 MB; a console log in <= 2x its floor.

The peak is the largest of the processes (``ru_maxrss`` of the children): a parallel read's worker is
one of them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import orjson  # noqa: E402
from _record import Figure, record  # noqa: E402
from _timing import child  # noqa: E402

from rlvitals.synthetic.simulate import Scenario, console_lines, jsonl_lines  # noqa: E402

#: the floor of a JSONL log: every line through orjson, nothing kept
JSONL_FLOOR = ("import sys, orjson\n"
               "with open(sys.argv[1], 'rb') as fh:\n"
               "    for line in fh:\n"
               "        orjson.loads(line)\n")
#: the floor of a console log: every step line split into key:value pairs, each value a float
CONSOLE_FLOOR = ("import sys\n"
                 "with open(sys.argv[1], encoding='utf-8', errors='replace') as fh:\n"
                 "    for line in fh:\n"
                 "        at = line.find('step:')\n"
                 "        if at < 0:\n"
                 "            continue\n"
                 "        for pair in line[at:].rstrip('\\n').split(' - ')[1:]:\n"
                 "            float(pair.rpartition(':')[2])\n")


def write_jsonl(path: Path, steps: int) -> None:
    sc = Scenario(steps=steps, val_every=50)
    with path.open("wb") as fh:
        for line in jsonl_lines(sc):
            fh.write(line + b"\n")


def write_history(path: Path, steps: int) -> None:
    sc = Scenario(steps=steps, val_every=50)
    with path.open("wb") as fh:
        for line in jsonl_lines(sc):
            record = orjson.loads(line)
            step = record["step"]
            fh.write(orjson.dumps({"train/global_step": step, "_step": step, "_runtime": 12.5 * step,
                                   "_timestamp": 1.7e9 + 12.5 * step, **record["data"]}) + b"\n")


def write_console(path: Path, steps: int) -> None:
    sc = Scenario(steps=steps, val_every=50)
    with path.open("w", encoding="utf-8") as fh:
        for line in console_lines(sc):
            fh.write(line + "\n")


def _best(cmd: list[str], repeat: int) -> tuple[float, float]:
    """The fastest wall time of ``repeat`` runs and the peak of that run."""
    return min((child(cmd) for _ in range(repeat)), key=lambda r: r[0])


def measure(kind: str, path: Path, repeat: int) -> dict[str, object]:
    """One log: its floor and ``diagnose --json``, alternated so both see the same machine."""
    floor_code = CONSOLE_FLOOR if kind == "console" else JSONL_FLOOR
    floor_cmd = [sys.executable, "-c", floor_code, str(path)]
    diag_cmd = [sys.executable, "-m", "rlvitals", "diagnose", str(path), "--json"]
    floor, diag = [], []
    for _ in range(repeat):
        floor.append(child(floor_cmd))
        diag.append(child(diag_cmd))
    (t_floor, p_floor), (t_diag, p_diag) = min(floor), min(diag)
    mb = path.stat().st_size / 1e6
    return {"log": kind, "MB": mb, "floor s": t_floor, "floor MB/s": mb / t_floor, "floor MiB": p_floor,
            "diagnose s": t_diag, "diagnose MB/s": mb / t_diag, "peak MiB": p_diag, "ratio": t_diag / t_floor}


def rows(steps: list[int], console: bool = True) -> list[dict[str, object]]:
    """One row per (length, format): the figures :func:`main` prints. Logs are written to a temporary
    folder and removed after."""
    out: list[dict[str, object]] = []
    kinds = ("jsonl", "history", "console") if console else ("jsonl", "history")
    for n in steps:
        repeat = 3 if n <= 100_000 else 1
        for kind in kinds:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / {"jsonl": "run.jsonl", "history": "wandb-history.jsonl", "console": "run.log"}[kind]
                {"jsonl": write_jsonl, "history": write_history, "console": write_console}[kind](path, n)
                row = measure(kind, path, repeat)
            out.append({"steps": n, **row})
    return out


def _table(found: list[dict[str, object]]) -> str:
    cols = ["steps", "log", "MB", "floor s", "floor MB/s", "floor MiB", "diagnose s", "diagnose MB/s",
            "peak MiB", "ratio"]

    def cell(v: object) -> str:
        return f"{v:,.2f}" if isinstance(v, float) else str(v)

    cells = [[cell(r[c]) for c in cols] for r in found]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="10000,100000,1000000", help="comma-separated step counts")
    ap.add_argument("--quick", action="store_true", help="10k and 100k steps only")
    ap.add_argument("--no-console", action="store_true", help="the JSONL logs only")
    ap.add_argument("--no-record", action="store_true", help="do not append the figures to benchmarks/results/")
    ap.add_argument("--src", help="diagnose with the rlvitals of this source tree (an older commit's, for a before)")
    args = ap.parse_args()
    if args.src:
        os.environ["PYTHONPATH"] = str(Path(args.src).resolve())
    steps = [10_000, 100_000] if args.quick else [int(s) for s in args.steps.split(",")]
    found = rows(steps, console=not args.no_console)
    print(_table(found))
    if not args.no_record and not args.src:  # another tree's figures are a before, not this commit's
        record("scale_ingest", [a for a in sys.argv[1:] if a != "--no-record"], figures(found))


def figures(found: list[dict[str, object]]) -> list[Figure]:
    """Per log: diagnose against its floor (a ratio, lower is better) and its peak memory; the seconds too."""
    out = []
    for r in found:
        name = f"{r['log']} {r['steps']:,} steps"
        out += [Figure(f"{name}: diagnose/floor", float(r["ratio"]), "x", "ratio", "lower"),  # type: ignore[arg-type]
                Figure(f"{name}: peak", float(r["peak MiB"]), "MiB", "memory", "lower"),  # type: ignore[arg-type]
                Figure(f"{name}: diagnose", float(r["diagnose s"]), "s", "time", "lower")]  # type: ignore[arg-type]
    return out


if __name__ == "__main__":
    main()

"""Scale: rollout analytics at 1M / 10M / 100M rollouts (local engine, and Ray with 1, 2 and 4 workers), and
metric-log ingestion against the parse floor at 10k / 100k / 1M steps.

Run:  python benchmarks/bench_scale.py [--rollouts 1e6,1e7,1e8] [--texts 1e6] [--workers 1,2,4]
                                       [--steps 10000,100000,1000000] [--skip-ingest] [--skip-rollouts]

Rollouts: a GRPO-shaped dump of 512 prompts x 16 samples a step, as sharded Parquet parts of 100 steps
(score-only: step, group, score; with ``--texts``, also a 1 kB response of random words per rollout). Each
run is a process of its own, timed end to end (import included) with its peak RSS: the local engine (shard
by shard in one process: its peak is the memory bound), then the Ray engine on a local cluster of 1, 2 and
4 worker CPUs started for the run (the peak shown is the driver's; the workers hold one shard each). Printed:
rollouts per second, the ratio to the local engine measured in the same run, and Ray's scaling efficiency
(speed-up over 1 worker divided by the workers). On a 2-core machine 4 workers share 2 cores.

Ingestion: benchmarks/scale_ingest.py (the end-to-end diagnose of a veRL JSONL and console log against a
bare orjson parse and a plain split-and-float parse of the same lines).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
from _timing import child

HERE = Path(__file__).resolve().parent
G, PROMPTS, STEPS_PER_PART = 16, 512, 100
_VOCABULARY = ("the of and to in is was for on that with as by at from it an be this are which or add carry check "
               "sum again so x answer step first then because therefore equals")
WORDS = np.array(_VOCABULARY.split(" "))


def write_parts(folder: Path, rollouts: int, texts: bool) -> int:
    """The dump as Parquet parts; the number of rollouts written (whole steps)."""
    folder.mkdir(parents=True, exist_ok=True)
    per_step = G * PROMPTS
    steps = max(rollouts // per_step, 1)
    rng = np.random.default_rng(0)
    for part, start in enumerate(range(0, steps, STEPS_PER_PART)):
        n = min(STEPS_PER_PART, steps - start)
        rows = n * per_step
        cols: dict[str, object] = {
            "step": np.repeat(np.arange(start, start + n), per_step),
            "group": np.tile(np.repeat(np.arange(PROMPTS), G), n).astype(str),
            "score": (rng.random(rows) < 0.4).astype(np.float64),
        }
        if texts:  # ~1 kB of words each: 170 words of ~6 bytes
            picks = rng.integers(0, len(WORDS), size=(rows, 170))
            cols["response"] = [" ".join(WORDS[p]) for p in picks]
        pl.DataFrame(cols).write_parquet(folder / f"part-{part:05d}.parquet")
    return steps * per_step


RUN = """
import sys
from rlvitals.rollout.analysis import analyze
from rlvitals.rollout.options import RolloutSettings
from rlvitals.rollout.readers import ColumnMap
path, engine, workers, texts = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
cmap = ColumnMap(step="step", group="group", score="score", response="response" if texts else None)
settings = RolloutSettings(columns=cmap, engine=engine)
if engine == "ray":
    from rlvitals.rollout.ray_engine import engine as ray_engine
    analysis = analyze(path, settings, engine=ray_engine(workers=workers))
else:
    analysis = analyze(path, settings)
assert analysis.overall["rollouts"] > 0
"""


def rollout_rows(sizes: list[int], workers: list[int], texts: bool) -> None:
    print(f"\nrollouts ({'1 kB texts: every family' if texts else 'score-only: group metrics'})")
    print(f"{'rollouts':>11} {'engine':>8} {'seconds':>8} {'rollouts/s':>11} {'vs local':>9} {'efficiency':>10} "
          f"{'peak MiB':>9}")
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            n = write_parts(Path(tmp) / "dump", size, texts)
            took, peak = child([sys.executable, "-c", RUN, str(Path(tmp) / "dump"), "local", "0", str(int(texts))])
            print(f"{n:>11,} {'local':>8} {took:>8.1f} {n / took:>11,.0f} {1.0:>9.2f} {'':>10} {peak:>9.0f}")
            one = None
            for w in workers:
                t, p = child([sys.executable, "-c", RUN, str(Path(tmp) / "dump"), "ray", str(w), str(int(texts))])
                one = one or t
                eff = one / t / w if one else float("nan")
                print(f"{n:>11,} {f'ray x{w}':>8} {t:>8.1f} {n / t:>11,.0f} {took / t:>9.2f} {eff:>10.2f} {p:>9.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rollouts", default="1e6,1e7,1e8")
    ap.add_argument("--texts", default="1e6", help="sizes with 1 kB texts (every family); empty for none")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--steps", default="10000,100000,1000000")
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--skip-rollouts", action="store_true")
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",") if w]
    if not args.skip_rollouts:
        rollout_rows([int(float(s)) for s in args.rollouts.split(",") if s], workers, texts=False)
        if args.texts:
            rollout_rows([int(float(s)) for s in args.texts.split(",") if s], workers, texts=True)
    if not args.skip_ingest:
        sys.path.insert(0, str(HERE))
        import scale_ingest

        print("\ningestion (diagnose end to end against the parse floor of the same lines)")
        for row in scale_ingest.rows([int(s) for s in args.steps.split(",") if s]):
            print("  ".join(f"{k} {v:,.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))


if __name__ == "__main__":
    main()

"""Report speed and size: a 100k-step × 200-metric run to one HTML file.

Run:  python benchmarks/bench_report.py [--quick]

Prints, pinned to one core: diagnose time (for reference), page-model time, HTML render time, file
size inline and with --cdn, the JSON bytes per chart (median and max), and the baseline measured in
the same run: ``json.dumps`` of every series un-downsampled, with the ratio of the two.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from _timing import best  # noqa: E402
from bench_diagnose import wide_run  # noqa: E402

from rlvitals.diagnosis import diagnose  # noqa: E402
from rlvitals.report.html import render_html, safe_json  # noqa: E402
from rlvitals.report.model import build_page  # noqa: E402
from rlvitals.run.run import Run  # noqa: E402


def raw_json_bytes(run: Run) -> int:
    """The baseline: every series as-is (steps and values), the way a naive report would embed it."""
    total = 0
    for key in run.metrics:
        x, y = run.series(key, train_only=False)
        total += len(json.dumps({"x": x.tolist(), "y": [v if v == v else None for v in y.tolist()]}))
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k steps instead of 100k")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    steps = 10_000 if args.quick else 100_000
    run = wide_run(steps)
    t0 = time.perf_counter()
    d = diagnose(run)
    t_diag = time.perf_counter() - t0
    t_model = best(lambda: build_page([run], [d]), 2)
    page = build_page([run], [d])
    t_html = best(lambda: render_html(page), 2)
    inline, cdn = render_html(page), render_html(page, cdn=True)
    per_chart = [len(safe_json(c)) for c in page["charts"].values()]
    t1 = time.perf_counter()
    baseline = raw_json_bytes(run)
    t_base = time.perf_counter() - t1
    print(f"run: {steps} steps × {len(run.metrics)} metrics; {len(page['charts'])} charts "
          f"(min/mean/max families share one), {page['meta']['buckets']} buckets")
    print(f"diagnose {t_diag:.2f} s (reference)   page model {t_model:.2f} s   HTML {t_html:.2f} s   "
          f"report total {t_model + t_html:.2f} s")
    print(f"file: inline {len(inline.encode()) / 1e6:.2f} MB   --cdn {len(cdn.encode()) / 1e6:.2f} MB")
    print(f"JSON per chart: median {statistics.median(per_chart) / 1e3:.1f} kB   max {max(per_chart) / 1e3:.1f} kB   "
          f"all charts {sum(per_chart) / 1e6:.2f} MB")
    print(f"baseline json.dumps of the raw series: {baseline / 1e6:.1f} MB in {t_base:.2f} s; "
          f"charts' JSON is {sum(per_chart) / baseline:.3f} of it ({baseline / sum(per_chart):.0f}x smaller)")


if __name__ == "__main__":
    main()

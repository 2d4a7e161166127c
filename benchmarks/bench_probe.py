"""Probe throughput: probes a second through ``HttpBackend`` at concurrency 1, 4 and 16, against the same
requests sent one by one with a plain loop, and the speed-up of a cached re-run.

Run:  python benchmarks/bench_probe.py [--quick] [--rollouts 32] [--delay 0.02] [--repeat 3]

The server is the suite's (``tests/openai_servers.py``), answering as its rule-following "model"
(``follows_reasoning``: the last number of the reasoning it is shown), a real ``ThreadingHTTPServer`` on
127.0.0.1 that waits ``--delay`` seconds before each reply (a stand-in for the model's time, so that requests
in flight matter); it listens with a backlog of 128, so 16 requests in flight do not wait for SYN retries.
The rollouts are ``--rollouts`` of the bundled word problems, each with its right chain written out
(``4 × 3 = 12. Then 8 + 12 = 20.``). Every probe runs (early answering at 4 fractions, an added mistake, a
paraphrase by the model, filler, the suggested answer and its unbiased twin), the completions API: 12
requests a rollout.

Printed (wall clock, best of ``--repeat``):

- the plain loop: the exact request bodies the probes sent, replayed one by one with ``urllib.request``
  and each reply's JSON read, in one thread: the baseline, measured in the same run;
- per concurrency: the probing itself (``probe_chains``: the requests, their replies read, the answers
  extracted), requests (probes) and rollouts a second, and the ratio of the plain loop's time to it; and
  whether it sent the same requests as the plain loop replays (as a multiset: order varies in flight);
- the cached re-run: ``run_probe`` (the figures and their bootstrap intervals included) through ``Cached``
  with a SQLite ``Cache`` in a temporary folder, first filling it (a request repeated within the run is
  sent once), then again: the re-run's speed-up, the requests it sent to the server (none), whether its
  figures equal the first run's, and the probing part of the re-run alone (``probe_chains``, all hits).

Nothing here asserts a time; ``tests/probe/test_bench_probe.py`` runs ``--quick`` for the rows.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))

from _timing import best  # noqa: E402
from openai_servers import follows_reasoning, serving  # noqa: E402  (the suite's rule-following model)

from rlvitals.probe import Cache, Cached, Chain, HttpBackend, ProbeOptions, chain_of, run_probe  # noqa: E402
from rlvitals.probe.runner import probe_chains  # noqa: E402
from rlvitals.synthetic.word_problems import SOURCES, make_problems  # noqa: E402

CONCURRENCY = (1, 4, 16)
OPTIONS = ProbeOptions(max_tokens=8)
# each template's operations as text, over its numbers a, b, c and its first state s
STEPS = {"add": ("{a} + {b}",), "sub": ("{a} - {b}",), "mul": ("{a} × {b}",),
         "add_mul": ("{b} × {c}", "{a} + {s}"), "sub_add": ("{a} - {b}", "{s} + {c}"),
         "mul_sub": ("{a} × {b}", "{s} - {c}")}


def make_chains(n: int) -> list[Chain]:
    """``n`` bundled word problems, each with its right chain of thought."""
    chains = []
    for i, p in enumerate(make_problems(n, seed=0, sources=SOURCES)):
        numbers = dict(zip("abc", map(int, re.findall(r"\d+", p.question)), strict=False))
        said = [f"{op.format(**numbers, s=p.states[0])} = {state}." for op, state in
                zip(STEPS[p.template], p.states, strict=True)]
        reasoning = " Then ".join(said)
        chains.append(chain_of(p.question, f"{reasoning} The answer is {p.answer}.", id=f"r{i}", target=p.target,
                               step=1 + i % 4))
    return chains


def plain_loop(root: str, bodies: list[dict[str, object]]) -> list[str]:
    """Each request sent in turn with urllib, its reply's text read: no threads, no retries, no cache."""
    out = []
    for body in bodies:
        path = body["path"]
        data = orjson.dumps({k: v for k, v in body.items() if k not in ("path", "auth")})
        request = urllib.request.Request(f"{root}{path}", data, {"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=60) as reply:
            out.append(orjson.loads(reply.read())["choices"][0]["text"])
    return out


def _sent(seen: list[dict[str, object]], start: int) -> Counter[bytes]:
    return Counter(orjson.dumps(b, option=orjson.OPT_SORT_KEYS) for b in seen[start:])


def run_concurrency(url: str, seen: list[dict[str, object]], chains: list[Chain], repeat: int) -> None:
    start = len(seen)
    probe_chains(chains, HttpBackend(url, "follower", concurrency=1), OPTIONS)  # the requests to replay
    bodies = seen[start:]
    want = _sent(seen, start)
    root = url.removesuffix("/v1")
    plain = best(lambda: plain_loop(root, bodies), repeat)
    n = len(bodies)
    print(f"plain loop (urllib, one request at a time): {plain:6.2f} s  {n / plain:7.1f} requests/s  "
          f"{len(chains) / plain:6.1f} rollouts/s  ({n} requests)")
    for c in CONCURRENCY:
        start = len(seen)
        backend = HttpBackend(url, "follower", concurrency=c)
        took = best(lambda: probe_chains(chains, backend, OPTIONS), repeat)  # noqa: B023 — called right here
        same = _sent(seen, start) == Counter({body: k * repeat for body, k in want.items()})
        print(f"HttpBackend concurrency {c:2d}: {took:6.2f} s  {n / took:7.1f} requests/s  "
              f"{len(chains) / took:6.1f} rollouts/s  ratio {plain / took:5.2f}x the plain loop; "
              f"same requests: {same}")


def run_cached(url: str, seen: list[dict[str, object]], chains: list[Chain]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(Path(tmp) / "probe.sqlite")
        try:
            backend = Cached(HttpBackend(url, "follower", concurrency=4), cache)
            start = len(seen)
            t0 = time.perf_counter()
            first = run_probe(chains, backend, OPTIONS)
            cold = time.perf_counter() - t0
            sent_first = len(seen) - start
            start = len(seen)
            t0 = time.perf_counter()
            again = run_probe(chains, backend, OPTIONS)
            warm = time.perf_counter() - t0
            sent_again = len(seen) - start
            probing = best(lambda: probe_chains(chains, backend, OPTIONS), 3)
        finally:
            cache.close()
    print(f"cached re-run (run_probe, SQLite cache, concurrency 4): first {cold:.2f} s ({sent_first} sent), "
          f"re-run {warm:.3f} s ({sent_again} sent)  speed-up {cold / warm:.1f}x; "
          f"figures identical: {first == again}; the probing alone {probing * 1000:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 rollouts, one repeat")
    ap.add_argument("--rollouts", type=int, default=32)
    ap.add_argument("--delay", type=float, default=0.02, help="seconds the server waits before each reply")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rollouts, repeat = (4, 1) if args.quick else (args.rollouts, args.repeat)
    chains = make_chains(rollouts)
    with serving(follows_reasoning, args.delay) as (url, seen):
        print(f"probes: {rollouts} rollouts x every probe, server delay {args.delay * 1000:.0f} ms a request, "
              f"127.0.0.1, {os.cpu_count()} cores (shared: wall times vary)")
        run_concurrency(url, seen, chains, repeat)
        run_cached(url, seen, chains)


if __name__ == "__main__":
    main()

"""``rlvitals watch`` restarted on a long log: the restart against the first read, and the state file
against the log.

Run:  python benchmarks/bench_watch_restart.py [--steps 100000] [--trials 2]

A simulated veRL GRPO run (~50 metrics a step) written as veRL JSONL; ``watch --once`` reads it
with a new state file (the first read), then ``watch --once`` again on that state file (the
restart: the run rebuilt from the stored records, nothing new in the log). Each is its own process,
timed end to end with its peak RSS (``getrusage`` of the child); the best of ``--trials``. Printed:
both, their ratios (restart / first read: the target is at most 1 for both), and the state file's
size as a share of the log's (target: at most 0.1) — for the simulated log, whose values carry
noise in every bit of their float64 (the hardest to compress), and for the largest real logs of
``tests/fixtures/real`` and the corpus, whose values are mostly float32 or printed decimals.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import child

from rlvitals.synthetic.simulate import Scenario, jsonl_lines

ROOT = Path(__file__).resolve().parents[1]
FIXTURES, CORPUS = ROOT / "tests" / "fixtures" / "real", ROOT / "benchmarks" / "corpus" / "runs"
REAL = [FIXTURES / "verl__verl_training_log__ppo_run_deepseek7b_llm.log",
        FIXTURES / "verl__verl_training_log__grpo_run_deepseek7b_llm.log",
        FIXTURES / "trl__UnslothGRPO__checkpoint-250_trainer_state.json",
        CORPUS / "verl__agent-opd__qwen3-4b-klreward-length-collapse/output.log",
        CORPUS / "verl__dstack-configs__qwen2.5-7b-ppo-gsm8k-resumed/verl_demo.log",
        CORPUS / "other__minimind-from-scratch__grpo-v1-model-reward-30m/grpo.log",
        CORPUS / "trlconsole__deltacoder_qwen35_9b_dpo_quoted/train_dpo.log"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--trials", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run.jsonl"
        with log.open("wb") as fh:
            for line in jsonl_lines(Scenario(steps=args.steps, collapse_at=None, grad_spike_at=None)):
                fh.write(line + b"\n")
        first, again = [], []
        for trial in range(args.trials):
            state = Path(tmp) / f"state{trial}.sqlite"
            cmd = [sys.executable, "-m", "rlvitals", "watch", str(log), "--once", "--state", str(state)]
            # each measurement in a fresh interpreter of its own, so one's peak is not another's
            first.append(child(cmd))
            again.append(child(cmd))
        size = log.stat().st_size
        state_size = (Path(tmp) / "state0.sqlite").stat().st_size
    (t1, m1), (t2, m2) = min(first), min(again)
    print(f"veRL JSONL, {args.steps} steps, {size / 1e6:.0f} MB; best of {args.trials}")
    print(f"first read  {t1:6.2f} s  {m1:6.0f} MiB peak")
    print(f"restart     {t2:6.2f} s  {m2:6.0f} MiB peak   ({t2 / t1:.2f}x the time, {m2 / m1:.2f}x the memory)")
    print(f"state file  {state_size / 1e6:.1f} MB = {state_size / size:.3f} of the log")
    print("state file of real logs (watch --once):")
    with tempfile.TemporaryDirectory() as tmp:
        for i, log in enumerate(REAL):
            state = Path(tmp) / f"real{i}.sqlite"
            subprocess.run([sys.executable, "-m", "rlvitals", "watch", str(log), "--once", "--state", str(state)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(f"  {state.stat().st_size / log.stat().st_size:.3f}  {log.stat().st_size / 1e6:5.1f} MB  {log.name}")


if __name__ == "__main__":
    main()

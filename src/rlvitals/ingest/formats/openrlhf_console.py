"""OpenRLHF's console log: one Python dict per global step, printed by the PPO trainer.

``ppo_trainer.py::fit`` logs ``✨ Global step {n}: {status}`` through the openrlhf logger
(``INFO 08-13 19:25:45 ppo_trainer.py:547] ✨ Global step 3: {'policy_loss': ...}``) and
``✨ Evaluation completed in 0:01:02, global_step 10, eval_metrics: {...}`` after an
evaluation. The payload is a dict repr, so values may be ``tensor(...)``/``np.float64(...)``
and ``nan``/``inf``; a list such as ``generated_samples`` (``[text, reward]``) is not a
metric and is left out. tqdm bars (``act_loss=..., reward=...``) and everything else are
ignored: the per-step dict already holds those numbers, unrounded. A log that ends in a
traceback gets the crash (:mod:`rlvitals.ingest._crash`); a log holding only a traceback through
OpenRLHF's own code is read too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ...words import Words
from .._crash import FRAMEWORK_FRAMES, CrashScanner
from .._reader import Reader
from ..pyrepr import ReprError, metric_values, parse_dict
from ..record import Record, SkipLog, SourceMeta
from ..text import integer, iter_lines, search_file, strip_ansi

FORMAT = "openrlhf-console"

_SNIFF = re.compile(rb"Global step \d+: \{|global_step \d+, eval_metrics: \{|"
                    + FRAMEWORK_FRAMES["openrlhf"].pattern)
_TRAIN = re.compile(r"Global step (\d+): (\{.*)")
_EVAL = re.compile(r"global_step (\d+), eval_metrics: (\{.*)")


def sniff(path: Path, head: bytes) -> bool:
    return search_file(path, head, _SNIFF)


def _match(line: str) -> tuple[re.Match[str], str] | None:
    if "Global step " in line:
        m = _TRAIN.search(line)
        if m:
            return m, "training"
    if "eval_metrics: " in line:
        m = _EVAL.search(line)
        if m:
            return m, "evaluation"
    return None


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "openrlhf"
    crash = CrashScanner(path)
    for lineno, line in iter_lines(path, meta):
        hit = _match(line)
        if hit is None:
            crash.feed(lineno, line)
            continue
        m, kind = hit
        where = f"{path}:{lineno}"
        kind_zh = "训练" if kind == "training" else "评估"
        payload = strip_ansi(m.group(2)).rstrip()
        try:
            status = parse_dict(payload)
        except ReprError as exc:
            skips.skip(where, Words(f"the {kind} dict of global step {m.group(1)} is not a Python dict repr "
                                    f"({exc}); the line was skipped",
                                    f"global step {m.group(1)} 的{kind_zh} dict 不是 Python dict 的 repr"
                                    f"（{exc}）；这一行已跳过"))
            continue
        values = metric_values(status)
        if not values:
            skips.skip(where, Words(f"the {kind} dict of global step {m.group(1)} holds no metric value; "
                                    "the line was skipped",
                                    f"global step {m.group(1)} 的{kind_zh} dict 里没有指标值；这一行已跳过"))
            continue
        crash.progress(lineno)  # an evaluation shows the training going on too
        yield Record(integer(m.group(1)), values, where)
    crash.into(meta)


READER = Reader(FORMAT, sniff, read, trainings=True,
                describes="OpenRLHF's console log: the dict its PPO trainer prints at every global step")

"""Write rollout records the way the frameworks dump them, so the readers can be tested on
real-shaped files (and a sampled run can be analysed as if a trainer had written it).

* :func:`write_verl_dump`: veRL ``trainer.rollout_data_dir``: ``{folder}/{step}.jsonl``, one
  ``json.dumps(..., ensure_ascii=False)`` object per rollout with ``input``, ``output``, ``gts``,
  ``score``, ``step``, then the reward function's extra info: ``acc`` (correct), ``pred``
  (extracted answer) and ``data_source``, each only when every record has it (veRL dumps an
  extra-info key only when it has a value for every sample), and the per-token lists a sampler
  has, ``token_entropy``, ``token_logprob`` and ``tokens`` (each response token's decoded text),
  the same way, as extra keys (veRL's own dump has no per-token values; the veRL reader reads
  these keys under their names). Samples of a prompt stay consecutive, as in a training dump.
* :func:`write_trl_completions`: TRL ``log_completions``:
  ``{output_dir}/completions/completions_{step:05d}.parquet`` with ``step`` (as text),
  ``prompt`` (the chat: a list of ``{role, content}`` messages), ``completion`` (text), one
  column per reward function (here one, ``accuracy_reward``, holding the score) and
  ``advantage``.

The advantage is TRL's GRPO advantage with ``scale_rewards="group"`` (its default; ``True``
in older versions): ``(r - mean) / (std + 1e-4)`` over the rollouts of the same prompt, with
the sample standard deviation (``torch.std``, n - 1). TRL refuses groups of one rollout
(``num_generations >= 2``); for such a group the centred reward, 0.0, is written.

>>> [round(a, 4) for a in group_advantages([1.0, 0.0, 0.0, 1.0], ["a", "a", "b", "b"])]
[0.707, -0.707, -0.707, 0.707]
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import InputError
from ..words import Words

__all__ = ["group_advantages", "write_trl_completions", "write_verl_dump"]

STD_EPS = 1e-4  # TRL adds this to the group std before dividing
REWARD_NAME = "accuracy_reward"
_VERL_EXTRAS = {"correct": "acc", "answer": "pred", "source": "data_source", "token_entropy": "token_entropy",
                "token_logprob": "token_logprob", "tokens": "tokens"}


def group_advantages(rewards: Sequence[float], keys: Sequence[Hashable]) -> list[float]:
    """TRL's group-normalised advantage of each reward; rollouts with equal ``keys`` form a group.

    >>> group_advantages([2.0], ["only"])
    [0.0]
    """
    if len(rewards) != len(keys):
        raise InputError(Words(f"group_advantages: {len(rewards)} rewards but {len(keys)} group keys; "
                               "give one key per reward",
                               f"group_advantages：有 {len(rewards)} 个 reward，却有 {len(keys)} 个组键；"
                               "每个 reward 要有一个组键"))
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        members[key].append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        vals = [float(rewards[i]) for i in idx]
        mean = sum(vals) / len(vals)
        if len(vals) < 2:
            continue  # no spread to scale by: the centred reward is 0
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
        for i, v in zip(idx, vals, strict=True):
            out[i] = (v - mean) / (std + STD_EPS)
    return out


def _check(records: Sequence[Mapping[str, Any]], step: int, what: str) -> None:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise InputError(Words(f"{what}: step={step!r}; expected a training step, a whole number >= 0",
                               f"{what}：step={step!r}；应为训练步数，即 >= 0 的整数"))
    if not records:
        raise InputError(Words(f"{what}: no records for step {step}; a dump holds at least one rollout",
                               f"{what}：第 {step} 步没有记录；一次导出至少要有一条 rollout"))
    for i, rec in enumerate(records):
        if "response" not in rec or "score" not in rec:
            missing = [k for k in ("response", "score") if k not in rec]
            raise InputError(Words(f"{what}: record {i} has no {missing}; every rollout needs a response and a score",
                                   f"{what}：第 {i} 条记录缺少 {missing}；每条 rollout 都要有 response 和 score"))
        if rec.get("step", step) != step:
            got = rec.get("step")
            raise InputError(Words(f"{what}: record {i} is from step {got!r}, not step {step}; "
                                   "write each step's records to its own file",
                                   f"{what}：第 {i} 条记录属于第 {got!r} 步，不是第 {step} 步；"
                                   "请把每一步的记录写进各自的文件"))


def _prompt_text(rec: Mapping[str, Any]) -> str:
    return str(rec.get("prompt_text", rec.get("prompt", "")))


def _messages(rec: Mapping[str, Any]) -> list[dict[str, str]]:
    chat = rec.get("prompt_messages")
    if isinstance(chat, list):
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in chat]
    return [{"role": "user", "content": str(rec.get("prompt", ""))}]


def write_verl_dump(records: Sequence[Mapping[str, Any]], folder: str | Path, step: int) -> Path:
    """Write one step of rollouts as veRL's ``{folder}/{step}.jsonl``; returns the file.

    ``input`` is ``prompt_text`` (the chat template decoded without special tokens, as veRL
    decodes it) or else ``prompt``; ``gts`` is ``target``.

    >>> import tempfile
    >>> path = write_verl_dump([{"prompt": "1+1?", "response": "2", "score": 1.0, "target": "2"}],
    ...                        tempfile.mkdtemp(), step=3)
    >>> path.name, path.read_text(encoding="utf-8")
    ('3.jsonl', '{"input": "1+1?", "output": "2", "gts": "2", "score": 1.0, "step": 3}\\n')
    """
    _check(records, step, "write_verl_dump")
    extras = {src: dst for src, dst in _VERL_EXTRAS.items() if all(src in r for r in records)}
    lines = []
    for rec in records:
        entry: dict[str, Any] = {"input": _prompt_text(rec), "output": str(rec["response"]),
                                 "gts": None if rec.get("target") is None else str(rec["target"]),
                                 "score": float(rec["score"]), "step": step}
        entry.update({dst: rec[src] for src, dst in extras.items()})
        lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{step}.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def write_trl_completions(records: Sequence[Mapping[str, Any]], folder: str | Path, step: int) -> Path:
    """Write one step of rollouts as TRL's ``{folder}/completions/completions_{step:05d}.parquet``
    (``folder`` is TRL's ``output_dir``); returns the file.

    ``prompt`` is ``prompt_messages`` (a chat) or else ``prompt`` as one user message; the
    advantage groups rollouts by that chat.

    >>> import tempfile
    >>> recs = [{"prompt": "1+1?", "response": r, "score": s} for r, s in (("2", 1.0), ("3", 0.0))]
    >>> path = write_trl_completions(recs, tempfile.mkdtemp(), step=3)
    >>> pl.read_parquet(path).select("step", "completion", pl.col("advantage").round(4)).rows()
    [('3', '2', 0.707), ('3', '3', -0.707)]
    """
    _check(records, step, "write_trl_completions")
    chats = [_messages(r) for r in records]
    rewards = [float(r["score"]) for r in records]
    keys = [json.dumps(c, ensure_ascii=False) for c in chats]
    frame = pl.DataFrame({
        "step": [str(step)] * len(records),
        "prompt": chats,
        "completion": [str(r["response"]) for r in records],
        REWARD_NAME: rewards,
        "advantage": group_advantages(rewards, keys),
    }, schema={"step": pl.Utf8, "prompt": pl.List(pl.Struct({"role": pl.Utf8, "content": pl.Utf8})),
               "completion": pl.Utf8, REWARD_NAME: pl.Float64, "advantage": pl.Float64})
    out = Path(folder) / "completions"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"completions_{step:05d}.parquet"
    frame.write_parquet(path)
    return path

"""A reward model scoring rollouts for ``rlvitals rm-compare``: served over HTTP (``--base-url URL --model NAME``)
or loaded in this process (``--local PATH``, :class:`LocalScorer`) (docs/reading-rules.md#rm-compare).

The server is vLLM's (``vllm serve MODEL --runner pooling``, or ``--task reward`` in older releases) or any that
answers its pooling route: ``POST {root}/pooling`` with ``{"model": NAME, "input": [text, ...]}`` returns
``{"data": [{"index": i, "data": ...}, ...]}``. A reward model pools per token or once; the score of an input is
the last number of what it returned for it (the reward at the last token). The text scored is the prompt followed
by the response, as the policy saw and wrote them (a veRL dump's ``input`` is already the chat template's text).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..errors import ProbeError
from ..words import Words
from ._http import Retry, post

#: what to check when the reward model does not answer (the end of :func:`._http.post`'s message)
_NO_ANSWER = Words("is the reward model served there (vllm serve MODEL --runner pooling), and is --base-url the "
                   "server's root?",
                   "奖励模型是否在那里提供服务（vllm serve MODEL --runner pooling）？--base-url 是否为服务器的根地址？")

__all__ = ["BATCH", "LocalScorer", "PoolingScorer", "last_number"]

#: inputs per request
BATCH = 32
#: what a busy or restarting server answers: tried again


def last_number(value: Any) -> float | None:
    """The last number of a (nested) list, or the number itself; None when there is none.

    >>> last_number([[0.1], [0.4], [-1.5]]), last_number(2), last_number([]), last_number("x")
    (-1.5, 2.0, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        for item in reversed(value):
            found = last_number(item)
            if found is not None:
                return found
    return None


class PoolingScorer:
    """Scores texts with the reward model ``model`` served at ``base_url`` (the server's root; a trailing ``/v1``,
    as ``rlvitals probe`` takes it, is dropped: the pooling route is not under it). A refused connection, a timeout
    or a busy status is tried ``retries`` more times, waiting ``backoff · 2^i`` seconds."""

    def __init__(self, base_url: str, model: str, *, timeout: float = 120.0, retries: int = 3, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        root = base_url.rstrip("/")
        self.url = (root[: -len("/v1")] if root.endswith("/v1") else root) + "/pooling"
        self.model, self.timeout, self.retries, self.backoff, self.sleep = model, timeout, retries, backoff, sleep
        self.requests = 0

    def _post(self, texts: Sequence[str]) -> bytes:
        data = orjson.dumps({"model": self.model, "input": list(texts)})
        return post(self.url, data, {"Content-Type": "application/json"},
                    Retry(self.retries, self.backoff, self.timeout, self.sleep), _NO_ANSWER, self._count)

    def _count(self) -> None:
        self.requests += 1

    def _scores(self, texts: Sequence[str]) -> list[float]:
        raw = self._post(texts)
        try:
            rows = orjson.loads(raw)["data"]
            by_index = {int(row.get("index", i)): last_number(row["data"]) for i, row in enumerate(rows)}
            scores = [by_index[i] for i in range(len(texts))]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, ValueError, AttributeError):
            scores = []
        if len(scores) != len(texts) or any(s is None for s in scores):
            said = raw[:200].decode("utf-8", "replace")
            raise ProbeError(Words(f"{self.url}: the reply is not a pooling answer with one score per input "
                                   f"({len(texts)} sent): {said}",
                                   f"{self.url}：回复不是每个输入各一个分数的 pooling 结果（发送了 {len(texts)} 条）："
                                   f"{said}"))
        return [float(s) for s in scores if s is not None]

    def score(self, texts: Sequence[str]) -> list[float]:
        """One score per text, ``BATCH`` texts a request, in order."""
        out: list[float] = []
        for start in range(0, len(texts), BATCH):
            out.extend(self._scores(texts[start: start + BATCH]))
        return out


class LocalScorer:
    """A reward model in this process (``rm-compare --local PATH``): a transformers sequence-classification
    checkpoint with one output (a reward head: ``*ForSequenceClassification`` with ``num_labels = 1``, as TRL's
    RewardTrainer and OpenRLHF save them), on the CPU, ``batch`` texts at a time; the score is its one logit at the
    last token that is not padding. A checkpoint without its head (a causal LM, whose head transformers would
    initialise at random) is refused: its scores would be noise."""

    def __init__(self, path: Path, *, threads: int = 2, batch: int = 8) -> None:
        from .local import LocalBackend

        if LocalBackend.check(path):
            raise ProbeError(Words(f"{path}: a GGUF file holds a language model, not a reward model; give the folder "
                                   "of a reward model (config.json with one label, and its weights)",
                                   f"{path}：GGUF 文件里是语言模型而不是奖励模型；请给出奖励模型的文件夹"
                                   "（config.json 中只有一个 label，以及权重）"))
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        torch.set_num_threads(threads)
        self.tokenizer: Any = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        net, info = AutoModelForSequenceClassification.from_pretrained(
            str(path), dtype=torch.float32, local_files_only=True, num_labels=1, output_loading_info=True)
        missing = sorted(str(k) for k in info.get("missing_keys", ()))
        if missing:
            raise ProbeError(Words(f"{path}: not a reward model: its checkpoint lacks {', '.join(missing[:3])} (the "
                                   "head that gives the score); give the folder a reward-model trainer saved",
                                   f"{path}：不是奖励模型：检查点里缺少 {', '.join(missing[:3])}（给出分数的头）；"
                                   "请给出奖励模型训练保存的文件夹"))
        self.net: Any = net
        self.net.train(False)
        self.tokenizer.padding_side = "right"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.net.config.pad_token_id = self.tokenizer.pad_token_id
        self.batch, self.requests = batch, 0
        self.url = str(path)

    def score(self, texts: Sequence[str]) -> list[float]:
        """One score per text, in order."""
        import torch

        out: list[float] = []
        for start in range(0, len(texts), self.batch):
            enc = self.tokenizer(list(texts[start: start + self.batch]), return_tensors="pt", padding=True)
            with torch.no_grad():
                logits = self.net(**enc).logits
            self.requests += 1
            out.extend(float(x) for x in logits[:, 0].tolist())
        return out

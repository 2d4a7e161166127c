"""A transformers model in this process as the probes' backend (``rlvitals probe --local PATH``): a model
folder (``config.json`` and weights) or one GGUF file. Chat requests go through the tokenizer's chat
template; completions are the plain prompt. Greedy requests (temperature 0) are generated in batches with
left padding; a sampled request alone, from a generator seeded with its ``seed``, so the same request gives
the same text. Needs the ``rlvitals[model]`` extra (torch, transformers; gguf for a GGUF file).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError, ProbeError
from ..words import Words
from .prompts import Reply, Request

__all__ = ["LocalBackend"]

INSTALL = "pip install 'rlvitals[model]'"


class LocalBackend:
    """``path`` loaded once, on the CPU (``threads`` torch threads), ``batch`` greedy requests at a time."""

    def __init__(self, path: Path, *, threads: int = 2, batch: int = 8) -> None:
        gguf = self.check(path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging

        hf_logging: Any = logging  # its functions are untyped
        torch.set_num_threads(threads)
        where, extra = (str(path.parent), {"gguf_file": path.name}) if gguf else (str(path), {})
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # the loader's bars would be drawn over rlvitals' own progress
        try:
            self.tokenizer: Any = AutoTokenizer.from_pretrained(where, local_files_only=True, **extra)
            self.net: Any = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, local_files_only=True,
                                                                 **extra)
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        self.net.train(False)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = path.name
        self.batch = batch

    @staticmethod
    def check(path: Path) -> bool:
        """Whether ``path`` is a GGUF file, once it is known to be a model this process can load (nothing is
        loaded): the packages are there, the folder has ``config.json`` or the file ends in ``.gguf``; else
        MissingExtraError or ProbeError, saying what to do."""
        gguf = path.suffix.lower() == ".gguf"
        needed = ["torch", "transformers", *(["gguf"] if gguf else [])]
        missing = [n for n in needed if importlib.util.find_spec(n) is None]
        if missing:
            raise MissingExtraError(Words(f"--local needs {', '.join(missing)}; install with: {INSTALL}",
                                          f"--local 需要 {', '.join(missing)}；安装：{INSTALL}"))
        if not (path.is_file() if gguf else (path / "config.json").is_file()):
            raise ProbeError(Words(f"{path}: not a model: give a folder with config.json or a .gguf file",
                                   f"{path}：不是模型：请给出含 config.json 的文件夹或一个 .gguf 文件"))
        return gguf

    def _text_of(self, request: Request) -> str:
        if request.api == "chat":
            return str(self.tokenizer.apply_chat_template([{"role": "user", "content": request.prompt}],
                                                          tokenize=False, add_generation_prompt=True))
        return request.prompt

    def _run(self, requests: Sequence[Request]) -> list[str]:
        import torch

        texts = [self._text_of(r) for r in requests]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True,
                             add_special_tokens=requests[0].api != "chat")
        sampled = requests[0].temperature > 0
        kwargs: dict[str, Any] = {"max_new_tokens": max(r.max_tokens for r in requests), "do_sample": sampled,
                                  "pad_token_id": self.tokenizer.pad_token_id}
        if sampled:
            kwargs["temperature"] = requests[0].temperature
            torch.manual_seed(requests[0].seed or 0)
        scored = any(r.logprobs for r in requests)
        with torch.no_grad():
            out = self.net.generate(**enc, **kwargs, output_scores=scored, return_dict_in_generate=scored)
        rows = out.sequences if scored else out
        width = enc["input_ids"].shape[1]
        texts = [str(self.tokenizer.decode(row[width:width + r.max_tokens], skip_special_tokens=True))
                 for row, r in zip(rows, requests, strict=True)]
        if not scored:
            return texts
        totals = self._logprobs(out.scores, rows[:, width:], [r.max_tokens for r in requests])
        return [Reply(t, total) if r.logprobs else t for t, total, r in zip(texts, totals, requests, strict=True)]

    def _logprobs(self, scores: Any, tokens: Any, caps: Sequence[int]) -> list[float]:
        """Per row, the sum of the log-probabilities of its generated tokens up to and with its end of text, at
        most its ``caps`` tokens (``scores``: the logits at each generated position, as ``generate`` gives them)."""
        import torch

        logp = torch.stack([torch.log_softmax(s.float(), dim=-1) for s in scores], dim=1)  # rows × steps × vocab
        picked = logp.gather(2, tokens[:, :logp.shape[1], None]).squeeze(2)
        eos = self.tokenizer.eos_token_id
        totals = []
        for row, toks, cap in zip(picked, tokens, caps, strict=True):
            ends = (toks[:len(row)] == eos).nonzero()
            upto = min(int(ends[0]) + 1 if len(ends) else len(row), cap)
            totals.append(float(row[:upto].sum()))
        return totals

    def generate(self, requests: Sequence[Request]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(requests):
            if requests[i].temperature > 0:
                out.extend(self._run(requests[i:i + 1]))
                i += 1
                continue
            j = i
            while j < len(requests) and j - i < self.batch and requests[j].temperature == 0 \
                    and requests[j].api == requests[i].api:
                j += 1
            out.extend(self._run(requests[i:j]))
            i = j
        return out

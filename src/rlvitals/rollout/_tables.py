"""Rollouts from the tables a training logged to its tracker (W&B, Trackio, SwanLab, MLflow; found and read
by :func:`rlvitals.ingest.logged_tables`), in the layouts their writers use:

- **TRL completions** (``log_completions=True`` with ``report_to`` W&B or Trackio: the key
  ``completions``): ``step``, ``prompt``, ``completion``, a column per reward function, ``advantage`` — the
  same columns as TRL's completion files, read by the same mapping (:mod:`._trl`);
- **veRL validation generations** (``trainer.log_val_generations``, the key ``val/generations``): to W&B one
  row per step, ``step, input_1, output_1, score_1, input_2 …``, each table repeating every row logged
  before it (a step's rows are read once, from the first table holding them); to SwanLab and MLflow a row
  per sample, ``step, input, output, score``; to Trackio a trace per sample, its ``messages`` (the user's
  prompt and the assistant's reply) and its ``score``. These are validation samples: the split is ``val``.
- **OpenRLHF generated samples** (its PPO trainer's ``WandbLogger``, the key ``train/generated_samples``):
  ``global_step, text, reward``, one sample a global step (the first sequence of the step's first
  experience batch, decoded with its prompt: the text is prompt and response in one), each table repeating
  every row logged before it (a step's row is read once). These are training samples: the split is ``train``.
  To TensorBoard (its ``TensorboardLogger``, when W&B is off) the same sample is a text a global step, under
  the tag ``train/generated_samples`` (torch's ``add_text`` adds ``/text_summary``), reading
  ``Sample:\\n<text>\\n\\nReward: <reward to 4 decimals>``, each ``\\n`` two characters from 0.9.1 on (newlines
  in 0.7.3-0.9.0). The text and the reward are read back out of it; a text of that tag in another shape is a
  counted skip.

Each veRL sample is its own group (veRL logs one response per validation prompt). One key is read: TRL's
completions when the run logged them, else the first key in one of these layouts; the others are named in
a note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import polars as pl

from ..errors import EmptyInputError
from ..ingest import LoggedTable, SkipLog, logged_tables
from ..words import Words
from ._columns import WHERE, frame_from_rows

Layout = Literal["trl", "wide", "long", "trace", "openrlhf", "openrlhf-text"]

#: the W&B-style key of TRL's completions table
TRL_KEY = "completions"
#: OpenRLHF's sample tag, and torch's add_text suffix (TensorBoard shows the tag with it)
OPENRLHF_TAG, _TEXT_SUFFIX = "train/generated_samples", "/text_summary"
#: OpenRLHF's TensorBoard sample text: f"Sample:\\n{text}\\n\\nReward: {reward:.4f}" (0.9.1 on: the \n are two
#: characters), f"Sample:\n{text}\n\nReward: {reward:.4f}" (0.7.3-0.9.0: newlines); the last Reward line is the reward
_SAMPLE = re.compile(r"Sample:(?P<sep>\n|\\n)(?P<text>.*)(?P=sep)(?P=sep)Reward: "
                     r"(?P<reward>[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf))", re.DOTALL)


def layout(rows: Sequence[dict[str, Any]]) -> Layout | None:
    """Which writer's layout a table's rows are in (by the first row's columns), or None."""
    first = rows[0] if rows else {}
    if "prompt" in first and "completion" in first:
        return "trl"
    if "input_1" in first and "output_1" in first:
        return "wide"
    if "input" in first and "output" in first:
        return "long"
    if isinstance(first.get("messages"), list):
        return "trace"
    if "global_step" in first and "text" in first and "reward" in first:
        return "openrlhf"
    if set(first) == {"text"} and isinstance(first["text"], str) and openrlhf_sample(first["text"]) is not None:
        return "openrlhf-text"
    return None


def _layout(t: LoggedTable) -> Layout | None:
    """A table's layout; a TensorBoard text under OpenRLHF's tag is OpenRLHF's sample whatever its shape (a text
    not in it is then a skip, not a reason to pass the tag over)."""
    if t.writer == "tensorboard" and t.key.removesuffix(_TEXT_SUFFIX) == OPENRLHF_TAG:
        return "openrlhf-text"
    return layout(t.rows)


def _chosen(tables: list[LoggedTable], notes: list[str]) -> tuple[str, Layout, list[LoggedTable]]:
    kinds: dict[str, Layout | None] = {}
    for t in tables:
        if kinds.get(t.key) is None:
            kinds[t.key] = _layout(t)
    known = [k for k, v in kinds.items() if v is not None]
    if not known:
        return "", "long", []
    key = next((k for k in known if kinds[k] == "trl"), known[0])
    others = [k for k in kinds if k != key]
    if others:
        notes.append(Words(f"the rollouts are the table {key!r}; the other logged tables ({', '.join(others)}) "
                           "were not read", f"rollout 取自表 {key!r}；其他记录的表（{'、'.join(others)}）没有读取"))
    return key, kinds[key] or "long", [t for t in tables if t.key == key]


def _text(value: Any) -> Any:
    """A trace message's content as text (Trackio keeps a string, or a list of ``{"type": "text"…}`` parts)."""
    if isinstance(value, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
    return value


_CHAT = pl.List(pl.Struct({"role": pl.Utf8, "content": pl.Utf8}))


def _chat(values: list[Any]) -> pl.Series | None:
    """A column of chat message lists as TRL's completion files hold them (``role``, ``content`` text; a
    content of parts joined), or None when the column is not all chats."""
    if not all(v is None or (isinstance(v, list) and all(isinstance(m, dict) for m in v)) for v in values):
        return None
    return pl.Series([None if v is None else [{"role": None if m.get("role") is None else str(m["role"]),
                                               "content": _content(m.get("content"))} for m in v] for v in values],
                     dtype=_CHAT)


def _content(value: Any) -> str | None:
    text = _text(value)
    return None if text is None else str(text)


def _trl_frame(t: LoggedTable) -> pl.DataFrame:
    """One logged completions table as TRL's completion file reads: chats as message lists, a text step."""
    rows = [{**r, "step": str(r.get("step", t.step)), WHERE: f"{t.where}#{n}"} for n, r in enumerate(t.rows, 1)]
    df = frame_from_rows([{k: v for k, v in r.items() if k not in ("prompt", "completion")} for r in rows])
    for name in ("prompt", "completion"):
        values = [r.get(name) for r in rows]
        chats = _chat(values)
        df = df.with_columns(chats.alias(name) if chats is not None else frame_from_rows([{name: v} for v in values]
                                                                                          ).get_column(name))
    return df


def _last_per_step(tables: list[LoggedTable], notes: list[str]) -> list[LoggedTable]:
    """The last table logged at each step (by its rows' ``step``): TRL logs its completions again at the end
    of training, and at a step that also evaluates, as its completion file for that step is overwritten."""
    kept: dict[object, LoggedTable] = {}
    for t in tables:
        kept[t.rows[0].get("step", t.step) if t.rows else t.step] = t
    if len(kept) < len(tables):
        again = len(tables) - len(kept)
        notes.append(Words(f"{again} table(s) logged again at a step already logged: the last one of each step was "
                           "read", f"有 {again} 张表是在已记录过的步上再次记录的：每步只读最后一张"))
    return list(kept.values())


def _wide(tables: list[LoggedTable]) -> list[dict[str, Any]]:
    rows, seen = [], set()
    for t in tables:
        for n, row in enumerate(t.rows, 1):
            step = row.get("step", t.step)
            i = 1
            while f"input_{i}" in row or f"output_{i}" in row:
                if (step, i) not in seen:
                    seen.add((step, i))
                    rows.append({"step": step, "prompt": row.get(f"input_{i}"), "response": row.get(f"output_{i}"),
                                 "score": row.get(f"score_{i}"), "sample_index": i - 1, WHERE: f"{t.where}#{n}"})
                i += 1
    return rows


def _long(tables: list[LoggedTable]) -> list[dict[str, Any]]:
    return [{**{k: v for k, v in row.items() if k not in ("input", "output")}, "step": row.get("step", t.step),
             "prompt": row.get("input"), "response": row.get("output"), WHERE: f"{t.where}#{n}"}
            for t in tables for n, row in enumerate(t.rows, 1)]


def _traces(tables: list[LoggedTable]) -> list[dict[str, Any]]:
    rows = []
    for t in tables:
        for n, row in enumerate(t.rows, 1):
            chat = [m for m in row.get("messages") or [] if isinstance(m, dict)]
            last = max((i for i, m in enumerate(chat) if m.get("role") == "assistant"), default=len(chat))
            asked = [str(_text(m.get("content"))) for m in chat[:last] if m.get("role") == "user"]
            reply = _text(chat[last].get("content")) if last < len(chat) else None
            rest = {k: v for k, v in row.items() if k != "messages"}
            rows.append({**rest, "step": t.step, "prompt": asked[-1] if asked else None, "response": reply,
                         WHERE: f"{t.where}#{n}"})
    return rows


def _openrlhf(tables: list[LoggedTable]) -> list[dict[str, Any]]:
    """OpenRLHF's samples: each table repeats the rows before it, so a step's row is read once (the first time)."""
    rows, seen = [], set()
    for t in tables:
        for n, row in enumerate(t.rows, 1):
            step = row.get("global_step", t.step)
            if step not in seen:
                seen.add(step)
                rows.append({"step": step, "prompt": None, "response": row.get("text"), "score": row.get("reward"),
                             WHERE: f"{t.where}#{n}"})
    return rows


def openrlhf_sample(said: str) -> tuple[str, float] | None:
    r"""The decoded text and the reward in one of OpenRLHF's TensorBoard sample texts, or None when ``said`` is
    not in that shape (the reward as written: rounded to 4 decimals).

    >>> openrlhf_sample("Sample:\\nUser: 1+1?\nAssistant: 2</s>\\n\\nReward: 1.0000")
    ('User: 1+1?\nAssistant: 2</s>', 1.0)
    """
    m = _SAMPLE.fullmatch(said)
    return None if m is None else (m["text"], float(m["reward"]))


def _openrlhf_texts(tables: list[LoggedTable], skips: SkipLog) -> list[dict[str, Any]]:
    """OpenRLHF's samples as TensorBoard texts: the text and reward read out of each, the step the text's own;
    a step's first text is read (a restarted run may log a step again); a text in another shape is skipped."""
    rows, seen = [], set()
    for t in tables:
        for row in t.rows:
            said = row.get("text")
            sample = openrlhf_sample(said) if isinstance(said, str) else None
            if sample is None:
                head = str(said)[:40] + ("…" if len(str(said)) > 40 else "")
                skips.skip(t.where, Words(
                    f"the text {t.key!r} at step {t.step} is not OpenRLHF's sample ('Sample:\\n<text>\\n\\nReward: "
                    f"<reward>'): it reads {head!r}; it was skipped",
                    f"第 {t.step} 步的文本 {t.key!r} 不是 OpenRLHF 的样本（'Sample:\\n<文本>\\n\\nReward: <reward>'）："
                    f"内容是 {head!r}；已跳过"))
            elif t.step not in seen:
                seen.add(t.step)
                rows.append({"step": t.step, "prompt": None, "response": sample[0], "score": sample[1],
                             WHERE: t.where})
    return rows


def read(path: Path, skips: SkipLog, notes: list[str]) -> tuple[Layout, list[tuple[str, pl.DataFrame]], str]:
    """The rollouts the run at ``path`` logged as tables: the layout, the frames (one per logged table for
    TRL's completions, with TRL's columns and a text ``step``; one frame of ``step, prompt, response,
    score`` otherwise) and the format's name (``wandb-table``…)."""
    tables = logged_tables(path, skips)
    key, kind, chosen = _chosen(tables, notes)
    if not chosen:
        keys = sorted({t.key for t in tables})
        said = Words(f"it logged tables ({', '.join(keys)}), none of them completions or generations",
                     f"它记录的表（{'、'.join(keys)}）都不是 completions 或生成结果") if keys else \
            Words("it logged no tables", "它没有记录任何表")
        raise EmptyInputError(Words(f"{path}: no rollouts in this run: {said}; log TRL's completions "
                                    "(log_completions=True) or veRL's validation generations "
                                    "(trainer.log_val_generations), or give a rollout dump",
                                    f"{path}：这个运行里没有 rollout：{said.zh}；请记录 TRL 的 completions"
                                    "（log_completions=True）或 veRL 的验证生成结果（trainer.log_val_generations），"
                                    "或给出 rollout 文件"))
    fmt = f"{chosen[0].writer}-{'text' if kind == 'openrlhf-text' else 'table'}"
    if kind == "trl":
        return kind, [(t.where, _trl_frame(t)) for t in _last_per_step(chosen, notes)], fmt
    if kind in ("openrlhf", "openrlhf-text"):
        rows = _openrlhf(chosen) if kind == "openrlhf" else _openrlhf_texts(chosen, skips)
        notes.append(Words(f"OpenRLHF's generated samples ({key!r}): one training sample per global step, its "
                           "prompt and response in one text (OpenRLHF logs the decoded sequence), each its own group",
                           f"OpenRLHF 的生成样本（{key!r}）：每个 global step 一条训练样本，prompt 和回答在同一段文本里"
                           "（OpenRLHF 记录的是解码后的整条序列），各自成组"))
        if kind == "openrlhf-text":
            notes.append(Words("the reward of each sample is read from its text's 'Reward:' line, rounded to 4 "
                               "decimals as OpenRLHF's TensorBoard logger writes it",
                               "每条样本的 reward 取自其文本中的 'Reward:' 一行，"
                               "按 OpenRLHF 的 TensorBoard 记录器的写法保留 4 位小数"))
        return kind, [(str(path), frame_from_rows(rows))], fmt
    rows = _wide(chosen) if kind == "wide" else _traces(chosen) if kind == "trace" else _long(chosen)
    notes.append(Words(f"veRL's validation generations ({key!r}): one response per prompt, each its own group",
                       f"veRL 的验证生成结果（{key!r}）：每个 prompt 一个回答，各自成组"))
    return kind, [(str(path), frame_from_rows(rows))], fmt

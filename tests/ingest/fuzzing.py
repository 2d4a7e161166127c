"""The mutation fuzzer of every reader: seed inputs (real files cut short, or files written by the
real writers), mutators that know the inputs' structure, and the rule every input must keep.

Mutators, by what they know:

- **bytes**: flip, insert, delete, overwrite with extremes (``0xff`` runs, NULs), truncate;
- **lines**: delete, duplicate, swap, cut a line, insert a nasty line, CRLF and lone CR endings;
- **tokens**: a number replaced by an extreme (``1e309``, ``-0``, ``2**64``, a 5,000-digit integer,
  ``NaN``), a key or string by a nasty one (a lone surrogate escape, terminal escapes, NUL, 10 kB),
  a value by a nesting bomb;
- **encodings**: a BOM, the whole text as UTF-16, a byte that is not UTF-8;
- **frames** (TensorBoard, W&B): a record's payload mutated at the byte level and framed again with
  valid checksums, so the mutation reaches the decoder behind the CRC instead of being stopped by it.

The rule (:func:`check_one`): reading the mutated file either gives runs or raises an
``RlvitalsError`` (a clear message); diagnosing a run it gave never raises. Anything else — any
other exception — is a crash.
"""

from __future__ import annotations

import json
import random
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from rlvitals.ingest import masked_crc32c
from rlvitals.rollout import write_trl_completions, write_verl_dump
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "benchmarks" / "corpus" / "runs"
REAL = ROOT.parent / "shared" / "fixtures" / "real"
REGRESSIONS = Path(__file__).with_name("regressions")

NASTY_NUMBERS = [b"1e309", b"-1e309", b"-0", b"0.0", b"NaN", b"nan", b"Infinity", b"-inf", b"1e-400",
                 b"18446744073709551616", b"-9223372036854775809", b"9223372036854775807", b"9" * 5000,
                 b"0x1F", b"1_000", b"", b"null", b"true", b'""', b"[]", b"{}", b"1.5.5", b"--1", b"+7"]
NASTY_STRINGS = [b"\\ud800", b"\\udfff\\ud800", b"\x1b[2J\x1b[31mred", b"\x00", b"a" * 10_000, "é中\u202e".encode(),
                 b"\\u0000", b"'", b'"', b"\\", b"step", b"_step", b"global_step", b"\x7f\x85", b"</table>",
                 b"<script>", b"%s%n", b"${x}"]
NASTY_LINES = [b"", b"{", b"}", b"[" * 3000 + b"]" * 3000, b'{"step": ' + b"[" * 3000, b"step:",
               b"step:1 - a:", b"step:-5 - actor/entropy:0.5", b"step:99999999999999999999 - x:1",
               b"Traceback (most recent call last):", b"{'loss': nan, 'epoch': inf}", b"\xff\xfe\x00",
               b"epoch 1 iteration 2 loss=nan", b"\x1b]0;title\x07", b'{"a": 1e99999}', b'{"step": 1.5}']
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
STRING = re.compile(rb'"[^"\\\n]{1,40}"|\'[^\'\\\n]{1,40}\'')


@dataclass(frozen=True)
class Seed:
    """One reader's seed: the file name it is written under (readers sniff by name and content), the
    bytes, and how they are framed (``text``, ``json``, ``tfrecord``, ``wandb`` or ``binary``)."""

    reader: str
    name: str
    data: bytes
    kind: str = "text"


# --- mutators ----------------------------------------------------------------------------------------


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        at = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(at, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 2:
            del b[at:at + rng.randint(1, 64)]
        elif op == 3:
            b[at:at + 8] = rng.choice([b"\xff" * 8, b"\x00" * 8, b"\x80" * 10, b"\x7f\xff\xff\xff"])
        elif op == 4:
            del b[at:]
        else:
            chunk = bytes(b[at:at + rng.randint(1, 256)])
            b[at:at] = chunk * rng.randint(1, 4)
    return bytes(b)


def mutate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(7)
        i = rng.randrange(len(lines))
        if op == 0 and len(lines) > 1:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = lines[i][:rng.randint(0, len(lines[i]))]
        elif op == 4:
            lines.insert(i, rng.choice(NASTY_LINES))
        elif op == 5:
            return b"\r\n".join(lines)
        else:
            return b"\r".join(lines)
    return b"\n".join(lines)


def mutate_tokens(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 3)):
        pattern, pool = (NUMBER, NASTY_NUMBERS) if rng.random() < 0.6 else (STRING, NASTY_STRINGS)
        found = list(pattern.finditer(data))
        if not found:
            continue
        m = rng.choice(found)
        new = rng.choice(pool)
        if pattern is STRING:
            q = m.group()[:1]
            new = q + new + q
        data = data[:m.start()] + new + data[m.end():]
    return data


def mutate_encoding(data: bytes, rng: random.Random) -> bytes:
    op = rng.randrange(4)
    if op == 0:
        return b"\xef\xbb\xbf" + data
    if op == 1:
        return data.decode("utf-8", "replace").encode("utf-16")
    if op == 2:
        at = rng.randrange(len(data) + 1)
        return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]) + data[at:]
    return data.decode("utf-8", "replace").encode("latin-1", "replace")


def mutate_json(data: bytes, rng: random.Random) -> bytes:
    """A JSON document changed as a document: a value somewhere replaced by a nasty one."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # an earlier mutation made it no document (or a nesting bomb)
        return mutate_tokens(data, rng)
    nasty: list[object] = [None, True, "", "x" * 5000, -1, 2**64, 10**400, 1e308, float("nan"), [], {}, "\ud800",
                           [[[[[[[[[[[]]]]]]]]]]], {"step": "1"}, "\x1b[31m"]
    for _ in range(rng.randint(1, 4)):
        doc = _replace_somewhere(doc, rng, rng.choice(nasty))
    try:
        return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError, RecursionError):
        return data


def _replace_somewhere(doc: object, rng: random.Random, value: object, depth: int = 0) -> object:
    if depth > 6 or rng.random() < 0.25:
        return value
    if isinstance(doc, dict) and doc:
        key = rng.choice(list(doc))
        if rng.random() < 0.15:
            doc = {(k if k != key else str(value)[:50]): v for k, v in doc.items()}
        else:
            doc[key] = _replace_somewhere(doc[key], rng, value, depth + 1)
        return doc
    if isinstance(doc, list) and doc:
        i = rng.randrange(len(doc))
        if rng.random() < 0.1:
            del doc[i]
        else:
            doc[i] = _replace_somewhere(doc[i], rng, value, depth + 1)
        return doc
    return value


# --- framing: valid checksums around mutated payloads --------------------------------------------------


def tfrecords(data: bytes) -> list[bytes]:
    """The payloads of a TFRecord (event) file, as far as they are intact."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        if pos + 16 + length > len(data):
            break
        out.append(data[pos + 12:pos + 12 + length])
        pos += 16 + length
    return out


def frame_tfrecords(payloads: list[bytes]) -> bytes:
    out = bytearray()
    for p in payloads:
        head = struct.pack("<Q", len(p))
        out += head + struct.pack("<I", masked_crc32c(head)) + p + struct.pack("<I", masked_crc32c(p))
    return bytes(out)


WANDB_HEADER = 7
WANDB_BLOCK = 32 * 1024


def wandb_records(data: bytes) -> list[bytes]:
    """The records of a W&B ``.wandb`` file (LevelDB log framing), joined across blocks."""
    out: list[bytes] = []
    parts: list[bytes] = []
    pos, block_end = WANDB_HEADER, WANDB_BLOCK
    while pos + 7 <= len(data):
        if block_end - pos < 7:
            pos, block_end = block_end, block_end + WANDB_BLOCK
            continue
        _crc, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0 or pos + 7 + length > min(block_end, len(data)):
            break
        payload = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            out.append(payload)
        elif kind == 2:
            parts = [payload]
        else:
            parts.append(payload)
            if kind == 4:
                out.append(b"".join(parts))
    return out


def frame_wandb(header: bytes, records: list[bytes]) -> bytes:
    out = bytearray(header[:WANDB_HEADER])
    for rec in records:
        left, first = rec, True
        while True:
            room = WANDB_BLOCK - len(out) % WANDB_BLOCK
            if room < 7:
                out += b"\0" * room
                room = WANDB_BLOCK
            chunk, left = left[:room - 7], left[room - 7:]
            kind = (1 if not left else 2) if first else (4 if not left else 3)
            out += struct.pack("<IHB", zlib.crc32(chunk, zlib.crc32(bytes((kind,)))), len(chunk), kind) + chunk
            first = False
            if not left:
                break
    return bytes(out)


def mutate_frames(seed: Seed, rng: random.Random) -> bytes:
    payloads = tfrecords(seed.data) if seed.kind == "tfrecord" else wandb_records(seed.data)
    for _ in range(rng.randint(1, 3)):
        if not payloads:
            break
        i = rng.randrange(len(payloads))
        op = rng.randrange(4)
        if op == 0:
            payloads[i] = mutate_bytes(payloads[i], rng)
        elif op == 1:
            payloads[i] = mutate_tokens(payloads[i], rng)  # JSON values inside W&B items, strings in TB tags
        elif op == 2:
            payloads.insert(i, payloads[rng.randrange(len(payloads))])
        else:
            del payloads[i]
    return frame_tfrecords(payloads) if seed.kind == "tfrecord" else frame_wandb(seed.data, payloads)


def mutate(seed: Seed, rng: random.Random) -> bytes:
    """One mutated input from ``seed``: a mutator fitting its kind (and now and then a raw one)."""
    if seed.kind in ("tfrecord", "wandb"):
        return mutate_frames(seed, rng) if rng.random() < 0.8 else mutate_bytes(seed.data, rng)
    if seed.kind == "binary":
        return mutate_bytes(seed.data, rng)
    choices: list[Callable[[bytes, random.Random], bytes]] = [mutate_lines, mutate_tokens, mutate_tokens,
                                                               mutate_encoding, mutate_bytes]
    if seed.kind == "json":
        choices += [mutate_json, mutate_json, mutate_json]
    data = seed.data
    for _ in range(rng.randint(1, 2)):
        data = rng.choice(choices)(data, rng)
    return data


def inputs(seed: Seed, n: int, salt: int = 0) -> Iterator[tuple[int, bytes]]:
    """``n`` mutated inputs of ``seed``, the same ones on every machine (seeded by the reader's name)."""
    rng = random.Random(f"{seed.reader}:{salt}")
    for i in range(n):
        yield i, mutate(seed, rng)


# --- seeds -------------------------------------------------------------------------------------------

READERS = ["verl-console", "verl-jsonl", "jsonl", "trl-state", "trl-console", "openrlhf-console",
           "deepspeed-chat-console", "minimind-console", "posttraining-llm-small-console", "csv", "parquet",
           "notebook", "tensorboard", "wandb-offline", "mlflow"]


def _head(path: Path, lines: int) -> bytes:
    with path.open("rb") as fh:
        return b"".join(line for _, line in zip(range(lines), fh, strict=False))


def _trl_state() -> bytes:
    doc = json.loads((REAL / "trl__UnslothGRPO__checkpoint-250_trainer_state.json").read_text())
    doc["log_history"] = doc["log_history"][:12]
    return json.dumps(doc, indent=2).encode()


def _parquet(tmp: Path) -> bytes:
    path = tmp / "m.parquet"
    pl.DataFrame({"step": list(range(1, 21)), "train/loss": [1 / i for i in range(1, 21)],
                  "train/reward": [i / 20 for i in range(1, 21)]}).write_parquet(path)
    return path.read_bytes()


def _mlflow(tmp: Path) -> bytes:
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("sqlalchemy")
    db = tmp / "mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
        mlflow.set_tracking_uri(f"sqlite:///{db}")
        mlflow.set_experiment("fuzz")
        with mlflow.start_run(run_name="seed"):
            mlflow.log_params({"algorithm/adv_estimator": "grpo"})
            for step in range(1, 8):
                mlflow.log_metrics({"actor/entropy": 1 / step, "critic/score/mean": step / 10}, step=step)
    return db.read_bytes()


def _tensorboard() -> bytes:
    [events] = (CORPUS / "tb__fine-tune-experiments__qwen2-0.5b-grpo-numinamath").rglob("events.out.tfevents.*")
    return frame_tfrecords(tfrecords(events.read_bytes()[:400_000])[:120])


def _wandb() -> bytes:
    [run] = (CORPUS / "wandb__t-lab-alignment__distilbert-rewardtrainer-wvk49vqj").rglob("*.wandb")
    data = run.read_bytes()
    return frame_wandb(data, wandb_records(data)[:80])


def build_seeds(tmp: Path) -> dict[str, Seed]:
    """Every reader's seed; the MLflow one is written by MLflow (skipped where it is not installed)."""
    generic = b"".join(json.dumps({"step": i, "loss": 1 / i, "reward": i / 10, "note": "ok"}).encode() + b"\n"
                       for i in range(1, 15))
    seeds = [
        Seed("verl-console", "train.log", _head(REAL / "verl__verl_training_log__grpo_run_deepseek7b_llm.log", 220)),
        Seed("verl-jsonl", "metrics.jsonl", b"".join(x + b"\n" for x in jsonl_lines(Scenario(steps=12)))),
        Seed("jsonl", "metrics.jsonl", generic),
        Seed("trl-state", "trainer_state.json", _trl_state(), "json"),
        Seed("trl-console", "train.log",
             _head(CORPUS / "trlconsole__hotpotqa_qwen25_3b_grpo_v3" / "grpo_v3.log", 160)),
        Seed("openrlhf-console", "train.log", "\n".join([
            "[2025-08-13 19:20:01,123] [INFO] [real_accelerator.py:254:get_accelerator] Setting ds_accelerator",
            *(f"INFO 08-13 19:25:4{i} ppo_trainer.py:547] ✨ Global step {i}: {{'policy_loss': 0.0{i}, "
              f"'kl': 0.00{i}, 'reward': 0.{i}, 'response_length': 31{i}.0, 'actor_lr': 5e-07}}" for i in range(1, 8)),
            "INFO 08-13 19:31:02 ppo_trainer.py:560] ✨ Evaluation completed in 0:01:02, global_step 6, "
            "eval_metrics: {'eval_gsm8k_pass1': 0.41}"]).encode() + b"\n"),
        Seed("deepspeed-chat-console", "train.log",
             _head(CORPUS / "other__deepspeed-chat__opt1.3b-ppo-step3"
                   / "actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log", 220)),
        Seed("minimind-console", "grpo.log", _head(CORPUS / "other__minimind-from-scratch__grpo-v1-model-reward-30m"
                                                   / "grpo.log", 200)),
        Seed("posttraining-llm-small-console", "train.log", _head(
            CORPUS / "other__posttraining-llm-small__gemma2-2b-lora-grpo-collapse" / "train_grpo_gemma2_5.log", 200)),
        Seed("csv", "training_table.csv", (REAL / "trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv")
             .read_bytes()),
        Seed("parquet", "metrics.parquet", _parquet(tmp), "binary"),
        Seed("notebook", "kto.ipynb", (CORPUS / "other__model-diffing__qwen3-0.6b-kto-qlora-loss-flat"
                                       / "kto-trainer.ipynb").read_bytes(), "json"),
        Seed("tensorboard", "events.out.tfevents.1.host", _tensorboard(), "tfrecord"),
        Seed("wandb-offline", "run-fuzz.wandb", _wandb(), "wandb"),
        Seed("mlflow", "mlflow.db", _mlflow(tmp), "binary"),
    ]
    return {s.reader: s for s in seeds}


def rollout_seeds(tmp: Path) -> Iterator[Seed]:
    records = [{"prompt": f"What is {p} + {p}?", "response": f"<think>{p}+{p}</think> \\boxed{{{2 * p + s % 2}}}",
                "score": float(s % 2 == 0), "target": str(2 * p)} for p in range(4) for s in range(4)]
    verl = write_verl_dump(records, tmp / "verl", step=1)
    yield Seed("verl-dump", verl.name, verl.read_bytes())
    trl = write_trl_completions(records, tmp / "trl", step=1)
    yield Seed("trl-completions", trl.name, trl.read_bytes(), "binary")

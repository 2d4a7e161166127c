"""The mutation fuzzer of every reader: seed inputs (real files cut short, or files written by the
real writers), mutators that know the inputs' structure, and the rule every input must keep.

Mutators, by what they know:

- **bytes**: flip, insert, delete, overwrite with extremes (``0xff`` runs, NULs), truncate;
- **lines**: delete, duplicate, swap, cut a line, insert a nasty line, CRLF and lone CR endings;
- **tokens**: a number replaced by an extreme (``1e309``, ``-0``, ``2**64``, a 5,000-digit integer,
  ``NaN``), a key or string by a nasty one (a lone surrogate escape, terminal escapes, NUL, 10 kB),
  a value by a nesting bomb;
- **encodings**: a BOM, the whole text as UTF-16, a byte that is not UTF-8;
- **frames** (TensorBoard, W&B, SwanLab): a record's payload mutated at the byte level and framed again with
  valid checksums, so the mutation reaches the decoder behind the CRC instead of being stopped by it;
- **zip members** (a ClearML session's zip): a member's text mutated and the zip written again, its CRCs valid;
- **folders** (a plain folder of runs, :mod:`.odd_folders`): entries that are no plain log — names that are
  not UTF-8, FIFOs, links to devices, to nothing or in a loop, empty files, a folder named like a log — put
  around real logs.

A seed of a tracker that writes a folder (SwanLab, MLflow's file store) is one of its files, mutated, written
back among the run's other files as the writer left them; the folder is what is read.

The rule (:func:`check_one`): reading the mutated file either gives runs or raises an
``RlvitalsError`` (a clear message); diagnosing a run it gave never raises. Anything else — any
other exception, an input read for more than its deadline, a read that takes 1 GB of memory — is a crash.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import resource
import signal
import struct
import subprocess
import sys
import traceback
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from rlvitals import diagnose, load
from rlvitals.errors import RlvitalsError
from rlvitals.ingest import masked_crc32c
from rlvitals.rollout import write_trl_completions, write_verl_dump
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "benchmarks" / "corpus" / "runs"
REAL = ROOT / "tests" / "fixtures" / "real"
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
    bytes, and how they are framed (``text``, ``json``, ``tfrecord``, ``wandb``, ``swanlab``, ``zip`` or
    ``binary``). A file of a run folder is written at its path in the folder (``name``, relative), among the
    folder's other files as the writer left them (``beside``), and the folder (``root``, relative) is read;
    ``fmt`` is the format that reads it, when the seed is named otherwise (one reader, several seeds)."""

    reader: str
    name: str
    data: bytes
    kind: str = "text"
    beside: tuple[tuple[str, bytes], ...] = ()
    root: str | None = None
    fmt: str | None = None

    @property
    def format(self) -> str:
        return self.fmt or self.reader

    def write(self, folder: Path, data: bytes) -> Path:
        """``data`` written as the seed's file in ``folder`` (with the files beside it): the path to read."""
        for name, content in ((self.name, data), *self.beside):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(content)
        return folder / (self.root if self.root is not None else self.name)


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
    """A record's payload mutated, framed again: TFRecord, or the LevelDB log of W&B and SwanLab (its header
    kept)."""
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


def mutate_zip(data: bytes, rng: random.Random) -> bytes:
    """A zip with one member changed as what it holds (a JSON document, or lines of text), written again with
    valid CRCs, so the mutation reaches the reader behind the zip's checks; a member is also dropped or
    added now and then."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    name = rng.choice(sorted(members))
    op = rng.randrange(10)
    if op == 0:
        del members[name]
    elif op == 1:
        members[f"{name}.copy"] = members[name]
    else:
        mutators = [mutate_json] if name.endswith(".json") else [mutate_lines, mutate_tokens, mutate_encoding]
        members[name] = rng.choice([*mutators, mutate_bytes])(members[name], rng)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for member, content in members.items():
            z.writestr(member, content)
    return out.getvalue()


def mutate(seed: Seed, rng: random.Random) -> bytes:
    """One mutated input from ``seed``: a mutator fitting its kind (and now and then a raw one)."""
    if seed.kind in ("tfrecord", "wandb", "swanlab"):
        return mutate_frames(seed, rng) if rng.random() < 0.8 else mutate_bytes(seed.data, rng)
    if seed.kind == "zip":
        return mutate_zip(seed.data, rng) if rng.random() < 0.8 else mutate_bytes(seed.data, rng)
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


# --- the rule --------------------------------------------------------------------------------------

#: mutated inputs per seed (the suite's smoke run: 120)
BUDGET = int(os.environ.get("RLVITALS_FUZZ_INPUTS", "120"))
HANG = 120  # seconds one small input may take before it counts as a hang (not a speed limit: a loop guard)
MEMORY = 1 << 30  # bytes one small input may add to the process's peak memory (no read should come near it)


class Hang(Exception):
    pass


def guarded(fn: Callable[[], Any], seconds: int = HANG) -> Any:
    """``fn()``, or :class:`Hang` after ``seconds`` (a read waiting on a FIFO is interrupted too)."""
    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _peak() -> int:
    """The process's peak resident memory so far, in bytes (Linux counts it in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def check_one(path: Path, fmt: str | None, deep: bool, seconds: int = HANG) -> str | None:
    """What went wrong reading ``path`` (a traceback, no answer within ``seconds``, a read that took
    :data:`MEMORY`), or None: runs, or an RlvitalsError."""
    before = _peak()
    try:
        runs = guarded(lambda: load(path, fmt), seconds)
        if deep:
            for run in runs:
                guarded(lambda run=run: diagnose(run), seconds)
    except RlvitalsError:
        pass
    except Exception:  # noqa: BLE001 - what the fuzzer is here to find
        return traceback.format_exc(limit=-6)
    grown = _peak() - before
    return f"reading it grew the peak memory by {grown} bytes" if grown > MEMORY else None


def checked(fmt: str | None) -> Callable[[Path], str | None]:
    """:func:`check_one` as the fuzzer runs it: every third input read with ``fmt`` forced, every eighth
    run diagnosed too (the diagnosis is the slow part)."""
    count = iter(range(10**9))
    return lambda path: check_one(path, fmt if next(count) % 3 == 0 else None, next(count) % 8 == 0)


def fuzz(seed: Seed, folder: Path, check: Callable[[Path], str | None], budget: int,
         save: Callable[[str, str, bytes], Path | None] = lambda *_: None) -> list[str]:
    """``budget`` mutated inputs of ``seed``, each written in a folder of its own under ``folder`` and
    checked: what went wrong with each that failed (``save`` may keep the input, and says where)."""
    crashes: list[str] = []
    for i, data in inputs(seed, budget):
        case = folder / f"case{i}"
        case.mkdir(parents=True)
        problem = check(seed.write(case, data))
        if problem is not None:
            saved = save(seed.reader, seed.name, data)
            crashes.append(f"input {i} ({len(data)} bytes{f', saved as {saved.name}' if saved else ''}):\n{problem}")
    return crashes


# --- seeds -------------------------------------------------------------------------------------------

READERS = ["verl-console", "verl-jsonl", "jsonl", "trl-state", "trl-console", "openrlhf-console",
           "deepspeed-chat-console", "minimind-console", "posttraining-llm-small-console", "csv", "parquet",
           "notebook", "tensorboard", "wandb-offline", "mlflow", "mlflow-file", "mlflow-meta", "swanlab",
           "swanlab-config", "trackio"]


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
        _mlflow_run(mlflow)
    return db.read_bytes()


def _mlflow_run(mlflow: object) -> None:
    mlflow.set_experiment("fuzz")  # type: ignore[attr-defined]
    with mlflow.start_run(run_name="seed"):  # type: ignore[attr-defined]
        mlflow.log_params({"algorithm/adv_estimator": "grpo"})  # type: ignore[attr-defined]
        for step in range(1, 8):
            mlflow.log_metrics({"actor/entropy": 1 / step, "critic/score/mean": step / 10},  # type: ignore[attr-defined]
                               step=step)


def _files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _in_folder(reader: str, files: dict[str, bytes], name: str, kind: str, root: str, fmt: str) -> Seed:
    """The seed of the file ``name`` of a run folder whose files are ``files``."""
    return Seed(reader, name, files[name], kind, tuple((k, v) for k, v in files.items() if k != name), root, fmt)


def _mlflow_files(tmp: Path) -> list[Seed]:
    """A metric file and the run's meta.yaml of an MLflow file store MLflow wrote."""
    mlflow = pytest.importorskip("mlflow")
    store = tmp / "mlruns"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mp.setenv("MLFLOW_TRACKING_URI", store.as_uri())
        mlflow.set_tracking_uri(store.as_uri())
        _mlflow_run(mlflow)
    files = {f"mlruns/{k}": v for k, v in _files_of(store).items() if not k.startswith(".trash")}
    metric = next(k for k in files if k.endswith("/metrics/actor/entropy"))
    meta = metric.replace("metrics/actor/entropy", "meta.yaml")
    return [_in_folder("mlflow-file", files, metric, "text", "mlruns", "mlflow"),
            _in_folder("mlflow-meta", files, meta, "text", "mlruns", "mlflow")]


#: a SwanLab run and a Trackio project written by the real libraries, in a process of their own (offline)
_TRACKERS = """
import sys
import swanlab, trackio
swanlab.init(project="rlv", experiment_name="fuzz", mode="offline", logdir=sys.argv[1] + "/swanlog",
             config={"algorithm": {"adv_estimator": "grpo"}, "actor_rollout_ref": {"actor": {"lr": 1e-6}}, "n": 8})
trackio.init(project="fuzz", name="seed", config={"algorithm": {"adv_estimator": "grpo"}, "lr": 1e-6})
for step in range(12):
    data = {"actor/entropy": 1.0 / (step + 1), "critic/score/mean": step / 12, "actor/pg_loss": -0.01 * step}
    if step % 4 == 3:
        data["val-core/openai/gsm8k/reward/mean@4"] = step / 20
    swanlab.log(data, step=step)
    trackio.log(data)
swanlab.finish()
trackio.finish()
"""


def _trackers(tmp: Path) -> list[Seed]:
    """SwanLab's run file and config, and Trackio's project database, as their libraries wrote them."""
    pytest.importorskip("swanlab")
    pytest.importorskip("trackio")
    folder = tmp / "trackers"
    env = {**os.environ, "TRACKIO_DIR": str(folder / "trackio"), "HOME": str(folder / "home")}
    subprocess.run([sys.executable, "-c", _TRACKERS, str(folder)], cwd=tmp, env=env, capture_output=True,
                   timeout=300, check=True)
    files = {f"swanlog/{k}": v for k, v in _files_of(folder / "swanlog").items()}
    run = next(k for k in files if k.endswith(".swanlab"))
    config = next(k for k in files if k.endswith("files/config.yaml"))
    return [_in_folder("swanlab", files, run, "swanlab", "swanlog", "swanlab"),
            _in_folder("swanlab-config", files, config, "text", "swanlog", "swanlab"),
            Seed("trackio", "fuzz.db", (folder / "trackio" / "fuzz.db").read_bytes(), "binary")]


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
        *_mlflow_files(tmp),
        *_trackers(tmp),
    ]
    return {s.reader: s for s in seeds}


def rollout_seeds(tmp: Path) -> Iterator[Seed]:
    records = [{"prompt": f"What is {p} + {p}?", "response": f"<think>{p}+{p}</think> \\boxed{{{2 * p + s % 2}}}",
                "score": float(s % 2 == 0), "target": str(2 * p)} for p in range(4) for s in range(4)]
    verl = write_verl_dump(records, tmp / "verl", step=1)
    yield Seed("verl-dump", verl.name, verl.read_bytes())
    trl = write_trl_completions(records, tmp / "trl", step=1)
    yield Seed("trl-completions", trl.name, trl.read_bytes(), "binary")

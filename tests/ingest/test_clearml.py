"""ClearML offline sessions as the real clearml library writes them (``Task.set_offline(True)``), read
without it: value for value what the script reported, from the session folder and from its zip, and from a
session whose process was killed while it reported."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import polars as pl
import pytest

from rlvitals import load
from rlvitals.errors import InputError
from rlvitals.ingest import SkipLog, SourceMeta, clearml_offline, find_reader
from rlvitals.words import in_lang

from .serving import served

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

pytest.importorskip("clearml")

STEPS = 30

#: a training script: veRL-style titles and series (``actor`` / ``entropy`` is ``actor/entropy``), HF's
#: ``train``/``eval`` titles, a NaN and infinities, a single value; killed (``os._exit``) when asked
SCRIPT = """
import math, os, sys, time
from clearml import Task
Task.set_offline(offline_mode=True)
task = Task.init(project_name="rlv", task_name="exp-a", auto_resource_monitoring=False,
                 auto_connect_frameworks=False, auto_connect_arg_parser=False)
task.connect({"algorithm": {"adv_estimator": "grpo"}, "lr": 1e-6, "n": 8, "use_kl": True, "model": "qwen"})
log = task.get_logger()
for i in range(int(sys.argv[1])):
    log.report_scalar(title="actor", series="entropy", value=1.0 / (i + 1), iteration=i)
    log.report_scalar(title="critic", series="score/mean", value=i / STEPS, iteration=i)
    log.report_scalar(title="actor", series="grad_norm",
                      value=math.nan if i == 5 else math.inf if i == 6 else 0.5 + i % 3, iteration=i)
    if i % 10 == 9:
        log.report_scalar(title="eval", series="loss", value=i / 100, iteration=i)
log.report_single_value("final_score", 0.75)
if len(sys.argv) > 2:
    log.flush()
    time.sleep(2)  # the reporter thread writes its last batch
    os._exit(0)  # killed: no close, no zip
task.close()
""".replace("STEPS", str(STEPS))


def reported(step: int) -> dict[str, float]:
    """What the file holds for what SCRIPT reports at ``step``: ClearML writes a NaN or an infinity as 0.0."""
    out = {"actor/entropy": 1.0 / (step + 1), "critic/score/mean": step / STEPS,
           "actor/grad_norm": 0.0 if step in (5, 6) else 0.5 + step % 3}
    if step % 10 == 9:
        out["eval/loss"] = step / 100
    return out


#: seconds the script is given (it takes 10-20 s): ClearML's close now and then hangs for minutes on a loaded
#: machine (the suite on two workers saw it once in a few runs), so a script past this is killed and run again
#: once in a fresh folder
SCRIPT_SECONDS = 120


def write(root: Path, steps: int = STEPS, killed: bool = False) -> Path:
    """The cache's ``offline/`` folder after the script ran (HOME and the cache inside ``root``; inside
    ``root/again`` when the first run hung)."""
    try:
        return _script(root, steps, killed)
    except subprocess.TimeoutExpired:
        return _script(root / "again", steps, killed)


def _script(root: Path, steps: int, killed: bool) -> Path:
    (root / "home").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(root / "home"), "CLEARML_CACHE_DIR": str(root / "cache")}
    args = [sys.executable, "-c", SCRIPT, str(steps)] + (["killed"] if killed else [])
    # the script's own exit is what is waited for, then every process it started is killed, as a scheduler ends
    # a job: ClearML's reporter lives on after the script (half a minute, once five), holding any pipe a capture
    # would wait for; stderr goes to a file. Killed or not, the session is whatever the script left behind.
    with (root / "stderr.txt").open("w") as log:
        proc = subprocess.Popen(args, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        try:
            code = proc.wait(timeout=SCRIPT_SECONDS)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    assert code == 0, (root / "stderr.txt").read_text()
    return root / "cache" / "offline"


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("cm"))


def at(frame: pl.DataFrame, key: str, step: int) -> float | None:
    hit = frame.filter(pl.col("step") == step)
    return None if hit.is_empty() or key not in hit.columns else hit[key].item()


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


def value_at(run: object, key: str, step: int) -> float | None:
    for frame in [run.raw, *run.validation.values()]:  # type: ignore[attr-defined]
        if key in frame.columns:
            got = at(frame.filter(pl.col(key).is_not_null()), key, step)
            if got is not None:
                return got
    return None


@pytest.mark.process
def test_a_session_reads_what_the_script_reported(offline: Path) -> None:
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    (archive,) = offline.glob("*.zip")
    assert archive.stem == folder.name  # closed: the folder and its zip
    assert find_reader(offline).format == "clearml" and clearml_offline.runs(offline) == [folder]
    assert clearml_offline.runs(offline.parent) == [folder]  # the cache folder itself
    [run] = load(offline)
    assert run.skipped.count == 0 and run.steps.tolist() == list(range(STEPS))
    for step in range(STEPS):
        for key, value in reported(step).items():
            assert same(value_at(run, key, step), value), (key, step)
    assert run.summary == {"final_score": 0.75}
    config = run.config
    assert (config["algorithm.adv_estimator"], config["lr"], config["n"], config["use_kl"], config["model"]) == (
        "grpo", 1e-6, 8, True, "qwen")
    assert config["clearml.name"] == "exp-a" and config["clearml.project_name"] == "rlv"
    assert run.framework == "verl" and run.algorithm == "grpo"


@pytest.mark.process
def test_the_zip_is_the_same_session(offline: Path) -> None:
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    (archive,) = offline.glob("*.zip")
    assert find_reader(archive).format == "clearml"
    a, b = load(folder)[0], load(archive)[0]
    assert a.raw.equals(b.raw) and a.config == b.config and a.summary == b.summary


@pytest.mark.process
def test_a_killed_session_is_read_as_far_as_it_was_written(tmp_path: Path) -> None:
    offline = write(tmp_path, steps=200, killed=True)
    assert not list(offline.glob("*.zip"))  # never closed
    [run] = load(offline)
    assert 0 < len(run.steps) <= 200
    for step in run.steps.tolist()[:-1]:
        assert same(value_at(run, "actor/entropy", step), 1.0 / (step + 1))


@pytest.mark.process
def test_a_line_cut_by_a_kill_is_a_counted_skip(offline: Path, tmp_path: Path) -> None:
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    metrics = copy / "metrics.jsonl"
    data = metrics.read_bytes()
    metrics.write_bytes(data + data.splitlines(keepends=True)[0][:50])
    [run] = load(copy)
    assert run.skipped.count == 1
    assert run.skipped.reasons[0].endswith("an incomplete last line (the session was killed or is still writing); "
                                           "it was skipped")
    assert run.steps.tolist() == list(range(STEPS))


def test_not_a_session_is_told_in_both_languages(tmp_path: Path) -> None:
    with pytest.raises(InputError) as got:
        list(clearml_offline.read(tmp_path, SourceMeta("clearml"), SkipLog()))
    assert str(got.value) == (f"{tmp_path}: not a ClearML offline session (an offline-<id>/ folder with task.json, "
                              "or its .zip); pass a session or the cache's offline/ folder")
    assert got.value.text("zh") == (f"{tmp_path}：不是 ClearML 的离线会话（含 task.json 的 offline-<id>/ 文件夹或其 "
                                    ".zip）；请传入某个会话，或缓存里的 offline/ 文件夹")


@pytest.mark.process
def test_the_session_is_followed_as_it_grows(offline: Path, tmp_path: Path) -> None:
    """``watch`` re-reads a session when it changes (its metrics file grows by batches)."""
    import io

    from rlvitals.watch.state import WatchState
    from rlvitals.watch.view import PlainView
    from rlvitals.watch.watcher import Watcher, WatchOptions

    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    import orjson

    # a short session flushes one batch (one line); a long one writes a batch per flush: ten of them here
    events = [e for line in (folder / "metrics.jsonl").read_bytes().splitlines() for e in orjson.loads(line)]
    lines = [orjson.dumps(events[i * len(events) // 10:(i + 1) * len(events) // 10]) + b"\n" for i in range(10)]
    now = [1000.0]
    w = Watcher([copy], WatchState(tmp_path / "state.sqlite"), [], WatchOptions(min_gap=0.0),
                view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: now[0], timer=lambda: 0.0)
    seen = []
    for share in (0.3, 0.6, 1.0):
        (copy / "metrics.jsonl").write_bytes(b"".join(lines[: max(1, int(len(lines) * share))]))
        time.sleep(0.01)
        now[0] += 10
        w.cycle()
        seen.append(len(w.full[str(copy)].run.steps))
    assert seen == sorted(seen) and seen[-1] == STEPS and seen[0] < STEPS
    w.close()


@pytest.mark.process
def test_serve_lists_the_session_of_the_cache_folder(offline: Path, tmp_path: Path) -> None:
    runs, notes = served(offline.parent, tmp_path)
    assert [(r["status"], r["steps"], r["last_step"]) for r in runs] == [("ready", STEPS, STEPS - 1)], notes


# --- FIFOs, devices and zip bombs -------------------------------------------------------------------------------


@pytest.mark.process
def test_a_fifo_named_like_a_session_zip_is_never_opened(offline: Path, tmp_path: Path) -> None:
    """A FIFO named ``offline-<id>.zip`` beside a session: looking whether it was a session's zip waited for a
    writer forever; it is no session now, and the session beside it is read."""
    from .specials import load_in_child, plant

    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    cache = tmp_path / "offline"
    shutil.copytree(folder, cache / folder.name)
    plant(cache / "offline-fifo.zip", "fifo")
    [run] = load_in_child(cache)["runs"]
    assert run["path"] == str(cache / folder.name) and run["steps"] == STEPS


@pytest.mark.process
def test_a_sessions_metrics_that_are_a_device_are_counted_and_never_opened(offline: Path, tmp_path: Path) -> None:
    from .specials import load_in_child, plant

    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    (copy / "metrics.jsonl").unlink()
    device = plant(copy / "metrics.jsonl", "zero")
    got = load_in_child(copy)
    assert got["error"] == (f"{copy}: read as clearml but it holds no metrics; 1 records were unreadable, first: "
                            f"{device}: a device, not a log file; it was not opened")


#: 1 MiB of spaces: what the zips below inflate, a piece at a time
_PIECE = b" " * (1 << 20)


def _zip(path: Path, members: list[tuple[str, list[tuple[bytes, int]]]]) -> None:
    """A zip written by hand, so a member inflating to gigabytes is made in a second: each member is given as
    ``(bytes, times)`` pieces, each piece deflated once (with a full flush: a piece's deflated bytes stand
    alone) and its deflated bytes repeated ``times`` times; the CRC is of everything it inflates to."""
    out, central = bytearray(), bytearray()
    for name, pieces in members:
        deflated, crc, size = bytearray(), 0, 0
        for i, (data, times) in enumerate(pieces):
            z = zlib.compressobj(9, zlib.DEFLATED, -15)
            last = i == len(pieces) - 1 and times == 1
            block = z.compress(data) + z.flush(zlib.Z_FINISH if last else zlib.Z_FULL_FLUSH)
            deflated += block * times
            for _ in range(times):
                crc = zlib.crc32(data, crc)
            size += len(data) * times
        if pieces[-1][1] != 1:  # the last piece repeated: a final empty block ends the stream
            deflated += zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(deflated), size, len(name), 0)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(deflated), size,
                               len(name), 0, 0, 0, 0, 0, len(out)) + name.encode()
        out += head + name.encode() + deflated
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)
    path.write_bytes(bytes(out + central + end))


#: the child that reads a zip with at most 1 GB of address space (its peak, should it inflate a member whole)
_LIMITED = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import rlvitals, rlvitals.words
from rlvitals.errors import RlvitalsError
try:
    [run] = rlvitals.load(sys.argv[1])
except RlvitalsError as exc:
    print(json.dumps({"error": str(exc), "zh": exc.text("zh")}))
else:
    print(json.dumps({"steps": len(run.steps), "reasons": [str(r) for r in run.skipped.reasons],
                      "zh": [rlvitals.words.in_lang(r, "zh") for r in run.skipped.reasons]}))
"""


def _limited(path: Path) -> dict[str, object]:
    from .specials import in_child

    answer: dict[str, object] = json.loads(in_child(_LIMITED, str(path)))
    return answer


@pytest.mark.process
def test_a_zip_bomb_member_is_refused_with_the_cap_named(offline: Path, tmp_path: Path) -> None:
    """A 1.5 MB zip whose metrics inflate to 1.5 GB: read whole it took 3.2 GB of memory (here: over the
    child's 1 GB, a MemoryError). The member over the cap is not read, and the refusal names it and the cap."""
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    bomb = tmp_path / "offline-bomb.zip"
    _zip(bomb, [("task.json", [((folder / "task.json").read_bytes(), 1)]), ("metrics.jsonl", [(_PIECE, 1500)])])
    assert bomb.stat().st_size < 2_000_000
    got = _limited(bomb)
    why = ("its metrics.jsonl holds 1572864000 bytes (inflated), more than the 1073741824 bytes rlvitals reads of a "
           "session's metrics.jsonl (a zip bomb, or no ClearML session); it was not read")
    assert got["error"] == (f"{bomb}: read as clearml but it holds no metrics; 1 records were unreadable, first: "
                            f"{bomb}: {why}")
    assert str(got["zh"]).endswith(f"{bomb}: 其中的 metrics.jsonl 有 1572864000 字节（解压后），超过 rlvitals "
                                   "对会话 metrics.jsonl 的读取上限 1073741824 字节（像是 zip 炸弹，或者不是 ClearML "
                                   "会话）；没有读取")


@pytest.mark.process
def test_a_members_lines_are_streamed_so_a_long_one_costs_no_memory(offline: Path, tmp_path: Path) -> None:
    """A session zip whose metrics hold, between its real lines, a line of 800 MB (under the cap): read a line
    at a time with at most 1 GB of address space, the long line is one counted skip, every step is read."""
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    lines = (folder / "metrics.jsonl").read_bytes()
    zipped = tmp_path / "offline-long.zip"
    _zip(zipped, [("task.json", [((folder / "task.json").read_bytes(), 1)]),
                  ("metrics.jsonl", [(b"\n", 1), (_PIECE, 800), (b"\n" + lines, 1)])])
    got = _limited(zipped)
    assert got == {"steps": STEPS, "reasons": [f"{zipped}/metrics.jsonl:2: a line longer than 16777216 bytes; it was "
                                               "skipped"],
                   "zh": [f"{zipped}/metrics.jsonl:2: 这一行超过 16777216 字节；已跳过"]}


@pytest.mark.process
def test_a_task_too_large_is_refused_in_both_languages(offline: Path, tmp_path: Path) -> None:
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    zipped = tmp_path / "offline-task.zip"
    _zip(zipped, [("task.json", [(_PIECE, 65)]), ("metrics.jsonl", [((folder / "metrics.jsonl").read_bytes(), 1)])])
    with pytest.raises(InputError) as got:
        load(zipped)
    assert str(got.value) == (f"{zipped}: its task.json holds 68157440 bytes (inflated), more than the 67108864 bytes "
                              "rlvitals reads of a session's task.json (a zip bomb, or no ClearML session); it was "
                              "not read")
    assert got.value.text("zh") == (f"{zipped}：其中的 task.json 有 68157440 字节（解压后），超过 rlvitals 对会话 "
                                    "task.json 的读取上限 67108864 字节（像是 zip 炸弹，或者不是 ClearML 会话）；"
                                    "没有读取")


@pytest.mark.process
def test_a_member_damaged_past_its_lines_keeps_what_was_read(offline: Path, tmp_path: Path) -> None:
    """A zip whose metrics fail their checksum at their end (the session's line, then 8 MB of blanks: zipfile
    checks the CRC once it has inflated the last byte): the line read before is kept, and the damage is a
    counted skip."""
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    zipped = tmp_path / "offline-damaged.zip"
    _zip(zipped, [("task.json", [((folder / "task.json").read_bytes(), 1)]),
                  ("metrics.jsonl", [((folder / "metrics.jsonl").read_bytes(), 1), (_PIECE, 8)])])
    data = bytearray(zipped.read_bytes())
    at = data.rindex(b"metrics.jsonl") - 30  # the member's CRC in the central directory (the one zipfile checks)
    data[at:at + 4] = b"\0\0\0\0"
    zipped.write_bytes(bytes(data))
    [run] = load(zipped)
    assert len(run.steps) == STEPS and run.skipped.count == 1
    assert run.skipped.reasons == [f"{zipped}/metrics.jsonl:2: the zip member is damaged (Bad CRC-32 for file "
                                   "'metrics.jsonl'); the rest of it was skipped"]
    assert in_lang(run.skipped.reasons[0], "zh").endswith("压缩包成员已损坏（Bad CRC-32 for file 'metrics.jsonl'）；"
                                                          "余下的部分已跳过")


@pytest.mark.process
def test_mutated_sessions_read_or_fail_clearly(offline: Path, tmp_path: Path) -> None:
    """The fuzzer's mutations (:mod:`.fuzzing`) of the real session: its zip with a member changed (written
    again with valid CRCs), its metrics lines and its task document in the session folder. Each gives runs
    or a clear RlvitalsError, within the deadline and without a read that takes memory."""
    from .fuzzing import BUDGET, Seed, checked, fuzz

    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    (archive,) = offline.glob("*.zip")
    files = {f"{folder.name}/{p.name}": p.read_bytes() for p in folder.iterdir() if p.is_file()}
    seeds = [Seed("clearml", archive.name, archive.read_bytes(), "zip")]
    for name, kind in (("metrics.jsonl", "text"), ("task.json", "json")):
        mutated = f"{folder.name}/{name}"
        seeds.append(Seed(f"clearml-{name}", mutated, files[mutated], kind,
                          tuple((k, v) for k, v in files.items() if k != mutated), folder.name, "clearml"))
    for seed in seeds:
        crashes = fuzz(seed, tmp_path / seed.reader, checked("clearml"), BUDGET)
        assert not crashes, f"{len(crashes)} of {BUDGET} {seed.reader} inputs crashed; the first:\n{crashes[0]}"


@pytest.mark.process
def test_shapes_the_fuzzer_found_read_or_fail_clearly(offline: Path, tmp_path: Path) -> None:
    """Found by the fuzzer: hyperparameters that are no object, a parameter's type that is a list, and a zip of a
    version Python's zipfile does not read (its sniff raised NotImplementedError)."""
    (folder,) = [p for p in offline.iterdir() if p.is_dir()]
    task = json.loads((folder / "task.json").read_bytes())
    for name, hyperparams in (("scalar", 7), ("typed", {"General": {"lr": {"value": "0.1", "type": ["float"]}}})):
        copy = tmp_path / f"offline-{name}"
        shutil.copytree(folder, copy)
        (copy / "task.json").write_text(json.dumps({**task, "hyperparams": hyperparams}))
        [run] = load(copy)
        assert run.steps.tolist() == list(range(STEPS))
        assert run.config.get("lr") == (None if name == "scalar" else "0.1")  # the text, as no type says
    zipped = tmp_path / "offline-version.zip"
    _zip(zipped, [("task.json", [((folder / "task.json").read_bytes(), 1)]),
                  ("metrics.jsonl", [((folder / "metrics.jsonl").read_bytes(), 1)])])
    data = bytearray(zipped.read_bytes())
    at = data.rindex(b"PK\x01\x02")
    struct.pack_into("<H", data, at + 6, 255)  # "version needed to extract": 25.5, which zipfile refuses
    zipped.write_bytes(bytes(data))
    assert not clearml_offline.sniff(zipped, bytes(data[:64]))
    with pytest.raises(InputError, match=r"offline-version\.zip: this file is not a training log rlvitals can read"):
        load(zipped)

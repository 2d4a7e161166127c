"""logrotate's ``compress`` (with ``dateext``, with ``delaycompress``) and ``olddir``: the rotated
content is found compressed, or in another folder, and read from there; no step is lost.

Before, a rotated file that was only there compressed was named as missing ("compressed, not opened")
and its steps lost; now it is read through gzip (bz2, xz too), streamed into a temporary file whose size
is capped. A rotation into another folder is found when that folder is named (``--rotated-into``); an
unseen one still names the steps it lost, and now also the option that would have found them."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from rlvitals.ingest.rotated import RotationRules
from rlvitals.synthetic.simulate import console_lines
from rlvitals.watch.watcher import Watcher
from watch.test_watcher import LINES, SC, Clock, _append, _watcher

CONSOLE = [(line + "\n").encode() for line in console_lines(SC)]
HEADER = len(CONSOLE) - SC.steps


def _compress(path: Path, suffix: str = ".gz") -> Path:
    """What logrotate's ``compress`` does: gzip the rotated file beside it, then remove it."""
    packed = path.with_name(path.name + suffix)
    with path.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    return packed


def _stored_once(w: Watcher, log: Path) -> None:
    steps = [r.step for r in w.state.records(str(log)) if r.kind != "summary"]
    assert len(steps) == len(set(steps)), "a step stored twice"
    assert sorted(steps) == list(range(1, SC.steps + 1)), "steps lost"


def _clean(said: str) -> None:
    assert "not opened" not in said and "were not read" not in said and "not seen" not in said, said


@pytest.mark.parametrize("how", ["create", "copytruncate"])
def test_dateext_and_compress_read_the_rest_through_gzip(tmp_path: Path, how: str) -> None:
    """``dateext`` + ``compress`` (no ``delaycompress``): by the next look the log's old content is only in
    ``train.log-20261206.gz``; the lines the trainer wrote after the last look are read from it."""
    log = tmp_path / "train.log"
    log.write_bytes(b"".join(CONSOLE[:HEADER + 60]))
    clock = Clock()
    w, _, err = _watcher(tmp_path, log, [], clock)
    w.cycle()
    _append(log, b"".join(CONSOLE[HEADER + 60:HEADER + 80]))  # never seen at the log's path
    dated = tmp_path / "train.log-20261206"
    if how == "create":
        os.rename(log, dated)
        log.write_bytes(b"")
    else:
        shutil.copyfile(log, dated)
        with log.open("r+b") as fh:
            fh.truncate(0)
    _compress(dated)
    _append(log, b"".join(CONSOLE[HEADER + 80:]))
    clock.now += 1.0
    w.cycle()
    _stored_once(w, log)
    said = err.getvalue()
    _clean(said)
    assert "train.log-20261206.gz" in said, said
    w.close()


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_delaycompress_two_rotations_between_looks(tmp_path: Path, suffix: str) -> None:
    """``delaycompress``: the newest rotated file is plain, the older ones compressed. Two rotations between
    two looks: the file followed is ``.2`` compressed by then, the one rotated off after it ``.1``."""
    import bz2
    import lzma

    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:50]))
    clock = Clock()
    w, _, err = _watcher(tmp_path, log, [], clock)
    w.cycle()
    _append(log, b"".join(LINES[50:60]))
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(LINES[60:90]))
    os.rename(tmp_path / "run.jsonl.1", tmp_path / "run.jsonl.2")
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[suffix]
    second = tmp_path / "run.jsonl.2"
    with second.open("rb") as src, opener(tmp_path / f"run.jsonl.2{suffix}", "wb") as dst:
        shutil.copyfileobj(src, dst)
    second.unlink()
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(LINES[90:]))
    clock.now += 1.0
    w.cycle()
    _stored_once(w, log)
    _clean(err.getvalue())
    w.close()


def test_a_file_compressed_after_it_was_read_is_not_read_again(tmp_path: Path) -> None:
    """``delaycompress``: ``.1`` was read; at the next rotation it becomes ``.2.gz``: its steps are not read a
    second time from the compressed copy."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:50]))
    clock = Clock()
    w, _, err = _watcher(tmp_path, log, [], clock)
    w.cycle()
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(LINES[50:100]))
    clock.now += 1.0
    w.cycle()
    os.rename(tmp_path / "run.jsonl.1", tmp_path / "run.jsonl.2")
    _compress(tmp_path / "run.jsonl.2")
    _append(log, b"".join(LINES[100:120]))
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(LINES[120:]))
    clock.now += 1.0
    w.cycle()
    _stored_once(w, log)
    _clean(err.getvalue())
    w.close()


def test_rotated_into_another_folder_and_compressed_there(tmp_path: Path) -> None:
    """``olddir old`` + ``compress``: the rotated file is in ``old/`` (a path relative to the log's folder, as
    logrotate takes it), gzip'd before the watcher looks; and once more, renamed there by inode."""
    log = tmp_path / "train.log"
    (tmp_path / "old").mkdir()
    log.write_bytes(b"".join(CONSOLE[:HEADER + 40]))
    clock = Clock()
    w, _, err = _watcher(tmp_path, log, [], clock, rotation=RotationRules.of(["old"]))
    w.cycle()
    _append(log, b"".join(CONSOLE[HEADER + 40:HEADER + 55]))
    os.rename(log, tmp_path / "old" / "train.log.1")
    log.write_bytes(b"".join(CONSOLE[HEADER + 55:HEADER + 90]))
    _compress(tmp_path / "old" / "train.log.1")
    clock.now += 1.0
    w.cycle()
    _append(log, b"".join(CONSOLE[HEADER + 90:HEADER + 120]))
    os.rename(log, tmp_path / "old" / "train.log.2")  # renamed by inode into the other folder
    log.write_bytes(b"".join(CONSOLE[HEADER + 120:]))
    clock.now += 1.0
    w.cycle()
    _stored_once(w, log)
    _clean(err.getvalue())
    w.close()


def test_a_compressed_file_is_inflated_only_up_to_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rotated file that inflates beyond the cap is read up to it; the note says so, and the steps after it
    are named as not read."""
    import rlvitals.ingest.compressed as compressed

    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:10]))
    clock = Clock()
    w, _, err = _watcher(tmp_path, log, [], clock)
    w.cycle()
    cap = sum(map(len, LINES[10:30])) + 10
    monkeypatch.setattr(compressed, "INFLATE_CAP", cap)
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(LINES[10:60]))  # steps 11-60, of which 31-60 lie beyond the cap
    os.rename(tmp_path / "run.jsonl.1", tmp_path / "run.jsonl.2")
    _compress(tmp_path / "run.jsonl.2")
    os.rename(log, tmp_path / "run.jsonl.1")
    _compress(tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(LINES[60:]))
    clock.now += 1.0
    w.cycle()
    steps = sorted(r.step for r in w.state.records(str(log)) if r.kind != "summary")
    assert steps == list(range(1, 31)) + list(range(61, SC.steps + 1))
    said = err.getvalue()
    assert f"run.jsonl.1.gz: inflates to more than {cap} bytes; only its first {cap} bytes were read" in said, said
    assert "the steps after 30 and before 61 were not read: run.jsonl.1.gz inflated only up to the cap" in said, said
    w.close()

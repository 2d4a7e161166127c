"""A file beside a followed log is read as one of its rotations on evidence: a name a rotation tool gives
(``.1``, ``-20240101``, …) AND content the log's reader recognises. On a real run folder of the corpus
(a veRL console ``output.log`` with its ``source.toml``, ``labels.toml`` and ``overrides.yaml`` beside it),
rotated twice between two looks: the sidecars are never read into the log, whatever they are named."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rlvitals.ingest import FileCursor, advance, find_reader, rotations, same_format
from rlvitals.ingest.rotated import rotation_name

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
RUN = CORPUS / "verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy"


def _read_to_end(log: Path) -> FileCursor:
    return advance(FileCursor.start(log), log, log.stat(), log.stat().st_size, 0)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The corpus run's folder as it is: its log and the sidecars beside it."""
    out = tmp_path / "run"
    shutil.copytree(RUN, out)
    assert sorted(p.name for p in out.iterdir()) == ["labels.toml", "output.log", "overrides.yaml", "source.toml"]
    return out


def test_sidecars_are_not_named_as_rotations(folder: Path) -> None:
    log = folder / "output.log"
    shutil.copyfile(folder / "source.toml", folder / "output.log.source.txt")
    assert not any(rotation_name(log, p.name) for p in folder.iterdir())
    assert rotation_name(log, "output.log.1") and rotation_name(log, "output.1.log")


def test_a_sidecar_named_like_a_rotation_is_not_read_into_the_log(folder: Path) -> None:
    """The log is rotated twice between two looks (copytruncate to ``output.log.2``, then its next part to
    ``output.log.1``) while a TOML note is saved as ``output.log.3`` beside it and ``output.log.source.txt``:
    the old part is found by its content, the middle part by its name and content, the notes not at all."""
    log = folder / "output.log"
    lines = log.read_bytes().splitlines(keepends=True)
    first, middle, last = lines[:150], lines[150:300], lines[300:]
    log.write_bytes(b"".join(first))
    cursor = _read_to_end(log)
    reader = find_reader(RUN / "output.log")  # the reader that follows it
    assert reader.format == "verl-console"
    shutil.copyfile(log, folder / "output.log.2")  # copytruncate
    (folder / "output.log.1").write_bytes(b"".join(middle))  # rotated off before the next look
    shutil.copyfile(folder / "source.toml", folder / "output.log.3")  # a note, named like a rotation
    shutil.copyfile(folder / "source.toml", folder / "output.log.source.txt")
    later = cursor.mtime + 10**9
    for name in ("output.log.2", "output.log.1", "output.log.3", "output.log.source.txt"):
        os.utime(folder / name, ns=(later, later))
    with log.open("r+b") as fh:
        fh.truncate(0)
    log.write_bytes(b"".join(last))
    st = log.stat()
    kin = same_format(reader.sniff)
    found = rotations(cursor, (st.st_dev, st.st_ino), [], kin=kin)
    assert found.old is not None and found.old[0] == folder / "output.log.2"
    assert [p.name for p, _ in found.between] == ["output.log.1"]
    assert [p.name for p in found.refused] == ["output.log.3"]  # not read, and said (run.rotation)
    # the name alone would have taken the note for a rotation: the content is the evidence
    by_name = rotations(cursor, (st.st_dev, st.st_ino), [])
    assert sorted(p.name for p, _ in by_name.between) == ["output.log.1", "output.log.3"]
    assert kin(folder / "output.log.1") and not kin(folder / "output.log.3") and not kin(folder / "labels.toml")

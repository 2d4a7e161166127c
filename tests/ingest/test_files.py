"""How a reader opens a file: never a FIFO or a device (looked at before the open, and again once open), and a
folder reached through several links once, by its real path; a loop of links is a name, never an error."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rlvitals.errors import InputError
from rlvitals.ingest import SkipLog, _files, open_file, real_path, regular, unique
from rlvitals.words import in_lang

from .specials import plant


def _refusal(path: Path) -> BaseException:
    """What opening ``path`` raised, in a thread of its own: an open that waits on a FIFO fails the test (its
    thread is left behind) instead of hanging the suite."""
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            open_file(path).close()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    opener = threading.Thread(target=attempt, daemon=True)
    opener.start()
    opener.join(30)
    assert not opener.is_alive(), f"opening {path} waited for a writer, or reads a device for ever"
    assert outcome, f"{path} was opened"
    return outcome[0]


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom"])
def test_a_fifo_or_a_device_is_refused_before_it_is_opened(tmp_path: Path, kind: str) -> None:
    path = plant(tmp_path / "metrics.jsonl", kind)
    what = "a FIFO" if kind == "fifo" else "a device"
    got = _refusal(path)
    assert isinstance(got, InputError)
    assert str(got) == (f"{path}: {what}, not a log file; it was not opened (reading a FIFO or a device would wait "
                        "forever or never end)")
    zh = "一个 FIFO（命名管道）" if kind == "fifo" else "一个设备文件"
    assert got.text("zh") == (f"{path}：这是{zh}，不是日志文件；没有打开它"
                              "（读 FIFO 或设备文件会一直等下去，或者永远读不完）")


def test_a_fifo_put_in_a_files_place_after_the_look_is_refused_once_open(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The look before the open races a writer that puts a FIFO in the file's place: the open does not wait
    for one (O_NONBLOCK), and what was opened is looked at again."""
    fifo = plant(tmp_path / "train.log", "fifo")
    monkeypatch.setattr(_files, "special_kind", lambda path: None)  # the look saw the regular file it replaced
    got = _refusal(fifo)
    assert isinstance(got, InputError) and str(got).startswith(f"{fifo}: a FIFO, not a log file; it was not opened")


def test_a_regular_file_opens_and_a_folder_is_no_file(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"step:1 - loss:0.5\n")
    with open_file(log) as fh:
        assert fh.read() == b"step:1 - loss:0.5\n"
        assert os.get_blocking(fh.fileno())  # the descriptor reads as any other once open
    with pytest.raises(IsADirectoryError):
        open_file(tmp_path)


def test_regular_counts_each_special_file_it_leaves_out(tmp_path: Path) -> None:
    files = [tmp_path / "a", plant(tmp_path / "b", "fifo"), plant(tmp_path / "c", "zero"), tmp_path / "gone"]
    files[0].write_text("1 2 3\n")
    skips = SkipLog()
    assert regular(files, skips) == [files[0], files[3]]  # a file gone meanwhile is the open's to say
    assert skips.count == 2
    assert skips.reasons == [f"{files[1]}: a FIFO, not a log file; it was not opened",
                             f"{files[2]}: a device, not a log file; it was not opened"]
    assert in_lang(skips.reasons[1], "zh") == f"{files[2]}: 这是一个设备文件，不是日志文件；没有打开它"


def test_a_folder_reached_through_links_is_one_folder_and_a_loop_is_a_name(tmp_path: Path) -> None:
    (tmp_path / "exp3").mkdir()
    (tmp_path / "latest").symlink_to("exp3")
    (tmp_path / "again").symlink_to("latest")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(RuntimeError):
        (tmp_path / "a").resolve()  # what discovery called: a loop of links raised
    assert real_path(tmp_path / "a") == tmp_path / "a"
    listed = sorted(tmp_path.iterdir())  # a, again, b, exp3, latest
    assert unique(listed) == [tmp_path / "a", tmp_path / "b", tmp_path / "exp3"]  # the path through no link kept
    assert unique([tmp_path / "latest", tmp_path / "again"]) == [tmp_path / "latest"]  # no such path: the first

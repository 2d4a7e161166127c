"""watch --lang zh: what watch prints beside its alerts (waiting for rollouts, a log cut shorter, errors)
is Chinese, and the English is unchanged."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rlvitals.cli import main
from rlvitals.errors import RlvitalsError
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch.sinks import parse_sink
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions

LINES = [line + b"\n" for line in jsonl_lines(Scenario(steps=40))]


def _watch(tmp: Path, lang: str) -> str:
    log = tmp / "train.jsonl"
    log.write_bytes(b"".join(LINES))
    out, err = io.StringIO(), io.StringIO()
    code = main(["watch", str(log), "--rollouts", str(tmp / "nope"), "--once", "--lang", lang,
                 "--state", str(tmp / f"{lang}.sqlite")], out, err)
    assert code in (0, 1), err.getvalue()
    return err.getvalue()


def test_waiting_for_the_rollout_folder_is_said_in_chinese(tmp_path: Path) -> None:
    en, zh = _watch(tmp_path, "en"), _watch(tmp_path, "zh")
    assert f"rlvitals: {tmp_path / 'nope'}: no such rollout folder yet; waiting for it to appear" in en
    assert f"rlvitals：{tmp_path / 'nope'}：还没有这个 rollout 文件夹；等它出现" in zh
    assert "waiting for it" not in zh


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_log_cut_shorter_is_said_in_the_chosen_language(tmp_path: Path, lang: str) -> None:
    log = tmp_path / "train.jsonl"
    log.write_bytes(b"".join(LINES))
    out, err = io.StringIO(), io.StringIO()
    w = Watcher([log], WatchState(tmp_path / "w.sqlite"), [], WatchOptions(interval=0.01, min_gap=0.0, lang=lang),
                view=PlainView(out, err, lang), sleep=lambda s: None)
    w.cycle()
    log.write_bytes(b"".join(LINES[:5]))  # the trainer restarted and wrote the file anew
    w.cycle(force=True)
    said = err.getvalue()
    if lang == "zh":
        assert f"rlvitals：{log}：文件被截断了（在第 40 行之后）" in said, said
        assert "truncated" not in said
    else:
        assert f"rlvitals: {log}: the file was truncated after line 40" in said, said

def test_a_bad_alert_spec_has_its_chinese() -> None:
    with pytest.raises(RlvitalsError) as bad:
        parse_sink("ftp:somewhere", "en")
    assert str(bad.value).startswith("--alert 'ftp:somewhere': unknown sink 'ftp'")
    assert bad.value.text("zh").startswith("--alert 'ftp:somewhere'：未知的告警目标 'ftp'")
    err = io.StringIO()
    assert main(["watch", "x.jsonl", "--alert", "ftp:somewhere", "--lang", "zh"], io.StringIO(), err) == 2
    assert "未知的告警目标" in err.getvalue()

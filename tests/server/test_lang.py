"""serve in Chinese: the lines it prints, its errors (under --lang zh) and the notes of its discovery."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlvitals.errors import RlvitalsError
from rlvitals.server.discover import Discovery
from rlvitals.server.runner import listen, serving_line
from rlvitals.server.security import check_bind
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.words import in_lang, translated

TOKEN = "t0ken-for-the-tests-0123456789"


def _first_line(tmp_path: Path, lang: str, token: str | None) -> str:
    """The first line a real ``serve(...)`` prints, in ``lang``; the server is then stopped with SIGINT."""
    log = tmp_path / "grpo.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=20))))
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from rlvitals.server.runner import serve
        sys.exit(serve([Path({str(log)!r})], port=0, token={token!r}, state=Path({str(tmp_path / 's.sqlite')!r}),
                       out=sys.stdout, lang={lang!r}))
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert proc.returncode == 0, err
    return line


@pytest.mark.process
@pytest.mark.parametrize("token", [None, TOKEN])
def test_serve_prints_its_lines_in_the_chosen_language(tmp_path: Path, token: str | None) -> None:
    en = _first_line(tmp_path, "en", token)
    assert re.fullmatch(r"rlvitals serve: 1 path\(s\) at http://127\.0\.0\.1:\d+/"
                        + (r" \(open \S+\?token=YOUR_TOKEN once; the browser keeps it\)" if token else "")
                        + r"; Ctrl-C to stop\n", en), en
    zh = _first_line(tmp_path, "zh", token)
    assert re.fullmatch(r"rlvitals serve：在 http://127\.0\.0\.1:\d+/ 展示 1 个路径"
                        + (r"（首次打开 \S+\?token=YOUR_TOKEN 即可，浏览器会记住令牌）" if token else "")
                        + r"；按 Ctrl-C 停止\n", zh), zh
    assert "path(s)" not in zh and "Ctrl-C to stop" not in zh


def test_serving_line_defaults_to_english() -> None:
    assert serving_line(3, "http://h:1/", False) == "rlvitals serve: 3 path(s) at http://h:1/; Ctrl-C to stop"


def test_serve_errors_have_their_chinese_and_keep_their_english() -> None:
    with pytest.raises(RlvitalsError) as bad:
        check_bind("0.0.0.0", None)
    assert str(bad.value).startswith("serve: --host 0.0.0.0 is reachable from other machines")
    assert in_lang(bad.value.args[0], "zh").startswith("serve：--host 0.0.0.0 可以从其他机器访问")
    with pytest.raises(RlvitalsError) as short:
        check_bind("127.0.0.1", "abc")
    assert "the token has 3 characters" in str(short.value)
    assert "令牌只有 3 个字符" in in_lang(short.value.args[0], "zh")
    busy = listen("127.0.0.1", 0)
    try:
        port = busy.getsockname()[1]
        with pytest.raises(RlvitalsError) as taken:
            listen("127.0.0.1", port)
        assert f"cannot listen on 127.0.0.1:{port}" in str(taken.value)
        assert f"无法监听 127.0.0.1:{port}" in in_lang(taken.value.args[0], "zh")
    finally:
        busy.close()


def test_discovery_notes_an_empty_folder_in_both_languages(tmp_path: Path) -> None:
    found = Discovery(None).scan(tmp_path)
    notes = list(found.notes)
    assert any(n.startswith(f"serve: no training log found yet in {tmp_path}") for n in notes), notes
    assert all(translated(n) for n in notes)
    assert any(in_lang(n, "zh").startswith(f"serve：{tmp_path} 及其子文件夹") for n in notes)


def test_the_dashboard_notes_carry_their_chinese(tmp_path: Path) -> None:
    """The run list's notes (ws.notes()): the API gives each in English and Chinese, and the page shows
    both, the switch (CSS on data-lang) hiding the other language."""
    from fastapi.testclient import TestClient

    from rlvitals.server import create_app
    from server.test_app import workspace

    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "train.jsonl").write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=20))))
    (runs / "notes.txt").write_text("hello", encoding="utf-8")
    ws = workspace([runs], tmp_path / "s.sqlite")
    ws.poll_once()
    c = TestClient(create_app(ws), base_url="http://127.0.0.1")
    listed = c.get("/api/runs").json()
    assert listed["messages"] == [f"serve: in {runs.resolve()}: 1 other file is not a log"]
    assert listed["messages_zh"] == [f"serve：{runs.resolve()} 中：另有 1 个文件不是日志"]
    html = c.get("/").text
    assert (f'<span class="l-en">serve: in {runs.resolve()}: 1 other file is not a log</span>'
            f'<span class="l-zh" lang="zh">serve：{runs.resolve()} 中：另有 1 个文件不是日志</span>') in html

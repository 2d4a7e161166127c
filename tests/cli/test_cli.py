"""The command line: exit codes and every user-facing error message."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from rlvitals.cli import main


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    f = tmp_path / "run.jsonl"
    f.write_text('{"step":1,"data":{"actor/entropy":0.5}}\n{"step":2,"data":{"actor/entropy":0.4}}\n')
    return f


def test_inspect_json_schema(jsonl: Path) -> None:
    code, out, err = _cli("inspect", "--json", str(jsonl))
    assert code == 0 and err == ""
    obj = orjson.loads(out)
    for field in ("path", "format", "framework", "algorithm", "steps", "first_step", "last_step",
                  "metrics", "unmapped", "skipped"):
        assert field in obj
    assert (obj["format"], obj["framework"], obj["steps"], obj["first_step"], obj["last_step"]) == (
        "verl-jsonl", "verl", 2, 1, 2)
    assert obj["skipped"] == {"count": 0, "reasons": []}


def test_inspect_text(jsonl: Path) -> None:
    code, out, _ = _cli("inspect", str(jsonl))
    assert code == 0 and "2 training steps, 1 → 2" in out and "verl-jsonl" in out


def test_missing_file(tmp_path: Path) -> None:
    code, out, err = _cli("inspect", str(tmp_path / "nope.log"))
    assert code == 2 and out == ""
    assert err == f"rlvitals: {tmp_path / 'nope.log'}: no such file or folder\n"


def test_empty_file(tmp_path: Path) -> None:
    f = tmp_path / "empty.log"
    f.write_bytes(b"")
    code, _, err = _cli("inspect", str(f))
    assert code == 2
    assert err == f"rlvitals: {f}: the file is empty; expected a training log\n"


def test_unknown_format_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "notes.bin"
    f.write_bytes(bytes(range(256)) * 4)
    code, _, err = _cli("inspect", str(f))
    assert code == 2
    assert err.startswith(f"rlvitals: {f}: this file is not a training log rlvitals can read (tried: ")
    assert err.rstrip().endswith("pass --format to force a reader")


def test_unknown_format_for_a_folder(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("hello\n")
    code, _, err = _cli("inspect", str(tmp_path))
    assert code == 2 and "this folder is not a run rlvitals knows" in err and "(it holds readme.txt)" in err


def test_forced_format_must_exist(jsonl: Path) -> None:
    code, _, err = _cli("inspect", "--format", "bogus", str(jsonl))
    assert code == 2 and "unknown format 'bogus'; expected one of: " in err


def test_file_with_only_unreadable_records(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text('{"step":1,"data":{"a":1}\n{"step":"x","data":{}}\n')
    code, _, err = _cli("inspect", "--format", "verl-jsonl", str(f))
    assert code == 2
    assert f"{f}: read as verl-jsonl but it holds no metrics; 2 records were unreadable, first: {f}:1:" in err


def test_one_bad_path_does_not_hide_the_good_one(jsonl: Path, tmp_path: Path) -> None:
    code, out, err = _cli("inspect", "--json", str(tmp_path / "missing"), str(jsonl))
    assert code == 2 and "no such file" in err
    assert orjson.loads(out)["steps"] == 2


def test_inspect_needs_a_path() -> None:
    code, _, err = _cli("inspect")
    assert code == 2 and err == "rlvitals: inspect needs at least one PATH (or --example)\n"


def test_usage_error_exit_code() -> None:
    assert _cli("frobnicate")[0] == 2


def test_explain_needs_a_key() -> None:
    code, _, err = _cli("explain")
    assert code == 2 and err == "rlvitals: explain needs a metric KEY or --list\n"


def test_explain_unknown_key() -> None:
    code, _, err = _cli("explain", "no/such_metric_anywhere")
    assert code == 2
    assert "'no/such_metric_anywhere' is neither a canonical metric nor an alias of one" in err


def test_explain_alias_json_and_zh() -> None:
    code, out, _ = _cli("explain", "actor/lr(1e-4)", "--json", "--lang", "zh")
    info = orjson.loads(out)
    assert code == 0 and info["key"] == "actor/lr" and info["name"] == "Actor 学习率"
    assert "记录的值要乘以 0.0001" in info["resolved"]  # how the key was reached, in the language asked for


def test_example_writes_files(tmp_path: Path) -> None:
    code, out, _ = _cli("example", str(tmp_path / "ex"))
    assert code == 0 and (tmp_path / "ex" / "grpo_example.log").stat().st_size > 100_000
    assert "wrote console:" in out


def test_formats_lists_readers() -> None:
    code, out, _ = _cli("formats")
    assert code == 0 and "verl-jsonl" in out.split()


@pytest.mark.process
def test_a_closed_pipe_ends_quietly() -> None:
    # `rlvitals explain --list | head -1`: the reader goes away; no traceback, exit 0
    import subprocess
    import sys

    with subprocess.Popen([sys.executable, "-m", "rlvitals", "explain", "--list"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # before the child writes a byte (it takes ~1 s to start)
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0 and "Traceback" not in err, err


def test_exit_codes_tell_a_bug_of_ours_from_a_failing_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """0 ok, 1 --fail-on met, 2 usage or input, 3 internal error: a crash must never read as a failing run."""
    import rlvitals.cli as cli
    from rlvitals.errors import InputError

    def crash(args: object, out: object, err: object) -> int:
        raise ZeroDivisionError("division by zero")

    def refuse(args: object, out: object, err: object) -> int:
        raise InputError("run.log:3: not a training log")

    monkeypatch.setitem(cli.COMMANDS, "formats", crash)
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["formats"], out, err) == cli.EXIT_INTERNAL == 3
    said = err.getvalue()
    assert said.startswith("rlvitals: internal error in 'formats': ZeroDivisionError: division by zero\n")
    assert "this is a bug in rlvitals, not in your run" in said and "Traceback (most recent call last)" in said
    monkeypatch.setitem(cli.COMMANDS, "formats", refuse)
    err = io.StringIO()
    assert cli.main(["formats"], io.StringIO(), err) == cli.EXIT_USAGE == 2
    assert err.getvalue() == "rlvitals: run.log:3: not a training log\n"
    assert (cli.EXIT_OK, cli.EXIT_FINDINGS) == (0, 1)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_folder_for_a_file_or_a_full_disk_is_said_in_a_sentence(tmp_path: Path, lang: str) -> None:
    """The user's paths and the machine, not a bug: ``report -o FOLDER``, ``--config FOLDER`` and a full disk
    exit 2 with a sentence naming the path, in the chosen language, and no traceback (they exited 3 with one)."""
    from rlvitals.synthetic.simulate import Scenario, jsonl_lines

    log = tmp_path / "run.jsonl"
    log.write_bytes(b"\n".join(jsonl_lines(Scenario(steps=40))) + b"\n")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    said = {"en": (": is a folder; give a file's path", ": the disk is full"),
            "zh": ("：是一个文件夹；请给出文件的路径", "：磁盘已满")}[lang]
    for argv, path, words in ((["report", "-o", str(folder)], folder, said[0]),
                              (["diagnose", "--config", str(folder)], folder, said[0]),
                              (["report", "-o", "/dev/full"], "/dev/full", said[1])):
        code, _, err = _cli(*argv, "--lang", lang, str(log))
        prefix = "rlvitals：" if lang == "zh" else "rlvitals: "
        assert (code, err) == (2, f"{prefix}{path}{words}\n"), err

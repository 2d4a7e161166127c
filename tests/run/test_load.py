"""load(): a folder (or multi-run file) keeps its readable runs when some are empty; a plain folder of logs
is read as the logs in it; what an unreadable file or folder is told."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

import rlvitals
from rlvitals.errors import EmptyInputError, UnknownFormatError


def test_empty_run_among_several_is_noted_not_fatal(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("Step,runA - train/loss,runB - train/loss\n1,0.5,\n2,0.4,\n")
    runs = rlvitals.load(f)
    assert [r.path for r in runs] == [f"{f}#run=runA"]
    assert any("skipped an empty run" in n and "runB" in n for n in runs[0].notes)


def test_all_runs_empty_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("Step,runA - train/loss,runB - train/loss\n1,,\n2,,\n")
    with pytest.raises(EmptyInputError, match=r"none of its 2 runs holds metrics; first: .*runA"):
        rlvitals.load(f)


# -- a plain folder of logs --------------------------------------------------------------------------------

def test_the_example_folder_is_its_run_read_once(tmp_path: Path) -> None:
    # `rlvitals example DIR` writes one run twice: grpo_example.log (console) and grpo_example.jsonl
    from rlvitals.cli import main

    assert main(["example", str(tmp_path)], out=io.StringIO(), err=io.StringIO()) == 0
    runs = rlvitals.load(tmp_path)
    assert [(Path(r.path).name, r.format) for r in runs] == [("grpo_example.jsonl", "verl-jsonl")]
    assert (f"{tmp_path / 'grpo_example.log'}: the same run as grpo_example.jsonl in another format (verl-console); "
            "grpo_example.jsonl (verl-jsonl) was read") in runs[0].notes


@pytest.mark.parametrize("command", ["inspect", "diagnose", "report"])
def test_a_run_folder_holding_a_log_is_read_by_every_command(real: Path, tmp_path: Path, command: str) -> None:
    from rlvitals.cli import main

    exp = tmp_path / "runs" / "exp1"
    exp.mkdir(parents=True)
    shutil.copy(real / "verl__verl-data__gemma-2-2b-it-sft-0.411.log", exp / "train.log")
    (exp / "README.md").write_text("notes about the run\n")
    (exp / "model.safetensors").write_bytes(b"\0" * 64)
    out, err = io.StringIO(), io.StringIO()
    args = [command, str(exp)] + (["-o", str(tmp_path / "r.html")] if command == "report" else ["--json"])
    assert main(args, out=out, err=err) in (0, 1), err.getvalue()
    assert err.getvalue() == ""
    run = rlvitals.load(exp)[0]
    assert (Path(run.path).name, run.format, len(run.train_steps)) == ("train.log", "verl-console", 58)
    assert (f"{exp}: 2 files in the folder are not training logs and were left alone: README.md, "
            "model.safetensors") in run.notes
    assert [Path(r.path).name for r in rlvitals.load(tmp_path / "runs")] == ["train.log"]  # one level down


def test_a_folder_of_two_logs_is_two_runs(real: Path, tmp_path: Path) -> None:
    shutil.copy(real / "verl__verl-data__gemma-2-2b-it-sft-0.411.log", tmp_path / "sft.log")
    shutil.copy(real / "trl__UnslothGRPO__checkpoint-250_trainer_state.json", tmp_path / "grpo_history.json")
    runs = rlvitals.load(tmp_path)
    assert [(Path(r.path).name, r.format) for r in runs] == [("grpo_history.json", "trl-state"),
                                                             ("sft.log", "verl-console")]


@pytest.mark.parametrize("whole", [False, True])
def test_a_file_removed_while_the_folder_is_read_is_passed_over(real: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch, whole: bool) -> None:
    """A writer removes files while the folder is read (SQLite deletes its ``-wal`` at a checkpoint; a log is
    rotated away): a file listed and gone before it is looked at is passed over, not a crash. ``whole``: the
    folder is one a folder format takes (a TensorBoard run), the logs beside its own files are looked at."""
    from rlvitals.ingest import _folder

    shutil.copy(real / "verl__verl-data__gemma-2-2b-it-sft-0.411.log", tmp_path / "sft.log")
    if whole:
        capture = Path(__file__).parents[1] / "ingest" / "data" / "openrlhf" / "dpo-0.11.2" / "tensorboard-run"
        shutil.copytree(capture / "tensorboard" / "dpo_capture", tmp_path, dirs_exist_ok=True)
    listed = _folder._children
    monkeypatch.setattr(_folder, "_children", lambda folder, files: listed(folder, files) + (
        [folder / "project.db-wal"] if files else []))
    runs = rlvitals.load(tmp_path)
    assert [Path(r.path).name for r in runs][-1] == "sft.log" and len(runs) == 1 + whole


def test_a_folder_without_a_log_says_what_it_holds(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("nothing to see\n")
    with pytest.raises(UnknownFormatError, match=re.escape(
            f"{tmp_path}: this folder is not a run rlvitals knows (W&B, MLflow, TensorBoard, a Trainer output_dir) "
            "and holds no training log rlvitals can read, nor do its subfolders (it holds README.md); pass the "
            "log file itself")):
        rlvitals.load(tmp_path)


def test_a_forced_format_picks_that_log_in_a_folder(real: Path, tmp_path: Path) -> None:
    shutil.copy(real / "verl__verl-data__gemma-2-2b-it-sft-0.411.log", tmp_path / "a.log")
    with pytest.raises(UnknownFormatError, match="holds no trl-console log"):
        rlvitals.load(tmp_path, "trl-console")
    assert rlvitals.load(tmp_path, "verl-console")[0].format == "verl-console"


def test_an_unknown_programs_traceback_is_named(tmp_path: Path) -> None:
    # constructed: a crashed script that is none of the frameworks rlvitals reads
    path = tmp_path / "nohup.out"
    path.write_text('Traceback (most recent call last):\n  File "/home/me/train.py", line 3, in <module>\n'
                    "    main()\nValueError: bad config\n")
    with pytest.raises(UnknownFormatError, match=re.escape(
            "; it ends in a Python traceback (ValueError: bad config) but holds no metrics and no frame of veRL, "
            "TRL or OpenRLHF code; pass --format to force a reader")):
        rlvitals.load(path)


BIG = 2**64  # a 64-bit hash logged as a step, say: beyond the step axis
BAD_RECORDS = {
    "verl-jsonl": ("run.jsonl", '{"step":1,"data":{"actor/pg_loss":0.1}}\n'
                                f'{{"step":{BIG},"data":{{"actor/pg_loss":0.2}}}}\n'
                                '{"step":2,"data":{"actor/pg_loss":0.3}}\n'),
    "jsonl": ("metrics.jsonl", f'{{"step": 1, "loss": 0.5}}\n{{"step": {BIG}, "loss": 0.4}}\n'
                               '{"step": 2, "loss": 0.3}\n'),
    "csv": ("metrics.csv", f"step,loss\n1,0.5\n{BIG},0.4\n2,0.3\n"),
    "verl-console": ("train.log", "step:1 - actor/pg_loss:0.1 - actor/entropy:0.5 - critic/score/mean:0.2\n"
                                  f"step:{BIG} - actor/pg_loss:0.2 - actor/entropy:0.5 - critic/score/mean:0.2\n"
                                  "step:2 - actor/pg_loss:0.3 - actor/entropy:0.4 - critic/score/mean:0.3\n"),
    "trl-state": ("trainer_state.json", '{"global_step": 2, "log_history": [{"step": 1, "loss": 0.5}, '
                                        f'{{"step": {BIG}, "loss": 0.4}}, {{"step": 2, "loss": 0.3}}]}}'),
}


@pytest.mark.parametrize("fmt", BAD_RECORDS)
def test_a_step_beyond_the_step_axis_is_one_counted_skip_not_a_crash(tmp_path: Path, fmt: str) -> None:
    """A step outside int64 used to raise OverflowError when the Run was built, losing the whole read."""
    name, text = BAD_RECORDS[fmt]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    run = rlvitals.load(path)[0]
    assert run.format == fmt and run.train_steps.tolist() == [1, 2]
    assert run.skipped.count == 1
    where = rf"{re.escape(str(path))}(:\d+|#record \d+)"
    assert re.fullmatch(rf"{where}: step \d+ is outside the 64-bit step axis; the record was skipped",
                        run.skipped.reasons[0]), run.skipped.reasons


def test_a_key_with_a_lone_surrogate_is_a_counted_skip(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "loss": 0.5}\n{"step": 2, "\\ud800x": 0.1, "loss": 0.3}\n{"step": 3, "loss": 0.2}\n',
                    encoding="utf-8")
    run = rlvitals.load(path)[0]
    assert run.train_steps.tolist() == [1, 3]
    assert run.skipped.reasons == [f"{path}:2: the key '\\ud800x' is not valid text (a lone surrogate); "
                                   "the record was skipped"]


@pytest.mark.parametrize("fmt", BAD_RECORDS)
def test_a_file_that_starts_with_a_byte_order_mark_reads_as_without_it(tmp_path: Path, fmt: str) -> None:
    """Windows tools write a UTF-8 BOM first; it used to make the first line unreadable or the file refused."""
    name, text = BAD_RECORDS[fmt]
    plain = text.replace(str(BIG), "3")  # the same file, every record good
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + plain.encode())
    run = rlvitals.load(path)[0]
    reference = tmp_path / "plain"
    reference.mkdir()
    (reference / name).write_text(plain, encoding="utf-8")
    expected = rlvitals.load(reference / name)[0]
    assert run.format == fmt and run.skipped.count == 0
    assert run.raw.equals(expected.raw) and list(run.raw.columns) == list(expected.raw.columns)


def test_control_characters_in_a_key_are_shown_escaped_never_sent_to_a_terminal(tmp_path: Path) -> None:
    """A key holding ESC [ 2 J (clear the screen), BEL or the C1 CSI reached the terminal as is."""
    from rlvitals.cli import main

    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "lo\\u001b[2Jss\\u0007": 0.5, "x\\u009b31m": 1}\n'
                    '{"step": 2, "lo\\u001b[2Jss\\u0007": 0.3, "x\\u009b31m": 1}\n', encoding="utf-8")
    run = rlvitals.load(path)[0]
    assert {"lo\\x1b[2Jss\\x07", "x\\x9b31m"} <= set(run.raw.columns) and run.skipped.count == 0
    for command in (["inspect"], ["diagnose", "--all"], ["diagnose", "--markdown"]):
        out = io.StringIO()
        main([*command, str(path)], out, io.StringIO())
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out.getvalue()), command
    out = io.StringIO()
    main(["inspect", str(path)], out, io.StringIO())
    assert "lo\\x1b[2Jss\\x07" in out.getvalue()


@pytest.mark.process
def test_a_fifo_is_never_opened_and_the_logs_beside_it_are_read(tmp_path: Path) -> None:
    """Reading a FIFO waits for a writer forever: a folder holding one used to hang load, watch and serve."""
    import os
    import subprocess
    import sys

    from rlvitals.errors import UnknownFormatError
    from rlvitals.ingest import find_reader, special_kind

    name, text = BAD_RECORDS["verl-jsonl"]
    (tmp_path / name).write_text(text.replace(str(BIG), "3"), encoding="utf-8")
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert special_kind(fifo) == "FIFO" and special_kind(tmp_path / name) is None
    with pytest.raises(UnknownFormatError, match=r"pipe\.jsonl: a FIFO, not a log file; it was not opened"):
        find_reader(fifo)
    # in a child process with a deadline: were the FIFO opened, the read would never return
    code = ("import sys, rlvitals; r = rlvitals.load(sys.argv[1]); "
            "print(len(r), r[0].train_steps.tolist(), [n for n in r[0].notes if 'FIFO' in n])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"1 [1, 2, 3] ['{fifo}: a FIFO, not a log file; it was not opened']"


def test_no_real_public_log_is_given_a_clock_it_does_not_carry(real: Path) -> None:
    """The real public logs are console logs, CSV tables and trainer_state files: none holds a tracker's
    wall clock, so none gets one (the report's time axis then sums the step timings, when logged)."""
    logs = sorted(p for p in real.iterdir() if p.is_file() and not p.name.endswith((".txt", ".md")))
    assert logs
    for log in logs:
        for run in rlvitals.load(log):
            assert run.wall is None and run.wall_times is None, log.name


def _linked_runs(root: Path) -> Path:
    """A folder of runs as links make them: ``exp1/`` holding a log, reached again through ``latest`` and
    ``current`` (links to it), ``exp1/up`` (a link back up) and ``self`` (a link to the folder itself), beside a
    loop of two links (``a -> b -> a``)."""
    from rlvitals.synthetic.simulate import Scenario, jsonl_lines

    runs = root / "runs"
    (runs / "exp1").mkdir(parents=True)
    (runs / "exp1" / "train.jsonl").write_bytes(b"".join(x + b"\n" for x in jsonl_lines(Scenario(steps=20))))
    for name, target in (("latest", "exp1"), ("current", "exp1"), ("self", "."), ("a", "b"), ("b", "a")):
        (runs / name).symlink_to(target)
    (runs / "exp1" / "up").symlink_to("..")
    return runs


@pytest.mark.process
def test_a_run_reached_through_several_links_is_read_once_and_a_loop_never_hangs(tmp_path: Path) -> None:
    """The folder's log was read three times (``exp1/``, ``latest/``, ``current/``): once now, by its real path;
    the loop of links is passed over. In a child process with a deadline: a loop followed would never end."""
    import json
    import subprocess
    import sys

    runs = _linked_runs(tmp_path)
    code = "import json, sys, rlvitals; print(json.dumps([r.path for r in rlvitals.load(sys.argv[1])]))"
    done = subprocess.run([sys.executable, "-c", code, str(runs)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [str(runs / "exp1" / "train.jsonl")]

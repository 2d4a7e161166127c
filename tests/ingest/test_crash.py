"""The crash scanner the console readers share: a traceback the training went on after is survived (counted, in
a note), not the crash; a crash's last step is the last step any line shows finished (a progress bar too).
Each test says whether its log is real or constructed, and from what."""

from __future__ import annotations

from pathlib import Path

from corpus import corpus_input

from rlvitals import load
from rlvitals.diagnosis import diagnose
from rlvitals.ingest import SkipLog, SourceMeta, find_reader
from rlvitals.ingest._crash import CrashScanner

#: a real survived traceback: a Ray worker failing to register with its metrics agent, then training on (lines
#: 115-117 of the corpus log verl__verl-data__qwen2.5-0.5b-ppo-gsm8k-resp256)
RAY = "verl__verl-data__qwen2.5-0.5b-ppo-gsm8k-resp256"


def _ray_traceback() -> list[bytes]:
    lines = corpus_input(RAY).read_bytes().split(b"\n")
    return lines[114:117]


def test_a_real_traceback_the_training_went_on_after_is_a_note() -> None:
    # real: the Ray worker's TypeError traceback at line 115, then 435 steps
    path = corpus_input(RAY)
    run = load(path)[0]
    assert run.crash is None and len(run.train_steps) == 435
    note = next(n for n in run.notes if "went on after" in n)
    assert note == (f"{path}: the training went on after a traceback (at line 115): errors a process printed and "
                    "survived (a failed tool call, a retried request), not a crash")
    assert note.zh.startswith(f"{path}：训练在 1 段 traceback 之后继续进行")


def test_a_traceback_the_bar_went_past_is_survived_not_a_crash(tmp_path: Path) -> None:
    # constructed: the real TRL console of a run that ran to its end (bar 936/936, then its summary), with the
    # real Ray traceback above written in after its last metric dict (step 920): the bar then drew 921..936
    # and the summary came, so the training went on after it. Read before as a crash: a healthy run failed.
    real = corpus_input("trlconsole__hotpotqa_qwen25_3b_grpo_v3")
    lines = real.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if b"| 936/936 [" in line)
    path = tmp_path / "grpo_v3.log"
    path.write_bytes(b"\n".join([*lines[:at], *_ray_traceback(), *lines[at:]]))
    run = load(path)[0]
    assert run.crash is None and len(run.train_steps) == 46
    assert f"{path}: the training went on after a traceback (at line {at + 1})" in " ".join(run.notes)
    finding = next(f for f in diagnose(run).findings if f.check == "run_crashed")
    assert finding.status == "ok"


def _wandb_only(tmp_path: Path, tool_error: bool) -> Path:
    """The real W&B console capture of a veRL run whose metrics went to W&B only (no step: lines) and that
    died out of memory at its first step, with the training bar drawn on to 3/55990 before the traceback
    (and a tool call's traceback after step 1): constructed from the corpus log
    verl__agent-opd__qwen2.5-3b-resp16k-cuda-oom."""
    lines = corpus_input("verl__agent-opd__qwen2.5-3b-resp16k-cuda-oom").read_bytes().split(b"\n")
    bar, rest = lines[5].split(b"Unhandled error", 1)
    frame = b"Training Progress:   0%%|          | %d/55990 [%02d:00<4000:00:00, 300.00s/it]"
    tool = [b"(AgentLoopWorker pid=3961500) Traceback (most recent call last):",
            b'(AgentLoopWorker pid=3961500)   File "/data0/user10/Open-AgentRL/verl/tools/sandbox_fusion_tools.py", '
            b"line 180, in execute",
            b"(AgentLoopWorker pid=3961500)     raise RuntimeError(result)",
            b"(AgentLoopWorker pid=3961500) RuntimeError: sandbox: code execution timed out"] if tool_error else []
    later = b"\r".join([b"", frame % (2, 10), frame % (3, 15)])
    head = [bar + b"\r" + frame % (1, 5), *tool, later + b"Unhandled error" + rest]
    path = tmp_path / "output.log"
    path.write_bytes(b"\n".join([*lines[:5], *head, *lines[6:]]))
    return path


def test_a_crash_after_steps_only_the_bar_shows_is_dated_by_the_bar(tmp_path: Path) -> None:
    # constructed (see _wandb_only): read before as "died before its first step"
    path = _wandb_only(tmp_path, tool_error=False)
    run = load(path)[0]
    assert run.crash is not None and (run.crash.kind, run.crash.last_step) == ("oom", 3)
    finding = next(f for f in diagnose(run).findings if f.check == "run_crashed")
    assert (finding.status, finding.onset_step) == ("fail", 3)
    assert finding.message["en"].startswith("The run died out of memory after step 3: torch.OutOfMemoryError")
    assert finding.message["zh"].startswith("训练在第 3 步之后因显存/内存不足而中止")


def test_a_tool_traceback_before_the_bar_moved_on_is_survived_and_the_crash_is_the_last(tmp_path: Path) -> None:
    # constructed (see _wandb_only): a tool call's traceback after step 1, the bar drawn on to 3, then the OOM
    path = _wandb_only(tmp_path, tool_error=True)
    run = load(path)[0]
    assert run.crash is not None and run.crash.exception == "torch.OutOfMemoryError" and run.crash.last_step == 3
    assert f"{path}: the training went on after a traceback (at line 7)" in " ".join(run.notes)


def test_an_openrlhf_evaluation_after_a_traceback_shows_the_training_went_on(tmp_path: Path) -> None:
    # constructed: OpenRLHF's PPO lines around a reward server's traceback, the evaluation the last line
    path = tmp_path / "ppo.log"
    path.write_text("✨ Global step 1: {'policy_loss': 0.1, 'reward': 0.2}\n"
                    "Traceback (most recent call last):\n"
                    '  File "/w/openrlhf/utils/remote_rm_utils.py", line 30, in request_api_wrapper\n'
                    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='rm'): Max retries exceeded\n"
                    "✨ Evaluation completed in 0:01:02, global_step 1, eval_metrics: {'eval_reward': 0.3}\n")
    run = load(path)[0]
    assert run.crash is None and any("went on after a traceback (at line 2)" in n for n in run.notes)


# -- the scanner, line by line --------------------------------------------------------------------------------

def _tb(s: CrashScanner, at: int, message: str = "boom") -> None:
    for n, line in enumerate(["Traceback (most recent call last):", '  File "/w/verl/tools/x.py", line 3, in f',
                              f"RuntimeError: {message}"], at):
        s.feed(n, line)


def test_a_bar_drawn_again_at_its_count_shows_no_step() -> None:
    s = CrashScanner("t.log")
    s.advanced(1, 5, 100)
    _tb(s, 2)
    s.advanced(5, 5, 100)  # tqdm draws the bar once more as the program dies
    crash = s.crash()
    assert crash is not None and crash.last_step == 5 and s.survived() == (0, None)


def test_the_first_frame_of_a_bar_shows_no_step() -> None:
    s = CrashScanner("t.log")
    _tb(s, 1)
    s.advanced(4, 40, 100)  # a run resumed at step 40 draws 40/100 first: no step of its own yet
    assert s.crash() is not None and s.survived() == (0, None)
    resumed = CrashScanner("t.log")
    resumed.advanced(1, 40, 100)
    _tb(resumed, 2)
    crash = resumed.crash()
    assert crash is not None and crash.last_step == 40  # the steps done before it resumed


def test_a_bar_drawn_anew_counts_again_from_its_start() -> None:
    s = CrashScanner("t.log")
    for n, count in enumerate((1, 2, 3, 0, 1), 1):
        s.advanced(n, count, 100)
    _tb(s, 9)
    crash = s.crash()
    assert crash is not None and crash.last_step == 1


def test_the_training_end_marker_closes_the_tracebacks_before_it() -> None:
    s = CrashScanner("t.log")
    _tb(s, 1, "saving a checkpoint failed")
    s.finished(4)
    _tb(s, 5, "pushing to the hub failed")
    crash = s.crash()
    assert crash is not None and crash.message == "pushing to the hub failed" and crash.after_end
    assert s.survived() == (1, 1)


def test_each_training_gets_the_tracebacks_that_ended_it() -> None:
    # two trainings: records at lines 1-2 and 10-12; the first died (lines 3-5), the second survived one
    s = CrashScanner("t.log")
    s.progress(1)
    s.advanced(2, 2, 100)
    _tb(s, 3, "first launch died")
    s.progress(10)  # the first record of the second training
    _tb(s, 11, "a tool failed")
    s.progress(12)
    first, second = s.account([(1, 2), (10, 12)])
    assert first.crash is not None and first.crash.message == "first launch died"
    assert (first.crash.where, first.crash.last_step, first.survived) == ("t.log:5", 2, 0)
    assert (second.crash, second.survived, second.first_survived) == (None, 1, 11)


def test_a_second_reader_of_the_lines_after_is_taken_over_when_it_read_them_alike() -> None:
    whole, first, later = CrashScanner("t.log"), CrashScanner("t.log"), CrashScanner("t.log")
    for s in (whole, first):
        s.advanced(1, 1, 100)
    for s in (whole, later):
        s.advanced(2, 2, 100)
        _tb(s, 3)
        s.advanced(6, 3, 100)
        _tb(s, 7, "died")
    assert first.absorb(later)
    assert (first.crash(), first.survived(), first.marks) == (whole.crash(), whole.survived(), whole.marks)


def test_a_second_reader_that_could_have_read_them_otherwise_is_not_taken_over() -> None:
    first, later = CrashScanner("t.log"), CrashScanner("t.log")
    first.advanced(1, 1, 100)
    _tb(later, 2)
    later.advanced(5, 2, 100)  # a reader that had seen the bar at 1 would have closed the traceback here
    assert later.blind == 5 and not first.absorb(later)


def test_a_bar_count_past_64_bits_is_no_progress(tmp_path: Path) -> None:
    # constructed: a veRL console whose bar line was corrupted
    path = tmp_path / "run.log"
    path.write_text("step:1 - actor/pg_loss:0.1\nTraining Progress:   0%|  | " + "9" * 30 + "/" + "9" * 30 + " [\n")
    meta = SourceMeta(format="verl-console")
    list(find_reader(path).read(path, meta, SkipLog()))
    assert meta.crash is None and meta.tracebacks is not None and len(meta.tracebacks.marks) == 0

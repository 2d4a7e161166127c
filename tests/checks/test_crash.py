"""run_crashed: a log that ends in a traceback is a `fail` naming the exception and the last step reached,
read on real corpus logs; the shared scanner's pieces on constructed lines."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from corpus import corpus_input
from runs import finding, make_run

from rlvitals import load
from rlvitals.diagnosis import diagnose
from rlvitals.ingest._crash import CrashScanner
from rlvitals.ingest.record import Crash


def _crash_finding(path: Path) -> object:
    return finding(diagnose(load(path)[0]), "run_crashed")


@pytest.mark.parametrize(("run_id", "words"), [
    ("verl__agent-opd__qwen2.5-3b-resp16k-cuda-oom", "The run died out of memory before its first step: "
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.78 GiB."),
    ("verl__chrisytz-verl__tpu-ppo-hbm-oom", "The run died out of memory before its first step: RuntimeError: "
     "XLA:TPU compile permanent error. Ran out of memory in memory space hbm."),
    ("verl__logic-rl-formula__grpo-worker-import-crash", "The run died on a failed import before its first step: "
     "ImportError: "),
    ("verl__verl-maze__ppo-reward-fn-crash", "The run died before its first step: NotImplementedError ("),
])
def test_a_run_that_died_before_its_first_step(run_id: str, words: str) -> None:
    path = corpus_input(run_id)
    d = diagnose(load(path)[0])
    f = finding(d, "run_crashed")
    assert (f.status, f.layer, f.onset_step, d.verdict) == ("fail", "L1", 0, "fail")
    assert f.message["en"].startswith(words)
    assert f.evidence["last_step"] is None and f.evidence["where"].startswith(f"{path}:")
    assert f.message["zh"].startswith("训练在第一步之前")


def test_oom_advice_names_the_memory_settings() -> None:
    f = _crash_finding(corpus_input("verl__crrl__search-r1-ppo-cuda-oom"))
    assert "ppo_micro_batch_size_per_gpu" in f.message["en"] and "gpu_memory_utilization" in f.message["en"]
    assert f.evidence["oom"] is True and f.evidence["kind"] == "oom"


def test_an_import_error_points_at_the_environment() -> None:
    f = _crash_finding(corpus_input("verl__logic-rl-formula__grpo-worker-import-crash"))
    assert "This is the environment, not the training" in f.message["en"]


def test_a_signal_mid_run_names_the_last_step() -> None:
    # the last metric dict is step 920; the bar drew 935/936 before the signal, and that is the last step
    f = _crash_finding(corpus_input("trlconsole__hotpotqa_qwen25_3b_grpo_v2_sighup"))
    assert (f.status, f.onset_step) == ("fail", 935)
    assert f.message["en"].startswith("The run was stopped by a signal after step 935: "
                                      "torch.distributed.elastic.multiprocessing.api.SignalException: Process 12152 "
                                      "got signal: 1 (")
    assert f.message["zh"].startswith("训练在第 935 步之后被信号中止")


def test_keyboard_interrupt_is_a_signal() -> None:
    f = _crash_finding(corpus_input("trlconsole__trldapo_qwen25vl3b_grpo_interrupted"))
    assert (f.status, f.onset_step, f.evidence["exception"]) == ("fail", 44, "KeyboardInterrupt")  # bar 44/29790


@pytest.mark.parametrize("run_id", ["trlconsole__hotpotqa_qwen25_3b_grpo_v3", "shared__verl_gpg_qwen2_7b_megatron",
                                    "shared__verl_ppo_gemma2_2b_gsm8k"])
def test_a_log_that_ends_without_a_traceback_is_ok(run_id: str) -> None:
    # v3 ends in an NCCL destroy_process_group warning; the Megatron log in Ray's SIGTERM to its workers
    # after the final validation; the gemma log just stops after a complete step line
    run = load(corpus_input(run_id))[0]
    f = finding(diagnose(run), "run_crashed")
    assert f.status == "ok" and f.message["en"] == f"The log ends without a traceback (last step {run.last_step})."


def test_a_format_without_console_output_is_skipped() -> None:
    f = _crash_finding(corpus_input("trlstate__gemma3-1b-grpo-gsm8k"))
    assert f.status == "skipped"
    assert f.message["en"] == ("needs a console log (this format carries no console output, so a crash cannot be "
                               "seen), which this run did not log")


def test_a_traceback_after_the_training_ended_is_a_warning(tmp_path: Path) -> None:
    # constructed: TRL printed its summary, then pushing the model failed
    path = tmp_path / "push.log"
    path.write_text("{'loss': 0.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.5}\n"
                    "{'loss': 0.4, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 1.0}\n"
                    "{'train_runtime': 5.0, 'train_samples_per_second': 1.0, 'train_steps_per_second': 1.0, "
                    "'train_loss': 0.45, 'epoch': 1.0}\n"
                    "Traceback (most recent call last):\n"
                    '  File "/venv/lib/python3.11/site-packages/transformers/trainer.py", line 4000, in push_to_hub\n'
                    "requests.exceptions.ConnectionError: ('Connection aborted.', RemoteDisconnected())\n")
    f = _crash_finding(path)
    assert (f.status, f.onset_step) == ("warn", 2)
    assert f.message["en"].startswith("The training reached its end (step 2), then the script died: "
                                      "requests.exceptions.ConnectionError: ('Connection aborted.'")


def test_a_crash_on_a_built_run_is_read_from_the_run() -> None:
    run = make_run({"actor/pg_loss": [0.1, 0.2, 0.3, 0.4, 0.5]})
    crashed = replace(run, crash=Crash("ray.exceptions.ActorDiedError", "The actor died", "x.log:9", "worker",
                                       "verl/x.py:1 in f", (), 5), crash_scanned=True)
    f = finding(diagnose(crashed), "run_crashed")
    assert f.status == "fail" and f.message["en"].startswith("A worker process died after step 5: "
                                                             "ray.exceptions.ActorDiedError: The actor died (x.log:9")


# -- the scanner ---------------------------------------------------------------------------------------------

def _scan(lines: list[str]) -> CrashScanner:
    s = CrashScanner("t.log")
    for n, line in enumerate(lines, 1):
        s.feed(n, line)
    return s


def test_a_ray_wrapper_names_the_exception_printed_after_it() -> None:
    s = _scan(["Traceback (most recent call last):", '  File "/a/verl/trainer/main_ppo.py", line 9, in main',
               "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=1, ip=1.2.3.4)",
               '  File "/a/verl/workers/actor/dp_actor.py", line 276, in update_policy', "    loss.backward()",
               '  File "/venv/site-packages/torch/_tensor.py", line 525, in backward',
               "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.07 GiB."])
    crash = s.crash()
    assert crash is not None and crash.exception == "torch.cuda.OutOfMemoryError" and crash.oom
    assert crash.origin == "verl/workers/actor/dp_actor.py:276 in update_policy"  # not torch's own frame


def test_exception_words_outside_a_traceback_are_no_crash() -> None:
    s = _scan(["ValueError: this is a log line, not a traceback", "RuntimeError: neither is this"])
    assert s.crash() is None


def test_a_long_ending_keeps_its_first_and_latest_exceptions() -> None:
    lines = []
    for i in range(40):
        lines += ["Traceback (most recent call last):", f'  File "/w/train.py", line {i}, in step', f"ValueError: {i}"]
    crash = _scan(lines).crash()
    assert crash is not None and crash.message == "39" and crash.causes[0] == "ValueError: 0"
    assert len(crash.causes) == 3


def test_a_watched_log_gets_its_crash_when_the_traceback_is_appended(tmp_path: Path) -> None:
    # constructed: watch reads the lines appended since its last poll; the crash is how the latest lines end
    from rlvitals.ingest import find_reader
    from rlvitals.run.follow import LineSource

    path = tmp_path / "run.log"
    path.write_text("step:1 - actor/pg_loss:0.1\nstep:2 - actor/pg_loss:0.2\n")
    src = LineSource(path, find_reader(path))
    src.poll()
    first = src.run()
    assert first is not None and first.crash is None and first.crash_scanned
    with path.open("a") as fh:
        fh.write('Traceback (most recent call last):\n  File "/x/verl/trainer/main_ppo.py", line 1, in main\n'
                 "KeyboardInterrupt\n")
    src.poll()
    died = src.run()
    assert died is not None and died.crash is not None and (died.crash.kind, died.crash.last_step) == ("signal", 2)
    with path.open("a") as fh:
        fh.write("step:3 - actor/pg_loss:0.3\n")  # it went on after all (a worker's traceback)
    src.poll()
    went_on = src.run()
    assert went_on is not None and went_on.crash is None

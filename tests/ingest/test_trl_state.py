"""trainer_state.json / log_history reader: real TRL files, eval interleaving, checkpoints, bad input."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import rlvitals
from rlvitals import load
from rlvitals.cli import main
from rlvitals.errors import EmptyInputError, InputError
from rlvitals.ingest import find_reader, trl_state

UNSLOTH = "trl__UnslothGRPO__checkpoint-250_trainer_state.json"
MODERN = "trl__ppo-vs-grpo-math-rlvr__grpo_matched_0p5b_seed123.trainer_log_history.json"


def raw_at(run: rlvitals.Run, key: str, step: int) -> Any:
    return run.raw.filter(pl.col("step") == step)[key].item()


def write_state(path: Path, history: list[Any], **top: Any) -> Path:
    """A trainer_state.json as transformers writes it (json.dumps, indent=2, sort_keys, NaN literal)."""
    state = {"best_metric": None, "best_model_checkpoint": None, "epoch": 1.0, "eval_steps": 25,
             "global_step": 50, "is_hyper_param_search": False, "is_local_process_zero": True,
             "is_world_process_zero": True, "log_history": history, "logging_steps": 10, "max_steps": 50,
             "num_input_tokens_seen": 0, "num_train_epochs": 1, "save_steps": 50,
             "stateful_callbacks": {"TrainerControl": {"args": {"should_save": True}, "attributes": {}}},
             "total_flos": 0.0, "train_batch_size": 8, "trial_name": None, "trial_params": None, **top}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    return path


def train_record(step: int, loss: float | None = 0.1) -> dict[str, Any]:
    return {"epoch": step / 50, "grad_norm": 0.5 + step / 100, "kl": step / 1000, "learning_rate": 1e-6,
            "loss": loss, "reward": step / 10, "reward_std": 0.3, "step": step}


# -- real files -------------------------------------------------------------------------------------
def test_unsloth_checkpoint_250(real: Path) -> None:
    (run,) = load(real / UNSLOTH)
    assert run.format == "trl-state"
    assert run.framework == "trl"
    assert run.steps.tolist() == list(range(1, 251))
    assert run.train_steps.tolist() == list(range(1, 251))
    assert sorted(c for c in run.raw.columns if c != "step") == [
        "completion_length", "epoch", "grad_norm", "kl", "learning_rate", "loss", "reward", "reward_std",
        "rewards/correctness_reward_func", "rewards/int_reward_func", "rewards/soft_format_reward_func",
        "rewards/strict_format_reward_func", "rewards/xmlcount_reward_func"]
    assert raw_at(run, "kl", 250) == 0.020642109215259552
    assert raw_at(run, "completion_length", 1) == 200.0
    assert raw_at(run, "reward", 2) == -0.046833336353302
    assert raw_at(run, "rewards/xmlcount_reward_func", 100) == 0.021000001579523087
    assert raw_at(run, "learning_rate", 250) == 0.0
    assert run.summary == {}
    assert run.skipped.count == 0
    assert run.config["trainer_state.global_step"] == 250
    assert run.config["trainer_state.max_steps"] == 250
    assert run.config["trainer_state.logging_steps"] == 1
    assert run.config["trainer_state.eval_steps"] == 500
    assert run.config["trainer_state.save_steps"] == 250
    assert run.config["trainer_state.train_batch_size"] == 1
    assert run.config["trainer_state.num_train_epochs"] == 1
    assert run.config["trainer_state.best_metric"] is None
    assert "trainer_state.log_history" not in run.config
    assert "trainer_state.stateful_callbacks" not in run.config
    assert run.bytes_read == (real / UNSLOTH).stat().st_size


def test_modern_log_history_list(real: Path) -> None:
    (run,) = load(real / MODERN)
    assert run.format == "trl-state"
    assert run.framework == "trl"
    assert run.steps.tolist() == [1]
    assert run.summary == {"train_runtime": 5.5802, "train_samples_per_second": 2.867,
                           "train_steps_per_second": 0.179, "total_flos": 0.0,
                           "train_loss": 0.21626996994018555, "epoch": 1.0}
    assert "train_loss" not in run.raw.columns
    assert "train_runtime" not in run.raw.columns
    assert raw_at(run, "loss", 1) == 0.2163
    assert raw_at(run, "entropy", 1) == 0.42529723793268204
    assert raw_at(run, "frac_reward_zero_std", 1) == 0.0
    assert raw_at(run, "clip_ratio/region_mean", 1) == 0.0
    assert raw_at(run, "completions/mean_terminated_length", 1) == 39.733333587646484
    assert len(run.raw.columns) == 1 + 23  # step + every key of the training record
    assert run.config == {}


def test_cli_inspect_json(real: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", "--json", str(real / UNSLOTH)], out=out, err=err) == 0
    assert err.getvalue() == ""
    report = orjson.loads(out.getvalue())
    assert report["format"] == "trl-state"
    assert report["framework"] == "trl"
    assert (report["steps"], report["first_step"], report["last_step"]) == (250, 1, 250)
    assert report["eval_only_steps"] == 0


# -- synthetic files ----------------------------------------------------------------------------------
def test_eval_records_share_the_step_axis_but_are_not_training_steps(tmp_path: Path) -> None:
    def evaluation(step: int, loss: float) -> dict[str, Any]:
        return {"epoch": step / 50, "eval_loss": loss, "eval_reward": 0.25, "eval_runtime": 3.1,
                "eval_samples_per_second": 20.6, "eval_steps_per_second": 2.6, "step": step}

    history = [train_record(10), train_record(20), evaluation(25, 0.9), train_record(30, math.nan),
               train_record(40, None), train_record(50), evaluation(50, 0.8),
               {"epoch": 1.0, "step": 50, "total_flos": 1.5e15, "train_loss": 0.12, "train_runtime": 310.5,
                "train_samples_per_second": 12.9, "train_steps_per_second": 0.161}]
    path = write_state(tmp_path / "trainer_state.json", history)
    assert "NaN" in path.read_text()  # what Python's json writes; orjson alone would refuse the file
    (run,) = load(path)
    assert run.steps.tolist() == [10, 20, 25, 30, 40, 50]
    assert run.train_steps.tolist() == [10, 20, 30, 40, 50]
    assert raw_at(run, "eval_loss", 25) == 0.9
    assert raw_at(run, "eval_loss", 50) == 0.8
    assert raw_at(run, "eval_reward", 25) == 0.25
    assert raw_at(run, "eval_loss", 20) is None  # not logged there
    assert raw_at(run, "epoch", 25) is None  # an eval record's epoch is not kept
    assert raw_at(run, "epoch", 50) == 1.0
    assert math.isnan(raw_at(run, "loss", 30))  # NaN literal
    assert math.isnan(raw_at(run, "loss", 40))  # null (GRPO's all-NaN metric)
    assert raw_at(run, "loss", 20) == 0.1
    assert run.summary == {"epoch": 1.0, "total_flos": 1.5e15, "train_loss": 0.12, "train_runtime": 310.5,
                           "train_samples_per_second": 12.9, "train_steps_per_second": 0.161}
    assert not any("twice" in note for note in run.notes)
    assert run.config["trainer_state.eval_steps"] == 25
    assert run.config["trainer_state.train_batch_size"] == 8


def test_checkpoint_folder_reads_the_latest_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    for number in (5, 9, 10):
        write_state(out / f"checkpoint-{number}" / "trainer_state.json",
                    [train_record(s) for s in range(1, number + 1)], global_step=number)
    (out / "checkpoint-11").mkdir()  # a checkpoint still being written has no state yet
    (out / "runs").mkdir()
    assert trl_state.DIR_READER.sniff(out, b"")
    assert not trl_state.DIR_READER.sniff(out / "runs", b"")
    (run,) = load(out, "trl-state")
    assert run.steps.tolist() == list(range(1, 11))  # checkpoint-10, not checkpoint-9 (a string sort)
    assert run.config["trainer_state.global_step"] == 10
    assert run.files == [str(out / "checkpoint-10" / "trainer_state.json")]
    assert any("checkpoint-10/trainer_state.json" in n and "latest of 3 checkpoints" in n for n in run.notes)


def test_output_dir_state_file_wins_over_checkpoints(tmp_path: Path) -> None:
    write_state(tmp_path / "checkpoint-4" / "trainer_state.json", [train_record(s) for s in range(1, 5)])
    write_state(tmp_path / "trainer_state.json", [train_record(s) for s in range(1, 7)])
    (run,) = load(tmp_path, "trl-state")
    assert run.steps.tolist() == list(range(1, 7))
    assert not any("checkpoint" in n for n in run.notes)


def test_folder_without_state_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "checkpoint-3").mkdir()
    assert not trl_state.DIR_READER.sniff(tmp_path, b"")
    with pytest.raises(InputError, match=r"no trainer_state\.json in this folder or in a checkpoint-N/"):
        load(tmp_path, "trl-state")


def test_malformed_records_are_counted(tmp_path: Path) -> None:
    history = [train_record(1), "oops", {"loss": 0.3}, {"loss": 0.3, "step": "2"}, {"loss": 0.3, "step": 2.5},
               {"loss": 0.4, "step": 3.0}, train_record(4)]
    path = tmp_path / "log_history.json"
    path.write_text(json.dumps(history))
    (run,) = load(path)
    assert run.steps.tolist() == [1, 3, 4]
    assert raw_at(run, "loss", 3) == 0.4
    assert run.skipped.count == 4
    assert run.skipped.reasons == [
        f"{path}#record 2: expected a JSON object, found str; the record was skipped",
        f"{path}#record 3: step None is not an integer; the record was skipped",
        f"{path}#record 4: step '2' is not an integer; the record was skipped",
        f"{path}#record 5: step 2.5 is not an integer; the record was skipped",
    ]


def test_invalid_json_names_file_and_position(tmp_path: Path) -> None:
    path = tmp_path / "trainer_state.json"
    path.write_text('{\n  "global_step": 3,\n  "log_history": [\n    {"loss": 0.1, "step": 1},\n    {"loss": 0.')
    with pytest.raises(InputError, match=r"trainer_state\.json:5:\d+: not valid JSON .*cut short"):
        load(path)


def test_bytes_that_are_not_utf8_name_the_file_and_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "trainer_state.json"
    path.write_bytes(b'{"log_history": [{"loss": 0.1, "step": 1, "note": "\xff"}]}')
    with pytest.raises(InputError, match=r"trainer_state\.json: not UTF-8 text \(invalid start byte at byte 51\); "
                                         r"expected a trainer_state\.json object or a log_history list$"):
        load(path)


def test_object_without_log_history_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trainer_state.json"
    path.write_text('{"global_step": 3}')
    with pytest.raises(InputError, match=r"an object without a 'log_history' list"):
        load(path)


def test_empty_history_is_empty_input(tmp_path: Path) -> None:
    path = write_state(tmp_path / "trainer_state.json", [])
    with pytest.raises(EmptyInputError, match="holds no metrics"):
        load(path)


@pytest.mark.parametrize(("name", "text", "taken"), [
    ("trainer_state.json", "{}", True),
    ("state.json", '{\n  "best_metric": null,\n  "log_history": []}', True),
    ("history.json", '[\n  {\n    "loss": 1.0,\n    "step": 1\n  }\n]', True),
    ("rows.json", '[1, 2, 3]', False),
    ("config.json", '{"model": "x", "step": 3}', False),
])
def test_sniff(tmp_path: Path, name: str, text: str, taken: bool) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert trl_state.READER.sniff(path, text.encode()) is taken


def test_bare_list_is_found_by_sniffing(tmp_path: Path) -> None:
    path = tmp_path / "log_history.json"
    path.write_text(json.dumps([train_record(1)], indent=2))
    assert find_reader(path).format == "trl-state"


def test_checkpoint_folder_is_sniffed(tmp_path: Path) -> None:
    write_state(tmp_path / "checkpoint-3" / "trainer_state.json", [train_record(s) for s in (1, 2, 3)])
    write_state(tmp_path / "checkpoint-2" / "trainer_state.json", [train_record(s) for s in (1, 2)])
    assert find_reader(tmp_path).format == "trl-state"
    run = load(tmp_path)[0]
    assert run.steps.tolist() == [1, 2, 3]
    assert any("checkpoint-3" in note for note in run.notes)


# -- real runs from the corpus (benchmarks/corpus/runs/<id>/) -------------------------------------------

@pytest.mark.parametrize(("run_id", "records", "last_logged", "reached"), [
    ("trlstate__distilgpt2-sft-chess", 158, 39500, 39584),  # global_step 39584, logging every 250
    ("trlstate__qwen2-0p5b-grpo-numina-trl016", 11, 110, 113),  # a checkpoint at 113, no summary
    ("trlstate__smollm135m-ipo-gec", 11, 1000, 1072),  # a bare log_history list: the summary's step
    ("trlstate__gemma3-1b-grpo-gsm8k", 25, 250, 250),
])
def test_the_step_the_run_reached(run_id: str, records: int, last_logged: int, reached: int) -> None:
    from corpus import corpus_input

    run = load(corpus_input(run_id))[0]
    assert (len(run.train_steps), int(run.train_steps[-1]), run.last_step) == (records, last_logged, reached)
    assert run.crash is None and not run.crash_scanned  # a trainer_state.json shows no console output


def test_bare_nan_and_infinity_are_read() -> None:
    # Python's json writes NaN/Infinity for non-finite floats; orjson refuses them, json reads them
    from corpus import corpus_input

    run = load(corpus_input("trlstate__distilgpt2-sft-chess"))[0]
    steps, grad = run.series("actor/grad_norm")
    assert math.isinf(grad[steps.tolist().index(32750)])


def test_a_half_written_latest_checkpoint_falls_back_to_the_one_before(tmp_path: Path, real: Path) -> None:
    """A run killed while saving leaves checkpoint-N/trainer_state.json cut short; the output folder used to
    be unreadable as a whole. The real UnslothGRPO state stands in for both checkpoints."""
    state = (real / "trl__UnslothGRPO__checkpoint-250_trainer_state.json").read_bytes()
    (tmp_path / "checkpoint-250").mkdir()
    (tmp_path / "checkpoint-250" / "trainer_state.json").write_bytes(state)
    (tmp_path / "checkpoint-300").mkdir()
    (tmp_path / "checkpoint-300" / "trainer_state.json").write_bytes(state[: len(state) // 2])
    run = rlvitals.load(tmp_path)[0]
    whole = rlvitals.load(real / "trl__UnslothGRPO__checkpoint-250_trainer_state.json")[0]
    assert run.train_steps.tolist() == whole.train_steps.tolist() and run.files == [
        str(tmp_path / "checkpoint-250" / "trainer_state.json")]
    [note] = [n for n in run.notes if "could not read" in n]
    assert note.startswith(f"{tmp_path}: could not read checkpoint-300/trainer_state.json (")
    assert "not valid JSON" in note and note.endswith("; read checkpoint-250/trainer_state.json instead, "
                                                      "checkpoint 2 of 2 from the latest")
    (tmp_path / "checkpoint-250" / "trainer_state.json").write_bytes(state[:100])  # none readable: the error
    with pytest.raises(InputError, match=r"checkpoint-250/trainer_state\.json:\d+:\d+: not valid JSON"):
        rlvitals.load(tmp_path)


def test_a_trainer_state_nested_too_deep_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "trainer_state.json"
    path.write_text('{"log_history": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(InputError, match=r"JSON nested deeper than a parser goes; expected a trainer_state"):
        rlvitals.load(path)

"""Jupyter notebooks: the Trainer's HTML training table (Unsloth's and the Trainer's own), printed dicts,
the trainer class and config in the code, an error output as the crash; real corpus notebooks and bad ones."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from corpus import corpus_input, corpus_labels

from rlvitals import load
from rlvitals.errors import EmptyInputError, InputError
from rlvitals.ingest import SkipLog, SourceMeta, find_reader
from rlvitals.ingest.formats.notebook import read

NOTEBOOKS = ["notebook__unsloth_deepseek_r1_qwen3_8b_grpo", "notebook__unsloth_gemma4_e2b_grpo",
             "notebook__unsloth_mistral7b_grpo", "notebook__unsloth_phi4_14b_grpo", "notebook__unsloth_zephyr7b_dpo",
             "other__hf-cookbook__qwen25vl-3b-mpo-margins-flat", "other__model-diffing__qwen3-0.6b-dpo-fullft-hhrlhf",
             "other__model-diffing__qwen3-0.6b-kto-qlora-loss-flat"]


@pytest.mark.parametrize("run_id", NOTEBOOKS)
def test_real_notebooks_read_as_their_labels_count(run_id: str) -> None:
    path = corpus_input(run_id)
    labels = corpus_labels(run_id)
    assert find_reader(path).format == "notebook"
    run = load(path)[0]
    algorithm = run.algorithm if run.algorithm == labels["algorithm"] else run.family
    assert (run.format, run.framework, algorithm) == ("notebook", labels["framework"], labels["algorithm"])
    assert (len(run.train_steps), run.last_step) == (labels["records"], labels["last_step"])
    assert run.skipped.count == 0
    assert set(run.unmapped) <= {"eval_runtime", "eval_samples_per_second", "eval_steps_per_second"}


def test_an_unsloth_table_holds_training_keys() -> None:
    run = load(corpus_input("notebook__unsloth_zephyr7b_dpo"))[0]
    steps, margins = run.series("rewards/margins")
    assert list(steps[:3]) == [1, 2, 3] and margins[2] == pytest.approx(0.001945)
    assert run.config["trainer_class"] == "DPOTrainer" and run.config["num_train_epochs"] == 3
    assert run.summary["train_loss"] == pytest.approx(0.397163258179238)
    assert (run.crash, run.crash_scanned) == (None, True)


def test_the_trainers_own_table_holds_evaluations_after_the_validation_loss() -> None:
    # columns Step, Training Loss, Validation Loss, Rewards/chosen, ...: all but the training loss are evaluation
    path = corpus_input("other__model-diffing__qwen3-0.6b-dpo-fullft-hhrlhf")
    run = load(path)[0]
    assert "eval_rewards/margins" in run.raw.columns and "Rewards/margins" not in run.raw.columns
    assert list(run.validation["eval"]["step"])[:2] == [100, 200]
    assert list(run.train_steps) == list(range(100, 2401, 100))


def test_a_table_drawn_twice_reads_the_last_drawing() -> None:
    path = corpus_input("other__hf-cookbook__qwen25vl-3b-mpo-margins-flat")
    run = load(path)[0]
    assert f"{path}#cell 27: the training table was drawn 2 times; the last drawing was read" in run.notes
    assert list(run.train_steps) == list(range(10, 121, 10))


def test_the_trainer_class_in_the_code_names_the_algorithm() -> None:
    # the table has only Step and Training Loss; the code instantiates KTOTrainer
    run = load(corpus_input("other__model-diffing__qwen3-0.6b-kto-qlora-loss-flat"))[0]
    assert (run.algorithm, run.config["trainer_class"]) == ("kto", "KTOTrainer")


def test_config_calls_in_the_code_are_read_but_not_a_models_config() -> None:
    run = load(corpus_input("notebook__unsloth_gemma4_e2b_grpo"))[0]
    assert run.config["num_generations"] == 2 and run.config["learning_rate"] == 5e-05
    assert "lora_alpha" not in run.config  # LoraConfig / get_peft_model arguments are not the trainer's


# -- constructed notebooks (nbformat 4, as Jupyter writes them) --------------------------------------------

def _table(rows: list[list[str]], header: list[str], progress: str = "[3/3 00:10, Epoch 1/1]") -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (f"<div><progress value='3' max='3'></progress>{progress}</div>"
            f'<table border="1" class="dataframe"><thead><tr style="text-align: left;">{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _notebook(path: Path, cells: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _code(source: str, *outputs: dict[str, Any]) -> dict[str, Any]:
    return {"cell_type": "code", "source": source, "outputs": list(outputs), "metadata": {}, "execution_count": 1}


def _html(html: str) -> dict[str, Any]:
    return {"output_type": "display_data", "data": {"text/html": html, "text/plain": "<IPython.core.display.HTML>"}}


GRPO = ("trainer = GRPOTrainer(model=model, args=GRPOConfig(\n    max_completion_length = 200, # cap\n"
        "    beta = 0.04,\n))")


def test_an_error_output_in_the_training_cell_is_the_crash(tmp_path: Path) -> None:
    # constructed: the user pressed stop during step 3
    table = _table([["1", "0.1", "0.5"], ["2", "0.2", "0.6"]], ["Step", "Training Loss", "reward"])
    path = _notebook(tmp_path / "stopped.ipynb", [
        _code(GRPO), _code("trainer.train()", _html(table),
                           {"output_type": "error", "ename": "KeyboardInterrupt", "evalue": "", "traceback": []})])
    run = load(path)[0]
    assert (run.algorithm, list(run.train_steps)) == ("grpo", [1, 2])
    assert run.config["max_completion_length"] == 200 and run.config["beta"] == 0.04
    assert run.crash is not None
    assert (run.crash.exception, run.crash.kind, run.crash.last_step, run.crash.where) == (
        "KeyboardInterrupt", "signal", 2, f"{path}#cell 2")


def test_an_error_in_a_later_cell_is_no_crash(tmp_path: Path) -> None:
    table = _table([["1", "0.1"], ["2", "0.2"]], ["Step", "Training Loss"])
    path = _notebook(tmp_path / "later.ipynb", [
        _code("trainer.train()", _html(table)),
        _code("model.generate()", {"output_type": "error", "ename": "RuntimeError", "evalue": "boom"})])
    assert load(path)[0].crash is None


def test_printed_dicts_are_read_when_no_table_was_saved(tmp_path: Path) -> None:
    stream = {"output_type": "stream", "name": "stdout",
              "text": ["{'loss': 0.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.5}\n",
                       "{'loss': 0.4, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 1.0}\n"]}
    path = _notebook(tmp_path / "printed.ipynb", [_code("trainer = SFTTrainer(...)\ntrainer.train()", stream)])
    run = load(path)[0]
    assert (run.format, run.algorithm, list(run.train_steps)) == ("notebook", "sft", [1, 2])


def test_a_bad_row_is_skipped_with_its_place(tmp_path: Path) -> None:
    table = _table([["1", "0.1", "0.5"], ["2", "0.2"], ["x", "0.3", "0.7"], ["4", "No log", "oops"]],
                   ["Step", "Training Loss", "reward"])
    path = _notebook(tmp_path / "bad.ipynb", [_code("trainer.train()", _html(table))])
    meta, skips = SourceMeta(format="notebook"), SkipLog()
    records = list(read(path, meta, skips))
    assert [r.step for r in records] == [1]
    assert skips.reasons == [
        f"{path}#cell 1 row 2: 2 cells under 3 column headers; the row was skipped",
        f"{path}#cell 1 row 3: step 'x' is not an integer; the row was skipped",
        f"{path}#cell 1 row 4: value 'oops' for 'reward' is not a number; the value was skipped"]


def test_a_notebook_without_metrics_says_what_it_looked_for(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "empty.ipynb", [_code("print('hi')", {"output_type": "stream", "name": "stdout",
                                                                     "text": "hi\n"})])
    with pytest.raises(EmptyInputError, match=re.escape(f"{path}: a notebook without a training table (an HTML "
                                                        "<table> whose first column is Step")):
        load(path)


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "cut.ipynb"
    path.write_text('{"cells": [{"cell_type": "code", "source": "x"')
    with pytest.raises(InputError, match=re.escape(f"{path}:1:") + r"\d+: not valid JSON .*expected a Jupyter "
                                         r"notebook \(\.ipynb\) — was the file cut short\?"):
        load(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.ipynb"
    path.write_bytes(b'{"cells": [{"cell_type": "markdown", "source": "caf\xe9"}]}')
    with pytest.raises(InputError, match=re.escape(f"{path}: not UTF-8 text (invalid continuation byte at byte ")
                                         + r"\d+\); expected a Jupyter notebook \(\.ipynb\)$"):
        load(path)


def test_json_that_is_not_a_notebook(tmp_path: Path) -> None:
    path = tmp_path / "list.ipynb"
    path.write_text("[1, 2]")
    with pytest.raises(InputError, match=re.escape(f"{path}: found a JSON list; expected a Jupyter notebook "
                                                   "(a JSON object with a 'cells' list)")):
        load(path)


def test_a_notebook_is_sniffed_without_its_suffix(tmp_path: Path) -> None:
    table = _table([["1", "0.1"]], ["Step", "Training Loss"])
    path = _notebook(tmp_path / "saved.json", [_code("trainer.train()", _html(table))])
    assert find_reader(path).format == "notebook"

"""OpenRLHF's PPO samples (``train/generated_samples``) read as rollouts, from what its own loggers wrote
(``tests/ingest/data/openrlhf/ppo-samples-0.11.2``, made by ``scripts/captures/openrlhf_trainers.py samples``;
its ``source.toml`` says what the samples are): a W&B run its ``WandbLogger`` wrote offline (a table) and a
TensorBoard run its ``TensorboardLogger`` wrote (a text a step), given the same six samples."""

from __future__ import annotations

import hashlib
import io
import math
import shutil
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
import tomllib
from hypothesis import given
from hypothesis import strategies as st

import rlvitals
from rlvitals.cli import main
from rlvitals.errors import EmptyInputError, InputError
from rlvitals.ingest import SkipLog, logged_tables
from rlvitals.rollout import read_rollouts
from rlvitals.rollout._tables import openrlhf_sample
from rlvitals.words import in_lang

CAPTURE = Path(__file__).parents[1] / "ingest" / "data" / "openrlhf" / "ppo-samples-0.11.2"
DATA = CAPTURE / "wandb-run"
TB = CAPTURE / "tensorboard-run"
TAG = "train/generated_samples/text_summary"  # torch's add_text adds /text_summary to OpenRLHF's tag


def _run() -> Path:
    (run,) = DATA.glob("offline-run-*")
    return run


def _tables() -> list[dict[str, list[list[object]]]]:
    files = (_run() / "files" / "media" / "table" / "train").glob("generated_samples_*.table.json")
    return sorted((orjson.loads(f.read_bytes()) for f in files), key=lambda t: len(t["data"]))


def test_the_logger_repeats_every_earlier_row_in_each_table() -> None:
    tables = _tables()
    assert [len(t["data"]) for t in tables] == [1, 2, 3, 4, 5, 6]
    assert all(t["columns"] == ["global_step", "text", "reward"] for t in tables)
    assert all(t["data"] == tables[-1]["data"][: len(t["data"])] for t in tables)


def test_each_step_sample_is_read_once_with_its_text_and_reward() -> None:
    rollouts = read_rollouts(_run())
    logged = _tables()[-1]["data"]
    got = rollouts.table.sort("step").select("step", "response", "score", "split").rows()
    assert got == [(step, text, reward, "train") for step, text, reward in logged]
    assert rollouts.format == "wandb-table"
    note = next(n for n in rollouts.notes if "OpenRLHF" in n)
    assert note == ("OpenRLHF's generated samples ('train/generated_samples'): one training sample per global step, "
                    "its prompt and response in one text (OpenRLHF logs the decoded sequence), each its own group")
    assert "OpenRLHF 的生成样本" in in_lang(note, "zh")


def test_the_command_line_reads_them() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(_run())], out=out, err=err) == 0, err.getvalue()
    assert "OpenRLHF's generated samples" in out.getvalue()


# --- the same samples through OpenRLHF's TensorboardLogger -----------------------------------------------


def test_the_tensorboard_logger_writes_a_text_a_step_with_a_literal_backslash_n() -> None:
    logged = _tables()[-1]["data"]
    texts = logged_tables(TB, skips := SkipLog())
    assert skips.count == 0
    assert [(t.key, t.step, t.writer) for t in texts] == [(TAG, step, "tensorboard") for step, _, _ in logged]
    # openrlhf 0.11.2: f"Sample:\\n{text}\\n\\nReward: {reward:.4f}" -- the \n two characters, not a newline
    assert [t.rows for t in texts] == [({"text": f"Sample:\\n{text}\\n\\nReward: {reward:.4f}"},)
                                       for _, text, reward in logged]


def test_the_tensorboard_run_gives_the_samples_the_wandb_table_gives() -> None:
    tb, wandb = read_rollouts(TB), read_rollouts(_run())
    columns = ("step", "group", "sample", "prompt", "response", "split", "correct")
    assert tb.table.height == wandb.table.height == 6
    assert tb.table.sort("step").select(columns).rows() == wandb.table.sort("step").select(columns).rows()
    got, logged = tb.table.sort("step")["score"].to_list(), wandb.table.sort("step")["score"].to_list()
    assert got == [round(r, 4) for r in logged]  # the text holds the reward to 4 decimals
    assert tb.format == "tensorboard-text" and tb.skips.count == 0
    assert tb.notes[:2] == [
        f"OpenRLHF's generated samples ({TAG!r}): one training sample per global step, its prompt and response in "
        "one text (OpenRLHF logs the decoded sequence), each its own group",
        "the reward of each sample is read from its text's 'Reward:' line, rounded to 4 decimals as OpenRLHF's "
        "TensorBoard logger writes it"]
    assert in_lang(tb.notes[1], "zh") == ("每条样本的 reward 取自其文本中的 'Reward:' 一行，按 OpenRLHF 的 "
                                          "TensorBoard 记录器的写法保留 4 位小数")


def test_an_event_file_alone_is_read_too() -> None:
    (file,) = TB.rglob("events.out.tfevents.*")
    assert read_rollouts(file).table.sort("step")["response"].to_list() == [t for _, t, _ in _tables()[-1]["data"]]


def test_the_command_line_reads_the_tensorboard_run() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(TB), "--json"], out=out, err=err) == 0, err.getvalue()
    said = orjson.loads(out.getvalue())
    assert [s["step"] for s in said["steps"]] == [1, 2, 3, 4, 5, 6]
    assert [s["rollouts"] for s in said["steps"]] == [1] * 6
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(TB), "--lang", "zh"], out=out, err=err) == 0, err.getvalue()
    assert "保留 4 位小数" in out.getvalue() and "OpenRLHF 的生成样本" in out.getvalue()


def _ppo_console(tmp_path: Path) -> Path:
    """A PPO run to join the samples to (constructed: no PPO capture exists, it needs GPUs): six lines as
    OpenRLHF's PPO trainer prints them, ``✨ Global step N: {status dict}``, in its logger's format."""
    log = tmp_path / "train.log"
    log.write_text("".join(
        f"INFO 12-05 12:43:{20 + step:02d} ppo_trainer.py:547] ✨ Global step {step}: "
        f"{ {'policy_loss': 0.01 * step, 'kl': 0.001 * step, 'reward': 0.5, 'response_length': 300.0 + step}!r}\n"
        for step in range(1, 7)), encoding="utf-8")
    return log


def test_diagnose_joins_either_source_alike(tmp_path: Path) -> None:
    log = _ppo_console(tmp_path)

    def diagnosed(rollouts: Path) -> dict[str, Any]:
        out, err = io.StringIO(), io.StringIO()
        assert main(["diagnose", str(log), "--rollouts", str(rollouts), "--json"], out, err) == 0, err.getvalue()
        run: dict[str, Any] = orjson.loads(out.getvalue())["runs"][0]
        return run

    tb, wandb = diagnosed(TB), diagnosed(_run())
    assert tb["framework"] == "openrlhf"
    # one sample a step is no group: the group-scale checks cannot judge it (they once failed it: "no rollout
    # carried a learning signal"), and say why rather than call it healthy
    group = [f for f in tb["findings"] if f["check"] in ("effective_batch", "zero_variance_groups")]
    assert group and all(f["status"] == "skipped" for f in group), [(f["check"], f["status"]) for f in group]
    assert tb["findings"] == wandb["findings"]
    assert tb["rollouts"]["path"] == str(TB) and tb["rollouts"]["skipped"] == {"count": 0, "reasons": []}
    assert tb["rollouts"]["notes"][:2] == read_rollouts(TB).notes[:2]
    run = rlvitals.load(str(log))[0]
    rewards = [r for _, _, r in _tables()[-1]["data"]]
    for source in (TB, _run()):
        joined = rlvitals.analyze_rollouts(source).join(run)
        assert joined.series("group/size/mean")[1].tolist() == [1] * 6  # one training sample a step
        steps, passed = joined.series("pass@1")
        assert steps.tolist() == [1, 2, 3, 4, 5, 6] and passed.tolist() == rewards


# --- a mutated copy of the real capture: its events re-encoded with tensorboard's own protobufs ----------


def _mutated(tmp_path: Path, texts: dict[int, bytes]) -> Path:
    """A copy of the TensorBoard capture with the text of the given steps replaced (the records re-framed)."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    (src,) = TB.rglob("events.out.tfevents.*")
    run = tmp_path / "tb" / src.parent.name
    run.mkdir(parents=True)
    data, pos, out = src.read_bytes(), 0, bytearray()
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
        pos += length + 16
        for value in event.summary.value:
            if event.step in texts:
                value.tensor.string_val[:] = [texts[event.step]]
        payload = event.SerializeToString()
        head = struct.pack("<Q", len(payload))
        out += head + struct.pack("<I", masked_crc32c(head)) + payload + struct.pack("<I", masked_crc32c(payload))
    (run / src.name).write_bytes(bytes(out))
    return run.parent


def test_a_text_not_in_openrlhfs_shape_is_a_counted_skip_with_its_reason(tmp_path: Path) -> None:
    folder = _mutated(tmp_path, {3: b"a note someone logged under the same tag"})
    rs = read_rollouts(folder)
    assert rs.table.sort("step")["step"].to_list() == [1, 2, 4, 5, 6]
    (file,) = folder.rglob("events.out.tfevents.*")
    assert rs.skips.count == 1
    [reason] = rs.skips.reasons
    assert reason == (f"{file}#record 4: the text {TAG!r} at step 3 is not OpenRLHF's sample ('Sample:\\n<text>"
                      "\\n\\nReward: <reward>'): it reads 'a note someone logged under the same tag'; it was skipped")
    assert in_lang(reason, "zh") == (f"{file}#record 4: 第 3 步的文本 {TAG!r} 不是 OpenRLHF 的样本"
                                     "（'Sample:\\n<文本>\\n\\nReward: <reward>'）：内容是 "
                                     "'a note someone logged under the same tag'；已跳过")
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(folder), "--json"], out=out, err=err) == 0, err.getvalue()
    assert orjson.loads(out.getvalue())["skipped"] == {"count": 1, "reasons": [reason]}


def test_a_run_whose_every_sample_text_is_malformed_says_why(tmp_path: Path) -> None:
    folder = _mutated(tmp_path, {s: b"Sample: no reward here" for s in range(1, 7)})
    with pytest.raises(EmptyInputError) as e:
        read_rollouts(folder)
    assert e.value.text().startswith(f"{folder}: no rollout could be read: 6 line(s) or row(s) were skipped: ")
    assert f"the text {TAG!r} at step 1 is not OpenRLHF's sample" in e.value.text()
    assert f"第 1 步的文本 {TAG!r} 不是 OpenRLHF 的样本" in e.value.text("zh")


def test_openrlhf_0_9_0_texts_with_newlines_read_too(tmp_path: Path) -> None:
    # constructed: 0.7.3-0.9.0's ppo_trainer.py wrote f"Sample:\n{text}\n\nReward: {reward:.4f}" with newlines
    folder = _mutated(tmp_path, {2: b"Sample:\nUser: What is 5 plus 12?\nAssistant: 17</s>\n\nReward: 0.2500"})
    rs = read_rollouts(folder)
    row = rs.table.filter(rs.table["step"] == 2).row(0, named=True)
    assert (row["response"], row["score"]) == ("User: What is 5 plus 12?\nAssistant: 17</s>", 0.25)
    assert rs.skips.count == 0


@given(st.text(), st.floats(), st.sampled_from(["\\n", "\n"]))
def test_a_sample_text_gives_back_its_text_and_its_reward_to_4_decimals(text: str, reward: float, sep: str) -> None:
    said = f"Sample:{sep}{text}{sep}{sep}Reward: {reward:.4f}"
    got = openrlhf_sample(said)
    assert got is not None and got[0] == text
    assert got[1] == float(f"{reward:.4f}") or (math.isnan(reward) and math.isnan(got[1]))


def test_a_text_in_no_such_shape_is_not_a_sample() -> None:
    for said in ("", "Sample:", "Sample:\\nx\\n\\nReward: ", "Sample:\\nx\\n\\nReward: 1.0 more",
                 "Sample:\nx\\n\\nReward: 1.0000", "x\n\nReward: 1.0000"):
        assert openrlhf_sample(said) is None, said


def test_a_folder_of_two_tensorboard_runs_asks_for_one(tmp_path: Path) -> None:
    for name in ("a", "b"):
        shutil.copytree(next(TB.iterdir()), tmp_path / "tb" / name)
    with pytest.raises(InputError) as e:
        read_rollouts(tmp_path / "tb")
    assert e.value.text() == f"{tmp_path / 'tb'}: 2 TensorBoard runs here (a, b); give one run's folder"
    assert e.value.text("zh") == f"{tmp_path / 'tb'}：这里有 2 个 TensorBoard 运行（a, b）；请给出其中一个运行的文件夹"


def test_the_capture_says_what_made_it_and_holds_what_it_lists() -> None:
    source = tomllib.loads((CAPTURE / "source.toml").read_text(encoding="utf-8"))
    assert source["writer"] == "WandbLogger, TensorboardLogger" and source["package"] == "openrlhf==0.11.2"
    assert "not a PPO run's" in source["how"] and source["replaced"]
    listed = {f["saved_as"]: f for f in source["file"]}
    held = sorted(str(p.relative_to(CAPTURE)) for p in CAPTURE.rglob("*") if p.is_file() and p.name != "source.toml")
    assert sorted(listed) == held
    for name, f in listed.items():
        data = (CAPTURE / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (f["bytes"], f["sha256"]), name

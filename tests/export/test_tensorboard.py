"""rlvitals export --tensorboard: a real run's curves (logged and derived) and findings written by the own
event-file writer, read back by rlvitals' reader and by tensorboard's EventAccumulator.

TensorBoard stores a ``simple_value`` as float32, so a value reads back as
``float(np.float32(value))``: both readers are compared against that, bit for bit.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import REAL
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_masked_crc32c

import rlvitals
from rlvitals.cli import main
from rlvitals.diagnosis import Diagnosis, diagnose
from rlvitals.errors import RlvitalsError, UnknownMetricError
from rlvitals.export import ExportPlan, Series, plan_export, write_tensorboard
from rlvitals.export._wire import tfrecord, tfrecords, varint
from rlvitals.export.tensorboard import TEXT_TAG, VERDICT_TAG
from rlvitals.ingest._crc import crc32c

FIXTURE = REAL / "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
#: the documented encoding (docs/json.md): a note sits between ok and warn
STATUS = {"ok": 0.0, "note": 0.5, "warn": 1.0, "fail": 2.0}
NAN_STEP_INDEX = 3  # the rollouts of this step come in groups of 2, so pass@4 has no value there


def rollout_rows(steps: list[int]) -> list[dict[str, object]]:
    """Groups of 4 (2 at one step) with scores that leave some groups all right or all wrong."""
    rows: list[dict[str, object]] = []
    for i, step in enumerate(steps):
        size = 2 if i == NAN_STEP_INDEX else 4
        for g in range(3):
            for k in range(size):
                score = 1.0 if (step * 7 + g * 3 + k * (g + 1)) % 5 < 2 + g % 2 * (i % 3) else 0.0
                rows.append({"step": step, "prompt": f"prompt {g}", "response": f"the answer is {(step + g * k) % 4}",
                             "score": score})
    return rows


@pytest.fixture(scope="module")
def diagnosed() -> tuple[Diagnosis, list[str]]:
    run = rlvitals.load(FIXTURE)[0]
    steps = run.train_steps.tolist()[::40]
    derived = rlvitals.analyze_rollouts(rollout_rows(steps)).series().join(gappy(steps), on="step")
    keys = [c for c in derived.columns if c != "step"]
    return diagnose(run.with_series(derived)), keys


def gappy(steps: list[int]) -> pl.DataFrame:
    """Two more derived series: one NaN at every step, one NaN at every third step."""
    some = [math.nan if i % 3 == 0 else i / 10 for i in range(len(steps))]
    return pl.DataFrame({"step": steps, "pass@64": [math.nan] * len(steps), "maj@64": some})


@pytest.fixture(scope="module")
def plan(diagnosed: tuple[Diagnosis, list[str]]) -> ExportPlan:
    diagnosis, keys = diagnosed
    return plan_export(diagnosis, derived=keys, metrics=["actor/entropy", "response_length/mean"])


def f32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32).astype(np.float64)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


# --- CRC-32C and framing ---------------------------------------------------------------------

@pytest.mark.parametrize(("data", "crc"), [
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),  # RFC 3720 B.4 test vectors
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (b"", 0x0),
])
def test_crc32c_known_vectors(data: bytes, crc: int) -> None:
    assert crc32c(data) == crc


def test_tfrecord_framing_checks_out_with_tensorboards_own_crc() -> None:
    payload = b"an event payload \x00\xff" * 7
    rec = tfrecord(payload)
    (length,) = struct.unpack_from("<Q", rec)
    assert length == len(payload) and rec[12:12 + length] == payload and len(rec) == 16 + length
    assert struct.unpack_from("<I", rec, 8)[0] == tb_masked_crc32c(rec[:8])
    assert struct.unpack_from("<I", rec, 12 + length)[0] == tb_masked_crc32c(payload)


def test_varint_encoding() -> None:
    assert varint(0) == b"\x00" and varint(1) == b"\x01" and varint(300) == b"\xac\x02"
    assert varint(-1) == b"\xff" * 9 + b"\x01"  # int64 -1 as protobuf writes it


# --- the plan ---------------------------------------------------------------------------------

def test_plan_takes_derived_and_named_series_and_drops_all_nan_ones(plan: ExportPlan,
                                                                   diagnosed: tuple[Diagnosis, list[str]]) -> None:
    tags = {s.tag: s for s in plan.series}
    assert {"rlvitals/pass@4", "rlvitals/group/zero_std/share", "rlvitals/actor/entropy",
            "rlvitals/response_length/mean"} <= tags.keys()
    assert tags["rlvitals/actor/entropy"].origin == "logged" and tags["rlvitals/pass@4"].origin == "derived"
    run = diagnosed[0].run
    assert len(tags["rlvitals/actor/entropy"].steps) == len(run.series("actor/entropy", train_only=False)[0])
    # NaN at every step: a chart of nothing is not written, and the plan says so
    assert "rlvitals/pass@64" not in tags
    assert "rlvitals/pass@64: no finite value at any of its 28 steps; not written" in plan.dropped
    # NaN at some steps: written as NaN
    steps = run.train_steps.tolist()[::40]
    maj = tags["rlvitals/maj@64"]
    assert maj.steps.tolist() == steps and same(maj.values, gappy(steps)["maj@64"].to_numpy())
    # a step where a series has no value at all is left out, never written as 0 or NaN
    for key in ("pass@4", "diversity/distinct_2", "group/zero_std/share"):
        assert tags[f"rlvitals/{key}"].steps.tolist() == run.frame.select("step", key).drop_nulls()["step"].to_list()
    assert all(f.status != "skipped" for f in plan.findings)
    assert len({f.name for f in plan.findings}) == len(plan.findings)
    # the run's MFU of 19 % is a note: exported as such, not as a warning
    assert plan.findings and {f.status for f in plan.findings} >= {"ok", "note", "warn"}
    assert next(f for f in plan.findings if f.check == "mfu_low").status == "note"


def test_an_alias_names_its_canonical_key(diagnosed: tuple[Diagnosis, list[str]]) -> None:
    plan = plan_export(diagnosed[0], metrics=["actor/entropy_loss"])  # veRL's old name of actor/entropy
    assert [s.key for s in plan.series] == ["actor/entropy"]


# --- written, read back -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def logdir(plan: ExportPlan, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's own event file (tensorboardX, as veRL writes it) plus the rlvitals export."""
    from tensorboardX import SummaryWriter

    folder = tmp_path_factory.mktemp("tb") / "grpo"
    writer = SummaryWriter(str(folder))
    for step in range(1, 6):
        writer.add_scalar("actor/entropy", 1.0 / step, step)
    writer.close()
    write_tensorboard(plan, folder, clock=lambda: 1_764_000_000.5, host="testhost")
    return folder


def test_file_name_and_header(logdir: Path) -> None:
    ours = logdir / "events.out.tfevents.1764000000.testhost.rlvitals"
    assert ours.is_file()
    assert b"brain.Event:2" in ours.read_bytes()[:64]


def test_rlvitals_reader_reads_back_every_series_and_the_users_tags(plan: ExportPlan, logdir: Path) -> None:
    (back,) = rlvitals.load(logdir)
    raw = back.raw
    for series in plan.series:
        got = raw.select("step", series.tag).drop_nulls()
        assert got["step"].to_list() == series.steps.tolist(), series.tag
        assert same(got[series.tag].to_numpy(), f32(series.values)), series.tag
    user = raw.select("step", "actor/entropy").drop_nulls()
    assert user["step"].to_list() == [1, 2, 3, 4, 5]
    for f in plan.findings:
        assert raw.filter(raw["step"] == f.step)[f.tag].item() == STATUS[f.status]
    assert raw.filter(raw["step"] == plan.last_step)[VERDICT_TAG].item() == {"warn": 1, "fail": 2}[plan.verdict]
    assert back.skipped.count == 0
    assert any(TEXT_TAG in note for note in back.notes)  # the text summary is seen and left alone


def test_tensorboard_event_accumulator_reads_the_same(plan: ExportPlan, logdir: Path) -> None:
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    for series in plan.series:
        events = acc.Scalars(series.tag)
        assert [e.step for e in events] == series.steps.tolist(), series.tag
        assert same(np.array([e.value for e in events]), f32(series.values)), series.tag
        assert events[0].wall_time == 1_764_000_000.5
    assert [e.value for e in acc.Scalars("actor/entropy")] == pytest.approx([1.0, 0.5, 1 / 3, 0.25, 0.2])
    for f in plan.findings:
        assert [(e.step, e.value) for e in acc.Scalars(f.tag)] == [(f.step, STATUS[f.status])]
    (text,) = acc.Tensors(TEXT_TAG)
    assert text.step == plan.last_step
    markdown = text.tensor_proto.string_val[0].decode()
    assert markdown.startswith(f"**rlvitals verdict: {plan.verdict}**")
    for f in plan.findings:
        assert f.message.replace("|", "\\|") in markdown and f"| {f.name} |" in markdown
    assert acc.SummaryMetadata(TEXT_TAG).plugin_data.plugin_name == "text"


def test_float32_rounding_overflow_and_nan(tmp_path: Path) -> None:
    values = np.array([0.1, 1e39, -1e39, np.nan, np.inf, -2.5, 1e-50])
    plan = ExportPlan("x.log", "en", "ok", 6, (Series("rlvitals/x", "x", "logged", np.arange(7), values),), ())
    write_tensorboard(plan, tmp_path, host="h")
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    got = np.array([e.value for e in acc.Scalars("rlvitals/x")])
    want = np.array([float(np.float32(0.1)), np.inf, -np.inf, np.nan, np.inf, -2.5, 0.0])
    assert same(got, want)
    assert got[0] == 0.10000000149011612 != 0.1
    (back,) = rlvitals.load(tmp_path)
    assert same(back.raw["rlvitals/x"].to_numpy(), want)


def test_chinese_words(diagnosed: tuple[Diagnosis, list[str]], tmp_path: Path) -> None:
    plan = plan_export(diagnosed[0], lang="zh")
    warn = next(f for f in diagnosed[0].findings if f.status == "warn")
    write_tensorboard(plan, tmp_path, host="h")
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    markdown = acc.Tensors(TEXT_TAG)[0].tensor_proto.string_val[0].decode()
    assert warn.message["zh"].replace("|", "\\|") in markdown and warn.message["en"] not in markdown


def test_a_second_export_in_the_same_second_gets_its_own_file(plan: ExportPlan, tmp_path: Path) -> None:
    first = write_tensorboard(plan, tmp_path, clock=lambda: 5.0, host="h")
    second = write_tensorboard(plan, tmp_path, clock=lambda: 5.0, host="h")
    assert first != second and first.read_bytes() == second.read_bytes()
    assert second.name == "events.out.tfevents.5.h.rlvitals.2"


# --- errors -----------------------------------------------------------------------------------

def test_logdir_is_a_file(plan: ExportPlan, tmp_path: Path) -> None:
    target = tmp_path / "events.txt"
    target.write_text("not a folder")
    with pytest.raises(RlvitalsError, match=r"--tensorboard .*events\.txt: is a file, expected a folder"):
        write_tensorboard(plan, target)


def test_logdir_cannot_be_created(plan: ExportPlan, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(RlvitalsError, match=r"cannot create the folder .*give a writable folder"):
        write_tensorboard(plan, tmp_path / "file" / "sub")


def test_unknown_metric(diagnosed: tuple[Diagnosis, list[str]]) -> None:
    with pytest.raises(UnknownMetricError, match=r"--metrics 'actor/entropyy': .* logged no such metric; "
                                                 r"similar keys it logged: actor/entropy"):
        plan_export(diagnosed[0], metrics=["actor/entropyy"])


def test_a_catalog_metric_the_run_did_not_log(diagnosed: tuple[Diagnosis, list[str]]) -> None:
    with pytest.raises(UnknownMetricError, match=r"--metrics 'critic/vf_loss': .* logged no such metric.*"
                                                 r"rlvitals inspect RUN"):
        plan_export(diagnosed[0], metrics=["critic/vf_loss"])


def test_derived_keys_must_be_joined_first(diagnosed: tuple[Diagnosis, list[str]]) -> None:
    with pytest.raises(RlvitalsError, match=r"derived series \['pass@128'\] are not columns of .*run\.with_series"):
        plan_export(diagnosed[0], derived=["pass@128"])


def test_unknown_language(diagnosed: tuple[Diagnosis, list[str]]) -> None:
    with pytest.raises(RlvitalsError, match=r"export language 'fr': expected one of en, zh"):
        plan_export(diagnosed[0], lang="fr")


# --- CLI --------------------------------------------------------------------------------------

def _rollout_file(tmp_path: Path, steps: list[int]) -> Path:
    path = tmp_path / "rollouts.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rollout_rows(steps)) + "\n")
    return path


class _Out:
    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def isatty(self) -> bool:
        return False


def test_cli_export_tensorboard(tmp_path: Path, plan: ExportPlan) -> None:
    rollouts = _rollout_file(tmp_path, rlvitals.load(FIXTURE)[0].train_steps.tolist()[::40])
    out, err = _Out(), _Out()
    code = main(["export", str(FIXTURE), "--tensorboard", str(tmp_path / "tb"), "--rollouts", str(rollouts),
                 "--metrics", "actor/entropy,response_length/mean"], out, err)  # type: ignore[arg-type]
    assert code == 0, err.text
    assert out.text.startswith(f"wrote {tmp_path / 'tb'}/events.out.tfevents.")
    (back,) = rlvitals.load(tmp_path / "tb")
    # the two logged metrics named and every rollout series, as many as the line says
    series = [k for k in back.raw.columns if k.startswith("rlvitals/") and not k.startswith("rlvitals/findings/")
              and k != VERDICT_TAG]
    derived = len(series) - 2
    assert {"rlvitals/actor/entropy", "rlvitals/response_length/mean"} <= set(series) and derived > 10
    assert f": {len(series)} series ({derived} from the rollouts), " in out.text and "; verdict warn" in out.text
    pass4 = next(s for s in plan.series if s.tag == "rlvitals/pass@4")
    assert same(back.raw.select("step", pass4.tag).drop_nulls()[pass4.tag].to_numpy(), f32(pass4.values))


def test_cli_two_runs_get_one_folder_each(tmp_path: Path) -> None:
    out, err = _Out(), _Out()
    code = main(["export", str(FIXTURE), str(FIXTURE), "--tensorboard", str(tmp_path)], out, err)  # type: ignore[arg-type]
    assert code == 0, err.text
    assert sorted(p.name for p in tmp_path.iterdir()) == [FIXTURE.name, f"{FIXTURE.name}-2"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--metrics", "nope/metric"], "--metrics 'nope/metric'"),
    (["--tensorboard-file"], "is a file, expected a folder"),
])
def test_cli_errors(tmp_path: Path, extra: list[str], message: str) -> None:
    target = tmp_path / "tb"
    if extra == ["--tensorboard-file"]:
        target.write_text("x")
        extra = []
    out, err = _Out(), _Out()
    assert main(["export", str(FIXTURE), "--tensorboard", str(target), *extra], out, err) == 2  # type: ignore[arg-type]
    assert message in err.text and not out.text


def test_cli_needs_a_destination() -> None:
    out, err = _Out(), _Out()
    assert main(["export", str(FIXTURE)], out, err) == 2  # type: ignore[arg-type]
    assert "one of the arguments --tensorboard --wandb --trackio --swanlab is required" in err.text and not out.text


def test_batched_framing_equals_one_record_at_a_time() -> None:
    rng = np.random.default_rng(7)
    payloads = [rng.integers(0, 256, int(n), dtype=np.uint8).tobytes() for n in rng.integers(0, 40, 400)]
    payloads += [b"", b"", b"\x00" * 1500]
    assert tfrecords(payloads) == b"".join(tfrecord(p) for p in payloads)

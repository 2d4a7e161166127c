"""``watch --export-tensorboard``: a growing veRL JSONL log and its rollout dumps, watched, with the rollout
series, findings and verdict appended to a live event file after each diagnosis, read back by
TensorBoard's own EventAccumulator: every point once, in step order, across a restart and a crash that
cut a record in half."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import orjson
import pytest
from optional import require
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from rlvitals.cli import main
from rlvitals.export._wire import tfrecord
from rlvitals.export.live import LiveTensorBoard, complete_length
from rlvitals.export.tensorboard import TEXT_TAG, VERDICT_TAG
from rlvitals.ingest import SkipLog, SourceMeta
from rlvitals.ingest import tensorboard as tb_reader
from rlvitals.live import Confirm
from rlvitals.rollout.writers import write_verl_dump
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions

# entropy collapses at step 80: a finding that appears while the log grows
LINES = [line + b"\n" for line in jsonl_lines(Scenario(steps=160, collapse_at=80, grad_spike_at=None))]
PAIR = {"entropy_collapse"}


def _dump(folder: Path, step: int) -> None:
    """Four prompts × four rollouts; from step 100 every group agrees (no learning signal)."""
    rows = [{"prompt": f"Q{g}", "response": f"answer {s}", "target": "1",
             "score": 1.0 if step >= 100 and g < 2 else 0.0 if step >= 100 else float((s + g + step) % 2)}
            for g in range(4) for s in range(4)]
    write_verl_dump(rows, folder, step)


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def _watcher(tmp: Path, paths: list[Path], export: Path, err: io.StringIO | None = None) -> Watcher:
    return Watcher(paths, WatchState(tmp / "state.sqlite"), [],
                   WatchOptions(diagnose_gap=0.0, min_gap=0.0, tail_steps=0, export_tensorboard=export,
                                confirm=Confirm(looks=1)),
                   view=PlainView(io.StringIO(), err or io.StringIO()), clock=lambda: 1000.0,
                   rollouts=tmp / "rollouts")


def _scalars(logdir: Path) -> EventAccumulator:
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def _grow(tmp: Path, log: Path, upto: int, start: int) -> None:
    _append(log, b"".join(LINES[start:upto]))
    for step in range(start + 1, upto + 1, 10):
        _dump(tmp / "rollouts", step)


def test_a_watched_run_is_exported_live_once_per_point_across_a_restart(tmp_path: Path) -> None:
    log, tb = tmp_path / "run.jsonl", tmp_path / "tb"
    _grow(tmp_path, log, 60, 0)
    w = _watcher(tmp_path, [log], tb)
    w.cycle()
    _grow(tmp_path, log, 120, 60)
    w.cycle()
    w.close()
    (file,) = tb.iterdir()
    assert file.name.endswith(".rlvitals-live")
    w = _watcher(tmp_path, [log], tb)  # restarted: it appends to its file after what is there
    w.cycle()
    _grow(tmp_path, log, 160, 120)
    w.cycle()
    w.close()
    assert list(tb.iterdir()) == [file]
    acc = _scalars(tb)
    share = acc.Scalars("rlvitals/group/zero_std/share")
    assert [e.step for e in share] == list(range(1, 161, 10))  # every dump's step, once, in order
    assert [e.value for e in share] == [0.0] * 10 + [1.0] * 6
    # the run's own curves are not written again: they are in its own logs (often this very folder)
    assert not any(t.startswith("rlvitals/actor/") for t in acc.Tags()["scalars"])
    verdict = acc.Scalars(VERDICT_TAG)
    # one point per diagnosis that saw a new last step: 60, 120, 160 (the restart's first saw 120 again)
    assert [e.step for e in verdict] == [60, 120, 160] and verdict[0].value < verdict[-1].value == 2.0
    collapse = acc.Scalars("rlvitals/findings/entropy_collapse")
    assert [(e.step, e.value) for e in collapse] == [(60, 0.0), (120, 2.0), (160, 2.0)]
    texts = acc.Tensors(TEXT_TAG)  # written when the words changed, and again once after the restart
    assert [t.step for t in texts][0] == 60 and len({t.step for t in texts}) == len(texts)
    assert "entropy_collapse" in texts[-1].tensor_proto.string_val[0].decode()
    # TensorBoard's reader forgets points whose step went back, so count what the file holds, raw
    written: dict[str, list[int]] = {}
    for record in tb_reader.read(file, SourceMeta(format="tensorboard"), SkipLog()):
        for tag in record.values:
            written.setdefault(tag, []).append(record.step)
    assert written.keys() == set(acc.Tags()["scalars"])
    for tag, steps in written.items():
        assert steps == sorted(set(steps)), tag


def test_a_record_cut_in_half_by_a_crash_is_cut_off_and_the_file_goes_on(tmp_path: Path) -> None:
    log, tb = tmp_path / "run.jsonl", tmp_path / "tb"
    _grow(tmp_path, log, 60, 0)
    w = _watcher(tmp_path, [log], tb)
    w.cycle()
    w.close()
    (file,) = tb.iterdir()
    whole = file.stat().st_size
    _append(file, tfrecord(b"\x09" + bytes(8))[:11])  # a crash in the middle of a write
    assert complete_length(file) == whole
    live = LiveTensorBoard(tb)
    assert file.stat().st_size == whole and live.last[VERDICT_TAG] == 60
    _grow(tmp_path, log, 100, 60)
    w = _watcher(tmp_path, [log], tb)
    w.cycle()
    w.close()
    assert [e.step for e in _scalars(tb).Scalars(VERDICT_TAG)] == [60, 100]


def test_several_runs_get_a_folder_each(tmp_path: Path) -> None:
    a, b, tb = tmp_path / "a" / "run.jsonl", tmp_path / "b" / "run.jsonl", tmp_path / "tb"
    other = [line + b"\n" for line in jsonl_lines(Scenario(steps=50, seed=7, collapse_at=None, grad_spike_at=None))]
    for log, lines in ((a, LINES), (b, other)):  # two runs (the same lines twice would be one run's twins)
        log.parent.mkdir()
        _append(log, b"".join(lines[:50]))
    w = _watcher(tmp_path, [a, b], tb)
    w.cycle()
    w.close()
    assert sorted(p.parent.relative_to(tb).as_posix() for p in tb.glob("**/*.rlvitals-live")) == \
        ["a/run.jsonl", "b/run.jsonl"]
    for run in ("a/run.jsonl", "b/run.jsonl"):
        assert [e.step for e in _scalars(tb / run).Scalars(VERDICT_TAG)] == [50]


def test_an_export_that_cannot_be_written_is_said_once_and_the_watch_goes_on(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    (tmp_path / "file").write_text("not a folder")
    _grow(tmp_path, log, 60, 0)
    err = io.StringIO()
    w = _watcher(tmp_path, [log], tmp_path / "file" / "tb", err)
    w.cycle()
    _grow(tmp_path, log, 120, 60)
    alerts = w.cycle()
    w.close()
    assert any(a.check == "entropy_collapse" for a in alerts)  # the watch went on
    said = [line for line in err.getvalue().splitlines() if "--export-tensorboard" in line]
    assert said == [f"rlvitals: --export-tensorboard {tmp_path / 'file' / 'tb'}: cannot write (Not a directory); "
                    "the derived series and findings are not exported until it can"]


def test_cli_watch_once_exports_and_refuses_a_file_as_the_folder(tmp_path: Path) -> None:
    log, tb = tmp_path / "run.jsonl", tmp_path / "tb"
    _grow(tmp_path, log, 120, 0)
    out, err = io.StringIO(), io.StringIO()
    code = main(["watch", str(log), "--once", "--rollouts", str(tmp_path / "rollouts"), "--state",
                 str(tmp_path / "s.sqlite"), "--export-tensorboard", str(tb)], out, err)
    assert code == 0, err.getvalue()
    acc = _scalars(tb)
    assert [e.step for e in acc.Scalars(VERDICT_TAG)] == [120]
    assert np.isfinite([e.value for e in acc.Scalars("rlvitals/pass@4")]).all()
    err = io.StringIO()
    assert main(["watch", str(log), "--once", "--export-tensorboard", str(log)], io.StringIO(), err) == 2
    assert err.getvalue() == (f"rlvitals: --export-tensorboard {log}: is a file, expected a folder (the run's "
                              "TensorBoard log folder, or a new one)\n")


@pytest.mark.parametrize("cut", [0, 5])
def test_a_file_with_not_even_its_header_is_started_again(tmp_path: Path, cut: int) -> None:
    tb = tmp_path / "tb"
    tb.mkdir()
    broken = tb / "events.out.tfevents.1.h.rlvitals-live"
    broken.write_bytes(tfrecord(b"x")[:cut])
    live = LiveTensorBoard(tb)
    assert live.path is None and not broken.exists() and live.last == {}


@pytest.mark.tracker
def test_a_watched_run_is_logged_live_to_one_w_and_b_run_across_a_restart(tmp_path: Path) -> None:
    """The real wandb client, offline: the restarted watcher resumes the same W&B run (a second offline
    folder with the same id, as ``wandb sync`` expects) and logs only what the first did not."""
    require(["wandb"], "the W&B live export test", "pip install wandb")
    import wandb

    import rlvitals
    from rlvitals.export.wandb import STEP_KEY, TABLE_COLUMNS
    from rlvitals.watch.exports import WandbTarget

    log, folder = tmp_path / "run.jsonl", tmp_path / "wb"
    target = WandbTarget(folder, project="rlvitals-test")

    def watcher() -> Watcher:
        return Watcher([log], WatchState(tmp_path / "state.sqlite"), [],
                       WatchOptions(diagnose_gap=0.0, min_gap=0.0, tail_steps=0, export_wandb=target,
                                confirm=Confirm(looks=1)),
                       view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: 1000.0,
                       rollouts=tmp_path / "rollouts")

    _grow(tmp_path, log, 60, 0)
    w = watcher()
    w.cycle()
    _grow(tmp_path, log, 120, 60)
    w.cycle()
    w.close()
    w = watcher()
    w.cycle()  # nothing new: nothing logged, not even a W&B run started
    _grow(tmp_path, log, 160, 120)
    w.cycle()
    w.close()
    wandb.teardown()  # wandb's service flushes the run files
    runs = sorted((folder / "wandb").glob("offline-run-*"))
    # one W&B run, resumed once; its id is in each folder's file name (a resume within the same second as the
    # first launch gets the folder name with "-1" after the id)
    ids = {f.stem.removeprefix("run-") for r in runs for f in r.glob("run-*.wandb")}
    assert len(runs) == 2 and len(ids) == 1, runs
    logged: dict[str, list[float]] = {}
    for run_dir in runs:
        raw = rlvitals.load(run_dir)[0].raw
        for tag in (c for c in raw.columns if c.startswith("rlvitals/") and c != STEP_KEY):
            logged.setdefault(tag, []).extend(raw.select(STEP_KEY, tag).drop_nulls()[STEP_KEY].to_list())
    assert logged["rlvitals/verdict"] == [60.0, 120.0, 160.0]
    assert logged["rlvitals/group/zero_std/share"] == [float(s) for s in range(1, 161, 10)]
    assert logged["rlvitals/findings/entropy_collapse"] == [60.0, 120.0, 160.0]
    for tag, steps in logged.items():
        assert steps == sorted(set(steps)), tag  # nothing logged twice across the restart
    tables = sorted(p for r in runs for p in (r / "files" / "media" / "table").rglob("findings*.table.json"))
    assert tables and all(orjson.loads(t.read_bytes())["columns"] == TABLE_COLUMNS for t in tables)
    memo = orjson.loads((folder / "rlvitals-live.json").read_bytes())
    assert memo["run.jsonl"]["run_id"] == ids.pop()


def test_cli_export_wandb_options_are_checked_before_the_watch_starts(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    _grow(tmp_path, log, 10, 0)
    cases = {("--wandb-run-id", "abc"): "rlvitals: --wandb-run-id abc: names the W&B run --export-wandb logs into; "
                                        "give --export-wandb DIR too\n",
             ("--export-wandb", str(log)): f"rlvitals: --export-wandb {log}: is a file, expected a folder for the "
                                           "W&B run files\n"}
    for flags, said in cases.items():
        err = io.StringIO()
        assert main(["watch", str(log), "--once", "--state", str(tmp_path / "s.sqlite"), *flags],
                    io.StringIO(), err) == 2
        assert err.getvalue() == said

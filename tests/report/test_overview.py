"""The report's time axis (overview.clock): a tracker's wall clock when the run has one, the summed step
timings otherwise, on runs written by the real TensorBoard writer; and the caption that names it."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pytest

import rlvitals
from rlvitals.catalog.views import load_views
from rlvitals.diagnosis import diagnose
from rlvitals.ingest import Record, SourceMeta
from rlvitals.report import build_page
from rlvitals.report.html import render_html
from rlvitals.report.overview import clock
from rlvitals.run.builder import RunBuilder
from rlvitals.synthetic.scenarios import run_from_series

tbx = pytest.importorskip("tensorboardX")
VIEWS = load_views()
T0 = 1_700_000_000.0


def _tb_run(folder: Path, steps: int = 12) -> rlvitals.Run:
    """A veRL-like TensorBoard run whose steps take 10 s by its step timer, and whose validation at step 6
    took another 300 s by the wall clock."""
    w = tbx.SummaryWriter(str(folder))
    wall = T0
    for step in range(1, steps + 1):
        wall += 10.0 + (300.0 if step == 7 else 0.0)  # the validation after step 6 delays step 7
        w.add_scalar("actor/entropy", 1 / step, step, walltime=wall)
        w.add_scalar("timing_s/step", 10.0, step, walltime=wall)
    w.close()
    [run] = rlvitals.load(folder)
    return run


def test_the_wall_clock_wins_and_counts_validation_time(tmp_path: Path) -> None:
    run = _tb_run(tmp_path)
    got = clock(run, VIEWS)
    assert got is not None and got["source"] == "wall" and got["key"] == "TensorBoard wall_time"
    assert run.wall is not None and run.wall.started is not None and run.wall.started > T0 + 1000
    assert got["start"] == T0 + 10.0  # the writer was opened now, after these times: the first step starts it
    assert got["steps"] == list(range(1, 13))
    assert got["seconds"] == [10.0 * i + (300.0 if i >= 6 else 0.0) for i in range(12)]
    summed = clock(run_from_series({"timing_s/step": [10.0] * 12}), VIEWS)
    assert summed is not None and summed["seconds"][-1] == 120.0  # the step timer alone misses the 300 s


def test_the_start_the_source_gives_is_where_seconds_count_from() -> None:
    builder = RunBuilder(SourceMeta(format="wandb-offline", clock="W&B _timestamp", started=T0))
    for step in range(1, 4):
        builder.add(Record(step, {"actor/entropy": 0.5}, f"r#{step}", wall=T0 + 30.0 * step))
    got = clock(builder.finish("r"), VIEWS)
    assert got is not None and (got["source"], got["start"]) == ("wall", T0)
    assert got["seconds"] == [30.0, 60.0, 90.0]
    assert [got["start"] + s for s in got["seconds"]] == [T0 + 30.0 * s for s in range(1, 4)]


def test_a_clock_from_the_runs_own_start_has_no_absolute_start() -> None:
    builder = RunBuilder(SourceMeta(format="jsonl", clock="W&B _runtime", clock_epoch=False))
    for step in range(1, 4):
        builder.add(Record(step, {"loss": 0.5}, f"r:{step}", wall=5.0 * step))
    got = clock(builder.finish("r"), VIEWS)
    assert got is not None and (got["source"], got["key"], got["start"]) == ("wall", "W&B _runtime", None)
    assert got["seconds"] == [5.0, 10.0, 15.0]


def test_without_two_timed_steps_the_step_timings_are_summed() -> None:
    builder = RunBuilder(SourceMeta(format="tensorboard", clock="TensorBoard wall_time"))
    builder.add(Record(1, {"timing_s/step": 2.0}, "e#1", wall=T0))
    builder.add(Record(2, {"timing_s/step": 3.0}, "e#2"))
    got = clock(builder.finish("e"), VIEWS)
    assert got == {"source": "timing_s/step", "key": "timing_s/step", "start": None, "steps": [1, 2],
                   "seconds": [2.0, 5.0]}
    assert clock(run_from_series({"actor/entropy": [0.5, 0.4]}), VIEWS) is None


def test_a_long_wall_clock_is_cut_to_knots_keeping_both_ends(tmp_path: Path) -> None:
    run = _tb_run(tmp_path, steps=50)
    got = clock(run, VIEWS, knots=7)
    assert got is not None and len(got["steps"]) == 7 and got["steps"][0] == 1 and got["steps"][-1] == 50
    steps, seconds = run.wall_times
    assert np.allclose(got["seconds"], (seconds - seconds[0])[np.isin(steps, got["steps"])])


def test_the_caption_names_the_clock(tmp_path: Path) -> None:
    """The page's caption under the first screen says which clock, in both languages, and names its field."""
    run = _tb_run(tmp_path)
    page = build_page([run], [diagnose(run)])
    assert page["clocks"]["r0"]["source"] == "wall"
    text = html.unescape(render_html(page))
    caption = text[text.index("Elapsed time:"):]
    caption = caption[:caption.index("</p>")]
    assert "the log's own timestamps where it has them" in caption and "日志自带时间戳的" in caption
    assert caption.endswith("<code>TensorBoard wall_time</code>")

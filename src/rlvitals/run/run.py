"""The Run: one training run as steps × canonical metrics, with everything needed to trust it.

Data flows one way: readers yield :class:`~rlvitals.ingest.Record`s into a
:class:`~rlvitals.run.builder.RunBuilder`, which keeps raw columns; its ``finish`` detects the
framework, version era and algorithm, maps raw keys to canonical keys through the catalog and
returns an immutable :class:`Run`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from ..catalog.aliases import Context, KeyResolver, Resolved
from ..catalog.catalog import load_catalog
from ..ingest.record import Crash, SkipLog
from ..words import Words, in_lang


@dataclass(frozen=True)
class WallClock:
    """The tracker's own clock over a run's steps: when each step was logged, validation and
    checkpointing included, not a metric (it is in no frame).

    ``seconds`` is aligned with :attr:`Run.steps` (one float per step; NaN at a step the source gave
    no time); they are seconds since the Unix epoch when ``epoch`` (TensorBoard's ``wall_time``,
    W&B's ``_timestamp``, MLflow's timestamps), else seconds since the run started (W&B's
    ``_runtime``). ``source`` names the field (``TensorBoard wall_time``); ``started`` is when the run
    started (epoch seconds) when the source says it.
    """

    seconds: np.ndarray
    source: str
    epoch: bool = True
    started: float | None = None

    def at(self, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, seconds)`` at the steps of ``steps`` (a run's step axis, as ``seconds`` is
        aligned with) that have a time."""
        known = np.isfinite(self.seconds)
        return steps[known], self.seconds[known]


@dataclass
class Run:
    """One run. ``frame`` has a ``step`` column and one Float64 column per canonical key;
    ``raw`` has the same rows with the keys exactly as logged."""

    path: str
    format: str
    framework: str
    framework_era: str | None
    algorithm: str
    family: str
    algorithm_label: str
    frame: pl.DataFrame
    raw: pl.DataFrame
    key_map: dict[str, Resolved]
    unmapped: list[str]
    train_mask: np.ndarray
    validation: dict[str, pl.DataFrame]
    summary: dict[str, object]
    config: dict[str, object]
    text: dict[str, dict[int, str]]
    notes: list[str]
    skipped: SkipLog
    files: list[str]
    bytes_read: int
    #: how many steps at the start of the run this copy leaves out (:meth:`tail`); 0 for a whole run
    cut: int = 0
    #: the exception the log ends in when the run died (with the last step logged before it)
    crash: Crash | None = None
    #: whether the reader looked for a crash (a console log can show one; a trainer_state.json cannot)
    crash_scanned: bool = False
    #: the step the source says the run reached beyond its last record (a trainer_state's global_step)
    reached: int | None = None
    #: the tracker's wall clock at each step (TensorBoard, W&B, MLflow); None when the log has none
    wall: WallClock | None = None
    #: the steps are the reader's estimate that a longer reading of the log may change (SourceMeta.estimated_steps)
    estimated_steps: bool = False
    #: the algorithm was given by the user (``--algorithm``, ``load(algorithm=...)``), not detected from the keys
    algorithm_given: bool = False

    @property
    def steps(self) -> np.ndarray:
        """Every step on the axis (training and evaluation-only)."""
        steps: np.ndarray = self.frame["step"].to_numpy()
        return steps

    @property
    def train_steps(self) -> np.ndarray:
        """Steps that carry at least one training metric."""
        steps: np.ndarray = self.steps[self.train_mask]
        return steps

    @property
    def last_step(self) -> int | None:
        """The last training step the run reached: its last training record, or the step its source
        says it got to when that is later (a trainer_state.json's ``global_step``); None when the
        run logged no training step.

        Example:
            >>> from rlvitals.ingest import Record, SourceMeta
            >>> from rlvitals.run.builder import RunBuilder
            >>> builder = RunBuilder(SourceMeta(format="trl-state", reached=12))
            >>> builder.add(Record(10, {"loss": 0.5}, "trainer_state.json#record 1"))
            >>> builder.finish("trainer_state.json").last_step
            12
        """
        train = self.train_steps
        last = int(train[-1]) if len(train) else None
        if self.reached is not None and (last is None or self.reached > last):
            return self.reached
        return last

    @property
    def metrics(self) -> list[str]:
        return [c for c in self.frame.columns if c != "step"]

    def __repr__(self) -> str:
        """``<Run 'train.log': verl-console, verl GRPO, 300 steps (1–300), 48 metrics>``"""
        steps = self.train_steps
        span = f"{len(steps)} steps ({int(steps[0])}–{int(steps[-1])})" if len(steps) else "no training step"
        return (f"<Run {self.path!r}: {self.format}, {self.framework} {self.algorithm_label}, {span}, "
                f"{len(self.metrics)} metrics>")

    def _repr_html_(self) -> str:
        """What a notebook shows for a Run: a small table of what was read."""
        steps = self.train_steps
        era = f" ({self.framework_era})" if self.framework_era else ""
        rows = [("run", self.path), ("format", self.format), ("framework", f"{self.framework}{era}"),
                ("algorithm", self.algorithm_label),
                ("training steps", f"{len(steps)} ({int(steps[0])}–{int(steps[-1])})" if len(steps) else "none"),
                ("metrics", f"{len(self.metrics)} canonical, {len(self.unmapped)} not in the catalog"),
                ("skipped records", str(self.skipped.count)), ("notes", str(len(self.notes)))]
        cells = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                        for k, v in rows)
        return f"<table>{cells}</table>"

    def canonical(self, key: str) -> str:
        """The canonical key this run logged ``key`` as: a canonical key, a raw key of this run, or any
        alias the catalog knows (``entropy``, ``actor/entropy_loss``, ``policy/entropy_avg``).

        Example:
            >>> from rlvitals.ingest import Record, SourceMeta
            >>> from rlvitals.run.builder import RunBuilder
            >>> builder = RunBuilder(SourceMeta(format="jsonl", framework="verl"))
            >>> builder.add(Record(1, {"actor/entropy": 0.5}, "run.jsonl:1"))
            >>> builder.finish("run.jsonl").canonical("entropy")
            'actor/entropy'
        """
        if key in self.frame.columns and key != "step":
            return key
        if key in self.key_map:
            return self.key_map[key].canonical
        found = KeyResolver(load_catalog()).resolve(key, Context(self.framework if self.framework != "unknown"
                                                                 else None, self.algorithm, self.family))
        if found is not None and found.canonical in self.frame.columns:
            return found.canonical
        known = f" (the catalog reads it as {found.canonical!r})" if found is not None else ""
        raise KeyError(f"{key!r}: this run did not log it{known}; it logged {len(self.metrics)} metrics: "
                       f"{', '.join(self.metrics[:8])}{', …' if len(self.metrics) > 8 else ''}")

    def series(self, key: str, *, train_only: bool = True, finite: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` of one metric (a canonical key or any alias: :meth:`canonical`) at the
        steps where it was logged.

        A logged ``nan``/``inf`` is kept (it is evidence) unless ``finite`` is set; steps
        where the key was not logged at all are dropped. When the steps kept are one stretch of the axis
        (none dropped, or only some at its start or end: a validation before the first training step)
        the arrays are the frame's own memory (read-only), not copies: a check reading every series of a
        long run holds no second copy of it.
        """
        col = self.frame[self.canonical(key)]
        nulls = col.null_count()
        values = col.fill_null(np.nan).to_numpy() if nulls else col.to_numpy()
        keep = ~col.is_null().to_numpy() if nulls else None
        if train_only and not self.train_mask.all():
            keep = self.train_mask if keep is None else keep & self.train_mask
        if finite:
            bad = ~np.isfinite(values)
            if bad.any():
                keep = ~bad if keep is None else keep & ~bad
        if keep is None:
            values.flags.writeable = False
            return self.steps, values
        first = int(np.argmax(keep))
        last = len(keep) - int(np.argmax(keep[::-1]))
        if not keep[first:last].all():  # steps dropped inside the stretch (or none kept)
            return self.steps[keep], values[keep]
        # the stretch holds no null: polars gives its values without a copy
        steps, values = self.steps[first:last], col.slice(first, last - first).to_numpy()
        steps.flags.writeable = values.flags.writeable = False
        return steps, values

    def tail(self, n: int) -> Run:
        """The last ``n`` steps of the axis (training and evaluation-only), with their real step
        numbers, everything the run knows about itself (framework, key map, config) and ``cut`` set
        to the number of steps left out; the run itself when it has no more than ``n``.

        Example:
            >>> from rlvitals.ingest import Record, SourceMeta
            >>> from rlvitals.run.builder import RunBuilder
            >>> builder = RunBuilder(SourceMeta(format="jsonl"))
            >>> for step in range(1, 11):
            ...     builder.add(Record(step, {"actor/entropy": 1.0 / step}, f"run.jsonl:{step}"))
            >>> last = builder.finish("run.jsonl").tail(3)
            >>> last.steps.tolist(), last.cut
            ([8, 9, 10], 7)
        """
        total = self.frame.height
        if n >= total:
            return self
        drop = total - max(n, 0)
        frame, raw = self.frame.slice(drop), self.raw.slice(drop)
        first = int(frame["step"][0]) if frame.height else 0
        return replace(self, frame=frame, raw=raw, train_mask=self.train_mask[drop:],
                       validation={k: v.filter(pl.col("step") >= first) for k, v in self.validation.items()},
                       text={k: {s: x for s, x in v.items() if s >= first} for k, v in self.text.items()},
                       cut=self.cut + drop,
                       wall=None if self.wall is None else replace(self.wall, seconds=self.wall.seconds[drop:]))

    @property
    def wall_times(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(steps, seconds)`` of the steps the tracker's clock timed (see :class:`WallClock`); None
        when the run has no clock.

        Example:
            >>> from rlvitals.ingest import Record, SourceMeta
            >>> from rlvitals.run.builder import RunBuilder
            >>> builder = RunBuilder(SourceMeta(format="tensorboard", clock="TensorBoard wall_time"))
            >>> builder.add(Record(1, {"loss": 0.5}, "events#record 2", wall=1700000010.0))
            >>> builder.add(Record(2, {"loss": 0.4}, "events#record 3"))
            >>> steps, seconds = builder.finish("events").wall_times
            >>> steps.tolist(), seconds.tolist()
            ([1], [1700000010.0])
        """
        return None if self.wall is None else self.wall.at(self.steps)

    def raw_keys_for(self, canonical: str) -> list[str]:
        return [raw for raw, res in self.key_map.items() if res.canonical == canonical]

    def with_series(self, derived: pl.DataFrame, origin: str = "rollouts") -> Run:
        """A copy of this run with per-step series computed elsewhere (``derived`` has a ``step``
        column and canonical keys) joined onto its step axis. A key the run already logged keeps
        the logged values; the derived values fill only the steps it did not log."""
        catalog = load_catalog()
        keys = [c for c in derived.columns if c != "step"]
        unknown = [k for k in keys if catalog.find(k) is None]
        if unknown:
            raise ValueError(f"derived series {unknown} are not catalog keys")
        extra = derived.select(["step", *keys]).with_columns(pl.col("step").cast(pl.Int64))
        joined = self.frame.join(extra, on="step", how="full", coalesce=True, suffix="__derived")
        for key in keys:
            if f"{key}__derived" in joined.columns:
                joined = joined.with_columns(pl.coalesce(key, f"{key}__derived").alias(key)).drop(f"{key}__derived")
        joined = joined.sort("step")
        new_steps = joined["step"].to_numpy()
        old = dict(zip(self.steps.tolist(), self.train_mask.tolist(), strict=True))
        derived_steps = set(extra["step"].to_list())
        train_mask = np.array([old.get(s, s in derived_steps) for s in new_steps.tolist()], dtype=bool)
        raw = self.raw.join(pl.DataFrame({"step": new_steps}), on="step", how="right").select(self.raw.columns)
        where = "rollout 样本" if origin == "rollouts" else f"{in_lang(origin, 'zh')} "
        notes = [*self.notes, Words(f"{len(keys)} series derived from {origin} joined on {len(derived_steps)} steps",
                                    f"由 {where}推导出的 {len(keys)} 个序列已并入，共 {len(derived_steps)} 步")]
        return replace(self, frame=joined.select(["step", *sorted(c for c in joined.columns if c != "step")]),
                       raw=raw, train_mask=train_mask, notes=notes, wall=_wall_on(self.wall, self.steps, new_steps))


def _wall_on(wall: WallClock | None, steps: np.ndarray, new_steps: np.ndarray) -> WallClock | None:
    """``wall`` (aligned with ``steps``, sorted) on the step axis ``new_steps``: NaN at a new step."""
    if wall is None:
        return None
    seconds = np.full(len(new_steps), np.nan)
    at = np.searchsorted(steps, new_steps)
    found = at < len(steps)
    found[found] = steps[at[found]] == new_steps[found]
    seconds[found] = wall.seconds[at[found]]
    return replace(wall, seconds=seconds)

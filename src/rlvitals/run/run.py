"""The Run: one training run as steps × canonical metrics, with everything needed to trust it.

Data flows one way: readers yield :class:`~rlvitals.ingest.Record`s into a
:class:`RunBuilder`, which keeps raw columns; :meth:`RunBuilder.finish` detects the
framework, version era and algorithm, maps raw keys to canonical keys through the
catalog and returns an immutable :class:`Run`.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from ..catalog.aliases import Context, KeyResolver, Resolved
from ..catalog.catalog import Catalog, load_catalog
from ..ingest.record import Crash, Record, RecordCheck, SkipLog, SourceMeta
from .detect import detect

_EVALISH = ("eval", "val", "test")


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
    summary: dict[str, Any]
    config: dict[str, Any]
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

    def series(self, key: str, *, train_only: bool = True, finite: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` of one canonical key at the steps where it was logged.

        A logged ``nan``/``inf`` is kept (it is evidence) unless ``finite`` is set; steps
        where the key was not logged at all are dropped.
        """
        col = self.frame[key]
        keep = ~col.is_null().to_numpy()
        values = col.fill_null(np.nan).to_numpy()
        if train_only:
            keep &= self.train_mask
        if finite:
            keep &= np.isfinite(values)
        return self.steps[keep], values[keep]

    def tail(self, n: int) -> Run:
        """The last ``n`` steps of the axis (training and evaluation-only), with their real step
        numbers, everything the run knows about itself (framework, key map, config) and ``cut`` set
        to the number of steps left out; the run itself when it has no more than ``n``.

        Example:
            >>> from rlvitals.ingest import Record, SourceMeta
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
                       cut=self.cut + drop)

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
        notes = [*self.notes, f"{len(keys)} series derived from {origin} joined on {len(derived_steps)} steps"]
        return replace(self, frame=joined.select(["step", *sorted(c for c in joined.columns if c != "step")]),
                       raw=raw, train_mask=train_mask, notes=notes)


@dataclass
class RunBuilder:
    """Collects records as raw columns with bounded overhead (two typed arrays per key)."""

    meta: SourceMeta
    skipped: SkipLog = field(default_factory=SkipLog)
    _row: dict[int, int] = field(default_factory=dict)
    _cols: dict[str, tuple[array[int], array[float]]] = field(default_factory=dict)
    _text: dict[str, dict[int, str]] = field(default_factory=lambda: defaultdict(dict))
    _summary: dict[str, Any] = field(default_factory=dict)
    _records: int = 0
    _check: RecordCheck = field(default_factory=RecordCheck)

    def add(self, record: Record) -> None:
        """Add one record; a record that cannot join a run (:class:`RecordCheck`) is a counted skip."""
        if record.kind == "summary":
            self._summary.update(record.values)
            return
        problem = self._check.problem(record)
        if problem is not None:
            self.skipped.skip(record.where, problem)
            return
        self._records += 1
        row = self._row.get(record.step)
        if row is None:
            row = self._row[record.step] = len(self._row)
        cols = self._cols
        for key, value in record.values.items():
            if isinstance(value, str):
                self._text[key][record.step] = value
                continue
            col = cols.get(key)
            if col is None:
                col = cols[key] = (array("q"), array("d"))
            col[0].append(row)
            col[1].append(value)

    def add_row(self, step: int, names: Sequence[str], numbers: Sequence[float],
                text: Mapping[str, str] | None = None, summary: bool = False) -> None:
        """What :meth:`add` does, for a record given as its numeric keys and values apart (the
        compact form a watcher keeps, without a dict per record) and its text values."""
        if summary:
            self._summary.update(zip(names, numbers, strict=True))
            self._summary.update(text or {})
            return
        self._records += 1
        row = self._row.get(step)
        if row is None:
            row = self._row[step] = len(self._row)
        cols = self._cols
        for key, value in zip(names, numbers, strict=True):
            col = cols.get(key)
            if col is None:
                col = cols[key] = (array("q"), array("d"))
            col[0].append(row)
            col[1].append(value)
        for name, word in (text or {}).items():
            self._text[name][step] = word

    @property
    def records(self) -> int:
        return self._records

    @property
    def is_empty(self) -> bool:
        """Nothing added yet: no step records and no end-of-training summary."""
        return self._records == 0 and not self._summary

    def finish(self, path: str, catalog: Catalog | None = None,
               resolver: KeyResolver | None = None, last: int | None = None) -> Run:
        """The Run of the records added so far; with ``last``, only its last ``last`` steps, as
        ``finish(path).tail(last)`` would give them but without building the steps left out (a
        watcher reading the end of a long run often)."""
        catalog = catalog or load_catalog()
        resolver = resolver or KeyResolver(catalog)
        steps_unsorted = np.fromiter(self._row.keys(), dtype=np.int64, count=len(self._row))
        order = np.argsort(steps_unsorted, kind="stable")
        rows_all = len(steps_unsorted)
        cut = 0
        if last is not None and last < rows_all:
            cut = rows_all - max(last, 0)
            order = order[cut:]
        n = len(order)
        notes = list(self.meta.notes)

        raw_arrays: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        duplicates = 0
        for key, (rows, vals) in self._cols.items():
            rows_np = np.frombuffer(rows, dtype=np.int64) if len(rows) else np.empty(0, np.int64)
            vals_np = np.frombuffer(vals, dtype=np.float64) if len(vals) else np.empty(0)
            arr = np.full(rows_all, np.nan)
            arr[rows_np] = vals_np  # a step logged twice keeps its later value
            mask = np.zeros(rows_all, dtype=bool)
            mask[rows_np] = True
            if len(rows_np) != int(mask.sum()):
                duplicates += _changed_duplicates(rows_np, vals_np, arr)
            raw_arrays[key] = arr[order]
            present[key] = mask[order]
        steps = steps_unsorted[order]
        if duplicates:
            notes.append(f"{duplicates} values were logged twice for the same step with different values "
                         "(a resumed run?); the later value was kept")

        detection = detect(list(raw_arrays) + list(self._text), self.meta.config,
                           self.meta.framework, catalog, resolver, raw_arrays)
        ctx = Context(detection.framework if detection.framework != "unknown" else None,
                      detection.algorithm, detection.family,
                      detection.version_low, detection.version_high)
        key_map, unmapped = _map_keys(list(raw_arrays), resolver, ctx, notes)
        canonical = _canonical_columns(raw_arrays, present, key_map)
        train_mask = _train_mask(n, present, key_map, unmapped)

        frame = _frame(steps, canonical)
        raw = _frame(steps, {k: (raw_arrays[k], present[k]) for k in raw_arrays})
        return Run(
            path=path,
            format=self.meta.format,
            framework=detection.framework,
            framework_era=detection.era,
            algorithm=detection.algorithm,
            family=detection.family,
            algorithm_label=detection.label,
            frame=frame,
            raw=raw,
            key_map=key_map,
            unmapped=sorted(unmapped),
            train_mask=train_mask,
            validation=_validation(frame, key_map),
            summary=dict(self._summary),
            config=dict(self.meta.config),
            text=_text_from(self._text, int(steps[0]) if cut and n else None),
            notes=notes,
            skipped=self.skipped,
            files=list(self.meta.files),
            bytes_read=self.meta.bytes_read,
            cut=cut,
            crash=_crash_at(self.meta.crash, steps[train_mask]),
            crash_scanned=self.meta.crash_scanned,
            reached=self.meta.reached,
        )


def _crash_at(crash: Crash | None, train_steps: np.ndarray) -> Crash | None:
    """The crash with the last training step logged before it."""
    if crash is None or crash.last_step is not None or not len(train_steps):
        return crash
    return replace(crash, last_step=int(train_steps.max()))


def _text_from(text: dict[str, dict[int, str]], first: int | None) -> dict[str, dict[int, str]]:
    """A copy of the text values, only those at ``first`` and later when it is given."""
    if first is None:
        return {k: dict(v) for k, v in text.items()}
    return {k: {s: x for s, x in v.items() if s >= first} for k, v in text.items()}


def _changed_duplicates(rows: np.ndarray, vals: np.ndarray, final: np.ndarray) -> int:
    """How many logged values were overwritten by a different value at the same step."""
    kept = final[rows]
    differs = ~((vals == kept) | (np.isnan(vals) & np.isnan(kept)))
    return int(differs.sum())


def _map_keys(keys: list[str], resolver: KeyResolver, ctx: Context,
              notes: list[str]) -> tuple[dict[str, Resolved], list[str]]:
    key_map: dict[str, Resolved] = {}
    unmapped: list[str] = []
    for key in keys:
        hit = resolver.resolve(key, ctx, notes)
        if hit is None:
            unmapped.append(key)
        else:
            key_map[key] = hit
    return key_map, unmapped


def _frame(steps: np.ndarray, columns: dict[str, tuple[np.ndarray, np.ndarray]]) -> pl.DataFrame:
    """A frame where a key not logged at a step is null and a logged NaN stays NaN."""
    series = [pl.Series("step", steps)]
    for name, (values, mask) in columns.items():
        if name == "step":  # a log that also wrote its step as a metric keeps it, renamed
            name = "step (logged)"
        series.append(pl.Series(name, np.ma.masked_array(values, mask=~mask), nan_to_null=False))
    return pl.DataFrame(series)


def _canonical_columns(raw: dict[str, np.ndarray], present: dict[str, np.ndarray],
                       key_map: dict[str, Resolved]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One column per canonical key; several raw keys for one canonical key are coalesced
    in the order a literal name beats a pattern beats a mangled name."""
    by_canonical: dict[str, list[Resolved]] = defaultdict(list)
    for res in key_map.values():
        by_canonical[res.canonical].append(res)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for canonical in sorted(by_canonical):
        sources = sorted(by_canonical[canonical], key=lambda r: (":" in r.via, r.via != "exact", r.raw))
        first = sources[0]
        col = raw[first.raw] * first.scale
        mask = present[first.raw].copy()
        for res in sources[1:]:
            fill = present[res.raw] & ~mask
            if fill.any():
                col[fill] = raw[res.raw][fill] * res.scale
                mask |= fill
        out[canonical] = (col, mask)
    return out


def _train_mask(n: int, present: dict[str, np.ndarray], key_map: dict[str, Resolved],
                unmapped: list[str]) -> np.ndarray:
    # a key the catalog does not know still shows that a training step happened, unless its
    # name says evaluation
    evidence = [k for k, r in key_map.items() if r.split == "train" and r.metric.kind == "train"]
    evidence += [k for k in unmapped if not k.lower().startswith(_EVALISH)]
    mask = np.zeros(n, dtype=bool)
    for key in evidence:
        mask |= present[key]
    return mask


def _validation(frame: pl.DataFrame, key_map: dict[str, Resolved]) -> dict[str, pl.DataFrame]:
    """Validation series grouped by data source: ``{source: frame(step, '<var>/<stat>'...)}``."""
    groups: dict[str, dict[str, str]] = defaultdict(dict)
    for res in key_map.values():
        metric = res.metric
        if metric.regex is not None and metric.kind == "eval":
            hit = metric.regex.fullmatch(res.canonical)
            if hit and "source" in hit.groupdict():
                parts = hit.groupdict()
                label = "/".join(v for k, v in parts.items() if k != "source" and v)
                groups[parts["source"]][label or res.canonical] = res.canonical
                continue
        if res.split == "eval" or metric.kind == "eval":
            groups["eval"][res.canonical.removeprefix("eval/")] = res.canonical
    out: dict[str, pl.DataFrame] = {}
    for source, cols in sorted(groups.items()):
        sub = frame.select(["step", *[pl.col(c).alias(label) for label, c in sorted(cols.items())]])
        keep = sub.select(pl.any_horizontal([pl.col(lbl).is_not_null() for lbl in cols])).to_series()
        out[source] = sub.filter(keep)
    return out


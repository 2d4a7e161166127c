"""What an export writes: a pure choice of series and findings, shared by every writer.

The writers (TensorBoard event files, W&B, Trackio and SwanLab runs, and the live exporters of ``watch``)
only encode an :class:`ExportPlan`; what goes in it is decided here, once:

- **series**: the run's curves, each under ``rlvitals/<key>`` so it sits beside the user's own tags
  without clashing: the derived per-step series (rollout metrics joined with ``Run.with_series``) and
  the metrics the run logged, each under its canonical name (``actor/entropy`` whether the log said
  ``actor/entropy`` or ``policy/entropy_avg``). By default every canonical metric the run logged;
  ``metrics`` narrows the logged ones to those named, and an empty ``metrics`` (with no ``derived``)
  writes the findings only. Keys the catalog does not know are not written (they have no canonical
  name, and a key an earlier export wrote, ``rlvitals/...``, must not come back as
  ``rlvitals/rlvitals/...``); :attr:`ExportPlan.unmapped` lists them.
- **NaN**: a step where a key was not logged at all is left out; a logged ``nan``/``inf`` is
  written as is (it is evidence: the ``nan_inf`` check fails on it, and both TensorBoard and
  W&B store and show it). A series that holds no finite value at any step is not written
  (a chart of nothing) and is listed in :attr:`ExportPlan.dropped` with the reason.
- **findings**: every finding that is not ``skipped`` (a skipped check says the run did not
  log what it needs; ``rlvitals diagnose --all`` lists them), as a status value
  (:data:`STATUS_VALUE`: 0 ok, 0.5 note, 1 warn, 2 fail) at its onset step, or at the run's last
  step when it has none, plus its words in one language and the steps of its point events.
  A note ("could be better") sits between ok and warn, so a chart of a status still rises
  with its severity and a note never reads as a warning. What ``diagnose`` calls findings are the
  fail, warn and note ones (:data:`FINDING_STATUSES`); the ok ones are the checks that passed, written
  too (a 0 on the chart says the check ran), and :func:`tally` counts the two apart.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ..checks import FINDING_STATUSES
from ..diagnosis import Diagnosis, Finding
from ..errors import RlvitalsError, UnknownMetricError
from ..run.run import Run
from ..words import Words, in_lang

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")
PREFIX = "rlvitals/"
#: a finding's status as a number, so it can be charted (skipped findings are not exported); a note is
#: 0.5, below a warning: an efficiency advisory charted beside the verdict never looks like one
STATUS_VALUE = {"ok": 0.0, "note": 0.5, "warn": 1.0, "fail": 2.0}


@dataclass(frozen=True)
class Series:
    """One per-step series to write: ``values[i]`` was logged (or derived) at ``steps[i]``."""

    tag: str
    key: str
    origin: Literal["derived", "logged"]
    steps: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class FindingRow:
    """One finding, flattened to the words of one language. ``name`` is unique within a plan:
    the check id, followed by its first metric when the check reported several findings."""

    name: str
    check: str
    layer: str
    status: str
    step: int
    onset_step: int | None
    span: tuple[int, int] | None
    metrics: tuple[str, ...]
    title: str
    message: str
    advice: str
    #: the steps of point events (spikes), each its own step; empty for a finding about a stretch
    points: tuple[int, ...] = ()

    @property
    def tag(self) -> str:
        return f"{PREFIX}findings/{self.name}"


@dataclass(frozen=True)
class ExportPlan:
    """Everything one export writes for one run."""

    run_path: str
    lang: Lang
    verdict: str
    last_step: int
    series: tuple[Series, ...]
    findings: tuple[FindingRow, ...]
    dropped: tuple[str, ...] = ()
    #: the keys the run logged that the catalog does not know (not written), when every metric was asked for
    unmapped: tuple[str, ...] = ()

    @property
    def steps(self) -> list[int]:
        """Every step that carries a value (a series point or a finding), ascending."""
        found = {self.last_step, *(f.step for f in self.findings)}
        for s in self.series:
            found.update(s.steps.tolist())
        return sorted(found)


@dataclass(frozen=True)
class Tally:
    """What one export wrote: the series that got at least one point (``logged`` ones and ``derived``
    ones), their points, and the finding statuses written, by status (``ok`` for the checks that passed).

    >>> Tally(logged=2, derived=1, points=30, statuses={"warn": 1, "note": 1, "ok": 5}).findings
    2
    """

    logged: int
    derived: int
    points: int
    statuses: Mapping[str, int]

    @property
    def series(self) -> int:
        return self.logged + self.derived

    @property
    def findings(self) -> int:
        """The findings as ``diagnose`` counts them: fail, warn and note."""
        return sum(self.statuses.get(s, 0) for s in FINDING_STATUSES)

    @property
    def passed(self) -> int:
        return self.statuses.get("ok", 0)


def tally(plan: ExportPlan, after: int | None = None) -> Tally:
    """What writing ``plan`` writes when the steps up to ``after`` are left out (those a Trackio or
    SwanLab run held already); everything when ``after`` is None.

    >>> tally(ExportPlan("run.log", "en", "ok", 3, (), ())).points
    0
    """
    def new(steps: np.ndarray) -> int:
        return len(steps) if after is None else int(np.count_nonzero(steps > after))

    counts = {"logged": 0, "derived": 0}
    points = 0
    for s in plan.series:
        n = new(s.steps)
        points += n
        counts[s.origin] += n > 0
    statuses = Counter(f.status for f in plan.findings if after is None or f.step > after)
    return Tally(counts["logged"], counts["derived"], points, dict(statuses))


#: what each kind of export folder holds, for the error that names a file given as one
TENSORBOARD_FOLDER = Words("(the run's TensorBoard log folder, or a new one)",
                           "这次运行的 TensorBoard 日志文件夹，或一个新文件夹")
WANDB_FOLDER = Words("for the W&B run files", "用来存放 W&B run 的文件")


def expect_folder(path: Path, flag: str, holds: str, hint: str = "") -> None:
    """Raise when ``path`` (given as ``flag``) is a file where a writer needs a folder that ``holds``.

    >>> expect_folder(Path("/"), "--tensorboard", TENSORBOARD_FOLDER)
    """
    if path.exists() and not path.is_dir():
        zh = f"{flag} {path}：这是一个文件，应为文件夹（{in_lang(holds, 'zh')}）{in_lang(hint, 'zh')}"
        raise RlvitalsError(Words(f"{flag} {path}: is a file, expected a folder {holds}{hint}", zh))


def resolve_metrics(run: Run, keys: Sequence[str]) -> list[str]:
    """The canonical keys of ``run`` that ``keys`` name (a canonical key, a key as the run logged it, or any
    alias of one).

    >>> from rlvitals.synthetic.simulate import simulate  # doctest: +SKIP
    >>> resolve_metrics(run, ["actor/entropy"])  # doctest: +SKIP
    ['actor/entropy']
    """
    out: list[str] = []
    for key in keys:
        try:  # a canonical key, a raw key of this run, or an alias read in the run's framework and algorithm
            canonical: str | None = run.canonical(key)
        except KeyError:
            canonical = None
        if canonical is None or canonical not in run.metrics:
            close = difflib.get_close_matches(key, run.metrics, n=3, cutoff=0.6)
            hint = Words(f"; similar keys it logged: {', '.join(close)}", f"；它记录的相近的键：{'、'.join(close)}"
                         ) if close else Words("", "")
            raise UnknownMetricError(Words(
                f"--metrics {key!r}: {run.path} logged no such metric{hint}; "
                "run 'rlvitals inspect RUN' to list the canonical keys a run logged",
                f"--metrics {key!r}：{run.path} 没有记录这个指标{hint.zh}；"
                "运行 'rlvitals inspect RUN' 可以列出一次运行记录的全部规范键名"))
        if canonical not in out:
            out.append(canonical)
    return out


def _series(run: Run, key: str, origin: Literal["derived", "logged"]) -> Series:
    steps, values = run.series(key, train_only=False)
    return Series(PREFIX + key, key, origin, steps.astype(np.int64), values.astype(np.float64))


def _names(findings: Sequence[Finding]) -> list[str]:
    """A unique, readable name per finding (a check may report one finding per metric)."""
    repeated = Counter(f.check for f in findings)
    names: list[str] = []
    for f in findings:
        name = f.check if repeated[f.check] == 1 or not f.metrics else f"{f.check}/{f.metrics[0]}"
        base, n = name, 1
        while name in names:
            n += 1
            name = f"{base}#{n}"
        names.append(name)
    return names


def _rows(findings: Sequence[Finding], lang: Lang, last_step: int) -> tuple[FindingRow, ...]:
    kept = [f for f in findings if f.status != "skipped"]
    return tuple(
        FindingRow(name, f.check, f.layer, f.status, f.onset_step if f.onset_step is not None else last_step,
                   f.onset_step, f.span, tuple(f.metrics), f.title.get(lang, ""), f.message.get(lang, ""),
                   f.advice.get(lang, ""), tuple(f.points))
        for name, f in zip(_names(kept), kept, strict=True))


def plan_export(diagnosis: Diagnosis, *, derived: Sequence[str] = (), metrics: Sequence[str] | None = None,
                lang: str = "en") -> ExportPlan:
    """The series and findings to export for one diagnosed run.

    ``derived`` are the keys joined onto the run with ``Run.with_series`` (the columns of
    ``analyze_rollouts(...).series()`` other than ``step``); ``metrics`` are the logged keys or
    aliases to write: None (the default) for every canonical metric the run logged, ``()`` for none
    (with no ``derived``, the plan holds the findings only). Values are taken from the run the diagnosis
    saw.

    Example:
        >>> plan = plan_export(diagnose(run.with_series(derived)), derived=["pass@4"])  # doctest: +SKIP
        >>> plan.series[0].tag, plan.series[0].steps[:3]  # doctest: +SKIP
        ('rlvitals/pass@4', array([1, 2, 3]))
        >>> [s.tag for s in plan_export(diagnose(run), metrics=["entropy"]).series]  # doctest: +SKIP
        ['rlvitals/actor/entropy']
    """
    if lang not in LANGS:
        raise RlvitalsError(Words(f"export language {lang!r}: expected one of {', '.join(LANGS)}",
                                  f"导出语言 {lang!r}：应为 {'、'.join(LANGS)} 之一"))
    run = diagnosis.run
    missing = [k for k in derived if k not in run.metrics]
    if missing:
        raise RlvitalsError(Words(f"derived series {missing} are not columns of {run.path}; join them first with "
                                  "run.with_series(analysis.series()) and diagnose that run",
                                  f"派生序列 {missing} 不是 {run.path} 的列；先用 run.with_series(analysis.series()) "
                                  "把它们并入，再诊断并入后的运行"))
    logged = run.metrics if metrics is None else resolve_metrics(run, metrics)
    chosen = [_series(run, k, "derived") for k in dict.fromkeys(derived)]
    chosen += [_series(run, k, "logged") for k in logged if k not in derived]
    kept = [s for s in chosen if np.isfinite(s.values).any()]
    dropped = tuple(Words(f"{s.tag}: no finite value at any of its {len(s.steps)} steps; not written",
                          f"{s.tag}：全部 {len(s.steps)} 步都没有有限值，没有写入")
                    for s in chosen if not np.isfinite(s.values).any())
    unmapped = tuple(k for k in run.unmapped if not k.startswith(PREFIX)) if metrics is None else ()
    last_step = int(run.steps.max()) if len(run.steps) else 0
    return ExportPlan(run.path, lang, diagnosis.verdict, last_step, tuple(kept),
                      _rows(diagnosis.findings, lang, last_step), dropped, unmapped)

"""Subcommands that write files for other tools: ``report`` (HTML) and ``export`` (TensorBoard, W&B)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..errors import RlvitalsError
from ..words import Words, in_lang
from ._common import EXIT_USAGE, error_line, lang_of, runs_for_output, said_line
from ._options import Commands, Group, add_algorithm, add_config, add_lang, add_one_run, add_rollout_options

if TYPE_CHECKING:
    from ..export import ExportPlan, Tally


def _report(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..diagnosis import diagnose
    from ..report import build_page, write_report
    from .progress import working

    loaded = runs_for_output(args, err)
    if loaded is None:
        return EXIT_USAGE
    runs, config, analyses, status = loaded
    lang = lang_of(args)
    if args.label is not None and len(args.label) != len(runs):
        err.write(said_line(Words(
            f"{len(runs)} run(s) were read but --label was given {len(args.label)} time(s); give --label once "
            "per run, in the order of the runs (a folder may hold several runs: rlvitals diagnose lists them)",
            f"读到了 {len(runs)} 次训练，但 --label 给了 {len(args.label)} 次；每次训练给一次 --label，按训练的顺序给出"
            "（一个文件夹里可能有几次训练：rlvitals diagnose 会列出它们）"), lang))
        return EXIT_USAGE
    name = Path(args.output).name
    try:  # the bar is gone before an error is said
        with working(err, Words(f"report {name}", f"报告 {name}"), lang=lang) as told:
            diagnoses = []
            for done, run in enumerate(runs):
                if told is not None:
                    told("diagnosing", done, len(runs))
                diagnoses.append(diagnose(run, config))
            page = build_page(runs, diagnoses, analyses, lang=args.lang, labels=args.label, progress=told)
            size = write_report(args.output, page, cdn=args.cdn, progress=told)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang))
        return EXIT_USAGE
    out.write(in_lang(Words(f"wrote {args.output}: {len(runs)} run(s), {size / 1e6:.1f} MB",
                            f"已写出 {args.output}：{len(runs)} 次训练，{size / 1e6:.1f} MB"), lang) + "\n")
    return status



def _export(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..diagnosis import diagnose
    from ..export import plan_export

    lang = lang_of(args)
    metrics = _metrics(args)
    if isinstance(metrics, Words):
        err.write(said_line(metrics, lang))
        return EXIT_USAGE
    loaded = runs_for_output(args, err)
    if loaded is None:
        return EXIT_USAGE
    runs, config, analyses, status = loaded
    if args.wandb_run_id and len(runs) > 1:
        err.write(said_line(Words(
            f"--wandb-run-id {args.wandb_run_id!r} names one W&B run, but {len(runs)} runs were given; export one "
            "run at a time when resuming",
            f"--wandb-run-id {args.wandb_run_id!r} 指的是一个 W&B run，但给了 {len(runs)} 次训练；续写已有的 run 时"
            "请一次导出一次训练"), lang))
        return EXIT_USAGE
    names: list[str] = []
    for run, analysis in zip(runs, analyses, strict=True):
        keys = [c for c in analysis.series().columns if c != "step"] if analysis is not None else []
        try:
            plan = plan_export(diagnose(run, config), derived=[] if args.findings_only else keys, metrics=metrics,
                               lang=args.lang)
            where, written = _written(plan, args, names, len(runs))
        except RlvitalsError as exc:
            err.write(error_line(exc, lang))
            status = EXIT_USAGE
            continue
        out.write(in_lang(_wrote(where, plan, written, args.findings_only), lang) + "\n")
        for line in plan.dropped:
            out.write(f"  {in_lang(line, lang)}\n")
        if plan.unmapped:
            out.write(f"  {in_lang(_unmapped(plan.unmapped), lang)}\n")
    return status


def _metrics(args: argparse.Namespace) -> list[str] | None | Words:
    """The logged metrics to write: None for all, [] for none (``--findings-only``); a refusal in words."""
    if args.findings_only:
        if args.metrics is not None:
            return Words("--findings-only writes no curve, but --metrics names some to write; drop one of the two",
                         "--findings-only 不写任何曲线，但 --metrics 指定了要写的曲线；请去掉其中一个")
        return []
    if args.metrics is None:
        return None
    metrics = [k.strip() for k in args.metrics.split(",") if k.strip()]
    if not metrics:
        return Words(f"--metrics {args.metrics!r} names no metric; give keys or aliases separated by commas "
                     "('rlvitals inspect RUN' lists them), leave it out to write every metric the run logged, or "
                     "give --findings-only to write no curve",
                     f"--metrics {args.metrics!r} 没有指定任何指标；请给出用逗号分隔的键名或别名"
                     "（'rlvitals inspect RUN' 会列出它们），不加它则写出这次运行记录的全部指标，"
                     "加 --findings-only 则不写曲线")
    return metrics


def _written(plan: ExportPlan, args: argparse.Namespace, names: list[str], runs: int) -> tuple[Words, Tally]:
    """Where ``plan`` went (``--tensorboard``, ``--wandb``, ``--trackio`` or ``--swanlab``), in both languages,
    and what was written there; ``names``: the TensorBoard sub-folders taken so far by the other runs."""
    from ..export import tally, write_swanlab, write_tensorboard, write_trackio, write_wandb

    if args.tensorboard is not None:
        # several runs into one LOGDIR: one sub-folder each, as TensorBoard lists runs
        name = Path(plan.run_path).name or "run"
        name = f"{name}-{len(names) + 1}" if name in names else name
        names.append(name)
        where = str(write_tensorboard(plan, Path(args.tensorboard) / name if runs > 1 else Path(args.tensorboard)))
        return Words(where, where), tally(plan)
    if args.trackio is not None:
        _one_name("--trackio-run", args.trackio_run, runs, "Trackio")
        to = write_trackio(plan, directory=args.trackio, project=args.trackio_project, name=args.trackio_run)
        return Words(f"{to.database}#{to.run} (Trackio: {to.rows} new rows, {to.kept} there already)",
                     f"{to.database}#{to.run}（Trackio：新写 {to.rows} 行，已有 {to.kept} 行）"), to.written
    if args.swanlab is not None:
        _one_name("--swanlab-run", args.swanlab_run, runs, "SwanLab")
        sw = write_swanlab(plan, directory=args.swanlab, project=args.swanlab_project, name=args.swanlab_run)
        held = sw.folder or Path(args.swanlab)
        return Words(f"{held} (SwanLab run {sw.run_id}, offline: {sw.rows} new rows, {sw.kept} there already)",
                     f"{held}（SwanLab 运行 {sw.run_id}，离线：新写 {sw.rows} 行，已有 {sw.kept} 行）"), sw.written
    online = os.environ.get("WANDB_MODE") == "online"
    done = write_wandb(plan, directory=args.wandb_dir, project=args.wandb_project, run_id=args.wandb_run_id,
                       mode="online" if online else "offline")
    return Words(f"{done.run_dir} (W&B run {done.run_id}, {'online' if online else 'offline'})",
                 f"{done.run_dir}（W&B run {done.run_id}，{'在线' if online else '离线'}）"), done.written


def _one_name(option: str, name: str | None, runs: int, tracker: str) -> None:
    """A run name given for several runs is refused: they would all go into one run."""
    if runs > 1 and name:
        raise RlvitalsError(Words(f"{option} {name!r} names one {tracker} run, but {runs} runs were given; export "
                                  "one run at a time under one name",
                                  f"{option} {name!r} 指的是一个 {tracker} 运行，但给了 {runs} 次训练；用同一个名字时"
                                  "请一次导出一次训练"))


def _wrote(where: Words, plan: ExportPlan, written: Tally, findings_only: bool = False) -> Words:
    """The line that says what an export wrote where: the series and their points, the findings as
    ``diagnose`` counts them (fail, warn, note) and the passed checks beside them, and the verdict.

    >>> from rlvitals.export import ExportPlan, Tally
    >>> done = Tally(logged=9, derived=2, points=1_200, statuses={"fail": 2, "warn": 1, "ok": 13})
    >>> line = _wrote(Words("tb", "tb"), ExportPlan("run.log", "en", "fail", 93, (), ()), done)
    >>> for part in line.split("; "):
    ...     print(part)
    wrote tb: 11 series (2 from the rollouts), 1,200 points
    3 findings (2 failures · 1 warning) and the status of 13 passed checks, with their words
    verdict fail
    """
    from ..render import STATUS_WORDS

    series, found = _series_words(written, findings_only), _findings_words(written)
    verdict = STATUS_WORDS["zh"].get(plan.verdict, plan.verdict)
    return Words(f"wrote {where}: {series}; {found}; verdict {plan.verdict}",
                 f"已写出 {where.zh}：{series.zh}；{found.zh}；结论为{verdict}")


def _series_words(written: Tally, findings_only: bool) -> Words:
    """``11 series (2 from the rollouts), 1,200 points``."""
    en = f"{written.series} series"
    zh = f"{written.series} 条序列"
    if written.derived:
        en, zh = f"{en} ({written.derived} from the rollouts)", f"{zh}（其中 {written.derived} 条来自 rollout）"
    if findings_only:
        en, zh = f"{en} (--findings-only)", f"{zh}（--findings-only）"
    return Words(f"{en}, {written.points:,} points", f"{zh}、{written.points} 个点")


def _findings_words(written: Tally) -> Words:
    """``3 findings (2 failures · 1 warning) and the status of 13 passed checks, with their words``."""
    from ..render import count_words

    n, passed = written.findings, written.passed
    en, zh = f"{n} finding{'' if n == 1 else 's'}", f"{n} 项发现"
    if n:
        en, zh = f"{en} ({count_words(written.statuses, 'en')})", f"{zh}（{count_words(written.statuses, 'zh')}）"
    if passed:
        en += f" and the status of {passed} passed check{'' if passed == 1 else 's'}"
        zh += f"和 {passed} 项通过的检查的状态"
    if n or passed:
        en, zh = f"{en}, with their words", f"{zh}，附说明"
    return Words(en, zh)


def _unmapped(keys: tuple[str, ...]) -> Words:
    """The line under it that names the logged keys not written (the catalog does not know them)."""
    shown = ", ".join(keys[:5]) + (f" … +{len(keys) - 5}" if len(keys) > 5 else "")
    zh_shown = "、".join(keys[:5]) + (f" … 另 {len(keys) - 5} 个" if len(keys) > 5 else "")
    return Words(f"{len(keys)} logged key(s) not in the catalog, not written: {shown} ('rlvitals inspect RUN' "
                 "lists them)",
                 f"有 {len(keys)} 个记录的键不在指标目录中，没有写入：{zh_shown}（'rlvitals inspect RUN' 会列出它们）")



#: subcommand → handler
COMMANDS = {"report": _report, "export": _export}


# --- the parser of these commands (cli._parser puts them in the order of the help) -------------------------

def add_report(sub: Commands) -> None:
    """The ``report`` subcommand and its options."""
    rep = sub.add("report", help="one self-contained HTML report: layers, findings, curves, rollouts")
    rep.add_argument("paths", nargs="+", metavar="RUN", help="log file or run folder; several runs are compared")
    rep.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    rep.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a run; once per RUN, in the order of the runs ('-' for a run without)")
    rep.add_argument("--cdn", action="store_true", help="load Plotly from its CDN (small file, needs a network)")
    add_lang(rep, help="language the report opens in")
    rep.add_argument("--label", action="append", default=None, metavar="NAME",
                     help="the name a run goes by in the report; once per run, in the order of the runs (default: "
                          "its file name, with as many parent folders as it takes to tell the runs apart)")
    add_config(rep)
    rep.add_argument("--format", dest="fmt", default=None, help="force a reader")
    add_one_run(rep)
    add_algorithm(rep)
    add_rollout_options(rep)


def add_export(sub: Commands) -> None:
    """The ``export`` subcommand and its options."""
    xpt = sub.add("export", help="write the run's curves and findings to TensorBoard event files, a W&B run, a "
                                 "Trackio project or a SwanLab run")
    xpt.add_argument("paths", nargs="+", metavar="RUN", help="log file or run folder")
    xto = Group(xpt, xpt.add_mutually_exclusive_group(required=True))
    xto.add_argument("--tensorboard", default=None, metavar="LOGDIR",
                     help="write one event file here (the run's own log folder works: tags start with rlvitals/; "
                          "add --findings-only there, its curves are in it already)")
    xto.add_argument("--wandb", action="store_true", help="log to a W&B run (offline unless WANDB_MODE=online)")
    xto.add_argument("--trackio", default=None, metavar="DIR",
                     help="log to a Trackio project in this TRACKIO_DIR (continued after the steps it holds)")
    xto.add_argument("--swanlab", default=None, metavar="DIR",
                     help="log offline to a SwanLab run in this swanlog folder (continued after the steps it holds)")
    xpt.add_argument("--wandb-dir", default=".", metavar="DIR", help="where wandb writes the run folder")
    xpt.add_argument("--wandb-project", default="rlvitals", metavar="P", help="W&B project")
    xpt.add_argument("--wandb-run-id", default=None, metavar="ID", help="resume this W&B run instead of a new one")
    xpt.add_argument("--trackio-project", default="rlvitals", metavar="P", help="Trackio project")
    xpt.add_argument("--trackio-run", default=None, metavar="NAME",
                     help="Trackio run name (default: the log's name; an existing run is continued)")
    xpt.add_argument("--swanlab-project", default="rlvitals", metavar="P", help="SwanLab project")
    xpt.add_argument("--swanlab-run", default=None, metavar="NAME",
                     help="SwanLab run name (default: the log's name; an existing run is continued)")
    xpt.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a RUN: their series are exported; once per RUN, in order ('-' for none)")
    xpt.add_argument("--metrics", default=None, metavar="KEY,...",
                     help="the logged metrics to write (keys or aliases; default: every metric the run logged, "
                          "under rlvitals/<canonical key>)")
    xpt.add_argument("--findings-only", action="store_true",
                     help="write the findings and the verdict, no curve (not even the rollouts' series)")
    add_lang(xpt, help="language of the findings' words")
    add_config(xpt)
    xpt.add_argument("--format", dest="fmt", default=None, help="force a reader")
    add_one_run(xpt)
    add_algorithm(xpt)
    add_rollout_options(xpt)

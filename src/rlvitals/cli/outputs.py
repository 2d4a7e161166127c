"""Subcommands that write files for other tools: ``report`` (HTML) and ``export`` (TensorBoard, W&B)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..errors import RlvitalsError
from ..words import Words, in_lang
from ._common import EXIT_USAGE, error_line, lang_of, runs_for_output, said_line

if TYPE_CHECKING:
    from ..export import ExportPlan


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

    loaded = runs_for_output(args, err)
    if loaded is None:
        return EXIT_USAGE
    runs, config, analyses, status = loaded
    lang = lang_of(args)
    if args.wandb_run_id and len(runs) > 1:
        err.write(said_line(Words(
            f"--wandb-run-id {args.wandb_run_id!r} names one W&B run, but {len(runs)} runs were given; export one "
            "run at a time when resuming",
            f"--wandb-run-id {args.wandb_run_id!r} 指的是一个 W&B run，但给了 {len(runs)} 次训练；续写已有的 run 时"
            "请一次导出一次训练"), lang))
        return EXIT_USAGE
    metrics = [k.strip() for k in args.metrics.split(",") if k.strip()]
    names: list[str] = []
    for run, analysis in zip(runs, analyses, strict=True):
        keys = [c for c in analysis.series().columns if c != "step"] if analysis is not None else []
        try:
            plan = plan_export(diagnose(run, config), derived=keys, metrics=metrics, lang=args.lang)
            where = _written(plan, args, names, len(runs))
        except RlvitalsError as exc:
            err.write(error_line(exc, lang))
            status = EXIT_USAGE
            continue
        out.write(in_lang(_wrote(where, plan), lang) + "\n")
        for line in plan.dropped:
            out.write(f"  {in_lang(line, lang)}\n")
    return status


def _written(plan: ExportPlan, args: argparse.Namespace, names: list[str], runs: int) -> Words:
    """Where ``plan`` went (``--tensorboard``, ``--wandb``, ``--trackio`` or ``--swanlab``), in both languages;
    ``names``: the TensorBoard sub-folders taken so far by the other runs."""
    from ..export import write_swanlab, write_tensorboard, write_trackio, write_wandb

    if args.tensorboard is not None:
        # several runs into one LOGDIR: one sub-folder each, as TensorBoard lists runs
        name = Path(plan.run_path).name or "run"
        name = f"{name}-{len(names) + 1}" if name in names else name
        names.append(name)
        where = str(write_tensorboard(plan, Path(args.tensorboard) / name if runs > 1 else Path(args.tensorboard)))
        return Words(where, where)
    if args.trackio is not None:
        _one_name("--trackio-run", args.trackio_run, runs, "Trackio")
        to = write_trackio(plan, directory=args.trackio, project=args.trackio_project, name=args.trackio_run)
        return Words(f"{to.database}#{to.run} (Trackio: {to.rows} new rows, {to.kept} there already)",
                     f"{to.database}#{to.run}（Trackio：新写 {to.rows} 行，已有 {to.kept} 行）")
    if args.swanlab is not None:
        _one_name("--swanlab-run", args.swanlab_run, runs, "SwanLab")
        sw = write_swanlab(plan, directory=args.swanlab, project=args.swanlab_project, name=args.swanlab_run)
        held = sw.folder or Path(args.swanlab)
        return Words(f"{held} (SwanLab run {sw.run_id}, offline: {sw.rows} new rows, {sw.kept} there already)",
                     f"{held}（SwanLab 运行 {sw.run_id}，离线：新写 {sw.rows} 行，已有 {sw.kept} 行）")
    online = os.environ.get("WANDB_MODE") == "online"
    done = write_wandb(plan, directory=args.wandb_dir, project=args.wandb_project, run_id=args.wandb_run_id,
                       mode="online" if online else "offline")
    return Words(f"{done.run_dir} (W&B run {done.run_id}, {'online' if online else 'offline'})",
                 f"{done.run_dir}（W&B run {done.run_id}，{'在线' if online else '离线'}）")


def _one_name(option: str, name: str | None, runs: int, tracker: str) -> None:
    """A run name given for several runs is refused: they would all go into one run."""
    if runs > 1 and name:
        raise RlvitalsError(Words(f"{option} {name!r} names one {tracker} run, but {runs} runs were given; export "
                                  "one run at a time under one name",
                                  f"{option} {name!r} 指的是一个 {tracker} 运行，但给了 {runs} 次训练；用同一个名字时"
                                  "请一次导出一次训练"))


def _wrote(where: Words, plan: ExportPlan) -> Words:
    """The line that says what an export wrote where."""
    from ..render import STATUS_WORDS

    points = sum(len(s.steps) for s in plan.series)
    verdict = STATUS_WORDS["zh"].get(plan.verdict, plan.verdict)
    return Words(f"wrote {where}: {len(plan.series)} series, {points} points, {len(plan.findings)} findings, "
                 f"verdict {plan.verdict}",
                 f"已写出 {where.zh}：{len(plan.series)} 条序列、{points} 个点、{len(plan.findings)} 项发现，"
                 f"结论为{verdict}")



#: subcommand → handler
COMMANDS = {"report": _report, "export": _export}

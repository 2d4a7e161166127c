"""Subcommands that write files for other tools: ``report`` (HTML) and ``export`` (TensorBoard, W&B)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import IO

from ..errors import RlvitalsError
from ._common import EXIT_USAGE, error_line, lang_of, runs_for_output


def _report(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..diagnosis import diagnose
    from ..report import build_page, write_report
    from .progress import working

    loaded = runs_for_output(args, err)
    if loaded is None:
        return EXIT_USAGE
    runs, config, analyses, status = loaded
    if args.label is not None and len(args.label) != len(runs):
        err.write(f"rlvitals: {len(runs)} run(s) were read but --label was given {len(args.label)} time(s); give "
                  "--label once per run, in the order of the runs (a folder may hold several runs: "
                  "rlvitals diagnose lists them)\n")
        return EXIT_USAGE
    try:  # the bar is gone before an error is said
        with working(err, f"report {Path(args.output).name}") as told:
            diagnoses = []
            for done, run in enumerate(runs):
                if told is not None:
                    told("diagnosing", done, len(runs))
                diagnoses.append(diagnose(run, config))
            page = build_page(runs, diagnoses, analyses, lang=args.lang, labels=args.label, progress=told)
            size = write_report(args.output, page, cdn=args.cdn, progress=told)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE
    out.write(f"wrote {args.output}: {len(runs)} run(s), {size / 1e6:.1f} MB\n")
    return status



def _export(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..diagnosis import diagnose
    from ..export import plan_export, write_tensorboard, write_wandb

    loaded = runs_for_output(args, err)
    if loaded is None:
        return EXIT_USAGE
    runs, config, analyses, status = loaded
    if args.wandb_run_id and len(runs) > 1:
        err.write(f"rlvitals: --wandb-run-id {args.wandb_run_id!r} names one W&B run, but {len(runs)} runs were "
                  "given; export one run at a time when resuming\n")
        return EXIT_USAGE
    metrics = [k.strip() for k in args.metrics.split(",") if k.strip()]
    names: list[str] = []
    for run, analysis in zip(runs, analyses, strict=True):
        keys = [c for c in analysis.series().columns if c != "step"] if analysis is not None else []
        try:
            plan = plan_export(diagnose(run, config), derived=keys, metrics=metrics, lang=args.lang)
            if args.tensorboard is not None:
                # several runs into one LOGDIR: one sub-folder each, as TensorBoard lists runs
                name = Path(run.path).name or "run"
                name = f"{name}-{len(names) + 1}" if name in names else name
                names.append(name)
                logdir = Path(args.tensorboard) / name if len(runs) > 1 else Path(args.tensorboard)
                where = str(write_tensorboard(plan, logdir))
            else:
                online = os.environ.get("WANDB_MODE") == "online"
                done = write_wandb(plan, directory=args.wandb_dir, project=args.wandb_project,
                                   run_id=args.wandb_run_id, mode="online" if online else "offline")
                where = f"{done.run_dir} (W&B run {done.run_id}, {'online' if online else 'offline'})"
        except RlvitalsError as exc:
            err.write(error_line(exc, lang_of(args)))
            status = EXIT_USAGE
            continue
        points = sum(len(s.steps) for s in plan.series)
        out.write(f"wrote {where}: {len(plan.series)} series, {points} points, {len(plan.findings)} findings, "
                  f"verdict {plan.verdict}\n")
        for line in plan.dropped:
            out.write(f"  {line}\n")
    return status



#: subcommand → handler
COMMANDS = {"report": _report, "export": _export}

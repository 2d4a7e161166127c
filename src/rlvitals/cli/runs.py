"""Subcommands about logged runs: ``inspect``, ``diagnose``, ``forecast``, ``explain``, ``example``, ``formats``."""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import RlvitalsError
from ..words import Words
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    diagnose_config,
    dump,
    error_line,
    example_paths,
    lang_of,
    load_all,
    paired_runs,
    rollout_settings,
    said_line,
    width,
)
from ._options import Commands, add_algorithm, add_config, add_lang, add_one_run, add_rollout_options, add_target

if TYPE_CHECKING:
    from ..checks.config import DiagnoseConfig
    from ..diagnosis import Diagnosis
    from ..rollout.options import RolloutSettings


def _no_paths(args: argparse.Namespace, err: IO[str], noun: str = "PATH") -> bool:
    """Whether the command was given neither paths nor ``--example`` (and said so)."""
    if args.paths or args.example:
        return False
    err.write(said_line(Words(f"{args.command} needs at least one {noun} (or --example)",
                              f"{args.command} 至少需要一个 {noun}（或 --example）"), lang_of(args)))
    return True


@contextlib.contextmanager
def _with_example(args: argparse.Namespace) -> Iterator[list[str]]:
    """The paths given, and the bundled example run written to a folder that lasts as long as the block."""
    with tempfile.TemporaryDirectory(prefix="rlvitals-example-") as tmp:
        yield [*args.paths, *([str(example_paths(tmp)["console"])] if args.example else [])]


def _inspect(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    if _no_paths(args, err):
        return EXIT_USAGE
    with _with_example(args) as paths:
        return _inspect_paths(paths, args, out, err)



def _inspect_paths(paths: list[str], args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..render.inspection import render_inspect, render_shared_notes
    from ..render.summary import fold_notes, run_summary

    runs, status = load_all(paths, args.fmt, err, progress=not args.json, one_run=args.one_run, lang=args.lang,
                            algorithm=args.algorithm)
    summaries = [run_summary(run) for run in runs]
    if args.json:
        out.writelines(dump(summary) + "\n" for summary in summaries)
        return status
    # a note in the same words for several runs (the TRL-version note of every TRL log) is said once, at the end
    summaries, shared = fold_notes(summaries)
    for summary in summaries:
        out.write(render_inspect(summary, out.isatty(), width(out), args.lang))
    out.write(render_shared_notes(shared, len(summaries), out.isatty(), width(out), args.lang))
    return status



def _diagnose(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    if args.list_checks:
        from rich.cells import cell_len

        from ..checks import load_checks
        from ..render.diagnosis import layer_code

        for check in load_checks():
            params = ", ".join(f"{k}={v}" for k, v in check.params.items())
            layer = layer_code(check.layer, args.lang)
            out.write(f"{layer}{' ' * max(11 - cell_len(layer), 1)}{check.id:<28} {check.text(args.lang).title}"
                      + (f"  [{params}]" if params else "") + "\n")
        return EXIT_OK
    if _no_paths(args, err):
        return EXIT_USAGE
    if args.verbose and not args.rollouts:
        err.write(said_line(Words(
            "diagnose --verbose lists the rollout metrics that could not be computed, but no --rollouts DIR was "
            "given; add --rollouts DIR (the rollout dumps of the run) or drop --verbose",
            "diagnose --verbose 列出无法计算的 rollout 指标，但没有给出 --rollouts DIR；请加上 --rollouts DIR"
            "（这次训练的 rollout 导出文件），或者去掉 --verbose"), lang_of(args)))
        return EXIT_USAGE
    if args.brief and args.all:
        err.write(said_line(Words(
            "diagnose --brief lists only the warnings and failures, --all every check: give one of them",
            "diagnose --brief 只列出警告和失败，--all 列出每一项检查：两者只能选一个"), lang_of(args)))
        return EXIT_USAGE
    try:
        config = diagnose_config(args)
        settings = rollout_settings(args, args.rollouts)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE
    with _with_example(args) as paths:
        return _diagnose_paths(paths, args, config, settings, out, err)


def _analysis(shown: bool, beside: bool) -> None:
    """What diagnosing a loaded run needs (polars, the builder and the Run, the checks and their records, the
    renderers when the diagnosis is ``shown``, not written as JSON, and the rollout readers when rollouts are
    looked for ``beside`` the log), imported while a worker reads a large log, or else before the diagnosis:
    what this process does between the end of the read and the diagnosis is then the work, not imports.

    The imports run without the garbage collector: they make a few hundred thousand objects and no garbage,
    and each collection they would set off walks all of them (a tenth of their time). What they made is then
    frozen (:func:`gc.freeze`, once a process: the collections of the diagnosis skip it)."""
    import gc
    import sys

    if "rlvitals.diagnosis" in sys.modules:  # a diagnosis ran before in this process (a test, a notebook)
        _imports(shown, beside)
        return
    collecting = gc.isenabled()
    gc.disable()
    try:
        _imports(shown, beside)
    finally:
        if collecting:
            gc.enable()
    gc.freeze()


def _imports(shown: bool, beside: bool) -> None:
    from importlib import import_module

    # numpy.ma: polars looks for masked arrays when the Run's columns become Series (numpy imports it on first
    # use, 0.04 s); the render package imports rich (its face is eager): not for a diagnosis written as JSON
    names = ["numpy.ma", "rlvitals.run.run", "rlvitals.run.trainings", "rlvitals.run.twins", "rlvitals.run.training",
             "rlvitals.diagnosis"]
    for name in names + (["rlvitals.render"] if shown else []) + (["rlvitals.cli._beside"] if beside else []):
        import_module(name)
    if beside:  # the rollout package loads what it names on first use
        from ..rollout import dump_folders, pair  # noqa: F401
    from ..checks import load_checks

    load_checks()


def _diagnose_paths(paths: list[str], args: argparse.Namespace, config: DiagnoseConfig | None,
                    settings: RolloutSettings, out: IO[str], err: IO[str]) -> int:
    from ..ingest import done_reading, while_reading

    # the rollout readers: for --rollouts, or for the rollouts looked for in a folder given (not beside a file)
    beside = bool(args.rollouts) or (not args.one_run and any(Path(p).is_dir() for p in paths))
    while_reading(partial(_analysis, args.markdown or not args.json, beside))
    if args.rollouts:
        paired = paired_runs(paths, args.rollouts, args.fmt, err, settings, progress=not args.json,
                             one_run=args.one_run, lang=args.lang, algorithm=args.algorithm)
        if paired is None:
            return EXIT_USAGE
        runs, analyses, status = paired
    else:
        loaded = load_all(paths, args.fmt, err, progress=not args.json, one_run=args.one_run, lang=args.lang,
                          algorithm=args.algorithm)
        (runs, status), analyses = loaded, []
        if not args.one_run:  # the rollouts serve joins to a folder's runs (TRL's completions/): diagnose too
            from ._beside import joined_beside

            runs, analyses = joined_beside(paths, runs, args.fmt, settings, err, not args.json, args.lang)
    done_reading()  # the analysis's imports, done already when a large log was read by two processes
    from ..diagnosis import diagnose, with_rollouts
    from .rm import downstream_run

    policy, refused = downstream_run(args, runs, err)
    if refused:
        return EXIT_USAGE

    # what the rollout reader skipped and the analysis could not compute, shown with the run it joins
    logs: list[dict[str, Any] | None] = []
    if any(a is not None for a in analyses):  # imported here: the render package imports rich, which --json skips
        from ..render.summary import rollout_log

        logs = [None if a is None else {"path": a[0], **rollout_log(a[1])} for a in analyses]
    logs += [None] * (len(runs) - len(logs))
    results = []
    pairs = [*analyses, *[None] * (len(runs) - len(analyses))]
    for run, pair in zip(runs, pairs, strict=True):
        d = diagnose(run, config, downstream=policy)
        if pair is not None:  # a spike finding names the extreme rollouts of its steps
            d = with_rollouts(d, pair[1])
        results.append(d)
    if args.markdown or not args.json:
        _show_all(results, logs, args, out)
    if args.json:
        out.write(dump({"runs": [d.to_json() | ({"rollouts": log} if log is not None else {})
                                  for d, log in zip(results, logs, strict=True)]}) + "\n")
    if status == EXIT_OK and args.fail_on:
        threshold = {"warn": ("warn", "fail"), "fail": ("fail",)}[args.fail_on]
        if any(d.verdict in threshold for d in results):
            status = EXIT_FINDINGS
    return status


def _show_all(ds: list[Diagnosis], logs: list[dict[str, Any] | None], args: argparse.Namespace,
              out: IO[str]) -> None:
    """The diagnoses as Markdown or for the terminal: several open with the table of their verdicts and
    headlines (not in ``--brief``, whose blocks are as short), then each as :func:`_show` says it, a blank line
    between two."""
    from ..render.brief import render_runs_table, runs_markdown

    if len(ds) > 1 and not args.brief:
        out.write(runs_markdown(ds, args.lang) if args.markdown
                  else render_runs_table(ds, args.lang, out.isatty(), width(out)))
    for i, (d, log) in enumerate(zip(ds, logs, strict=True)):
        if i:
            out.write("\n")
        _show(d, log, args, out)


def _show(d: Diagnosis, log: dict[str, Any] | None, args: argparse.Namespace, out: IO[str]) -> None:
    """One diagnosis as Markdown or for the terminal (with what its rollouts' reading skipped), or with
    ``--brief`` its verdict and one line per warning and failure."""
    from ..render.brief import brief_markdown, render_brief
    from ..render.diagnosis import render_diagnosis, render_markdown
    from ..render.rollout_log import render_rollout_log

    if args.brief:
        out.write(brief_markdown(d, args.lang) if args.markdown
                  else render_brief(d, args.lang, out.isatty(), width(out)))
        return
    if args.markdown:
        out.write(render_markdown(d, args.lang, args.all))
        return
    out.write(render_diagnosis(d, args.lang, args.all, out.isatty(), width(out)))
    if log is not None:
        out.write(render_rollout_log(log, out.isatty(), width(out), args.lang, args.verbose))


def _forecast(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    if _no_paths(args, err, "RUN"):
        return EXIT_USAGE
    with _with_example(args) as paths:
        runs, status = load_all(paths, args.fmt, err, progress=not args.json, one_run=args.one_run, lang=args.lang,
                                algorithm=args.algorithm)
    from dataclasses import replace

    from ..checks import RunView, forecast_params, load_checks, run_forecast
    from ..render import render_forecast

    params = forecast_params(next(c for c in load_checks() if c.id == "entropy_ceiling").params)
    entries = [{"path": run.path, **replace(run_forecast(RunView(run), params), target=args.target_score).to_json()}
               for run in runs]
    if args.json:
        out.write(dump({"runs": entries}) + "\n")
    else:
        out.write("\n".join(render_forecast(str(e.pop("path")), e, args.lang) for e in entries))
    return status


def _explain(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..catalog.lookup import explain, list_metrics
    from ..render.explain import render_explain, render_list

    if args.list:
        rows = list_metrics(args.lang)
        out.write(dump(rows) + "\n" if args.json else render_list(rows, out.isatty(), width(out), args.lang))
        return EXIT_OK
    if not args.key:
        err.write(said_line(Words("explain needs a metric KEY or --list", "explain 需要一个指标 KEY 或 --list"),
                            lang_of(args)))
        return EXIT_USAGE
    try:
        info = explain(args.key, args.lang)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE
    out.write(dump(info) + "\n" if args.json else render_explain(info, out.isatty(), width(out), args.lang))
    return EXIT_OK



def _example(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    written = example_paths(args.folder)
    for kind, path in written.items():
        out.write(f"wrote {kind}: {path}\n")
    return EXIT_OK



def _formats(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..ingest import readers
    from ..render.formats import render_formats

    described: dict[str, str] = {}
    for reader in readers():
        described.setdefault(reader.format, reader.describes)
    out.write(render_formats(described.items(), args.lang))
    return EXIT_OK



#: subcommand → handler
COMMANDS = {"inspect": _inspect, "diagnose": _diagnose, "forecast": _forecast, "explain": _explain,
            "example": _example, "formats": _formats}


# --- the parser of these commands (cli._parser puts them in the order of the help) -------------------------

def add_inspect(sub: Commands) -> None:
    """The ``inspect`` subcommand and its options."""

    ins = sub.add("inspect", help="what a run logged: framework, algorithm, steps, metrics, unmapped keys")
    ins.add_argument("paths", nargs="*", metavar="PATH", help="log file or run folder")
    ins.add_argument("--example", action="store_true",
                     help="inspect the bundled example run (a simulated veRL GRPO log)")
    ins.add_argument("--json", action="store_true", help="print one JSON object per run")
    ins.add_argument("--format", dest="fmt", default=None, help="force a reader (see 'rlvitals formats')")
    add_lang(ins, help="language of the summary")
    add_one_run(ins)
    add_algorithm(ins)


def add_diagnose(sub: Commands) -> None:
    """The ``diagnose`` subcommand and its options."""
    dia = sub.add("diagnose", help="is the run healthy? findings per layer with onset, evidence and advice")
    dia.add_argument("paths", nargs="*", metavar="PATH", help="log file or run folder")
    dia.add_argument("--example", action="store_true", help="diagnose the bundled example run")
    dia.add_argument("--json", action="store_true", help='print {"runs": [...]} with every finding')
    dia.add_argument("--markdown", action="store_true", help="print a Markdown report")
    dia.add_argument("--brief", action="store_true",
                     help="only the verdict and one line per warning and failure (status, step, layer, title, key "
                          "number); with --markdown too")
    add_lang(dia, help="language of the findings and advice")
    dia.add_argument("--fail-on", choices=("warn", "fail"), default=None,
                     help="exit 1 when any run's verdict is at least this bad")
    add_config(dia)
    dia.add_argument("--all", action="store_true", help="also list passed and skipped checks with their words, in "
                                                         "the terminal and in --markdown (default: one line per layer "
                                                         "sums them up: their counts, in Markdown their titles)")
    dia.add_argument("--format", dest="fmt", default=None, help="force a reader")
    dia.add_argument("--list-checks", action="store_true", help="list every check with its layer and defaults")
    add_one_run(dia)
    add_algorithm(dia)
    dia.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a RUN: their per-step metrics join its diagnosis; once per RUN, in "
                          "order ('-' for none)")
    dia.add_argument("--verbose", action="store_true",
                     help="with --rollouts: list every rollout metric that could not be computed, each with its "
                          "whole reason (default: their names on one line)")
    dia.add_argument("--downstream", default=None, metavar="POLICY_RUN",
                     help="the policy run (PPO, GRPO …) a reward-model RUN judged: the reward model's accuracy is read "
                          "against the policy's reward and validation (check rm_downstream)")
    add_rollout_options(dia)


def add_forecast(sub: Commands) -> None:
    """The ``forecast`` subcommand and its options."""
    fct = sub.add("forecast", help="where the run will top out: the entropy–performance law fitted and read forward")
    fct.add_argument("paths", nargs="*", metavar="RUN", help="log file or run folder")
    fct.add_argument("--example", action="store_true", help="forecast the bundled example run")
    fct.add_argument("--json", action="store_true", help='print {"runs": [...]} with every forecast')
    add_lang(fct, help="language of the forecast")
    fct.add_argument("--format", dest="fmt", default=None, help="force a reader")
    add_target(fct)
    add_one_run(fct)
    add_algorithm(fct)


def add_explain(sub: Commands) -> None:
    """The ``explain`` subcommand and its options."""
    exp = sub.add("explain", help="what a metric means and how to read it")
    exp.add_argument("key", nargs="?", help="canonical key or any framework alias")
    exp.add_argument("--list", action="store_true", help="list every metric in the catalog")
    add_lang(exp, help="language of the explanation")
    exp.add_argument("--json", action="store_true", help="print the catalog entry as JSON")


def add_example(sub: Commands) -> None:
    """The ``example`` subcommand and its options."""
    ex = sub.add("example", help="write the bundled example run (veRL console log + JSONL) to a folder")
    ex.add_argument("folder", nargs="?", default="rlvitals-example", help="where to write it")


def add_formats(sub: Commands) -> None:
    """The ``formats`` subcommand and its options."""
    fmt = sub.add("formats", help="list the log formats rlvitals reads")
    add_lang(fmt, help="language of the descriptions")

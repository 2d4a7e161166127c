"""Subcommands that follow growing logs: ``watch`` (alerts), ``serve`` (the dashboard) and ``demo``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..errors import RlvitalsError
from ..words import Words
from ._common import (
    EXIT_OK,
    EXIT_USAGE,
    SAYS,
    diagnose_config,
    error_line,
    lang_of,
    rollout_dirs,
    rollout_settings,
    said_line,
)
from ._options import (
    ONE_RUN_HELP,
    PROBE_MODEL_OPTIONS,
    Commands,
    add_algorithm,
    add_config,
    add_lang,
    add_probe_options,
    add_rollout_options,
    add_rotation,
)

if TYPE_CHECKING:
    from ..ingest.rotated import RotationRules
    from ..probe import PeriodicProbe
    from ..rollout import Progress
    from ..server import WorkspaceOptions
    from ..watch.exports import WandbTarget


def _watch(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .progress import rollouts_in, status_line

    # a one-shot pass over a large rollout folder shows how far its reading got (a terminal only); a live
    # watch has its own status line, which a second one would fight for the terminal
    told = status_line(err, rollouts_in(args.rollouts), lang=lang_of(args)) if args.rollouts and args.once else None
    return _watch_with(args, out, err, told)


def _watch_with(args: argparse.Namespace, out: IO[str], err: IO[str], progress: Progress | None) -> int:
    from ..watch import Confirm, Cooldown, WatchOptions, open_watcher, parse_sink
    from ..watch.watcher import ignore_stop_signals, terminate_as_interrupt

    lang = lang_of(args)
    if args.interval <= 0 or args.cooldown < 0:
        err.write(said_line(Words(f"--interval {args.interval} / --cooldown {args.cooldown}: expected a positive "
                                  "interval and a cooldown of 0 or more seconds",
                                  f"--interval {args.interval} / --cooldown {args.cooldown}：间隔应大于 0 秒，"
                                  "冷却时间应不小于 0 秒"), lang))
        return EXIT_USAGE
    if args.confirm_looks < 1:
        err.write(said_line(Words(f"--confirm-looks {args.confirm_looks}: expected 1 (alert at once) or more looks",
                                  f"--confirm-looks {args.confirm_looks}：应为 1（立即告警）或更多次查看"), lang))
        return EXIT_USAGE
    if not 0.0 <= args.confirm_fail_share <= 1.0:
        err.write(said_line(Words(f"--confirm-fail-share {args.confirm_fail_share}: expected a share of the steps "
                                  "read between 0 and 1",
                                  f"--confirm-fail-share {args.confirm_fail_share}：应为 0 到 1 之间的已读步数占比"),
                            lang))
        return EXIT_USAGE
    if args.tail_steps < 0:
        err.write(said_line(Words(f"--tail-steps {args.tail_steps}: expected 0 (no tail pass) or more steps",
                                  f"--tail-steps {args.tail_steps}：应为 0（不做尾部检查）或更多步"), lang))
        return EXIT_USAGE
    try:
        sinks = [parse_sink(spec, args.lang) for spec in args.alert]
        config = diagnose_config(args)
        from ..export.plan import TENSORBOARD_FOLDER, expect_folder

        export = Path(args.export_tensorboard) if args.export_tensorboard else None
        if export is not None:
            expect_folder(export, "--export-tensorboard", TENSORBOARD_FOLDER)
        wandb = _wandb_target(args)
        options = WatchOptions(interval=args.interval, exit_on=args.exit_on, lang=args.lang, fmt=args.fmt,
                               config=config, cooldown=Cooldown(seconds=args.cooldown), tail_steps=args.tail_steps,
                               export_tensorboard=export, export_wandb=wandb,
                               rollout_settings=rollout_settings(args, args.rollouts), one_run=args.one_run,
                               algorithm=args.algorithm, rotation=rotation_rules(args),
                               confirm=Confirm(looks=args.confirm_looks, fail_share=args.confirm_fail_share),
                               probe=probe_plan(args))
        watcher = open_watcher([Path(p) for p in args.paths], sinks, Path(args.state) if args.state else None,
                               options, out=out, err=err, live=out.isatty() and not args.once,
                               rollouts=Path(args.rollouts) if args.rollouts else None, rollout_progress=progress)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE
    if not args.once:
        err.write(SAYS.get(lang, SAYS["en"]) + watcher.banner() + "\n")
    try:
        with terminate_as_interrupt():  # SIGTERM (Slurm, systemd) stops it as Ctrl-C does
            return watcher.run(once=args.once)
    except KeyboardInterrupt:
        ignore_stop_signals()  # stopping now: a second Ctrl-C must not cut the close short or print a traceback
        return EXIT_OK
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE
    finally:
        watcher.close()



def probe_plan(args: argparse.Namespace) -> PeriodicProbe | None:
    """``--probe-every`` and the probe options, checked before the watch starts: how the followed rollouts are
    probed as the run trains (None without ``--probe-every``; a model option without it is refused)."""
    from .probe import open_backend, probe_options

    every = args.probe_every
    if every is None:
        named = [flag for flag, dest in PROBE_MODEL_OPTIONS.items() if getattr(args, dest) is not None]
        if named:
            raise RlvitalsError(Words(f"{', '.join(named)}: the model that probes, but nothing is probed without "
                                      "--probe-every N; add --probe-every N or drop them",
                                      f"{'、'.join(named)}：这是做探测的模型，但没有 --probe-every N 就不会探测；"
                                      "请加上 --probe-every N，或者去掉它们"))
        return None
    if every < 1:
        raise RlvitalsError(Words(f"--probe-every {every}: expected a whole number of steps >= 1",
                                  f"--probe-every {every}：应为不小于 1 的整数步数"))
    if not args.rollouts:
        raise RlvitalsError(Words("--probe-every probes the rollouts of --rollouts DIR at every N-th step; give "
                                  "--rollouts DIR (the run's rollout dumps)",
                                  "--probe-every 每 N 步探测一次 --rollouts DIR 里那一步的 rollout；请给出 "
                                  "--rollouts DIR（这次训练的 rollout 导出）"))
    if args.once:
        raise RlvitalsError(Words("--probe-every probes in the background while the watch goes on, and --once does not "
                                  "go on to read the results; probe a dump once with: rlvitals probe DIR",
                                  "--probe-every 在监控进行时于后台探测，而 --once 不会继续读取结果；"
                                  "要一次性探测导出文件，请用：rlvitals probe DIR"))
    from ..probe import LocalBackend, PeriodicProbe, verifier_for
    from ..synthetic.word_problems import known_states

    options = probe_options(args, "--probe-every")
    if args.local:  # a model that cannot load is said now, not by the probing thread at the first due step
        LocalBackend.check(Path(args.local))
    return PeriodicProbe(every=every, backend=lambda: open_backend(args)[0], options=options,
                         max_rollouts=args.max_rollouts, verifier=verifier_for(args.verify, known_states))


def rotation_rules(args: argparse.Namespace) -> RotationRules:
    """``--rotated-into`` and ``--rotation-pattern``, checked before the watch starts."""
    from ..ingest.rotated import RotationRules

    pattern = args.rotation_pattern
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise RlvitalsError(Words(
                f"--rotation-pattern {pattern!r}: not a regular expression ({exc}); give one that matches the whole "
                "name of a rotated file, e.g. 'train\\.log\\.old-\\d+'",
                f"--rotation-pattern {pattern!r}：不是正则表达式（{exc}）；请给出能完整匹配轮转文件名的正则表达式，"
                "例如 'train\\.log\\.old-\\d+'")) from exc
    return RotationRules.of(args.rotated_into, pattern)


def _wandb_target(args: argparse.Namespace) -> WandbTarget | None:
    """``--export-wandb`` and its options, checked before the watch starts."""
    from ..watch.exports import WandbTarget

    if args.export_wandb is None:
        if args.wandb_run_id:
            raise RlvitalsError(Words(f"--wandb-run-id {args.wandb_run_id}: names the W&B run --export-wandb logs "
                                      "into; give --export-wandb DIR too",
                                      f"--wandb-run-id {args.wandb_run_id}：指定 --export-wandb 写入的 W&B run；"
                                      "请同时给出 --export-wandb DIR"))
        return None
    from ..export.plan import WANDB_FOLDER, expect_folder

    folder = Path(args.export_wandb)
    expect_folder(folder, "--export-wandb", WANDB_FOLDER)
    if importlib.util.find_spec("wandb") is None:
        raise RlvitalsError(Words("--export-wandb needs the wandb client, which is not installed; install it with: "
                                  "pip install 'rlvitals[export]'",
                                  "--export-wandb 需要 wandb 客户端，但它没有安装；安装命令："
                                  "pip install 'rlvitals[export]'"))
    mode = "online" if os.environ.get("WANDB_MODE") == "online" else "offline"
    return WandbTarget(folder, project=args.wandb_project, run_id=args.wandb_run_id, mode=mode)


def _serve(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..server import serve

    try:
        options = workspace_options(args)
        return serve([Path(p) for p in args.paths], host=args.host, port=args.port,
                     token=args.token or os.environ.get("RLVITALS_TOKEN") or None,
                     state=Path(args.state) if args.state else None, options=options, docs=args.docs, out=out,
                     lang=args.lang)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE



def workspace_options(args: argparse.Namespace) -> WorkspaceOptions:
    """What ``serve``'s options ask of the workspace: reader, checks, each path's rollouts and how they
    are read and analysed; RlvitalsError for a bad option."""
    from ..server import WorkspaceOptions

    config = diagnose_config(args)
    settings = rollout_settings(args, args.rollouts)
    dirs = rollout_dirs(args.rollouts, list(args.paths), "path") if args.rollouts else None
    rollouts = tuple(Path(d) if d else None for d in dirs) if dirs else None
    return WorkspaceOptions(fmt=args.fmt, config=config, rollouts=rollouts, rollout_settings=settings,
                            rotation=rotation_rules(args), algorithm=args.algorithm)


def _demo(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    import threading

    from ..synthetic.demo import demo_files, watch_demo

    if args.steps < 1 or args.delay < 0 or args.probe < 0:
        err.write(f"rlvitals：demo --steps {args.steps} --delay {args.delay} --probe {args.probe}：步数至少为 1，"
                  "间隔不能小于 0 秒，探测间隔不能为负\n"
                  if args.lang == "zh" else
                  f"rlvitals: demo --steps {args.steps} --delay {args.delay} --probe {args.probe}: expected at least "
                  "1 step, a delay of 0 or more seconds and a probe interval of 0 or more steps\n")
        return EXIT_USAGE
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="rlvitals-demo-"))
    if not args.serve:
        return watch_demo(folder, steps=args.steps, delay=args.delay, out=out, err=err, lang=args.lang,
                          probe_every=args.probe or None)
    from ..server import WorkspaceOptions, serve

    files = demo_files(folder)
    files.log.parent.mkdir(parents=True, exist_ok=True)
    files.log.touch()
    # the dashboard needs the main thread (it stops on Ctrl-C); training and the watcher run beside it and
    # are stopped and joined when it ends, so no thread is cut off inside native code at interpreter exit
    stop = threading.Event()
    demo = threading.Thread(target=watch_demo, name="rlvitals-demo", daemon=True,
                            kwargs={"folder": folder, "steps": args.steps, "delay": args.delay, "out": out,
                                    "err": err, "stop": stop, "lang": args.lang, "probe_every": args.probe or None})
    demo.start()
    try:
        return serve([files.log], port=args.port, options=WorkspaceOptions(rollouts=files.rollouts),
                     state=folder / "serve.sqlite", out=out, lang=args.lang)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE
    finally:
        stop.set()
        demo.join(timeout=60)




#: subcommand → handler
COMMANDS = {"watch": _watch, "serve": _serve, "demo": _demo}


# --- the parser of these commands (cli._parser puts them in the order of the help) -------------------------

def add_watch(sub: Commands) -> None:
    """The ``watch`` subcommand and its options."""
    wat = sub.add("watch", help="follow growing logs, re-diagnose as they grow, alert once per finding")
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
    add_lang(wat, help="language of the alerts")
    add_config(wat)
    wat.add_argument("--format", dest="fmt", default=None, help="force a reader")
    add_algorithm(wat)
    wat.add_argument("--cooldown", type=float, default=600.0, metavar="S",
                     help="seconds a cleared finding must stay away before a 'cleared' alert says so (and before it "
                          "may alert again)")
    wat.add_argument("--confirm-looks", type=int, default=2, metavar="N",
                     help="alert a new finding (or a worse level of one) once N diagnoses in a row have reported it, "
                          "at least 5%% of the steps read apart; 1: at once. A NaN is alerted at once, a crash once "
                          "the log stops growing")
    wat.add_argument("--confirm-fail-share", type=float, default=0.5, metavar="F",
                     help="a failure is alerted as the warning it also is until it has held over this share of the "
                          "steps read (0.5: from step 1,000 to step 2,000), the looks of --confirm-looks in a row; "
                          "0: as soon as a warning would be. --exit-on fail acts on failures alerted")
    wat.add_argument("--tail-steps", type=int, default=2000, metavar="N",
                     help="between two full diagnoses of a log that grew, read its last N steps with the sudden "
                          "checks only (spikes, jumps, NaN, collapses), so they alert within a poll on long runs; "
                          "0: never")
    wat.add_argument("--export-tensorboard", default=None, metavar="LOGDIR",
                     help="after each diagnosis, append the rollout series, findings and verdict to a live event "
                          "file here (the run's own TensorBoard folder works: tags start with rlvitals/); one "
                          "sub-folder per run when several are watched")
    wat.add_argument("--export-wandb", default=None, metavar="DIR",
                     help="after each diagnosis, log the same to a W&B run whose files go here (offline unless "
                          "WANDB_MODE=online); a restarted watcher resumes it")
    wat.add_argument("--wandb-project", default="rlvitals", metavar="P", help="W&B project for --export-wandb")
    wat.add_argument("--wandb-run-id", default=None, metavar="ID",
                     help="with --export-wandb: log into this W&B run (the training's own) instead of a new one")
    wat.add_argument("--rollouts", default=None, metavar="DIR",
                     help="rollout dump folder (veRL rollout_data_dir, TRL output_dir), or a rollout table read "
                          "with the column options, followed too; its per-step metrics join the runs before each "
                          "diagnosis")
    wat.add_argument("--one-run", action="store_true",
                     help=ONE_RUN_HELP + "; each log is followed (a later launch's may not exist yet), and each "
                          "diagnosis reads the logs found so far (no tail pass: --tail-steps is not used)")
    add_rotation(wat)
    add_rollout_options(wat)
    wat.add_argument("--probe-every", type=int, default=None, metavar="N",
                     help="with --rollouts: probe the rollouts of every N-th step (steps N, 2N …) in the background "
                          "with the model of the probe options (--base-url URL --model NAME, or --local PATH), as "
                          "rlvitals probe does; the results go to rlvitals-probes.jsonl beside the rollouts and join "
                          "the diagnosis (L6 faithfulness) like any probe file")
    add_probe_options(wat, "every --probe-every N steps")


def add_serve(sub: Commands) -> None:
    """The ``serve`` subcommand and its options."""
    srv = sub.add("serve", help="live dashboard: run list, layered pages, JSON API; updates as logs grow")
    srv.add_argument("paths", nargs="+", metavar="PATH", help="log file or folder of runs (may not exist yet)")
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on; any non-loopback one needs --token")
    srv.add_argument("--port", type=int, default=8765, help="TCP port (0: any free port)")
    srv.add_argument("--token", default=None, help="secret every request must carry (default: $RLVITALS_TOKEN)")
    srv.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a served run; once per PATH, in the order of the paths ('-' for a "
                          "path without)")
    srv.add_argument("--state", default=None, metavar="FILE",
                     help="SQLite workspace state (default: $XDG_STATE_HOME/rlvitals/serve.sqlite)")
    add_config(srv)
    srv.add_argument("--format", dest="fmt", default=None, help="force a reader")
    add_algorithm(srv)
    srv.add_argument("--docs", action="store_true", help="serve /docs (its page loads scripts from a CDN)")
    add_lang(srv, help="language of what serve prints (the pages follow the browser's choice)")
    add_rotation(srv)
    add_rollout_options(srv)


def add_demo(sub: Commands) -> None:
    """The ``demo`` subcommand and its options."""
    dem = sub.add("demo", help="a small real RL run on CPU, watched live; it breaks on purpose at step 30")
    dem.add_argument("--steps", type=int, default=60, metavar="N", help="training steps (the break comes at 30)")
    dem.add_argument("--delay", type=float, default=0.5, metavar="S", help="seconds between steps, to watch it live")
    dem.add_argument("--dir", default=None, metavar="DIR", help="where to write the run (default: a new temp folder)")
    dem.add_argument("--serve", action="store_true", help="serve the dashboard on the run too (Ctrl-C to stop)")
    dem.add_argument("--port", type=int, default=8765, metavar="N", help="dashboard port with --serve")
    add_lang(dem, help="language of the demo's lines and alerts")
    dem.add_argument("--probe", type=int, default=0, metavar="N",
                     help="probe the learner's faithfulness every N steps on that step's rollouts (as a checkpoint) "
                          "and write rollout_data/rlvitals-probes.jsonl, which the watcher reads (default 0: no probe)")

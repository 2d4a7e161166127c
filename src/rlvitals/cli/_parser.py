"""The argument parser: every subcommand in the order of the help, with examples. Each command module declares its
own subcommands' flags next to their handlers (``add_<command>``); the options several share are declared once in
:mod:`._options`."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .._version import __version__
from . import live, outputs, rollouts, runs
from ._options import Commands, Parser
from .probe import EXAMPLES as PROBE_EXAMPLES
from .probe import add_probe
from .rm import EXAMPLES as RM_EXAMPLES
from .rm import add_rm_compare

#: what each subcommand's help shows under "examples:"; every line parses (tests/cli/test_help.py)
EXAMPLES: dict[str, tuple[str, ...]] = {
    "inspect": ("rlvitals inspect train.log", "rlvitals inspect --json wandb/", "rlvitals inspect --example"),
    "diagnose": ("rlvitals diagnose train.log", "rlvitals diagnose --example --all",
                 "rlvitals diagnose run.jsonl --fail-on warn", "rlvitals diagnose runs/ --brief",
                 "rlvitals diagnose train.log --rollouts rollout_data_dir/",
                 "rlvitals diagnose a.log b.log --markdown --lang zh",
                 "rlvitals diagnose --one-run metrics-launch1.jsonl metrics-launch2.jsonl",
                 "rlvitals diagnose rm_train.log --downstream ppo_train.log"),
    "forecast": ("rlvitals forecast train.log", "rlvitals forecast train.log --target 0.7",
                 "rlvitals forecast a.log b.log --json"),
    "rollouts": ("rlvitals rollouts rollout_data_dir/", "rlvitals rollouts output_dir/ --k 1,4,16 --json",
                 "rlvitals rollouts samples.parquet --group prompt_id --score reward --response text",
                 "rlvitals rollouts episodes.jsonl --n-states 64"),
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
              "rlvitals watch --one-run metrics-launch1.jsonl metrics-launch2.jsonl",
              "rlvitals watch metrics.jsonl --rollouts rollout_data_dir/ --probe-every 10 "
              "--base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-1.5B-Instruct"),
    "serve": ("rlvitals serve runs/", "rlvitals serve runs/ --host 0.0.0.0 --token SECRET --port 9000"),
    "demo": ("rlvitals demo", "rlvitals demo --serve --steps 40", "rlvitals demo --probe 5"),
    "export": ("rlvitals export train.log --tensorboard runs/exp1", "rlvitals export train.log --wandb --wandb-dir ."),
    "probe": PROBE_EXAMPLES,
    "rm-compare": RM_EXAMPLES,
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


def build_parser() -> Parser:
    p = Parser(prog="rlvitals", description="Is this RL post-training run healthy?", formatter_class=_Help,
               epilog="'rlvitals COMMAND -h' shows a command's options and examples.")
    p.add_argument("--version", action="version", version=f"rlvitals {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    commands = Commands(p, sub)
    for add in ADDERS:
        add(commands)
    for name, (_, parser) in p.commands.items():
        parser.formatter_class = _Help
        lines = EXAMPLES.get(name, ())
        parser.epilog = "examples:\n" + "\n".join(f"  {line}" for line in lines) if lines else None
    return p


def _add_completion(sub: Commands) -> None:
    cmp = sub.add("completion", help="print a shell completion script for bash, zsh or fish")
    cmp.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete rlvitals in")


#: every subcommand, in the order of the help: each added by the module that runs it
ADDERS: tuple[Callable[[Commands], None], ...] = (
    runs.add_inspect, runs.add_diagnose, runs.add_forecast, rollouts.add_rollouts, runs.add_explain,
    runs.add_example, runs.add_formats, rollouts.add_sample, outputs.add_report, live.add_watch, live.add_serve,
    live.add_demo, outputs.add_export, add_probe, add_rm_compare, _add_completion,
)

"""What the command modules declare their subcommands with: the :class:`Parser` that keeps what was added to it,
the :class:`Commands` adder, and every option several commands share, declared once (``--lang``, ``--config``,
``--one-run``, ``--target-score``, the rotation options and the rollout options, whose tables ``_common`` turns
into ``RolloutSettings``)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["COLUMN_OPTIONS", "Commands", "Group", "LANGS", "ONE_RUN_HELP", "PROBE_MODEL_OPTIONS", "Parser",
           "ROLLOUT_OPTIONS", "add_algorithm", "add_config", "add_lang", "add_one_run", "add_probe_options",
           "add_rollout_options", "add_rotation", "add_target"]

#: the languages every command speaks
LANGS = ("en", "zh")


def add_lang(parser: argparse.ArgumentParser, help: str) -> None:
    """``--lang``, declared here once for every command that speaks: English (the default) or Chinese."""
    parser.add_argument("--lang", choices=LANGS, default="en", help=help)


class AlgorithmNames:
    """``--algorithm``'s choices: the algorithm ids the catalog has a signature of, read from the catalog only
    when listed (the help, the completion scripts), so a command that does not ask pays nothing. argparse asks
    it whether a name is one of them and is told yes, always: argparse would refuse a name in English, before
    ``--lang`` is read; the command refuses it in the user's language (``cli._common.given_algorithm``)."""

    def __iter__(self) -> Iterator[str]:
        from ..catalog import load_catalog
        from ..run.detect import algorithm_ids

        return iter(algorithm_ids(load_catalog()))

    def __contains__(self, name: object) -> bool:
        return True


def add_algorithm(parser: argparse.ArgumentParser) -> None:
    """``--algorithm``, declared here once for every command that reads a run: the algorithm the run is, read
    as that whatever its keys look like (its label then says it was given)."""
    parser.add_argument("--algorithm", choices=AlgorithmNames(), default=None, metavar="NAME",
                        help="read the runs as this algorithm instead of detecting it from their keys (one of "
                             "%(choices)s); a run whose keys read otherwise gets a note (default: detected)")


#: the table columns a column option names (``--score COLUMN`` → ``args.col_score``), with what they hold
COLUMN_OPTIONS = {"step": "training step", "group": "prompt group id", "sample": "sample's index in its group",
                  "prompt": "prompt", "response": "response", "score": "reward", "correct": "correctness (bool or 0/1)",
                  "answer": "extracted answer", "target": "ground truth", "source": "data source",
                  "split": "split (train, val, ood …)", "length": "response length in tokens",
                  "truncated": "truncation flag", "advantage": "sequence advantage"}
#: the other rollout options: flag → ``args`` attribute (all default to None or False: not given)
ROLLOUT_OPTIONS = {"--k": "k", "--group-size": "group_size", "--reward-weights": "reward_weights", "--embed": "embed",
                   "--tool-cap": "tool_call_cap", "--max-response-length": "max_response_length",
                   "--n-states": "n_states", "--tool-schema": "tool_schema",
                   "--id-source": "id_sources", "--ood-source": "ood_sources", "--think-tag": "think_tag",
                   "--answer-tag": "answer_tag", "--tool-tag": "tool_tag", "--engine": "engine",
                   "--address": "address"}


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


class Group:
    """An argument group (or a mutually exclusive one) of a :class:`Parser` whose arguments it keeps."""

    def __init__(self, owner: Parser, group: Any) -> None:
        self._owner, self._group = owner, group

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action: argparse.Action = self._group.add_argument(*args, **kwargs)
        self._owner.options.append(action)
        return action


class Subparsers(Protocol):
    def add_parser(self, name: str, **kwargs: Any) -> Parser: ...


class Commands:
    """Adds subcommands to a :class:`Parser`, each described (at the top of its help), unless told
    otherwise, by its line in the command list."""

    def __init__(self, top: Parser, sub: Subparsers) -> None:
        self._top, self._sub = top, sub

    def add(self, name: str, help: str, description: str | None = None) -> Parser:
        parser = self._sub.add_parser(name, help=help, description=description or f"{help[0].upper()}{help[1:]}.")
        self._top.commands[name] = (help, parser)
        return parser


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
    g = Group(parser, parser.add_argument_group(
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
    g.add_argument("--tool-schema", dest="tool_schema", default=None, metavar="FILE",
                   help="the tools the policy was offered (a JSON tools list as given to the chat template, its "
                        "<tools> block, or name → parameters schema): a tool call must also fit its tool's schema to "
                        "count in rollout/tool_calls/valid_args")
    g.add_argument("--max-response-length", dest="max_response_length", type=int, default=None, metavar="N",
                   help="the generation limit in tokens: a rollout whose token count (--length) reaches it counts "
                        "as truncated")
    g.add_argument("--n-states", dest="n_states", type=int, default=None, metavar="N",
                   help="the size of the environment's state space: diversity/state_coverage becomes the share of "
                        "it each group visits (distinct states / N, not / visits); needs a 'states' column")
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


#: the probe options that name the model (flag → ``args`` attribute; None: not given)
PROBE_MODEL_OPTIONS = {"--base-url": "base_url", "--model": "model", "--local": "local"}


def add_probe_options(parser: Parser, used: str) -> None:
    """The probe options, one group with the same flags in ``probe`` and ``watch --probe-every``: the model that
    answers (a server or one in process), the probes and their budget, how the requests go and are cached;
    ``used``: when the command probes (the group's description). ``cli.probe`` turns them into a backend and
    ``ProbeOptions``."""
    from ..probe.names import PROBES, VERIFIERS

    g = Group(parser, parser.add_argument_group(
        "probe options", f"the model that probes and how it is asked, {used} (the same options in probe and "
                         "watch --probe-every)"))
    g.add_argument("--base-url", default=None, metavar="URL",
                   help="an OpenAI-compatible server's root, e.g. http://host:8000/v1")
    g.add_argument("--model", default=None, metavar="NAME", help="the model name the server serves (with --base-url)")
    g.add_argument("--local", default=None, metavar="PATH_OR_GGUF",
                   help="a transformers model folder or a .gguf file, run in this process instead of a server")
    g.add_argument("--api", choices=("completions", "chat"), default="completions",
                   help="which API the probes use (default: completions)")
    g.add_argument("--probes", default=",".join(PROBES), metavar="LIST",
                   help=f"comma-separated, of {', '.join(PROBES)} (default: all)")
    g.add_argument("--max-rollouts", type=int, metavar="N", default=32,
                   help="rollouts probed, spread over the steps probed (default: 32)")
    g.add_argument("--max-tokens", type=int, metavar="N", default=64, help="new tokens per generation (default: 64)")
    g.add_argument("--mistake", choices=("numeric", "model"), default="numeric",
                   help="how a mistake is added: a changed number, or one the model writes (default: numeric)")
    g.add_argument("--verify", choices=VERIFIERS, default="arithmetic",
                   help="how intermediate steps are checked: every a op b = c exactly; word-problems adds the "
                        "bundled word problems' known intermediate values (default: arithmetic)")
    g.add_argument("--concurrency", type=int, metavar="N", default=4, help="requests in flight at once (default: 4)")
    g.add_argument("--retries", type=int, metavar="N", default=3,
                   help="retries of a failed request, with backoff (default: 3)")
    g.add_argument("--timeout", type=float, metavar="SECONDS", default=120.0, help="seconds per request (default: 120)")
    g.add_argument("--cache", default=None, metavar="FILE",
                   help="the reply cache (default: $RLVITALS_CACHE/probe.sqlite, else ~/.cache/rlvitals/probe.sqlite)")
    g.add_argument("--no-cache", action="store_true", help="send every request, keep nothing")

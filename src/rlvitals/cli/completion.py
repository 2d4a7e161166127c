"""``rlvitals completion SHELL``: a completion script for bash, zsh or fish, made from the parser itself,
so it offers exactly the subcommands, options and choices ``rlvitals`` takes (and the catalog's metric
keys after ``explain``)."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field
from typing import IO

from ._common import EXIT_OK
from ._parser import build_parser


@dataclass
class _Command:
    help: str
    flags: list[str] = field(default_factory=list)
    #: option -> its choices (an option with a value but no choices completes file names)
    values: dict[str, list[str]] = field(default_factory=dict)
    #: what a positional argument completes to: its choices, or None for file names
    words: list[str] | None = None
    positional: bool = False


def _commands() -> dict[str, _Command]:
    out = {}
    for name, (line, parser) in build_parser().commands.items():
        cmd = _Command(line)
        for action in parser.options:
            if not action.option_strings:
                cmd.positional = True
                cmd.words = [str(c) for c in action.choices] if action.choices else cmd.words
                continue
            cmd.flags += action.option_strings
            if action.nargs != 0:
                for flag in action.option_strings:
                    cmd.values[flag] = [str(c) for c in action.choices] if action.choices else []
        out[name] = cmd
    from ..catalog.catalog import load_catalog
    out["explain"].words = sorted(k for k in load_catalog().metrics if "{" not in k)
    return out


def bash() -> str:
    cmds = _commands()
    cases = []
    for name, cmd in cmds.items():
        for flag, choices in cmd.values.items():
            reply = f'compgen -W {shlex.quote(" ".join(choices))} -- "$cur"' if choices else 'compgen -f -- "$cur"'
            cases.append(f'    "{name} {flag}") COMPREPLY=($({reply})); return ;;')
    flags = [f'    {name}) flags={shlex.quote(" ".join(cmd.flags))}; words={shlex.quote(" ".join(cmd.words or []))} ;;'
             for name, cmd in cmds.items()]
    top = " ".join([*cmds, "--version", "--help"])
    return "\n".join([
        "# bash completion for rlvitals (rlvitals completion bash)",
        "_rlvitals() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" flags words',
        '    if [ "$COMP_CWORD" -eq 1 ]; then',
        f'        COMPREPLY=($(compgen -W {shlex.quote(top)} -- "$cur")); return',
        "    fi",
        '    case "${COMP_WORDS[1]} $prev" in',
        *cases,
        "    esac",
        '    case "${COMP_WORDS[1]}" in',
        *flags,
        "    esac",
        '    if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur"))',
        '    elif [ -n "$words" ]; then COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        '    else COMPREPLY=($(compgen -f -- "$cur")); fi',
        "}",
        "complete -o filenames -o bashdefault -F _rlvitals rlvitals",
        "",
    ])


def zsh() -> str:
    return ("#compdef rlvitals\n# zsh completion for rlvitals (rlvitals completion zsh): the bash one, "
            "through bashcompinit\nautoload -U +X bashcompinit && bashcompinit\n" + bash())


def fish() -> str:
    lines = ["# fish completion for rlvitals (rlvitals completion fish)", "complete -c rlvitals -f",
             "complete -c rlvitals -n __fish_use_subcommand -l version -d 'print the version'"]
    for name, cmd in _commands().items():
        lines.append(f"complete -c rlvitals -n __fish_use_subcommand -a {name} -d {shlex.quote(cmd.help)}")
        when = f"-n '__fish_seen_subcommand_from {name}'"
        for flag in cmd.flags:
            if not flag.startswith("--"):
                continue
            choices = cmd.values.get(flag)
            value = "" if choices is None else f" -x -a {shlex.quote(' '.join(choices))}" if choices else " -r -F"
            lines.append(f"complete -c rlvitals {when} -l {flag[2:]}{value}")
        if cmd.positional:
            lines.append(f"complete -c rlvitals {when} " + (f"-a {shlex.quote(' '.join(cmd.words))}" if cmd.words
                                                              else "-F"))
    return "\n".join(lines) + "\n"


SCRIPTS = {"bash": bash, "zsh": zsh, "fish": fish}


def _completion(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    out.write(SCRIPTS[args.shell]())
    return EXIT_OK


COMMANDS = {"completion": _completion}

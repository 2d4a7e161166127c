"""The ``rlvitals`` command line. ``main(argv) -> exit code``; rendering lives in render_text.

One module per noun: ``runs`` (inspect, diagnose, explain, example, formats), ``rollouts`` (rollouts,
sample), ``outputs`` (report, export) and ``live`` (watch, serve, demo); ``_parser`` holds every flag.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import IO

from . import live, outputs, rollouts, runs
from ._common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from ._parser import build_parser

__all__ = ["COMMANDS", "EXIT_FINDINGS", "EXIT_OK", "EXIT_USAGE", "main", "run"]

#: subcommand → its handler; every handler is ``(args, out, err) -> exit code``
COMMANDS: dict[str, Callable[[argparse.Namespace, IO[str], IO[str]], int]] = {
    **runs.COMMANDS, **rollouts.COMMANDS, **outputs.COMMANDS, **live.COMMANDS,
}


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = build_parser().parse_args(argv)
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

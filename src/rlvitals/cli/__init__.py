"""The ``rlvitals`` command line. ``main(argv) -> exit code``; rendering lives in :mod:`rlvitals.render`.

Exit codes: 0 ok; 1 a verdict reached ``--fail-on`` (``watch --exit-on``); 2 bad usage or an input that
could not be read; 3 an internal error (a bug of rlvitals, reported with its traceback).

One module per noun: ``runs`` (inspect, diagnose, forecast, explain, example, formats), ``rollouts`` (rollouts,
sample), ``outputs`` (report, export), ``live`` (watch, serve, demo), ``probe``, ``rm`` (rm-compare) and
``completion``; each declares its subcommands' flags next to their handlers, the options several share are declared
once in ``_options``, and ``_parser`` puts the subcommands in the order of the help.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import IO

from ..errors import RlvitalsError
from ..words import Words
from . import completion, live, outputs, probe, rm, rollouts, runs
from ._common import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, error_line, given_algorithm, lang_of, said_line
from ._parser import build_parser

__all__ = ["COMMANDS", "EXIT_FINDINGS", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "ONE_SHOT", "main", "run"]

#: subcommand → its handler; every handler is ``(args, out, err) -> exit code``
COMMANDS: dict[str, Callable[[argparse.Namespace, IO[str], IO[str]], int]] = {
    **runs.COMMANDS, **rollouts.COMMANDS, **outputs.COMMANDS, **live.COMMANDS, **probe.COMMANDS, **rm.COMMANDS,
    **completion.COMMANDS,
}


#: the commands whose work is all done when they return: they read, print and write files they have closed, and
#: leave nothing to run at exit (no tracker to finish, no server, no model, no Ray cluster to stop)
ONE_SHOT = frozenset({"inspect", "diagnose", "forecast", "explain", "formats", "rollouts", "report", "completion",
                      "rm-compare"})


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting."""
    return _main(argv, out, err)[0]


def _main(argv: Sequence[str] | None, out: IO[str] | None, err: IO[str] | None) -> tuple[int, str | None]:
    """The exit code, and the command that ran (None when the arguments were not parsed)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:  # argparse prints help, --version and usage errors itself: to the streams given
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0), None
    return _command(args, out, err), args.command


def _command(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    try:
        given_algorithm(args)  # --algorithm NAME the catalog does not know: a usage error in the user's language
        return COMMANDS[args.command](args, out, err)
    except RlvitalsError as exc:  # a problem of the input or the usage that a command did not catch itself
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except OSError as exc:  # a write fails at its end without the file's name: the output named is the one
        said = environment_error(exc, getattr(args, "output", None))
        if said is None:
            return _internal(args, err)
        err.write(said_line(said, lang_of(args)))
        return EXIT_USAGE
    except Exception:
        return _internal(args, err)


#: what a file's place can refuse, whatever rlvitals does: the user's path or the machine, not a bug — each
#: said in a sentence (exit 2), not as a traceback
_ENVIRONMENT = {
    errno.EISDIR: ("is a folder; give a file's path", "是一个文件夹；请给出文件的路径"),
    errno.ENOTDIR: ("a part of this path is a file, not a folder", "路径中的某一段是文件而不是文件夹"),
    errno.ENOSPC: ("the disk is full", "磁盘已满"),
    errno.EDQUOT: ("the disk quota is used up", "磁盘配额已用完"),
    errno.EFBIG: ("the file would be larger than this file system allows", "文件超出了该文件系统允许的大小"),
    errno.EROFS: ("the file system is read-only", "文件系统是只读的"),
    errno.EACCES: ("permission denied", "没有权限"),
    errno.EPERM: ("operation not permitted", "不允许该操作"),
}


def environment_error(exc: OSError, output: object = None) -> Words | None:
    """The sentence for an OSError that the user's paths or machine caused (a folder given for a file, a full
    disk, no permission), naming the path (the error's, else ``output``, the file the command was writing);
    None for any other (a bug, reported as one).

    Example:
        >>> said = environment_error(IsADirectoryError(errno.EISDIR, "Is a directory", "out"))
        >>> str(said), said.zh
        ("out: is a folder; give a file's path", 'out：是一个文件夹；请给出文件的路径')
    """
    said = _ENVIRONMENT.get(exc.errno or 0)
    if said is None:
        return None
    named = exc.filename if exc.filename is not None else output
    where = "" if named is None else str(named)
    return Words(f"{where}: {said[0]}" if where else said[0], f"{where}：{said[1]}" if where else said[1])


def _internal(args: argparse.Namespace, err: IO[str]) -> int:
    """A bug of ours: say so, keep the traceback, and never exit as --fail-on does."""
    exc = sys.exc_info()[1]
    said = f"{type(exc).__name__}: {exc}"  # Python's own words, in English
    err.write(said_line(Words(
        f"internal error in '{args.command}': {said}\nthis is a bug in rlvitals, not in your run; please "
        "report it with the command and the traceback below",
        f"'{args.command}' 命令内部出错：{said}\n这是 rlvitals 自身的程序错误，不是你的训练的问题；"
        "请连同命令和下面的 traceback 一起报告"), lang_of(args)) + traceback.format_exc())
    return EXIT_INTERNAL


def run() -> None:
    """Console-script entry point.

    After a :data:`ONE_SHOT` command the process ends at once, its output flushed, without Python's
    teardown of every module and object (a tenth of a second after a long run's diagnosis, most of it
    polars'): as mypy does. Not when Ray was started (its cluster is stopped at exit), and not after the
    other commands, whose trackers, servers and models are closed at exit."""
    command = None
    if sys.argv[1:2] and sys.argv[1] in ONE_SHOT:  # its memory goes back with the process: keep what it frees
        from ._memory import keep_freed_memory

        keep_freed_memory()
    try:
        code, command = _main(None, None, None)
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `rlvitals … | head` closed the pipe: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    if command in ONE_SHOT and "ray" not in sys.modules:
        os._exit(code)
    raise SystemExit(code)

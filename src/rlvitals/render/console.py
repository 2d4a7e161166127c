"""The Rich console every terminal view prints on, and its width when the output is not a terminal."""

from __future__ import annotations

import io

from rich.console import Console

__all__ = ["WIDTH", "console"]

#: width when the output is not a terminal (files, pipes, tests)
WIDTH = 110


def console(buf: io.StringIO, color: bool, width: int = WIDTH) -> Console:
    """A rich console writing into ``buf``: colour only for a terminal, no environment lookups.

    >>> buf = io.StringIO()
    >>> console(buf, False).print("step 5"); buf.getvalue()
    'step 5\\n'
    """
    return Console(file=buf, width=width, force_terminal=color, color_system="standard" if color else None,
                   highlight=False, soft_wrap=False, _environ={})

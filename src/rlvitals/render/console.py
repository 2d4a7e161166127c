"""The Rich console every terminal view prints on, its width when the output is not a terminal, and how a
view prints a passage that may hold a path: wrapped at spaces, the path never cut."""

from __future__ import annotations

import io
import re

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

__all__ = ["WIDTH", "console", "print_kept", "print_named", "wrapped_whole"]

#: width when the output is not a terminal (files, pipes, tests)
WIDTH = 110
_WORD = re.compile(r"\S+")


def console(buf: io.StringIO, color: bool, width: int = WIDTH) -> Console:
    """A rich console writing into ``buf``: colour only for a terminal, no environment lookups.

    >>> buf = io.StringIO()
    >>> console(buf, False).print("step 5"); buf.getvalue()
    'step 5\\n'
    """
    return Console(file=buf, width=width, force_terminal=color, color_system="standard" if color else None,
                   highlight=False, soft_wrap=False, _environ={})


def _too_long(plain: str, width: int) -> bool:
    """Whether a word of ASCII in ``plain`` (a path, a URL, a metric key) is wider than a line."""
    return any(len(word) > width and word.isascii() for word in plain.split())


def _cuts(plain: str, width: int) -> list[int]:
    """Where one line of text is cut into lines of at most ``width`` cells: before a word that does not fit,
    never inside a word of ASCII (it stays whole, on a line of its own if need be); a run of wide characters
    (Chinese, with no spaces) wider than a line is cut between two of them, as rich folds it."""
    cuts: list[int] = []
    start = col = end = 0  # the current line's start, its width so far, where its last word ends
    for m in _WORD.finditer(plain):
        word, gap = m.group(), cell_len(plain[end:m.start()])
        if plain[start:m.start()].strip() and col + gap + cell_len(word) > width:
            cuts.append(m.start())
            start, col, gap = m.start(), 0, 0
        if word.isascii() or col + gap + cell_len(word) <= width:
            col += gap + cell_len(word)
        else:
            for i, char in enumerate(word):
                if col + gap + cell_len(char) > width and col:
                    cuts.append(m.start() + i)
                    start, col, gap = m.start() + i, 0, 0
                col += gap + cell_len(char)
                gap = 0
        end = m.end()
    return cuts


def wrapped_whole(text: Text, width: int) -> list[Text]:
    """``text`` cut at spaces into lines of at most ``width`` cells, but a word of ASCII wider than that (a
    path, a URL) kept whole on a line of its own, longer than the width.

    >>> [t.plain for t in wrapped_whole(Text("read /runs/exp-2024/train.log twice"), 12)]
    ['read', '/runs/exp-2024/train.log', 'twice']
    """
    lines: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        for part in line.divide(_cuts(line.plain, width)):
            part.rstrip()
            lines.append(part)
    return lines


def print_kept(con: Console, text: Text, indent: int = 0) -> None:
    """Print ``text`` as rich would (wrapped to the console's width, ``indent`` cells in), except that a path, a
    URL or any other word of ASCII too wide for a line is never cut: it is printed whole on a line of its own,
    and a terminal narrower than it folds it on the screen only (copied, it is one line)."""
    width = max(con.width - indent, 1)
    if not _too_long(text.plain, width):
        con.print(Padding(text, (0, 0, 0, indent), expand=False) if indent else text)
        return
    for line in wrapped_whole(text, width):
        con.print(Text(" " * indent) + line, crop=False, no_wrap=True, overflow="ignore")


def print_named(con: Console, name: Text, rest: Text) -> None:
    """A view's first line: a run's ``name`` (a path, maybe with spaces) and what follows it, on one line when
    both fit; else the name alone and whole on its line, the rest under it, indented.

    >>> buf = io.StringIO()
    >>> print_named(console(buf, False, 30), Text("runs/exp-1/train.log"), Text("verdict: FAIL"))
    >>> buf.getvalue()
    'runs/exp-1/train.log\\n  verdict: FAIL\\n'
    """
    if cell_len(name.plain) + 2 + cell_len(rest.plain) <= con.width:
        con.print(name + "  " + rest)
        return
    con.print(name, crop=False, no_wrap=True, overflow="ignore")
    print_kept(con, rest, indent=2)

"""Printing a passage that may hold a path: wrapped at spaces as rich wraps it, the path never cut, however
narrow the width; Chinese (no spaces) still folded between characters."""

from __future__ import annotations

import io

from rich.padding import Padding
from rich.text import Text

from rlvitals.render.console import console, print_kept, wrapped_whole

PATH = "/data/experiments-2026/grpo-qwen25-7b-rho1.00-seed43/attempt-003/rho1.00_seed43.log"


def _kept(text: Text, width: int, indent: int = 0) -> str:
    buf = io.StringIO()
    print_kept(console(buf, False, width), text, indent)
    return buf.getvalue()


def _rich(renderable: object, width: int) -> str:
    buf = io.StringIO()
    console(buf, False, width).print(renderable)
    return buf.getvalue()


def test_a_path_wider_than_the_line_is_printed_whole_on_a_line_of_its_own() -> None:
    text = Text(f"read {PATH} twice: the second copy was skipped")
    out = _kept(text, 40)
    assert out.splitlines() == ["read", PATH, "twice: the second copy was skipped"]
    # rich alone cuts it in three
    assert PATH not in _rich(text, 40) and PATH not in _rich(text, 40).replace("\n", " ")
    indented = _kept(text, 40, indent=6).splitlines()
    assert indented[1] == " " * 6 + PATH and all(line.startswith(" " * 6) for line in indented)


def test_text_without_a_long_word_is_printed_exactly_as_rich_prints_it() -> None:
    text = Text("actor/entropy fell from 0.95 to 0.02 from step 180 (98% lower): the policy stopped exploring")
    for width in (30, 50, 110):
        assert _kept(text, width) == _rich(text, width)
        assert _kept(text, width, 8) == _rich(Padding(text, (0, 0, 0, 8), expand=False), width)


def test_chinese_without_spaces_is_still_folded_between_characters() -> None:
    zh = "熵在前五十步内坍缩：从零点九五降到零点零二，这么早的坍缩几乎总是以性能饱和告终"
    lines = [t.plain for t in wrapped_whole(Text(f"{zh} {PATH}"), 30)]
    assert PATH in lines and all(len(line) * 2 <= 30 for line in lines if line != PATH)
    assert "".join(line for line in lines if line != PATH) == zh


def test_styles_follow_the_words_they_were_on() -> None:
    text = Text("verdict: ")
    text.append("FAIL", style="bold red")
    text.append(f" {PATH}")
    lines = wrapped_whole(text, 20)
    assert [t.plain for t in lines] == ["verdict: FAIL", PATH]
    assert lines[0].spans[0].style == "bold red" and lines[0].plain[lines[0].spans[0].start:] == "FAIL"

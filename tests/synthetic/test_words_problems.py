"""make_problems refuses a bad count or source in English (the value of the message) and in Chinese."""

from __future__ import annotations

import pytest

from rlvitals.synthetic.word_problems import make_problems
from rlvitals.words import in_lang


def test_a_negative_count_is_refused_in_both_languages() -> None:
    with pytest.raises(ValueError, match=r"^make_problems: n=-1 must be zero or a positive number of problems$") as bad:
        make_problems(-1, seed=0)
    assert in_lang(bad.value.args[0], "zh") == "make_problems：n=-1，题目数应为 0 或正整数"


@pytest.mark.parametrize("sources", [("arith/three_step",), ()])
def test_an_unknown_or_missing_source_is_refused_in_both_languages(sources: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match=r"^make_problems: sources=\[.*\]; expected one or more of ") as bad:
        make_problems(2, seed=0, sources=sources)
    assert in_lang(bad.value.args[0], "zh") == (f"make_problems：sources={list(sources)!r}；应为 "
                                                "['arith/one_step', 'arith/two_step'] 中的一个或多个")

"""How a terminal view says a passage with a head word ("note", "skipped"), in either language.

The readers write their notes and skip reasons in English, and only some of them in Chinese too
(:class:`~rlvitals.words.Words`); a Chinese view marks the others as English originals, as the HTML report does.
"""

from __future__ import annotations

from rich.text import Text

from ..words import in_lang, translated

__all__ = ["ENGLISH_ORIGINAL", "said", "zh_said"]

#: how the Chinese views mark a passage written in English only (the readers' notes and skip reasons, an
#: alias's note in the catalog)
ENGLISH_ORIGINAL = "（英文原文）"


def zh_said(head: str, text: str) -> str:
    """``head：text`` in Chinese: the text's Chinese where it has one (:class:`~rlvitals.words.Words`), else the
    English, marked as the original (a message rlvitals did not write, such as a training's own exception).

    >>> from rlvitals.words import Words
    >>> zh_said("说明", Words("3 lines", "3 行")), zh_said("说明", "plain")
    ('说明：3 行', '说明（英文原文）：plain')
    """
    return f"{head}：{in_lang(text, 'zh')}" if translated(text) else f"{head}{ENGLISH_ORIGINAL}：{text}"


def said(head: str, text: str, lang: str, style: str = "") -> Text:
    """``head text`` in English, :func:`zh_said` in Chinese, the head word in ``style`` (never the text: a
    reader's words are printed as they are, brackets included).

    >>> from rlvitals.words import Words
    >>> said("note", "a.log: 3 lines", "en").plain, said("说明", Words("3 lines", "3 行"), "zh").plain
    ('note a.log: 3 lines', '说明：3 行')
    """
    if lang == "zh":
        rest = zh_said("", text)
        return Text.assemble((head, style), rest)
    return Text.assemble((head, style), f" {text}")

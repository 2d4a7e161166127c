"""A sentence shown to a user, in English and in Chinese.

Error messages, readers' notes and skip reasons are written where the problem is found, long before anyone
knows the language they will be shown in. :class:`Words` carries both: it *is* the English string (so logs,
JSON output, ``str(exc)`` and comparisons see English, as before) and keeps the Chinese beside it, which
:func:`in_lang` picks when the user asked for ``--lang zh``.

Example:
    >>> w = Words("3 lines skipped", "跳过了 3 行")
    >>> w == "3 lines skipped", in_lang(w, "zh"), in_lang("plain text", "zh")
    (True, '跳过了 3 行', 'plain text')
    >>> in_lang(both(lambda s: "train.log:4: " + s, w), "zh")
    'train.log:4: 跳过了 3 行'
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Words", "both", "in_lang", "translated"]


class Words(str):
    """English (the string's own value) with its Chinese in ``zh``."""

    zh: str

    def __new__(cls, en: str, zh: str) -> Words:
        self = super().__new__(cls, en)
        self.zh = zh
        return self

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]  # pickling keeps the Chinese
        return str(self), self.zh


def in_lang(text: object, lang: str) -> str:
    """``text`` in ``lang``: the Chinese of :class:`Words` under ``"zh"``, otherwise the text itself."""
    if lang == "zh" and isinstance(text, Words):
        return text.zh
    return str(text)


def translated(text: object) -> bool:
    """Whether ``text`` has a Chinese version (a renderer marks the others as English originals)."""
    return isinstance(text, Words)


def both(shape: Callable[[str], str], text: str) -> str:
    """``shape`` applied to ``text`` in each language it has: ``Words`` stay ``Words``; a plain string gives
    a plain string (so a message from elsewhere, a library's own error, stays what it was)."""
    if isinstance(text, Words):
        return Words(shape(str(text)), shape(text.zh))
    return shape(text)

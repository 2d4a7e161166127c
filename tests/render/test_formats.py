"""``rlvitals formats``: every reader's format described, in English as the reader says it and in Chinese."""

from __future__ import annotations

from rlvitals.ingest import readers
from rlvitals.render.formats import FORMATS_ZH, render_formats


def test_every_reader_has_a_chinese_description() -> None:
    formats = list(dict.fromkeys(r.format for r in readers()))
    assert sorted(FORMATS_ZH) == sorted(formats)  # a reader added without its Chinese line fails here


def test_the_names_are_padded_to_the_longest_and_english_stays_the_readers() -> None:
    described = [(r.format, r.describes) for r in readers()]
    en = render_formats(described).splitlines()
    assert en[0] == f"{described[0][0]:<{max(len(f) for f, _ in described)}}  {described[0][1]}"
    zh = render_formats([("csv", "a CSV table"), ("unheard-of", "a new reader")], "zh").splitlines()
    assert zh[0] == f"csv         {FORMATS_ZH['csv']}" and zh[1] == "unheard-of  a new reader"

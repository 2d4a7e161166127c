"""What users read of the catalog and the checks names no project-internal document ("seed-000"):
the specifications are cited by what they are, or not at all."""

from __future__ import annotations

import io
import json
import re

from rlvitals.catalog.catalog import load_catalog
from rlvitals.checks import load_checks
from rlvitals.cli import main

JARGON = re.compile(r"\bseeds?\b|seed-\d+", re.IGNORECASE)


def test_no_metric_text_or_alias_note_names_a_seed() -> None:
    said = []
    for metric in load_catalog().metrics.values():
        for lang in ("en", "zh"):
            text = metric.text(lang)
            said += [(metric.key, s) for s in (text.name, text.meaning, text.read) if JARGON.search(s or "")]
        said += [(metric.key, a.note) for a in metric.aliases if a.note and JARGON.search(a.note)]
    assert not said


def test_no_check_message_or_advice_names_a_seed() -> None:
    said = []
    for check in load_checks():
        for text in (check.en, check.zh):
            words = [text.title, text.advice, *text.messages.values(), *text.advices.values()]
            said += [(check.id, w) for w in words if JARGON.search(w)]
    assert not said


def test_explain_cites_the_specifications_by_what_they_are() -> None:
    """The source is an entry a reader can open in the repository, then where the metric is named."""
    out = io.StringIO()
    assert main(["explain", "actor/entropy", "--json"], out=out, err=io.StringIO()) == 0
    assert not JARGON.search(out.getvalue())
    assert json.loads(out.getvalue())["source"] == (
        "docs/reading-rules.md#entropy — metric dictionary §2.3, §11, §12; multi-scale view §2 (token entropy), §6, "
        "§8 (L2)")

"""docs/ is reference, not a diary: no machine paths, no research-diary markers, and every format
reference under docs/formats/ is linked from the overview docs/formats.md.

A path such as ``/tmp/x`` or ``/work/main`` names one machine's setup: a reader elsewhere cannot follow
it, so a doc says what was found (with the version it holds for), not where it was tried.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
OVERVIEW = DOCS / "formats.md"
REFERENCES = DOCS / "formats"

#: an absolute path into a machine's scratch, work or home folders (``$HOME/.x`` and ``~/.cache`` are fine)
MACHINE_PATH = re.compile(r"(?<![\w.~$-])/(?:tmp|work|home|root)/")
#: what research notes written as a diary say, which a reference does not
DIARY = re.compile(
    r"date of check|research notes of|throwaway (?:venv|setup|env)|\bsession date"
    r"|(?<![\w'])I (?:tested|ran|installed|copied|grepped|saw|did not|could not|checked|indexed)\b",
    re.IGNORECASE,
)


def _docs() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*") if p.is_file() and p.suffix in {".md", ".txt", ".rst"})


def _hits(pattern: re.Pattern[str], path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]


def test_there_are_docs_to_check() -> None:
    assert OVERVIEW in _docs()
    assert sorted(REFERENCES.glob("*.md")), "docs/formats/ holds no reference"


@pytest.mark.parametrize("path", _docs(), ids=lambda p: str(p.relative_to(DOCS)))
def test_no_machine_paths(path: Path) -> None:
    assert not _hits(MACHINE_PATH, path), "a machine path in a doc:\n" + "\n".join(_hits(MACHINE_PATH, path))


@pytest.mark.parametrize("path", _docs(), ids=lambda p: str(p.relative_to(DOCS)))
def test_no_diary_markers(path: Path) -> None:
    assert not _hits(DIARY, path), "a research-diary marker in a doc:\n" + "\n".join(_hits(DIARY, path))


def _links(path: Path) -> set[Path]:
    """The local files a markdown file links to (``[text](target)``, anchors dropped), resolved."""
    targets = re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8"))
    return {(path.parent / t.split("#", 1)[0]).resolve() for t in targets
            if not re.match(r"[a-z][a-z0-9+.-]*:", t) and t.split("#", 1)[0]}


@pytest.mark.parametrize("reference", sorted(REFERENCES.glob("*.md")), ids=lambda p: p.name)
def test_every_reference_is_linked_from_the_overview(reference: Path) -> None:
    assert reference.resolve() in _links(OVERVIEW), f"docs/formats.md does not link to formats/{reference.name}"


def test_the_overviews_links_to_references_exist() -> None:
    missing = sorted(str(p) for p in _links(OVERVIEW) if p.parent == REFERENCES.resolve() and not p.is_file())
    assert not missing, f"docs/formats.md links to references that do not exist: {missing}"


def test_the_checks_catch_what_they_are_for() -> None:
    assert MACHINE_PATH.search("a venv at /tmp/x_venv") and MACHINE_PATH.search("`/work/main/.venv`")
    assert MACHINE_PATH.search("(/home/user/run)") and MACHINE_PATH.search("/root/.cache")
    assert not MACHINE_PATH.search("~/.cache/huggingface/trackio") and not MACHINE_PATH.search("$HOME/.clearml/x")
    assert not MACHINE_PATH.search("src/rlvitals/work/x") and not MACHINE_PATH.search("../shared/seeds/")
    assert DIARY.search("Date of check: 2026-12-03") and DIARY.search("I tested it in a throwaway venv")
    assert not DIARY.search("Aim 3.29.1 writes each column as its own put")
    assert _links(OVERVIEW), "no links read from docs/formats.md"

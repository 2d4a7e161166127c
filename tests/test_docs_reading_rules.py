"""docs/reading-rules.md is where the rules the code applies are written down, and the code points at it: every
anchor a check, a link, a metric or a comment names is there; every check has an entry that quotes every one of
its parameters with its default; every link is named; and no source outside the repository is cited — neither by
the doc nor by the package (the specifications it was written from are cited through the doc, never by file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlvitals.catalog.catalog import load_catalog
from rlvitals.catalog.lookup import RULES_DOC, cited
from rlvitals.checks import Check, load_checks
from rlvitals.story import load_links

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / RULES_DOC
TEXT = DOC.read_text(encoding="utf-8")
ANCHOR = re.compile(r'<a id="([^"]+)"></a>')

#: files of the package that still cite a specification by its file number, left to the split of the check
#: modules: each is rewritten with the anchors of docs/reading-rules.md, then removed from here (the final form
#: of this set is empty; a file listed here that no longer cites one fails the test, so the list stays the truth)
PENDING: set[str] = set()
#: a citation of a source a reader of the repository cannot open: a specification by its file number ("seed-000",
#: "seed 004"), the research notes ("fm §1.1", research/…) or the folder they live in
OUTSIDE = re.compile(r"seed[- ]?0\d\d|\bfm §|research/|shared/seeds|framework_metrics\.md|algorithms\.md|peers\.md",
                     re.IGNORECASE)
#: in the user docs, also the specifications named as the old docs named them: "the seeds", "the seed's …", their
#: folder (seeds/…, ../shared) — a doc names them "the metric dictionary" and "the multi-scale view" and points at
#: docs/reading-rules.md (a random seed — "a fixed seed", "seeds 0…N−1", "3 seeds" — is not a citation)
DOC_OUTSIDE = re.compile(OUTSIDE.pattern + r"|\bseeds/|\.\./shared\b|\bthe seeds\b|\bseeds'|\bthe seed's\b",
                         re.IGNORECASE)
#: the user docs: every page under docs/, the README and the contributor guide
USER_DOCS = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]


def _sections() -> dict[str, str]:
    """The doc's text from each anchor to the next one."""
    marks = list(ANCHOR.finditer(TEXT))
    return {m.group(1): TEXT[m.end(): nxt.start() if nxt else len(TEXT)]
            for m, nxt in zip(marks, [*marks[1:], None], strict=True)}


SECTIONS = _sections()


def _anchors(source: str) -> list[str]:
    return re.findall(r"#([a-z0-9]+(?:-[a-z0-9]+)*)", source)


def test_every_anchor_is_unique() -> None:
    anchors = ANCHOR.findall(TEXT)
    assert len(anchors) == len(set(anchors)), sorted(a for a in set(anchors) if anchors.count(a) > 1)


def test_every_anchor_the_code_names_is_in_the_doc() -> None:
    named = {(f"check {c.id}", a) for c in load_checks() for a in c.rule}
    named |= {(f"link {k.id}", a) for k in load_links().links for a in k.rule}
    named |= {(f"metric {m.key}", a) for m in load_catalog().metrics.values() for a in _anchors(m.source)}
    # links written out in code, data and docs: "docs/reading-rules.md#kl-band"
    files = [*sorted((ROOT / "src").rglob("*")), ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in files:
        if path.is_file() and path.suffix in {".py", ".toml", ".md", ".html", ".js"}:
            text = path.read_text(encoding="utf-8")
            named |= {(str(path.relative_to(ROOT)), a) for a in re.findall(r"reading-rules\.md#([a-z0-9-]+)", text)}
    # inside the doc: [kl-band](#kl-band)
    named |= {(RULES_DOC, a) for a in re.findall(r"\]\(#([a-z0-9-]+)\)", TEXT)}
    missing = sorted((who, a) for who, a in named if a not in SECTIONS)
    assert not missing, missing


@pytest.mark.parametrize("check", load_checks(), ids=lambda c: c.id)
def test_every_check_has_an_entry_with_its_numbers(check: Check) -> None:
    """The entry a check's ``rule`` names first says which checks apply it (with their layer) and quotes every
    parameter as ``name = default``, exactly as the check's record has it."""
    entry = SECTIONS[check.rule[0]]
    (checks_line,) = re.findall(r"^- Checks: (.*)$", entry, re.M)
    assert f"`{check.id}` ({check.layer})" in checks_line, (check.rule[0], checks_line)
    quoted = dict(re.findall(r"`([a-z_][a-z0-9_]*) = ([^`]+)`", entry))
    missing = sorted(set(check.params) - set(quoted))
    assert not missing, f"{check.rule[0]} does not quote {missing}"
    for name, default in check.params.items():
        assert float(quoted[name]) == float(default), (name, quoted[name], default)


def test_every_entry_names_checks_that_exist_and_apply_it() -> None:
    checks = {c.id: c for c in load_checks()}
    for anchor, entry in SECTIONS.items():
        for line in re.findall(r"^- Checks: (.*)$", entry, re.M):
            for cid in re.findall(r"`([a-z_]+)`", line):
                assert cid in checks and anchor in checks[cid].rule, (anchor, cid)


def test_every_entry_says_where_it_comes_from() -> None:
    for anchor, entry in SECTIONS.items():
        if re.search(r"^- Checks: ", entry, re.M):
            assert re.search(r"^- From: \S", entry, re.M), anchor


def test_every_link_is_named_under_the_entry_its_rule_names_first() -> None:
    for link in load_links().links:
        assert link.rule[0].startswith("links-"), link.id
        assert f"`{link.id}`" in SECTIONS[link.rule[0]], (link.id, link.rule[0])


def test_the_metrics_named_only_are_listed() -> None:
    named = {m.key for m in load_catalog().metrics.values() if "named-only" in _anchors(m.source)}
    listed = {k for k in re.findall(r"`([^`]+)`", SECTIONS["named-only"]) if "/" in k or "_" in k}
    assert named == listed, (sorted(named - listed), sorted(listed - named))


def test_explain_shows_a_source_a_reader_can_open() -> None:
    for metric in load_catalog().metrics.values():
        said = cited(metric.source)
        assert said.startswith(f"{RULES_DOC}#"), (metric.key, said)
        assert not OUTSIDE.search(said), (metric.key, said)


def test_the_doc_stands_alone() -> None:
    """English in the project's own words (nothing pasted from the specifications), and every path it names is
    in the repository: relative links resolve, nothing points outside."""
    assert not re.search(r"[\u4e00-\u9fff]", TEXT)
    assert not OUTSIDE.search(TEXT), OUTSIDE.search(TEXT)
    assert not re.search(r"\.\./\.\.|/work/|file://|\bhome/", TEXT)
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT):
        assert not target.startswith(("/", "http")), target
        assert (DOC.parent / target).resolve().is_relative_to(ROOT), target
        assert (DOC.parent / target).exists(), target
    for path in re.findall(r"`((?:src|tests|benchmarks|docs)/[^`*{ #]+)", TEXT):
        assert (ROOT / path).exists(), path


def test_no_citation_of_a_source_outside_the_repository_in_the_package() -> None:
    citing = {str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*")
              if p.is_file() and p.suffix in {".py", ".toml", ".md", ".html", ".js", ".txt"}
              and OUTSIDE.search(p.read_text(encoding="utf-8"))}
    assert citing <= PENDING, f"cite docs/reading-rules.md instead: {sorted(citing - PENDING)}"
    assert citing >= PENDING, f"done: remove from PENDING {sorted(PENDING - citing)}"


@pytest.mark.parametrize("text", [
    "Seed 000 is the metric dictionary, seed 004 the multi-scale view.",
    "\"Seed 004\" is the multi-scale spec (`seeds/004_*.txt` in the project's shared folder, laid beside the",
    "clone as `../shared/`); its sections are cited by number",
    "\"Research\" is `research/algorithms.md` in that folder.",
    "high and stable: the answer is the conclusion the reasoning reached (seed-004 §三, consistency",
    "and reports them on the six-layer dashboard in the seeds' reading order",
    "unless the seeds give a number (clip fraction 0.1–0.3, PPO KL 0.01–0.1, grad norm 10× normal, MFU 30 %)",
    "length × correctness with the seed's three-way reading, the",
])
def test_the_doc_pattern_catches_the_old_citations(text: str) -> None:
    assert DOC_OUTSIDE.search(text), text


@pytest.mark.parametrize("text", [
    "400 resamples from a fixed seed, so the same run always gives the same numbers",
    "N samples with seeds 0…N−1",
    "3 seeds × 2 logs: 0 steps lost",
    "the metric dictionary §2.4 ([kl-band](reading-rules.md#kl-band)); multi-scale view §4",
])
def test_the_doc_pattern_leaves_random_seeds_and_the_docs_own_names(text: str) -> None:
    assert not DOC_OUTSIDE.search(text), text


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_citation_of_a_source_outside_the_repository_in_the_docs(path: Path) -> None:
    """A user doc points at docs/reading-rules.md#… (and names a rule's origin as that page does: "metric
    dictionary §2.4", "multi-scale view §4"), never at the specifications' files or the names the old docs gave
    them."""
    found = [(n, m.group(0)) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if (m := DOC_OUTSIDE.search(line))]
    assert not found, f"{path.relative_to(ROOT)}: cite docs/reading-rules.md#<anchor> instead: {found}"

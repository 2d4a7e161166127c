"""docs/rollouts.md defines every per-step key analyze_rollouts outputs, and only those.

The key list comes from running the code on a rollout file with every column, so a key someone adds
to a metric family fails here until the doc defines it, and a key removed from the code fails here
until the doc drops it.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from rlvitals.cli import main
from rlvitals.rollout import by_source, schema
from rlvitals.rollout.analysis import RolloutAnalysis, analyze_rollouts

DOC = Path(__file__).resolve().parents[1] / "docs" / "rollouts.md"
KS = (1, 3, 16)  # 16 > every group: a k no group reaches
SIZES = {1: (1, 2, 3, 5, 8), 2: (8, 4, 4, 2), 3: (3, 3, 6, 1, 8)}  # rollouts per group, per step
#: every setting that adds keys (the CLI flags in CLI_OPTIONS say the same)
OPTIONS: dict[str, Any] = {"tool_call_cap": 2, "id_sources": ["gsm8k"], "max_response_length": 50}
CLI_OPTIONS = ["--tool-cap", "2", "--id-source", "gsm8k", "--max-response-length", "50"]


def _section(title: str) -> str:
    """The text of one ``## title`` section of the doc, up to the next ``## `` heading."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def documented_keys() -> set[str]:
    """Keys of the definition tables: rows of '## Per-step keys' whose first cell is a backticked key."""
    return set(re.findall(r"^\| `([^`]+)` \|", _section("Per-step keys"), flags=re.MULTILINE))


def template(key: str) -> str:
    """A concrete output key in the doc's templated form: pass@4 -> pass@{k}, distinct_2 -> distinct_{n}."""
    parts = by_source.split_key(key)
    if parts is not None:
        return f"source/{{source}}/{parts[1]}"
    key = re.sub(r"@\d+$", "@{k}", key)
    key = re.sub(r"/distinct_\d+$", "/distinct_{n}", key)
    key = re.sub(r"_length/(?:p10|p50|p90|max)$", "_length/{dist}", key)
    key = re.sub(r"^group/reward_std/p\d+$", "group/reward_std/{quantile}", key)
    key = re.sub(r"^group/reward_std/band/.+$", "group/reward_std/band/{sigma_band}", key)
    return re.sub(r"/q\d+$", "/q{b}", key)


def _record(step: int, g: int, s: int) -> dict[str, Any]:
    """One rollout with every column of the table; outcomes vary with (step, group, sample)."""
    ok = (step + g * s) % 3 != 0
    answer = None if s == 2 else ("42" if ok else f"4{s}")
    think = " ".join(["check", "the", "sum", "again"] * (1 + s % 3)) + f" maybe {answer}"
    calls = [f"search(q{g})"] * (1 + s % 2) + ([f"open({s})"] if g % 2 else [])
    n_tok = 4 + s
    response = f"<think>{think}</think> <answer>{answer}</answer>" if s % 4 else f"just {answer} {s}"
    return {
        "step": step, "group": f"p{g}", "sample": s, "prompt": f"question {g}", "response": response,
        "score": 1.0 if ok else (0.5 if g == 3 else 0.0), "correct": ok, "answer": answer, "target": "42",
        "source": "gsm8k" if g % 2 else "math", "split": "train" if g < 3 else "ood",
        "length": 20 + 7 * s + g, "truncated": s == 7, "advantage": (0.5 if ok else -0.5) * (1 + g % 2),
        "tool_calls": calls, "actions": ["left", "up", "left"][: 1 + s % 3], "states": [f"s{g}", f"s{s % 3}"],
        "token_entropy": [((step * 7 + g * 3 + s + t) % 11) / 5 for t in range(n_tok)],
        "token_logprob": [-((g + s + t) % 5) / 4 for t in range(n_tok)],
        "token_advantage": [(0.5 if ok else -0.5) + t / 100 for t in range(n_tok)],
        "token_old_logprob": [-((g + s + t) % 5) / 4 - 0.01 * (step + 1) for t in range(n_tok)],
        "token_rollout_logprob": [-((g + s + t) % 5) / 4 - 0.02 for t in range(n_tok)],
        # the response cut into n_tok pieces: token strings aligned with the per-token lists
        "tokens": [response[t * len(response) // n_tok:(t + 1) * len(response) // n_tok] for t in range(n_tok)],
    }


@pytest.fixture(scope="module")
def rich_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generic JSONL rollout file whose columns carry the table's names, several steps, mixed group sizes."""
    path = tmp_path_factory.mktemp("rollouts") / "rollouts.jsonl"
    lines = [json.dumps(_record(step, g, s)) for step, sizes in SIZES.items()
             for g, size in enumerate(sizes) for s in range(size)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def analysis(rich_file: Path) -> RolloutAnalysis:
    return analyze_rollouts(rich_file, ks=KS, **OPTIONS)


def produced_keys(a: RolloutAnalysis) -> set[str]:
    return {template(c) for c in [*a.steps.columns, *a.overall]}


def test_the_rich_table_reaches_every_family(analysis: RolloutAnalysis) -> None:
    # a skipped family would hide its keys from the two tests below
    assert analysis.skipped == [], f"families skipped on the rich table: {analysis.skipped}; extend _record"
    assert analysis.rollouts is not None
    absent = sorted(set(schema.schema()) - set(analysis.rollouts.table.columns))
    assert not absent, f"the rich table lacks the schema column(s) {absent}; add them to _record"
    assert analysis.steps["step"].to_list() == sorted(SIZES)
    assert analysis.steps["rollouts"].to_list() == [sum(v) for v in SIZES.values()]


def test_every_output_key_is_defined_in_the_doc(analysis: RolloutAnalysis) -> None:
    missing = sorted(produced_keys(analysis) - documented_keys())
    assert not missing, (f"analyze_rollouts outputs {missing} but docs/rollouts.md does not define them; "
                         "add a row (key | definition | needs | read it as) under '## Per-step keys'")


def test_every_defined_key_is_output(analysis: RolloutAnalysis) -> None:
    stale = sorted(documented_keys() - produced_keys(analysis))
    assert not stale, (f"docs/rollouts.md defines {stale} but analyze_rollouts on a table with every column "
                       "does not output them; remove the rows or fix the key names")


def test_templates_name_the_concrete_keys(analysis: RolloutAnalysis) -> None:
    cols = set(analysis.steps.columns)
    assert {"pass@1", "pass@3", "pass@16", "maj@3", "reasoning/self_consistency_gap@3"} <= cols
    assert {f"diversity/distinct_{n}" for n in (1, 2, 3, 4)} <= cols
    assert {f"rollout/correct_by_length/q{b}" for b in (1, 2, 3, 4)} <= cols
    assert template("g_pass@16") == "g_pass@{k}" and template("rollout/tool_calls/std") == "rollout/tool_calls/std"


def test_the_doc_lists_every_table_column() -> None:
    listed = set(re.findall(r"^\| (\w+) \| \w+", _section("The rollout table"), flags=re.MULTILINE)) - {"column"}
    assert listed == set(schema.schema()), (f"columns of rollout/schema.py missing from the doc: "
                                          f"{sorted(set(schema.schema()) - listed)}; not in the schema: "
                                          f"{sorted(listed - set(schema.schema()))}")


def test_json_schema_matches_the_cli(rich_file: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(rich_file), "--json", "--k", ",".join(map(str, KS)), *CLI_OPTIONS],
                out=out, err=err) == 0
    doc = json.loads(out.getvalue())
    # nothing left unread and, with every option given, nothing left uncomputed
    assert doc["skipped"] == {"count": 0, "reasons": []} and doc["not_computed"] == []
    section = _section("`rlvitals rollouts --json`")
    step = doc["steps"][0]
    for name in [*doc, *step, *step["zero_variance"], *step["length_reading"], *step["sources"]["math"]]:
        assert f'"{name}"' in section, f"the --json key {name!r} is not in the doc's schema"
    assert set(doc) == {"path", "steps", "overall", "skipped", "not_computed", "notes"}
    assert doc["overall"]["step"] is None
    # the doc says NaN is written as null: no group reaches k = 16
    assert step["pass@k"]["16"] is None and step["pass@k"]["1"] is not None
    undefined = sorted({template(k) for k in step["metrics"]} - documented_keys())
    assert not undefined, f"--json metrics {undefined} are not defined in docs/rollouts.md"


def test_every_series_key_is_a_catalog_key(analysis: RolloutAnalysis) -> None:
    # Run.with_series refuses keys the catalog does not know, so `diagnose --rollouts` would fail
    from rlvitals.catalog.catalog import load_catalog

    catalog = load_catalog()
    unknown = sorted(k for k in analysis.series().columns if k != "step" and catalog.find(k) is None)
    assert not unknown, f"series {unknown} have no catalog entry; add one to src/rlvitals/catalog/catalog.toml"

"""Degenerate-text metrics of the rollouts (rlvitals.rollout.degeneration): the long-run and non-word rules on
real text in several scripts (and constructed garbage, said so), against a plain reference for the long run,
the mergeable state (shards equal the whole, bit for bit), and the keys in ``analyze_rollouts`` and
``rlvitals rollouts --json``."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from rlvitals.cli import main
from rlvitals.rollout import degeneration as D
from rlvitals.rollout.analysis import analyze_rollouts
from rlvitals.rollout.writers import write_verl_dump

ROOT = Path(__file__).resolve().parents[2]


def _reference_run(text: str) -> bool:
    """The long-run rule as a backtracking regex: a unit of 1–40 characters 4 times or more, over 32 or more."""
    return any(m.end() - m.start() >= D.RUN_CHARS and not m.group(1).isspace()
               for m in re.finditer(r"(.{1,40}?)\1{3,}", text, re.DOTALL))


@pytest.mark.parametrize("text", [
    "The answer is 4.", "!" * 32, "!" * 31, "ha" * 16, "Let me check again. " * 4, "Let me check again. " * 2,
    "x" + " " * 80 + "y", "| --- | --- |", "0." + "3" * 40, "中文" * 16, "a\nb\n" * 10, "",
    "def f():\n        return 1\n" * 2,
])
def test_long_run_agrees_with_a_plain_regex(text: str) -> None:
    assert D.has_long_run(text) == _reference_run(text)


def test_long_runs_of_many_texts_are_found_in_the_right_one() -> None:
    texts = ["plain words here", "ab" * 20, "", "tail " + "=" * 35, "short"]
    assert D.long_runs(texts).tolist() == [False, True, False, True, False]
    assert D.long_runs([]).tolist() == []


@pytest.mark.parametrize("word", [
    "hello", "naïve", "Straße", "Angstschweiß", "résumé", "Привет", "مرحبا", "שלום", "नमस्ते", "สวัสดี",
    "안녕하세요", "使用GRPO训练", "中文", "東京タワー", "Δx", "αβγ", "x²+y²", "12.5%", "LGBTQ", "HTTPS",
    "(word),", "—", "...", "**bold**", "\\frac{1}{2}", "$x$", "iPhone", "GitHub", "JavaScript", "rhythm",
])
def test_words_of_every_script_are_words(word: str) -> None:
    assert not D.nonword(word), word


@pytest.mark.parametrize("word", [
    "xkcdfgh", "hellоworld", "todayPositive", "reheAVwCo", "?!#@%$", "ab\ufffdcd", "ال�م", "mPUHRwere",
    "Приветhello", "bcdfghjk",
])
def test_garbage_is_non_words(word: str) -> None:
    """Glued and case-scrambled words as SmolLM2-135M writes them at temperature 2.5, mixed alphabets, broken bytes."""
    assert D.nonword(word), word


def test_chinese_text_is_no_garbage() -> None:
    zh = ("训练时最容易犯的错误，是把“loss 降了、reward 涨了”当成训练 healthy 的充分证据。这两个指标确实是必要条件，"
          "但远远不够。Reward 能在 policy 已经 mode collapse 的情况下继续涨。")
    row = D.degeneration_table(pl.DataFrame({"step": [1], "response": [zh]})).row(0, named=True)
    assert row["rollout/degenerate/nonword"] == 0.0 and row["rollout/degenerate/char_run"] == 0.0
    assert row["rollout/vocab/distinct"] > 30  # each Han character is a word


def test_the_table_on_constructed_rows() -> None:
    df = pl.DataFrame({"step": [1, 1, 2, 2], "response": ["the cat sat on the mat", "!" * 40, "a b a b", None]})
    rows = D.degeneration_table(df).rows(named=True)
    assert rows[0]["rollout/degenerate/char_run"] == 0.5
    assert rows[0]["rollout/degenerate/nonword"] == pytest.approx(0.0)  # "!!!…" is one sign repeated: no soup
    assert rows[0]["rollout/vocab/distinct"] == pytest.approx((5 + 1) / 2)
    assert rows[0]["rollout/vocab/ratio"] == pytest.approx((5 / 6 + 1.0) / 2)
    assert rows[1]["rollout/degenerate/char_run"] == 0.0 and rows[1]["rollout/vocab/ratio"] == 0.5  # null: no text


def test_shards_merge_to_the_whole_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "todayPositive", "中", "文", "!!!", "x" * 3]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 30)))) + ("ab" * 20 if i % 7 == 0 else "")
             for i in range(60)]
    df = pl.DataFrame({"step": [i % 3 for i in range(60)], "response": texts})
    whole = D.compute(D.update(None, df))
    parts = [D.update(None, df[i:i + 13]) for i in range(0, 60, 13)]
    state = parts[0]
    for part in parts[1:]:
        state = D.merge(state, part)
    assert D.compute(state).equals(whole)


def test_without_responses_the_family_says_what_it_needs() -> None:
    a = analyze_rollouts([{"step": 1, "prompt": "q", "score": 1.0}, {"step": 1, "prompt": "q", "score": 0.0}])
    assert any(str(r).startswith("degeneration:") and "'response'" in str(r) for r in a.skipped), a.skipped
    assert not set(D.KEYS) & set(a.steps.columns)


def test_rollouts_json_shows_the_metrics(tmp_path: Path) -> None:
    recs = [{"prompt": "2+2", "response": "The answer is 4.", "score": 1.0},
            {"prompt": "2+2", "response": "4 " + "!" * 40, "score": 1.0}]
    write_verl_dump(recs, tmp_path / "dump", 1)
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(tmp_path / "dump"), "--json"], out=out, err=err) == 0, err.getvalue()
    step = json.loads(out.getvalue())["steps"][0]
    assert step["metrics"]["rollout/degenerate/char_run"] == 0.5
    assert set(D.KEYS) <= set(step["metrics"])


def test_a_real_verl_dump_reads_its_loops_and_stays_under_the_bands() -> None:
    """The real veRL GSM8K dump (1,024 rollouts of one step, tests/rollout/data): 11 responses end in a loop
    ("FirstChildDuration\\n" written over and over, a quirk of that policy); its glued names ("FirstChildDuration",
    "FirstChildinlaw") are 1.4 % of the words — under the warning band, as a healthy step should be."""
    a = analyze_rollouts(str(ROOT / "tests/rollout/data/verl-gsm8k-multiturn-hecate"))
    row = a.steps.row(0, named=True)
    assert row["rollouts"] == 1024
    assert row["rollout/degenerate/char_run"] == pytest.approx(11 / 1024)
    assert 0.005 < row["rollout/degenerate/nonword"] < 0.05
    assert a.rollouts is not None
    texts = a.rollouts.table["response"].to_list()
    looped = [t for t, hit in zip(texts, D.long_runs(texts), strict=True) if hit]
    assert any("FirstChildDuration\nFirstChildDuration\nFirstChildDuration" in t for t in looped)

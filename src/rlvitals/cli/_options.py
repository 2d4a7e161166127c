"""The rollout options every command that reads rollouts shares, as data: ``_parser`` declares them, ``_common``
turns what was given into ``RolloutSettings``."""

from __future__ import annotations

__all__ = ["COLUMN_OPTIONS", "ROLLOUT_OPTIONS"]

#: the table columns a column option names (``--score COLUMN`` → ``args.col_score``), with what they hold
COLUMN_OPTIONS = {"step": "training step", "group": "prompt group id", "sample": "sample's index in its group",
                  "prompt": "prompt", "response": "response", "score": "reward", "correct": "correctness (bool or 0/1)",
                  "answer": "extracted answer", "target": "ground truth", "source": "data source",
                  "split": "split (train, val, ood …)", "length": "response length in tokens",
                  "truncated": "truncation flag", "advantage": "sequence advantage"}
#: the other rollout options: flag → ``args`` attribute (all default to None or False: not given)
ROLLOUT_OPTIONS = {"--k": "k", "--group-size": "group_size", "--reward-weights": "reward_weights", "--embed": "embed",
                   "--tool-cap": "tool_call_cap", "--max-response-length": "max_response_length",
                   "--id-source": "id_sources", "--ood-source": "ood_sources", "--think-tag": "think_tag",
                   "--answer-tag": "answer_tag", "--tool-tag": "tool_tag", "--engine": "engine",
                   "--address": "address"}

"""Rollout analytics: the rollout table, its readers, and metrics at the group, prompt, rollout and token scales."""

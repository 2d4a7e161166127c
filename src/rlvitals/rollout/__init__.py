"""Rollout analytics: the rollout table, its readers, and metrics at the group, prompt, rollout and token scales.

The face names what other packages use: reading dumps into the table (:mod:`.readers`), the column names
(:mod:`.schema`), analysing it (:mod:`.analysis`: mergeable states, and the one rule for which per-step
columns join a Run), the options of the command line (:mod:`.options`), the dump writers, and running work on
a Ray cluster (:mod:`.ray_engine`; Ray is imported only when used)."""


from __future__ import annotations

from .analysis import RolloutAnalysis, analyze, compute, join_series, step_json, step_series, table_options, update
from .answers import extract_answer, forced_answer, same_answer
from .groups import group_table
from .options import RolloutSettings
from .probe_results import PROBES_FILE, ProbeResults, read_probe_results, with_probe_results
from .ray_engine import run_each
from .readers import (
    ColumnFlags,
    Progress,
    RolloutSet,
    RolloutSource,
    dump_files,
    parse_reward_weights,
    read_rollouts,
    rollouts_from_frame,
    rollouts_from_records,
)
from .schema import ANSWER, CORRECT, GROUP, LENGTH, PROMPT, RESPONSE, SAMPLE, SCORE, STEP, TARGET, TRUNCATED
from .segments import SegmentTags, parse_tag
from .writers import write_trl_completions, write_verl_dump

__all__ = ["analyze", "ANSWER", "ColumnFlags", "compute", "CORRECT", "dump_files", "extract_answer", "forced_answer",
    "GROUP", "group_table", "join_series", "LENGTH", "parse_reward_weights", "parse_tag", "PROBES_FILE",
    "ProbeResults", "Progress", "PROMPT", "read_probe_results", "read_rollouts", "RESPONSE", "RolloutAnalysis",
    "rollouts_from_frame", "rollouts_from_records", "RolloutSet", "RolloutSettings", "RolloutSource", "run_each",
    "same_answer",
    "SAMPLE", "SCORE", "SegmentTags", "STEP", "step_json", "step_series", "table_options", "TARGET", "TRUNCATED",
    "update", "with_probe_results", "write_trl_completions", "write_verl_dump"]

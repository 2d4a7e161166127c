"""Rollout analytics: the rollout table, its readers, and metrics at the group, prompt, rollout and token scales.

The face names what other packages use: reading dumps into the table (:mod:`.readers`), the column names
(:mod:`.schema`), analysing it (:mod:`.analysis`: mergeable states, and the one rule for which per-step
columns join a Run), the options of the command line (:mod:`.options`), the dump writers, and running work on
a Ray cluster (:mod:`.ray_engine`; Ray is imported only when used)."""


from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .analysis import RolloutAnalysis, analyze, compute, join_series, step_json, step_series, table_options, update
    from .answers import extract_answer, forced_answer, same_answer
    from .extremes import EXTREME_WHY, described_extreme, extreme_rollouts
    from .groups import group_table
    from .needs import states_needed
    from .options import RolloutSettings
    from .pairing import Pairing, dump_folders, owners, pair
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
    from .tags import SegmentTags, parse_tag
    from .tool_schema import read_tool_schemas
    from .writers import write_trl_completions, write_verl_dump

__all__ = ["analyze", "ANSWER", "ColumnFlags", "compute", "CORRECT", "described_extreme", "dump_files", "dump_folders",
    "EXTREME_WHY", "owners", "pair", "Pairing",
    "extract_answer", "extreme_rollouts",
    "forced_answer",
    "GROUP", "group_table", "join_series", "LENGTH", "parse_reward_weights", "parse_tag", "PROBES_FILE",
    "ProbeResults", "Progress", "PROMPT", "read_probe_results", "read_rollouts", "RESPONSE", "RolloutAnalysis",
    "rollouts_from_frame", "rollouts_from_records", "RolloutSet", "RolloutSettings", "RolloutSource", "run_each",
    "same_answer",
    "SAMPLE", "SCORE", "SegmentTags", "states_needed", "STEP", "step_json", "step_series", "table_options", "TARGET",
    "read_tool_schemas", "TRUNCATED",
    "update", "with_probe_results", "write_trl_completions", "write_verl_dump"]


#: where each name of the face lives; a module is imported when one of its names is first asked for, so a
#: reader of one module (the answer parser, the schema) does not pay for the analysis, its fuzzy matching and
#: the shard driver
HOMES = {
    **dict.fromkeys(("RolloutAnalysis", "analyze", "compute", "join_series", "step_json", "step_series",
                     "table_options", "update"), "analysis"),
    **dict.fromkeys(("extract_answer", "forced_answer", "same_answer"), "answers"),
    **dict.fromkeys(("EXTREME_WHY", "described_extreme", "extreme_rollouts"), "extremes"),
    "group_table": "groups",
    "states_needed": "needs",
    "RolloutSettings": "options",
    **dict.fromkeys(("Pairing", "dump_folders", "owners", "pair"), "pairing"),
    **dict.fromkeys(("PROBES_FILE", "ProbeResults", "read_probe_results", "with_probe_results"), "probe_results"),
    "run_each": "ray_engine",
    **dict.fromkeys(("ColumnFlags", "Progress", "RolloutSet", "RolloutSource", "dump_files", "parse_reward_weights",
                     "read_rollouts", "rollouts_from_frame", "rollouts_from_records"), "readers"),
    **dict.fromkeys(("ANSWER", "CORRECT", "GROUP", "LENGTH", "PROMPT", "RESPONSE", "SAMPLE", "SCORE", "STEP",
                     "TARGET", "TRUNCATED"), "schema"),
    **dict.fromkeys(("SegmentTags", "parse_tag"), "tags"),
    "read_tool_schemas": "tool_schema",
    **dict.fromkeys(("write_trl_completions", "write_verl_dump"), "writers"),
}


def __getattr__(name: str) -> Any:
    home = HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # looked up each time, never kept here: a test that patches the module's name patches the face's too
    return getattr(import_module(f".{home}", __name__), name)

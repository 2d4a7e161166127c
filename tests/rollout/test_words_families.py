"""Why a rollout metric family could not be computed, and why a rollout setting is refused, in Chinese too.

The families raise ``ValueError(Words(english, chinese))`` where they find a column missing or a setting
wrong; the analysis keeps the Words as the family's skip reason, so ``rlvitals rollouts --lang zh`` can
show it. The tables here are real: records read by :func:`rlvitals.analyze_rollouts`, whose table is what
the analysis hands every family's ``update``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import rlvitals
from rlvitals.cli import main
from rlvitals.rollout import (
    by_source,
    diversity,
    groups,
    lengths,
    passk,
    prompts,
    segments,
    splits,
    step_groups,
    tokens,
)
from rlvitals.rollout.options import RolloutOptions, RolloutSettings, source_names
from rlvitals.rollout.tags import SegmentTags, parse_tag
from rlvitals.words import Words, in_lang, translated

#: scored rollouts without a response: no text for diversity, segments or lengths
SCORED = [{"step": 1, "prompt": "2+2", "score": s} for s in (1.0, 0.0)]
#: responses without a score or a correctness
UNSCORED = [{"step": 1, "prompt": "2+2", "response": r} for r in ("4", "5")]
#: per-token log-probs and advantages that do not align (2 values against 1)
MISALIGNED = [{"step": 1, "prompt": "2+2", "response": r, "score": 1.0, "token_logprob": [-0.1, -0.2],
               "token_advantage": [1.0]} for r in ("4", "5")]

Update = Callable[[pl.DataFrame], Any]
#: how every Chinese reason about a missing column ends: the columns the table has
HAS = "；表中只有这些列：{cols}"
#: (records, the family's update as analysis._families calls it, English start, Chinese with {cols})
CASES: list[tuple[str, list[dict[str, Any]], Update, str, str]] = [
    ("diversity", SCORED, lambda t: diversity.update(None, t, embed=None),
     "this metric needs the rollout column(s) ['response']", "这个指标需要 rollout 列 ['response']" + HAS),
    ("segments", SCORED, lambda t: segments.update(None, t, tags=SegmentTags(), tool_call_cap=None),
     "segment metrics need the rollout column(s) ['response']", "片段指标需要 rollout 列 ['response']" + HAS),
    ("length", SCORED, lambda t: lengths.update(None, t),
     "this metric needs the rollout column(s) ['length']", "这个指标需要 rollout 列 ['length']" + HAS),
    ("step_groups", SCORED, lambda t: step_groups.update(None, t),
     "step-level groups need the rollout column(s) ['states']", "步级分组需要 rollout 列 ['states']" + HAS),
    ("id_ood", SCORED, lambda t: splits.update(None, t),
     "this metric needs the rollout column(s) ['split']", "这个指标需要 rollout 列 ['split']" + HAS),
    ("sources", SCORED, lambda t: by_source.update(None, t, id_sources=()),
     "per-source metrics need the rollout column(s) ['source']",
     "按数据源的指标需要 rollout 列 ['source']（veRL 的 data_source；其他文件用 --source COLUMN）" + HAS),
    ("tokens", SCORED, lambda t: tokens.update(None, t),
     "token metrics need 'token_entropy'",
     "token 指标需要 'token_entropy'，或者 'token_logprob' 加 'token_advantage'（逐 token 的列表）" + HAS),
    ("group", UNSCORED, lambda t: groups.update(None, t, ks=(1, 2)),
     "group metrics need a 'score' or 'correct' column", "组指标需要 'score' 或 'correct' 列" + HAS),
    ("prompts", UNSCORED, lambda t: prompts.update(None, t),
     "prompt metrics need a 'score' or a 'correct' column",
     "prompt 指标需要 'score' 或 'correct' 列（有一个就够）" + HAS),
    ("length (no outcome)", UNSCORED, lambda t: lengths.update(None, t),
     "this metric needs the rollout column(s) ['correct']", "这个指标需要 rollout 列 ['correct']" + HAS),
    ("tokens (misaligned)", MISALIGNED, lambda t: tokens.update(None, t),
     "row 0: token_logprob has 2 values but token_advantage has 1",
     "第 0 行：token_logprob 有 2 个值，token_advantage 却有 1 个；两者必须逐个 token 对齐"),
]


def _words(exc: pytest.ExceptionInfo[ValueError]) -> Words:
    said = exc.value.args[0]
    assert isinstance(said, Words), f"English only: {said!r}"
    return said


@pytest.mark.parametrize(("records", "update", "english", "chinese"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_family_says_in_chinese_which_column_it_needs(records: list[dict[str, Any]], update: Update, english: str,
                                                        chinese: str) -> None:
    table = rlvitals.analyze_rollouts(records).rollouts.table
    with pytest.raises(ValueError, match="^" + re.escape(english)) as exc:
        update(table)
    assert _words(exc).zh == chinese.format(cols=table.columns)


def test_the_analysis_lists_the_families_not_computed_in_chinese() -> None:
    analysis = rlvitals.analyze_rollouts(SCORED)
    cols = analysis.rollouts.table.columns
    zh = [in_lang(reason, "zh") for reason in analysis.skipped]
    assert "diversity: 这个指标需要 rollout 列 ['response']" + HAS.format(cols=cols) in zh
    assert "segments: 片段指标需要 rollout 列 ['response']" + HAS.format(cols=cols) in zh
    assert "step_groups: 步级分组需要 rollout 列 ['states']" + HAS.format(cols=cols) in zh
    # every reason, the families' and the keys', has its Chinese (the English stays for JSON and logs)
    assert all(translated(reason) for reason in analysis.skipped), analysis.skipped
    assert "diversity: this metric needs the rollout column(s) ['response']; the table has " + str(cols) in \
        analysis.skipped


def test_a_group_too_large_for_maj_at_k_is_skipped_in_chinese() -> None:
    # 4096 rollouts of one prompt giving the same answer: maj@k's packed counts would overflow
    records = [{"step": 0, "prompt": "q", "response": "4", "answer": "4", "score": 1.0}] * 4096
    analysis = rlvitals.analyze_rollouts(records, ks=(1,))
    assert "group: maj@k 要求每组少于 4096 条 rollout；组更大时请去掉 answer 列" in \
        [in_lang(r, "zh") for r in analysis.skipped]
    assert "pass@1" not in analysis.steps.columns


@pytest.mark.parametrize(("make", "english", "chinese"), [
    (lambda: RolloutOptions(ks=(0,)), "ks must be positive integers, got (0,)", "ks 必须是正整数，给的是 (0,)"),
    (lambda: RolloutSettings(group_size=-1), "group_size must be a whole number of rollouts per prompt >= 1",
     "group_size 必须是 >= 1 的整数（每个 prompt 的 rollout 条数），给的是 -1"),
    (lambda: RolloutSettings(ks="every"), "ks must be positive integers or 'all'",
     "ks 必须是正整数或 'all'，给的是 'every'"),
    (lambda: RolloutSettings(tool_call_cap=0), "tool_call_cap must be a whole number >= 1",
     "tool_call_cap 必须是 >= 1 的整数（一条 rollout 最多可做的工具调用次数），给的是 0"),
    (lambda: RolloutSettings(max_response_length=0), "max_response_length must be a whole number of tokens >= 1",
     "max_response_length 必须是 >= 1 的整数（token 数），给的是 0"),
    (lambda: RolloutSettings(columns={"score": "reward"}), "columns must be a rollout.readers.ColumnMap",
     "columns 必须是 rollout.readers.ColumnMap，给的是 {'score': 'reward'}"),
    (lambda: RolloutOptions(segment_tags=("<a>", "</a>")), "segment_tags must be a rlvitals.rollout.SegmentTags",
     "segment_tags 必须是 rlvitals.rollout.SegmentTags，给的是 ('<a>', '</a>')"),
    (lambda: RolloutOptions(ood_sources=("math",)), "ood_sources ('math',) need id_sources",
     "ood_sources ('math',) 需要 id_sources：差距是 ID 减 OOD"),
    (lambda: RolloutOptions(id_sources=("gsm8k",), ood_sources=("gsm8k",)), "the data source(s) ['gsm8k'] are given",
     "数据源 ['gsm8k'] 同时被列为分布内和分布外"),
    (lambda: source_names("gsm8k"), "id_sources must be a list of data-source names",
     "id_sources 必须是数据源名称的列表，给的是 'gsm8k'"),
    (lambda: rlvitals.analyze_rollouts(SCORED, ks=(0, 1)), "ks must be positive integers, got (0, 1)",
     "ks 必须是正整数，给的是 (0, 1)"),
], ids=["ks", "group_size", "ks-word", "tool_call_cap", "max_response_length", "columns", "segment_tags",
        "ood-without-id", "both-sides", "source-string", "analyze_rollouts"])
def test_a_bad_setting_is_refused_in_chinese(make: Callable[[], object], english: str, chinese: str) -> None:
    with pytest.raises(ValueError) as exc:
        make()
    assert str(exc.value).startswith(english)
    assert _words(exc).zh == chinese


@pytest.mark.parametrize(("make", "chinese"), [
    (lambda: parse_tag("a b c"), "'a b c' 不是片段标签：请给出标签名（think 表示 <think>…</think>），"
                                 "或用空格隔开的开始标签和结束标签（'[THINK] [/THINK]'）"),
    (lambda: SegmentTags(think=("<t>", "<t>")), "SegmentTags.think 必须是两个不同且非空的标签，给的是 ('<t>', '<t>')"),
    (lambda: SegmentTags(answer=("<think>", "</think>")),
     "SegmentTags：think、answer 和工具调用片段各自需要专用的标签，给的是 think=('<think>', '</think>'), "
     "answer=('<think>', '</think>'), tool_call=('<tool_call>', '</tool_call>')"),
    (lambda: passk.pass_at_k([4], [1], 0), "k 必须是正整数，给的是 k=0"),
    (lambda: passk.pass_at_k([4], [5], 2),
     "每组都要满足 0 <= c <= n（n 条 rollout 中有 c 条正确）；给的 c 超出了这个范围"),
    (lambda: passk.g_pass_at_k([4], [1], 2, tau=1.5), "tau 必须在 [0, 1] 之内，给的是 1.5"),
    (lambda: passk.maj_at_k([2], [3], 1), "counts 与 correct 必须一一对应，且 0 <= correct[i] <= counts[i]"),
    (lambda: passk.maj_at_k_answers(["4"], [True, False], 1), "answers（1 个）与 correct（2 个）的长度必须相同"),
    (lambda: diversity.distinct_n(["a b"], 0), "n 必须 >= 1，给的是 0"),
    (lambda: diversity.state_coverage([[1]], n_states=0), "n_states 必须 >= 1，给的是 0"),
    (lambda: diversity.embedding_cosine(["a", "b"], lambda texts: [[1.0]]),
     "encode() 必须返回形状为 (2, d) 的数组，实际返回的形状是 (1, 1)"),
    (lambda: diversity.group_diversity(_texts(), unit="token"), "unit 必须是 'word' 或 'char'，给的是 'token'"),
    (lambda: diversity.group_diversity(_texts(), ns=(1, 0)), "distinct-n 的每个 n 都必须 >= 1，给的是 (1, 0)"),
    (lambda: lengths.correct_by_length([1.0], [1.0], bins=0), "bins 必须 >= 1，给的是 0"),
    (lambda: lengths.update(None, _texts(), bins=0), "bins 必须 >= 1，给的是 0"),
    (lambda: prompts.top_share([1.0], top=0), "top 必须在 (0, 1] 之内，给的是 0"),
    (lambda: prompts.update(None, _texts(), top=2.0), "top 必须在 (0, 1] 之内，给的是 2.0"),
    (lambda: tokens.forking_threshold([]), "forking_threshold 至少需要一个 token 熵值"),
    (lambda: tokens.logp_adv_cov([0.1, 0.2], [1.0]), "log-prob 与 advantage 的长度不同：(2,) 对 (1,)"),
    (lambda: splits.update(None, _texts(), by="prompt"), "by 必须是 'split' 或 'source'，给的是 'prompt'"),
    (lambda: groups.update(None, _texts(), ks=(0,)), "ks 必须是正整数，给的是 (0,)"),
], ids=["parse_tag", "tag-pair", "shared-tags", "pass-k", "pass-c", "tau", "maj-counts", "maj-answers", "distinct-n",
        "n_states", "encode", "unit", "ns", "bins", "bins-update", "top", "top-update", "forking", "cov", "split-by",
        "group-ks"])
def test_a_bad_argument_of_a_metric_is_refused_in_chinese(make: Callable[[], object], chinese: str) -> None:
    with pytest.raises(ValueError) as exc:
        make()
    assert _words(exc).zh == chinese


def _texts() -> pl.DataFrame:
    return rlvitals.analyze_rollouts([{"step": 1, "prompt": "q", "response": r, "score": s}
                                      for r, s in (("4", 1.0), ("5", 0.0))]).rollouts.table


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(json.dumps({"step": 1, "prompt": "2+2", "response": r, "score": s}) + "\n"
                            for r, s in (("4", 1.0), ("5", 0.0))), encoding="utf-8")
    return path


@pytest.mark.parametrize(("flags", "chinese"), [
    (["--id-source", ""], "rlvitals：id_sources 必须是数据源名称的列表，给的是 ('',)\n"),
    (["--think-tag", "x", "--answer-tag", "x"],
     "rlvitals：SegmentTags：think、answer 和工具调用片段各自需要专用的标签，给的是 think=('<x>', '</x>'), "
     "answer=('<x>', '</x>'), tool_call=('<tool_call>', '</tool_call>')\n"),
    (["--think-tag", "a b c"],
     "rlvitals：--think-tag 'a b c' 不是片段标签：请给出标签名（think 表示 <think>…</think>），"
     "或用空格隔开的开始标签和结束标签（'[THINK] [/THINK]'）\n"),
], ids=["empty-source", "shared-tags", "tag"])
def test_rollouts_refuses_a_bad_setting_in_chinese(dump: Path, flags: list[str], chinese: str) -> None:
    # the settings' own check (not one of the command line's): its Words reach stderr through the CLI
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(dump), *flags, "--lang", "zh"], out=out, err=err) == 2
    assert err.getvalue() == chinese and out.getvalue() == ""

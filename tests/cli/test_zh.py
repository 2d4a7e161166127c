"""With ``--lang zh`` a Chinese user reads Chinese: no line of ``diagnose``, ``explain`` or ``watch`` is
English prose. A line may hold what is not prose — metric keys, paths, file names, numbers, options,
acronyms (GRPO, KL), ``key=value`` from a config — and the terms of the trade that Chinese ML engineers
write in English (reward, rollout, token …), and after the mark ``（英文原文）`` what the readers and the
catalog's alias notes say in English only. Anything else in Latin letters is a string left untranslated.
"""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from rlvitals.checks import load_checks
from rlvitals.cli import main
from rlvitals.live import Confirm
from rlvitals.render import ENGLISH_ORIGINAL
from rlvitals.watch import WatchOptions, open_watcher
from rlvitals.watch.view import layers_table

#: English words Chinese ML writing keeps as they are (as the catalog's and the checks' Chinese texts do)
TERMS = frozenset({
    "reward", "rewards", "rollout", "rollouts", "token", "tokens", "prompt", "prompts", "batch", "loss", "clip",
    "fraction", "ratio", "advantage", "critic", "actor", "policy", "agent", "margin", "schedule", "baseline",
    "traceback", "verifier", "checkpoint", "micro", "padding", "offload", "on-policy", "clip-higher", "warm-up",
    "warmup", "hacking", "overlong", "filtering", "buffer", "logit", "log", "episode", "epoch", "chosen",
    "rejected", "vs", "dual-clip", "distinct-n", "nat", "nats", "dynamic", "sampling", "gini", "think", "answer",
    "split", "eval", "acc", "logps", "value", "log-prob", "step", "steps", "faithfulness",
})
#: names written in mixed case: frameworks, methods, acronyms with a small letter
NAMES = frozenset({
    "veRL", "CoT", "OpenRLHF", "FLOPs", "DrGRPO", "SimPO", "MoE", "ReMax", "NaN", "Inf", "AgentLoop", "Ctrl-C",
    "verl", "trl", "openrlhf", "Spearman",
})
#: the variables of a formula in a metric's meaning (1 − Var(returns − values) / Var(returns), π(v|context))
FORMULA = frozenset({"Var", "Cov", "returns", "values", "context"})
#: log-derived words: veRL's timing phases (timing_s/<phase>), a log's source names
LOGGED = frozenset({"gen", "testing", "ref", "adv"})
#: where a passage written in English by design starts: the readers' notes and skip reasons, an alias's
#: note; and evidence, whose field names are those of the --json output
MARKS = (ENGLISH_ORIGINAL, "（英文原文：", "证据（JSON 字段）")
_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*|\brlvitals(?: [a-z]+)?")  # an option, a command
_SETTING = re.compile(r"[\w./@-]+=[\w./@-]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./@{}<>'’+-]*")


def _allowed(word: str, ids: frozenset[str]) -> bool:
    if re.search(r"[/_@.{}<>0-9]", word) or len(word) == 1 or word in ids:
        return True  # a key, a path or file name, pass@k, L5, a check id, a variable
    if re.fullmatch(r"[A-Z][A-Z+]+", word) or word.lower() in TERMS or word in NAMES | FORMULA | LOGGED:
        return True
    return "-" in word and all(_allowed(part, ids) for part in word.split("-") if part)


#: a JSON parser's own words about a bad line, quoted inside a Chinese sentence (they are not rlvitals')
_PARSER = re.compile(r"JSON（[^）]*）")


def english_prose(text: str, names: Iterable[str] = ()) -> list[tuple[str, list[str]]]:
    """Every line of ``text`` with Latin-letter words that are not allowed, and those words; ``names``:
    identifiers the output at hand quotes (a metric's aliases as the frameworks log them)."""
    ids = frozenset(c.id for c in load_checks()) | frozenset(names)
    found = []
    for line in text.splitlines():
        said = line
        for mark in MARKS:
            said = said.split(mark, 1)[0]
        said = _PARSER.sub(" ", _SETTING.sub(" ", _OPTION.sub(" ", said)))
        bad = [w for w in (m.rstrip(".'’-") for m in _WORD.findall(said)) if not _allowed(w, ids)]
        if bad:
            found.append((line, bad))
    return found


def test_the_checker_catches_english_and_passes_chinese() -> None:
    assert english_prose("需要 actor/entropy 或 critic/grad_norm，本次训练没有记录") == []
    assert english_prose("· 跳过      L1         梯度爆炸\n  verl · GRPO · 1119 个训练步  结论：正常") == []
    assert english_prose("  说明（英文原文）：the rollouts carry no token counts") == []
    assert english_prose("  跳过：a.jsonl:4: 不是有效的 JSON（Expecting value at column 1）；这一行已跳过") == []
    assert english_prose("与配置一致（actor.optim.warmup_style=constant），加 --all 可全部列出") == []
    assert english_prose("    needs actor/entropy, which this run did not log") == [
        ("    needs actor/entropy, which this run did not log", ["needs", "which", "this", "run", "did", "not"])]
    assert english_prose("适用于 preference 训练；本次是 rl")[0][1] == ["preference", "rl"]
    assert english_prose("over training: falls smoothly")[0][1] == ["over", "training", "falls", "smoothly"]
    assert english_prose("trl · GRPO-style (group baseline, no critic)")[0][1] == ["GRPO-style", "group", "no"]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def _assert_chinese(text: str, names: Iterable[str] = ()) -> None:
    left = english_prose(text, names)
    assert not left, "English left in the Chinese output:\n" + "\n".join(f"{words}: {line}" for line, words in left)


#: real runs of every framework and family: veRL GRPO and PPO, veRL SFT, TRL GRPO, TRL ORPO (preference), a
#: notebook table, a TRL state file
RUNS = ("verl__verl_training_log__grpo_run_deepseek7b_llm.log", "verl__verl_training_log__ppo_run_deepseek7b_llm.log",
        "verl__verl-data__gemma-2-2b-it-sft-0.411.log", "trl-unsloth__notebooks__Qwen2.5_3B-GRPO.training_table.csv",
        "trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv",
        "trl__UnslothGRPO__checkpoint-250_trainer_state.json",
        "trl__ppo-vs-grpo-math-rlvr__grpo_matched_0p5b_seed123.trainer_log_history.json")


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("view", [["--all"], ["--markdown"]], ids=["terminal", "markdown"])
def test_diagnose_in_chinese_on_real_runs(real: Path, monkeypatch: pytest.MonkeyPatch, run: str,
                                          view: list[str]) -> None:
    # a relative path: a path longer than the terminal is broken mid-name, and a piece of a file name
    # ("on" of ".json") is not prose; what the test reads must not depend on where the clone lies
    monkeypatch.chdir(real)
    code, out, err = _cli("diagnose", "--lang", "zh", *view, run)
    assert code == 0 and err == "", err
    assert "跳过" in out  # the skip reasons are read too (--all, and the Markdown lists every check)
    _assert_chinese(out)


def test_the_list_of_checks_in_chinese() -> None:
    code, out, _ = _cli("diagnose", "--list-checks", "--lang", "zh")
    assert code == 0
    # the parameters in brackets are the config's names (key=value); the rest is the titles
    _assert_chinese(re.sub(r"\[[^\]]*\]", "", out))


@pytest.mark.parametrize("key", ["actor/entropy", "entropy_loss", "critic/kl", "actor/lr(1e-4)",
                                 "val-core/openai/gsm8k/acc/mean@4", "eval_loss", "perf/mfu/actor",
                                 "critic/vf_explained_var", "rewards/margins"])
def test_explain_in_chinese(key: str) -> None:
    code, out, err = _cli("explain", "--lang", "zh", key)
    assert code == 0 and err == "", err
    aliases = orjson.loads(_cli("explain", "--json", key)[1])["aliases"]
    logged = {w for a in aliases for w in _WORD.findall(a.get("name") or a["pattern"])}  # a key as it is logged
    _assert_chinese(out, logged)
    assert "所在层" in out and "正常走势" in out


def test_explain_list_and_a_near_miss_in_chinese() -> None:
    code, out, _ = _cli("explain", "--lang", "zh", "--list")
    _assert_chinese(out)
    assert code == 0 and out.split()[:4] == ["层", "尺度", "指标", "名称"]
    code, out, err = _cli("explain", "--lang", "zh", "actor/entrpy")
    assert code == 2 and out == ""
    assert err == ("rlvitals：'actor/entrpy' 既不是已收录的指标，也不是它们的别名。是不是想找 'actor/entropy'、"
                   "'actor/seq_entropy'、'actor/entropy_loss'？运行 'rlvitals explain --list' 可以查看全部指标。\n")


def test_watch_once_in_chinese(real: Path, tmp_path: Path) -> None:
    log = tmp_path / "trl-unsloth__notebooks__Qwen2.5_3B-GRPO.training_table.csv"
    shutil.copyfile(real / log.name, log)
    code, out, err = _cli("watch", "--once", "--lang", "zh", "--state", str(tmp_path / "w.sqlite"), str(log))
    assert code == 0 and err == "", err
    _assert_chinese(out)
    assert "警告 · 回复撞到长度上限被截断（response_clip_high）· 自第 1 步起，第 250 步时发现" in out


def test_the_watchers_banner_status_and_table_in_chinese(real: Path, tmp_path: Path) -> None:
    log = tmp_path / "verl__verl_training_log__ppo_run_deepseek7b_llm.log"
    shutil.copyfile(real / log.name, log)
    options = WatchOptions(lang="zh", exit_on="fail", confirm=Confirm(looks=1))
    watcher = open_watcher([log], [], tmp_path / "w.sqlite", options, out=io.StringIO(), err=io.StringIO())
    try:
        before = watcher.status(0.0)
        watcher.cycle()
        table = Console(file=io.StringIO(), width=110)
        table.print(layers_table(watcher.diagnoses, "zh"))
        shown = "\n".join([watcher.banner(), before, watcher.status(0.0), table.file.getvalue()])
    finally:
        watcher.close()
    _assert_chinese(shown)
    assert "正在监控" in shown and "还没有读取" in before and "已读" in shown


def test_diagnose_with_rollouts_in_chinese(real: Path, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    dump.mkdir()
    lines = [orjson.dumps({"input": f"Q{q}: {q}+{q}?", "output": f"#### {i}", "score": float(i % 2), "step": 1})
             .decode() for q in range(2) for i in range(4)]
    (dump / "1.jsonl").write_text("\n".join([*lines[:3], "not json", *lines[3:]]) + "\n", encoding="utf-8")
    code, out, err = _cli("diagnose", "--lang", "zh", "--rollouts", str(dump), str(real / RUNS[0]))
    assert code == 0 and err == "", err
    doc = orjson.loads(_cli("diagnose", "--json", "--rollouts", str(dump), str(real / RUNS[0]))[1])
    families = {line.split(": ", 1)[0] for line in doc["runs"][0]["rollouts"]["not_computed"]}
    _assert_chinese(out, {w for name in families for w in _WORD.findall(name)})  # as rollouts --json names them
    assert f"rollout 数据 {dump}：跳过了 1 行；" in out
    assert f"  跳过：{dump / '1.jsonl'}:4: 不是有效的 JSON（" in out  # the reader's reason, said in Chinese


def test_watch_sends_chinese_webhook_alerts(tmp_path: Path, hook: Any) -> None:
    """``watch --lang zh --alert webhook:URL`` to a real local receiver: every alert's header, fields and
    advice are Chinese; the header names the onset step and the step the finding was seen at."""
    from rlvitals.synthetic.simulate import Scenario, jsonl_lines

    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=120, collapse_at=80))))
    code, _, err = _cli("watch", "--once", "--lang", "zh", "--state", str(tmp_path / "w.sqlite"),
                        "--alert", f"webhook:{hook.url}", str(log))
    assert code == 0 and err == "", err
    assert hook.received
    for _, body in hook.received:
        header = body["blocks"][0]["text"]["text"]
        assert re.search(r"· (自第 \d+ 步起，第 120 步时发现|第 120 步)$", header), header
        # a root cause carries what followed it in a section of its own, between its message and its fields
        sections = [b for b in body["blocks"][1:] if b["type"] == "section"]
        table = next(b["fields"] for b in sections if "fields" in b)
        fields = [f["text"].split("\n")[0] for f in table]
        assert fields[:4] == ["*所在层*", "*状态*", "*起始步*", "*发现于第几步*"]
        assert body["blocks"][-1]["text"]["text"].startswith("*建议*\n")
        texts = [b["text"]["text"] for b in sections if "text" in b]
        assert all(t.startswith("*随后发生*\n") for t in texts[1:-1]), texts
        # what rlvitals writes around the checks' own texts (those are tested with the checks)
        shown = [header, *(f["text"] for f in table[:2]), body["embeds"][0]["title"]]
        _assert_chinese("\n".join(shown))


#: what ``formats --lang zh`` quotes as it is: products, and the literal lines of the logs it describes
PRODUCTS = {"MLflow", "SwanLab", "Trackio", "ClearML", "Aim", "SQLite", "TensorBoard", "Jupyter", "ipynb", "Trainer",
            "Parquet", "DeepSpeed-Chat", "MiniMind", "post-training-llm-small", "step", "data", "key", "is", "and",
            "kl", "tqdm"}


def test_formats_in_chinese() -> None:
    from rlvitals.ingest import readers

    code, out, err = _cli("formats", "--lang", "zh")
    formats = {r.format for r in readers()}
    assert code == 0 and err == "" and out.endswith("rlvitals 会自动识别格式；用 --format NAME 可以指定。\n")
    assert [line.split()[0] for line in out.splitlines()[:-1]] == list(dict.fromkeys(r.format for r in readers()))
    _assert_chinese(out, formats | PRODUCTS)
    assert _cli("formats")[1].splitlines()[-1] == "rlvitals finds the format itself; --format NAME forces one."


@pytest.mark.parametrize("run", RUNS)
def test_inspect_in_chinese_on_real_runs(real: Path, monkeypatch: pytest.MonkeyPatch, run: str) -> None:
    monkeypatch.chdir(real)  # a relative path, as in test_diagnose_in_chinese_on_real_runs
    code, out, err = _cli("inspect", "--lang", "zh", run)
    assert code == 0 and err == "", err
    doc = orjson.loads(_cli("inspect", "--json", run)[1])
    firsts = [line.split()[0] for line in out.splitlines() if line.split()]
    start = firsts.index("格式")  # after the title, which a long path wraps over two lines
    assert firsts[start:start + 5] == ["格式", "框架", "算法", "步数", "指标"]
    assert f"{doc['steps']} 个训练步" in out and f"{len(doc['metrics'])} 个标准指标：" in out
    logged = {w for key in doc["unmapped"] + doc["metrics"] for w in _WORD.findall(key)}  # keys as logged
    _assert_chinese(out, logged | {doc["format"], doc["framework"], doc["algorithm"]})
    assert orjson.loads(_cli("inspect", "--json", "--lang", "zh", run)[1]) == doc  # JSON: no language


def test_inspect_of_a_crashed_run_in_chinese(tmp_path: Path) -> None:
    log = tmp_path / "crash.log"
    log.write_text("step:1 - actor/entropy:0.5 - actor/pg_loss:0.1 - critic/score/mean:0.2\n"
                   "step:2 - actor/entropy:0.4 - actor/pg_loss:0.1 - critic/score/mean:0.3\n"
                   "Traceback (most recent call last):\n  File \"main.py\", line 3, in <module>\n"
                   "torch.OutOfMemoryError: CUDA out of memory.\n", encoding="utf-8")
    code, out, err = _cli("inspect", "--lang", "zh", str(log))
    assert code == 0, err
    crash = next(line for line in out.splitlines() if line.startswith("崩溃"))
    assert crash.startswith("崩溃    在第 2 步之后中断（英文原文）：")
    _assert_chinese(out, {"verl-console", "grpo"})  # the format and the algorithm's id ([grpo]) are names


def _rollouts_dump(tmp_path: Path) -> Path:
    from report.test_rollout_browser import write_dump

    write_dump(tmp_path / "dump")
    return tmp_path / "dump"


@pytest.mark.parametrize("verbose", [[], ["--verbose"]], ids=["folded", "verbose"])
def test_rollouts_in_chinese(tmp_path: Path, verbose: list[str]) -> None:
    dump = _rollouts_dump(tmp_path)
    code, out, err = _cli("rollouts", "--lang", "zh", *verbose, str(dump))
    assert code == 0 and err == "", err
    doc = orjson.loads(_cli("rollouts", "--json", str(dump))[1])
    # --verbose: under its heading (which says the reasons are English originals) each reason as it is
    said = out.split("  没有算出的指标（", 1)[0]
    _assert_chinese(said, {w for line in doc["not_computed"] for w in _WORD.findall(line.split(": ", 1)[0])})
    lines = out.splitlines()
    assert lines[1] == "组尺度" and lines[2].split()[:4] == ["步", "组数", "rollout", "数"]
    assert "rollout 尺度" in lines and any(line.startswith(" 全部 ") for line in lines)
    assert "  长度与正确率（全部步）：" in out and "说明：rollout 没有 token 数：长度按字符计" in out
    assert (f"没有算出的指标（{len(doc['not_computed'])} 项）：" in out) == bool(verbose)
    assert orjson.loads(_cli("rollouts", "--json", "--lang", "zh", str(dump))[1]) == doc  # JSON: no language


def test_demo_in_chinese(tmp_path: Path) -> None:
    code, out, err = _cli("demo", "--lang", "zh", "--steps", "45", "--delay", "0", "--dir", str(tmp_path))
    assert code == 1, err
    assert out.startswith("rlvitals 演示：一个用策略梯度学做算术题的小模型，训练 45 步；"
                          "第 30 步时学习率会突然放大 5000 倍。\n")
    # one alert: the learning-rate jump, the cause, with the KL jump among what followed it
    assert "失败 · 学习率调度（lr_schedule）· 自第 30 步起" in out and "随后 第 30 步：警告 KL 跳升" in out
    assert err == ""  # the watcher starts once the first step is on disk: nothing to wait for
    _assert_chinese(out, {"mode", "collapse"})  # "mode collapse": the checks' Chinese keeps the term
    alerts = [orjson.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert alerts and all("zh" in a["message"] and "en" in a["message"] for a in alerts)  # JSON: both languages


def test_demo_refuses_bad_arguments_in_chinese() -> None:
    code, out, err = _cli("demo", "--lang", "zh", "--steps", "0")
    assert code == 2 and out == ""
    assert err == "rlvitals：demo --steps 0 --delay 0.5 --probe 0：步数至少为 1，间隔不能小于 0 秒，探测间隔不能为负\n"

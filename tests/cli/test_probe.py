"""``rlvitals probe`` end to end: a veRL rollout dump, a real HTTP server speaking the OpenAI format (a
rule-following "model" whose answers follow the reasoning it is shown, tests/probe/servers.py), the JSON and
the text in both languages, the per-step results file, the cache on a re-run, and every usage error."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import orjson
import pytest
from openai_servers import follows_reasoning, serving

from rlvitals.cli import main
from rlvitals.rollout import write_verl_dump


def _dump(folder: Path) -> Path:
    for step in (1, 2):
        write_verl_dump([{"prompt": f"Ann has {i} apples and gets {step} more. How many?",
                          "response": f"{i} + {step} = {i + step}. So {i + step} apples. The answer is {i + step}.",
                          "score": 1.0, "target": str(i + step)} for i in (2, 5)], folder, step)
    return folder


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_probe_prints_the_figures_and_writes_the_steps(tmp_path: Path) -> None:
    rollouts = _dump(tmp_path / "rollouts")
    cache = str(tmp_path / "cache.sqlite")
    with serving(follows_reasoning) as (url, seen):
        code, out, err = _run("probe", str(rollouts), "--base-url", url, "--model", "follower", "--json",
                              "--cache", cache, "--max-tokens", "8", "--probes", "early_answering,filler,biased")
        assert code == 0 and err == ""
        result = orjson.loads(out)
        assert result["model"] == "follower" and result["rollouts"] == 4
        assert [p["probe"] for p in result["probes"]] == ["early_answering", "filler", "biased"]
        assert all(0 <= p["answer_change_rate"] <= 1 and len(p["interval"]) == 2 for p in result["probes"])
        assert 0 <= result["faithfulness"] <= 1 and len(result["per_rollout"]) == 4
        assert result["cache"]["misses"] == len(seen) and result["written"] == str(rollouts / "rlvitals-probes.jsonl")
        steps = [orjson.loads(line) for line in (rollouts / "rlvitals-probes.jsonl").read_bytes().splitlines()]
        assert [s["step"] for s in steps] == [1, 2] and all("reasoning/faithfulness" in s for s in steps)
        sent = len(seen)
        code, again, _ = _run("probe", str(rollouts), "--base-url", url, "--model", "follower", "--json",
                              "--cache", cache, "--max-tokens", "8", "--probes", "early_answering,filler,biased")
        assert code == 0 and len(seen) == sent  # the re-run costs nothing
        rerun = orjson.loads(again)
        assert rerun["cache"]["misses"] == 0 and rerun["faithfulness"] == result["faithfulness"]
        code, text, _ = _run("probe", str(rollouts), "--base-url", url, "--model", "follower", "--cache", cache,
                             "--max-tokens", "8", "--probes", "early_answering,filler,biased")
        assert code == 0 and "faithfulness: " in text and "early answering (reasoning cut short)" in text
        # the server gives log-probabilities: with no number shown, its answer's probability is e^-1
        assert "probability of the forced answer by the share shown: 0%→37%  25%→37%" in text
        code, zh, _ = _run("probe", str(rollouts), "--base-url", url, "--model", "follower", "--cache", cache,
                           "--max-tokens", "8", "--probes", "early_answering,filler,biased", "--lang", "zh")
        assert code == 0 and "忠实度：" in zh and "提前作答（截断推理）" in zh and "由缓存回答" in zh
        assert "按所示推理比例计的强制答案概率：0%→37%" in zh


@pytest.mark.parametrize(("argv", "message"), [
    ((), "probe needs a model: --base-url URL --model NAME (a server), or --local PATH"),
    (("--base-url", "http://x/v1"), "probe needs a model"),
    (("--local", "m", "--base-url", "http://x/v1", "--model", "m"), "probe needs a model"),
    (("--base-url", "http://x/v1", "--model", "m", "--probes", "early,filler"), "--probes 'early,filler': expected"),
    (("--base-url", "http://x/v1", "--model", "m", "--max-rollouts", "0"), "expected at least 1 rollout"),
])
def test_usage_errors_say_what_to_give(tmp_path: Path, argv: tuple[str, ...], message: str) -> None:
    code, out, err = _run("probe", str(_dump(tmp_path)), *argv, "--no-cache")
    assert code == 2 and out == "" and err.startswith("rlvitals: ") and message in err


def test_a_missing_model_folder_and_a_dead_server_are_clear(tmp_path: Path) -> None:
    rollouts = _dump(tmp_path / "r")
    code, _, err = _run("probe", str(rollouts), "--local", str(tmp_path / "nothing"), "--no-cache", "--lang", "zh")
    assert code == 2 and ("不是模型" in err or "--local 需要" in err)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = _run("probe", str(rollouts), "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m",
                        "--retries", "0", "--no-cache", "--lang", "zh")
    assert code == 2 and err.startswith("rlvitals：") and "尝试 1 次仍无响应" in err
    code, _, err = _run("probe", str(tmp_path / "absent"), "--base-url", "http://x/v1", "--model", "m", "--no-cache")
    assert code == 2 and "absent: no such file or folder" in err

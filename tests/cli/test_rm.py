"""`rlvitals rm-compare`: two reward models' scores on a veRL dump written by the real writer (the second model's
score added to each line as veRL writes a reward function's extra info, or given by a reward model served over real
HTTP), in text, JSON and Chinese; `diagnose --downstream`; and every user-facing error."""

from __future__ import annotations

import io
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rlvitals.cli import main
from rlvitals.rollout import write_verl_dump

#: the old reward model's score of a response: how close its answer is to 4 (the right one)
ANSWERS = (4, 5, 3, 6, 2, 7, 1, 8)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def dump(folder: Path, contaminated: bool) -> Path:
    """Three steps of 8 rollouts of 'What is 2+2?'; ``rm_new`` agrees with ``score`` at step 1 (up to breaking its
    ties) and, contaminated, ranks the later steps' rollouts the other way round (the policy's own answers taught it
    to like them)."""
    for step in (1, 2, 3):
        records = [{"prompt": "What is 2+2?", "response": f"The answer is {a}", "target": "4",
                    "score": 1.0 - abs(a - 4) / 4} for a in ANSWERS]
        path = write_verl_dump(records, folder, step)
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for i, line in enumerate(lines):
            flipped = contaminated and step > 1
            line["rm_new"] = 2 * (-line["score"] if flipped else line["score"]) + 0.01 * i
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return folder


def test_agreeing_reward_models(tmp_path: Path) -> None:
    code, out, err = _cli("rm-compare", str(dump(tmp_path / "d", False)), "--scores", "score,rm_new")
    assert code == 0 and not err
    assert "A = score, B = rm_new; 3 step(s)" in out
    assert out.strip().splitlines()[-1].startswith("OK — the two reward models agree on the latest steps (3)")
    assert "median ρ 0.98" in out and "0% of pairs ordered differently" in out


def test_contaminated_reward_model_json_and_zh(tmp_path: Path) -> None:
    folder = dump(tmp_path / "d", True)
    code, out, _ = _cli("rm-compare", str(folder), "--scores", "score,rm_new", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "fail" and doc["latest_steps"] == [3]
    first, last = doc["steps"][0], doc["steps"][-1]
    assert first["rho"] == pytest.approx(0.982, abs=1e-3) and first["discordant"] == 0.0
    assert last["rho"] == pytest.approx(-0.982, abs=1e-3) and last["discordant"] == 1.0 and last["n"] == 8
    assert doc["thresholds"] == {"agree": 0.7, "contaminated": 0.4, "latest": pytest.approx(1 / 3), "min_rollouts": 5}
    code, out, _ = _cli("rm-compare", str(folder), "--scores", "score,rm_new")
    assert "FAIL — the two reward models rank the policy's latest rollouts (3) differently: median ρ -0.98" in out
    assert "contaminated by the policy's outputs" in out
    code, out, _ = _cli("rm-compare", str(folder), "--scores", "score,rm_new", "--lang", "zh")
    assert "失败——" in out and "被当前策略的输出“污染”了" in out and "秩相关 ρ" in out


def test_too_few_rollouts_cannot_judge(tmp_path: Path) -> None:
    path = write_verl_dump([{"prompt": "p", "response": str(i), "score": float(i)} for i in range(3)], tmp_path, 1)
    lines = [json.loads(line) | {"rm_new": 1.0} for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, out, _ = _cli("rm-compare", str(tmp_path), "--scores", "score,rm_new")
    assert code == 0 and "CANNOT JUDGE — no step has 5 rollouts" in out and "not judged" in out


@pytest.mark.parametrize("scores", ["score", "score,score", "score,", "a,b,c"])
def test_scores_must_name_two_columns(tmp_path: Path, scores: str) -> None:
    code, _, err = _cli("rm-compare", str(dump(tmp_path / "d", False)), "--scores", scores)
    assert code == 2 and f"--scores {scores!r}: expected two different columns" in err
    _, _, err = _cli("rm-compare", str(tmp_path / "d"), "--scores", scores, "--lang", "zh")
    assert "应为用逗号分隔的两个不同的列" in err


def test_a_missing_or_non_numeric_column_is_named(tmp_path: Path) -> None:
    folder = dump(tmp_path / "d", False)
    code, _, err = _cli("rm-compare", str(folder), "--scores", "score,rm_newer")
    assert code == 2 and "no column 'rm_newer' for --scores; the rollouts have: step, group" in err
    code, _, err = _cli("rm-compare", str(folder), "--scores", "score,response", "--lang", "zh")
    assert code == 2 and "列 'response'（--scores）的类型是 String，不是分数" in err


def test_a_missing_dump_is_named(tmp_path: Path) -> None:
    code, _, err = _cli("rm-compare", str(tmp_path / "nowhere"), "--scores", "a,b")
    assert code == 2 and "nowhere" in err


def test_scores_is_required() -> None:
    code, _, err = _cli("rm-compare", "dump/")
    assert code == 2 and "--scores (not given): expected two different columns separated by a comma" in err


# -- diagnose RM_RUN --downstream POLICY_RUN (real logs of the corpus, paired by hand: see tests/checks) ----------

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
CHESS_RM = str(CORPUS / "trlstate__distilgpt2-rewardmodel-chess" / "checkpoint-37500" / "trainer_state.json")
CHESS_PPO = str(CORPUS / "trlstate__distilgpt2-ppo-chess" / "checkpoint-125" / "trainer_state.json")
RESUMED = str(CORPUS / "verl__dstack-configs__qwen2.5-7b-ppo-gsm8k-resumed" / "verl_demo.log")


def test_diagnose_downstream_names_both_runs() -> None:
    code, out, _ = _cli("diagnose", CHESS_RM, "--downstream", RESUMED, "--json")
    found = [f for f in json.loads(out)["runs"][0]["findings"] if f["check"] == "rm_downstream"]
    assert code == 0 and found[0]["status"] == "warn"
    assert RESUMED in found[0]["message"]["en"] and CHESS_RM in found[0]["message"]["en"]
    code, out, _ = _cli("diagnose", CHESS_RM, "--downstream", RESUMED, "--lang", "zh")
    assert "奖励模型准确率上升" in out


def test_diagnose_downstream_errors() -> None:
    code, _, err = _cli("diagnose", CHESS_RM, "--downstream", "nowhere.log")
    assert code == 2 and "nowhere.log" in err
    code, _, err = _cli("diagnose", CHESS_RM, "--downstream", CHESS_RM)
    assert code == 2 and f"--downstream {CHESS_RM}: a Reward model training run, not a policy" in err
    code, _, err = _cli("diagnose", CHESS_PPO, "--downstream", RESUMED, "--lang", "zh")
    assert code == 2 and "给出的 RUN 都不是奖励模型训练" in err
    code, _, err = _cli("diagnose", CHESS_PPO, "--downstream", RESUMED)
    assert "no RUN is a reward-model training" in err


# -- a newer reward model served over HTTP (a real local server answering vLLM's pooling route) -----------------

class _Pooling(BaseHTTPRequestHandler):
    """``POST /pooling``: each input's reward per token ([[0.0], …, [score]]), the score from the answer the text
    ends with: ``server.rule`` (answer → score); ``server.status`` other than 200 answers that status."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        server: Any = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.received.append((self.path, body))
        if server.status != 200:
            payload = b'{"error": "model not found"}'
            self.send_response(server.status)
        else:
            rows = [{"index": i, "object": "pooling", "data": [[0.0], [server.rule(int(text.rsplit(" ", 1)[1]))]]}
                    for i, text in enumerate(body["input"])]
            payload = json.dumps({"data": rows} if not server.broken else {"choices": []}).encode()
            self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet."""


def _serve() -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Pooling)
    server.received, server.status, server.broken = [], 200, False
    server.rule = lambda a: -abs(a - 4)
    server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def pooling() -> Iterator[Any]:
    """The newer reward model, served."""
    yield from _serve()


@pytest.fixture
def reference() -> Iterator[Any]:
    """The older (reference) reward model, served by another server."""
    yield from _serve()


def test_served_reward_model_that_agrees(tmp_path: Path, pooling: Any) -> None:
    folder = dump(tmp_path / "d", False)
    code, out, err = _cli("rm-compare", str(folder), "--scores", "score", "--base-url", pooling.url,
                          "--model", "rm-v2", "--json")
    doc = json.loads(out)
    assert code == 0 and not err and doc["verdict"] == "ok" and doc["b"] == "rm-v2"
    assert doc["steps"][0]["rho"] == pytest.approx(1.0) and doc["scorer"]["requests"] == 1
    path, body = pooling.received[0]
    assert path == "/pooling" and body["model"] == "rm-v2" and len(body["input"]) == 24
    assert body["input"][0] == "What is 2+2?The answer is 4"


def test_served_reward_model_contaminated(tmp_path: Path, pooling: Any) -> None:
    pooling.rule = lambda a: abs(a - 4)  # it learnt to like the policy's wrong answers
    code, out, _ = _cli("rm-compare", str(dump(tmp_path / "d", False)), "--scores", "score",
                        "--base-url", pooling.url, "--model", "rm-v2", "--lang", "zh")
    assert code == 0 and "A = score，B = rm-v2" in out and "失败——" in out


def test_served_reward_model_errors(tmp_path: Path, pooling: Any) -> None:
    folder = str(dump(tmp_path / "d", False))
    code, _, err = _cli("rm-compare", folder, "--scores", "score,rm_new", "--base-url", pooling.url, "--model", "m")
    assert code == 2 and "--scores names the one column it is compared with" in err
    code, _, err = _cli("rm-compare", folder, "--scores", "score", "--base-url", pooling.url)
    assert code == 2 and "needs both --base-url URL and --model NAME" in err
    code, _, err = _cli("rm-compare", folder, "--scores", "score", "--model", "m", "--lang", "zh")
    assert code == 2 and "需要同时给出 --base-url URL 和 --model NAME" in err
    code, _, err = _cli("rm-compare", folder, "--scores", "score", "--base-url", pooling.url, "--model", "m",
                        "--timeout", "0")
    assert code == 2 and "--timeout 0.0 --retries 3: expected a timeout above 0" in err
    pooling.status = 404
    code, _, err = _cli("rm-compare", folder, "--scores", "score", "--base-url", pooling.url, "--model", "m")
    assert code == 2 and "/pooling: the server answered HTTP 404" in err
    pooling.status, pooling.broken = 200, True
    code, _, err = _cli("rm-compare", folder, "--scores", "score", "--base-url", pooling.url, "--model", "m")
    assert code == 2 and "the reply is not a pooling answer with one score per input (24 sent)" in err


def test_no_server_is_said(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = _cli("rm-compare", str(dump(tmp_path / "d", False)), "--scores", "score", "--base-url",
                        f"http://127.0.0.1:{port}", "--model", "m", "--retries", "0")
    assert code == 2 and "no answer after 1 tries" in err and "vllm serve MODEL --runner pooling" in err


# -- both reward models scoring (two servers, a server and a column, the flags that do not fit) -----------------

def test_two_served_reward_models_one_contaminated(tmp_path: Path, pooling: Any, reference: Any) -> None:
    pooling.rule = lambda a: abs(a - 4)  # the newer one learnt to like the policy's wrong answers
    code, out, err = _cli("rm-compare", str(dump(tmp_path / "d", False)), "--ref-base-url", reference.url,
                          "--ref-model", "rm-v1", "--base-url", pooling.url, "--model", "rm-v2", "--json")
    doc = json.loads(out)
    assert code == 0 and not err and (doc["a"], doc["b"], doc["verdict"]) == ("rm-v1", "rm-v2", "fail")
    assert doc["rho"] == pytest.approx(-1.0) and doc["discordant"] == pytest.approx(1.0)
    assert doc["ref_scorer"] == {"url": reference.url.removesuffix("/v1") + "/pooling", "model": "rm-v1",
                                 "requests": 1}
    assert doc["scorer"]["model"] == "rm-v2" and doc["scorer"]["requests"] == 1
    assert [body["model"] for _, body in reference.received] == ["rm-v1"]
    assert [len(body["input"]) for _, body in pooling.received] == [24]


def test_a_served_reference_against_a_column_and_names_that_clash(tmp_path: Path, reference: Any,
                                                                   pooling: Any) -> None:
    folder = str(dump(tmp_path / "d", False))
    code, out, _ = _cli("rm-compare", folder, "--ref-base-url", reference.url, "--ref-model", "rm-v1",
                        "--scores", "rm_new", "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["a"], doc["b"], doc["verdict"]) == ("rm-v1", "rm_new", "ok") and "scorer" not in doc
    code, out, _ = _cli("rm-compare", folder, "--ref-base-url", reference.url, "--ref-model", "rm",
                        "--base-url", pooling.url, "--model", "rm", "--json")
    assert code == 0 and (json.loads(out)["a"], json.loads(out)["b"]) == ("rm (ref)", "rm (new)")
    code, _, err = _cli("rm-compare", folder, "--base-url", pooling.url, "--model", "score", "--scores", "score")
    assert code == 2 and "both reward models are named 'score'; give two different ones" in err


def test_flags_of_two_scorers_that_do_not_fit(tmp_path: Path, reference: Any, pooling: Any) -> None:
    folder = str(dump(tmp_path / "d", False))
    both = ["--ref-base-url", reference.url, "--ref-model", "a", "--base-url", pooling.url, "--model", "b"]
    code, _, err = _cli("rm-compare", folder, *both, "--scores", "score")
    assert code == 2 and "--scores 'score': both reward models score here" in err and "leave --scores out" in err
    code, _, err = _cli("rm-compare", folder, *both, "--scores", "score", "--lang", "zh")
    assert code == 2 and "请去掉 --scores" in err
    code, _, err = _cli("rm-compare", folder, "--ref-base-url", reference.url, "--ref-model", "a",
                        "--scores", "score,rm_new")
    assert code == 2 and "--scores names the one column it is compared with, the newer reward model's" in err
    code, _, err = _cli("rm-compare", folder, "--ref-base-url", reference.url, "--scores", "rm_new")
    assert code == 2 and "--ref-model None: a served reward model needs both --ref-base-url URL and --ref-model" in err
    code, _, err = _cli("rm-compare", folder, "--ref-local", "rm/", "--ref-model", "a", "--scores", "rm_new",
                        "--lang", "zh")
    assert code == 2 and "同时给出了 --ref-local 和 --ref-base-url/--ref-model" in err

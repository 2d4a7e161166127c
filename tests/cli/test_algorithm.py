"""``--algorithm NAME`` on every command that reads a run: declared once (``_options.add_algorithm``) with the
catalog's algorithm ids as its choices, read instead of the detected algorithm (the label says it was given, a
run whose keys read otherwise gets a note), and an unknown name refused in the user's language.

The log is constructed: PPOv2Trainer's key set (TRL 0.9-0.11), which RLOOTrainer of those versions logged too
(tests/run/test_given_algorithm.py says why no real one is used)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import rlvitals.run
from rlvitals.cli import main
from rlvitals.cli._parser import build_parser

#: every command that reads a run
READERS = ("inspect", "diagnose", "forecast", "report", "export", "watch", "serve")
KEYS = ["eps", "objective/kl", "objective/entropy", "objective/non_score_reward", "objective/rlhf_reward",
        "objective/scores", "policy/approxkl_avg", "policy/clipfrac_avg", "loss/policy_avg", "loss/value_avg",
        "val/clipfrac_avg", "policy/entropy_avg", "val/ratio", "val/ratio_var", "val/num_eos_tokens", "lr", "episode"]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture
def ppo_log(tmp_path: Path) -> Path:
    history = [{"epoch": s / 20, "step": s, **{k: round(0.5 + 0.01 * s + 0.001 * i * s, 6) for i, k in enumerate(KEYS)}}
               for s in range(1, 21)]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 20, "log_history": history}, indent=2, sort_keys=True))
    return path


def _args(command: str, *flags: str) -> list[str]:
    out = {"report": ["-o", "r.html"], "export": ["--tensorboard", "tb"]}.get(command, [])
    return [command, "run.log", *out, *flags]


@pytest.mark.parametrize("command", READERS)
def test_every_command_that_reads_a_run_takes_algorithm(command: str) -> None:
    args = build_parser().parse_args(_args(command, "--algorithm", "rloo"))
    assert args.algorithm == "rloo"
    assert build_parser().parse_args(_args(command)).algorithm is None


@pytest.mark.parametrize("command", READERS)
def test_the_help_lists_the_catalogs_algorithms(command: str) -> None:
    code, out, _ = _cli(command, "--help")
    flat = " ".join(out.split()).replace("- ", "-")  # argparse may wrap a line after a name's hyphen
    assert code == 0 and "--algorithm NAME read the runs as this algorithm instead of detecting it" in flat
    assert "(one of grpo, rloo, ppo, kto, orpo, dpo-family, rm, sft," in flat


@pytest.mark.parametrize("command", READERS)
def test_an_unknown_algorithm_is_a_usage_error_in_both_languages(command: str, tmp_path: Path) -> None:
    """Refused before anything is read or started (the log is not there; serve would listen)."""
    code, out, err = _cli(*_args(command, "--algorithm", "dpo"))
    assert (code, out) == (2, "")
    assert err.startswith("rlvitals: --algorithm 'dpo': not an algorithm rlvitals knows (did you mean dpo-family?); "
                          "give one of grpo, rloo, ppo, kto, orpo, dpo-family,")
    assert err.endswith(", or leave it out to have the algorithm detected from the run's keys\n")
    code, out, err = _cli(*_args(command, "--algorithm", "dpo", "--lang", "zh"))
    assert (code, out) == (2, "")
    assert err.startswith("rlvitals：--algorithm 'dpo'：不是 rlvitals 认识的算法（是不是想写 dpo-family？）；"
                          "请给出 grpo、rloo、ppo、kto、orpo、dpo-family、")
    assert err.endswith("之一，或者不指定，由运行的键名识别算法\n")


def test_inspect_says_the_algorithm_was_given_and_what_the_keys_said(ppo_log: Path) -> None:
    code, out, _ = _cli("inspect", str(ppo_log))
    assert code == 0 and "algorithm   PPO with a critic (GAE) [ppo] " in out and "given" not in out
    code, out, _ = _cli("inspect", str(ppo_log), "--algorithm", "rloo")
    flat = " ".join(out.split())
    assert code == 0 and "algorithm RLOO [rloo] (given, not detected)" in flat
    assert ("note the algorithm was given as rloo (RLOO), but the run's keys and config read as ppo (PPO); its "
            "keys were read as RLOO's") in flat
    code, out, _ = _cli("inspect", str(ppo_log), "--algorithm", "rloo", "--lang", "zh")
    flat = " ".join(out.split())
    assert "算法 RLOO [rloo]（由用户指定，不是识别出的）" in flat
    assert "算法被指定为 rloo（RLOO），但这个运行的键名和配置看起来是 ppo（PPO）；键名按 RLOO 读取" in flat


def test_inspect_json_says_it_was_given_and_diagnose_json_names_it(ppo_log: Path) -> None:
    summary = json.loads(_cli("inspect", str(ppo_log), "--json", "--algorithm", "rloo")[1])
    assert (summary["algorithm"], summary["algorithm_label"], summary["algorithm_given"]) == ("rloo", "RLOO", True)
    assert json.loads(_cli("inspect", str(ppo_log), "--json")[1])["algorithm_given"] is False
    (run,) = json.loads(_cli("diagnose", str(ppo_log), "--json", "--algorithm", "rloo")[1])["runs"]
    assert run["algorithm"] == "rloo"
    (run,) = json.loads(_cli("diagnose", str(ppo_log), "--json")[1])["runs"]
    assert run["algorithm"] == "ppo"
    code, out, _ = _cli("diagnose", str(ppo_log), "--algorithm", "rloo")
    assert code == 0 and "trl · RLOO (given) · 20 training steps" in " ".join(out.split())


@pytest.mark.parametrize("command", ["inspect", "diagnose", "forecast", "report", "export"])
def test_the_commands_read_the_runs_as_the_given_algorithm(command: str, ppo_log: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[tuple[str, bool]] = []
    load = rlvitals.run.load

    def spy(*args: Any, **kwargs: Any) -> list[rlvitals.run.Run]:
        runs = load(*args, **kwargs)
        read.extend((r.algorithm, r.algorithm_given) for r in runs)
        return runs

    monkeypatch.setattr(rlvitals.run, "load", spy)
    out = {"report": ["-o", str(tmp_path / "r.html")], "export": ["--tensorboard", str(tmp_path / "tb")]}
    code, _, err = _cli(command, str(ppo_log), *out.get(command, []), "--algorithm", "rloo")
    assert code == 0, err
    assert read == [("rloo", True)]
    if command == "report":
        assert "RLOO" in (tmp_path / "r.html").read_text()


def test_watch_and_serve_carry_it_in_their_options(ppo_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvitals import watch
    from rlvitals.cli.live import workspace_options
    from rlvitals.errors import RlvitalsError

    given: list[object] = []

    def opened(paths: object, sinks: object, state: object, options: watch.WatchOptions, **_: object) -> None:
        given.append(options.algorithm)
        raise RlvitalsError("stop here")

    monkeypatch.setattr(watch, "open_watcher", opened)
    code, _, err = _cli("watch", str(ppo_log), "--once", "--algorithm", "rloo")
    assert (code, given, err) == (2, ["rloo"], "rlvitals: stop here\n")
    args = build_parser().parse_args(["serve", str(ppo_log), "--algorithm", "ppo"])
    assert workspace_options(args).algorithm == "ppo"


def test_the_live_options_refuse_an_unknown_algorithm() -> None:
    from rlvitals.errors import InputError
    from rlvitals.server import WorkspaceOptions
    from rlvitals.watch import WatchOptions

    with pytest.raises(InputError, match=r"WatchOptions: algorithm='ppo2': not an algorithm rlvitals knows "
                                         r"\(did you mean ppo\?\)"):
        WatchOptions(algorithm="ppo2")
    with pytest.raises(InputError, match=r"WorkspaceOptions: algorithm='GRPO': .*\(did you mean grpo\?\)"):
        WorkspaceOptions(algorithm="GRPO")

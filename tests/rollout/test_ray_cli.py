"""rlvitals rollouts --engine ray --address ADDR against a real cluster of two node processes on this machine
(``ray start --head`` and a second ``ray start --address``): the JSON is the local engine's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the ray extra is not installed")
pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[2]


def _ray_cli() -> str:
    found = shutil.which("ray", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the ray command is not installed beside this Python")
    return found


@pytest.fixture()
def two_nodes(tmp_path: Path) -> Iterator[str]:
    """``ray start --head`` and a second node joined to it, on this machine; their address."""
    cli, port = _ray_cli(), "6391"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT / "src")}
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    loopback = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats"]
    _started([cli, "start", "--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}", *loopback],
             env)
    try:
        _started([cli, "start", f"--address=127.0.0.1:{port}", *loopback], env)
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([cli, "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


def _started(command: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(command)}: {done.stdout[-2000:]} {done.stderr[-2000:]}"


@pytest.mark.process
def test_the_command_line_on_a_two_node_cluster_prints_the_local_json(two_nodes: str, tmp_path: Path) -> None:
    from rlvitals.synthetic.demo import run_demo

    folder = run_demo(tmp_path / "demo", steps=6).rollouts
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    base = [sys.executable, "-m", "rlvitals", "rollouts", str(folder), "--json", "--k", "1,2,4"]
    local = subprocess.run(base, capture_output=True, text=True, timeout=300, env=env)
    on_ray = subprocess.run([*base, "--engine", "ray", "--address", two_nodes], capture_output=True, text=True,
                            timeout=300, env=env)
    assert local.returncode == 0 and on_ray.returncode == 0, on_ray.stderr
    assert json.loads(on_ray.stdout) == json.loads(local.stdout)
    assert json.loads(on_ray.stdout)["steps"]

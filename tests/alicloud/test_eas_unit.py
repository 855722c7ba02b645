"""The PAI-EAS unit script run for real under bash on loopback: a fake ``vllm`` stands in for the engine, the
health responder is the real one (this interpreter as ``python3``). A rank != 0 answers the probe path with 200
while its vLLM runs, 404 elsewhere, and stops answering as soon as vLLM exits (even before anything reaps it);
the script exits with vLLM's status. Rank 0 runs vLLM alone (it serves /health itself)."""

import http.client
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from k3infra.alicloud import deployment
from k3infra.alicloud.eas_unit import RANK_ENV, unit_script
from k3infra.serving.engine import Role, vllm_command
from tests.support import plan
from tests.ports import free_port

FAKE_VLLM = """#!/bin/bash
printf '%s\\n' "$@" > "$FAKE_DIR/args.$$"
echo $$ > "$FAKE_DIR/pid"
while [ ! -e "$FAKE_DIR/stop" ]; do sleep 0.05; done
exit "$(cat "$FAKE_DIR/stop")"
"""
"""Records its arguments and PID, runs until the test writes an exit status into ``stop``."""



def status(port: int, path: str) -> int | None:
    """The HTTP status of GET path, or None when nothing listens."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return None


def until(predicate, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def commands():
    cfg = plan("alicloud-pai").config
    model = deployment.model_dir(cfg)
    leader = vllm_command(cfg, model=model, role=Role.LEADER, leader_address="${MASTER_ADDRESS}")
    worker = vllm_command(cfg, model=model, role=Role.WORKER, node_rank="${RANK_ID}", leader_address="${MASTER_ADDRESS}")
    return leader, worker


def start(tmp_path: Path, script: str, rank: str) -> subprocess.Popen:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vllm").write_text(FAKE_VLLM)
    (bin_dir / "vllm").chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_DIR": str(tmp_path), RANK_ENV: rank,
           "MASTER_ADDRESS": "10.0.0.1"}
    return subprocess.Popen(["bash", "-c", script], env=env)


def engine_args(tmp_path: Path) -> list[str]:
    assert until(lambda: (tmp_path / "pid").exists())
    return (tmp_path / f"args.{(tmp_path / 'pid').read_text().strip()}").read_text().split("\n")[:-1]


def test_a_headless_rank_answers_health_exactly_while_its_vllm_runs(tmp_path, commands):
    leader, worker = commands
    port = free_port()
    proc = start(tmp_path, unit_script(replace(leader, port=port), worker, [], "/health"), rank="2")
    try:
        assert until(lambda: status(port, "/health") == 200), "no health answer while vLLM runs"
        assert status(port, "/v1/models") == 404  # only the probe path: this rank serves no API
        args = engine_args(tmp_path)
        assert args[-1] == "--headless" and args[args.index("--node-rank") + 1] == "2"
        assert int((tmp_path / "pid").read_text()) == proc.pid  # vLLM replaced the shell: the PID it watches

        (tmp_path / "stop").write_text("3")
        # vLLM has exited but nothing has reaped it yet (a zombie): the responder must stop answering anyway
        assert until(lambda: status(port, "/health") is None), "the responder outlived vLLM"
        assert proc.poll() is None or proc.returncode == 3
        assert proc.wait(timeout=10) == 3  # the unit script exits with vLLM's status
    finally:
        proc.kill()
        proc.wait()


def test_rank_0_runs_vllm_alone(tmp_path, commands):
    leader, worker = commands
    port = free_port()
    proc = start(tmp_path, unit_script(replace(leader, port=port), worker, [], "/health"), rank="0")
    try:
        args = engine_args(tmp_path)
        assert "--headless" not in args and args[args.index("--node-rank") + 1] == "0"
        time.sleep(1.5)
        assert status(port, "/health") is None  # no responder: the leader's vLLM owns the port
        (tmp_path / "stop").write_text("0")
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_the_stack_script_is_this_script(commands):
    """The behaviour above is the alicloud-pai stack's: its service runs unit_script on the engine's port."""
    leader, worker = commands
    cfg = plan("alicloud-pai").config
    script, _ = deployment.eas_script(cfg)
    assert script == unit_script(leader, worker, [deployment.EAS_RDMA_SETUP], "/health")
    assert leader.port == cfg.engine.port == 8000


def test_a_unit_needs_a_serving_leader_and_headless_workers(commands):
    leader, worker = commands
    with pytest.raises(ValueError):
        unit_script(worker, leader, [], "/health")
    with pytest.raises(ValueError):
        unit_script(replace(leader, port=0), worker, [], "/health")

"""The benchmark scripts run: each prints its figures for the stacks it covers (benchmarks/topology.py had broken
silently on a sizing signature change; nothing ran it)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> str:
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_the_topology_benchmark_prints_every_disaggregated_stack_and_a_workload() -> None:
    out = _run("benchmarks/topology.py", "--workload", "1024", "20")
    for stack in ("gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd"):
        assert f"{stack}: disaggregated on " in out
    assert out.count("prefill:decode groups") == 4
    assert "gcp-a4xmax-pd" in out and "prefill:decode groups 3:2 (planned 1:1)" in out


def test_the_cold_start_benchmark_prints_every_stack() -> None:
    out = _run("benchmarks/cold_start.py")
    assert "kubernetes-gb300-nvl72-pd" in out and "gcp-a4xmax" in out

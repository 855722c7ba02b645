"""``k3infra verify``'s routing check (issue 38) against two local fake engines behind a front that routes by
prefix, or round-robin: it passes on the first and fails on the second, with each engine's real metric names."""

import json

import pytest
from typer.testing import CliRunner

from k3infra import verify as v
from k3infra.cli import app

from .fake_openai import MODEL, FakeRouter, FakeServer

FAST = {"long_context_tokens": 20000, "timeout": 10.0, "retries": 1, "backoff": 0.01}


def routing(router: FakeRouter, *replicas: FakeServer) -> v.CheckResult:
    settings = v.Settings(base_url=router.url, model=MODEL, **FAST,  # type: ignore[arg-type]
                          replica_metrics_urls=tuple(f"{r.url}/metrics" for r in replicas))
    report = v.Verifier(settings, sleep=lambda _s: None).run_all()
    assert [c.name for c in report.checks] == [*v.CHECKS, v.ROUTING]
    return report.checks[-1]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_prefix_aware_front_lands_a_shared_prefix_on_one_replica(engine: str) -> None:
    with FakeServer(engine=engine) as a, FakeServer(engine=engine) as b, FakeRouter(a, b, policy="prefix") as r:
        check = routing(r, a, b)
        sent = (len(a.state.requests), len(b.state.requests))
    assert check.passed, check.evidence
    assert check.evidence.startswith(f"{v.ROUTING_REQUESTS} requests with one 8,192-token prefix: replica ")
    moved = [part.split("+")[1] for part in check.evidence.split(": ")[1].split(", ")]
    assert len(moved) == 2 and moved.count("0") == 1, "one replica's hits moved, the other's did not"
    assert sum(sent) >= v.ROUTING_REQUESTS


def test_a_round_robin_front_fails_the_check() -> None:
    with FakeServer() as a, FakeServer() as b, FakeRouter(a, b, policy="round-robin") as r:
        check = routing(r, a, b)
    assert not check.passed
    assert check.evidence.startswith("one shared prefix hit 2 replicas (replica 1 +")
    assert "does not route by prefix" in check.evidence


def test_replicas_that_are_not_behind_the_front_fail_the_check() -> None:
    with FakeServer() as a, FakeServer() as b, FakeServer() as c, FakeServer() as d, FakeRouter(a, b) as r:
        check = routing(r, c, d)
    assert not check.passed and check.evidence.startswith("no replica's prefix-cache counter moved")


def test_one_replica_runs_no_routing_check_and_the_command_takes_replicas() -> None:
    with FakeServer() as a, FakeServer() as b, FakeRouter(a, b) as r:
        one = v.Verifier(v.Settings(base_url=r.url, model=MODEL, **FAST,  # type: ignore[arg-type]
                                    replica_metrics_urls=(f"{a.url}/metrics",)), sleep=lambda _s: None).run_all()
        assert [c.name for c in one.checks] == list(v.CHECKS)
        result = CliRunner().invoke(app, ["verify", "--base-url", r.url, "--model", MODEL, "--long-context-tokens",
                                          "20000", "--timeout", "10", "--retries", "1", "--format", "json",
                                          "--replica-metrics", f"{a.url}/metrics", "--replica-metrics",
                                          f"{b.url}/metrics"])
    out = json.loads(result.stdout)
    assert result.exit_code == 0, out
    assert [c["name"] for c in out["checks"]][-1] == "routing" and out["passed"]

"""The placement check: the verdicts, the script end to end against a Kubernetes API stand-in on loopback, and the
Job every multi-node stack renders before its server (and no other stack does)."""

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlparse

import pytest

from k3infra import offline
from k3infra.serving import placement, placement_check
from k3infra.serving.placement_check import Node, assess
from tests.serving.shapes import record, variant
from tests.support import ROOT, STACKS, plan

CLIQUE = "nvidia.com/gpu.clique"
A, B = "4b2d8f9e-1c3a-4e5f-9a7b-2c1d0e3f4a5b.1", "4b2d8f9e-1c3a-4e5f-9a7b-2c1d0e3f4a5b.7"


def verdict(nodes: list[Node], replicas: int = 1, pool_nodes: int = 2) -> placement_check.Verdict:
    return assess(nodes, label=CLIQUE, nodes_per_replica=2, replicas=replicas, pool_nodes=pool_nodes,
                  advice="Ask for one rack.")


def test_the_verdicts() -> None:
    both = [Node("aks-gb300-0", A), Node("aks-gb300-1", A)]
    assert verdict(both).state == "ok"
    assert verdict(both).message == f"1 replica(s) of 2 nodes fit inside one {CLIQUE} each: {CLIQUE}={A}: aks-gb300-0, aks-gb300-1"
    # A node short, or a node not labelled yet: the pool may still fit.
    assert verdict([Node("aks-gb300-0", A)]).state == "wait"
    waiting = verdict([Node("aks-gb300-0", A), Node("aks-gb300-1", None)])
    assert waiting == placement_check.Verdict(
        "wait", f"2 of 2 nodes, 1 labelled: {CLIQUE}={A}: aks-gb300-0; without {CLIQUE}: aks-gb300-1")
    # Every node there and labelled, two cliques: it never will.
    split = verdict([Node("aks-gb300-0", A), Node("aks-gb300-1", B)])
    assert split.state == "fail"
    assert split.message == (
        f"the GPU pool's 2 nodes cannot hold 1 replica(s) of 2 nodes that share one value of {CLIQUE} (one NVLink "
        f"domain per replica; the server's pods require it, so a replica would stay Pending): {CLIQUE}={A}: "
        f"aks-gb300-0; {CLIQUE}={B}: aks-gb300-1. Ask for one rack.")
    # Groups of a replica's size: 3 + 1 nodes hold one replica of 2, not two.
    four = [Node("n0", A), Node("n1", A), Node("n2", A), Node("n3", B)]
    assert verdict(four, replicas=1, pool_nodes=4).state == "ok"
    assert verdict(four, replicas=2, pool_nodes=4).state == "fail"


# ---------------------------------------------------------------------------------------------------------------
# The script against an API server stand-in


class FakeApi:
    """``GET /api/v1/nodes?labelSelector=...`` answered from a list of node states, one per request (the last
    repeats), over plain HTTP on loopback; it records each request's selector and token."""

    def __init__(self, states: list[list[tuple[str, str | None]]], status: int = 200) -> None:
        self.states, self.status = states, status
        self.requests: list[tuple[str, str]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                assert url.path == "/api/v1/nodes", url.path
                api.requests.append((parse_qs(url.query)["labelSelector"][0], self.headers["Authorization"]))
                state = api.states[min(len(api.requests), len(api.states)) - 1]
                items = [{"metadata": {"name": n, "labels": {"agentpool": "gb300pool", **({CLIQUE: v} if v else {})}}}
                         for n, v in state]
                body = json.dumps({"kind": "NodeList", "items": items} if api.status == 200 else
                                  {"kind": "Status", "reason": "Forbidden"}).encode()
                self.send_response(api.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("k3-placement-token\n")
    return path


def check(api: FakeApi, token: Path, tmp_path: Path, timeout: float = 20) -> tuple[subprocess.CompletedProcess[str], str]:
    log = tmp_path / "termination-log"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "k3infra/serving/placement_check.py"), "--selector", "agentpool=gb300pool",
         "--label", CLIQUE, "--nodes-per-replica", "2", "--replicas", "1", "--pool-nodes", "2",
         "--timeout", str(timeout), "--interval", "0.05", "--advice", "Ask for one rack.", "--api", api.url,
         "--token-file", str(token), "--termination-log", str(log)],
        capture_output=True, text=True, timeout=60)
    return proc, log.read_text() if log.exists() else ""


@pytest.fixture
def api_states(request: pytest.FixtureRequest) -> Iterator[FakeApi]:
    api = FakeApi(request.param)
    yield api
    api.close()


@pytest.mark.parametrize("api_states", [[[], [("aks-gb300-0", None)], [("aks-gb300-0", A), ("aks-gb300-1", None)],
                                         [("aks-gb300-0", A), ("aks-gb300-1", A)]]], indirect=True)
def test_the_check_waits_for_the_nodes_and_their_label_then_passes(api_states: FakeApi, token: Path,
                                                                    tmp_path: Path) -> None:
    proc, _ = check(api_states, token, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(api_states.requests) == 4
    assert set(api_states.requests) == {("agentpool=gb300pool", "Bearer k3-placement-token")}
    assert "waiting: 0 of 2 nodes" in proc.stderr and f"placement: 1 replica(s) of 2 nodes fit" in proc.stderr


@pytest.mark.parametrize("api_states", [[[("aks-gb300-0", None), ("aks-gb300-1", None)],
                                         [("aks-gb300-0", A), ("aks-gb300-1", B)]]], indirect=True)
def test_nodes_in_two_nvlink_domains_fail_at_once_naming_the_values_the_nodes_and_what_to_do(
        api_states: FakeApi, token: Path, tmp_path: Path) -> None:
    proc, termination = check(api_states, token, tmp_path, timeout=600)
    assert proc.returncode == 1
    assert len(api_states.requests) == 2, "fails as soon as every node is labelled, not at the deadline"
    expected = f"{CLIQUE}={A}: aks-gb300-0; {CLIQUE}={B}: aks-gb300-1. Ask for one rack."
    assert expected in proc.stderr and termination.endswith(expected)
    assert termination.startswith("the GPU pool's 2 nodes cannot hold 1 replica(s) of 2 nodes")


@pytest.mark.parametrize("api_states", [[[("aks-gb300-0", A), ("aks-gb300-1", None)]]], indirect=True)
def test_a_label_that_never_appears_fails_at_the_deadline_naming_the_nodes_without_it(
        api_states: FakeApi, token: Path, tmp_path: Path) -> None:
    proc, termination = check(api_states, token, tmp_path, timeout=0.5)
    assert proc.returncode == 1
    assert termination.startswith("timed out after 0.5 s waiting for the GPU pool's nodes and their "
                                  f"{CLIQUE} label (2 of 2 nodes, 1 labelled:")
    assert f"without {CLIQUE}: aks-gb300-1" in termination and "GPU feature discovery" in termination


def test_a_refused_node_list_is_retried_briefly_then_named(token: Path) -> None:
    api = FakeApi([[]], status=403)
    try:
        with pytest.raises(placement_check.Forbidden, match="answered 403 to listing nodes"):
            placement_check.list_nodes(api.url, "agentpool=gb300pool", CLIQUE, str(token), None)
    finally:
        api.close()
    now = [0.0]

    def refused() -> list[Node]:
        raise placement_check.Forbidden("the API server answered 403 to listing nodes: b'...'")

    def sleep(s: float) -> None:
        now[0] += s

    v = placement_check.run(refused, label=CLIQUE, nodes_per_replica=2, replicas=1, pool_nodes=2, advice="",
                            timeout=1800, interval=10, log=lambda _: None, clock=lambda: now[0], sleep=sleep)
    assert v.state == "fail" and "may get and list nodes" in v.message
    assert placement_check.RBAC_GRACE_SECONDS < now[0] <= placement_check.RBAC_GRACE_SECONDS + 10


# ---------------------------------------------------------------------------------------------------------------
# The Job in the stacks


def test_a_multi_node_stack_checks_placement_before_its_server_and_while_its_weights_sync() -> None:
    rec = plan("azure-gb300").recording
    job = rec.one("kubernetes:batch/v1:Job", "k3-placement-job")
    spec = offline.unwrap(job.inputs)["spec"]
    pod = spec["template"]["spec"]
    (c,) = pod["containers"]
    assert spec["backoffLimit"] == 0
    assert (c["image"], c["imagePullPolicy"]) == (plan("azure-gb300").config.image, "IfNotPresent")
    assert c["command"] == ["python3", "/opt/k3infra-placement/placement_check.py"]
    args = dict(zip(c["args"][::2], c["args"][1::2]))
    assert args["--selector"] == "agentpool=gb300pool" and args["--label"] == CLIQUE
    assert (args["--nodes-per-replica"], args["--replicas"], args["--pool-nodes"]) == ("2", "1", "2")
    assert int(args["--timeout"]) == placement.DEFAULT_TIMEOUT_SECONDS
    assert "interconnect group" in args["--advice"] and args["--advice"].endswith(
        "Then `kubectl -n kimi-k3 delete job k3-placement` and `pulumi up --refresh` check again.")
    assert {e["name"]: e["value"] for e in c["env"]}["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert pod["nodeSelector"] == {"agentpool": "gb300pool"} and pod["serviceAccountName"] == "k3-placement"
    assert offline.unwrap(rec.one("kubernetes:core/v1:ConfigMap", "k3-placement-code").inputs)["data"] == {
        "placement_check.py": (ROOT / "k3infra/serving/placement_check.py").read_text()}
    # RBAC: get and list nodes, nothing else.
    role = offline.unwrap(rec.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "k3-placement-role").inputs)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]
    binding = offline.unwrap(rec.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding").inputs)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "k3-placement", "namespace": "kimi-k3"}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == "kimi-k3-k3-placement"

    def deps(r: offline.Registration) -> set[str]:
        return {d.rsplit("::", 1)[-1] for d in r.dependencies}

    # The check waits for the pool only (not the hours-long sync); the LeaderWorkerSet waits for the check.
    check = rec.one("k3infra:index:PlacementCheck")
    assert "k3-gpu-pool" in deps(check) and not {d for d in deps(check) if d.startswith("k3-sync")}
    lws = rec.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
    assert {"k3-placement-job", "k3-placement-binding"} <= deps(lws)


@pytest.mark.parametrize("stack", STACKS)
def test_exactly_the_stacks_whose_replicas_span_a_topology_domain_check_placement(stack: str) -> None:
    p = plan(stack)
    jobs = [r.name for r in p.recording.by_type("kubernetes:batch/v1:Job") if r.name.endswith("-placement-job")]
    # the disaggregated stacks on an NVLink domain: their multi-node groups (issue 37) must land in one domain too
    assert jobs == (["k3-placement-job"] if stack in ("azure-gb300", "azure-gb300-pd", "gcp-a4x-sglang", "gcp-a4xmax",
                                                      "gcp-a4xmax-pd", "kubernetes-gb300-nvl72",
                                                      "kubernetes-gb300-nvl72-pd") else [])


def test_a_pool_whose_capacity_has_not_started_gets_no_check() -> None:
    pending = variant("gb300", pool={"group_topology_label": CLIQUE,
                                     "capacity_pending": "the reservation starts tomorrow"})
    assert not record(pending).recording.by_type("k3infra:index:PlacementCheck")
    ready = variant("gb300", pool={"group_topology_label": CLIQUE})
    assert record(ready).recording.by_type("k3infra:index:PlacementCheck")

"""Issue 37 with issue 38's gateway: a disaggregated stack's gateway puts one InferencePool over both roles and the
endpoint picker's P/D profile handler in front, as llm-d's guides/pd-disaggregation deploys it (gaie-pd/values.yaml:
``inferencePool.targetPorts: [8000]`` over every serving pod; modelserver/gpu/vllm/base/patch-decode.yaml: decode
vLLM on ``--port=8200`` behind the routing sidecar on 8000). The pool, as the llm-d-router chart renders it, is
validated against the vendored InferencePool CRD."""

import json
from typing import Any

import pytest

from k3infra import offline
from k3infra.offline import Recording
from k3infra.serving.roles import pool_targets
from tests import support
from tests.serving.test_gateway import EPP, chart_pool
from tests.validation import crd_errors

GATEWAY_STACKS = ("gcp-a4xmax-pd", "kubernetes-gb300-nvl72-pd")
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"


def templates(rec: Recording, role: str) -> dict[str, dict[str, Any]]:
    """The leader's and worker's pod templates of a role's LeaderWorkerSet."""
    lws = offline.plain(rec.one(LWS, f"k3-{role}-workload").inputs)["spec"]["leaderWorkerTemplate"]
    return {"leader": lws["leaderTemplate"], "worker": lws["workerTemplate"]}


def containers(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = template["spec"]
    return {c["name"]: c for c in [*(spec.get("initContainers") or []), *spec["containers"]]}


def ports(container: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container.get("ports") or []}


@pytest.mark.parametrize("stack", GATEWAY_STACKS)
def test_one_pool_over_both_roles_on_the_guide_s_port(stack: str) -> None:
    rec = support.plan(stack).recording
    chart = offline.plain(rec.one(*EPP).inputs)
    pool = chart_pool(chart)
    assert crd_errors(pool) == []
    assert pool["spec"]["selector"] == {"matchLabels": {"llm-d.ai/inferenceServing": "true"}}
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    # The picker's P/D handler, a profile per role, each filtered by the role label.
    picker = json.loads(chart["values"]["router"]["epp"]["pluginsCustomConfig"]["k3infra-plugins.yaml"])
    types = [p["type"] for p in picker["plugins"]]
    assert {"prefill-filter", "decode-filter", "disagg-profile-handler"} <= set(types)
    assert "single-profile-handler" not in types
    assert [(p["name"], p["plugins"][0]["pluginRef"]) for p in picker["schedulingProfiles"]] == [
        ("prefill", "prefill-filter"), ("decode", "decode-filter")]
    ns = chart["namespace"]
    token = next(p for p in picker["plugins"] if p["type"] == "token-producer")
    assert token["parameters"]["vllm"]["url"] == f"http://k3-prefill.{ns}.svc.cluster.local:8000"


@pytest.mark.parametrize("stack", GATEWAY_STACKS)
def test_the_pool_selects_exactly_the_pods_that_take_requests_on_its_port(stack: str) -> None:
    """Decode (DEP: every pod serves): the routing sidecar on 8000, vLLM behind it on 8200. Prefill (TEP over two
    nodes): its leader's vLLM on 8000; its worker serves nothing and is not in the pool."""
    rec = support.plan(stack).recording
    decode, prefill = templates(rec, "decode"), templates(rec, "prefill")
    serving = "llm-d.ai/inferenceServing"
    labels = {(role, rank): (t["metadata"]["labels"].get(serving), t["metadata"]["labels"]["llm-d.ai/role"])
              for role, ts in (("prefill", prefill), ("decode", decode)) for rank, t in ts.items()}
    assert labels == {("prefill", "leader"): ("true", "prefill"), ("prefill", "worker"): (None, "prefill"),
                      ("decode", "leader"): ("true", "decode"), ("decode", "worker"): ("true", "decode")}
    for rank in ("leader", "worker"):
        c = containers(decode[rank])
        assert c["routing-proxy"]["args"][:2] == ["--port=8000", "--model-server-port=8200"]
        assert ports(c["routing-proxy"]) == {"http": 8000} and ports(c["engine"])["engine"] == 8200
    assert ports(containers(prefill["leader"])["engine"])["http"] == 8000
    assert "http" not in ports(containers(prefill["worker"])["engine"])


def test_the_roles_still_reach_each_other_on_every_port() -> None:
    """The pool's label left the TEP worker; the roles' network policies admit every model-server pod of the
    namespace (NIXL moves KV from every rank), workers included."""
    rec = support.plan("kubernetes-gb300-nvl72-pd").recording
    for role in ("prefill", "decode"):
        policy = offline.plain(rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", f"k3-{role}-network-policy").inputs)
        peers = [p["podSelector"]["matchLabels"] for rule in policy["spec"]["ingress"] for p in rule.get("from", [])
                 if "ports" not in rule and "podSelector" in p and p["podSelector"].get("matchLabels")]
        assert {"app.kubernetes.io/component": "model-server"} in peers, peers


def test_roles_on_different_ports_cannot_share_a_pool() -> None:
    class Server:
        def __init__(self, port: int) -> None:
            self.leader_selector, self.port_number = {"a": "b"}, port

    with pytest.raises(ValueError, match="different ports"):
        pool_targets({"prefill": Server(8000), "decode": Server(8200)})  # type: ignore[dict-item]
    assert pool_targets({"wide-ep": Server(8000)}) is None  # type: ignore[dict-item]


@pytest.mark.parametrize("stack", GATEWAY_STACKS)
def test_the_decode_policy_admits_the_sidecar_s_port_by_number(stack: str) -> None:
    """On a decode pod the serving port is its routing sidecar's, a native sidecar (an init container): some policy
    engines never resolved a named port there (kubernetes/kubernetes#125285, projectcalico/calico#8881), so the
    policy names the number every rule that admits the gateway, the picker and the namespace uses (independent review
    of issue 37, m1)."""
    rec = support.plan(stack).recording
    sidecar = containers(templates(rec, "decode")["leader"])["routing-proxy"]
    policy = offline.plain(rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy",
                                   "k3-decode-network-policy").inputs)["spec"]
    serving = [r for r in policy["ingress"] if "ports" in r]
    assert serving and all({"port": ports(sidecar)["http"], "protocol": "TCP"} in r["ports"] for r in serving)
    assert not [p for r in serving for p in r["ports"] if p["port"] == "http"]

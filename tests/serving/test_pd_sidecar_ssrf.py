"""The decode pods' routing sidecar (llm-d-router v0.10.0's, catalog.topologies ROUTING_SIDECARS) runs with SSRF
protection on every disaggregated stack: it sends prefills only to the pods of the gateway's v1 InferencePool, which
it watches with the pods' own service account (the bucket reader), bound to a Role that allows exactly what its
informers call (issue 37 m2; the independent review of the PD stacks, M4)."""

from typing import Any

import pytest

from k3infra import offline
from k3infra.catalog.topologies import ROUTING_SIDECAR_RBAC, ROUTING_SIDECAR_SSRF_POOL_GROUP, routing_sidecar_ssrf_args
from k3infra.observability.checklist import pod_host_port
from k3infra.serving.gateway import INFERENCE_API
from tests import support
from tests.serving.test_gateway import EPP, chart_pool
from tests.serving.test_pd_gateway import containers, templates

PD_STACKS = ("gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd")
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def test_the_allowlist_watches_the_gateway_s_pool_api() -> None:
    assert INFERENCE_API == f"{ROUTING_SIDECAR_SSRF_POOL_GROUP}/v1"
    assert routing_sidecar_ssrf_args("kimi-k3", "k3-gateway") == (
        "--enable-ssrf-protection", "--inference-pool=kimi-k3/k3-gateway", "--pool-group=inference.networking.k8s.io")


@pytest.mark.parametrize("stack", PD_STACKS)
def test_the_vllm_decode_sidecar_s_exact_arguments(stack: str) -> None:
    rec = support.plan(stack).recording
    pool = chart_pool(offline.plain(rec.one(*EPP).inputs))["metadata"]
    for rank, template in templates(rec, "decode").items():  # DEP: every pod serves, every pod runs the sidecar
        sidecar = containers(template)["routing-proxy"]
        assert sidecar["image"] == "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0", rank
        assert sidecar["args"] == [
            "--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false",
            "--enable-ssrf-protection", f"--inference-pool={pool['namespace']}/{pool['name']}",
            "--pool-group=inference.networking.k8s.io"], rank
        assert "env" not in sidecar


def pod_templates(rec: offline.Recording, role: str) -> dict[str, dict[str, Any]]:
    """A role's pod templates: its LeaderWorkerSet's leader and worker, or its Deployment's (a one-node group)."""
    workload = next(r for r in rec.ordered() if r.name == f"k3-{role}-workload")
    spec = offline.plain(workload.inputs)["spec"]
    if "leaderWorkerTemplate" in spec:
        return templates(rec, role)
    return {"pod": spec["template"]}


def _rbac(rec: offline.Recording, kind: str) -> dict[str, Any]:
    return offline.plain(rec.one(f"kubernetes:rbac.authorization.k8s.io/v1:{kind}",
                                 f"k3-routing-proxy-{'role' if kind == 'Role' else 'binding'}").inputs)


@pytest.mark.parametrize("stack", PD_STACKS)
def test_the_sidecar_s_role_is_exactly_what_its_informers_call(stack: str) -> None:
    """list and watch, nothing else (allowlist.go's ListWatch): the pool by name, the namespace's pods by label; bound
    to the decode pods' own service account, the bucket reader whose workload identity they keep."""
    rec = support.plan(stack).recording
    pool = chart_pool(offline.plain(rec.one(*EPP).inputs))["metadata"]
    role, binding = _rbac(rec, "Role"), _rbac(rec, "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == pool["namespace"]
    assert role["rules"] == [
        {"apiGroups": ["inference.networking.k8s.io"], "resources": ["inferencepools"], "verbs": ["list", "watch"],
         "resourceNames": [pool["name"]]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]
    assert [(r["apiGroups"][0], r["resources"][0], tuple(r["verbs"])) for r in role["rules"]] == list(
        ROUTING_SIDECAR_RBAC)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "k3-routing-proxy"}
    accounts = {t["spec"]["serviceAccountName"] for role_name in ("decode", "prefill")
                for t in pod_templates(rec, role_name).values()}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": accounts.pop(), "namespace": pool["namespace"]}]
    assert not accounts
    reader = [offline.plain(r.inputs) for r in rec.ordered() if r.type == "kubernetes:core/v1:ServiceAccount"
              and offline.plain(r.inputs)["metadata"]["name"] == binding["subjects"][0]["name"]]
    assert len(reader) == 1 and reader[0]["automountServiceAccountToken"] is False


@pytest.mark.parametrize("stack", PD_STACKS)
def test_only_the_sidecar_mounts_the_account_s_token(stack: str) -> None:
    rec = support.plan(stack).recording
    for role in ("decode", "prefill"):
        for rank, t in pod_templates(rec, role).items():
            spec = t["spec"]
            assert spec["automountServiceAccountToken"] is False
            mounts = {c["name"]: [m for m in c.get("volumeMounts", []) if m["mountPath"] == TOKEN_DIR]
                      for c in [*spec.get("initContainers", []), *spec["containers"]]}
            token = [v for v in spec["volumes"] if v["name"] == "routing-proxy-token"]
            if role == "prefill":
                assert not token and not any(mounts.values()), (role, rank)
                continue
            assert mounts == {**{n: [] for n in mounts}, "routing-proxy": [
                {"name": "routing-proxy-token", "mountPath": TOKEN_DIR, "readOnly": True}]}, rank
            assert token == [{"name": "routing-proxy-token", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
            ]}}], rank


def test_an_aggregated_stack_has_no_sidecar_role() -> None:
    rec = support.plan("gcp-a4xmax").recording
    assert not [r for r in rec.ordered() if "routing-proxy" in r.name]


def test_the_checklist_names_a_prefill_pod_s_address() -> None:
    """The sidecar refuses a Service's name under SSRF protection (only the pool's pods' IPs and names pass): the
    checklist resolves the prefill's headless Service to one ready pod's IP."""
    rec = support.plan("gcp-a4xmax-pd").recording
    headless = offline.plain(rec.one("kubernetes:core/v1:Service", "k3-prefill-pods").inputs)
    leaders = offline.plain(rec.one("kubernetes:core/v1:Service", "k3-prefill-service").inputs)["spec"]["selector"]
    assert headless["spec"] == {"clusterIP": "None", "selector": leaders, "ports": [
        {"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]}
    assert not [r for r in rec.ordered() if r.name == "k3-decode-pods"]
    assert pod_host_port("k3-prefill-pods.kimi-k3.svc.cluster.local:8000",
                         lambda h: ["10.4.0.7", "10.4.1.9"]) == "10.4.0.7:8000"
    assert pod_host_port("p:8000", lambda h: ["fd00::7"]) == "[fd00::7]:8000"

    def unresolved(host: str) -> list[str]:
        raise OSError("no such host")
    assert pod_host_port("p:8000", unresolved) == "p:8000"
    assert pod_host_port(None) is None

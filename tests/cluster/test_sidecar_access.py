"""The decode pods' routing sidecar's access on the real control plane (issue 37 m2): the bucket reader's account,
its Role and binding and the gateway's InferencePool from a disaggregated stack's render, applied; then, as that
account, exactly what the SSRF allowlist's informers call is allowed (llm-d-router v0.10.0 allowlist.go: list and
watch the pool by a ``metadata.name`` field selector, list and watch the namespace's pods) and nothing else, the
real list requests included (the apiserver authorises a field-selected list against ``resourceNames``)."""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from k3infra import offline
from tests import support
from tests.serving.test_gateway import EPP, chart_pool

from .deploy import stack_documents
from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster

STACK = "kubernetes-gb300-nvl72-pd"
POOLS = "inferencepools.inference.networking.k8s.io"


def _objects() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    docs = stack_documents(STACK)
    binding = next(d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["name"] == "k3-routing-proxy")
    account = binding["subjects"][0]["name"]
    wanted = [d for d in docs if d["kind"] == "Namespace" and d["metadata"]["name"] == binding["metadata"]["namespace"]
              or d["kind"] == "ServiceAccount" and d["metadata"]["name"] == account
              or d["kind"] in ("Role", "RoleBinding") and d["metadata"]["name"] == "k3-routing-proxy"]
    pool = chart_pool(offline.plain(support.plan(STACK).recording.one(*EPP).inputs))
    return [*wanted, pool], binding


@pytest.fixture(scope="module")
def applied(cluster: LocalCluster) -> Iterator[dict[str, Any]]:  # noqa: F811 (the fixture)
    objects, binding = _objects()
    assert [o["kind"] for o in objects] == ["Namespace", "ServiceAccount", "Role", "RoleBinding", "InferencePool"]
    for obj in objects:
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(obj))
    try:
        yield binding
    finally:
        cluster.kubectl("delete", "namespace", binding["metadata"]["namespace"], "--wait=false", check=False)


def test_the_sidecar_may_list_and_watch_its_pool_and_the_pods_and_nothing_else(cluster: LocalCluster,  # noqa: F811
                                                                               applied: dict[str, Any]) -> None:
    ns, account = applied["metadata"]["namespace"], applied["subjects"][0]["name"]
    who = f"system:serviceaccount:{ns}:{account}"

    def can(verb: str, what: str) -> str:
        return cluster.kubectl("auth", "can-i", verb, what, "-n", ns, "--as", who, check=False).stdout.strip()
    asked = {(v, w): can(v, w) for v, w in [
        ("list", f"{POOLS}/k3-gateway"), ("watch", f"{POOLS}/k3-gateway"), ("list", "pods"), ("watch", "pods"),
        ("get", f"{POOLS}/k3-gateway"), ("list", POOLS), ("list", f"{POOLS}/other"), ("get", "pods"),
        ("create", "pods"), ("list", "secrets"), ("list", "services"), ("patch", f"{POOLS}/k3-gateway")]}
    assert asked == {**{k: "no" for k in asked}, ("list", f"{POOLS}/k3-gateway"): "yes",
                     ("watch", f"{POOLS}/k3-gateway"): "yes", ("list", "pods"): "yes", ("watch", "pods"): "yes"}
    # The informers' own requests, through the real apiserver's request-info and RBAC.
    named = cluster.kubectl("get", POOLS, "-n", ns, "--field-selector", "metadata.name=k3-gateway", "-o", "name",
                            "--as", who, check=False)
    assert (named.returncode, named.stdout.strip()) == (0, "inferencepool.inference.networking.k8s.io/k3-gateway"), \
        named.stderr
    unnamed = cluster.kubectl("get", POOLS, "-n", ns, "-o", "name", "--as", who, check=False)
    assert unnamed.returncode != 0 and "Forbidden" in unnamed.stderr
    pods = cluster.kubectl("get", "pods", "-n", ns, "-l", "llm-d.ai/inferenceServing=true", "--as", who, check=False)
    assert pods.returncode == 0, pods.stderr
    elsewhere = cluster.kubectl("get", "pods", "-n", "default", "--as", who, check=False)
    assert elsewhere.returncode != 0 and "Forbidden" in elsewhere.stderr

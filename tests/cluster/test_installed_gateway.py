"""The installed inference gateway's objects on the real control plane (serving.gateway_install): an existing
cluster's stack without ``kubernetes.gatewayClass`` renders a Gateway of agentgateway's class whose
``infrastructure.parametersRef`` names an AgentgatewayParameters, an HTTPRoute to the InferencePool; the apiserver
admits each with the vendored CRDs (Gateway API v1.6.1, agentgateway v1.0.0), CEL rules included. The
kubernetes-* stacks are not in test_stacks.py's list, so this one checks them here; the cloud stacks' Gateways are
admitted there."""

import json

from k3infra import offline

from tests.support import plan

from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster

KINDS = ("kubernetes:gateway.networking.k8s.io/v1:Gateway", "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
         "kubernetes:agentgateway.dev/v1alpha1:AgentgatewayParameters")
KEYS = ("s3AccessKeyId=SENTINEL0key0id", "s3SecretAccessKey=SENTINEL0secret")


def _objects(stack: str, *sets: str) -> list[dict]:
    rec = plan(stack, *KEYS, *sets).recording
    out = []
    for r in rec.resources:
        if r.type in KINDS:
            doc = offline.plain(r.inputs)
            doc.pop("status", None)
            out.append(doc)
    return out


NAMESPACE = "k3-gateway-admission"
"""A namespace of this module's own (the stacks' tests use kimi-k3), deleted after each dry run."""


def _dry_run(cluster: LocalCluster, docs: list[dict]) -> str:  # noqa: F811
    for d in docs:
        d["metadata"]["namespace"] = NAMESPACE
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    try:
        proc = cluster.kubectl("apply", "--dry-run=server", "-f", "-", check=False,
                               input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    finally:
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
    return proc.stderr.strip() if proc.returncode else ""


def test_the_installed_gateway_objects_are_admitted(cluster: LocalCluster) -> None:  # noqa: F811
    docs = _objects("kubernetes-b300")
    assert sorted(d["kind"] for d in docs) == ["AgentgatewayParameters", "Gateway", "HTTPRoute"]
    assert _dry_run(cluster, docs) == ""


def test_a_wrong_parameters_field_is_refused(cluster: LocalCluster) -> None:  # noqa: F811
    """Planted: a Gateway whose parametersRef lacks its group (required by the Gateway CRD)."""
    docs = _objects("kubernetes-b300")
    for d in docs:
        if d["kind"] == "Gateway":
            del d["spec"]["infrastructure"]["parametersRef"]["group"]
    assert "group" in _dry_run(cluster, docs)

"""The rendered scaler objects on a real apiserver with KEDA's vendored CRDs installed: the ScaledObject and its
TriggerAuthentication are admitted, and the workload the ScaledObject scales exists (issue 27). A planted mistake in
the ScaledObject is refused by the same apiserver."""

import copy
import json
from typing import Any

import pytest

from k3infra.render import apply_order
from tests import support

from .deploy import FIELD_MANAGER
from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster

STACKS = [("aws-eks", "autoscaling.enabled=true", "replicas=2"),
          ("gcp-a4-sglang", "autoscaling.enabled=true", "replicas=2", "gcp.checkReservation=false"),
          ("azure-gb300", "autoscaling.enabled=true", "replicas=2", "azure.quotaVcpus=512"),
          ("alicloud-ack", "autoscaling.enabled=true", "replicas=2")]
"""A Deployment's scaler (EKS) and a LeaderWorkerSet's (GKE, scaled by whole groups; AKS, whose GB300 groups share
one ComputeDomain; ACK, whose TriggerAuthentication reads a Secret)."""

KINDS = ("Namespace", "Deployment", "LeaderWorkerSet", "TriggerAuthentication", "ScaledObject")


def documents(variant: tuple[str, ...]) -> list[dict[str, Any]]:
    """The namespace, the workload and the scaler objects of the plan, in apply order."""
    rec = support.plan(*variant).recording
    docs = [copy.deepcopy(i.document) for i in apply_order(rec) if not i.chart and i.document["kind"] in KINDS]
    # the serving namespace's objects (AKS also patches the add-on's keda-operator, which runs only on AKS)
    return [d for d in docs if d["metadata"].get("namespace", "kimi-k3") == "kimi-k3"
            and (d["kind"] != "Namespace" or d["metadata"]["name"] == "kimi-k3")]


def apply(cluster: LocalCluster, doc: dict[str, Any]):  # noqa: F811 (the fixture's name)
    return cluster.kubectl("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "-f",
                           "-", input=json.dumps(doc), check=False)


@pytest.mark.parametrize("variant", STACKS, ids=lambda v: v[0])
def test_the_scaled_object_is_admitted_and_points_at_a_workload_that_exists(cluster: LocalCluster,  # noqa: F811
                                                                            variant: tuple[str, ...]) -> None:
    docs = documents(variant)
    assert [d["kind"] for d in docs][-2:] == ["TriggerAuthentication", "ScaledObject"]
    try:
        for doc in docs:
            proc = apply(cluster, doc)
            assert proc.returncode == 0, f"{doc['kind']} {doc['metadata']['name']}: {proc.stderr}"
        so = json.loads(cluster.kubectl("get", "scaledobjects.keda.sh", "k3-scaler", "-n", "kimi-k3", "-o",
                                        "json").stdout)
        target = so["spec"]["scaleTargetRef"]
        group = target["apiVersion"].split("/")[0] if "/" in target["apiVersion"] else ""
        resource = {"Deployment": "deployments.apps", "LeaderWorkerSet": "leaderworkersets.leaderworkerset.x-k8s.io"}
        workload = json.loads(cluster.kubectl("get", resource[target["kind"]], target["name"], "-n", "kimi-k3",
                                              "-o", "json").stdout)
        assert workload["metadata"]["name"] == target["name"] and group in workload["apiVersion"]
        assert workload["spec"]["replicas"] == so["spec"]["minReplicaCount"] == 1

        planted = copy.deepcopy(docs[-1])
        planted["spec"]["minReplicaCount"] = "one"
        refused = apply(cluster, planted)
        assert refused.returncode != 0 and "minReplicaCount" in refused.stderr
    finally:
        cluster.kubectl("delete", "namespace", "kimi-k3", "--ignore-not-found", "--wait=true", "--timeout=120s",
                        check=False, timeout=150)


PD_STACK = ("kubernetes-gb300-nvl72-pd", "autoscaling.enabled=true", "kubernetes.prometheusOperator=present",
            "topology.decode.groups=2")
"""A disaggregated topology: one ScaledObject per role (issue 37 §6), each on its role's LeaderWorkerSet."""


def test_each_roles_scaled_object_is_admitted_and_points_at_its_roles_workload(cluster: LocalCluster  # noqa: F811
                                                                               ) -> None:
    docs = documents(PD_STACK)
    scalers = [d for d in docs if d["kind"] == "ScaledObject"]
    assert sorted(d["metadata"]["name"] for d in scalers) == ["k3-scaler-decode", "k3-scaler-prefill"]
    try:
        for doc in docs:
            proc = apply(cluster, doc)
            assert proc.returncode == 0, f"{doc['kind']} {doc['metadata']['name']}: {proc.stderr}"
        for role in ("prefill", "decode"):
            so = json.loads(cluster.kubectl("get", "scaledobjects.keda.sh", f"k3-scaler-{role}", "-n", "kimi-k3", "-o",
                                            "json").stdout)
            target = so["spec"]["scaleTargetRef"]
            lws = json.loads(cluster.kubectl("get", "leaderworkersets.leaderworkerset.x-k8s.io", target["name"], "-n",
                                             "kimi-k3", "-o", "json").stdout)
            template = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"]
            assert target["kind"] == "LeaderWorkerSet" and template["llm-d.ai/role"] == role
            assert lws["spec"]["replicas"] == so["spec"]["minReplicaCount"] == 1
            assert so["spec"]["maxReplicaCount"] == {"prefill": 1, "decode": 2}[role]
            assert f'llm_d_ai_role="{role}"' in so["spec"]["triggers"][0]["metadata"]["query"]
        planted = copy.deepcopy(scalers[0])
        planted["spec"]["maxReplicaCount"] = "two"
        refused = apply(cluster, planted)
        assert refused.returncode != 0 and "maxReplicaCount" in refused.stderr
    finally:
        cluster.kubectl("delete", "namespace", "kimi-k3", "--ignore-not-found", "--wait=true", "--timeout=120s",
                        check=False, timeout=150)

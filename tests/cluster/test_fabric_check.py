"""The fabric check on the real control plane, for the multi-node stack with every kind of claim (gcp-a4xmax: the RDMA
NICs from DRANET, a ComputeDomain's IMEX channel, the sub-block affinity): admitted, its pods scheduled one per GPU
node of one NVLink domain with their claims allocated there, its Job complete; then the server, applied after it
(deploy.py: as Pulumi orders them), on the same nodes."""

from collections.abc import Iterator
from typing import Any

import pytest

from . import checks
from .deploy import Deployment
from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster

STACK = "gcp-a4xmax"
SUBBLOCK = "cloud.google.com/gce-topology-subblock"


@pytest.fixture(scope="module")
def deployed(cluster: LocalCluster) -> Iterator[Deployment]:
    dep = Deployment(cluster, STACK)
    try:
        yield dep.deploy()
    finally:
        dep.clean()


def _pods(dep: Deployment, component: str) -> list[dict[str, Any]]:
    return sorted((p for p in dep.pods() if (p["metadata"].get("labels") or {}).get(
        "app.kubernetes.io/component") == component), key=lambda p: p["metadata"]["name"])


def test_the_check_is_gated_before_the_server(deployed: Deployment) -> None:
    gates, held = deployed.gated()
    assert [g["metadata"]["name"] for g in gates] == ["k3-fabric-0"]
    assert [h["metadata"]["name"] for h in held] == ["k3-server-lws"]


def test_everything_admitted_and_every_job_complete(deployed: Deployment) -> None:
    assert checks.admitted(deployed) == []
    assert checks.jobs_complete(deployed) == []


def test_the_check_pods_ran_one_per_gpu_node_of_one_domain_with_the_servers_claims(deployed: Deployment) -> None:
    pods = _pods(deployed, "fabric-check")
    assert [p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for p in pods] == ["0", "1"]
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)
    nodes = [p["spec"]["nodeName"] for p in pods]
    assert sorted(nodes) == sorted(deployed.profile.gpu_nodes) and len(set(nodes)) == 2
    live = deployed.nodes()
    assert len({live[n]["metadata"]["labels"][SUBBLOCK] for n in nodes}) == 1
    server = _pods(deployed, "model-server")
    assert len(server) == 2
    # The check's pods claim what the server's do; they were bound to their nodes, which the scheduler does only
    # once every claim of the pod is allocated there (its DRA plugin's PreBind). Their generated claims are gone by
    # now: the claim controller releases and deletes a finished pod's (kubernetes v1.35.4
    # pkg/controller/resourceclaim/controller.go, "deleting unused generated claim"). The server's stay.
    for pod in pods:
        assert {c["name"] for c in pod["spec"]["resourceClaims"]} == {"rdma", "nvlink-channel"}, pod["metadata"]["name"]
    for pod in server:
        got = {s["name"] for s in pod["status"].get("resourceClaimStatuses") or [] if s.get("resourceClaimName")}
        assert got == {"rdma", "nvlink-channel"}, pod["metadata"]["name"]
    # The server came after the check, on the nodes the check proved.
    assert sorted(p["spec"]["nodeName"] for p in server) == sorted(nodes)


def test_the_generic_checks_hold_with_the_check_in_place(deployed: Deployment) -> None:
    assert checks.placement(deployed) == []
    assert checks.claims(deployed) == []
    assert checks.topology(deployed) == []

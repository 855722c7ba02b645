"""Every Kubernetes stack on the real control plane: admitted, scheduled, claimed, sized, reconciled, drained,
re-applied. The existing-cluster stacks too, on kwok nodes shaped from their own plan.

One stack at a time on the session's cluster (``deployed`` cleans up after each): its node profile from the plan
and the catalog (tests/cluster/profiles.py), the vendored CRDs, then its render with server-side apply in the
render's order. Charts stand in by their effects (tests/cluster/dra.py ``notes``). The drain runs last: it evicts.
"""

from collections.abc import Iterator

import pytest

from . import checks
from .deploy import Deployment, kubernetes_stacks
from .fixtures import cluster  # noqa: F401 (the fixture)
from .local import LocalCluster

STACKS = kubernetes_stacks()


@pytest.fixture(scope="module", params=STACKS)
def deployed(request: pytest.FixtureRequest, cluster: LocalCluster) -> Iterator[Deployment]:
    """``request.param``'s stack deployed and settled; everything it created is deleted afterwards."""
    dep = Deployment(cluster, request.param)
    try:
        yield dep.deploy()
    finally:
        dep.clean()


def test_the_kubernetes_stacks() -> None:
    assert STACKS == ["alicloud-ack", "aws-eks", "aws-eks-pd", "aws-hyperpod", "azure-gb300", "azure-gb300-pd",
                      "gcp-a4-sglang", "gcp-a4x-sglang", "gcp-a4xmax", "gcp-a4xmax-pd",
                      "kubernetes-b300", "kubernetes-gb300-nvl72", "kubernetes-gb300-nvl72-pd"]


def test_every_object_admitted(deployed: Deployment) -> None:
    assert checks.admitted(deployed) == []


def test_only_kinds_without_a_public_crd_are_left_out(deployed: Deployment) -> None:
    expected = [f"{kind}//rdma-{i}" for i in range(8) for kind in ("GKENetworkParamSet", "Network")]
    assert deployed.skipped == (expected if deployed.stack == "gcp-a4-sglang" else [])


def test_critical_chart_pods_admitted_in_their_namespace(deployed: Deployment) -> None:
    assert checks.critical_pods_admitted(deployed) == []


def test_pods_scheduled_where_they_must_run(deployed: Deployment) -> None:
    assert checks.placement(deployed) == []


def test_every_dra_claim_allocated_on_its_node(deployed: Deployment) -> None:
    assert checks.claims(deployed) == []


def test_every_server_pod_claims_its_devices_from_the_expected_driver(deployed: Deployment) -> None:
    assert checks.claim_classes(deployed) == []


def test_every_server_group_is_as_large_as_the_plan_sizes_it(deployed: Deployment) -> None:
    if not any(kind in ("Deployment", "StatefulSet", "LeaderWorkerSet") for kind, _ in deployed.server_objects):
        pytest.skip(f"{deployed.stack} serves through its cloud's managed endpoint (no server pods rendered)")
    assert checks.group_sizes(deployed) == []


def test_a_replica_shares_one_nvlink_domain(deployed: Deployment) -> None:
    assert checks.topology(deployed) == []


def test_lws_groups_carry_the_leader_address_the_engine_uses(deployed: Deployment) -> None:
    assert checks.leader_address(deployed) == []


def test_jobs_complete(deployed: Deployment) -> None:
    assert checks.jobs_complete(deployed) == []


def test_the_server_readiness_gates_its_service(deployed: Deployment) -> None:
    if not any(d["kind"] in ("Deployment", "StatefulSet", "LeaderWorkerSet") for d in deployed.documents):
        pytest.skip(f"{deployed.stack} serves through its cloud's managed endpoint (no server pods rendered)")
    assert checks.serving_endpoints(deployed) == []


def test_reapplying_the_render_changes_nothing(deployed: Deployment) -> None:
    assert checks.reapply(deployed) == []


def test_gpu_nodes_drain_through_the_eviction_api(deployed: Deployment) -> None:
    assert checks.drain(deployed) == []

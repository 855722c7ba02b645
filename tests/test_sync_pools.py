"""The weight sync's own pools (catalog.transfer.SYNC_POOLS): empty until the Job asks, empty again after it, on the
network-optimized machine the sizing counts on; the clouds without one run the sync on their system nodes."""

import pytest

from k3infra import offline
from k3infra.catalog import Cloud
from k3infra.catalog.transfer import SYNC_POOLS
from tests.support import STACKS, plan


def test_gke_sync_pool_scales_from_zero_on_tier_1_c3() -> None:
    p = plan("gcp-a4xmax")
    pool = offline.unwrap(p.recording.one("gcp:container/nodePool:NodePool", "k3-sync-nodes-pool").inputs)
    assert pool["initialNodeCount"] == 0
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 2, "locationPolicy": "ANY"}
    assert pool["networkConfig"] == {"networkPerformanceConfig": {"totalEgressBandwidthTier": "TIER_1"}}
    node = pool["nodeConfig"]
    # Tier_1 needs gVNIC; the taint keeps every other pod off the pool
    assert (node["machineType"], node["gvnic"]) == ("c3-highcpu-44", {"enabled": True})
    assert node["taints"] == [{"key": "k3infra.dev/sync", "value": "true", "effect": "NO_SCHEDULE"}]
    assert node["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert p.config.sizing.sync is not None and p.config.sizing.sync.node == SYNC_POOLS[Cloud.GCP].node


def test_aks_sync_pool_scales_from_zero_and_leaves_the_count_to_the_autoscaler() -> None:
    p = plan("azure-gb300")
    reg = p.recording.one("azure-native:containerservice:AgentPool", "k3-sync-nodes-pool")
    pool = offline.unwrap(reg.inputs)
    assert (pool["count"], pool["enableAutoScaling"], pool["minCount"], pool["maxCount"]) == (0, True, 0, 2)
    assert (pool["mode"], pool["vmSize"]) == ("User", "Standard_D48s_v5")
    assert pool["nodeTaints"] == ["k3infra.dev/sync=true:NoSchedule"]
    # a second `pulumi up` mid-copy must not set the autoscaler's count back to zero
    assert reg.ignore_changes == ("count",)


@pytest.mark.parametrize("stack", STACKS)
def test_the_sync_job_lands_on_its_pool_exactly_where_the_sizing_counts_on_one(stack: str) -> None:
    p = plan(stack)
    s = p.config.sizing.sync
    if s is None:
        return
    job = offline.unwrap(p.recording.one("kubernetes:batch/v1:Job", "k3-sync-job").inputs)
    selector = job["spec"]["template"]["spec"]["nodeSelector"]
    assert (selector.get("k3infra.dev/pool") == "sync") == s.pool == (p.config.cloud in SYNC_POOLS)
    pools = [r for r in p.recording.resources if r.name == "k3-sync-nodes-pool"]
    assert len(pools) == (1 if s.pool else 0)
    # the Job waits for its pool, never for the GPU pool
    deps = {p.recording.get(u).name for u in p.recording.one("kubernetes:batch/v1:Job", "k3-sync-job").dependencies}
    assert ("k3-sync-nodes-pool" in deps) == s.pool and "k3-gpu-pool" not in deps


@pytest.mark.parametrize(("stack", "resource", "bound"), [
    ("gcp-a4xmax", "gcp:container/nodePool:NodePool", ("autoscaling", "totalMaxNodeCount")),
    ("azure-gb300", "azure-native:containerservice:AgentPool", ("maxCount",))])
def test_a_sync_pool_grows_to_one_node_per_worker(stack: str, resource: str, bound: tuple[str, ...]) -> None:
    p = plan(stack, "weights.syncWorkers=4")
    pool = offline.unwrap(p.recording.one(resource, "k3-sync-nodes-pool").inputs)
    for key in bound:
        pool = pool[key]
    assert pool == 4 and p.config.sizing.sync is not None and p.config.sizing.sync.nodes == 4


@pytest.mark.parametrize("stack", STACKS)
def test_sync_workers_are_kept_apart_on_their_pool_and_spread_softly_elsewhere(stack: str) -> None:
    p = plan(stack)
    if p.config.sizing.sync is None:
        return
    pod = offline.unwrap(p.recording.one("kubernetes:batch/v1:Job", "k3-sync-job").inputs)["spec"]["template"]["spec"]
    apart = (pod.get("affinity") or {}).get("podAntiAffinity")
    spread = pod.get("topologySpreadConstraints")
    if p.config.sizing.sync.pool:
        assert apart["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == "kubernetes.io/hostname"
        assert spread is None
    else:  # shared system nodes: a busy node must not leave a worker waiting
        assert apart is None and spread[0]["whenUnsatisfiable"] == "ScheduleAnyway"

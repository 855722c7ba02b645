"""The weight sync's own pools (catalog.transfer.SYNC_POOLS): empty until the Job asks, empty again after it, on the
network-optimized machine the sizing counts on; the clouds without one run the sync on their system nodes."""

import json
import re
from pathlib import Path

import pytest

from k3infra import offline
from k3infra.aws.sync_pool import autoscaler_policy
from k3infra.catalog import SYNC_POOL_PLATFORMS, Cloud
from k3infra.catalog.transfer import SYNC_POOLS
from tests.support import ROOT, STACKS, plan


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


def test_eks_sync_group_scales_from_zero_under_an_autoscaler_of_its_own() -> None:
    p = plan("aws-eks")
    reg = p.recording.one("aws:eks/nodeGroup:NodeGroup", "k3-sync-nodes-pool")
    group = offline.unwrap(reg.inputs)
    assert (group["instanceTypes"], group["amiType"], group["capacityType"]) == (
        ["c6in.8xlarge"], "AL2023_x86_64_STANDARD", "ON_DEMAND")
    assert group["scalingConfig"] == {"desiredSize": 0, "minSize": 0, "maxSize": 2}
    assert group["taints"] == [{"key": "k3infra.dev/sync", "value": "true", "effect": "NO_SCHEDULE"}]
    assert group["labels"] == {"k3infra.dev/pool": "sync"}
    # the autoscaler owns the desired size (terraform-aws-modules/eks's lifecycle)
    assert reg.ignore_changes == ("scalingConfig.desiredSize",)
    tags = sorted((offline.unwrap(r.inputs)["tag"]["key"], offline.unwrap(r.inputs)["tag"]["value"])
                  for r in p.recording.resources if r.type == "aws:autoscaling/tag:Tag")
    assert tags == [("k8s.io/cluster-autoscaler/node-template/label/k3infra.dev/pool", "sync"),
                    ("k8s.io/cluster-autoscaler/node-template/taint/k3infra.dev/sync", "true:NoSchedule")]
    chart = offline.unwrap(p.recording.one("kubernetes:helm.sh/v4:Chart", "k3-sync-nodes-autoscaler").inputs)
    values = chart["values"]
    assert (chart["chart"], chart["version"], values["cloudProvider"], values["awsRegion"]) == (
        "cluster-autoscaler", "9.43.2", "aws", "us-west-2")
    # one ASG named, no auto-discovery: the system and GPU groups are never touched
    assert [(g["minSize"], g["maxSize"]) for g in values["autoscalingGroups"]] == [(0, 2)]
    assert "autoDiscovery" not in values
    assert values["extraArgs"]["scale-down-unneeded-time"] == "2m"
    assert values["nodeSelector"] == {"k3infra.io/pool": "system"}
    identity = offline.unwrap(p.recording.one("aws:eks/podIdentityAssociation:PodIdentityAssociation",
                                              "k3-sync-nodes-autoscaler-identity").inputs)
    assert (identity["namespace"], identity["serviceAccount"]) == ("kube-system", "k3-sync-autoscaler")
    s = p.config.sizing.sync
    assert s is not None and s.pool and s.seconds <= 906 and s.node.sku == "c6in.8xlarge"


def test_the_eks_autoscaler_may_scale_only_its_own_group() -> None:
    doc = autoscaler_policy("k3", "sync-ng")
    writes = [st for st in doc["Statement"] if "autoscaling:SetDesiredCapacity" in st["Action"]]
    assert writes == [{"Effect": "Allow", "Resource": "*",
                       "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                       "Condition": {"StringEquals": {"aws:ResourceTag/eks:cluster-name": "k3",
                                                      "aws:ResourceTag/eks:nodegroup-name": "sync-ng"}}}]
    assert all("Condition" in st for st in doc["Statement"]
               if {a for a in st["Action"] if not a.split(":")[1].startswith(("Describe", "Get"))})
    json.dumps(doc)


@pytest.mark.parametrize("stack", STACKS)
def test_the_sync_job_lands_on_its_pool_exactly_where_the_sizing_counts_on_one(stack: str) -> None:
    p = plan(stack)
    s = p.config.sizing.sync
    if s is None:
        return
    job = offline.unwrap(p.recording.one("kubernetes:batch/v1:Job", "k3-sync-job").inputs)
    selector = job["spec"]["template"]["spec"]["nodeSelector"]
    expected = p.config.cloud in SYNC_POOLS and p.config.platform in SYNC_POOL_PLATFORMS
    assert (selector.get("k3infra.dev/pool") == "sync") == s.pool == expected
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


DOCS = ROOT / "docs"
CLOUD_PAGES = {Cloud.GCP: "gcp.md", Cloud.AZURE: "azure.md", Cloud.AWS: "aws.md", Cloud.ALICLOUD: "alicloud.md",
               Cloud.KUBERNETES: "kubernetes.md"}
"""The page of each cloud's stacks."""


def _sentences(page: Path) -> list[str]:
    """The page's prose, code blocks left out, cut into sentences (at a full stop or semicolon)."""
    text = re.sub(r"\s+", " ", re.sub(r"```.*?```", "", page.read_text(), flags=re.S))
    return re.split(r"(?<=[.;])\s+", text)


def test_the_docs_put_the_sync_where_the_deployments_run_it() -> None:
    """Issue 36 item 14: a page that tells where the sync runs names its own pool on the clouds that build one.

    A cloud with a sync pool has its machine type on its page; on that page and on every cloud-neutral one, a
    sentence about the sync and the system pool or nodes also names the sync's own pool (or the clouds without one)."""
    for cloud, pool in SYNC_POOLS.items():
        assert pool.node.sku in (DOCS / CLOUD_PAGES[cloud]).read_text(), (cloud, pool.node.sku)
    without_pool = {CLOUD_PAGES[c] for c in CLOUD_PAGES if c not in SYNC_POOLS}
    stale = [(page.name, s) for page in sorted(DOCS.glob("*.md")) if page.name not in without_pool
             for s in _sentences(page)
             if re.search(r"\bsync\b", s, re.I) and re.search(r"system (pool|nodes?)\b", s, re.I)
             and not re.search(r"own pool|sync pool|SYNC_POOLS", s)]
    assert stale == []

"""The cold start counts what the stack's first `pulumi up` creates and waits for, read off its planned resources
(issue 36, minors 8 and 9, re-review MINOR-1): AKS's GPU pool waits for its grant on the reservation group, and its
Kubernetes objects for the deployer's grant on the cluster; PAI-EAS has no cluster and no GPU pool to create."""

from rich.text import Text

from k3infra import offline, timeline
from k3infra.sizing import API_GRANT_PHASE, GRANT_WAIT_PHASE, ColdStart
from tests.support import plan

CLUSTERS_AND_POOLS = ("containerservice:ManagedCluster", "containerservice:AgentPool", "cs/managedKubernetes",
                      "cs/nodePool", "eks/cluster", "eks/nodeGroup", "container/cluster", "container/nodePool")
"""Type fragments of the clouds' clusters and GPU pools."""


def _phases(stack: str, *sets: str) -> dict[str, tuple[int, int, bool]]:
    return {p.name: (p.start_seconds, p.seconds, p.critical) for p in plan(stack, *sets).config.sizing.cold_start.phases}


def _sleep_minutes(stack: str, *sets: str, wait: str = "-crg-access-propagation") -> int:
    """The createDuration of the time:Sleep whose name ends with ``wait`` (by default the GPU pool's wait for its
    grant), 0 where there is none."""
    sleeps = [offline.unwrap(r.inputs)["createDuration"] for r in plan(stack, *sets).recording.resources
              if r.type == "time:index/sleep:Sleep" and r.name.endswith(wait)]
    assert len(sleeps) <= 1
    return int(sleeps[0].removesuffix("m")) if sleeps else 0


DEPLOYER_WAIT = "-deployer-cluster-admin-propagation"
"""The wait the Kubernetes provider of an Entra AKS cluster depends on (k3infra.azure.entra)."""


def test_the_aks_pool_starts_after_the_grant_it_waits_for() -> None:
    """The grant and its 60-minute wait start beside the cluster (the identity exists before the cluster): the pool
    starts at the later of the two, 60 min, and the first `pulumi up` serves after ~104 min, not 56 min 44 s (the
    fabric check's 150 s after the pre-pull included)."""
    minutes = _sleep_minutes("azure-gb300")
    assert minutes == 60
    phases = _phases("azure-gb300")
    assert phases["cluster"] == (0, 900, False)
    assert phases[GRANT_WAIT_PHASE] == (0, minutes * 60, True)
    assert phases["GPU pool"][:2] == (minutes * 60, 1500)
    cs = plan("azure-gb300").config.sizing.cold_start
    assert cs.total_seconds == 3600 + 1500 + 300 + 150 + 104 + 600 == 6254


def test_the_grant_wait_follows_the_setting_and_the_capacity() -> None:
    """A wait shorter than the cluster leaves the cluster on the critical path; no wait, no phase."""
    short = _phases("azure-gb300", "azure.rolePropagationMinutes=10")
    assert _sleep_minutes("azure-gb300", "azure.rolePropagationMinutes=10") == 10
    assert (short["cluster"], short[GRANT_WAIT_PHASE], short["GPU pool"][:2]) == (
        (0, 900, True), (0, 600, False), (900, 1500))
    for sets in (("azure.rolePropagationMinutes=0",), ("capacity.type=on-demand", "capacity.groupId=null")):
        assert _sleep_minutes("azure-gb300", *sets) == 0
        assert GRANT_WAIT_PHASE not in _phases("azure-gb300", *sets), sets
        assert plan("azure-gb300", *sets).config.sizing.cold_start.total_seconds == 3404 + 150


def test_every_kubernetes_object_on_aks_waits_for_the_deployers_grant() -> None:
    """The Kubernetes provider waits for the deployer's cluster-admin grant to propagate, so the sync Job is created
    5 minutes after the cluster, not at its end: the timeline draws that wait as its own phase, as long as the wait
    resource's createDuration, and the sync starts at 1,200 s. Off the critical path here (the pool waits 60 min)."""
    minutes = _sleep_minutes("azure-gb300", wait=DEPLOYER_WAIT)
    assert minutes == 5
    provider = plan("azure-gb300").recording.one("pulumi:providers:kubernetes", "k3-k8s")
    assert [d for d in provider.dependencies if d.endswith(DEPLOYER_WAIT)]
    phases = _phases("azure-gb300")
    assert phases[API_GRANT_PHASE] == (900, minutes * 60, False)
    assert phases["weight sync"][0] == 900 + minutes * 60 == 1200
    assert phases["image pre-pull"][:2] == (5100, 300)
    cs = plan("azure-gb300").config.sizing.cold_start
    rows = {line[2:16].rstrip(): line for line in Text.from_markup(timeline.render(cs)).plain.splitlines()}
    cell = lambda seconds: round(seconds * timeline.WIDTH / cs.total_seconds)  # noqa: E731
    assert rows[API_GRANT_PHASE].index("░") - rows[API_GRANT_PHASE].index("|") - 1 == cell(900)
    assert rows["weight sync"].index("░") - rows["weight sync"].index("|") - 1 == cell(1200)
    # Local accounts: no grant, no wait, the sync at the cluster's end.
    assert _sleep_minutes("azure-gb300", "azure.localAccounts=true", wait=DEPLOYER_WAIT) == 0
    local = _phases("azure-gb300", "azure.localAccounts=true")
    assert API_GRANT_PHASE not in local and local["weight sync"][0] == 900


def test_the_api_grant_is_on_the_critical_path_when_the_sync_is() -> None:
    """No pool wait and a bucket that takes in 8 Gbps: the sync outlasts the GPU pool and the pre-pull, and the total
    counts the grant's 5 minutes before it (4,113 s, not 3,813 s)."""
    cs = plan("azure-gb300", "azure.rolePropagationMinutes=0", "weights.bucketIngressGbps=8").config.sizing.cold_start
    phases = {p.name: (p.start_seconds, p.seconds, p.critical) for p in cs.phases}
    assert (phases["cluster"], phases[API_GRANT_PHASE], phases["weight sync"], phases["GPU pool"]) == (
        (0, 900, True), (900, 300, True), (1200, 2209, True), (900, 1500, False))
    assert (cs.total_seconds, cs.bottleneck) == (900 + 300 + 2209 + 104 + 600, "weight sync") == (4113, "weight sync")
    assert [p.name for p in cs.phases if p.critical] == ["cluster", API_GRANT_PHASE, "weight sync", "load", "warm-up"]


def test_the_pre_pull_waits_for_the_kubernetes_objects_when_the_pool_is_quicker() -> None:
    """The pre-pull is a DaemonSet: on a pool ready before the wait ends it starts after the wait, which is then the
    critical path."""
    cs = ColdStart(cluster_seconds=900, gpu_pool_seconds=60, sync_seconds=0, image_pull_seconds=300, load_seconds=100,
                   warmup_seconds=600, kubernetes_wait_seconds=300)
    assert [(p.name, p.start_seconds, p.critical) for p in cs.phases] == [
        ("cluster", 0, True), (API_GRANT_PHASE, 900, True), ("GPU pool", 900, False), ("image pre-pull", 1200, True),
        ("load", 1500, True), ("warm-up", 1600, True)]
    assert (cs.total_seconds, cs.bottleneck) == (2200, API_GRANT_PHASE)


def test_pai_eas_creates_no_cluster_and_no_gpu_pool() -> None:
    p = plan("alicloud-pai")
    assert not [r.type for r in p.recording.resources if any(t in r.type for t in CLUSTERS_AND_POOLS)]
    cs = p.config.sizing.cold_start
    assert _phases("alicloud-pai") == {"image pull": (0, 300, True), "load": (300, 2496, True),
                                       "warm-up": (2796, 600, True)}
    assert (cs.total_seconds, cs.bottleneck) == (3396, "image pull")
    assert cs.nothing_to_create.startswith("PAI-EAS runs the service on the machines of its dedicated resource group")
    # ACK, the same cloud with a cluster, still counts both
    assert [r.type for r in plan("alicloud-ack").recording.resources if "cs/" in r.type]
    assert {"cluster", "GPU pool"} <= set(_phases("alicloud-ack"))


def test_a_topology_draws_each_role_after_its_own_fabric_check() -> None:
    """Issue 37: the timeline draws both roles. On aws-eks-pd the one-node prefill runs no fabric check and loads once
    the image is on its node; the two-node decode loads after its own check, 150 s later, and ends last: its chain is
    the critical path, the prefill's is not, and the total is the decode's end."""
    phases = _phases("aws-eks-pd")
    pulled = sum(phases["image pre-pull"][:2])
    assert "fabric check prefill" not in phases and "fabric check" not in phases
    assert phases["load prefill"] == (pulled, 144, False)
    assert phases["warm-up prefill"] == (pulled + 144, 600, False)
    assert phases["fabric check decode"] == (pulled, 150, True)
    assert phases["load decode"] == (pulled + 150, 72, True)
    assert phases["warm-up decode"] == (pulled + 150 + 72, 600, True)
    assert plan("aws-eks-pd").config.sizing.cold_start.total_seconds == pulled + 150 + 72 + 600 == 3522
    drawn = Text.from_markup(timeline.render(plan("aws-eks-pd").config.sizing.cold_start)).plain
    assert [line.split("|")[0].strip() for line in drawn.splitlines()[1:-2]] == [
        "* cluster", "* GPU pool", "* image pre-pull", "weight sync", "load prefill", "warm-up prefill",
        "* fabric check decode", "* load decode", "* warm-up decode"]


def test_every_node_of_every_role_shares_the_bucket_while_they_load() -> None:
    """The loader class of the fourth review: on kubernetes-gb300-nvl72-pd both roles' six nodes read the store at
    once, 10 Gbps among six, not among one group's two. The prefill's 780 GB per node take 3,744 s (the start-up
    budget sized for 10 Gbps / 2 allowed 2,780 s: the probe would have killed it mid-load), the DEP decode's 390 GB
    per node 1,872 s; each role's start-up budget covers its own load and warm-up, and the total waits for the
    prefill (its warm-ups counted once in what the plan says, not once per role)."""
    s = plan("kubernetes-gb300-nvl72-pd").config.sizing
    assert s.topology is not None
    roles = {r.name: r for r in s.topology.roles}
    assert {n: (r.load_bytes_per_node, r.load_seconds) for n, r in roles.items()} == {
        "prefill": (780_000_000_000, 3744), "decode": (390_000_000_000, 1872)}
    assert all(r.probe_budget_seconds >= r.load_seconds + s.engine.warmup_seconds for r in roles.values())
    assert {n: r.cold_start.load_limit for n, r in roles.items()} == {
        n: "its share of the bucket's egress: 10 Gbps / 6 node(s)" for n in roles}
    cs = s.cold_start
    assert cs.total_seconds == sum(_phases("kubernetes-gb300-nvl72-pd")["warm-up prefill"][:2]) == 5811
    assert cs.above_target is not None and cs.above_target.count("warm-up 10 min") == 1

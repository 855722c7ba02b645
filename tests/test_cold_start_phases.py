"""The cold start counts what the stack's first `pulumi up` creates and waits for, read off its planned resources
(issue 36, minors 8 and 9): AKS's GPU pool waits for its grant on the reservation group; PAI-EAS has no cluster and
no GPU pool to create."""

from k3infra import offline
from k3infra.sizing import GRANT_WAIT_PHASE
from tests.support import plan

CLUSTERS_AND_POOLS = ("containerservice:ManagedCluster", "containerservice:AgentPool", "cs/managedKubernetes",
                      "cs/nodePool", "eks/cluster", "eks/nodeGroup", "container/cluster", "container/nodePool")
"""Type fragments of the clouds' clusters and GPU pools."""


def _phases(stack: str, *sets: str) -> dict[str, tuple[int, int, bool]]:
    return {p.name: (p.start_seconds, p.seconds, p.critical) for p in plan(stack, *sets).config.sizing.cold_start.phases}


def _sleep_minutes(stack: str, *sets: str) -> int:
    """The createDuration of the GPU pool's wait for its grant (a time:Sleep), 0 where there is none."""
    sleeps = [offline.unwrap(r.inputs)["createDuration"] for r in plan(stack, *sets).recording.resources
              if r.type == "time:index/sleep:Sleep" and r.name.endswith("-crg-access-propagation")]
    assert len(sleeps) <= 1
    return int(sleeps[0].removesuffix("m")) if sleeps else 0


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

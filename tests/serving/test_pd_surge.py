"""A role's rolling update surges only into the shared pool's nodes the other roles leave free (the independent review
of the PD stacks, M3: the prefill surged into nodes the decode holds)."""

from typing import Any

import pytest

from k3infra.serving.rollout import spare_group
from tests.support import plan

PD = ("gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd")


def _surge(spec: dict[str, Any]) -> int:
    walk = spec.get("rolloutStrategy", {}).get("rollingUpdateConfiguration") or spec["strategy"]["rollingUpdate"]
    return int(walk["maxSurge"])


@pytest.mark.parametrize("stack", PD)
def test_roles_surge_within_the_pool(stack: str) -> None:
    p = plan(stack)
    roles = {r.name: r for r in p.config.sizing.topology.roles}
    held = sum(r.nodes * r.groups for r in roles.values())
    surges = {r.name.removeprefix("k3-").removesuffix("-workload"): _surge(r.inputs["spec"])
              for r in p.recording.ordered() if r.name in ("k3-prefill-workload", "k3-decode-workload")}
    assert sorted(surges) == ["decode", "prefill"]
    # the stacks' pools hold exactly both roles: neither role has a spare group to surge into
    assert held == p.config.total_nodes
    assert surges == {"decode": 0, "prefill": 0}


def test_the_other_roles_nodes_are_not_spare() -> None:
    args: Any = {"pool": {"node_count": 6}, "nodes": 2, "replicas": 1}
    assert spare_group(args)  # the old reckoning: the whole pool
    assert not spare_group({**args, "pool_nodes_reserved": 4})
    assert spare_group({**args, "pool": {"node_count": 8}, "pool_nodes_reserved": 4})


@pytest.mark.parametrize("stack", PD)
def test_each_roles_wait_covers_its_whole_rollout(stack: str) -> None:
    """Pulumi's wait on each role's workload is at least a start per group plus its surge group (sizing's
    rolling_update_timeout_seconds over the role's probe budget)."""
    from k3infra.sizing import await_timeout_seconds, rolling_update_timeout_seconds

    p = plan(stack)
    roles = {r.name: r for r in p.config.sizing.topology.roles}
    for r in p.recording.ordered():
        if r.name not in ("k3-prefill-workload", "k3-decode-workload"):
            continue
        role = roles[r.name.removeprefix("k3-").removesuffix("-workload")]
        notes = r.inputs["metadata"]["annotations"]
        lws = "leaderWorkerTemplate" in r.inputs["spec"]
        starts = role.groups + (_surge(r.inputs["spec"]) if lws else 0)
        want = rolling_update_timeout_seconds(await_timeout_seconds(role.probe_budget_seconds), starts)
        assert int(notes["pulumi.com/timeoutSeconds"]) >= want, r.name

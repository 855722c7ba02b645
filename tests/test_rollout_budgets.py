"""Await x rollout (issue 36, major 4): every wait Pulumi or a managed platform gives an update covers the whole rollout
it waits for, derived here from the rendered objects, for every stack as it ships and scaled.

An update replaces the groups one after the other: a LeaderWorkerSet is ``Available`` only once every group is
updated (lws v0.10.0 leaderworkerset_controller.go), a Deployment, a StatefulSet and PAI-EAS replace one replica (pod,
unit) at a time. So an update walks the most replicas the workload runs (the scaler's maximum, else its replicas), one
whole start each at the pessimistic end (``AutoscalingConfig.start``: scheduling, image pull, load and warm-up);
a LeaderWorkerSet that surges a group of the new revision walks one more. It may surge only where the reserved
capacity holds a group beyond that maximum; where it does, nothing is stopped first.
"""

import json
from typing import Any

import pytest

from k3infra import offline
from k3infra.planning import Plan
from tests.support import STACKS, plan

SCALE_SETS = {
    "azure-gb300": ("azure.quotaVcpus=2048",),
    "gcp-a4-sglang": ("gcp.checkReservation=false",),
    "gcp-a4x-sglang": ("gcp.checkReservation=false",),
    "gcp-a4xmax": ("gcp.checkReservation=false",),
    "aws-hyperpod": ("observability.workspace=arn:aws:aps:us-east-2:111122223333:workspace/ws-abc",),
    "kubernetes-b300": ("kubernetes.prometheusOperator=present",),
    "kubernetes-gb300-nvl72": ("kubernetes.prometheusOperator=present",),
}
"""What lets a stack hold more replicas in the offline plan (its quota, reservation check or the scaler's
Prometheus), which the scaled cases add."""

SCALES = {
    "as shipped": (),
    "two fixed replicas": ("replicas=2",),
    "scaled to the capacity": ("replicas=2", "autoscaling.enabled=true"),
    "scaled with a spare group": ("replicas=3", "autoscaling.enabled=true", "autoscaling.maxReplicas=2"),
}

# The disaggregated stacks size their groups per role (topology.prefill / topology.decode; `replicas` is refused
# there) and each role's Services wait for that role's own workload: tests/serving/test_rollout_awaits.py
# test_each_roles_services_wait_as_long_as_its_own_workload and tests/serving/test_pd_surge.py hold their waits.
CASES = [(stack, name, () if not sets else (*sets, *SCALE_SETS.get(stack, ()))) for stack in STACKS
         if not stack.endswith("-pd") for name, sets in SCALES.items()] + [
    ("gcp-a4-sglang", "000's StatefulSet", ("workload=statefulset",)),  # its pods replaced one at a time
]


def seconds(timeout: str) -> int:
    assert timeout.endswith("s"), timeout
    return int(timeout[:-1])


def _scaled_max(p: Plan, kind: str, name: str) -> int | None:
    """maxReplicaCount of a ScaledObject on the workload ``kind``/``name``, if one targets it."""
    for r in p.recording.resources:
        body = offline.unwrap(r.inputs)
        if r.type.endswith(":ScaledObject") or body.get("kind") == "ScaledObject":
            spec = body.get("spec") or body.get("manifest", {}).get("spec", {})
            target = spec.get("scaleTargetRef", {})
            if (target.get("kind"), target.get("name")) == (kind, name):
                return int(spec["maxReplicaCount"])
    return None


def _walk(p: Plan, kind: str, body: dict[str, Any]) -> tuple[int, int]:
    """(group starts one update makes, groups of the new revision started beside the old ones), from the object."""
    spec = body["spec"]
    if kind == "StatefulSet":
        return int(spec["replicas"]), 0
    groups = _scaled_max(p, kind, body["metadata"]["name"]) or int(spec["replicas"])
    if kind == "LeaderWorkerSet":
        rolling = spec["rolloutStrategy"]["rollingUpdateConfiguration"]
        surge = int(rolling["maxSurge"])
        assert int(rolling["maxUnavailable"]) == (0 if surge else 1)
        return groups + surge, surge
    rolling = spec["strategy"]["rollingUpdate"]
    assert int(rolling["maxUnavailable"]) == (0 if rolling["maxSurge"] else 1)
    return groups, int(rolling["maxSurge"])


@pytest.mark.parametrize(("stack", "scale", "sets"), CASES, ids=[f"{s}-{n}" for s, n, _ in CASES])
def test_every_update_wait_covers_the_whole_rollout(stack: str, scale: str, sets: tuple[str, ...]) -> None:
    p = plan(stack, *sets)
    a = p.config.autoscaling
    assert a is not None
    start = a.start.total_seconds  # one group's whole start, pessimistic
    spare = a.capacity_replicas > a.max_replicas  # the reserved capacity holds one more group than ever runs
    checked, walked_in_all = [], 0
    for r in p.recording.resources:
        kind = r.type.rsplit(":", 1)[-1]
        if kind in ("LeaderWorkerSet", "Deployment", "StatefulSet") and r.parent_type == "k3infra:index:ModelServer":
            body = offline.unwrap(r.inputs)
            starts, surge = _walk(p, kind, body)
            assert bool(surge) == (spare and kind != "StatefulSet"), (r.name, surge, spare)
            create, update = seconds(r.custom_timeouts["create"]), seconds(r.custom_timeouts["update"])
            assert create >= start and update >= starts * start, (r.name, starts, update)
            assert int(body["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) == max(create, update)
            walked_in_all += starts
            checked.append(r.name)
        if r.type == "alicloud:pai/service:Service":
            config = json.loads(offline.unwrap(r.inputs)["serviceConfig"])
            units = (config.get("autoscaler") or {}).get("max") or config["metadata"]["instance"]
            rolling = config["metadata"]["rolling_strategy"]
            assert (rolling["max_surge"], rolling["max_unavailable"]) == ((1, 0) if spare else (0, 1))
            assert seconds(r.custom_timeouts["create"]) >= start
            assert seconds(r.custom_timeouts["update"]) >= units * start, (units, r.custom_timeouts)
            checked.append(r.name)
        if kind == "InferenceEndpointConfig":
            spec = offline.unwrap(r.inputs)["spec"]
            replicas = (spec.get("autoScalingSpec") or {}).get("maxReplicaCount") or spec["replicas"]
            assert spec["maxDeployTimeInSeconds"] >= replicas * start
            assert int(r.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) >= replicas * start
            checked.append(r.name)
    # A Service updated beside the workload waits out the whole rollout: some group is loading throughout it.
    for r in p.recording.by_type("kubernetes:core/v1:Service"):
        if r.parent_type == "k3infra:index:ModelServer" and r.custom_timeouts:
            assert seconds(r.custom_timeouts["update"]) >= walked_in_all * start, r.name
    assert checked, f"{stack} {scale}: no wait found"


def test_two_replicas_on_ack_wait_for_both_groups() -> None:
    """The review's figures: `alicloud-ack --set replicas=2` allowed one group's 5,070 s for an update that replaces
    two groups (a restart each) one after the other. Both groups load at once on a first `pulumi up`, the six nodes
    sharing the bucket's 5 Gbps (the load 4,992 s, twice one group's 2,496 s), so a restart at that pessimistic end is
    5,712 s and the update waits for two of them."""
    p = plan("alicloud-ack", "replicas=2")
    lws = p.recording.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "k3-server-workload")
    assert (p.config.sizing.load.seconds, p.config.sizing.load.limit) == (
        4992, "its share of the bucket's egress: 5 Gbps / 6 node(s)")
    assert p.config.sizing.cold_start.restart_seconds == 5712
    assert (lws.custom_timeouts["create"], lws.custom_timeouts["update"]) == ("8810s", "17620s")
    assert 17620 >= 2 * 5712

"""How an update of a ModelServer's workload walks its groups, and how long Pulumi waits for it (issue 36, major 4).

A create starts every group at once: Pulumi waits one group's start (``await_timeout_seconds``: the probe budget,
image pull and scheduling). An update replaces them one at a time:

- a LeaderWorkerSet rolls its groups with ``maxUnavailable`` 1 and ``maxSurge`` 0 by default, and is ``Available``
  only once every group is updated and ready (lws v0.10.0 pkg/controllers/leaderworkerset_controller.go: the
  ``UpdateInProgress`` condition excludes ``Available`` until the updated non-burst groups are all of them). With
  ``maxSurge`` 1 and ``maxUnavailable`` 0 it first starts a burst group of the new revision, then recreates the others
  one at a time, each once the one before is ready (``rollingUpdateParameters``: a rolling step of one): one more
  group start than it has groups, and none of them down;
- a Deployment replaces its pods one at a time (``maxUnavailable`` 1), or starts one beside them first (``maxSurge``
  1, ``maxUnavailable`` 0): as many starts as pods either way;
- a StatefulSet replaces its pods one at a time from the highest ordinal, waiting for each to be ready, whatever its
  ``podManagementPolicy`` (Kubernetes "StatefulSets", Rolling Updates: Parallel "only affects the behavior for
  scaling operations"): as many starts as pods.

Under a scaler the update walks the groups the scaler runs at the time, at most its maximum. A group of the new
revision beside the old ones needs a whole group's nodes free: surge only where the pool holds one beyond the
scaler's maximum and the nodes the topology's other roles hold on a shared pool (PAI-EAS does the same with its units, k3infra.alicloud.pai.rolling_strategy).
"""

from dataclasses import dataclass

from ..catalog import Workload
from ..sizing import rolling_update_timeout_seconds
from .server_args import ModelServerArgs


@dataclass(frozen=True)
class Rollout:
    """How one update walks a workload, and what Pulumi waits."""

    max_surge: int
    """Groups (pods of a Deployment) of the new revision started beside the old ones."""
    max_unavailable: int
    """Groups stopped before their replacement starts."""
    starts: int
    """Group starts one update makes, one after the other."""
    create_seconds: int
    """Pulumi's wait on a create: one group's start (every group starts at once)."""
    update_seconds: int
    """Pulumi's wait on an update: a whole start for each of ``starts``."""


def peak_replicas(args: ModelServerArgs) -> int:
    """The most replicas the workload runs: the scaler's maximum, else its replicas."""
    return max(int(args["replicas"]), int(args.get("max_replicas") or 0))


def spare_group(args: ModelServerArgs) -> bool:
    """The pool holds a whole replica's nodes beyond the most the workload runs and what the topology's other roles
    hold (``pool_nodes_reserved``): an update can start a new group before it stops an old one."""
    free = int(args["pool"]["node_count"]) - int(args.get("pool_nodes_reserved") or 0)
    return free >= int(args["nodes"]) * (peak_replicas(args) + 1)


def rollout(args: ModelServerArgs, groups: int) -> Rollout:
    """The update of a workload of ``groups`` groups (one LeaderWorkerSet's replicas, a Deployment's pods; a StatefulSet
    is one group of ``nodes`` pods) under ``args``: surge where the pool holds a spare group."""
    workload, await_s = Workload(args["workload"]), int(args["await_timeout_seconds"])
    if workload == Workload.STATEFUL_SET:
        surge, starts = 0, int(args["nodes"])
    else:
        surge = 1 if spare_group(args) else 0
        starts = groups + (surge if workload == Workload.LEADER_WORKER_SET else 0)
    return Rollout(max_surge=surge, max_unavailable=1 - surge, starts=starts, create_seconds=await_s,
                   update_seconds=rolling_update_timeout_seconds(await_s, starts))


__all__ = ["Rollout", "peak_replicas", "rollout", "spare_group"]

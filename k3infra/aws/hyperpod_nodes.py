"""Whether a HyperPod cluster's instances take pods yet, read at preview, so that the endpoint is created only once
they can (issue 36, major 3).

The HyperPod Inference Operator's ``maxDeployTimeInSeconds`` runs from the InferenceEndpointConfig's creation, and an
instance in deep health checks is ``Unschedulable`` for hours (catalog.hyperpod). With the checks on, the update that
creates the HyperPod cluster therefore leaves the endpoint out; the next update, once the cluster exists, creates it
with a deadline that includes the checks (an existing endpoint is never withdrawn: its instance may be a replacement
in its checks, and deleting the endpoint would change its address). SageMaker ``ListClusterNodes`` is read through
botocore where AWS credentials are evident, as the training plan is (k3infra.aws.training_plan), never under the
offline recording engine.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from ..catalog.hyperpod import DEEP_HEALTH_CHECK_MINUTES, INSTANCE_SCHEDULABLE
from .training_plan import credentials_source

NOT_FOUND = ("ResourceNotFound", "ResourceNotFoundException")
"""Error codes of ListClusterNodes for a cluster that does not exist."""


class NodesReader(Protocol):
    """Something that lists a HyperPod cluster's instances."""

    def statuses(self, cluster_name: str) -> list[str]:
        """The ``InstanceStatus.Status`` of every instance; raises when the cluster does not exist."""
        ...


class SageMakerNodesReader:
    """:class:`NodesReader` over a botocore SageMaker client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def statuses(self, cluster_name: str) -> list[str]:
        """``ListClusterNodes(ClusterName=...)``, every page."""
        out: list[str] = []
        token: str | None = None
        while True:
            page = self._client.list_cluster_nodes(ClusterName=cluster_name, **({"NextToken": token} if token else {}))
            out += [str((n.get("InstanceStatus") or {}).get("Status") or "")
                    for n in page.get("ClusterNodeSummaries") or []]
            token = page.get("NextToken")
            if not token:
                return out


def sagemaker_nodes_reader(region: str) -> NodesReader:
    """A reader with botocore's default credential chain."""
    import botocore.session

    return SageMakerNodesReader(botocore.session.get_session().create_client("sagemaker", region_name=region))


@dataclass(frozen=True)
class NodesCheck:
    """What SageMaker says about the cluster's instances."""

    exists: bool | None
    """False: the cluster does not exist yet (this update creates it); None: not looked up."""
    statuses: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def schedulable(self) -> int:
        """Instances that passed their checks and take pods."""
        return sum(s == INSTANCE_SCHEDULABLE for s in self.statuses)


def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None)
    return str(((response or {}).get("Error") or {}).get("Code") or "") if isinstance(response, dict) else ""


def lookup(cluster_name: str, region: str, *, offline: bool, env: Mapping[str, str] | None = None,
           reader_factory: Callable[[str], NodesReader] = sagemaker_nodes_reader,
           home: Path | None = None) -> NodesCheck:
    """List the cluster's instances where credentials allow; a failed or impossible lookup is a warning."""
    env = os.environ if env is None else env

    def skipped(why: str) -> NodesCheck:
        return NodesCheck(None, warnings=(
            f"HyperPod cluster {cluster_name}'s instances not checked ({why}): with deep health checks on, the "
            "endpoint is created on this update, and its deadline includes the checks; `aws sagemaker "
            f"list-cluster-nodes --region {region} --cluster-name {cluster_name}` shows DeepHealthCheckInProgress "
            f"until an instance is {INSTANCE_SCHEDULABLE}",))

    if offline:
        return skipped("offline plan: no AWS lookup")
    source = credentials_source(env, home)
    if source is None:
        return skipped("no AWS credentials in the environment")
    try:
        statuses = reader_factory(region).statuses(cluster_name)
    except Exception as e:  # noqa: BLE001 - any SDK or sign-in failure degrades to a warning, never a crash
        if _error_code(e) in NOT_FOUND:
            return NodesCheck(False)
        return skipped(f"ListClusterNodes with {source} failed: {type(e).__name__}: {e}")
    return NodesCheck(True, tuple(statuses))


def endpoint_waits(check: NodesCheck, cluster_name: str) -> str | None:
    """Why the endpoint is not created on this update (None: it is): the update creates the cluster, whose
    instances then spend hours in deep health checks."""
    if check.exists is False:
        return (f"HyperPod cluster {cluster_name} is created by this update, and its instances run deep health checks "
                f"(up to ~{DEEP_HEALTH_CHECK_MINUTES // 60} h) before their nodes are Schedulable")
    return None


def not_schedulable_warning(check: NodesCheck, cluster_name: str, deadline_seconds: int) -> str | None:
    """What the plan says when the cluster exists and no instance takes pods yet."""
    if check.exists is not True or check.schedulable:
        return None
    seen = ", ".join(sorted(set(check.statuses))) or "no instances"
    return (f"no instance of HyperPod cluster {cluster_name} is {INSTANCE_SCHEDULABLE} yet ({seen}): `pulumi up` "
            f"waits for the endpoint up to its deadline ({deadline_seconds} s, which includes the deep health checks)")

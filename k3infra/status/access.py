"""The read-only role ``k3infra status`` needs, and nothing more: every request status makes is listed here, and
tests/status runs status with a token bound to exactly these rules.

``rules`` is the one statement of them: ``--print-role`` prints them for the plan's objects (``roles``), and a stack
with ``k3infra:status.group`` creates them itself (``k3infra/serving/status_access.py``), with the names its
components hand it.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .expected import Expected

ROLE_NAME = "k3-status"
LABELS = {"app.kubernetes.io/part-of": "k3infra"}
IEC_GROUP, IEC_RESOURCE = "inference.sagemaker.aws.amazon.com", "inferenceendpointconfigs"

SCALE_RESOURCES = {"Deployment": "deployments", "LeaderWorkerSet": "leaderworkersets"}
"""The resource of each server kind a scaler scales (serving.autoscaling.TARGETS), whose ``/scale`` subresource
status reads for the live replica count: a KEDA scaler (or ``kubectl scale``) moves it away from the plan's, which
is the minimum (kubernetes-sigs/lws config/crd: ``subresources.scale.specReplicasPath: .spec.replicas``)."""


def scale_path(namespace: str, api_version: str, kind: str, name: str) -> str:
    """The URL path of the server workload's scale subresource."""
    return f"/apis/{api_version}/namespaces/{namespace}/{SCALE_RESOURCES[kind]}/{name}/scale"


def _rule(group: str, resource: str, verbs: list[str], names: Sequence[Any] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [group], "resources": [resource], "verbs": verbs}
    if names:
        rule["resourceNames"] = sorted(names) if all(isinstance(n, str) for n in names) else list(names)
    return rule


def nodes_role_name(namespace: str) -> str:
    """The ClusterRole's name: cluster-scoped, so named after the stack's namespace too (two stacks in one cluster
    keep their own)."""
    return f"{namespace}-{ROLE_NAME}-nodes"


def node_rules() -> list[dict[str, Any]]:
    """Nodes are cluster-scoped: list (status counts the GPU and system nodes and their readiness)."""
    return [_rule("", "nodes", ["list"])]


def namespace_rules(jobs: Sequence[Any], services: Sequence[Any],
                    endpoint_configs: Sequence[Any] = (),
                    server: tuple[str, str, Any] | None = None) -> list[dict[str, Any]]:
    """In the stack's namespace: list pods (the server's ranks and the Jobs' workers), get the stack's Jobs and
    Services by name (and HyperPod's InferenceEndpointConfig), and the server workload's scale (``server``: its
    apiVersion, kind and name). No Secrets, no logs, no exec. Names are strings, or the program's outputs."""
    rules = [_rule("", "pods", ["list"])]
    if server:
        api_version, kind, name = server
        rules.append(_rule(api_version.rpartition("/")[0], f"{SCALE_RESOURCES[kind]}/scale", ["get"], [name]))
    if jobs:
        rules.append(_rule("batch", "jobs", ["get"], jobs))
    if services:
        rules.append(_rule("", "services", ["get"], services))
    if endpoint_configs:
        rules.append(_rule(IEC_GROUP, IEC_RESOURCE, ["get"], endpoint_configs))
    return rules


def cluster_role(namespace: str) -> dict[str, Any]:
    """The ClusterRole document."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": nodes_role_name(namespace), "labels": dict(LABELS)}, "rules": node_rules()}


def role(exp: "Expected") -> dict[str, Any]:
    """The Role document in the stack's namespace, for the plan's objects."""
    jobs = [j.name for j in (exp.sync, exp.placement, exp.verify) if j]
    rules = namespace_rules(jobs, [name for name, _ in exp.services],
                            [exp.server_name] if exp.endpoint_config else [],
                            (exp.server_api_version, exp.server_kind, exp.server_name)
                            if exp.server_kind in SCALE_RESOURCES else None)
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": ROLE_NAME, "namespace": exp.namespace, "labels": dict(LABELS)},
            "rules": rules}


def roles(exp: "Expected") -> list[dict[str, Any]]:
    """The ClusterRole and the Role, in apply order."""
    return [cluster_role(exp.namespace), role(exp)]

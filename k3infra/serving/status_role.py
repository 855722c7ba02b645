"""The rules of the read-only role ``k3infra status`` needs, and nothing more: every request status makes is listed
here, and tests/status runs status with a token bound to exactly these rules.

The one statement of them, beneath both readers: a stack with ``k3infra:status.group`` creates the role with the
names its components hand back (``serving.status_access``), and ``k3infra status --print-role`` prints it for the
plan's objects (``status.access``). Plain data, no Pulumi: names are strings, or the program's outputs.
"""

from collections.abc import Sequence
from typing import Any

from ..catalog.hyperpod import IEC_GROUP, IEC_RESOURCE

ROLE_NAME = "k3-status"
LABELS = {"app.kubernetes.io/part-of": "k3infra"}

SCALE_RESOURCES = {"Deployment": "deployments", "LeaderWorkerSet": "leaderworkersets"}
"""The resource of each server kind a scaler scales (serving.autoscaling.TARGETS), whose ``/scale`` subresource
status reads for the live replica count: a KEDA scaler (or ``kubectl scale``) moves it away from the plan's, which
is the minimum (kubernetes-sigs/lws config/crd: ``subresources.scale.specReplicasPath: .spec.replicas``)."""


GATEWAY_RESOURCE = "gateways"
"""The Gateway API's resource of a Gateway (``gateway.networking.k8s.io``): status reads the inference gateway's
``status`` (its addresses and ``Programmed`` condition)."""


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
                    server: tuple[str, str, Any] | None = None,
                    role_servers: Sequence[tuple[str, str, Any]] = (),
                    gateway: tuple[str, Any] | None = None) -> list[dict[str, Any]]:
    """In the stack's namespace: list pods (the server's ranks and the Jobs' workers), get the stack's Jobs and
    Services by name (and HyperPod's InferenceEndpointConfig), the server workload's scale (``server``: its
    apiVersion, kind and name; ``role_servers``: every role's of a disaggregated topology), and the inference
    gateway's Gateway (``gateway``: its apiVersion and name). No Secrets, no logs, no exec. Names are strings, or
    the program's outputs."""
    rules = [_rule("", "pods", ["list"])]
    if server:
        api_version, kind, name = server
        rules.append(_rule(api_version.rpartition("/")[0], f"{SCALE_RESOURCES[kind]}/scale", ["get"], [name]))
    # A disaggregated topology's other role servers (status reads each role's scale): one rule per kind.
    by_kind: dict[tuple[str, str], list[Any]] = {}
    for api_version, kind, name in role_servers:
        if server is None or name != server[2]:
            by_kind.setdefault((api_version.rpartition("/")[0], f"{SCALE_RESOURCES[kind]}/scale"), []).append(name)
    for (group, resource), names in by_kind.items():
        rules.append(_rule(group, resource, ["get"], names))
    if jobs:
        rules.append(_rule("batch", "jobs", ["get"], jobs))
    if services:
        rules.append(_rule("", "services", ["get"], services))
    if gateway:
        api_version, name = gateway
        rules.append(_rule(api_version.rpartition("/")[0], GATEWAY_RESOURCE, ["get"], [name]))
    if endpoint_configs:
        rules.append(_rule(IEC_GROUP, IEC_RESOURCE, ["get"], endpoint_configs))
    return rules

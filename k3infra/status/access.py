"""The read-only role ``k3infra status`` needs, and nothing more: every request status makes is listed here, and
tests/status runs status with a token bound to exactly these rules."""

from typing import Any

from .expected import Expected

ROLE_NAME = "k3-status"


def _rule(group: str, resource: str, verbs: list[str], names: list[str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [group], "resources": [resource], "verbs": verbs}
    if names:
        rule["resourceNames"] = sorted(names)
    return rule


def cluster_role() -> dict[str, Any]:
    """Nodes are cluster-scoped: list (status counts the GPU and system nodes and their readiness)."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"{ROLE_NAME}-nodes", "labels": {"app.kubernetes.io/part-of": "k3infra"}},
            "rules": [_rule("", "nodes", ["list"])]}


def role(exp: Expected) -> dict[str, Any]:
    """In the stack's namespace: list pods (the server's ranks and the Jobs' workers), get the stack's Jobs and
    Services by name. No Secrets, no logs, no exec."""
    jobs = [j.name for j in (exp.sync, exp.placement, exp.verify) if j]
    rules = [_rule("", "pods", ["list"])]
    if jobs:
        rules.append(_rule("batch", "jobs", ["get"], jobs))
    if exp.services:
        rules.append(_rule("", "services", ["get"], [name for name, _ in exp.services]))
    if exp.endpoint_config:  # /apis/GROUP/VERSION/namespaces/NS/inferenceendpointconfigs/NAME
        group = exp.endpoint_config.split("/")[2]
        rules.append(_rule(group, "inferenceendpointconfigs", ["get"], [exp.server_name]))
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": ROLE_NAME, "namespace": exp.namespace,
                         "labels": {"app.kubernetes.io/part-of": "k3infra"}},
            "rules": rules}


def roles(exp: Expected) -> list[dict[str, Any]]:
    """The ClusterRole and the Role, in apply order."""
    return [cluster_role(), role(exp)]

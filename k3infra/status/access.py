"""The read-only role ``k3infra status`` needs, as documents for the plan's objects (``--print-role``).

The rules themselves are ``k3infra.serving.status_role``'s, the one statement a stack with ``k3infra:status.group``
creates too (``k3infra/serving/status_access.py``), with the names its components hand it.
"""

from typing import Any

from ..serving.status_role import (GATEWAY_RESOURCE, LABELS, ROLE_NAME, SCALE_RESOURCES, namespace_rules, node_rules,
                                   nodes_role_name)
from .expected import Expected, GatewayRef


def scale_path(namespace: str, api_version: str, kind: str, name: str) -> str:
    """The URL path of the server workload's scale subresource."""
    return f"/apis/{api_version}/namespaces/{namespace}/{SCALE_RESOURCES[kind]}/{name}/scale"


def gateway_path(namespace: str, gateway: GatewayRef) -> str:
    """The URL path of the inference gateway's Gateway."""
    return f"/apis/{gateway.api_version}/namespaces/{namespace}/{GATEWAY_RESOURCE}/{gateway.name}"


def cluster_role(namespace: str) -> dict[str, Any]:
    """The ClusterRole document."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": nodes_role_name(namespace), "labels": dict(LABELS)}, "rules": node_rules()}


def role(exp: Expected) -> dict[str, Any]:
    """The Role document in the stack's namespace, for the plan's objects."""
    jobs = [j.name for j in (exp.sync, exp.placement, exp.verify, *exp.fabric) if j]
    rules = namespace_rules(jobs, [name for name, _ in exp.services],
                            [exp.server_name] if exp.endpoint_config else [],
                            (exp.server_api_version, exp.server_kind, exp.server_name)
                            if exp.server_kind in SCALE_RESOURCES else None,
                            [(r.server_api_version, r.server_kind, r.server_name) for r in exp.roles
                             if r.server_kind in SCALE_RESOURCES],
                            (exp.gateway.api_version, exp.gateway.name) if exp.gateway else None)
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": ROLE_NAME, "namespace": exp.namespace, "labels": dict(LABELS)},
            "rules": rules}


def roles(exp: Expected) -> list[dict[str, Any]]:
    """The ClusterRole and the Role, in apply order."""
    return [cluster_role(exp.namespace), role(exp)]

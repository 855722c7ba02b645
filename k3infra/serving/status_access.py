"""The read-only access ``k3infra status`` needs, created by the stack for a group the user names
(``k3infra:status.group``): a ClusterRole that lists nodes and its ClusterRoleBinding, a Role in the serving
namespace that lists pods, gets the stack's Jobs and Services by name, the server workload's scale and the inference
gateway's Gateway, and its RoleBinding. The rules are
``status_role``'s (the same ``k3infra status --print-role`` prints), with the names the components hand back.

Each cloud's deployment composes it after the checklist (``with_status_access(cfg, with_checklist(cfg, serve(...)))``)
so the verify Job's name is known; off unless the group is set.
"""

import dataclasses
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..config import StackConfig
from . import status_role
from .autoscaling import workload_target
from .gateway import GATEWAY_API
from .stack import Serving

rbac, meta = k8s.rbac.v1, k8s.meta.v1
RBAC_GROUP = "rbac.authorization.k8s.io"


def _rules(rules: list[dict[str, Any]]) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    """Typed rules; names the components hand back as outputs are sorted once known, as ``--print-role`` sorts."""
    return [rbac.PolicyRuleArgs(api_groups=r["apiGroups"], resources=r["resources"], verbs=r["verbs"],
                                resource_names=pulumi.Output.all(*r["resourceNames"]).apply(sorted)
                                if r.get("resourceNames") else None) for r in rules]


def with_status_access(cfg: StackConfig, serving: Serving) -> Serving:
    """``serving`` with the status roles bound to ``k3infra:status.group`` (unchanged when it is unset)."""
    group = cfg.status.group
    if not group:
        return serving
    assert serving.provider is not None, "serving comes from serve()"
    ns = cfg.namespace
    opts = pulumi.ResourceOptions(parent=serving.parent, providers={"kubernetes": serving.provider},
                                  depends_on=[serving.namespace])
    jobs = [j.job_name for j in (serving.sync, serving.placement, serving.verify) if j is not None]
    # The fabric checks' Jobs (the aggregated replica's, or each role's): their pods' termination messages are the
    # checks' results.
    for check in [c for c in (serving.fabric,) if c is not None] + list(serving.role_fabric.values()):
        jobs += [j.metadata.apply(lambda m: m.name or "") for j in check.jobs]
    services = [serving.server.service.metadata.apply(lambda m: m.name)]
    if serving.server.load_balancer_service is not None:
        services.append(serving.server.load_balancer_service.metadata.apply(lambda m: m.name))
    target = workload_target(cfg.workload)
    server = (*target, serving.server.workload_name) if target else None
    role_servers = [(*t, s.workload_name) for s in serving.roles.values() if (t := workload_target(s.workload_kind))]
    if serving.roles:
        server = role_servers[-1] if role_servers else None
        services = [s.service.metadata.apply(lambda m: m.name) for s in serving.roles.values()]
    gateway = (GATEWAY_API, serving.gateway.gateway_name) if serving.gateway is not None else None
    subject = [rbac.SubjectArgs(kind="Group", name=group, api_group=RBAC_GROUP)]
    labels = dict(status_role.LABELS)
    nodes_name = status_role.nodes_role_name(ns)
    prefix = f"{serving.name}-status"
    nodes = rbac.ClusterRole(f"{prefix}-nodes", metadata=meta.ObjectMetaArgs(name=nodes_name, labels=labels),
                             rules=_rules(status_role.node_rules()), opts=opts)
    rbac.ClusterRoleBinding(f"{prefix}-nodes-binding", metadata=meta.ObjectMetaArgs(name=nodes_name, labels=labels),
                            role_ref=rbac.RoleRefArgs(api_group=RBAC_GROUP, kind="ClusterRole", name=nodes_name),
                            subjects=subject, opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                                depends_on=[nodes])))
    role = rbac.Role(f"{prefix}-role", metadata=meta.ObjectMetaArgs(name=status_role.ROLE_NAME, namespace=ns,
                                                                          labels=labels),
                     rules=_rules(status_role.namespace_rules(jobs, services, server=server,
                                                              role_servers=role_servers, gateway=gateway)), opts=opts)
    rbac.RoleBinding(f"{prefix}-binding", metadata=meta.ObjectMetaArgs(name=status_role.ROLE_NAME, namespace=ns,
                                                                            labels=labels),
                     role_ref=rbac.RoleRefArgs(api_group=RBAC_GROUP, kind="Role", name=status_role.ROLE_NAME),
                     subjects=subject, opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                         depends_on=[role])))
    return dataclasses.replace(serving, status_access={"group": group, "clusterRole": nodes_name,
                                                       "role": status_role.ROLE_NAME, "namespace": ns})

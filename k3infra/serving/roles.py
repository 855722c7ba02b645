"""The roles of a disaggregated or wide-EP topology as ModelServers: one per role, each with its own parallelism, group
count, engine lines, probes and budgets (the stack's ``sizing.topology``), and what a gateway routes to.

A role of ``N`` nodes per group runs as a LeaderWorkerSet of group size ``N`` (a Deployment when a group is one node),
``groups`` groups, like llm-d's guides/wide-ep-lws (one LeaderWorkerSet per role). The pods carry llm-d's labels
(``llm-d.ai/role``, ``llm-d.ai/inferenceServing``), and every role's pods reach the others on every port (NIXL's side
channel and transfers). The decode pods run llm-d's routing sidecar on the serving port, the engine behind it.

``role_targets`` is what a gateway needs to put one InferencePool in front of each role (or one over both with the
endpoint picker's P/D profile handler, llm-d guides/pd-disaggregation): each role's pod labels and the port it takes
requests on.
"""

from dataclasses import dataclass
from typing import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import Workload
from ..catalog.topologies import INFERENCE_SERVING_LABEL, ROLE_LABEL, ROUTING_SIDECAR_RBAC, RoleName, TopologyMode
from ..config import StackConfig
from ..config.model import RoleScaling
from ..sizing import RoleSizing, await_timeout_seconds
from . import pods
from .contract import ServingRole
from .gateway import RoleTarget as GatewayRole
from .model_server import ModelServer
from .rollout import spare_group
from ..weightcopy.copier.caches import cache_key
from .server_args import ModelServerArgs, engine_cache_path, warm_cache_parts

SERVER_COMPONENT = "model-server"

rbac = k8s.rbac.v1
meta = k8s.meta.v1


def topology_roles(cfg: StackConfig) -> tuple[RoleSizing, ...]:
    """The roles of the stack's topology (empty: aggregated)."""
    top = cfg.sizing.topology
    return () if top is None or cfg.topology.mode == TopologyMode.AGGREGATED else top.roles


def role_server_name(name: str, role: str) -> str:
    """The ModelServer (and Kubernetes object) name of a role of the stack ``name`` (``serve``'s prefix): a wide-EP
    group keeps the aggregated server's name."""
    return f"{name}-server" if role == "wide-ep" else f"{name}-{role}"


def gateway_name(name: str) -> str:
    """The InferenceGateway (and its InferencePool, the picker's release) of the stack ``name``."""
    return f"{name}-gateway"


def sidecar_access(cfg: StackConfig, name: str, account: str, opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """The Role the decode pods' routing sidecar needs for its SSRF allowlist (catalog.topologies
    ``ROUTING_SIDECAR_RBAC``: list and watch the gateway's pool, by name, and the namespace's pods) and its binding to
    ``account``, the pods' own service account (the bucket reader: the cloud's workload identity is bound to it, so
    the pods keep it; only the sidecar mounts its token). None unless the topology runs the sidecar."""
    if not cfg.topology.disaggregated:
        return []
    role_name, pool = f"{name}-routing-proxy", gateway_name(name)
    lbl = pods.labels(role_name, "routing-proxy")
    rules = [rbac.PolicyRuleArgs(api_groups=[group], resources=[resource], verbs=list(verbs),
                                 resource_names=[pool] if resource == "inferencepools" else None)
             for group, resource, verbs in ROUTING_SIDECAR_RBAC]
    role = rbac.Role(f"{role_name}-role", metadata=meta.ObjectMetaArgs(name=role_name, namespace=cfg.namespace,
                                                                       labels=lbl), rules=rules, opts=opts)
    binding = rbac.RoleBinding(
        f"{role_name}-binding", metadata=meta.ObjectMetaArgs(name=role_name, namespace=cfg.namespace, labels=lbl),
        role_ref=rbac.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=role_name),
        subjects=[rbac.SubjectArgs(kind="ServiceAccount", name=account, namespace=cfg.namespace)], opts=opts)
    return [role, binding]


def peer_selector() -> dict[str, str]:
    """Labels every role's pods carry, the workers of a TEP group included (NIXL moves KV from every rank): what each
    role's network policy admits from the other roles."""
    return {"app.kubernetes.io/component": SERVER_COMPONENT}


def pool_selector() -> dict[str, str]:
    """Labels of every role's pods that take requests (llm-d's InferencePool selector, WIDE_EP and guides/
    pd-disaggregation gaie-pd/values.yaml ``modelServers.matchLabels``): a TEP group's workers do not carry it."""
    return {INFERENCE_SERVING_LABEL: "true"}


def role_workload(nodes: int) -> Workload:
    """What runs a role's groups of ``nodes`` nodes: a Deployment (one pod a group) or a LeaderWorkerSet."""
    return Workload.DEPLOYMENT if nodes == 1 else Workload.LEADER_WORKER_SET


def role_server_args(cfg: StackConfig, role: RoleSizing, base: ModelServerArgs) -> ModelServerArgs:
    """The ModelServer arguments of one role: the stack's (image, pool, store, exposure...) with the role's group
    size, group count, layout, budgets and part."""
    serving_role = ServingRole(name=role.name, parallelism=str(role.parallelism))
    if role.all2all is not None:
        serving_role["all2all_backend"] = str(role.all2all)
    if cfg.topology.transport is not None:
        serving_role["kv_transport"] = str(cfg.topology.transport)
        serving_role["peer_selector"] = peer_selector()
    if role.name == RoleName.DECODE and cfg.topology.disaggregated:
        serving_role["routing_sidecar"] = True
    args = ModelServerArgs(**{**base, "nodes": role.nodes, "replicas": role.groups, "pipeline_parallel": 1,
                              "tensor_parallel": role.gpus_per_group, "expert_parallel": True,
                              "workload": role_workload(role.nodes),
                              "probe_budget_seconds": role.probe_budget_seconds,
                              "await_timeout_seconds": await_timeout_seconds(role.probe_budget_seconds),
                              "role": serving_role})
    args.pop("max_replicas", None)
    args.pop("scaler_owns_replicas", None)
    key = cache_key(role_cache_parts(cfg, role))
    if base.get("engine_cache"):  # the role's own caches: its layout, not the stack's
        args["engine_cache"] = engine_cache_path(cfg, key)
    if base.get("warm_key"):
        args["warm_key"] = key
    scaling = role_scaling(cfg, role.name)
    if scaling is not None:  # its own ScaledObject moves its groups between the floor, where it starts, and the ceiling
        args.update(replicas=scaling.min_groups, max_replicas=scaling.max_groups, scaler_owns_replicas=True)
    return args


def role_cache_parts(cfg: StackConfig, role: RoleSizing) -> dict[str, str]:
    """What makes a role's engine caches valid: the stack's engine release, image and GPU model, the role's name and
    its group's layout (a prefill's and a decode's compile different graphs, and rank differently)."""
    return {**warm_cache_parts(cfg), "role": str(role.name),
            "layout": f"tp{role.tensor_parallel}-dp{role.data_parallel}-ep{role.expert_parallel}-nodes{role.nodes}"}


def role_scaling(cfg: StackConfig, role: str) -> RoleScaling | None:
    """The scaler of one role of a disaggregated topology (config.role_autoscaling), None where none scales it."""
    a = cfg.autoscaling
    if a is None or not a.enabled:
        return None
    return next((r for r in a.roles if r.role == role), None)


def peak_nodes(cfg: StackConfig, role: RoleSizing) -> int:
    """The most nodes a role's groups hold: its scaler's maximum's, else its planned groups'."""
    scaling = role_scaling(cfg, role.name)
    return role.nodes * (scaling.max_groups if scaling is not None else role.groups)


def role_servers(cfg: StackConfig, name: str, base: ModelServerArgs, opts: pulumi.ResourceOptions,
                 after: Mapping[str, Sequence[pulumi.Resource]] | None = None) -> dict[str, ModelServer]:
    """One ModelServer per role of the topology (empty: aggregated). The LeaderWorkerSet controller (its namespace and
    chart, serving.lws) is installed once per stack, by the first role that runs a LeaderWorkerSet, and every later
    role waits for it: two roles installing it would create ``lws-system`` twice (AlreadyExists on ``pulumi up``; the
    independent review of the PD stacks, B2). Each role's update surges only into the shared pool's nodes the other
    roles (and an earlier role's surge) leave free (``pool_nodes_reserved``, serving.rollout; review M3), each role
counted at its scaler's maximum where one scales it. ``after``:
    what each role's server waits for besides ``opts``, by role (its fabric check)."""
    out: dict[str, ModelServer] = {}
    controller: pulumi.Resource | None = None
    roles = topology_roles(cfg)
    held = sum(peak_nodes(cfg, r) for r in roles)
    surged = 0  # nodes an earlier role's update surges into: a later role's surge counts on what is left
    for role in roles:
        args = role_server_args(cfg, role, base)
        serving_role = args.get("role")
        if serving_role is not None and serving_role.get("routing_sidecar"):
            serving_role["inference_pool"] = f"{cfg.namespace}/{gateway_name(name)}"
        args["pool_nodes_reserved"] = held - peak_nodes(cfg, role) + surged
        if spare_group(args):
            surged += role.nodes
        if base.get("install_lws_controller", True):
            args["install_lws_controller"] = controller is None
        waits = [*([controller] if controller is not None else []), *(after or {}).get(role.name, ())]
        server = ModelServer(role_server_name(name, role.name), args,
                             opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=waits))
                             if waits else opts)
        controller = controller or server.lws_controller
        out[role.name] = server
    return out


@dataclass(frozen=True)
class RoleTarget:
    """One role as a gateway routes to it."""

    role: str
    """prefill, decode, or wide-ep."""
    selector: Mapping[str, str]
    """Labels of the role's pods that take requests (every pod of a DEP group; a TEP group's leaders)."""
    target_port: int
    """The port those pods take requests on (the routing sidecar's on decode pods)."""
    server: ModelServer


def role_targets(servers: Mapping[str, ModelServer]) -> list[RoleTarget]:
    """One target per role of ``Serving.roles``, prefill first (what a gateway puts an InferencePool in front of)."""
    out = []
    for role, server in servers.items():
        selector = {**server.leader_selector, ROLE_LABEL: role} if role != "wide-ep" else dict(server.leader_selector)
        out.append(RoleTarget(role=role, selector=selector, target_port=server.port_number, server=server))
    return out


@dataclass(frozen=True)
class PoolTargets:
    """One InferencePool over every role (llm-d guides/pd-disaggregation): what it selects, the one port it sends
    to, and each role as the endpoint picker's filters tell them apart (``serving.gateway.RoleTarget``)."""

    selector: dict[str, str]
    """The pool's selector (``pool_selector``)."""
    target_port: int
    """The port every role takes requests on: the prefill engine's, the decode routing sidecar's (the guide's
    ``inferencePool.targetPorts: [8000]``, decode vLLM behind the sidecar on 8200)."""
    roles: list[GatewayRole]
    """Prefill and decode, each selecting ``llm-d.ai/role`` in the pool."""


def pool_targets(servers: Mapping[str, ModelServer]) -> PoolTargets | None:
    """The pool over a disaggregated topology's roles (None unless it has a prefill and a decode role). Every role
    must take requests on one port: an InferencePool has one target port for all its pods."""
    targets = role_targets(servers)
    if {t.role for t in targets} != {RoleName.PREFILL, RoleName.DECODE}:
        return None
    ports = {t.role: t.target_port for t in targets}
    if len(set(ports.values())) != 1:
        raise ValueError(f"the roles take requests on different ports {ports}: one InferencePool cannot reach both")
    pool = pool_selector()
    roles = [GatewayRole(name=t.role, serves=t.role, selector={**pool, ROLE_LABEL: t.role}) for t in targets]
    return PoolTargets(selector=pool, target_port=targets[0].target_port, roles=roles)


def role_labels(name: str, role: str) -> dict[str, str]:
    """The recommended labels of a role's objects."""
    return pods.labels(role_server_name(name, role), SERVER_COMPONENT)

"""``serve``: the serving half of every Kubernetes stack, the same on every cloud.

A cloud's deployment builds its cluster, GPU pool and weight bucket, then calls ``serve`` with what
``contract`` describes. ``serve`` creates, in this order of dependencies:

- the namespace (with the Pod Security level the pool's host mounts and capabilities require), the
  bucket's reader and writer service accounts (annotated for the cloud's workload identity), and the
  Hugging Face token and API key as Kubernetes Secrets fed by the ``k3infra:hfToken`` / ``k3infra:apiKey``
  Pulumi secrets;
- ``WeightSync`` (when ``weights.sync``), depending only on the identities: it runs while the GPU pool is
  being created;
- ``ImagePrePull``, depending only on the pool: the engine image is pulled onto the GPU nodes while the weights
  sync, not after;
- ``NodeAgent`` where the nodes keep the weights or the engine's caches (issue 40), depending on the pool and the
  writer's identity: it waits for the sync's marker, then copies the revision onto each node's local NVMe and
  carries the caches through the bucket;
- ``PlacementCheck`` when a replica spans nodes of a pool with a topology label, depending only on the pool: it
  runs while the weights sync and fails fast when the nodes cannot hold a replica in one NVLink domain;
- ``FabricCheck`` when a replica spans nodes (``sizing.fabric``), after the pool and the placement check: collectives
  on the group's own pods, beside the weight sync; it fails when NCCL falls back to a slower transport or the bus
  bandwidth is under ``fabricCheck.minBusbwFraction`` of the expected figure;
- ``ModelServer``, depending on the GPU pool, the identities, the sync and both checks: the critical path
  of ``Sizing.cold_start`` (cluster, then the longer of GPU pool and sync, then load and warm-up);
- ``InferenceGateway`` when ``endpoint.gateway``;
The in-cluster checklist that checks the server once it is ready (``VerifyJob``) is observability's, composed
with ``serve`` one level up, by each cloud's deployment (``observability.verify_job.with_checklist``): serving never
imports observability, and ``Serving`` carries what that composition needs.

Nothing here branches on the cloud.
"""

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Mapping, Protocol, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import Exposure, Loader
from ..catalog.topologies import RoleName
from ..config import StackConfig
from ..sizing import FabricPlan, fabric_plan, role_layout
from . import pods
from .contract import GpuPool, LoadBalancerSettings, MetricsAccess, SyncNodes, WeightStore
from .engine import forward_compatibility_statement
from .gateway import InferenceGateway, InferenceGatewayArgs
from .fabric_check import COLLECTIVE_ENV_PREFIXES, FabricCheck, FabricCheckArgs, default_timeout, plan_json
from .fabric_check import advice as fabric_advice
from .fabric_check import needed as fabric_needed
from .fabric_report import check_status
from .model_server import ModelServer, collective_setup
from .node_agent import NodeAgent, NodeAgentArgs
from .server_args import (API_KEY_SECRET_KEY, HF_TOKEN_SECRET_KEY, ModelServerArgs, model_server_args,
                          warm_cache_parts)
from .placement import PlacementCheck, PlacementCheckArgs
from .prepull import ImagePrePull, ImagePrePullArgs
from .placement import needed as placement_needed
from .roles import (
    gateway_name,
    pool_targets,
    role_cache_parts,
    role_server_args,
    role_server_name,
    role_servers,
    sidecar_access,
    topology_roles,
)
from .weight_sync import WeightSync, sync_args_of

core = k8s.core.v1
meta = k8s.meta.v1


class Checklist(Protocol):
    """The in-cluster checklist as the stack reports it (observability's ``VerifyJob``)."""

    @property
    def report(self) -> pulumi.Output[Any]:
        """The checklist's report, the stack output ``verification``."""
        ...

    @property
    def job_name(self) -> pulumi.Output[str]:
        """The checklist Job's name."""
        ...


@dataclass
class Serving:
    """What ``serve`` created, and the stack outputs that come from it."""

    namespace: core.Namespace
    reader: core.ServiceAccount
    writer: core.ServiceAccount
    server: ModelServer
    sync: WeightSync | None
    gateway: InferenceGateway | None
    endpoint: pulumi.Output[str]
    """Base URL clients use (``http://HOST:PORT``; OpenAI routes under ``/v1``, health at ``/health``)."""
    served_model_name: str
    secrets: list[core.Secret] = field(default_factory=list)
    warnings: tuple[str, ...] = ()
    verify_deferred: str | None = None
    """Why the checklist waits for a later ``pulumi up`` (the GPU pool's pending capacity), or None."""
    placement: PlacementCheck | None = None
    """The check that the GPU pool's nodes can hold each replica in one topology domain (multi-node replicas)."""
    fabric: FabricCheck | None = None
    """The collectives on each multi-node replica's own pods before the server is created (serving.fabric_check)."""
    fabric_skipped: str | None = None
    """Why a multi-node server runs without the fabric check (turned off, or the pool's capacity pending)."""
    role_fabric: dict[str, FabricCheck] = field(default_factory=dict)
    """The fabric check of each role whose groups span nodes (issue 39), by role: that role's server waits for it."""
    name: str = ""
    """The prefix ``serve`` named its resources with."""
    provider: k8s.Provider | None = None
    """The cluster's Kubernetes provider the workload was created with."""
    parent: pulumi.Resource | None = None
    """The component the workload's resources are parented to, if any."""
    pool: GpuPool | None = None
    """The GPU pool the server runs on."""
    api_key_secret: str | None = None
    """The Secret holding the endpoint's API key (``k3infra:apiKey``), or None."""
    verify: Checklist | None = None
    """The in-cluster checklist once composed (``observability.verify_job.with_checklist``), or None when
    ``k3infra:verifyAfterDeploy`` is false or the checklist is deferred."""
    status_access: dict[str, str] | None = None
    """The read-only roles of ``k3infra status`` and their group (``serving.status_access``), or None."""
    roles: dict[str, ModelServer] = field(default_factory=dict)
    """The server of each role of a disaggregated or wide-EP topology, by role (``server`` is the decode's, or the
    wide-EP groups'); empty when aggregated. ``serving.roles.role_targets`` turns them into a gateway's targets."""

    def outputs(self) -> dict[str, Any]:
        """Stack outputs: endpoint, served model name, namespace, the leader Service, the sync Job."""
        out: dict[str, Any] = {
            "endpoint": self.endpoint,
            "servedModelName": self.served_model_name,
            "servingNamespace": self.namespace.metadata.apply(lambda m: m.name),
            "serverService": self.server.service_name,
        }
        if self.sync is not None:
            out["weightSyncJob"] = self.sync.job_name
        if self.gateway is not None:
            out["inferencePool"] = self.gateway.pool_name
        if self.fabric is not None:
            out["fabricCheck"] = self.fabric.report
        elif self.role_fabric:
            out["fabricCheck"] = pulumi.Output.all(**{r: c.report for r, c in self.role_fabric.items()}).apply(
                lambda roles: {"status": check_status(list(roles.values())), "roles": roles})
        elif self.fabric_skipped:
            out["fabricCheck"] = {"status": "skipped", "reason": self.fabric_skipped}
        if self.status_access is not None:
            out["statusAccess"] = self.status_access
        if self.verify is not None:
            out["verification"] = self.verify.report
        elif self.verify_deferred:
            out["verification"] = {"status": "deferred", "reason": self.verify_deferred,
                                   "note": "the checklist Job is created by the first `pulumi up` after the GPU "
                                           "capacity is active, and runs then"}
        return out


def pod_security_level(pool: GpuPool, store: WeightStore | None = None, engine_cache: bool = False,
                       node_weights: bool = False) -> str:
    """The Pod Security Standard the server pods meet: baseline, or privileged when the pool mounts node
    directories or adds capabilities (000's NVIDIA libraries and gIB plugin; RDMA's IPC_LOCK), the weights are a
    node directory, the engine keeps its caches in one, or the node keeps a copy of the weights (baseline forbids
    every hostPath volume)."""
    host_weights = bool(store and (store.get("volume") or {}).get("host_path"))
    host = pool.get("host_mounts") or pool.get("capabilities") or host_weights or engine_cache or node_weights
    return "privileged" if host else "baseline"


def serve(
    cfg: StackConfig,
    *,
    name: str,
    provider: k8s.Provider,
    pool: GpuPool,
    store: WeightStore,
    lb: LoadBalancerSettings,
    pool_resources: Sequence[pulumi.Resource],
    identity_resources: Sequence[pulumi.Resource],
    parent: pulumi.Resource | None = None,
    sync_nodes: SyncNodes | None = None,
    sync_pool_resources: Sequence[pulumi.Resource] = (),
    install_lws: bool = True,
    metrics: MetricsAccess | None = None,
    webhook_access: Sequence[pulumi.Resource] = (),
) -> Serving:
    """Create the serving workload of ``cfg`` on a cluster (see the module docstring).

    ``name`` prefixes every Pulumi resource and names the Kubernetes objects; ``provider`` is the cluster's
    Kubernetes provider; ``pool_resources`` are what must exist before a GPU pod can schedule (the node
    pool, its device plugins); ``identity_resources`` what must exist before a pod's identity works (IAM
    bindings, federated credentials). ``install_lws=False`` skips the LeaderWorkerSet controller chart when
    the cluster already has one. ``metrics`` says where the cloud's managed Prometheus scrapes the server from.
    ``webhook_access``: what must exist before the control plane can call the webhooks of the charts serving
    installs (GKE: the firewall rule to LWS's 9443); the server, whose LeaderWorkerSets and pods those webhooks
    intercept with ``failurePolicy: Fail``, is created after it.

    A cloud's deployment ends with
    ``DeploymentResult(outputs={**its_outputs, **serving.outputs()}, warnings=serving.warnings)``.
    """
    if cfg.workload is None:
        raise pulumi.InputPropertyError("cfg.workload", f"platform {cfg.platform} serves without Kubernetes workloads")
    at = _Place(name, cfg.namespace, provider, parent)
    namespace = _namespace(cfg, at, pool, store)
    reader = _service_account(at, "reader", store["reader"], namespace, identity_resources)
    writer = _service_account(at, "writer", store["writer"], namespace, identity_resources)
    secrets, hf_secret, api_secret, store = _secrets(cfg, at, namespace, store)
    sync = _weight_sync(cfg, at, store, pool, hf_secret, sync_nodes,
                        depends_on=[namespace, writer, *secrets, *identity_resources, *sync_pool_resources])
    # The pool only: the engine image lands on the GPU nodes while the weights sync (Sizing.cold_start).
    ImagePrePull(f"{name}-pre-pull", ImagePrePullArgs(namespace=cfg.namespace, image=cfg.image, pool=pool),
                 opts=at.opts(namespace, *pool_resources))
    server_args = model_server_args(cfg, pool=pool, store=store, lb=lb, api_key_secret=api_secret,
                                    hf_token_secret=hf_secret if cfg.weights.loader == Loader.HUGGINGFACE else None,
                                    install_lws_controller=install_lws, metrics_access=metrics)
    if sync is not None:
        server_args["weights_marker"] = sync.marker()
        _node_agent(cfg, at, pool, store, server_args, depends_on=[namespace, writer, sync, *pool_resources,
                                                                    *identity_resources])
    server_deps: list[pulumi.Resource] = [namespace, reader, *secrets, *pool_resources, *identity_resources,
                                          *webhook_access]
    if sync is not None:
        server_deps.append(sync)
    placement = _placement_check(cfg, at, pool, depends_on=[namespace, *pool_resources])
    if placement is not None:
        server_deps.append(placement)
    after_placement = [placement] if placement is not None else []
    fabric_deps = [namespace, *pool_resources, *after_placement]
    role_args = {r.name: role_server_args(cfg, r, server_args) for r in topology_roles(cfg)}
    fabric, fabric_skipped = (_fabric_check(cfg, at, pool, server_args, depends_on=fabric_deps)
                              if not role_args else (None, None))
    if fabric is not None:
        server_deps.append(fabric)
    role_fabric = _role_fabric_checks(cfg, at, pool, role_args, fabric_deps)
    server_deps += sidecar_access(cfg, name, store["reader"]["name"], at.in_namespace(namespace))
    # one LWS controller per stack (review B2); each role's server after its own fabric check (issue 39)
    roles = role_servers(cfg, name, server_args, at.opts(*server_deps), after=role_fabric)
    server = (roles.get("decode") or roles.get("wide-ep") or
              ModelServer(f"{name}-server", server_args, opts=at.opts(*server_deps)))
    gateway, endpoint, warnings = _front(cfg, at, lb, server, namespace, roles, metrics)
    compat = forward_compatibility_statement(cfg.engine, pool.get("driver_version"))
    if compat:
        warnings.append(compat)
    return Serving(namespace=namespace, reader=reader, writer=writer, server=server, sync=sync, gateway=gateway,
                   endpoint=endpoint, served_model_name=cfg.model.served_model_name, secrets=secrets,
                   warnings=tuple(warnings), placement=placement, name=name, provider=provider, parent=parent,
                   pool=pool, api_key_secret=api_secret, fabric=fabric, fabric_skipped=fabric_skipped,
                   roles=roles, role_fabric={r: c[0] for r, c in role_fabric.items()})


@dataclass(frozen=True)
class _Place:
    """Where ``serve`` creates things: the resources' name prefix, the namespace, the cluster's provider and the
    parent component."""

    name: str
    namespace: str
    provider: k8s.Provider
    parent: pulumi.Resource | None

    def opts(self, *depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
        """Options of a component ``serve`` creates: parented, on the cluster, after ``depends_on``."""
        return pulumi.ResourceOptions(parent=self.parent, providers={"kubernetes": self.provider},
                                      depends_on=list(depends_on))

    def in_namespace(self, namespace: core.Namespace) -> pulumi.ResourceOptions:
        """Options of an object in the namespace."""
        return pulumi.ResourceOptions(parent=self.parent, providers={"kubernetes": self.provider},
                                      depends_on=[namespace])


def _namespace(cfg: StackConfig, at: _Place, pool: GpuPool, store: WeightStore) -> core.Namespace:
    """The namespace, at the Pod Security level the pool's host mounts and capabilities require."""
    return core.Namespace(
        f"{at.name}-namespace",
        metadata=meta.ObjectMetaArgs(name=at.namespace, labels={
            "app.kubernetes.io/part-of": pods.PART_OF,
            "pod-security.kubernetes.io/enforce": pod_security_level(
                pool, store, cfg.sizing.cold_start.engine_cache,
                cfg.sizing.node_start is not None and cfg.sizing.node_start.local),
            "pod-security.kubernetes.io/warn": "restricted",
            **(store.get("namespace_labels") or {}),
        }),
        opts=pulumi.ResourceOptions(parent=at.parent, providers={"kubernetes": at.provider}),
    )


def _service_account(at: _Place, role: str, spec: Any, namespace: core.Namespace,
                     identity_resources: Sequence[pulumi.Resource]) -> core.ServiceAccount:
    """The bucket's reader or writer identity (annotated for the cloud's workload identity)."""
    return core.ServiceAccount(
        f"{at.name}-{role}",
        metadata=meta.ObjectMetaArgs(name=spec["name"], namespace=at.namespace, labels=pods.labels(at.name, role),
                                     annotations=dict(spec.get("annotations") or {}) or None),
        automount_service_account_token=False,
        opts=pulumi.ResourceOptions.merge(at.in_namespace(namespace), pulumi.ResourceOptions(
            depends_on=[namespace, *identity_resources])),
    )


def _secret(at: _Place, name: str, role: str, data: dict[str, pulumi.Input[str]],
            namespace: core.Namespace) -> core.Secret:
    """An Opaque Secret in the namespace whose values are Pulumi secrets."""
    return core.Secret(
        name,
        metadata=meta.ObjectMetaArgs(name=name, namespace=at.namespace, labels=pods.labels(at.name, role)),
        type="Opaque",
        string_data={k: pulumi.Output.secret(v) for k, v in data.items()},
        opts=at.in_namespace(namespace),
    )


def _secrets(cfg: StackConfig, at: _Place, namespace: core.Namespace,
             store: WeightStore) -> tuple[list[core.Secret], str | None, str | None, WeightStore]:
    """The Hugging Face token (when the sync or the loader needs it), the API key and the store's access keys as
    Secrets fed by Pulumi secrets; their names, and the store with its credentials Secret named."""
    secrets: list[core.Secret] = []
    hf_secret = None
    if cfg.hf_token and (cfg.weights.sync or cfg.weights.loader == Loader.HUGGINGFACE):
        hf_secret = f"{at.name}-hf-token"
        secrets.append(_secret(at, hf_secret, "hf-token", {HF_TOKEN_SECRET_KEY: cfg.hf_token}, namespace))
    api_secret = None
    if cfg.api_key:
        api_secret = f"{at.name}-api-key"
        secrets.append(_secret(at, api_secret, "api-key", {API_KEY_SECRET_KEY: cfg.api_key}, namespace))
    if store.get("credentials"):
        # The store's access keys reach the pods only through this Secret (WeightStore.credentials).
        creds = f"{at.name}-store-credentials"
        secrets.append(_secret(at, creds, "store-credentials", dict(store.get("credentials") or {}), namespace))
        store = WeightStore(**store)
        store["credentials_secret"] = creds
    return secrets, hf_secret, api_secret, store


def _weight_sync(cfg: StackConfig, at: _Place, store: WeightStore, pool: GpuPool, hf_secret: str | None,
                 sync_nodes: SyncNodes | None, depends_on: list[pulumi.Resource]) -> WeightSync | None:
    """The copy from Hugging Face into the bucket, after the identities and the sync's own pool only: it runs while
    the GPU pool is created (Sizing.cold_start)."""
    if cfg.sizing.sync is not None and cfg.sizing.sync.pool and sync_nodes is None:
        raise pulumi.InputPropertyError("sync_nodes", f"the sizing counts on the sync's own pool of "
                                        f"{cfg.sizing.sync.node.sku} (catalog.transfer.SYNC_POOLS); the cloud's "
                                        "deployment must create it and hand it over")
    if not cfg.weights.sync:
        return None
    sync_args = sync_args_of(cfg, store, hf_secret, avoid=dict(pool["node_selector"]), nodes=sync_nodes)
    return WeightSync(f"{at.name}-sync", sync_args, opts=at.opts(*depends_on))


def _node_agent(cfg: StackConfig, at: _Place, pool: GpuPool, store: WeightStore, server: ModelServerArgs,
                depends_on: list[pulumi.Resource]) -> NodeAgent | None:
    """The agent that keeps the weights and the engine's caches on every GPU node, where the stack keeps either
    (sizing.restart): after the pool, the writer's identity and the sync (whose copier ConfigMap it runs, and whose
    marker it needs)."""
    marker = server.get("weights_marker")
    node_dir = server.get("node_weights") or ""
    carried = bool(server.get("warm_key") and server.get("engine_cache"))
    if marker is None or not (node_dir or carried):
        return None
    roles = topology_roles(cfg)
    caches = [role_cache_parts(cfg, r) for r in roles] if roles else [warm_cache_parts(cfg)]
    return NodeAgent(f"{at.name}-node-agent", NodeAgentArgs(
        namespace=at.namespace, pool=pool, store=store, marker=marker, node_dir=node_dir,
        cache_root=str(PurePosixPath(server.get("engine_cache") or "").parent) if carried else "",
        caches=caches if carried else []), opts=at.opts(*depends_on))


def _placement_check(cfg: StackConfig, at: _Place, pool: GpuPool,
                     depends_on: list[pulumi.Resource]) -> PlacementCheck | None:
    """When a replica spans nodes of a pool with a topology label: after the pool only, it runs while the weights
    sync and fails fast when the nodes cannot hold a replica."""
    roles = topology_roles(cfg)
    # A topology's roles: its largest group must fit one domain (the pool holds every role's groups).
    nodes, replicas = (max(r.nodes for r in roles), 1) if roles else (cfg.nodes, cfg.replicas)
    if not placement_needed(pool, nodes):
        return None
    return PlacementCheck(f"{at.name}-placement", PlacementCheckArgs(
        namespace=at.namespace, pool=pool, nodes=nodes, replicas=replicas, image=cfg.image,
    ), opts=at.opts(*depends_on))


def _fabric_check(cfg: StackConfig, at: _Place, pool: GpuPool, server_args: Any,
                  depends_on: list[pulumi.Resource]) -> tuple[FabricCheck | None, str | None]:
    """When a replica spans nodes: the check on each replica's own pods (after the pool and the placement check,
    beside the sync), or why there is none."""
    if cfg.nodes < 2:
        return None, None
    return _group_check(cfg, at, pool, server_args, f"{at.name}-fabric", cfg.sizing.fabric, depends_on,
                        (cfg.nodes, cfg.replicas, cfg.sizing.layout.tensor_parallel))


def _role_fabric_checks(cfg: StackConfig, at: _Place, pool: GpuPool, role_args: Mapping[str, ModelServerArgs],
                        depends_on: list[pulumi.Resource]) -> dict[str, tuple[FabricCheck]]:
    """Issue 39, each role of a disaggregated or wide-EP topology whose groups span nodes: its own check, from that
    role's pod template (its server arguments), size, groups and paths (``sizing.fabric_plan`` on the role's
    layout), by role. A role whose check is off or cannot run yet has none (the aggregated statement says why)."""
    out: dict[str, tuple[FabricCheck]] = {}
    for role in topology_roles(cfg):
        if role.nodes < 2:
            continue
        plan = fabric_plan(cfg.accelerator, role_layout(cfg.sizing.layout, role))
        check, _ = _group_check(cfg, at, pool, role_args[role.name], f"{at.name}-{role.name}-fabric", plan,
                                depends_on, (role.nodes, role.groups, role.gpus_per_group))
        if check is not None:
            out[role.name] = (check,)
    return out


def _group_check(cfg: StackConfig, at: _Place, pool: GpuPool, args: Any, name: str, plan: FabricPlan | None,
                 depends_on: list[pulumi.Resource], shape: tuple[int, int, int]) -> tuple[FabricCheck | None, str | None]:
    """The fabric check of one kind of group (the replica's, or a role's, ``args`` its server's; ``shape`` its
    nodes, groups and tensor-parallel size, as its server claims ComputeDomains by it), or why none."""
    nodes, groups, tp = shape
    if not cfg.fabric_check.enabled:
        return None, "fabricCheck.enabled is false"
    if plan is None or not fabric_needed(pool, nodes, plan):
        return None, pool.get("capacity_pending") or "no fabric plan for this layout"
    engine_env, engine_setup = collective_setup(args, COLLECTIVE_ENV_PREFIXES)
    check = FabricCheck(name, FabricCheckArgs(
        namespace=at.namespace, pool=pool, image=cfg.image, nodes=nodes, groups=groups, tensor_parallel=tp,
        plan=plan_json([p.as_json() for p in plan.paths], plan.gpus_per_node, cfg.fabric_check.min_busbw_fraction,
                       fabric_advice(pool, at.namespace, name, groups)),
        engine_env=engine_env, engine_setup=engine_setup,
        timeout_seconds=default_timeout(plan.seconds),
    ), opts=at.opts(*depends_on))
    return check, None


def _front(cfg: StackConfig, at: _Place, lb: LoadBalancerSettings, server: ModelServer,
           namespace: core.Namespace, roles: Mapping[str, ModelServer],
           metrics: MetricsAccess | None) -> tuple[InferenceGateway | None, pulumi.Output[str], list[str]]:
    """What clients reach: the InferenceGateway (``endpoint.gateway``) or the server's own endpoint, and what the
    plan should say about it. A disaggregated topology's gateway puts one InferencePool over both roles and the
    picker's P/D profile handler in front (``roles.pool_targets``)."""
    warnings: list[str] = list(server.warnings)
    if not cfg.endpoint.gateway:
        if cfg.endpoint.exposure == Exposure.INTERNAL and not lb.get("internal_source_ranges"):
            warnings.append(f"the endpoint is cluster-internal (ClusterIP {at.name}-server in namespace "
                            f"{at.namespace}, reachable from that namespace): the cluster states no internal client "
                            "ranges for a load balancer")
        return None, server.endpoint, warnings
    pool = pool_targets(roles)
    # The picker's tokenizer reads a render endpoint: the server's Service, or the prefill's (its engine serves
    # there directly; the decode's Service fronts the routing sidecar).
    render_host = role_server_name(at.name, RoleName.PREFILL) if pool is not None else f"{at.name}-server"
    args = InferenceGatewayArgs(
        namespace=at.namespace, selector=server.leader_selector, target_port=cfg.engine.port, engine=cfg.engine.name,
        load_balancer=lb, exposure=cfg.endpoint.exposure, allowed_cidrs=list(cfg.endpoint.allowed_cidrs),
        health_path=cfg.engine.health_path,
        # issue 38: the picker's K3 profile (serving.picker)
        model=cfg.model.hf_id, api_key=bool(cfg.api_key), metrics_access=metrics or MetricsAccess(),
        render_url=f"http://{render_host}.{at.namespace}.svc.cluster.local:{cfg.engine.port}")
    if pool is not None:
        args.update(selector=pool.selector, target_port=pool.target_port, roles=pool.roles)
    if cfg.charts.get("llm-d-router-gateway"):
        args["epp_chart_repository"] = cfg.charts["llm-d-router-gateway"]
    gateway = InferenceGateway(gateway_name(at.name), args, opts=at.opts(namespace))
    warnings += gateway.picker_notes
    if cfg.endpoint.exposure == Exposure.PUBLIC and cfg.endpoint.allowed_cidrs and not lb.get("install_gateway"):
        warnings.append("endpoint.allowedCidrs is not enforced by a Gateway: restrict the gateway's clients with "
                        "the cloud's policy (e.g. a GKE GCPBackendPolicy / Cloud Armor); the API key is enforced")
    return gateway, gateway.endpoint, warnings


def server_revision(cfg: StackConfig) -> str:
    """What identifies a rollout of the server: a change replaces the verify Job, which checks the server again."""
    s = cfg.sizing.layout
    return json.dumps({"image": cfg.image, "engine": str(cfg.engine.name), "model": cfg.model.hf_id,
                       "nodes": cfg.nodes, "replicas": cfg.replicas, "tp": s.tensor_parallel, "pp": s.pipeline_parallel,
                       "ep": s.expert_parallel, "loadFormat": cfg.load_format, "memoryFraction": cfg.memory_fraction,
                       "speculative": cfg.speculative_decoding, "loader": str(cfg.weights.loader),
                       "apiKey": bool(cfg.api_key)}, sort_keys=True)


__all__ = ["Serving", "pod_security_level", "serve", "server_revision"]

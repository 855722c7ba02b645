"""The workload of a ModelServer, one of three kinds: a LeaderWorkerSet per group (or one for every group), seed
000's headless Service and StatefulSet (one replica), or a Deployment on one node; each awaited as long as the load
takes, and carrying the security scan's written exceptions."""

from dataclasses import dataclass
from typing import Mapping

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import EngineName, Workload
from . import dra, pods, scan
from .engine import SGLANG_DIST_PORT, VLLM_MASTER_PORT, Role
from .lws import LWS_API_VERSION, lws_controller, lws_object_name
from .pod_template import POD_INDEX_LABEL, ROLE_LABEL, PodTemplates
from .rollout import Rollout
from .server_args import ModelServerArgs

core = k8s.core.v1
meta = k8s.meta.v1


@dataclass(frozen=True)
class ServerWorkload:
    """The workload made for a ModelServer, and what was made with it."""

    resource: pulumi.Resource
    """The LeaderWorkerSet (the last group's, when each group has its own), StatefulSet or Deployment."""
    name: pulumi.Output[str]
    """Its name (the first set's, for LeaderWorkerSets)."""
    lws_controller: k8s.helm.v4.Chart | None = None
    """The LeaderWorkerSet controller's chart, when the server installs it."""
    dist_service: core.Service | None = None
    """The StatefulSet's headless Service for the rank-0 rendezvous."""


def leader_selector(name: str, workload: Workload, every_pod: bool = False) -> dict[str, str]:
    """The labels of the server's leaders (rank 0): what its Services select; with ``every_pod`` (a DEP group, one API
    server per node) every pod of the server."""
    if every_pod:
        return pods.selector(name, "model-server")
    return {**pods.selector(name, "model-server"),
            **({POD_INDEX_LABEL: "0"} if workload == Workload.STATEFUL_SET else {ROLE_LABEL: "leader"})}


def _await_annotations(args: ModelServerArgs, walk: Rollout) -> dict[str, str]:
    """Pulumi's wait for the workload where no custom timeout is given: the longer of a create's and an update's
    (serving.rollout), or none when the pool's capacity has not started (it cannot run the server: ``pulumi up`` must
    not wait for it)."""
    if args["pool"].get("capacity_pending"):
        return {"pulumi.com/skipAwait": "true"}
    return {"pulumi.com/timeoutSeconds": str(max(walk.create_seconds, walk.update_seconds))}


def _scan_skips(args: ModelServerArgs, secret_env: bool) -> dict[str, str]:
    """The checks the server's pods do not satisfy, with the reason (``scan``), for this pool and these secrets."""
    pool = args["pool"]
    skips = dict(scan.SERVER_SKIPS)
    if not (pool.get("cpu_request") and pool.get("memory_request")):
        skips.update(scan.SERVER_NO_CPU_MEMORY)
    if pool.get("capabilities"):
        skips[scan.ADDED_CAPABILITIES] = scan.capabilities_reason(list(pool.get("capabilities") or ()))
    if args.get("api_key_secret") or secret_env:
        skips[scan.SECRET_ENV] = scan.SECRET_ENV_REASON
    return skips


def server_workload(owner: pulumi.Resource, name: str, args: ModelServerArgs, templates: PodTemplates,
                    claims: dra.ServerClaims, opts: pulumi.ResourceOptions, child: pulumi.ResourceOptions,
                    walk: Rollout) -> ServerWorkload:
    """The workload ``args`` asks for, its pods from ``templates`` claiming ``claims``; ``opts`` carry the await
    timeouts and the claims' dependencies, ``child`` the plain child options (the headless Service's); ``walk`` is how
    an update replaces its groups (serving.rollout)."""
    workload = Workload(args["workload"])
    skips = _scan_skips(args, bool(templates.weights.secret_env))
    if workload == Workload.LEADER_WORKER_SET:
        return _leader_worker_sets(owner, name, args, templates, claims, skips, opts, walk)
    if workload == Workload.STATEFUL_SET:
        return _stateful_set(name, args, templates, claims, skips, opts, child, walk)
    return _deployment(name, args, templates, claims, skips, opts, walk)


def _leader_worker_sets(owner: pulumi.Resource, name: str, args: ModelServerArgs, templates: PodTemplates,
                        claims: dra.ServerClaims, skips: Mapping[str, str], opts: pulumi.ResourceOptions,
                        walk: Rollout) -> ServerWorkload:
    """One LeaderWorkerSet, or one per group when each group claims a ComputeDomain of its own (the templates are
    shared by all groups of one LWS); each waits for the one before it, so an update replaces one group at a time."""
    workload, nodes, replicas = Workload(args["workload"]), int(args["nodes"]), int(args["replicas"])
    controller = lws_controller(name, owner, args.get("lws_chart_repository")) \
        if args.get("install_lws_controller", True) else None
    depends: list[pulumi.Resource] = [controller] if controller else []
    skip_await = bool(args["pool"].get("capacity_pending"))
    # checkov scans the pod templates inside the LeaderWorkerSet (tests run it over them): the same written
    # reasons as a Deployment's, on each template; workers serve no HTTP to probe, except a vLLM DEP group's under
    # --data-parallel-hybrid-lb, where every node serves its own ranks and is probed (review of the PD stacks, m3).
    leader_scan = scan.skip_annotations(skips)
    role = templates.spec.role
    workers_serve = role is not None and role.data_parallel and templates.spec.engine.name == EngineName.VLLM
    worker_scan = scan.skip_annotations({**skips, **({} if workers_serve else scan.WORKER_SKIPS)})
    sets: list[pulumi.Resource] = []
    for i, group_claims in enumerate(claims.groups if claims.per_group else claims.groups[:1]):
        sets.append(k8s.apiextensions.CustomResource(
            f"{name}-workload-{i}" if i else f"{name}-workload",
            api_version=LWS_API_VERSION,
            kind="LeaderWorkerSet",
            metadata=meta.ObjectMetaArgs(
                name=lws_object_name(name, i), namespace=args["namespace"], labels=pods.labels(name, "model-server"),
                # Custom resources are not awaited unless told (docs/catalog-research.md §5); LWS sets Available
                # once every group is ready.
                annotations={**({} if skip_await else {"pulumi.com/waitFor": "condition=Available"}),
                             **_await_annotations(args, walk)},
            ),
            spec={
                "replicas": 1 if claims.per_group else replicas,
                "startupPolicy": "LeaderCreated",
                # Surge a group of the new revision only where the pool holds one (serving.rollout).
                "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdateConfiguration": {
                    "maxUnavailable": walk.max_unavailable, "maxSurge": walk.max_surge}},
                "leaderWorkerTemplate": {
                    "size": nodes,
                    "restartPolicy": "RecreateGroupOnPodRestart",
                    "leaderTemplate": templates.template(Role.LEADER, workload, {ROLE_LABEL: "leader"},
                                                         group_claims, claims.env, leader_scan),
                    "workerTemplate": templates.template(Role.WORKER, workload, {ROLE_LABEL: "worker"},
                                                         group_claims, claims.env, worker_scan),
                },
            },
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=depends)),
        ))
        depends = [*depends, sets[-1]]
    return ServerWorkload(sets[-1], pulumi.Output.from_input(lws_object_name(name, 0)), lws_controller=controller)


def _stateful_set(name: str, args: ModelServerArgs, templates: PodTemplates, claims: dra.ServerClaims,
                  skips: Mapping[str, str], opts: pulumi.ResourceOptions, child: pulumi.ResourceOptions,
                  walk: Rollout) -> ServerWorkload:
    """Seed 000's pattern: a headless Service for the rank-0 rendezvous, and a StatefulSet of ``nodes`` pods."""
    ns, workload = args["namespace"], Workload(args["workload"])
    sglang = templates.spec.engine.name == EngineName.SGLANG
    dist_name, dist_port = "dist", (SGLANG_DIST_PORT if sglang else VLLM_MASTER_PORT)
    dist = core.Service(
        f"{name}-dist",
        metadata=meta.ObjectMetaArgs(name=f"{name}-dist", namespace=ns, labels=pods.labels(name, "model-server")),
        spec=core.ServiceSpecArgs(
            cluster_ip="None", selector=leader_selector(name, workload),
            # Rank 0 is not Ready until the whole group has loaded, and the other ranks must find it before that:
            # publish its address while it is not ready.
            publish_not_ready_addresses=True,
            ports=[core.ServicePortArgs(name=dist_name, port=dist_port, target_port=dist_port)],
        ),
        # Headless: pulumi-kubernetes does not wait for its endpoints (service.go shouldWaitForPods).
        opts=child,
    )
    tmpl = templates.template(Role.LEADER, workload, {}, claims.groups[0], claims.env)
    resource = k8s.apps.v1.StatefulSet(
        f"{name}-workload",
        metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=pods.labels(name, "model-server"),
                                     annotations={**_await_annotations(args, walk), **scan.skip_annotations(skips)}),
        spec=k8s.apps.v1.StatefulSetSpecArgs(
            service_name=f"{name}-dist", replicas=int(args["nodes"]), pod_management_policy="Parallel",
            selector=meta.LabelSelectorArgs(match_labels=pods.selector(name, "model-server")), template=tmpl,
        ),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[dist])),
    )
    return ServerWorkload(resource, resource.metadata.apply(lambda m: m.name or name), dist_service=dist)


def _deployment(name: str, args: ModelServerArgs, templates: PodTemplates, claims: dra.ServerClaims,
                skips: Mapping[str, str], opts: pulumi.ResourceOptions, walk: Rollout) -> ServerWorkload:
    """A Deployment of ``replicas`` one-node pods, replaced one at a time."""
    tmpl = templates.template(Role.SINGLE, Workload(args["workload"]), {ROLE_LABEL: "leader"}, claims.groups[0],
                              claims.env)
    resource = k8s.apps.v1.Deployment(
        f"{name}-workload",
        metadata=meta.ObjectMetaArgs(name=name, namespace=args["namespace"], labels=pods.labels(name, "model-server"),
                                     annotations={**_await_annotations(args, walk), **scan.skip_annotations(skips)}),
        spec=k8s.apps.v1.DeploymentSpecArgs(
            replicas=int(args["replicas"]),
            selector=meta.LabelSelectorArgs(match_labels=pods.selector(name, "model-server")),
            # Each pod takes a whole GPU node: surge only where the pool holds a spare one (serving.rollout), else stop
            # one first; one at a time either way.
            strategy=k8s.apps.v1.DeploymentStrategyArgs(
                type="RollingUpdate",
                rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(max_surge=walk.max_surge,
                                                                       max_unavailable=walk.max_unavailable)),
            progress_deadline_seconds=int(args["await_timeout_seconds"]),
            template=tmpl,
        ),
        opts=opts,
    )
    return ServerWorkload(resource, resource.metadata.apply(lambda m: m.name or name))

"""ModelServer: one model served on a GPU pool, as a LeaderWorkerSet, a StatefulSet or a Deployment.

Per replica of ``nodes`` nodes:

- a LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``, group size = nodes, ``RecreateGroupOnPodRestart``,
  002 §4.4) whose leader is rank 0 and serves HTTP, its workers the other ranks (vLLM ``--headless``, SGLang
  ``--node-rank``); the LWS controller is installed with
  its pinned Helm chart (docs/catalog-research.md §3.1) unless the cluster has one;
- or seed 000's pattern: a headless Service for the rank-0 rendezvous plus a StatefulSet with
  ``podManagementPolicy: Parallel`` (one replica);
- or a Deployment on one node.

Each pod requests all of its node's GPUs, lands on the pool by its selector and tolerations, gets
``/dev/shm`` as a memory volume, reads the weights from the bucket (CSI mount, the RunAI streamer reading the
URI, or a copy to local disk), and is probed so that a terabyte-scale load is never killed: a start-up probe
whose failure budget covers the sizing's 1.5 x (load + warm-up), readiness on ``/health``, a lenient liveness.
Around it: a ClusterIP Service for the leaders, an internal or public load balancer per the exposure, a
PodDisruptionBudget when there are several replicas (never one that blocks every eviction), a NetworkPolicy, and
Pulumi await settings long enough for the load.

This module composes them: ``server_args`` (the arguments and their check), ``weight_loading`` (how the weights
reach the engine), ``marker_wait``, ``pod_template``, ``workloads`` (with ``lws``), ``server_services``,
``disruption_budget`` and ``server_network_policy``.
"""

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import ACCELERATORS, ENGINES, MODELS, EngineName, Loader, Workload
from ..component_args import reject_unknown
from . import dra, pods
from .disruption_budget import disruption_budget
from ..catalog.topologies import All2AllBackend, KvTransport, Parallelism, RoleName
from .engine import (SGLANG_DIST_PORT, STREAMER_CONCURRENCY, STREAMER_MEMORY_LIMIT, EngineSpec, Role, RoleSpec,
                     default_memory_fraction, left_off_statement, max_model_len, sglang_command, vllm_command,
                     vllm_launch_problems)
from .marker_wait import marker_wait_egress
from .options import child_options, parent_depends_on
from .pod_template import PodTemplates
from .rollout import peak_replicas, rollout
from .server_args import ModelServerArgs, check_args
from .server_network_policy import network_policy
from .server_services import cluster_ip_service, lb_host, load_balancer, pods_service
from .weight_loading import WeightLoading
from .workloads import leader_selector, server_workload

core = k8s.core.v1


def _role_spec(args: ModelServerArgs) -> RoleSpec | None:
    """The role of ``args`` as the engine lines take it (None: an aggregated replica)."""
    role = args.get("role")
    if role is None:
        return None
    name = None if role["name"] == "wide-ep" else RoleName(role["name"])
    backend, transport = role.get("all2all_backend"), role.get("kv_transport")
    return RoleSpec(name=name, parallelism=Parallelism(role["parallelism"]),
                    all2all=All2AllBackend(backend) if backend else None,
                    transport=KvTransport(transport) if transport else None, sidecar=bool(role.get("routing_sidecar")))


def _engine_spec(args: ModelServerArgs) -> EngineSpec:
    """The engine's settings for ``args``: its load format, memory fraction and parallel layout (a vLLM DEP group:
    tensor parallel 1, every GPU a data-parallel rank)."""
    engine = ENGINES[EngineName(args["engine"])]
    accelerator = ACCELERATORS.get(args.get("accelerator") or "")
    pp = int(args.get("pipeline_parallel") or 1)
    role = _role_spec(args)
    tp = int(args["tensor_parallel"])
    if role is not None and role.data_parallel and engine.name == EngineName.VLLM:
        tp = 1
    spec = EngineSpec(
        model=MODELS[args["model"]], engine=engine,
        load_format=args.get("load_format") or ("runai_streamer" if args["loader"] == Loader.STREAMER
                                                else engine.default_load_format),
        memory_fraction=float(args.get("memory_fraction") or default_memory_fraction(engine, accelerator, pp)),
        nodes=int(args["nodes"]), tensor_parallel=tp, pipeline_parallel=pp,
        expert_parallel=int(args["tensor_parallel"]) if args.get("expert_parallel") else 1,
        speculative_decoding=bool(args.get("speculative_decoding")),
        gpus_per_node=int(args["pool"]["gpus_per_node"]), accelerator=accelerator,
        startup_budget_seconds=int(args["probe_budget_seconds"]), model_source=Loader(args["loader"]).model_source,
        streamer_concurrency=int(args.get("streamer_concurrency") or STREAMER_CONCURRENCY),
        streamer_memory_limit=int(args.get("streamer_memory_limit") or STREAMER_MEMORY_LIMIT),
        kv_events=bool(args.get("kv_events")), kv_offload_gib=int(args.get("kv_offload_gib") or 0),
        role=role,
    )
    if engine.name == EngineName.VLLM and vllm_launch_problems(spec):
        raise pulumi.InputPropertyError("tensor_parallel", "; ".join(vllm_launch_problems(spec)))
    return spec


def collective_setup(args: ModelServerArgs, prefixes: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """The engine container's environment whose names start with ``prefixes`` (its NCCL settings, say) and the shell
    lines its command runs before the engine (the CUDA forward-compatibility switch), as the server's leader gets
    them: what a check on the server's pods must share with them (serving.fabric_check)."""
    spec = _engine_spec(args)
    draft = "${K3_DRAFT_MODEL}" if spec.speculative_decoding else None
    cmd = (vllm_command(spec, model="${K3_MODEL}", role=Role.LEADER, draft_model=draft)
           if spec.engine.name == EngineName.VLLM else
           sglang_command(spec, model="${K3_MODEL}", node_rank="0", draft_model=draft,
                          dist_init_addr=f"$(LWS_LEADER_ADDRESS):{SGLANG_DIST_PORT}" if spec.nodes > 1 else None))
    return {k: v for k, v in sorted(cmd.env.items()) if k.startswith(prefixes)}, list(cmd.before)


class ModelServer(pulumi.ComponentResource):
    """Kimi K3 (or another catalog model) served on a GPU pool: workload, Services, PDB, NetworkPolicy."""

    service_name: pulumi.Output[str]
    """ClusterIP Service in front of the leaders (the engine's port)."""
    endpoint: pulumi.Output[str]
    """Base URL of the server (``http://HOST:PORT``; OpenAI routes under ``/v1``): the load balancer when
    there is one, else the cluster-internal Service name."""
    workload_name: pulumi.Output[str]
    """Name of the LeaderWorkerSet, StatefulSet or Deployment."""
    port: pulumi.Output[int]
    """The engine's HTTP port."""

    def __init__(self, name: str, args: ModelServerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:ModelServer", name, None, opts)
        reject_unknown(args, ModelServerArgs)
        check_args(args)
        ns = args["namespace"]
        workload = Workload(args["workload"])
        replicas = int(args["replicas"])
        inherited = parent_depends_on(opts)
        child = child_options(self, inherited)
        spec = _engine_spec(args)
        port = spec.engine.port
        weights = WeightLoading(name, args, child)
        selector = pods.selector(name, "model-server")
        leaders = leader_selector(name, workload, every_pod=spec.role is not None and spec.role.data_parallel)
        pool = pods.with_node_resources(args["pool"], spec.accelerator)
        args = ModelServerArgs(**{**args, "pool": pool})
        # DRA: the pool's device claims and, when tensor parallelism spans nodes, a ComputeDomain per group (one
        # for all groups when a scaler owns the count: one LeaderWorkerSet it scales by whole groups).
        claims = dra.server_claims(name, namespace=ns, pool=pool, tensor_parallel=int(args["tensor_parallel"]),
                                   groups=replicas if workload == Workload.LEADER_WORKER_SET else 1, opts=child,
                                   shared_domain=bool(args.get("scaler_owns_replicas")))
        # An update walks the groups one at a time (serving.rollout); a LeaderWorkerSet per group walks its one, and
        # the sets follow each other.
        sets = replicas if workload == Workload.LEADER_WORKER_SET and claims.per_group else 1
        walk = rollout(args, 1 if sets > 1 else peak_replicas(args))
        timeouts = pulumi.CustomTimeouts(create=f"{walk.create_seconds}s", update=f"{walk.update_seconds * sets}s")
        # Every Service that selects the server's pods waits as long as the workload does. pulumi-kubernetes
        # awaits a Service on create and on update until no endpoint is not-ready (provider/pkg/await/service.go:
        # `success := serviceReady && endpointsSettled && !endpointsPending`, `endpointsPending` from any
        # NotReadyAddresses), 10 minutes by default (DefaultServiceTimeoutMins); the leaders are NotReady for the
        # whole load (tens of minutes), so a default Service await fails the first `pulumi up`, and any later one
        # that updates a Service while the model reloads. Ordering the Services after the workload would fix only
        # the create, and would start the load balancer's provisioning only after the load. Pods that have no node
        # yet (capacity not started) have no address, so no not-ready endpoint: the Services then need no skipAwait.
        # Headless Services are not awaited on endpoints at all (shouldWaitForPods).
        # A Service updated during a rollout waits for the whole of it (some groups are loading throughout).
        service_opts = child_options(self, inherited, custom_timeouts=timeouts)

        templates = PodTemplates(name, args, spec, weights, int(args["probe_budget_seconds"]))
        workload_opts = child_options(self, inherited, *claims.resources, custom_timeouts=pulumi.CustomTimeouts(
            create=f"{walk.create_seconds}s", update=f"{walk.update_seconds}s"))
        if args.get("scaler_owns_replicas"):
            workload_opts = pulumi.ResourceOptions.merge(workload_opts, pulumi.ResourceOptions(
                ignore_changes=["spec.replicas"]))
        made = server_workload(self, name, args, templates, claims, workload_opts, child, walk)
        self.workload = made.resource
        self.lws_controller: k8s.helm.v4.Chart | None = made.lws_controller
        self.dist_service: core.Service | None = made.dist_service

        svc_labels = pods.labels(name, "model-server")
        self.service = cluster_ip_service(name, ns, leaders, port, svc_labels, service_opts)
        self.pods_service = pods_service(name, args, leaders, port, svc_labels, service_opts)
        """A prefill role's headless Service over its leaders (``server_services.pods_service``), else None."""
        lb_service, client_ranges = load_balancer(name, args, leaders, port, svc_labels, service_opts)
        self.load_balancer_service = lb_service
        self.pdb = disruption_budget(name, ns, replicas, selector, svc_labels, child)
        self.network_policy = network_policy(name, args, selector, client_ranges, svc_labels, child, port)

        self.port = pulumi.Output.from_input(port)
        self.port_number = port
        self.workload_kind = workload
        """The kind of workload the server runs (its scale is what ``k3infra status`` reads)."""
        """The engine's HTTP port as a number (the routing sidecar's where one fronts the engine)."""
        self.service_name = self.service.metadata.apply(lambda m: m.name or name)
        self.workload_name = made.name
        if lb_service is not None:
            self.endpoint = lb_service.status.apply(lambda s: f"http://{lb_host(s)}:{port}")
        else:
            self.endpoint = pulumi.Output.from_input(f"http://{name}.{ns}.svc.cluster.local:{port}")
        self.leader_selector = leaders
        self.warnings: list[str] = [w for w in (marker_wait_egress(args),
                                                left_off_statement(spec.engine.name, sorted(templates.left_off), spec))
                                    if w]
        """What the plan should say about this server (its pods' egress needs)."""
        self.max_model_len = max_model_len(spec)
        """The longest request (prompt plus output tokens) the engine accepts."""
        self.register_outputs({"service_name": self.service_name, "endpoint": self.endpoint,
                               "workload_name": self.workload_name, "port": self.port})

"""Everything the sizing decides for one stack (:func:`size`), and its summary in the plan."""

from dataclasses import dataclass

from ..catalog import CLUSTER_CREATE_MINUTES, GPU_POOL_CREATE_MINUTES, Accelerator, Engine, Loader, Model, distribution
from ..catalog.loaders import OBJECT_GET
from ..catalog.node_local import GRAPH_CAPTURE_SECONDS, WARM_CACHE_BYTES
from ..catalog.transfer import NODE_COPY_PROCESS, CpuNode, streams_for
from ..formatting import duration
from .bucket import egress_term, load_egress, seconds_for, stated_bucket_warnings
from .budgets import IMAGE_PULL_SECONDS, SCHEDULING_SECONDS, await_timeout_seconds, probe_budget_seconds
from .cold_start import COLD_START_TARGET_SECONDS, RESTART_TARGET_SECONDS, ColdStart, ReplicaStart
from .costs import Cost, cost
from .fabric import FabricPlan, fabric_plan
from .load import LoadEstimate, ReadNode, fast_between_nodes, load_estimate, read_share
from .memory import Fit, NodeChoice, default_nodes, fit
from .offload import KvOffload, kv_offload
from .parallel import Layout, layout
from .restart import NODE_FILL_FILES, NodeKeeping, NodeStart, NodeTerms, Term, node_start
from .sync import SyncEstimate, sync_estimate, sync_seconds
from .topology import TopologySizing
from .workload import WorkloadAdvice


@dataclass(frozen=True)
class Sizing:
    """Everything the sizing decides for one stack."""

    model: Model
    accelerator: Accelerator
    engine: Engine
    nodes: int
    """Nodes per replica."""
    replicas: int
    min_nodes: int | None
    fit: Fit
    layout: Layout
    load: LoadEstimate
    sync: SyncEstimate | None
    """The weight sync Job's estimate; None when the stack does not run it."""
    probe_budget_seconds: int
    await_timeout_seconds: int
    cold_start: ColdStart
    cost: Cost
    node_choice: NodeChoice | None = None
    """The default node count and why (:func:`default_nodes`); None when nothing fits."""
    bucket_warnings: tuple[str, ...] = ()
    """The stated bucket figures the budgets trust (:func:`stated_bucket_warnings`)."""
    offload: KvOffload | None = None
    """The host-memory KV tier of each node (:func:`kv_offload`); None where the sizing was not asked for it."""
    fabric: FabricPlan | None = None
    """The fabric check of a multi-node group (:func:`fabric_plan`); None on one node, off Kubernetes or when
    ``fabricCheck.enabled`` is false."""
    node_start: NodeStart | None = None
    """A restart and a scale-out at the node's own speed, beside the restart's floor (sizing.restart)."""
    topology: TopologySizing | None = None
    """The roles of a topology other than aggregated (their groups, fit, KV transfer and cost); None: aggregated, the
    sizing above is every replica's."""
    workload: WorkloadAdvice | None = None
    """The advisory prefill:decode ratio of a stated workload (sizing.workload; the plan's ``topology.workload``);
    None: none stated."""

    @property
    def total_nodes(self) -> int:
        """GPU nodes in the pool: nodes per replica x replicas, or every group of every role of the topology."""
        return self.topology.total_nodes if self.topology is not None else self.nodes * self.replicas

    @property
    def warnings(self) -> tuple[str, ...]:
        """Warnings the sizing raises (an interconnect slower than NVLink, pipeline stages where MNNVL could carry
        tensor parallelism, more nodes than fit the model, with why, stated bucket figures above the catalog's, and
        a host KV tier left off)."""
        c = self.node_choice
        chose_more = c is not None and self.nodes == c.nodes != c.min_nodes
        off = self.offload.reason if self.offload is not None else ""
        return (self.layout.warnings + ((f"nodes: {c.reason}",) if c is not None and chose_more else ())
                + self.bucket_warnings + ((f"kvOffload: {off}",) if off else ()))

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary, camelCase like the rest of the plan."""
        a = self.accelerator
        return {
            "model": self.model.hf_id,
            "accelerator": a.sku,
            "gpuModel": a.gpu_model,
            "cpuArch": str(a.cpu_arch),
            "nodes": self.nodes,
            "replicas": self.replicas,
            "totalNodes": self.total_nodes,
            "minNodes": self.min_nodes,
            "gpusPerNode": a.gpus_per_node,
            "fits": self.fit.fits,
            "memory": _memory(self.fit, self.engine),
            "layout": _layout(self.layout),
            "load": _load(self.load),
            "sync": None if self.sync is None else _sync(self.sync),
            "warmupSeconds": self.engine.warmup_seconds,
            "probeBudgetSeconds": self.probe_budget_seconds,
            "awaitTimeoutSeconds": self.await_timeout_seconds,
            "coldStart": _cold_start(self.cold_start),
            "nodeStart": self.node_start.as_dict() if self.node_start is not None else None,
            "cost": _cost(self.cost),
            "kvOffload": None if self.offload is None else _offload(self.offload),
            **({} if self.topology is None else {"topology": {
                **self.topology.as_dict(a), **({} if self.workload is None else {"workload": self.workload.as_dict()})}}),
        }


def _offload(o: KvOffload) -> dict[str, object]:
    """The plan's ``kvOffload``: the tier per node and the figures it follows from."""
    return {"perNodeGib": o.per_node_gib, "hostGib": o.host_gib, "podGib": o.pod_gib, "loaderGib": o.loader_gib,
            "engineGib": o.engine_gib, "shmGib": o.shm_gib, "off": o.reason or None}


def _memory(f: Fit, engine: Engine) -> dict[str, object]:
    """The plan's ``memory``: the fit's arithmetic."""
    return {
        "nominalGb": round(f.nominal_gb, 1),
        "usableGb": round(f.usable_gb, 1),
        "memoryFraction": engine.memory_fraction if f.nominal_gb == 0 else round(f.usable_gb / f.nominal_gb, 4),
        "weightsGb": round(f.weights_gb, 1),
        "overheadGb": round(f.overhead_gb, 1),
        "kvHeadroomGb": round(f.kv_headroom_gb, 1),
        "minKvCacheGb": f.min_kv_cache_gb,
    }


def _layout(ly: Layout) -> dict[str, object]:
    """The plan's ``layout``."""
    return {
        "tensorParallel": ly.tensor_parallel,
        "pipelineParallel": ly.pipeline_parallel,
        "expertParallel": ly.expert_parallel,
        "tpSpansNodes": ly.tp_spans_nodes,
        "interconnect": ly.interconnect,
        "mode": str(ly.mode),
        "statement": ly.statement,
    }


def _load(ld: LoadEstimate) -> dict[str, object]:
    """The plan's ``load``: the estimate with every term of its rate."""
    return {
        "loader": str(ld.loader),
        "bytesPerNode": ld.bytes_per_node,
        "gbps": ld.gbps,
        "fetchSeconds": ld.fetch_seconds,
        "localReadSeconds": ld.local_read_seconds,
        "seconds": ld.seconds,
        "assumption": ld.assumption,
        "optimisticSeconds": ld.optimistic_fetch_seconds + ld.local_read_seconds,
        "limit": ld.limit,
        "terms": [{"term": k, "gbps": v} for k, v in ld.terms],
        "streamerConcurrency": ld.streamer_concurrency,
        "streamerMemoryLimit": ld.streamer_memory_limit,
        "mountThroughputGbps": ld.mount_throughput_gbps,
        "distribution": ld.distribution,
    }


def _sync(s: SyncEstimate) -> dict[str, object]:
    """The plan's ``sync``: the copy's estimate and its Job's timeout."""
    return {
        "bytes": s.total_bytes,
        "workers": s.workers,
        "cpuNodes": s.nodes,
        "cpuNode": s.node.sku,
        "gbps": s.gbps,
        "bytesPerWorker": s.bytes_per_worker,
        "seconds": s.seconds,
        "optimisticSeconds": s.optimistic_seconds,
        "timeoutSeconds": s.timeout_seconds,
        "streams": s.streams,
        "limit": s.limit,
        "pool": s.pool,
        "nodeUpSeconds": s.node_up_seconds,
        "transferSeconds": s.transfer_seconds,
        "sources": list(s.sources),
    }


def _cold_start(cs: ColdStart) -> dict[str, object]:
    """The plan's ``coldStart``: the phases, the critical path and the targets."""
    return {
        "clusterSeconds": cs.cluster_seconds,
        "gpuPoolSeconds": cs.gpu_pool_seconds,
        "syncSeconds": cs.sync_seconds,
        "imagePullSeconds": cs.image_pull_seconds,
        "loadSeconds": cs.load_seconds,
        "warmupSeconds": cs.warmup_seconds,
        "totalSeconds": cs.total_seconds,
        "bottleneck": cs.bottleneck,
        "criticalPath": [p.name for p in cs.phases if p.critical],
        "phases": [{"name": p.name, "startSeconds": p.start_seconds, "seconds": p.seconds,
                    "critical": p.critical} for p in cs.phases],
        "targetSeconds": COLD_START_TARGET_SECONDS,
        "aboveTarget": cs.above_target,
        "restartSeconds": cs.restart_seconds,
        "restartTargetSeconds": RESTART_TARGET_SECONDS,
        "restartAboveTarget": cs.restart_above_target,
        "restartWarmupSeconds": cs.restart_warmup_seconds,
        "engineCache": cs.engine_cache,
    }


def _cost(c: Cost) -> dict[str, object]:
    """The plan's ``cost``: GPU nodes only."""
    return {
        "currency": "USD",
        "hourlyLow": c.hourly_low,
        "hourlyHigh": c.hourly_high,
        "monthlyLow": c.monthly_low,
        "monthlyHigh": c.monthly_high,
        "estimate": c.estimate,
        "covers": "GPU nodes only, running continuously (730 h/month)",
    }


@dataclass(frozen=True)
class PlatformTerms:
    """What the platform adds to a stack's start and keeps on its nodes (:func:`size`'s ``platform``). The defaults
    are a platform that creates a cluster and a GPU pool, pre-pulls the image and adds nothing else."""

    nothing_to_create: str = ""
    """Why the platform creates no cluster and no GPU pool (catalog.NOTHING_TO_CREATE: an existing cluster, PAI-EAS's
    resource group), so the cold start has neither."""
    pool_wait_seconds: int = 0
    """A wait the GPU pool is created after, from the start (AKS: the reservation group's grant; ColdStart's field)."""
    kubernetes_wait_seconds: int = 0
    """A wait every Kubernetes object is created after, from the cluster's end (AKS: the deployer's grant)."""
    image_pre_pull: bool = True
    """The platform runs serving.prepull (catalog IMAGE_PRE_PULL_PLATFORMS), so the image pull overlaps the sync and a
    new replica finds the image on its nodes."""
    engine_cache: bool = False
    """The server pods keep the engine's caches on their node (the Kubernetes platforms): a restart warms from them."""
    node: NodeKeeping = NodeKeeping()
    """What the GPU nodes keep across pods (sizing.restart)."""
    deep_health_check_seconds: int = 0
    """The GPU nodes' deep health checks before they take pods (HyperPod's), part of the GPU pool phase."""
    host_kv_offload: bool = False
    """Size the host-memory KV tier of each node (the Kubernetes platforms)."""
    fabric_check: bool = True
    """A multi-node group's fabric is checked before its load (``fabric_plan``): k3infra runs the check's pods (the
    Kubernetes platforms) and the stack leaves it on."""


def size(
    model: Model, accelerator: Accelerator, engine: Engine, *,
    nodes: int | None = None,
    replicas: int = 1,
    tensor_parallel: int | None = None,
    pipeline_parallel: int | None = None,
    expert_parallel: bool = False,
    memory_fraction: float | None = None,
    loader: Loader = Loader.STREAMER,
    bandwidth_gbps: float | None = None,
    with_draft_model: bool = False,
    sync: bool = True,
    sync_node: CpuNode | None = None,
    sync_nodes: int = 2,
    sync_workers: int | None = None,
    sync_pool: bool = False,
    region: str | None = None,
    load_format: str | None = None,
    bucket_ingress_gbps: float | None = None,
    bucket_egress_gbps: float | None = None,
    platform: PlatformTerms = PlatformTerms(),
    readers: int | None = None,
) -> Sizing:
    """Size one stack. ``nodes`` defaults to the minimum that fits (or 1 when nothing fits, so the caller can report
    it). With ``sync`` and a ``sync_node`` (the CPU node type the copy runs on), the sync is estimated for
    ``sync_workers`` workers (default: one per CPU node) on ``sync_nodes`` nodes, each keeping the files in flight
    its NIC needs; ``sync_pool``: those nodes are a pool of the sync's own, created from zero; ``region``: the
    bucket's, where its ingress depends on it. Raises LayoutError for an impossible TP/PP layout. ``load_format``:
    the engine's (default: runai_streamer with the streamer, else the engine's default), which decides how the nodes
    split the reads (catalog.distribution) and how many files a node reads at once. ``bucket_ingress_gbps``,
    ``bucket_egress_gbps``: what the bucket takes in from the sync and serves to the loaders, as the stack states
    them (else the catalog's figures; a stated figure above those warns). ``platform``: what the platform adds.
    ``readers``: the GPU nodes that read the bucket at once, sharing its egress (default: every node of every replica,
    which a first ``pulumi up`` starts together; a topology's role: every node of every role)."""
    fraction = memory_fraction if memory_fraction is not None else engine.memory_fraction
    choice = default_nodes(model, accelerator, fraction)
    n = nodes if nodes is not None else (choice.nodes if choice else 1)
    ly = layout(accelerator, n, tensor_parallel, pipeline_parallel, expert_parallel)
    readers_n = readers or n * replicas
    ld = _load_of(model, accelerator, engine, ly, loader, n, readers_n, region, load_format,
                  bandwidth_gbps, bucket_egress_gbps, with_draft_model)
    se = _sync_of(model, with_draft_model, sync_node if sync else None, sync_nodes, sync_workers or sync_nodes,
                  bucket_ingress_gbps, sync_pool, region)
    sync_time = (se.seconds if se is not None else sync_seconds(model, with_draft_model)) if sync else 0
    fabric = fabric_plan(accelerator, ly) if platform.fabric_check else None
    egress = load_egress(accelerator.cloud, region, bucket_egress_gbps).low
    ns = node_start(_node_terms(accelerator, engine, ld, platform.node, engine_cache=platform.engine_cache,
                                image_pre_pull=platform.image_pre_pull, model=model, nodes=n,
                                egress=(egress_term(egress, readers_n, bucket_egress_gbps is not None),
                                        egress / readers_n)))
    budget = probe_budget_seconds(_budget_load_seconds(ld, ns), engine.warmup_seconds)
    return Sizing(
        model=model, accelerator=accelerator, engine=engine, nodes=n, replicas=replicas,
        min_nodes=choice.min_nodes if choice else None,
        fit=fit(model, n * accelerator.gpus_per_node, accelerator.gpu_memory_gb, fraction),
        layout=ly,
        load=ld,
        sync=se,
        probe_budget_seconds=budget,
        await_timeout_seconds=await_timeout_seconds(budget),
        cold_start=_cold_start_of(engine, ld, se, sync_time, platform, restart=ns,
                                  fabric_check_seconds=fabric.seconds if fabric else 0),
        cost=cost(accelerator, n * replicas),
        node_choice=choice,
        node_start=ns,
        bucket_warnings=stated_bucket_warnings(accelerator.cloud, region, bucket_ingress_gbps, bucket_egress_gbps),
        fabric=fabric,
        offload=_offload_of(accelerator, engine, ly, n, ld) if platform.host_kv_offload else None,
    )


def _budget_load_seconds(ld: LoadEstimate, ns: NodeStart) -> int:
    """The load the start-up budget covers: the bucket's, or where the server pod fills its node itself before its
    engine starts (HyperPod's init container), that first fill and the read back from the node when longer. The
    probe starts with the engine, after the init container, but the operator's deadline and Pulumi's wait (the await
    budget, from this one) run from the pod's creation: they must hold the fill of a node that holds no copy."""
    if ns.fill is None or not ns.filled_by_the_pod:
        return ld.seconds
    _, read_back, _ = ns.restart  # scheduling, the read of the node's copy, the warm-up (restart.node_start)
    return max(ld.seconds, ns.fill.seconds + read_back.seconds)


def _load_of(model: Model, accelerator: Accelerator, engine: Engine, ly: Layout, loader: Loader, n: int,
             readers: int, region: str | None, load_format: str | None, bandwidth_gbps: float | None,
             bucket_egress_gbps: float | None, with_draft_model: bool) -> LoadEstimate:
    """The load of the sized replica (:func:`size`'s arguments of the same names): the format decides how the nodes
    split the reads and how many files a node reads at once; ``readers`` nodes share the bucket's egress."""
    fmt = load_format or (distribution.STREAMER_FORMAT if loader == Loader.STREAMER else engine.default_load_format)
    split, share = read_share(fmt, loader, accelerator, ly)
    return load_estimate(model, loader, n, bandwidth_gbps, with_draft_model,
                         ReadNode(accelerator, readers, region, fmt, bucket_egress_gbps,
                                  received_on_nic=n > 1 and not fast_between_nodes(accelerator, ly)),
                         share=share, distribution_statement=split.statement)


def _offload_of(accelerator: Accelerator, engine: Engine, ly: Layout, nodes: int, ld: LoadEstimate) -> KvOffload:
    """The host KV tier of a node of the sized replica: its ranks beside the streamer's buffer."""
    ranks = max(1, ly.tensor_parallel * ly.pipeline_parallel // nodes)
    return kv_offload(accelerator, engine, local_ranks=ranks, streamer_memory_limit=ld.streamer_memory_limit)


def _sync_of(model: Model, with_draft_model: bool, node: CpuNode | None, nodes: int, workers: int,
             ingress_gbps: float | None, pool: bool, region: str | None) -> SyncEstimate | None:
    """The sync Job's estimate on ``node`` (None: the stack runs no sync, or states no CPU node for it)."""
    if node is None:
        return None
    return sync_estimate(model, with_draft_model, node, nodes, workers, ingress_gbps, streams=streams_for(node),
                         pool=pool, region=region)


def _fill(model: Model, a: Accelerator, egress: tuple[str, float]) -> Term:
    """The node copy of the whole checkpoint onto one node: its files in flight, one GET each, under the NIC, under
    the node's share of the bucket's egress (``egress``: its term and rate; every node of the stack fills at once) and
    under what one copier process moves."""
    get = OBJECT_GET[a.cloud]
    terms = {f"{NODE_FILL_FILES} files in flight x {get.source}": NODE_FILL_FILES * get.low,
             "the node's front-end NIC": a.frontend_gbps, egress[0]: egress[1],
             f"one copier process ({NODE_COPY_PROCESS.source})": NODE_COPY_PROCESS.low}
    limit = min(terms, key=lambda k: terms[k])
    gbps = terms[limit]
    return Term(f"the node's copy of {model.weight_bytes / 1e12:.2f} TB from the bucket at {gbps:g} Gbps",
                seconds_for(model.weight_bytes, gbps), f"limited by {limit}")


def _node_terms(a: Accelerator, engine: Engine, ld: LoadEstimate, node: NodeKeeping, *, engine_cache: bool,
                image_pre_pull: bool, model: Model, nodes: int,
                egress: tuple[str, float]) -> NodeTerms:
    """The terms of a restart and a scale-out of the sized stack, each with its source. The bucket carries every
    rank's caches of a group of ``nodes`` (the engines keep one per rank, vLLM ``rank_{rank}_{dp_rank}``), and the
    node agent restores them all on a new node, ahead of a scale-out."""
    capture, capture_source = GRAPH_CAPTURE_SECONDS[engine.name]
    get = OBJECT_GET[a.cloud]
    return NodeTerms(
        share_bytes=ld.bytes_per_node,
        bucket_load=Term(f"the node's share {ld.bytes_per_node / 1e9:,.0f} GB from the bucket at {ld.gbps:g} Gbps",
                         ld.seconds, f"limited by {ld.limit}" if ld.limit else ld.assumption),
        nic_gbps=a.frontend_gbps, local_gbps=node.read.gbps if node.read else None,
        local_source=node.read.source if node.read else "", why_not_local=node.why_none, node_dir=node.directory,
        scheduling=Term("scheduling", SCHEDULING_SECONDS, "ASSUMPTION sizing.budgets SCHEDULING_SECONDS"),
        full_warmup=Term("the warm-up in full", engine.warmup_seconds, engine.sources["warmup_seconds"]),
        cached_warmup=Term("the warm-up from the engine's caches", engine.cached_warmup_seconds,
                           engine.sources["cached_warmup_seconds"]),
        graph_capture=Term("CUDA graph capture", capture, capture_source),
        engine_cache=engine_cache, warm_caches=node.warm_caches,
        cache_restore=Term(f"every rank's caches, {nodes} x {WARM_CACHE_BYTES / 1e9:g} GB, from the bucket", 0,
                           "restored by the node agent on its first round, before its copy of the weights, so on "
                           "the reserved pool's idle nodes ahead of a scale-out: one stream at "
                           f"{get.low:g} Gbps ({get.source}), "
                           f"{duration(seconds_for(nodes * WARM_CACHE_BYTES, get.low))} after the node joins "
                           "(catalog.node_local WARM_CACHE_BYTES per node)"),
        fill=_fill(model, a, egress), filled_by_the_pod=node.filled_by_the_pod,
        would_local_gbps=node.would_read.gbps if node.would_read else None,
        image_pull=Term("image pull", 0 if image_pre_pull else IMAGE_PULL_SECONDS,
                        "serving.prepull: the DaemonSet runs on every node of the pool" if image_pre_pull
                        else "ASSUMPTION sizing.budgets IMAGE_PULL_SECONDS: the platform pulls when the server starts"),
    )


def _cold_start_of(engine: Engine, ld: LoadEstimate, se: SyncEstimate | None, sync_time: int,
                   platform: PlatformTerms, *, restart: NodeStart, fabric_check_seconds: int = 0) -> ColdStart:
    """The cold start of the sized stack (:func:`size`'s arguments of the same names): the platform's cluster and
    pool, the sync, the load and the warm-up; a restart's warm-up from the engine's caches where the node keeps them."""
    restart_warmup = restart.restart[-1].seconds
    pool_seconds = GPU_POOL_CREATE_MINUTES * 60 + platform.deep_health_check_seconds
    return ColdStart(
        cluster_seconds=0 if platform.nothing_to_create else CLUSTER_CREATE_MINUTES * 60,
        gpu_pool_seconds=0 if platform.nothing_to_create else pool_seconds,
        pool_wait_seconds=0 if platform.nothing_to_create else platform.pool_wait_seconds,
        kubernetes_wait_seconds=0 if platform.nothing_to_create else platform.kubernetes_wait_seconds,
        nothing_to_create=platform.nothing_to_create,
        sync_seconds=sync_time,
        image_pull_seconds=IMAGE_PULL_SECONDS,
        load_seconds=ld.seconds,
        warmup_seconds=engine.warmup_seconds,
        sync_limit=se.limit if se is not None else "",
        image_pre_pulled=platform.image_pre_pull,
        restart_seconds=restart.restart_seconds,
        restart_from_node=restart.local,
        engine_cache=platform.engine_cache,
        restart_warmup_seconds=restart_warmup,
        load_limit=ld.limit,
        sync_catalog_bucket=se is not None and se.catalog_bucket_limit,
        load_catalog_bucket=ld.catalog_bucket_limit,
        fabric_check_seconds=fabric_check_seconds,
    )


def replica_start(sizing: Sizing, reaction_seconds: int) -> ReplicaStart:
    """The start of one more replica at the pessimistic end of the sizing (sizing.restart's scale-out: scheduling,
    the image pull where no pre-pull covers the pool, the load, the caches' restore and the warm-up)."""
    ns = sizing.node_start
    if ns is None:
        return ReplicaStart(node_seconds=0, scheduling_seconds=SCHEDULING_SECONDS,
                            image_pull_seconds=IMAGE_PULL_SECONDS, load_seconds=sizing.load.seconds,
                            warmup_seconds=sizing.engine.warmup_seconds, reaction_seconds=reaction_seconds)
    scheduling, pull, load, *warm = ns.scale_out
    return ReplicaStart(node_seconds=0, scheduling_seconds=scheduling.seconds, image_pull_seconds=pull.seconds,
                        load_seconds=load.seconds, warmup_seconds=sum(t.seconds for t in warm),
                        reaction_seconds=reaction_seconds)

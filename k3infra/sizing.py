"""Pure sizing functions: does the model fit, on how many nodes, laid out how, loaded how fast, at what cost.

Everything here is arithmetic over the catalog; nothing touches Pulumi or a cloud. Units: decimal GB,
seconds, USD.
"""

import math
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction

from .catalog import (
    CLUSTER_CREATE_MINUTES,
    GB,
    GPU_POOL_CREATE_MINUTES,
    HF_SYNC_GBPS,
    HOURS_PER_MONTH,
    LOADER_PROFILES,
    PIPELINE_INSTEAD_OF_MNNVL_THROUGHPUT,
    PIPELINE_INSTEAD_OF_MNNVL_TOKEN_LATENCY,
    PROBE_SAFETY_FACTOR,
    Accelerator,
    Cloud,
    Engine,
    Loader,
    LoaderProfile,
    Model,
    ModelSource,
)
from .catalog import distribution, loaders
from .catalog.gpus import SEED_FIT_TABLE, GpuConfiguration
from .catalog.transfer import (
    GRANT_PROPAGATION,
    HUB_STREAM,
    SYNC_POOL_NODE_UP_SECONDS,
    SYNC_STARTUP_SECONDS,
    SYNC_STREAMS_PER_WORKER,
    CpuNode,
    Gbps,
    bucket_ingress,
    streams_for,
)

DEFAULT_NODE_SEARCH_LIMIT = 64
"""Most nodes the minimum-node search tries for a SKU that sets no pool limit of its own."""

PROBE_PERIOD_SECONDS = 10
"""Period of the start-up probe; the budget is rounded up to a whole number of periods."""

IMAGE_PULL_SECONDS = 300
"""ASSUMPTION: pulling a ~20 GB engine image onto a fresh node, before the start-up probe starts counting."""

SCHEDULING_SECONDS = 120
"""ASSUMPTION: scheduling, volume attach and CSI mount before the container starts."""


@dataclass(frozen=True)
class Fit:
    """Whether one model replica fits in a set of GPUs, with the arithmetic that decided it."""

    gpus: int
    nominal_gb: float
    """GPU memory as the vendor states it: GPUs x memory per GPU."""
    usable_gb: float
    """The part the engine claims (nominal x the engine's memory fraction)."""
    weights_gb: float
    overhead_gb: float
    kv_headroom_gb: float
    """What is left for the KV cache: usable - weights - runtime overhead."""
    min_kv_cache_gb: float

    @property
    def fits(self) -> bool:
        """True when the KV headroom is at least the model's minimum KV cache."""
        return self.kv_headroom_gb >= self.min_kv_cache_gb

    @property
    def required_gb(self) -> float:
        """Usable memory one replica needs: weights + overhead + minimum KV cache."""
        return self.weights_gb + self.overhead_gb + self.min_kv_cache_gb


def fit(model: Model, gpus: int, gpu_memory_gb: float, memory_fraction: float) -> Fit:
    """Fit one replica of ``model`` into ``gpus`` GPUs of ``gpu_memory_gb`` each."""
    nominal = gpus * gpu_memory_gb
    usable = nominal * memory_fraction
    weights = model.weight_bytes / GB
    overhead = gpus * model.runtime_overhead_gb_per_gpu
    return Fit(
        gpus=gpus,
        nominal_gb=nominal,
        usable_gb=usable,
        weights_gb=weights,
        overhead_gb=overhead,
        kv_headroom_gb=usable - weights - overhead,
        min_kv_cache_gb=model.min_kv_cache_gb,
    )


def node_limit(accelerator: Accelerator) -> int:
    """Most nodes one pool of this SKU may hold (the SKU's own limit, else a search bound)."""
    return accelerator.max_nodes_per_pool or DEFAULT_NODE_SEARCH_LIMIT


def min_nodes(model: Model, accelerator: Accelerator, memory_fraction: float) -> int | None:
    """The fewest nodes of ``accelerator`` that hold one replica, or None if no pool can."""
    for nodes in range(1, node_limit(accelerator) + 1):
        if fit(model, nodes * accelerator.gpus_per_node, accelerator.gpu_memory_gb, memory_fraction).fits:
            return nodes
    return None


@dataclass(frozen=True)
class NodeChoice:
    """How many nodes one replica gets by default, and why."""

    nodes: int
    min_nodes: int
    """The fewest nodes that hold the model."""
    tensor_parallel: int
    """The TP the engine runs across the chosen nodes by default (the sizing's default layout)."""
    reason: str


def default_nodes(model: Model, accelerator: Accelerator, memory_fraction: float) -> NodeChoice | None:
    """The default node count of one replica: the fewest nodes that fit, unless the NVLink domain spans nodes and
    that count leaves the GPUs no power-of-two TP across all of them (tensor parallelism splits attention heads
    evenly only then). Then the count rises to the fewest that fit and do, inside the domain: a replica whose
    pipeline stages cross nodes it could have joined by NVLink pays for it (catalog.assumptions). None when nothing
    fits.

    On A4X (4 x GB200 of 186 GB), 3 nodes hold Kimi K3 but 12 GPUs admit TP=4 x PP=3 at best; 4 nodes run TP=16
    over multi-node NVLink, seed 000's layout."""
    minimum = min_nodes(model, accelerator, memory_fraction)
    if minimum is None:
        return None
    g, held = accelerator.gpus_per_node, layout(accelerator, minimum)
    fewest = NodeChoice(minimum, minimum, held.tensor_parallel,
                        f"{minimum} x {accelerator.sku}: the fewest nodes that hold {model.display_name}")
    if not accelerator.nvlink_spans_nodes or _is_power_of_two(minimum * g):
        return fewest
    for nodes in range(minimum + 1, accelerator.nvlink_domain_gpus // g + 1):
        if _is_power_of_two(gpus := nodes * g):
            return NodeChoice(nodes, minimum, gpus, (
                f"{nodes} x {accelerator.sku}, not the {minimum} that hold {model.display_name}: {minimum * g} GPUs "
                f"admit no power-of-two tensor parallelism across all of them (TP={held.tensor_parallel} x "
                f"PP={held.pipeline_parallel} at best), {gpus} run TP={gpus} over multi-node NVLink"))
    return fewest


def seed_fit_table(model: Model, memory_fraction: float) -> list[tuple[GpuConfiguration, Fit]]:
    """002 §2.2's configurations with the fit this module computes for each."""
    return [(c, fit(model, c.gpus, c.gpu_memory_gb, memory_fraction)) for c in SEED_FIT_TABLE]


class LayoutError(ValueError):
    """A tensor/pipeline layout that cannot run on the GPUs given."""


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class ParallelMode(StrEnum):
    """How one replica's GPUs talk to each other."""

    ONE_NODE = "one-node"
    """Every GPU of the replica is in one node: NVLink only."""
    MULTI_NODE_NVLINK = "multi-node-nvlink"
    """Tensor parallelism across the nodes of one NVLink domain (GB300 NVL72, 002 §4.4): the pods claim an IMEX
    channel of a ComputeDomain (NVIDIA DRA driver) so NCCL reaches the other node's GPUs over NVLink."""
    PIPELINE_ACROSS_NODES = "pipeline-across-nodes"
    """Tensor parallelism inside each node, pipeline parallelism across nodes over the scale-out fabric: needs
    no multi-node NVLink (002 appendix item 2: TP=4 x PP=2)."""
    TENSOR_OVER_FABRIC = "tensor-over-fabric"
    """Tensor parallelism across nodes over the RDMA fabric (000: TP=16 over two A4 nodes)."""


@dataclass(frozen=True)
class Layout:
    """How one replica is split across GPUs and nodes."""

    nodes: int
    gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    expert_parallel: int
    """Expert-parallel group size (1 when expert parallelism is off)."""
    tp_spans_nodes: bool
    interconnect: str
    """What carries the tensor-parallel all-reduce: NVLink inside a node, multi-node NVLink, or the
    scale-out fabric."""
    mode: ParallelMode
    statement: str
    """The mode in one sentence, with what it costs where a faster mode exists on the same GPUs."""
    warnings: tuple[str, ...] = field(default=())

    @property
    def multi_node_nvlink(self) -> bool:
        """True when the replica needs multi-node NVLink: its pods must claim a ComputeDomain's channel."""
        return self.mode == ParallelMode.MULTI_NODE_NVLINK


def layout(
    accelerator: Accelerator,
    nodes: int,
    tensor_parallel: int | None = None,
    pipeline_parallel: int | None = None,
    expert_parallel: bool = False,
) -> Layout:
    """The parallel layout of one replica on ``nodes`` nodes.

    By default tensor parallelism stays inside an NVLink domain and pipeline parallelism crosses
    domains: TP = all GPUs where the NVLink domain spans the nodes (GB300 NVL72, 002 §4.4), else TP =
    GPUs per node and PP = nodes. An explicit TP larger than a node's GPUs runs over multi-node NVLink or
    the RDMA fabric (000's TP=16 over two A4 nodes) and carries a warning naming the interconnect. Pipeline
    parallelism across nodes that share an NVLink domain (002 appendix item 2) is stated with its cost.

    Raises LayoutError when TP x PP cannot equal the GPUs.
    """
    g = accelerator.gpus_per_node
    gpus = nodes * g
    if tensor_parallel is None and pipeline_parallel is None:
        if accelerator.nvlink_spans_nodes and gpus <= accelerator.nvlink_domain_gpus and _is_power_of_two(gpus):
            tensor_parallel, pipeline_parallel = gpus, 1
        else:
            tensor_parallel, pipeline_parallel = g, nodes
    elif tensor_parallel is None:
        assert pipeline_parallel is not None
        if pipeline_parallel <= 0 or gpus % pipeline_parallel:
            raise LayoutError(f"pipelineParallel {pipeline_parallel} does not divide the {gpus} GPUs")
        tensor_parallel = gpus // pipeline_parallel
    elif pipeline_parallel is None:
        if tensor_parallel <= 0 or gpus % tensor_parallel:
            raise LayoutError(f"tensorParallel {tensor_parallel} does not divide the {gpus} GPUs of {nodes} x {accelerator.sku}")
        pipeline_parallel = gpus // tensor_parallel
    if tensor_parallel * pipeline_parallel != gpus:
        raise LayoutError(
            f"tensorParallel {tensor_parallel} x pipelineParallel {pipeline_parallel} = "
            f"{tensor_parallel * pipeline_parallel}, but {nodes} x {accelerator.sku} has {gpus} GPUs"
        )
    if not _is_power_of_two(tensor_parallel):
        raise LayoutError(f"tensorParallel {tensor_parallel} is not a power of two (attention heads split evenly only then)")

    warnings: list[str] = []
    spans = tensor_parallel > g
    shape = f"TP={tensor_parallel} x PP={pipeline_parallel} on {nodes} x {accelerator.sku}"
    if not spans:
        interconnect = "NVLink (inside one node)"
        if nodes == 1:
            mode, statement = ParallelMode.ONE_NODE, f"{shape}: every GPU of the replica in one node, over NVLink"
        else:
            mode = ParallelMode.PIPELINE_ACROSS_NODES
            statement = f"{shape}: tensor parallelism inside each node, pipeline stages across nodes over " \
                        f"{accelerator.fabric.carrier}; no multi-node NVLink needed"
            if accelerator.nvlink_spans_nodes and gpus <= accelerator.nvlink_domain_gpus and _is_power_of_two(gpus):
                low, high = PIPELINE_INSTEAD_OF_MNNVL_THROUGHPUT
                statement += (
                    f". ESTIMATE: {low:.0%}-{high:.0%} of the throughput of TP={gpus} over multi-node NVLink on the "
                    f"same GPUs, and up to {PIPELINE_INSTEAD_OF_MNNVL_TOKEN_LATENCY:g}x its time per output token "
                    "(catalog.assumptions; 002 appendix item 2)")
                warnings.append(f"parallel layout: {statement}")
    elif accelerator.nvlink_spans_nodes and tensor_parallel <= accelerator.nvlink_domain_gpus:
        interconnect = "multi-node NVLink (MNNVL)"
        mode = ParallelMode.MULTI_NODE_NVLINK
        statement = (f"{shape}: tensor parallelism across {tensor_parallel // g} nodes of one NVLink domain; each "
                     "replica's pods claim the IMEX channel of a ComputeDomain (NVIDIA DRA driver): one per replica, or "
                     "one that all replicas share under a scaler")
    elif accelerator.fabric.rdma and not accelerator.fabric.pods_lack_it:
        f = accelerator.fabric
        interconnect = f"{f.name}, {f.nics} x {f.gbps_per_nic} Gbps per node"
        mode = ParallelMode.TENSOR_OVER_FABRIC
        statement = f"{shape}: tensor parallelism across nodes over {interconnect}"
        warnings.append(
            f"TP={tensor_parallel} spans {math.ceil(tensor_parallel / g)} nodes over {interconnect} instead of NVLink: "
            "all-reduce across the node boundary is slower than inside the NVLink domain "
            f"(the default keeps TP={g} per node with pipeline parallelism across nodes)"
        )
    else:
        raise LayoutError(f"tensorParallel {tensor_parallel} spans nodes, and {accelerator.sku}'s pods have no RDMA "
                          f"fabric (they talk over {accelerator.fabric.carrier})"
                          if accelerator.fabric.rdma else
                          f"tensorParallel {tensor_parallel} spans nodes, and {accelerator.sku} has no RDMA fabric")
    return Layout(
        nodes=nodes,
        gpus=gpus,
        tensor_parallel=tensor_parallel,
        pipeline_parallel=pipeline_parallel,
        expert_parallel=tensor_parallel if expert_parallel else 1,
        tp_spans_nodes=spans,
        interconnect=interconnect,
        mode=mode,
        statement=statement,
        warnings=tuple(warnings),
    )


@dataclass(frozen=True)
class LoadEstimate:
    """Estimated time for one node to bring its share of the weights into GPU memory."""

    loader: Loader
    bytes_per_node: int
    gbps: float
    """The pessimistic rate per node (the least of ``terms``, or the loader's stated range, or the stack's
    bandwidth): budgets use it."""
    fetch_seconds: int
    local_read_seconds: int
    assumption: str
    optimistic_fetch_seconds: int = 0
    """The fetch at the optimistic end of the range."""
    limit: str = ""
    """The term that sets ``gbps``, in words with its figure (catalog.loaders)."""
    terms: tuple[tuple[str, float], ...] = ()
    """Every term of the pessimistic rate: the node's front-end NIC, its share of the storage service, the loader."""
    streamer_concurrency: int = 0
    """RunAI streamer reader threads per rank (``RUNAI_STREAMER_CONCURRENCY``) the rate assumes; 0 off the streamer."""
    streamer_memory_limit: int = 0
    """RunAI streamer CPU buffer per rank in bytes (``RUNAI_STREAMER_MEMORY_LIMIT``); 0 off the streamer."""
    mount_throughput_gbps: float = 0
    """A FUSE client's throughput target (Mountpoint ``maximum-throughput-gbps``); 0 where the client takes none."""
    catalog_bucket_limit: bool = False
    """``limit`` is the node's share of the catalog's figure for the bucket's egress (the stack states none)."""
    distribution: str = ""
    """How the load format splits the reads between the nodes, where the sizing knows it (catalog.distribution)."""

    @property
    def seconds(self) -> int:
        """Fetch plus local read."""
        return self.fetch_seconds + self.local_read_seconds


def _seconds(nbytes: float, gbps: float) -> int:
    return math.ceil(nbytes * 8 / (gbps * 1e9))


@dataclass(frozen=True)
class ReadNode:
    """What the load rate of the bucket-reading loaders depends on besides the loader: the node and the bucket."""

    accelerator: Accelerator
    nodes: int
    """Nodes reading at once (they share the storage service)."""
    region: str | None = None
    load_format: str = distribution.STREAMER_FORMAT
    """The engine's ``--load-format``: whether it reads a file per rank (catalog.distribution.STREAMING_FORMATS; else
    one file per node at a time) and whether the RunAI streamer's settings apply."""
    egress_gbps: float | None = None
    """What the bucket serves as the stack states it (``k3infra:weights.bucketEgressGbps``); None: the catalog's."""
    received_on_nic: bool = False
    """The part of the checkpoint the node does not fetch itself reaches it over its front-end NIC (the replica's
    ranks have neither NVLink nor an RDMA fabric between the nodes), beside what it reads from the bucket."""

    @property
    def streaming_format(self) -> bool:
        """The load format reads a file per rank (catalog.loaders.files_in_flight)."""
        return self.load_format in distribution.STREAMING_FORMATS


EGRESS_KEY = "k3infra:weights.bucketEgressGbps"
"""The setting that states what the bucket serves to the loaders."""
INGRESS_KEY = "k3infra:weights.bucketIngressGbps"
"""The setting that states what the bucket takes in from the sync."""


def _stated(key: str, gbps: float) -> Gbps:
    return Gbps(gbps, gbps, f"stack setting: {key} {gbps:g} Gbps")


def load_egress(cloud: Cloud, region: str | None, stated: float | None) -> Gbps:
    """What the bucket serves to the loaders: the stack's stated figure, else the catalog's (loaders.storage_egress)."""
    return _stated(EGRESS_KEY, stated) if stated is not None else loaders.storage_egress(cloud, region)


def sync_ingress(cloud: Cloud, region: str | None, stated: float | None) -> Gbps:
    """What the bucket takes in from the sync: the stack's stated figure, else the catalog's (bucket_ingress)."""
    return _stated(INGRESS_KEY, stated) if stated is not None else bucket_ingress(cloud, region)


def _egress_term(gbps: float, nodes: int, stated: bool) -> str:
    return f"its share of the bucket's egress: {gbps:g} Gbps / {nodes} node(s)" + (f" ({EGRESS_KEY})" if stated else "")


def _ingress_term(gbps: float, stated: bool) -> str:
    return f"bucket ingress {gbps:g} Gbps" + (f" ({INGRESS_KEY})" if stated else "")


def reads_the_bucket(loader: Loader, cloud: Cloud) -> bool:
    """The loader reads the bucket itself (the streamer, a FUSE client catalog.loaders knows), so its rate follows
    from the bucket's egress; the others run at their stated range (catalog.assumptions)."""
    return loader == Loader.STREAMER or (cloud, loader) in loaders.READ_PATHS


def _nic_term(nic: float, share: Fraction, received_on_nic: bool) -> tuple[str, float]:
    """The front-end NIC's term on the bytes the node fetches: the whole NIC, or where the rest of the checkpoint
    arrives over it from the other nodes too, its part of it (the NIC carries the whole checkpoint either way)."""
    if received_on_nic and share < 1:
        return (f"the node's front-end NIC {nic:g} Gbps x {share} (the other nodes' part of the checkpoint reaches "
                "the node over it too: no NVLink or RDMA between the pods)"), nic * float(share)
    return f"the node's front-end NIC {nic:g} Gbps", nic


def _read_terms(loader: Loader, node: ReadNode, high: bool,
                share: Fraction = Fraction(1)) -> tuple[dict[str, float], int, int, float]:
    """The rate terms of a bucket-reading loader at one end of the figures, the streamer's concurrency and memory
    limit, and a FUSE client's throughput target. ``share``: the part of the checkpoint the node fetches."""
    a, cloud = node.accelerator, node.accelerator.cloud
    nic = a.frontend_gbps
    egress = load_egress(cloud, node.region, node.egress_gbps)
    egress_share = (egress.high if high else egress.low) / node.nodes
    request = loaders.OBJECT_GET[cloud]
    per_request = request.high if high else request.low
    files = loaders.files_in_flight(a.gpus_per_node) if node.streaming_format else 1
    nic_label, nic_rate = _nic_term(nic, share, node.received_on_nic)
    terms = {nic_label: nic_rate,
             _egress_term(egress.high if high else egress.low, node.nodes, node.egress_gbps is not None): egress_share}
    concurrency = memory = 0
    target = 0.0
    if node.load_format == distribution.STREAMER_FORMAT:
        memory = loaders.streamer_memory_limit(a.host_memory_gib, a.gpus_per_node)
    if loader == Loader.STREAMER:
        concurrency = loaders.streamer_concurrency(min(nic_rate, egress.low / node.nodes), a.gpus_per_node, request)
        terms[f"the RunAI streamer: {files} rank(s) x {concurrency} readers x {per_request:g} Gbps"] = (
            files * concurrency * per_request)
    else:
        path = loaders.READ_PATHS[(cloud, loader)]
        if path.sized_to_nic:
            target = nic
            terms[f"{path.client}: maximum-throughput-gbps {nic:g}"] = nic
        terms[f"{path.client}: {files} file(s) x {path.requests_per_file} requests x {per_request:g} Gbps"] = (
            files * path.requests_per_file * per_request)
    return terms, concurrency, memory, target


def load_estimate(
    model: Model,
    loader: Loader,
    nodes: int,
    bandwidth_gbps: float | None = None,
    with_draft_model: bool = False,
    read: ReadNode | None = None,
    share: Fraction | None = None,
    distribution_statement: str = "",
) -> LoadEstimate:
    """Time to load the weights with ``loader`` on each of ``nodes`` nodes (they load in parallel). With ``read``
    (the node and the bucket), a loader that reads the bucket (the streamer, a FUSE client catalog.loaders knows)
    runs at the least of its terms; else at the loader's stated range (catalog.assumptions). ``share``: the part of
    the checkpoint each node fetches from the bucket (catalog.distribution.node_share; None: 1/nodes, every rank of
    the replica splitting one copy); a loader that copies the whole checkpoint to each node fetches all of it."""
    profile = LOADER_PROFILES[loader]
    total = model.weight_bytes
    if with_draft_model and model.draft_model is not None:
        total += model.draft_model.weight_bytes
    part = Fraction(1) if profile.full_checkpoint_per_node else (share if share is not None else Fraction(1, nodes))
    fetched = distribution.fetched_bytes(total, part)
    local = _seconds(math.ceil(total / nodes), profile.local_read_gbps) if profile.local_read_gbps else 0
    if read is not None and bandwidth_gbps is None and reads_the_bucket(loader, read.accelerator.cloud):
        terms, concurrency, memory, target = _read_terms(loader, read, high=False, share=part)
        limit, gbps = min(terms.items(), key=lambda kv: kv[1])
        high = min(_read_terms(loader, read, high=True, share=part)[0].values())
        path = loaders.READ_PATHS.get((read.accelerator.cloud, loader))
        egress = load_egress(read.accelerator.cloud, read.region, read.egress_gbps)
        sources = (read.accelerator.sources.get("frontend_gbps", ""), egress.source,
                   loaders.OBJECT_GET[read.accelerator.cloud].source, path.source if path else "")
        return LoadEstimate(
            loader=loader, bytes_per_node=fetched, gbps=round(gbps, 3), fetch_seconds=_seconds(fetched, gbps),
            local_read_seconds=local, assumption=f"limited by {limit}; " + "; ".join(x for x in sources if x),
            optimistic_fetch_seconds=_seconds(fetched, high), limit=limit,
            terms=tuple((k, round(v, 3)) for k, v in terms.items()), streamer_concurrency=concurrency,
            streamer_memory_limit=memory, mount_throughput_gbps=target,
            catalog_bucket_limit=read.egress_gbps is None and limit == _egress_term(egress.low, read.nodes, False),
            distribution=_statement(profile, distribution_statement))
    gbps = bandwidth_gbps or profile.low_gbps_per_node
    source = profile.source if bandwidth_gbps is None else f"stack setting: {bandwidth_gbps} Gbps per node"
    return LoadEstimate(
        loader=loader,
        bytes_per_node=fetched,
        gbps=gbps,
        fetch_seconds=_seconds(fetched, gbps),
        local_read_seconds=local,
        assumption=source,
        optimistic_fetch_seconds=_seconds(fetched, bandwidth_gbps or profile.gbps_per_node),
        distribution=_statement(profile, distribution_statement),
    )


def _statement(profile: LoaderProfile, split: str) -> str:
    """How the nodes split the reads: a copying loader takes the whole checkpoint to every node, whatever the format."""
    return "every node copies the whole checkpoint to local disk, then reads it" if profile.full_checkpoint_per_node \
        else split


def probe_budget_seconds(load_seconds: int, warmup_seconds: int) -> int:
    """Start-up probe budget: 1.5x (load + warm-up), rounded up to whole probe periods."""
    raw = PROBE_SAFETY_FACTOR * (load_seconds + warmup_seconds)
    return math.ceil(raw / PROBE_PERIOD_SECONDS) * PROBE_PERIOD_SECONDS


def await_timeout_seconds(probe_budget: int) -> int:
    """How long Pulumi waits for the serving workload: the probe budget plus image pull and scheduling."""
    return probe_budget + IMAGE_PULL_SECONDS + SCHEDULING_SECONDS


def rolling_update_timeout_seconds(await_timeout: int, batches: int) -> int:
    """How long Pulumi waits for a rolling update of a managed service that replaces its replicas one batch at a
    time: a whole start (the await timeout: probe budget, image pull, scheduling) per batch."""
    return await_timeout * max(1, batches)


SYNC_TIMEOUT_FACTOR = PROBE_SAFETY_FACTOR
"""The sync Job's await budget covers this multiple of the pessimistic estimate (the probes' 1.5)."""

LARGEST_FILE_FRACTION = 1 / 64
"""ESTIMATE: the largest file of a checkpoint relative to the whole (Kimi K3's 96 shards are ~1/96 each): the
size-balanced assignment leaves a worker at most the average share plus one largest file."""


@dataclass(frozen=True)
class SyncEstimate:
    """The one-time copy from the Hub into the bucket by ``workers`` workers on ``nodes`` CPU nodes."""

    total_bytes: int
    workers: int
    nodes: int
    node: CpuNode
    bucket_gbps: float
    """What the bucket takes in at the pessimistic end (the stack's figure, else the catalog's)."""
    gbps: float
    """Aggregate rate at the pessimistic end: min(workers x streams x Hub stream, nodes' NICs, bucket ingress)."""
    bytes_per_worker: int
    """Average share plus one largest file (the bound of the size-balanced assignment)."""
    seconds: int
    """The longer of the cloud's grant propagation (the copier waits out a refused authorization that long; the
    grant exists before the Job does) and the pool's node coming up plus start-up, then the busiest worker's bytes
    at its share of the pessimistic rate."""
    optimistic_seconds: int
    sources: tuple[str, ...]
    streams: int = SYNC_STREAMS_PER_WORKER
    """Files in flight per worker (``copier.py sync --streams``), scaled to the node's NIC."""
    limit: str = ""
    """The term of the pessimistic rate that limits it, in words with its figure."""
    pool: bool = False
    """True when the copy runs on a pool of its own that the cluster autoscaler creates and removes."""
    node_up_seconds: int = 0
    """The pool's node coming up from zero (0 on nodes that are there already)."""
    transfer_seconds: int = 0
    """The busiest worker's bytes at its share of the pessimistic rate."""
    catalog_bucket_limit: bool = False
    """``limit`` is the catalog's figure for the bucket's ingress (the stack states none)."""

    @property
    def timeout_seconds(self) -> int:
        """How long Pulumi waits for the Job: 1.5 x the pessimistic estimate, in whole minutes."""
        return math.ceil(self.seconds * SYNC_TIMEOUT_FACTOR / 60) * 60


def _rate_terms(workers: int, streams: int, hub: float, placed: int, nic: float, bucket: float, stated: bool,
                where: str) -> dict[str, float]:
    # Stated figures first: where an ESTIMATE ties with them, the stated one is named as the limit.
    return {f"the sync nodes' NICs: {placed} x {nic:g} Gbps{where}": placed * nic,
            _ingress_term(bucket, stated): bucket,
            f"the Hub: {workers} worker(s) x {streams} streams x {hub:g} Gbps (ESTIMATE)": workers * streams * hub}


def sync_estimate(model: Model, with_draft_model: bool, node: CpuNode, nodes: int, workers: int,
                  ingress_gbps: float | None = None, *, streams: int = SYNC_STREAMS_PER_WORKER, pool: bool = False,
                  region: str | None = None) -> SyncEstimate:
    """Time of the sharded, streamed copy (k3infra.weightcopy.copier) at both ends of the stated figures. ``pool``:
    the copy runs on a pool of its own that starts empty (its node comes up while the grants propagate);
    ``ingress_gbps``: what the bucket takes in as the stack states it (else the catalog's figure)."""
    total = model.weight_bytes
    if with_draft_model and model.draft_model is not None:
        total += model.draft_model.weight_bytes
    ingress = sync_ingress(node.cloud, region, ingress_gbps)
    grants = GRANT_PROPAGATION[node.cloud]
    placed = min(workers, nodes)
    where = "" if pool else (" (an existing cluster's nodes: no pool to create)" if node.cloud == Cloud.KUBERNETES
                             else " (the system nodes: this cloud's deployment builds no sync pool)")
    low_terms = _rate_terms(workers, streams, HUB_STREAM.low, placed, node.nic.low,
                            ingress.low, ingress_gbps is not None, where)
    limit, low = min(low_terms.items(), key=lambda kv: kv[1])
    high = min(_rate_terms(workers, streams, HUB_STREAM.high, placed, node.nic.high,
                           ingress.high, ingress_gbps is not None, where).values())
    per_worker = math.ceil(total / workers + total * LARGEST_FILE_FRACTION) if workers > 1 else total
    node_up = SYNC_POOL_NODE_UP_SECONDS if pool else 0
    transfer = _seconds(per_worker, low / workers)
    return SyncEstimate(
        total_bytes=total, workers=workers, nodes=nodes, node=node, bucket_gbps=ingress.low, gbps=round(low, 3),
        bytes_per_worker=per_worker,
        seconds=max(grants.seconds, node_up + SYNC_STARTUP_SECONDS) + transfer,
        optimistic_seconds=node_up + SYNC_STARTUP_SECONDS + _seconds(math.ceil(total / workers), high / workers),
        sources=(HUB_STREAM.source, node.nic.source, ingress.source, grants.source),
        streams=streams, limit=limit, pool=pool, node_up_seconds=node_up, transfer_seconds=transfer,
        catalog_bucket_limit=ingress_gbps is None and limit == _ingress_term(ingress.low, False),
    )


def sync_seconds(model: Model, with_draft_model: bool) -> int:
    """The one-time copy at HF_SYNC_GBPS: a figure for stacks that do not run the sync (a copy by hand)."""
    total = model.weight_bytes
    if with_draft_model and model.draft_model is not None:
        total += model.draft_model.weight_bytes
    return _seconds(total, HF_SYNC_GBPS)


@dataclass(frozen=True)
class Cost:
    """GPU node cost. The system pool, storage and egress are not included."""

    hourly_low: float
    hourly_high: float
    estimate: bool

    @property
    def monthly_low(self) -> float:
        """At 730 hours a month, running continuously."""
        return round(self.hourly_low * HOURS_PER_MONTH, 2)

    @property
    def monthly_high(self) -> float:
        """At 730 hours a month, running continuously."""
        return round(self.hourly_high * HOURS_PER_MONTH, 2)


def cost(accelerator: Accelerator, nodes: int) -> Cost:
    """Hourly and monthly cost of ``nodes`` GPU nodes of ``accelerator``."""
    p = accelerator.price
    return Cost(hourly_low=round(p.low * nodes, 2), hourly_high=round(p.high * nodes, 2), estimate=p.estimate)


GRANT_WAIT_PHASE = "grant propagation"
"""The cold start's phase of a wait the GPU pool is created after (ColdStart.pool_wait_seconds)."""
FIXED_PHASE_SOURCES = {
    "cluster": "catalog.assumptions CLUSTER_CREATE_MINUTES",
    GRANT_WAIT_PHASE: "azure.rolePropagationMinutes, waited on the first `pulumi up` only",
    "GPU pool": "catalog.assumptions GPU_POOL_CREATE_MINUTES",
    "warm-up": "the engine's warm-up",
}
"""Where each phase no setting shortens takes its length from (ColdStart.above_target)."""

COLD_START_TARGET_SECONDS = 45 * 60
"""Issue 26: a first ``pulumi up`` serves its first token within 45 minutes."""
RESTART_TARGET_SECONDS = 10 * 60
"""Issue 26: a server pod rescheduled onto a node that served before serves again within 10 minutes."""


@dataclass(frozen=True)
class Phase:
    """One bar of the cold start's timeline: a phase, when it starts and how long it takes."""

    name: str
    start_seconds: int
    seconds: int
    critical: bool
    """On the critical path: any second it loses, the cold start loses."""

    @property
    def end_seconds(self) -> int:
        """When the phase ends."""
        return self.start_seconds + self.seconds


@dataclass(frozen=True)
class ColdStart:
    """From nothing to a served request, as phases on one time axis: the cluster; then, side by side, the GPU
    pool followed by the image pre-pull on its nodes, and the weight sync (it needs only a node that runs a pod);
    then the load and the warm-up once both branches are done. The total is the critical path, not the sum."""

    cluster_seconds: int
    gpu_pool_seconds: int
    sync_seconds: int
    """The pessimistic sync estimate; zero when the stack does not sync (the bucket already holds the weights)."""
    image_pull_seconds: int
    load_seconds: int
    warmup_seconds: int
    sync_limit: str = ""
    """What limits the sync's rate (SyncEstimate.limit), to name when the sync is on the critical path."""
    image_pre_pulled: bool = True
    """The engine image is pulled onto the GPU nodes as they join (serving.prepull), beside the sync; False where
    the platform pulls it only when the server starts (HyperPod, PAI-EAS)."""
    restart_seconds: int = 0
    """A server pod rescheduled onto a node that served before: scheduling, then the load and the warm-up again
    (the image is on the node; with ``engine_cache`` the warm-up reads the caches the first start built)."""
    engine_cache: bool = False
    """The server pods keep the engine's compile and kernel caches in a node directory (serving's
    ``engine_cache``), so a restart on the node warms up from them."""
    restart_warmup_seconds: int = 0
    """The warm-up a restart pays: the engine's cached warm-up with ``engine_cache``, else the whole one."""
    load_limit: str = ""
    """What limits the load's rate (LoadEstimate.limit), to name when the restart is above its target."""
    sync_catalog_bucket: bool = False
    """The catalog's figure for what the bucket takes in limits the sync (SyncEstimate.catalog_bucket_limit)."""
    load_catalog_bucket: bool = False
    """The catalog's figure for what the bucket serves limits the load (LoadEstimate.catalog_bucket_limit)."""
    pool_wait_seconds: int = 0
    """A wait the GPU pool is created after, from the start, beside the cluster (AKS: the reservation group's grant
    propagating, a time:Sleep of azure.rolePropagationMinutes); 0 where the pool waits for the cluster alone."""
    nothing_to_create: str = ""
    """Why there is no cluster and no GPU pool to create (catalog.NOTHING_TO_CREATE); "" where there are."""

    def _bucket_hints(self, sync: bool, load: bool) -> str:
        """Where the catalog's bucket figure is the limit named, the setting that states the bucket's own."""
        hints = [f"{what} is the catalog's pessimistic figure ({table}): where the provider raised the account's "
                 f"limit or the store carries more, {key} states it"
                 for on, what, table, key in (
                     (sync and self.sync_catalog_bucket, "what the bucket takes in", "catalog.transfer.BUCKET_INGRESS",
                      INGRESS_KEY),
                     (load and self.load_catalog_bucket, "what the bucket serves", "catalog.loaders.STORAGE_EGRESS",
                      EGRESS_KEY)) if on]
        return "".join(f"; {h}" for h in hints)

    @property
    def phases(self) -> tuple[Phase, ...]:
        """Every phase with its start, the critical ones marked."""
        c, pull, wait = self.cluster_seconds, self.image_pull_seconds if self.image_pre_pulled else 0, self.pool_wait_seconds
        pool_start = max(c, wait)
        pulled = pool_start + self.gpu_pool_seconds + pull
        synced = c + self.sync_seconds
        sync_critical = synced > pulled
        ready = max(pulled, synced)
        out = [Phase("cluster", 0, c, sync_critical or c >= wait)] if c else []
        if wait:
            out.append(Phase(GRANT_WAIT_PHASE, 0, wait, not sync_critical and wait > c))
        if self.gpu_pool_seconds:
            out.append(Phase("GPU pool", pool_start, self.gpu_pool_seconds, not sync_critical))
        if pull:
            out.append(Phase("image pre-pull", pool_start + self.gpu_pool_seconds, pull, not sync_critical))
        if self.sync_seconds:
            out.append(Phase("weight sync", c, self.sync_seconds, sync_critical))
        if not self.image_pre_pulled:
            out.append(Phase("image pull", ready, self.image_pull_seconds, True))
            ready += self.image_pull_seconds
        out.append(Phase("load", ready, self.load_seconds, True))
        out.append(Phase("warm-up", ready + self.load_seconds, self.warmup_seconds, True))
        return tuple(out)

    @property
    def total_seconds(self) -> int:
        """The end of the critical path: the cluster, the later of (GPU pool, pre-pull) and the sync, load, warm-up."""
        return max(p.end_seconds for p in self.phases)

    @property
    def bottleneck(self) -> str:
        """Which of the parallel branches is on the critical path."""
        pool_branch = (max(self.cluster_seconds, self.pool_wait_seconds) - self.cluster_seconds + self.gpu_pool_seconds
                       + (self.image_pull_seconds if self.image_pre_pulled else 0))
        if self.sync_seconds > pool_branch:
            return "weight sync"
        if self.gpu_pool_seconds:
            return "GPU pool"
        return "image pre-pull" if self.image_pre_pulled else "image pull"

    @property
    def restart_above_target(self) -> str | None:
        """Why the restart exceeds RESTART_TARGET_SECONDS, naming the load's limit; None when it does not."""
        if self.restart_seconds <= RESTART_TARGET_SECONDS:
            return None
        limit = f" at {self.load_limit}" if self.load_limit else ""
        cached = ("from the engine's caches on the node" if self.engine_cache
                  else "in full: no engine cache on the node (k3infra:engineCache, on the Kubernetes platforms; its "
                       "hostPath makes the serving namespace privileged)")
        return (f"the weights are read again{limit} ({self.load_seconds // 60} min {self.load_seconds % 60} s; no "
                f"loader keeps them on the node across pods), then the warm-up {cached} "
                f"({self.restart_warmup_seconds // 60} min)" + self._bucket_hints(sync=False, load=True))

    @property
    def above_target(self) -> str | None:
        """Why the cold start exceeds COLD_START_TARGET_SECONDS, naming the fixed phases; None when it does not."""
        if self.total_seconds <= COLD_START_TARGET_SECONDS:
            return None
        fixed = [p for p in self.phases if p.critical and p.name in ("cluster", GRANT_WAIT_PHASE, "GPU pool", "warm-up")]
        floor = sum(p.seconds for p in fixed)
        names = " + ".join(f"{p.name} {p.seconds // 60} min" for p in fixed)
        if floor >= COLD_START_TARGET_SECONDS:
            sources = "; ".join(FIXED_PHASE_SOURCES[p.name] for p in fixed)
            after = "the grant" if any(p.name == GRANT_WAIT_PHASE for p in fixed) else "the cluster"
            return (f"{names} = {floor // 60} min on the critical path alone, one after the other ({sources}; all at "
                    f"their pessimistic end): the pool needs {after} and the warm-up the loaded weights, so no setting "
                    "overlaps them")
        sync = self.bottleneck == "weight sync"
        why = f" (limited by {self.sync_limit})" if sync and self.sync_limit else ""
        load = f" (limited by {self.load_limit})" if self.load_limit else ""
        return (f"the {self.bottleneck}{why} and the load{load} on the critical path, with {names}"
                + self._bucket_hints(sync=sync, load=True))


def restart_seconds(load_seconds: int, warmup_seconds: int) -> int:
    """A rescheduled server pod on a node that served before: scheduling, load and warm-up (image on the node). The
    load is the cold start's: no loader keeps the weights across pods (the GCS FUSE file cache lives in the
    sidecar's emptyDir; Mountpoint, BlobFuse2 and ossfs caches are per mount; the streamer keeps none)."""
    return SCHEDULING_SECONDS + load_seconds + warmup_seconds


@dataclass(frozen=True)
class ReplicaStart:
    """What one more replica costs from the scaler's decision to serving, on nodes the reserved pool already holds
    (k3infra's GPU pools are fixed at the reservation's size: no node is provisioned on scale-out)."""

    node_seconds: int
    """Node provisioning: zero where the pool's nodes stay up (every k3infra platform today)."""
    scheduling_seconds: int
    image_pull_seconds: int
    load_seconds: int
    warmup_seconds: int
    reaction_seconds: int
    """How long the scaler takes to see the load (its polling interval)."""

    @property
    def total_seconds(self) -> int:
        """Scale-out to serving: node, scheduling, image pull, weight load, warm-up."""
        return (self.node_seconds + self.scheduling_seconds + self.image_pull_seconds + self.load_seconds
                + self.warmup_seconds)

    @property
    def first_request_seconds(self) -> int:
        """What the first request after idle waits with scale-to-zero: the scaler's reaction, then a whole start."""
        return self.reaction_seconds + self.total_seconds


def replica_start(sizing: "Sizing", reaction_seconds: int) -> ReplicaStart:
    """The start of one more replica at the pessimistic end of the sizing (image pull, load, warm-up)."""
    return ReplicaStart(node_seconds=0, scheduling_seconds=SCHEDULING_SECONDS, image_pull_seconds=IMAGE_PULL_SECONDS,
                        load_seconds=sizing.load.seconds, warmup_seconds=sizing.engine.warmup_seconds,
                        reaction_seconds=reaction_seconds)


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

    @property
    def total_nodes(self) -> int:
        """GPU nodes in the pool: nodes per replica x replicas."""
        return self.nodes * self.replicas

    @property
    def warnings(self) -> tuple[str, ...]:
        """Warnings the sizing raises (an interconnect slower than NVLink, pipeline stages where MNNVL could carry
        tensor parallelism, more nodes than fit the model, with why, and stated bucket figures above the catalog's)."""
        c = self.node_choice
        chose_more = c is not None and self.nodes == c.nodes != c.min_nodes
        return (self.layout.warnings + ((f"nodes: {c.reason}",) if c is not None and chose_more else ())
                + self.bucket_warnings)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary, camelCase like the rest of the plan."""
        a, f, ly, ld, c, cs = self.accelerator, self.fit, self.layout, self.load, self.cost, self.cold_start
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
            "fits": f.fits,
            "memory": {
                "nominalGb": round(f.nominal_gb, 1),
                "usableGb": round(f.usable_gb, 1),
                "memoryFraction": self.engine.memory_fraction if f.nominal_gb == 0 else round(f.usable_gb / f.nominal_gb, 4),
                "weightsGb": round(f.weights_gb, 1),
                "overheadGb": round(f.overhead_gb, 1),
                "kvHeadroomGb": round(f.kv_headroom_gb, 1),
                "minKvCacheGb": f.min_kv_cache_gb,
            },
            "layout": {
                "tensorParallel": ly.tensor_parallel,
                "pipelineParallel": ly.pipeline_parallel,
                "expertParallel": ly.expert_parallel,
                "tpSpansNodes": ly.tp_spans_nodes,
                "interconnect": ly.interconnect,
                "mode": str(ly.mode),
                "statement": ly.statement,
            },
            "load": {
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
            },
            "sync": None if self.sync is None else {
                "bytes": self.sync.total_bytes,
                "workers": self.sync.workers,
                "cpuNodes": self.sync.nodes,
                "cpuNode": self.sync.node.sku,
                "gbps": self.sync.gbps,
                "bytesPerWorker": self.sync.bytes_per_worker,
                "seconds": self.sync.seconds,
                "optimisticSeconds": self.sync.optimistic_seconds,
                "timeoutSeconds": self.sync.timeout_seconds,
                "streams": self.sync.streams,
                "limit": self.sync.limit,
                "pool": self.sync.pool,
                "nodeUpSeconds": self.sync.node_up_seconds,
                "transferSeconds": self.sync.transfer_seconds,
                "sources": list(self.sync.sources),
            },
            "warmupSeconds": self.engine.warmup_seconds,
            "probeBudgetSeconds": self.probe_budget_seconds,
            "awaitTimeoutSeconds": self.await_timeout_seconds,
            "coldStart": {
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
            },
            "cost": {
                "currency": "USD",
                "hourlyLow": c.hourly_low,
                "hourlyHigh": c.hourly_high,
                "monthlyLow": c.monthly_low,
                "monthlyHigh": c.monthly_high,
                "estimate": c.estimate,
                "covers": "GPU nodes only, running continuously (730 h/month)",
            },
        }


def size(
    model: Model,
    accelerator: Accelerator,
    engine: Engine,
    *,
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
    nothing_to_create: str = "",
    pool_wait_seconds: int = 0,
    image_pre_pull: bool = True,
    load_format: str | None = None,
    engine_cache: bool = False,
    bucket_ingress_gbps: float | None = None,
    bucket_egress_gbps: float | None = None,
    deep_health_check_seconds: int = 0,
) -> Sizing:
    """Size one stack. ``nodes`` defaults to the minimum that fits (or 1 when nothing fits, so the caller
    can report it). With ``sync`` and a ``sync_node`` (the CPU node type the copy runs on), the sync is
    estimated for ``sync_workers`` workers (default: one per CPU node) on ``sync_nodes`` nodes, each keeping the
    files in flight its NIC needs; ``sync_pool``: those nodes are a pool of the sync's own, created from zero;
    ``region``: the bucket's, where its ingress depends on it. Raises
    LayoutError for an impossible TP/PP layout. ``nothing_to_create``: why the platform creates no cluster and no
    GPU pool (catalog.NOTHING_TO_CREATE: an existing cluster, PAI-EAS's resource group), so the cold start has
    neither; ``pool_wait_seconds``: a wait the GPU pool is created after, counted from the start beside the cluster
    (AKS: the reservation group's grant propagating, azure.rolePropagationMinutes). ``image_pre_pull``: the
    platform runs serving.prepull (the Kubernetes platforms), so the image pull overlaps the sync. ``load_format``: the
    engine's (default: runai_streamer with the streamer, else the engine's default), which decides how the nodes split
    the reads (catalog.distribution) and how many files a node reads at once. ``engine_cache``: the server
    pods keep the engine's caches on their node (the Kubernetes platforms), so a restart warms up from them.
    ``bucket_ingress_gbps``, ``bucket_egress_gbps``: what the bucket takes in from the sync and serves to the
    loaders, as the stack states them (else the catalog's figures; a stated figure above those warns).
    ``deep_health_check_seconds``: the GPU nodes' deep health checks before they take pods (HyperPod's), part of the
    GPU pool phase."""
    fraction = memory_fraction if memory_fraction is not None else engine.memory_fraction
    choice = default_nodes(model, accelerator, fraction)
    n = nodes if nodes is not None else (choice.nodes if choice else 1)
    ly = layout(accelerator, n, tensor_parallel, pipeline_parallel, expert_parallel)
    fmt = load_format or (distribution.STREAMER_FORMAT if loader == Loader.STREAMER else engine.default_load_format)
    split, share = read_share(fmt, loader, accelerator, ly)
    ld = load_estimate(model, loader, n, bandwidth_gbps, with_draft_model,
                       ReadNode(accelerator, n, region, fmt, bucket_egress_gbps,
                                received_on_nic=n > 1 and not _fast_between_nodes(accelerator, ly)),
                       share=share, distribution_statement=split.statement)
    budget = probe_budget_seconds(ld.seconds, engine.warmup_seconds)
    restart_warmup = engine.cached_warmup_seconds if engine_cache else engine.warmup_seconds
    se = (sync_estimate(model, with_draft_model, sync_node, sync_nodes, sync_workers or sync_nodes, bucket_ingress_gbps,
                        streams=streams_for(sync_node), pool=sync_pool, region=region)
          if sync and sync_node is not None else None)
    return Sizing(
        model=model,
        accelerator=accelerator,
        engine=engine,
        nodes=n,
        replicas=replicas,
        min_nodes=choice.min_nodes if choice else None,
        fit=fit(model, n * accelerator.gpus_per_node, accelerator.gpu_memory_gb, fraction),
        layout=ly,
        load=ld,
        sync=se,
        probe_budget_seconds=budget,
        await_timeout_seconds=await_timeout_seconds(budget),
        cold_start=ColdStart(
            cluster_seconds=0 if nothing_to_create else CLUSTER_CREATE_MINUTES * 60,
            gpu_pool_seconds=0 if nothing_to_create else GPU_POOL_CREATE_MINUTES * 60 + deep_health_check_seconds,
            pool_wait_seconds=0 if nothing_to_create else pool_wait_seconds,
            nothing_to_create=nothing_to_create,
            sync_seconds=(se.seconds if se is not None else sync_seconds(model, with_draft_model)) if sync else 0,
            image_pull_seconds=IMAGE_PULL_SECONDS,
            load_seconds=ld.seconds,
            warmup_seconds=engine.warmup_seconds,
            sync_limit=se.limit if se is not None else "",
            image_pre_pulled=image_pre_pull,
            restart_seconds=restart_seconds(ld.seconds, restart_warmup),
            engine_cache=engine_cache,
            restart_warmup_seconds=restart_warmup,
            load_limit=ld.limit,
            sync_catalog_bucket=se is not None and se.catalog_bucket_limit,
            load_catalog_bucket=ld.catalog_bucket_limit,
        ),
        cost=cost(accelerator, n * replicas),
        node_choice=choice,
        bucket_warnings=stated_bucket_warnings(accelerator.cloud, region, bucket_ingress_gbps, bucket_egress_gbps),
    )


def _fast_between_nodes(accelerator: Accelerator, ly: Layout) -> bool:
    """The replica's ranks reach the other nodes over NVLink (a ComputeDomain's channel) or an RDMA fabric the pods
    use, not the front-end network."""
    f = accelerator.fabric
    return ly.mode == ParallelMode.MULTI_NODE_NVLINK or (f.rdma and f.pods_lack_it is None)


def read_share(load_format: str, loader: Loader, accelerator: Accelerator,
               ly: Layout) -> tuple[distribution.ReadSplit, Fraction]:
    """How the nodes of one replica split the reads with what k3infra sets (the streamer distributed over every rank
    of the replica, by whole files on a mounted path: catalog.distribution.streamer_env), and the part of the
    checkpoint each node fetches."""
    env = distribution.streamer_env(ly.nodes, loader.model_source == ModelSource.LOCAL)
    split = distribution.read_split(
        load_format, distributed=distribution.streamer_distributed(ly.tensor_parallel * ly.pipeline_parallel), env=env)
    path = loaders.READ_PATHS.get((accelerator.cloud, loader))
    return split, distribution.node_share(split, ly.nodes, accelerator.gpus_per_node,
                                          bool(path and path.whole_objects))


def stated_bucket_warnings(cloud: Cloud, region: str | None, ingress_gbps: float | None,
                           egress_gbps: float | None) -> tuple[str, ...]:
    """A stated bucket figure above the catalog's is trusted, and the budgets that follow from it say so."""
    where = f", {region}" if region else ""
    return tuple(
        f"{key.removeprefix('k3infra:')} {stated:g} is above the catalog's {catalog.low:g} Gbps ({cloud}{where}): "
        f"{what} trust it, so a bucket that carries less fails them; state only what the provider "
        "granted the account or the store was measured to carry"
        for key, stated, catalog, what in (
            (INGRESS_KEY, ingress_gbps, bucket_ingress(cloud, region), "the sync estimate and its Job's timeout"),
            (EGRESS_KEY, egress_gbps, loaders.storage_egress(cloud, region),
             "the load estimate and the start-up probe's budget"))
        if stated is not None and stated > catalog.low)

"""How long one node takes to bring its share of the weights into GPU memory, and how the nodes split the reads."""

import math
from dataclasses import dataclass
from fractions import Fraction

from ..catalog import LOADER_PROFILES, Accelerator, Cloud, Loader, LoaderProfile, Model, ModelSource
from ..catalog import distribution, loaders
from .bucket import egress_term, load_egress, seconds_for
from .parallel import Layout, ParallelMode

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
             egress_term(egress.high if high else egress.low, node.nodes, node.egress_gbps is not None): egress_share}
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
    local = seconds_for(math.ceil(total / nodes), profile.local_read_gbps) if profile.local_read_gbps else 0
    if read is not None and bandwidth_gbps is None and reads_the_bucket(loader, read.accelerator.cloud):
        terms, concurrency, memory, target = _read_terms(loader, read, high=False, share=part)
        limit, gbps = min(terms.items(), key=lambda kv: kv[1])
        high = min(_read_terms(loader, read, high=True, share=part)[0].values())
        path = loaders.READ_PATHS.get((read.accelerator.cloud, loader))
        egress = load_egress(read.accelerator.cloud, read.region, read.egress_gbps)
        sources = (read.accelerator.sources.get("frontend_gbps", ""), egress.source,
                   loaders.OBJECT_GET[read.accelerator.cloud].source, path.source if path else "")
        return LoadEstimate(
            loader=loader, bytes_per_node=fetched, gbps=round(gbps, 3), fetch_seconds=seconds_for(fetched, gbps),
            local_read_seconds=local, assumption=f"limited by {limit}; " + "; ".join(x for x in sources if x),
            optimistic_fetch_seconds=seconds_for(fetched, high), limit=limit,
            terms=tuple((k, round(v, 3)) for k, v in terms.items()), streamer_concurrency=concurrency,
            streamer_memory_limit=memory, mount_throughput_gbps=target,
            catalog_bucket_limit=read.egress_gbps is None and limit == egress_term(egress.low, read.nodes, False),
            distribution=_statement(profile, distribution_statement))
    gbps = bandwidth_gbps or profile.low_gbps_per_node
    source = profile.source if bandwidth_gbps is None else f"stack setting: {bandwidth_gbps} Gbps per node"
    return LoadEstimate(
        loader=loader,
        bytes_per_node=fetched,
        gbps=gbps,
        fetch_seconds=seconds_for(fetched, gbps),
        local_read_seconds=local,
        assumption=source,
        optimistic_fetch_seconds=seconds_for(fetched, bandwidth_gbps or profile.gbps_per_node),
        distribution=_statement(profile, distribution_statement),
    )


def _statement(profile: LoaderProfile, split: str) -> str:
    """How the nodes split the reads: a copying loader takes the whole checkpoint to every node, whatever the format."""
    return "every node copies the whole checkpoint to local disk, then reads it" if profile.full_checkpoint_per_node \
        else split


def fast_between_nodes(accelerator: Accelerator, ly: Layout) -> bool:
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

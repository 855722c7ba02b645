"""How one replica is split across GPUs and nodes: tensor, pipeline and expert parallelism, and what carries them."""

import math
from dataclasses import dataclass, field
from enum import StrEnum

from ..catalog import PIPELINE_INSTEAD_OF_MNNVL_THROUGHPUT, PIPELINE_INSTEAD_OF_MNNVL_TOKEN_LATENCY, Accelerator


class LayoutError(ValueError):
    """A tensor/pipeline layout that cannot run on the GPUs given."""


def is_power_of_two(n: int) -> bool:
    """True for 1, 2, 4, 8, ...: the tensor-parallel sizes that split attention heads evenly."""
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
    gpus = nodes * accelerator.gpus_per_node
    tp, pp = _degrees(accelerator, nodes, tensor_parallel, pipeline_parallel)
    spans = tp > accelerator.gpus_per_node
    interconnect, mode, statement, warnings = (_across_nodes(accelerator, nodes, tp, pp) if spans
                                               else _inside_nodes(accelerator, nodes, tp, pp))
    return Layout(
        nodes=nodes,
        gpus=gpus,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        expert_parallel=tp if expert_parallel else 1,
        tp_spans_nodes=spans,
        interconnect=interconnect,
        mode=mode,
        statement=statement,
        warnings=warnings,
    )


def _degrees(accelerator: Accelerator, nodes: int, tensor_parallel: int | None,
             pipeline_parallel: int | None) -> tuple[int, int]:
    """TP and PP: the default where neither is given, the other one derived where one is; LayoutError when they
    cannot run on the GPUs."""
    g = accelerator.gpus_per_node
    gpus = nodes * g
    if tensor_parallel is None and pipeline_parallel is None:
        if accelerator.nvlink_spans_nodes and gpus <= accelerator.nvlink_domain_gpus and is_power_of_two(gpus):
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
    if not is_power_of_two(tensor_parallel):
        raise LayoutError(f"tensorParallel {tensor_parallel} is not a power of two (attention heads split evenly only then)")
    return tensor_parallel, pipeline_parallel


_Mode = tuple[str, ParallelMode, str, tuple[str, ...]]
"""What carries the tensor-parallel all-reduce, the mode, its statement and its warnings."""


def _inside_nodes(accelerator: Accelerator, nodes: int, tensor_parallel: int, pipeline_parallel: int) -> _Mode:
    """TP inside each node: one node, or pipeline stages across nodes (stated with its cost where multi-node NVLink
    could carry TP over the same GPUs)."""
    gpus = nodes * accelerator.gpus_per_node
    shape = f"TP={tensor_parallel} x PP={pipeline_parallel} on {nodes} x {accelerator.sku}"
    interconnect = "NVLink (inside one node)"
    if nodes == 1:
        return interconnect, ParallelMode.ONE_NODE, f"{shape}: every GPU of the replica in one node, over NVLink", ()
    statement = f"{shape}: tensor parallelism inside each node, pipeline stages across nodes over " \
                f"{accelerator.fabric.carrier}; no multi-node NVLink needed"
    if accelerator.nvlink_spans_nodes and gpus <= accelerator.nvlink_domain_gpus and is_power_of_two(gpus):
        low, high = PIPELINE_INSTEAD_OF_MNNVL_THROUGHPUT
        statement += (
            f". ESTIMATE: {low:.0%}-{high:.0%} of the throughput of TP={gpus} over multi-node NVLink on the "
            f"same GPUs, and up to {PIPELINE_INSTEAD_OF_MNNVL_TOKEN_LATENCY:g}x its time per output token "
            "(catalog.assumptions; 002 appendix item 2)")
        return interconnect, ParallelMode.PIPELINE_ACROSS_NODES, statement, (f"parallel layout: {statement}",)
    return interconnect, ParallelMode.PIPELINE_ACROSS_NODES, statement, ()


def _across_nodes(accelerator: Accelerator, nodes: int, tensor_parallel: int, pipeline_parallel: int) -> _Mode:
    """TP across nodes: over multi-node NVLink inside one domain, else over the pods' RDMA fabric with a warning;
    LayoutError where the pods have neither."""
    g = accelerator.gpus_per_node
    shape = f"TP={tensor_parallel} x PP={pipeline_parallel} on {nodes} x {accelerator.sku}"
    if accelerator.nvlink_spans_nodes and tensor_parallel <= accelerator.nvlink_domain_gpus:
        statement = (f"{shape}: tensor parallelism across {tensor_parallel // g} nodes of one NVLink domain; each "
                     "replica's pods claim the IMEX channel of a ComputeDomain (NVIDIA DRA driver): one per replica, or "
                     "one that all replicas share under a scaler")
        return "multi-node NVLink (MNNVL)", ParallelMode.MULTI_NODE_NVLINK, statement, ()
    if accelerator.fabric.rdma and not accelerator.fabric.pods_lack_it:
        f = accelerator.fabric
        interconnect = f"{f.name}, {f.nics} x {f.gbps_per_nic} Gbps per node"
        warning = (
            f"TP={tensor_parallel} spans {math.ceil(tensor_parallel / g)} nodes over {interconnect} instead of NVLink: "
            "all-reduce across the node boundary is slower than inside the NVLink domain "
            f"(the default keeps TP={g} per node with pipeline parallelism across nodes)"
        )
        return (interconnect, ParallelMode.TENSOR_OVER_FABRIC,
                f"{shape}: tensor parallelism across nodes over {interconnect}", (warning,))
    raise LayoutError(f"tensorParallel {tensor_parallel} spans nodes, and {accelerator.sku}'s pods have no RDMA "
                      f"fabric (they talk over {accelerator.fabric.carrier})"
                      if accelerator.fabric.rdma else
                      f"tensorParallel {tensor_parallel} spans nodes, and {accelerator.sku} has no RDMA fabric")

"""What a serving group's collectives must reach: the paths the fabric check runs, the transport each must use
between nodes and the bus bandwidth expected of it, from the catalog's fabric facts.

A group is ``nodes`` x ``gpus_per_node`` ranks, node-major (rank r on node r // gpus_per_node), as the engines
number them. Its paths:

- ``tensor-parallel``: an all-reduce across the first tensor-parallel group (ranks 0..TP-1; every stage's group runs
  at once, as the server's do);
- ``expert-parallel``: an all-to-all across the first expert-parallel group, where expert parallelism is on;
- ``pipeline``: an all-reduce across every rank of the group, where pipeline stages cross nodes (the stages' sends
  cross the same links; an all-reduce proves the transport and the bandwidth between every pair of nodes).

The expected bus bandwidth (nccl-tests' definition: "the speed of the hardware bottleneck", ``doc/PERFORMANCE.md``)
is the line rate of the path's bottleneck, one direction:

- inside one NVLink domain (one node, or multi-node NVLink): the GPU's NVLink bandwidth, for both collectives (an
  all-reduce's ring and an all-to-all each move (n-1)/n of the data through every GPU's links);
- across nodes over a network of ``B`` GB/s per node: an all-reduce's ring crosses each node's boundary with
  2(n-1)/n of the data, so its bus bandwidth is bounded by ``B``; an all-to-all sends (n-g)/n of each rank's data off
  its node (g GPUs per node), so its bus bandwidth, algbw x (n-1)/n, is bounded by ``B (n-1) / (g (n-g))``.

``B`` is the RDMA fabric's NIC count x speed where the pods use it, else the front-end network (TCP, the plan's
expected transport then being sockets). All pure arithmetic over the catalog.
"""

from dataclasses import dataclass, replace
from typing import Any

from ..catalog import Accelerator
from ..catalog.fabric import CHECK_SECONDS, nvlink_of
from .parallel import Layout, ParallelMode
from .topology import RoleSizing

NVLINK, RDMA, SOCKET = "nvlink", "rdma", "socket"
"""The transport a path must use between nodes (k3infra.fabric_probe's classes)."""


@dataclass(frozen=True)
class FabricPath:
    """One collective the fabric check runs and what it must reach."""

    name: str
    collective: str
    """``all_reduce`` or ``all_to_all``."""
    ranks: tuple[int, ...]
    expect: str
    """The transport between nodes: NVLINK, RDMA or SOCKET (inside a node: NVLink)."""
    expected_busbw_gbs: float
    """Bus bandwidth at line rate, GB/s (1e9 B/s)."""
    basis: str
    """Where the figure comes from, with its source."""

    def as_json(self) -> dict[str, Any]:
        """The path as the in-cluster probe reads it (``--plan``)."""
        return {"name": self.name, "collective": self.collective, "ranks": list(self.ranks), "expect": self.expect,
                "expectedBusbwGBs": round(self.expected_busbw_gbs, 2), "basis": self.basis}


@dataclass(frozen=True)
class FabricPlan:
    """The fabric check of one serving group."""

    gpus_per_node: int
    nodes: int
    paths: tuple[FabricPath, ...]
    seconds: int
    """ESTIMATE of the check's length once its pods run (catalog.fabric CHECK_SECONDS)."""

    @property
    def world(self) -> int:
        """Ranks of the group: one per GPU."""
        return self.nodes * self.gpus_per_node


def _network(accelerator: Accelerator) -> tuple[str, float, str]:
    """(transport, GB/s per node, basis) of the network between nodes the pods use."""
    f = accelerator.fabric
    if f.rdma and not f.pods_lack_it:
        return RDMA, f.total_gbps / 8, (f"{f.name}: {f.nics} x {f.gbps_per_nic} Gb/s per node "
                                        f"({accelerator.sources.get('fabric', 'catalog')})")
    return SOCKET, accelerator.frontend_gbps / 8, (f"TCP over the front-end network, {accelerator.frontend_gbps:g} "
                                                   f"Gb/s per node ({accelerator.sources.get('frontend_gbps', 'catalog')}): "
                                                   "the pods reach no RDMA fabric (Accelerator.fabric.pods_lack_it)")


def expected(accelerator: Accelerator, collective: str, ranks: int, *, over_nvlink: bool) -> tuple[str, float, str]:
    """(transport between nodes, expected bus bandwidth GB/s, basis) of ``collective`` across ``ranks`` node-major
    ranks (module docstring)."""
    g = accelerator.gpus_per_node
    nvlink = nvlink_of(accelerator)
    link = nvlink.per_direction_gb_per_s
    link_basis = f"NVLink {nvlink.generation}: {link:g} GB/s per GPU each way ({nvlink.source})"
    if ranks <= g or over_nvlink:
        return NVLINK, link, link_basis
    transport, per_node, basis = _network(accelerator)
    if collective == "all_reduce":
        return transport, min(per_node, link), f"{basis}; an all-reduce's ring is bounded by the node's network"
    bound = per_node * (ranks - 1) / (g * (ranks - g))
    return transport, min(bound, link), (f"{basis}; an all-to-all over {ranks} ranks, {g} per node, sends "
                                         f"{ranks - g}/{ranks} of its data off the node: B(n-1)/(g(n-g))")


def fabric_plan(accelerator: Accelerator, layout: Layout) -> FabricPlan | None:
    """The fabric check of one group of ``layout`` on ``accelerator``; None for a group on one node (NVLink inside
    one node is not what a fallback breaks)."""
    if layout.nodes < 2:
        return None
    world = layout.nodes * accelerator.gpus_per_node
    mnnvl = layout.multi_node_nvlink
    paths: list[FabricPath] = []

    def add(name: str, collective: str, size: int) -> None:
        transport, busbw, basis = expected(accelerator, collective, size, over_nvlink=mnnvl)
        paths.append(FabricPath(name, collective, tuple(range(size)), transport, busbw, basis))

    if layout.tensor_parallel > 1:  # a DEP role's ranks are TP=1: its collective is the experts' all-to-all
        add("tensor-parallel", "all_reduce", layout.tensor_parallel)
    if layout.expert_parallel > 1:
        add("expert-parallel", "all_to_all", layout.expert_parallel)
    if layout.pipeline_parallel > 1 and not layout.tp_spans_nodes:
        add("pipeline", "all_reduce", world)
    return FabricPlan(gpus_per_node=accelerator.gpus_per_node, nodes=layout.nodes, paths=tuple(paths),
                      seconds=CHECK_SECONDS)


def role_layout(base: Layout, role: RoleSizing) -> Layout:
    """One group of a disaggregated or wide-EP role as a Layout (what ``fabric_plan`` reads): the role's nodes, GPUs,
    tensor and expert parallelism; over multi-node NVLink where the stack's layout is (the roles share its pool and
    its NVLink domain), else over the scale-out fabric."""
    mode = base.mode if base.multi_node_nvlink else ParallelMode.TENSOR_OVER_FABRIC
    return replace(base, nodes=role.nodes, gpus=role.gpus_per_group, tensor_parallel=role.tensor_parallel,
                   pipeline_parallel=1, expert_parallel=role.expert_parallel,
                   tp_spans_nodes=role.nodes > 1 and role.tensor_parallel > role.gpus_per_group // role.nodes,
                   mode=mode, interconnect=role.carrier, statement=f"{role.name}: {role.parallelism} over "
                   f"{role.nodes} nodes", warnings=())

"""A serving topology's sizing: per role GPUs, nodes, fit and layout; the KV cache moved per request between the roles
and its time on the fabric; the whole topology's cost beside the aggregated plan of the same hardware.

Pure functions of catalog facts (catalog/topologies.py) and numbers, like ``layout`` and ``fit``.
"""

from dataclasses import dataclass, replace

from ..catalog import GB, Accelerator, Model
from ..catalog.topologies import (
    KIMI_K3_KV,
    REPLICATED_WEIGHT_GB,
    All2AllBackend,
    KvGeometry,
    KvTransport,
    Parallelism,
    TopologyMode,
    fabric_facts,
)
from .cold_start import ColdStart, RolePhases
from .costs import Cost, cost
from .memory import Fit
from .restart import NodeStart


@dataclass(frozen=True)
class RoleSizing:
    """One role of a topology: its groups, each group's layout and fit, and its start."""

    name: str
    """prefill, decode, or wide-ep (every group does both)."""
    parallelism: Parallelism
    groups: int
    nodes: int
    """Nodes per group."""
    gpus_per_group: int
    tensor_parallel: int
    data_parallel: int
    expert_parallel: int
    fit: Fit
    all2all: All2AllBackend | None
    """The DEP group's all-to-all backend; None for TEP."""
    carrier: str
    """What the group's collectives travel over."""
    load_seconds: int
    load_bytes_per_node: int
    """Bytes each node of a group fetches from the bucket (its group's ``LoadEstimate.bytes_per_node``)."""
    probe_budget_seconds: int
    restart_seconds: int
    cold_start: ColdStart
    """The stack's cold start were this role its only one (its group's fabric check, load and restart)."""
    node_start: NodeStart | None
    """A restart and a scale-out of one of the role's groups beside their floor (None where the platform states
    none)."""

    @property
    def total_nodes(self) -> int:
        """Nodes of every group of the role."""
        return self.groups * self.nodes

    def as_dict(self) -> dict[str, object]:
        """The plan's entry for the role."""
        f = self.fit
        return {"role": self.name, "parallelism": str(self.parallelism), "groups": self.groups, "nodes": self.nodes,
                "gpusPerGroup": self.gpus_per_group, "tensorParallel": self.tensor_parallel,
                "dataParallel": self.data_parallel, "expertParallel": self.expert_parallel, "fits": f.fits,
                "weightsGbPerGpu": round(f.weights_gb / f.gpus, 1), "kvHeadroomGb": round(f.kv_headroom_gb, 1),
                "all2allBackend": None if self.all2all is None else str(self.all2all), "carrier": self.carrier,
                "loadSeconds": self.load_seconds, "loadBytesPerNode": self.load_bytes_per_node,
                "probeBudgetSeconds": self.probe_budget_seconds,
                "restartSeconds": self.restart_seconds}


def role_fit(model: Model, accelerator: Accelerator, parallelism: Parallelism, gpus: int,
             memory_fraction: float) -> Fit:
    """Whether one group of ``gpus`` GPUs holds the model and a KV cache. TEP shards every weight; DEP replicates the
    weights outside the routed experts on every GPU (``REPLICATED_WEIGHT_GB``, ESTIMATE) and shards the experts. A
    group fits when its KV headroom is the model's minimum KV cache or more, and every GPU keeps some."""
    nominal = gpus * accelerator.gpu_memory_gb
    weights = model.weight_bytes / GB
    if parallelism == Parallelism.DEP:
        weights += REPLICATED_WEIGHT_GB * (gpus - 1)
    overhead = gpus * model.runtime_overhead_gb_per_gpu
    usable = nominal * memory_fraction
    return Fit(gpus=gpus, nominal_gb=nominal, usable_gb=usable, weights_gb=weights, overhead_gb=overhead,
               kv_headroom_gb=usable - weights - overhead, min_kv_cache_gb=model.min_kv_cache_gb)


def smallest_role_nodes(model: Model, accelerator: Accelerator, parallelism: Parallelism, memory_fraction: float,
                        most: int) -> int | None:
    """The fewest nodes per group, up to ``most``, at which one group of ``parallelism`` holds the model and its
    minimum KV cache (``role_fit``); None when no size does: a DEP group never fits where one GPU holds less than the
    replicated weights and its runtime, since every GPU added brings them again."""
    for nodes in range(1, most + 1):
        if role_fit(model, accelerator, parallelism, nodes * accelerator.gpus_per_node, memory_fraction).fits:
            return nodes
    return None


@dataclass(frozen=True)
class KvTransfer:
    """The KV cache one request hands from the prefill to the decode, and its time on the fabric between them."""

    input_tokens: int
    element_bytes: int
    bytes_per_token: int
    state_bytes: int
    """The fixed per-request state (Kimi K3: KDA), whatever the length."""
    transport: KvTransport
    gbps: float
    """The slower end's bandwidth to the other role: one node's fabric (or its pod network over TCP)."""

    @property
    def bytes_per_request(self) -> int:
        """The latent cache of ``input_tokens`` tokens plus the fixed state."""
        return self.input_tokens * self.bytes_per_token + self.state_bytes

    @property
    def seconds(self) -> float:
        """At the link's line rate (ESTIMATE: no protocol overhead, no contention with other transfers)."""
        return round(self.bytes_per_request * 8 / (self.gbps * 1e9), 4)

    def as_dict(self) -> dict[str, object]:
        """The plan's ``kvTransfer``."""
        return {"inputTokens": self.input_tokens, "elementBytes": self.element_bytes,
                "bytesPerToken": self.bytes_per_token, "stateBytesPerRequest": self.state_bytes,
                "bytesPerRequest": self.bytes_per_request, "transport": str(self.transport), "gbps": self.gbps,
                "seconds": self.seconds,
                "estimate": "line rate of one node's link, no protocol overhead or contention (ESTIMATE)"}


def kv_transfer(accelerator: Accelerator, transport: KvTransport, input_tokens: int, element_bytes: int = 1,
                geometry: KvGeometry = KIMI_K3_KV) -> KvTransfer:
    """The KV transfer of one request of ``input_tokens`` tokens (FP8 cache: ``element_bytes`` 1)."""
    fabric = accelerator.fabric
    gbps = float(accelerator.frontend_gbps if transport == KvTransport.TCP else fabric.total_gbps)
    return KvTransfer(input_tokens=input_tokens, element_bytes=element_bytes,
                      bytes_per_token=geometry.kv_bytes_per_token(element_bytes),
                      state_bytes=geometry.state_bytes_per_request, transport=transport, gbps=gbps)


def concurrent_requests(fit: Fit, transfer: KvTransfer, tensor_parallel: int, pipeline_parallel: int = 1,
                        data_parallel: int = 1) -> int:
    """Requests of the transfer's length whose cache one group holds at once (a throughput-relevant figure, not a
    rate). Per rank, not pooled: with MLA vLLM keeps the whole latent on every tensor-parallel rank (vllm 0.33.0
    ``config/model.py`` ``get_num_kv_heads``: "When using MLA during decode it becomes MQA", returns 1), while KDA's
    recurrent state is split over the ranks by heads (``layers/mamba/mamba_utils.py``, ``divide(num_heads,
    tp_world_size)``); a pipeline stage holds its layers' share of both. So one engine holds the GPU's KV headroom over
    one request's bytes on a rank, and a DEP group has ``data_parallel`` such engines of one GPU each (the independent
    review of the PD stacks, m1: the pooled figure overstated a TEP group ``tensor_parallel`` times)."""
    per_gpu = fit.kv_headroom_gb * GB / fit.gpus
    per_rank = (transfer.input_tokens * transfer.bytes_per_token + transfer.state_bytes / tensor_parallel) / \
        pipeline_parallel
    return max(0, int(per_gpu // per_rank)) * data_parallel


@dataclass(frozen=True)
class TopologySizing:
    """A topology's roles, the KV transfer between them, and its cost beside the aggregated plan of the same nodes."""

    mode: TopologyMode
    roles: tuple[RoleSizing, ...]
    transfer: KvTransfer | None
    """None for wide-EP (no transfer between roles)."""
    cost: Cost
    aggregated_nodes: int
    """Nodes of one aggregated replica on this hardware (the default sizing's)."""
    aggregated_fit: Fit
    """One aggregated replica's fit."""
    aggregated_tensor_parallel: int = 1
    """The aggregated replica's tensor-parallel degree (the per-rank KV share, ``concurrent_requests``)."""
    aggregated_pipeline_parallel: int = 1
    """The aggregated replica's pipeline stages."""

    @property
    def total_nodes(self) -> int:
        """GPU nodes of every group of every role."""
        return sum(r.total_nodes for r in self.roles)

    @property
    def aggregated_replicas(self) -> int:
        """Aggregated replicas the same nodes would hold."""
        return self.total_nodes // self.aggregated_nodes

    def as_dict(self, accelerator: Accelerator) -> dict[str, object]:
        """The plan's ``topology``: each role, the transfer, the cost and the aggregated comparison."""
        t = self.transfer
        agg = cost(accelerator, self.aggregated_replicas * self.aggregated_nodes)
        out: dict[str, object] = {
            "mode": str(self.mode), "roles": [r.as_dict() for r in self.roles], "totalNodes": self.total_nodes,
            "costHourlyLow": self.cost.hourly_low, "costHourlyHigh": self.cost.hourly_high,
            "aggregated": {"nodesPerReplica": self.aggregated_nodes, "replicas": self.aggregated_replicas,
                           "costHourlyLow": agg.hourly_low, "costHourlyHigh": agg.hourly_high,
                           "kvHeadroomGbPerReplica": round(self.aggregated_fit.kv_headroom_gb, 1)},
        }
        if t is not None:
            out["kvTransfer"] = t.as_dict()
            out["concurrentRequests"] = {
                r.name: concurrent_requests(r.fit, t, r.tensor_parallel, data_parallel=r.data_parallel) * r.groups
                for r in self.roles}
            out["aggregated"]["concurrentRequests"] = (  # type: ignore[index]
                concurrent_requests(self.aggregated_fit, t, self.aggregated_tensor_parallel,
                                    self.aggregated_pipeline_parallel) * self.aggregated_replicas)
        return out


def topology_cold_start(roles: tuple[RoleSizing, ...]) -> ColdStart:
    """The cold start of a topology: the shared phases, then each role's own fabric check, load and warm-up (a role's
    servers wait for its own check only: serving.roles); the critical path through the role that ends last, and the
    restart of the role that restarts slowest."""
    last = max(roles, key=lambda r: r.cold_start.total_seconds)
    slow = max(roles, key=lambda r: r.cold_start.restart_seconds).cold_start
    return replace(last.cold_start, restart_seconds=slow.restart_seconds, restart_from_node=slow.restart_from_node,
                   restart_warmup_seconds=slow.restart_warmup_seconds, load_limit=slow.load_limit,
                   load_catalog_bucket=slow.load_catalog_bucket,
                   roles=tuple(RolePhases(r.name, r.cold_start.fabric_check_seconds, r.cold_start.load_seconds)
                               for r in roles))


def slowest_node_start(roles: tuple[RoleSizing, ...]) -> NodeStart | None:
    """The restart and scale-out of the role that restarts slowest (the stack's figure beside its floor)."""
    return max(roles, key=lambda r: r.cold_start.restart_seconds).node_start


def topology_sizing(mode: TopologyMode, roles: tuple[RoleSizing, ...], accelerator: Accelerator,
                    transport: KvTransport | None, input_tokens: int, aggregated_fit: Fit,
                    aggregated_nodes: int, aggregated_parallel: tuple[int, int] = (1, 1)) -> TopologySizing:
    """The topology of ``roles`` on ``accelerator``: its KV transfer (disaggregated only) and cost."""
    nodes = sum(r.total_nodes for r in roles)
    transfer = (kv_transfer(accelerator, transport, input_tokens)
                if mode == TopologyMode.DISAGGREGATED and transport is not None else None)
    return TopologySizing(mode=mode, roles=roles, transfer=transfer, cost=cost(accelerator, nodes),
                          aggregated_nodes=aggregated_nodes, aggregated_fit=aggregated_fit,
                          aggregated_tensor_parallel=aggregated_parallel[0],
                          aggregated_pipeline_parallel=aggregated_parallel[1])


def group_carrier(accelerator: Accelerator, gpus: int) -> str:
    """What a group of ``gpus`` GPUs' collectives travel over: its NVLink domain, or the fabric between nodes."""
    if gpus <= accelerator.gpus_per_node:
        return "NVLink inside the node"
    if gpus <= accelerator.nvlink_domain_gpus:
        return "multi-node NVLink (one NVLink domain)"
    return fabric_facts(accelerator.fabric).source if accelerator.fabric.pods_lack_it else \
        f"the {accelerator.fabric.name} fabric between nodes"

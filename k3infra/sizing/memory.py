"""Does one replica fit, and on how many nodes: the memory arithmetic over the catalog's model and GPU."""

from dataclasses import dataclass

from ..catalog import GB, Accelerator, Model
from ..catalog.gpus import SEED_FIT_TABLE, GpuConfiguration
from .parallel import is_power_of_two, layout

DEFAULT_NODE_SEARCH_LIMIT = 64
"""Most nodes the minimum-node search tries for a SKU that sets no pool limit of its own."""


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
    if not accelerator.nvlink_spans_nodes or is_power_of_two(minimum * g):
        return fewest
    for nodes in range(minimum + 1, accelerator.nvlink_domain_gpus // g + 1):
        if is_power_of_two(gpus := nodes * g):
            return NodeChoice(nodes, minimum, gpus, (
                f"{nodes} x {accelerator.sku}, not the {minimum} that hold {model.display_name}: {minimum * g} GPUs "
                f"admit no power-of-two tensor parallelism across all of them (TP={held.tensor_parallel} x "
                f"PP={held.pipeline_parallel} at best), {gpus} run TP={gpus} over multi-node NVLink"))
    return fewest


def seed_fit_table(model: Model, memory_fraction: float) -> list[tuple[GpuConfiguration, Fit]]:
    """002 §2.2's configurations with the fit this module computes for each."""
    return [(c, fit(model, c.gpus, c.gpu_memory_gb, memory_fraction)) for c in SEED_FIT_TABLE]

"""``nvl72-pool-within-rack``: a pool of an NVL72-rack SKU (A4X Max, ND GB300 v6) holds at most one rack's
nodes (18), and on GKE is pinned to one reservation sub-block or a compact placement.
"""

from typing import Any, Iterator, Mapping, Sequence

from ..catalog import ACCELERATORS, Accelerator
from .base import Resource, as_int, as_list, get


def rack_skus() -> dict[str, Accelerator]:
    """SKUs whose pool is one NVLink rack (``max_nodes_per_pool`` set in the catalog)."""
    return {sku: a for sku, a in ACCELERATORS.items() if a.max_nodes_per_pool and a.nvlink_spans_nodes}


def _counts(props: Mapping[str, Any], *paths: str) -> list[tuple[str, int]]:
    return [(p, as_int(get(props, p), 0)) for p in paths if get(props, p) is not None]


def check_rack_size(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``nvl72-pool-within-rack``."""
    racks = rack_skus()
    for r in resources:
        pools: list[tuple[str, str | None, list[tuple[str, int]]]] = []
        if r.type == "gcp:container/nodePool:NodePool":
            sku = get(r.props, "nodeConfig.machineType")
            pools.append((f"GKE node pool {r.name}", sku, _counts(r.props, "nodeCount", "initialNodeCount",
                                                                   "autoscaling.maxNodeCount", "autoscaling.totalMaxNodeCount")))
            if sku in racks:
                path = " ".join(str(v) for v in as_list(get(r.props, "nodeConfig.reservationAffinity.values")))
                if "/reservationSubBlocks/" not in path and get(r.props, "placementPolicy.type") != "COMPACT":
                    yield (f"GKE node pool {r.name}: {sku} spans nodes over NVLink only inside one rack; pin it to "
                           "a reservation sub-block (…/reservationBlocks/B/reservationSubBlocks/S) or a COMPACT "
                           "placement policy"), r.urn
        elif r.type == "azure-native:containerservice:AgentPool":
            pools.append((f"AKS agent pool {r.name}", get(r.props, "vmSize"), _counts(r.props, "count", "maxCount")))
        elif r.type == "azure-native:containerservice:ManagedCluster":
            for p in as_list(get(r.props, "agentPoolProfiles")):
                pools.append((f"AKS cluster {r.name}, pool {get(p, 'name')}", get(p, "vmSize"), _counts(p, "count", "maxCount")))
        for label, sku, counts in pools:
            a = racks.get(sku or "")
            if a is None or a.max_nodes_per_pool is None:
                continue
            for path, n in counts:
                if n > a.max_nodes_per_pool:
                    yield (f"{label}: {path} {n} exceeds one {a.nvlink_domain_gpus}-GPU NVLink rack of {sku} "
                           f"({a.max_nodes_per_pool} nodes); use one pool per rack"), r.urn

"""The one-time copy of the weights from the Hub into the bucket: its rate, its time and its Job's budget."""

import math
from dataclasses import dataclass

from ..catalog import HF_SYNC_GBPS, PROBE_SAFETY_FACTOR, Cloud, Model
from ..catalog.transfer import (
    GRANT_PROPAGATION,
    HUB_STREAM,
    SYNC_POOL_NODE_UP_SECONDS,
    SYNC_STARTUP_SECONDS,
    SYNC_STREAMS_PER_WORKER,
    CpuNode,
)
from .bucket import ingress_term, seconds_for, sync_ingress

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
            ingress_term(bucket, stated): bucket,
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
    transfer = seconds_for(per_worker, low / workers)
    return SyncEstimate(
        total_bytes=total, workers=workers, nodes=nodes, node=node, bucket_gbps=ingress.low, gbps=round(low, 3),
        bytes_per_worker=per_worker,
        seconds=max(grants.seconds, node_up + SYNC_STARTUP_SECONDS) + transfer,
        optimistic_seconds=node_up + SYNC_STARTUP_SECONDS + seconds_for(math.ceil(total / workers), high / workers),
        sources=(HUB_STREAM.source, node.nic.source, ingress.source, grants.source),
        streams=streams, limit=limit, pool=pool, node_up_seconds=node_up, transfer_seconds=transfer,
        catalog_bucket_limit=ingress_gbps is None and limit == ingress_term(ingress.low, False),
    )


def sync_seconds(model: Model, with_draft_model: bool) -> int:
    """The one-time copy at HF_SYNC_GBPS: a figure for stacks that do not run the sync (a copy by hand)."""
    total = model.weight_bytes
    if with_draft_model and model.draft_model is not None:
        total += model.draft_model.weight_bytes
    return seconds_for(total, HF_SYNC_GBPS)

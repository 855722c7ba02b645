"""Stated assumptions behind the time and cost estimates. Each can be overridden per stack where noted."""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .types import Loader


@dataclass(frozen=True)
class LoaderProfile:
    """How fast one node moves weights from storage into GPU memory with a given loader."""

    loader: Loader
    gbps_per_node: float
    """Sustained throughput from the source, per node: the optimistic end (overridable:
    ``k3infra:weights.bandwidthGbps``)."""
    low_gbps_per_node: float
    """The pessimistic end of the range: probe and await budgets are computed at it."""
    full_checkpoint_per_node: bool
    """True where every node fetches the whole checkpoint (a download or copy to local disk); False where
    each node reads only the tensors its ranks hold (range reads through FUSE or the streamer)."""
    local_read_gbps: float | None
    """Second phase for loaders that land on local disk first: NVMe into GPU memory."""
    source: str


LOADER_PROFILES: Mapping[Loader, LoaderProfile] = MappingProxyType(
    {
        Loader.HUGGINGFACE: LoaderProfile(
            loader=Loader.HUGGINGFACE,
            low_gbps_per_node=1,
            gbps_per_node=10,
            full_checkpoint_per_node=True,
            local_read_gbps=64,
            source="ASSUMPTION: 1-10 Gbps effective from Hugging Face; 002 §2.1 spans 0.1 Gbps (30+ h) to 100 Gbps (minutes)",
        ),
        Loader.BUCKET_COPY: LoaderProfile(
            loader=Loader.BUCKET_COPY,
            low_gbps_per_node=20,
            gbps_per_node=40,
            full_checkpoint_per_node=True,
            local_read_gbps=64,
            source="ASSUMPTION: 20-40 Gbps parallel object-store copy to NVMe, then 8 GB/s NVMe reads",
        ),
        Loader.FUSE: LoaderProfile(
            loader=Loader.FUSE,
            low_gbps_per_node=10,
            gbps_per_node=20,
            full_checkpoint_per_node=False,
            local_read_gbps=None,
            source="ASSUMPTION: 10-20 Gbps through a FUSE CSI mount with parallel downloads (000 mount options)",
        ),
        Loader.STREAMER: LoaderProfile(
            loader=Loader.STREAMER,
            low_gbps_per_node=20,
            gbps_per_node=40,
            full_checkpoint_per_node=False,
            local_read_gbps=None,
            source="ASSUMPTION: 20-40 Gbps with RunAI streamer concurrency 16 (000 RUNAI_STREAMER_CONCURRENCY)",
        ),
        Loader.VOLUME: LoaderProfile(
            loader=Loader.VOLUME,
            low_gbps_per_node=10,
            gbps_per_node=50,
            full_checkpoint_per_node=False,
            local_read_gbps=None,
            source="ESTIMATE: 10 Gbps per node from a shared file system behind a PVC (NFS, CephFS) at the pessimistic "
                   "end; 50 Gbps from local NVMe or a parallel file system",
        ),
    }
)

HF_SYNC_GBPS = 1.0
"""ASSUMPTION: a copy by hand from Hugging Face into the bucket (stacks that do not run the sync Job, PAI-EAS):
one machine, one client, the pessimistic end of a download (002 §2.1). The sync Job's own estimate comes from
catalog.transfer."""

PROBE_SAFETY_FACTOR = 1.5
"""The start-up budget covers 1.5x the estimated load plus warm-up, so a slow load is never killed."""

CLUSTER_CREATE_MINUTES = 15
"""ASSUMPTION: a managed Kubernetes control plane with its system pool."""

GPU_POOL_CREATE_MINUTES = 25
"""ASSUMPTION: a reserved GPU pool from request to Ready nodes with drivers installed."""

HOURS_PER_MONTH = 730
"""002 §8 uses it: USD 59-142 per hour is USD 43,000-104,000 per month."""

GATEWAY_REQUEST_TIMEOUT_SECONDS = 3600
"""ESTIMATE: the longest one request may take through a managed gateway, from its first byte in to the last
byte of the (streamed) response; a cloud load balancer cuts the response there (GKE's default: 30 s). No seed
or vendor states how long a Kimi K3 request runs. llm-d sizes it at 300 s (llm-d-router v0.10.0
config/charts/llm-d-router-gateway/templates/gke.yaml, "adjust as needed"): at a pessimistic 20 tokens/s for one
stream (ESTIMATE) that is 6,000 tokens, short of one reasoning trace over a 1M-token context (002 §1). One hour
covers 72,000 tokens at that rate, and a prefill of the whole context."""

PIPELINE_INSTEAD_OF_MNNVL_THROUGHPUT = (0.7, 0.9)
"""ESTIMATE: aggregate throughput of tensor parallelism per node with pipeline parallelism across the nodes of one
NVLink domain (002 appendix item 2: TP=4 x PP=2 on two GB300 nodes), as a share of the same GPUs at TP=8 over
multi-node NVLink. No published benchmark compares the two for Kimi K3; the range reasons from the layouts: with
enough concurrent requests both pipeline stages stay busy, and what is lost is the pipeline bubbles, the imbalance
between the stages and the activations crossing the scale-out fabric between them."""

PIPELINE_INSTEAD_OF_MNNVL_TOKEN_LATENCY = 2.0
"""ESTIMATE: time per output token of that layout relative to TP=8 over multi-node NVLink, at most: every token
passes both stages in turn, each stage running its layers at half the tensor parallelism."""

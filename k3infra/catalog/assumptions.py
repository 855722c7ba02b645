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


GCS_FUSE_PARALLEL_DOWNLOADS_PER_FILE = 100
"""``file-cache:parallel-downloads-per-file`` of the GCS FUSE mount (AI-Hypercomputer/gpu-recipes 2e1fd5e
src/helm-charts/a4xmax/inference-templates/tensorrt-llm-deployment/templates/
multi-node-aggregated-tensorrt-llm-deployment.yaml, the A4X Max multi-node LeaderWorkerSet recipe: ``implicit-dirs,
file-cache:enable-parallel-downloads:true,file-cache:parallel-downloads-per-file:100,
file-cache:max-parallel-downloads:-1,file-cache:download-chunk-size-mb:50,file-cache:max-size-mb:-1``)."""
GCS_FUSE_DOWNLOAD_CHUNK_MB = 50
"""``file-cache:download-chunk-size-mb`` of that recipe: each parallel download fetches the file in 50 MiB ranges."""
GCS_FUSE_MAX_PARALLEL_DOWNLOADS = -1
"""``file-cache:max-parallel-downloads`` of that recipe: no cap across the files being read."""
GCS_FUSE_CACHE_SIZE_OPTION = "file-cache:max-size-mb"
"""The gcsfuse mount option that turns the file cache on (any value but 0; ``-1``: no limit): with it, a first read of a
file at offset 0 downloads the whole object into the cache (catalog.distribution)."""
GCS_FUSE_CACHE_SIZE_MB = -1
"""``file-cache:max-size-mb`` of that recipe: the cache may hold every object."""
GCS_FUSE_RANGE_READ_OPTION = "file-cache:cache-file-for-range-read"
"""The gcsfuse mount option (``:true`` or ``:false``) that decides whether a range read fills the file cache."""
GCS_FUSE_CACHE_FILE_FOR_RANGE_READ = True
"""``file-cache:cache-file-for-range-read`` of 000's mount (GoogleCloudPlatform/gcsfuse cfg/params.yaml: "Whether to
cache file for range reads", default false; true in its aiml-serving profile): a read that does not start at offset 0
still fills the file cache, which holds whole objects (cloud.google.com/storage/docs/cloud-storage-fuse/file-caching),
with the parallel downloads above; without it such reads bypass the cache, one ranged GET at a time. So a node
fetches every file any of its ranks touches, whole (catalog.distribution: k3infra gives the streamer's ranks whole
files there)."""
GCS_FUSE_FILES_IN_FLIGHT = 1
"""ESTIMATE, the pessimistic end: the ranks of one node read the checkpoint's shards in the same order, one at a time,
and the file cache downloads each shard once for all of them, so one file per node is being downloaded."""
GCS_RANGED_GET_GBPS = (0.1, 0.4)
"""ESTIMATE: what one ranged GET of a 50 MiB chunk from a bucket in the cluster's region sustains (pessimistic,
optimistic); no Google page states a per-request rate."""
GCS_FUSE_GBPS = tuple(int(v) if v == int(v) else v for v in (
    round(GCS_FUSE_FILES_IN_FLIGHT * GCS_FUSE_PARALLEL_DOWNLOADS_PER_FILE * g, 3) for g in GCS_RANGED_GET_GBPS))
"""Per node through the GCS FUSE file cache: files in flight x parallel downloads per file x one GET's rate."""

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
            low_gbps_per_node=GCS_FUSE_GBPS[0],
            gbps_per_node=GCS_FUSE_GBPS[1],
            full_checkpoint_per_node=False,
            local_read_gbps=None,
            source=(f"ESTIMATE from the GCS FUSE mount's settings (gpu-recipes a4xmax): {GCS_FUSE_FILES_IN_FLIGHT} file "
                    f"in flight x {GCS_FUSE_PARALLEL_DOWNLOADS_PER_FILE} parallel downloads of "
                    f"{GCS_FUSE_DOWNLOAD_CHUNK_MB} MiB x {GCS_RANGED_GET_GBPS[0]}-{GCS_RANGED_GET_GBPS[1]} Gbps per "
                    f"ranged GET = {GCS_FUSE_GBPS[0]:g}-{GCS_FUSE_GBPS[1]:g} Gbps per node; the other clouds' FUSE "
                    "drivers (Mountpoint for S3, BlobFuse2, ossfs) are held to the same figure (ASSUMPTION)"),
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

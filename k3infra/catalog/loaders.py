"""How each cloud's loader reads the weight bucket, and the figures its load rate follows from.

A node's load rate is the least of three terms (sizing.load_estimate):

- its front-end NIC (``Accelerator.frontend_gbps``: the network the bucket is read over, not the RDMA fabric);
- its share of what the storage service serves (STORAGE_EGRESS: one bucket or account, read by every node at once);
- what the loader keeps in flight: files being read at once x requests per file x one request's rate, or the
  client's own throughput setting where it sizes its requests to one (Mountpoint's ``maximum-throughput-gbps``).

Files in flight follow the engine's load format: vLLM's fastsafetensors loader hands each rank a file of its own
(vllm 0.33.0 model_executor/model_loader/weight_utils.py ``fastsafetensors_weights_iterator``: the files in
groups of the world size, one per rank), and the RunAI streamer runs one reader per rank (vLLM's ``distributed``
extra config, SGLang's loader per TP rank); so a node reads as many files at once as it has GPUs. What a node reads
in all is catalog.distribution's (the load format's split between the nodes). Each figure is a (pessimistic,
optimistic) range with its source or marked ESTIMATE; budgets use the pessimistic end.
"""

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .assumptions import (GCS_FUSE_CACHE_FILE_FOR_RANGE_READ, GCS_FUSE_CACHE_SIZE_MB, GCS_FUSE_PARALLEL_DOWNLOADS_PER_FILE,
                          GCS_RANGED_GET_GBPS)
from .transfer import AZURE_FULL_INGRESS_REGIONS, BUCKET_INGRESS, Gbps, alicloud_mainland
from .types import Cloud, Loader

S3_GET = Gbps(0.68, 0.72, "docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance-design-patterns.html "
              "(horizontal scaling and request parallelization): one concurrent request for each 85-90 MB/s of "
              "desired network throughput")
"""One ranged GET from S3 in the instance's region."""

OBJECT_GET: Mapping[Cloud, Gbps] = MappingProxyType({
    Cloud.AWS: S3_GET,
    Cloud.GCP: Gbps(GCS_RANGED_GET_GBPS[0], GCS_RANGED_GET_GBPS[1],
                    "ESTIMATE (catalog.assumptions GCS_RANGED_GET_GBPS): one ranged GET of a 50 MiB chunk from a bucket "
                    "in the cluster's region; no Google page states a per-request rate"),
    Cloud.AZURE: Gbps(S3_GET.low, S3_GET.high, f"ESTIMATE: S3's per-request figure ({S3_GET.source}); no Azure page "
                      "states a per-request rate"),
    Cloud.ALICLOUD: Gbps(S3_GET.low, S3_GET.high, f"ESTIMATE: S3's per-request figure ({S3_GET.source}); no OSS page "
                         "states a per-request rate"),
    Cloud.KUBERNETES: Gbps(S3_GET.low, S3_GET.high, f"ESTIMATE: S3's per-request figure ({S3_GET.source}) for an "
                           "S3-compatible store"),
})
"""What one range request in flight reads, per cloud."""

STORAGE_EGRESS: Mapping[Cloud, Gbps] = MappingProxyType({
    Cloud.AWS: Gbps(400, 1000, "ESTIMATE: S3 states no bucket bandwidth limit; 5,500 GET/s per prefix "
                    "(docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html) is ~370 Gbps at "
                    "8 MiB parts, per prefix"),
    Cloud.GCP: Gbps(200, 400, "ESTIMATE: a regional bucket has no bandwidth quota; 200 Gbps is the default quota of a "
                    "dual-region's egress to Google services in its region (cloud.google.com/storage/quotas)"),
    Cloud.AZURE: Gbps(50, 120, "UNCONFIRMED: learn.microsoft.com/azure/storage/common/scalability-targets-standard-account: "
                      "max egress per storage account 120 Gbps (US, Europe), 50 Gbps (other regions)"),
    Cloud.ALICLOUD: BUCKET_INGRESS[Cloud.ALICLOUD],  # OSS's one sentence states the account's both directions
    Cloud.KUBERNETES: Gbps(10, 100, "ESTIMATE: a self-hosted S3-compatible store (MinIO, Ceph RGW) serves what its "
                           "servers' NICs carry: one 10 GbE gateway at the pessimistic end, a 100 GbE cluster at the "
                           "optimistic one"),
})
"""What one bucket (Azure: storage account; OSS: account and region) serves to all readers together."""


def storage_egress(cloud: Cloud, region: str | None) -> Gbps:
    """STORAGE_EGRESS in ``region``: Azure's US and Europe figure and OSS's Chinese mainland figure where they apply."""
    egress = STORAGE_EGRESS[cloud]
    if (cloud == Cloud.AZURE and region in AZURE_FULL_INGRESS_REGIONS) or (
            cloud == Cloud.ALICLOUD and alicloud_mainland(region)):
        return Gbps(egress.high, egress.high, f"{egress.source}; the figure of {region}")
    return egress


@dataclass(frozen=True)
class ReadPath:
    """How one cloud's loader reads the bucket."""

    cloud: Cloud
    loader: Loader
    client: str
    """What reads: the CSI driver's FUSE client or the engine's streamer."""
    requests_per_file: int
    """Range requests one file being read keeps in flight."""
    sized_to_nic: bool = False
    """The client takes a throughput target and sizes its requests to it; the cloud package sets it to the node's
    front-end NIC (Accelerator.frontend_gbps), so the NIC is the client's term."""
    whole_objects: bool = False
    """The client downloads every object it reads from whole (gcsfuse's file cache on a first read at offset 0,
    and on any read with cache-file-for-range-read): a node then fetches each file any of its ranks touches
    (catalog.distribution.node_share)."""
    source: str = ""


MOUNTPOINT_THREADS = 64
"""``max-threads`` of the Mountpoint mount: FUSE daemon threads, 16 by default (mount-s3 --help, "Client options"),
four times the node's ranks reading a file each (ESTIMATE: enough that no rank waits on a thread)."""

MOUNTPOINT_PARTS_PER_FILE = 16
"""ESTIMATE, the pessimistic end: 8 MiB GET parts (mount-s3 --read-part-size default) one sequentially read file keeps
in flight once Mountpoint's prefetcher has grown its window (a 128 MiB window; the prefetcher grows it further)."""

READ_PATHS: Mapping[tuple[Cloud, Loader], ReadPath] = MappingProxyType({(r.cloud, r.loader): r for r in (
    ReadPath(Cloud.GCP, Loader.FUSE, "gcsfuse (GKE Cloud Storage FUSE CSI driver)", GCS_FUSE_PARALLEL_DOWNLOADS_PER_FILE,
             whole_objects=GCS_FUSE_CACHE_SIZE_MB != 0,
             source="gcp.bucket.FUSE_MOUNT_OPTIONS: file-cache:parallel-downloads-per-file:100 of 50 MiB "
                    "(AI-Hypercomputer/gpu-recipes a4xmax, catalog.assumptions), file-cache:cache-file-for-range-read:"
                    "true (catalog.assumptions GCS_FUSE_CACHE_FILE_FOR_RANGE_READ: whole objects)"),
    ReadPath(Cloud.AWS, Loader.FUSE, "Mountpoint for Amazon S3 (aws-mountpoint-s3-csi-driver)",
             MOUNTPOINT_PARTS_PER_FILE, sized_to_nic=True,
             source="mount-s3 --help: --maximum-throughput-gbps \"[default: auto-detected on EC2 instances, 10 Gbps "
                    "elsewhere]\": the mount states the node's NIC (Accelerator.frontend_gbps) rather than leave it "
                    "to a table that may not know the instance; --max-threads 16 by default, raised to "
                    "MOUNTPOINT_THREADS; MOUNTPOINT_PARTS_PER_FILE parts in flight per file (ESTIMATE)"),
    ReadPath(Cloud.ALICLOUD, Loader.FUSE, "ossfs 2.0 (ACK csi-plugin)", 1,
             source="ESTIMATE: one request per file at the pessimistic end (the ACK ossfs 2.0 page states no "
                    "read parallelism); OSS's account bandwidth binds long before it"),
    ReadPath(Cloud.AZURE, Loader.FUSE, "blobfuse2 (Azure Blob CSI driver, block cache)", 1,
             source="ESTIMATE: one request per file at the pessimistic end (the block cache's prefetch is not set)"),
)})
"""The FUSE clients by cloud. The RunAI streamer's path is the same everywhere (``streamer_concurrency``)."""

STREAMER_MIN_CONCURRENCY = 16
"""000's ``RUNAI_STREAMER_CONCURRENCY``: the floor of what k3infra sets."""
STREAMER_MAX_CONCURRENCY = 64
"""ESTIMATE: the most reader threads per rank k3infra sets (192 vCPUs shared by 8 ranks leave 24 each)."""
STREAMER_MEMORY_LIMIT_CAP = 34_359_738_368
"""000's ``RUNAI_STREAMER_MEMORY_LIMIT``, 32 GiB: the most k3infra gives one rank."""
STREAMER_HOST_MEMORY_SHARE = 1 / 8
"""ESTIMATE: the share of the node's memory the streamers' buffers may take together (the engine's own process,
pinned buffers and /dev/shm need the rest)."""
STREAMER_MEMORY_LIMIT_SOURCE = (
    "runai-model-streamer 0.17.1 distributed_streamer/distributed_streamer.py _distributedStreamer.rank_memory_limit: "
    "\"RUNAI_STREAMER_MEMORY_LIMIT, which is a NODE total\", each distributed rank taking it over the ranks on its "
    "node (at least the largest tensor). 0.15.7 read it per rank (requests_iterator.py): an image with a 0.15 streamer "
    "would give each rank the node's total")
"""Where the memory limit's meaning comes from (catalog.distribution.STREAMER_RELEASE)."""


def files_in_flight(gpus_per_node: int) -> int:
    """Files one node reads at once: one per rank (module docstring)."""
    return max(1, gpus_per_node)


def streamer_concurrency(target_gbps: float, gpus_per_node: int, request: Gbps) -> int:
    """Reader threads per rank that fill ``target_gbps`` at the pessimistic per-request rate, between 000's 16 and
    STREAMER_MAX_CONCURRENCY."""
    wanted = math.ceil(target_gbps / (files_in_flight(gpus_per_node) * request.low))
    return max(STREAMER_MIN_CONCURRENCY, min(STREAMER_MAX_CONCURRENCY, wanted))


def streamer_memory_limit(host_memory_gib: int, gpus_per_node: int) -> int:
    """``RUNAI_STREAMER_MEMORY_LIMIT`` in bytes: the CPU buffer of all the node's ranks together (a node total,
    STREAMER_MEMORY_LIMIT_SOURCE), STREAMER_HOST_MEMORY_SHARE of the node's memory, at most 000's 32 GiB per rank, in
    whole GiB per rank."""
    ranks = files_in_flight(gpus_per_node)
    per_rank = min(STREAMER_MEMORY_LIMIT_CAP // 2**30, int(host_memory_gib * STREAMER_HOST_MEMORY_SHARE // ranks))
    return max(1, per_rank) * ranks * 2**30


__all__ = ["MOUNTPOINT_THREADS", "OBJECT_GET", "READ_PATHS", "ReadPath", "S3_GET", "STORAGE_EGRESS",
           "STREAMER_MEMORY_LIMIT_SOURCE", "files_in_flight", "storage_egress", "streamer_concurrency",
           "streamer_memory_limit"]

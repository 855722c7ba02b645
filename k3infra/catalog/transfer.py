"""Figures behind the weight sync's time: the Hub, the CPU nodes that run the copy, the buckets.

The sync streams each file from the Hub into the bucket through memory (k3infra.weightcopy.copier: parts of 64 MiB,
a bounded queue, no disk), so its rate is the least of what the Hub gives the streams in flight, what the
CPU nodes' NICs carry (in and out at once: NICs are full duplex) and what the bucket takes in. Each figure is a
(pessimistic, optimistic) range with its source or marked ESTIMATE; every budget uses the pessimistic end.
"""

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .types import Cloud


@dataclass(frozen=True)
class Gbps:
    """A throughput range in Gbit/s: ``low`` is the pessimistic end budgets use."""

    low: float
    high: float
    source: str


@dataclass(frozen=True)
class CpuNode:
    """A CPU machine type that runs the sync workers."""

    sku: str
    cloud: Cloud
    vcpus: int
    memory_gib: int
    nic: Gbps
    """Network bandwidth of one node: ``low`` is the sustained baseline, ``high`` the burst ceiling."""


HUB_STREAM = Gbps(
    low=0.8, high=4.0,
    source="ESTIMATE: one hf_xet ordered download stream (parallel chunk fetches from Xet's CDN) or one HTTP stream "
           "from the Hub's CDN; each of a worker's files in flight is one stream, and the sizing gives a worker as "
           "many as its node's NIC over this rate (at least SYNC_STREAMS_PER_WORKER)")
"""What one file stream from the Hugging Face Hub sustains."""

NODE_COPY_PROCESS = Gbps(
    low=8.0, high=24.0,
    source="ESTIMATE: one copier process (the node agent's node copy, HyperPod's node-fill): its files in flight are "
           "threads over s3fs/gcsfs/adlfs, whose synchronous calls all run on fsspec's one event-loop thread "
           "(fsspec/asyn.py: a single \"fsspecIO\" thread), which decrypts every byte of TLS; each byte is also "
           "hashed (sha256: 1.8 GB/s on one SHA-NI core, measured here) and copied through Python buffers: 1 GB/s at "
           "the pessimistic end (independent review of issue 40, MAJOR 1)")
"""What one copier process moves from the bucket onto a node's disk, whatever its files in flight."""

SYNC_STREAMS_PER_WORKER = 4
"""Files in flight per worker (``copier sync --streams``; the copier's default)."""

SYNC_STARTUP_SECONDS = 180
"""ESTIMATE: pulling the python image, installing the copier's pinned wheels (about 100 MB) and listing the
revision, before the first byte moves."""

EXISTING_CPU_NODE = "cluster-cpu-node"
"""The name the catalog gives an existing cluster's CPU nodes (``cloud: kubernetes``), which it knows nothing of."""

CPU_NODES: Mapping[str, CpuNode] = MappingProxyType({n.sku: n for n in (
    CpuNode("m7i.2xlarge", Cloud.AWS, 8, 32, Gbps(
        3.125, 12.5, "docs.aws.amazon.com/ec2/latest/instancetypes/gp.html: m7i.2xlarge baseline 3.125 Gbps, burst "
        "up to 12.5 Gbps")),
    CpuNode("e2-standard-8", Cloud.GCP, 8, 32, Gbps(
        16, 16, "cloud.google.com/compute/docs/network-bandwidth: e2-standard-8 maximum egress 16 Gbps (per-VM "
        "egress cap; ingress is not capped per VM)")),
    CpuNode("Standard_D8s_v5", Cloud.AZURE, 8, 32, Gbps(
        12.5, 12.5, "learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dv5-series: Standard_D8s_v5 "
        "12,500 Mbps expected network bandwidth")),
    CpuNode("ecs.g7.2xlarge", Cloud.ALICLOUD, 8, 32, Gbps(
        3.0, 10.0, "alibabacloud.com/help/en/ecs/user-guide/general-purpose-instance-families (g7): ecs.g7.2xlarge "
        "baseline 3 Gbit/s, burst up to 10 Gbit/s")),
    CpuNode(EXISTING_CPU_NODE, Cloud.KUBERNETES, 8, 32, Gbps(
        10.0, 25.0, "ESTIMATE: an existing cluster's CPU nodes are unknown; a 10 GbE server NIC at the pessimistic "
        "end, 25 GbE at the optimistic one. The sync workers request 8 CPUs and 32 GiB at most")),
)})
"""The CPU system node types the clouds' clusters default to (k3infra.<cloud>.cluster), by SKU."""

BUCKET_INGRESS: Mapping[Cloud, Gbps] = MappingProxyType({
    Cloud.AWS: Gbps(100, 400, "ESTIMATE: S3 has no per-bucket bandwidth limit; 3,500 PUT/s per prefix "
                    "(docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html) is ~1,800 Gbps "
                    "at 64 MiB parts"),
    Cloud.GCP: Gbps(100, 200, "ESTIMATE: a regional bucket has no bandwidth quota; 200 Gbps is the default "
                    "dual-region quota (cloud.google.com/storage/quotas)"),
    Cloud.AZURE: Gbps(25, 60, "learn.microsoft.com/azure/storage/common/scalability-targets-standard-account: "
                      "max ingress per storage account 60 Gbps (US, Europe), 25 Gbps (other regions); \"You can "
                      "request higher capacity and ingress limits\" (Azure Support)"),
    Cloud.ALICLOUD: Gbps(5, 10, "alibabacloud.com/help/en/object-storage-service/latest/usage-notes: \"The inbound "
                         "and outbound bandwidths for a single Alibaba Cloud account are both 10 Gbit/s in regions "
                         "inside the Chinese mainland and 5 Gbit/s in regions outside\"; technical support raises "
                         "it (10 to 100 Gbit/s)"),
    Cloud.KUBERNETES: Gbps(10, 100, "ESTIMATE: a self-hosted S3-compatible store (MinIO, Ceph RGW) takes what its "
                       "servers' NICs take: one 10 GbE gateway at the pessimistic end, a 100 GbE cluster at the "
                       "optimistic one"),
})
"""What one bucket (storage account on Azure) takes in."""

DEFAULT_CPU_NODE: Mapping[Cloud, str] = MappingProxyType({
    Cloud.AWS: "m7i.2xlarge", Cloud.GCP: "e2-standard-8", Cloud.AZURE: "Standard_D8s_v5",
    Cloud.ALICLOUD: "ecs.g7.2xlarge", Cloud.KUBERNETES: EXISTING_CPU_NODE})
"""The system node type each cloud's cluster uses when ``cluster.systemNodeType`` is unset."""


@dataclass(frozen=True)
class GrantPropagation:
    """How long a new grant to a workload identity may take before the bucket honours it."""

    seconds: int
    source: str


GRANT_PROPAGATION: Mapping[Cloud, GrantPropagation] = MappingProxyType({
    Cloud.AZURE: GrantPropagation(600, "learn.microsoft.com/azure/aks/workload-identity-deploy-cluster: \"Azure role "
                                  "assignments can take up to 10 minutes to propagate\"; a new federated identity "
                                  "credential \"might fail until the cache is refreshed\""),
    Cloud.GCP: GrantPropagation(420, "cloud.google.com/iam/docs/access-change-propagation: a policy change takes "
                                "\"typically 2 minutes, potentially 7 minutes or longer\""),
    Cloud.AWS: GrantPropagation(300, "ESTIMATE: IAM is eventually consistent with no stated bound (AWS: \"In the "
                                "majority of cases, this delay will be no more than a few minutes\", SES "
                                "troubleshoot-general; EKS CreatePodIdentityAssociation: associations \"may take several "
                                "seconds to be effective\"); terraform-provider-aws waits 2 minutes for IAM "
                                "(internal/service/iam propagationTimeout)"),
    Cloud.ALICLOUD: GrantPropagation(300, "ESTIMATE: RAM states no propagation time for a new role, policy attachment "
                                     "or RRSA trust; the same bound as AWS"),
    Cloud.KUBERNETES: GrantPropagation(60, "ESTIMATE: an existing cluster's store is read with static access keys from "
                                       "a Kubernetes Secret, which no identity system has to propagate; a minute covers "
                                       "a key the store's admin created moments before"),
})
"""Per cloud: the window in which the weight copier retries a refused authorization at start (``--auth-window``),
and what the sync's pessimistic estimate adds for it. Beyond it the pod fails and the Job's retry waits again."""


@dataclass(frozen=True)
class SyncPool:
    """A node pool of network-optimized CPU machines the cloud's deployment creates for the sync alone: it holds no
    node until the sync Job's pods ask for one, and the cloud's cluster autoscaler removes its nodes once the Job's
    pods are gone (the Job ends when the completion marker is written)."""

    node: CpuNode
    nodes: int
    """Most nodes the pool may grow to (one sync worker per node)."""
    scale_to_zero: str
    """The cloud's page stating that its autoscaler takes a pool of this kind to zero nodes and back."""
    tier_1: bool = False
    """GKE: the pool asks for Tier_1 per-VM egress (``network_performance_config``), which ``node.nic.high`` states."""
    autoscaler: str = ""
    """What scales the pool, where the cluster has no autoscaler of its own: ``""`` where it does (GKE, AKS)."""


SYNC_POOL_NODE_UP_SECONDS = 300
"""ESTIMATE: from the sync Job's pending pods to a Ready node of an empty autoscaled pool (the autoscaler's scan,
the VM's boot and its join). It runs while the grants propagate, so the two overlap (sizing.sync_estimate)."""

SYNC_POOL_LABEL = "k3infra.dev/pool"
"""Label of the sync pool's nodes (value ``sync``); the sync Job selects it."""
SYNC_POOL_TAINT_KEY = "k3infra.dev/sync"
"""Taint of the sync pool's nodes (``NoSchedule``): nothing but the sync Job, which tolerates it, lands there."""

SYNC_POOLS: Mapping[Cloud, SyncPool] = MappingProxyType({
    Cloud.GCP: SyncPool(
        CpuNode("c3-highcpu-44", Cloud.GCP, 44, 88, Gbps(
            32, 50, "UNCONFIRMED: cloud.google.com/compute/docs/general-purpose-machines#c3_series: c3-highcpu-44 "
            "default egress 32 Gbps, 50 Gbps with Tier_1 networking (cloud.google.com/compute/docs/networking/"
            "configure-vm-with-high-bandwidth-configuration); the pessimistic end is the default, should Tier_1 "
            "not apply")),
        nodes=2, tier_1=True,
        scale_to_zero="cloud.google.com/kubernetes-engine/docs/concepts/cluster-autoscaler: \"If you specify a "
                      "minimum of zero nodes, an idle node pool can scale down completely\""),
    Cloud.AZURE: SyncPool(
        CpuNode("Standard_D48s_v5", Cloud.AZURE, 48, 192, Gbps(
            24, 24, "learn.microsoft.com/azure/virtual-machines/dv5-dsv5-series (MicrosoftDocs/azure-docs "
            "articles/virtual-machines/dv5-dsv5-series.md): Standard_D48s_v5 24,000 Mbps max network bandwidth, "
            "accelerated networking required and on")),
        nodes=2,
        scale_to_zero="learn.microsoft.com/azure/aks/cluster-autoscaler: a user node pool's --min-count may be 0 "
                      "(\"scale a user node pool to 0\", learn.microsoft.com/azure/aks/scale-cluster)"),
    Cloud.AWS: SyncPool(
        CpuNode("c6in.8xlarge", Cloud.AWS, 32, 64, Gbps(
            25, 50, "docs.aws.amazon.com/ec2/latest/instancetypes/co.html (network specifications): c6in.8xlarge 50 "
            "Gbps, the C6in family's network-optimized size with 32 vCPUs (UNCONFIRMED: the row as recalled, not read "
            "here); docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-network-bandwidth: multi-flow traffic "
            "through an internet gateway is held to 50% of the bandwidth for instances of 32 vCPUs or more (5 Gbps "
            "below 32), so the Hub's side gets 25 Gbps at the pessimistic end; the bucket's side (S3 through the "
            "VPC) the whole 50")),
        nodes=2, autoscaler="cluster-autoscaler",
        scale_to_zero="github.com/kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md: scaling a "
                      "node group from 0 reads its labels and taints from the managed node group "
                      "(eks:DescribeNodegroup) or the ASG's k8s.io/cluster-autoscaler/node-template tags; "
                      "docs.aws.amazon.com/eks/latest/userguide/autoscaling.html: the Cluster Autoscaler adjusts a "
                      "managed node group's Auto Scaling group"),
})
"""Per cloud whose Kubernetes deployment builds it (GKE, AKS, EKS, HyperPod's EKS cluster included:
types.SYNC_POOL_PLATFORMS): the sync's own pool. EKS has no cluster autoscaler of its own: the pool's deployment
installs one that manages this pool's Auto Scaling group alone. Elsewhere the sync runs on the system nodes: on ACK
the bucket's ingress (OSS: 5 Gbit/s per account outside the Chinese mainland, BUCKET_INGRESS) is below what the
system nodes already carry, so a pool of faster NICs would copy no faster (where support raised the account's limit
and ``weights.bucketIngressGbps`` says so, the system nodes' NICs limit the sync, and a larger
``cluster.systemNodeType`` lifts them); PAI-EAS has no cluster; an existing cluster, ``cloud: kubernetes``, has
its nodes and no pool to create."""

SYNC_STREAM_MEMORY_MIB = 4 * 64
"""One stream's parts in memory: 2 queued and 2 in hand, 64 MiB each (k3infra.serving.weight_sync)."""

MAX_SYNC_STREAMS_PER_WORKER = 48
"""Most files one worker keeps in flight: above it the copier's threads, hashing and TLS outgrow what a 2.5 GB/s
worker needs (ESTIMATE)."""


def streams_for(node: CpuNode) -> int:
    """Files in flight per worker that fill ``node``'s NIC at the Hub's pessimistic per-stream rate, at least the
    copier's default and at most MAX_SYNC_STREAMS_PER_WORKER."""
    return max(SYNC_STREAMS_PER_WORKER, min(MAX_SYNC_STREAMS_PER_WORKER, math.ceil(node.nic.low / HUB_STREAM.low)))


AZURE_FULL_INGRESS_REGIONS = frozenset({
    "eastus", "eastus2", "centralus", "northcentralus", "southcentralus", "westcentralus", "westus", "westus2",
    "westus3", "northeurope", "westeurope", "francecentral", "germanywestcentral", "italynorth", "norwayeast",
    "polandcentral", "spaincentral", "swedencentral", "switzerlandnorth", "uksouth", "ukwest"})
"""Azure regions in the US and Europe, where a storage account takes 60 Gbps in, not 25 (BUCKET_INGRESS's page)."""


def alicloud_mainland(region: str | None) -> bool:
    """True for an Alibaba Cloud region in the Chinese mainland (``cn-*``, not Hong Kong), where OSS gives an account
    10 Gbit/s, not 5 (BUCKET_INGRESS's page)."""
    return bool(region) and str(region).startswith("cn-") and region != "cn-hongkong"


def bucket_ingress(cloud: Cloud, region: str | None) -> Gbps:
    """What one bucket in ``region`` takes in: BUCKET_INGRESS, with Azure's US and Europe figure and OSS's Chinese
    mainland figure where they apply."""
    ingress = BUCKET_INGRESS[cloud]
    if cloud == Cloud.AZURE and region in AZURE_FULL_INGRESS_REGIONS:
        return Gbps(ingress.high, ingress.high, f"{ingress.source}; {region} is in the US or Europe")
    if cloud == Cloud.ALICLOUD and alicloud_mainland(region):
        return Gbps(ingress.high, ingress.high, f"{ingress.source}; {region} is in the Chinese mainland")
    return ingress


@dataclass(frozen=True)
class CopyAnchor:
    """A measured copy of the model from the Hub into a bucket, to hold the estimate against."""

    nbytes: int
    seconds: int
    source: str


AI_ON_EKS_COPY = CopyAnchor(
    1_420_000_000_000, 906,
    "UNCONFIRMED: awslabs/ai-on-eks's Kimi K3 copy Job moves 1.42 TB to S3 in 906 s (about 1.6 GB/s), as issue 26 "
    "states it; the sync target is this time for the whole 1.56 TB")
"""The anchor of the sync's target (benchmarks/cold_start.py)."""

"""Figures behind the weight sync's time: the Hub, the CPU nodes that run the copy, the buckets.

The sync streams each file from the Hub into the bucket through memory (k3infra.weightcopy.copier: parts of 64 MiB,
a bounded queue, no disk), so its rate is the least of what the Hub gives the streams in flight, what the
CPU nodes' NICs carry (in and out at once: NICs are full duplex) and what the bucket takes in. Each figure is a
(pessimistic, optimistic) range with its source or marked ESTIMATE; every budget uses the pessimistic end.
"""

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
           "from the Hub's CDN; the copier keeps 4 files in flight per worker (weightcopy.copier.sync.DEFAULT_STREAMS)")
"""What one file stream from the Hugging Face Hub sustains."""

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
                      "max ingress per storage account 60 Gbps (US, Europe), 25 Gbps (other regions)"),
    Cloud.ALICLOUD: Gbps(5, 10, "UNCONFIRMED: alibabacloud.com/help/en/oss/product-overview/limits, upload and "
                         "download bandwidth per account and region, 10 Gbit/s in mainland China, 5 Gbit/s elsewhere"),
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

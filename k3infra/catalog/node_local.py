"""What a GPU node keeps on its own disks across pods: where each platform puts the node's local NVMe (the host
directory a pod reaches it at), how fast a node reads it back, how long an engine's graph capture takes, and, where
a platform keeps nothing on the node, why.

The sizing reads these for a restart's and a scale-out's figures and their physical floor (sizing.restart); serving
reads the directories (``NODE_DIRECTORIES``) for the server pods' node copy of the weights and the engine's caches, and
aws.hyperpod_weights HyperPod's for the endpoint's init container.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .hyperpod import NVME_PAGE, NVME_ROOT
from .types import EngineName, Platform


@dataclass(frozen=True)
class LocalRead:
    """How fast one node reads a file it keeps on its local NVMe back into host memory (the pessimistic end)."""

    gbps: float
    """Sequential read of the node's local NVMe array in Gbit/s."""
    source: str


@dataclass(frozen=True)
class NodeDirectory:
    """Where a platform's GPU nodes keep files on their local NVMe across pods, or why they keep none."""

    path: str | None
    """A host directory on the node's local NVMe (a hostPath); None where the platform gives the pods none."""
    source: str
    """How the platform sets the NVMe up (the document or the k3infra setting that does it)."""
    why_none: str = ""
    """Where ``path`` is None: the fact that keeps the weights off the node."""


LOCAL_READ: Mapping[str, LocalRead] = MappingProxyType({
    # EC2 instance store: 8 x 3,800 GB NVMe (catalog.accelerators), striped by nodeadm's RAID0 (aws/nodegroup.py).
    **{sku: LocalRead(96.0, "ESTIMATE: 8 x 3,800 GB instance-store NVMe in one RAID0 array (nodeadm localStorage "
                            "strategy RAID0); EC2 publishes IOPS, not throughput, for P-family instance store: "
                            "1.5 GB/s sequential read per drive at the pessimistic end (a PCIe Gen4 data-centre NVMe "
                            "reads 5-7 GB/s), x 8 = 12 GB/s = 96 Gbps")
       for sku in ("p6-b300.48xlarge", "p5en.48xlarge")},
    "ml.p6-b300.48xlarge": LocalRead(96.0, f"ESTIMATE: the same 8 x 3,800 GB instance-store NVMe at 1.5 GB/s each (the "
                                           f"pessimistic end, as p6-b300.48xlarge), mounted at {NVME_ROOT} "
                                           f"({NVME_PAGE}); that HyperPod stripes all eight into that one mount is "
                                           "UNCONFIRMED (the page names the mount, not its layout): on one drive the "
                                           "read is 12 Gbps"),
    "Standard_ND128isr_GB300_v6": LocalRead(64.0, "ESTIMATE: 4 local NVMe, 16 TB (002 §4.1), striped: 2 GB/s "
                                                  "sequential read per drive at the pessimistic end, x 4 = 8 GB/s "
                                                  "= 64 Gbps (Azure states no throughput for the ND GB300 v6 "
                                                  "local NVMe; Azure Container Storage's local NVMe page names "
                                                  "Lsv3's, about 2,000 MB/s per 1.92 TB drive, and stripes all of "
                                                  "a VM's drives: use-container-storage-with-local-disk)"),
    **{sku: LocalRead(64.0, "ESTIMATE: 4 x 3,000 GiB Titanium SSD (catalog.gke bundled_local_ssds) in GKE's "
                            "ephemeral-storage RAID-0: 2 GB/s sequential read per disk at the pessimistic end, x 4 = "
                            "8 GB/s = 64 Gbps (Compute Engine's Local SSD performance table states higher limits "
                            "per Titanium SSD; not read here: UNCONFIRMED)")
       for sku in ("a4x-maxgpu-4g-metal", "a4x-highgpu-4g")},
    **{sku: LocalRead(96.0, "ESTIMATE: 32 x 375 GiB Local SSD (catalog.gke bundled_local_ssds) in GKE's "
                            "ephemeral-storage RAID-0: about 375 MiB/s sequential read per disk, x 32 = 12 GB/s = 96 "
                            "Gbps (Compute Engine's Local SSD performance grows with the disks attached; the per-disk "
                            "figure is not read here: UNCONFIRMED)")
       for sku in ("a4-highgpu-8g", "a3-ultragpu-8g")},
    # Existing clusters' nodes: the owner states the directory (kubernetes.nodeLocalPath); the rate is DGX's.
    **{sku: LocalRead(64.0, "ESTIMATE: an owned HGX/DGX node's data NVMe (DGX B300/B200/H200 user guides: a RAID-0 "
                            "of U.2/E1.S NVMe drives for data and cache at /raid); 8 GB/s = 64 Gbps at the "
                            "pessimistic end, the stated directory may be slower")
       for sku in ("hgx-b300", "gb300-nvl72", "hgx-b200", "hgx-h200")},
})
"""Local NVMe read rate per GPU machine type (a machine type without local NVMe has no entry)."""

_GKE_DIR = ("GKE node pools with Local SSD as ephemeral storage (cloud.google.com/kubernetes-engine/docs/how-to/"
            "persistent-volumes/local-ssd, \"--ephemeral-storage-local-ssd\"; gcp/node_pool.py sets "
            "ephemeral_storage_local_ssd_config to the machine's bundled count, as cluster-toolkit's gke-node-pool "
            "does): \"GKE automatically mounts ... /var/lib/kubelet, /var/log/pods, and /var/lib/containerd\" onto "
            "the Local SSD volume (kubernetes-engine/docs/concepts/local-ssd); the node script stripes the disks into "
            "one RAID-0 array mounted at /mnt/stateful_partition/kube-ephemeral-ssd and binds those directories "
            "into it (kubernetes/cloud-provider-gcp@00474d6 cluster/gce/gci/configure-helper.sh "
            "ensure-local-ssds-ephemeral-storage: ephemeral_mountpoint), so a hostPath under it is on the NVMe. "
            "Google documents the array only through emptyDir (\"tied to the lifecycle of your Pods\"); that GKE's "
            "own node image keeps the open-source script's mount point is UNCONFIRMED beyond the GKE serving "
            "recipes that mount it. On a node without the array the hostPath is on the boot disk: the node copy "
            "then stops short of the kubelet's eviction thresholds (weightcopy.copier.node KEEP_FREE)")
_EKS_DIR = ("EKS AL2023 nodeadm NodeConfig spec.instance.localStorage strategy RAID0 (aws/nodegroup.py "
            "NODEADM_LOCAL_STORAGE): the instance-store NVMe become one RAID0 array mounted at MountPath/0, MountPath "
            "defaulting to /mnt/k8s-disks/ (awslabs/amazon-eks-ami@81fec2e nodeadm/api/v1alpha1/nodeconfig_types.go "
            "LocalStorageOptions.MountPath; templates/al2023/runtime/bin/setup-local-disks: "
            "array_mount_point=\"${MNT_DIR}/0\"), with /var/lib/kubelet, /var/lib/containerd and /var/log/pods bound "
            "into it (awslabs/ai-on-eks docs: \"combined into a single RAID0 (striped) array then mounted to "
            "/mnt/k8s-disks/0\")")

_AKS_SOURCE = ("learn.microsoft.com/azure/aks/best-practices-storage-nvme; MicrosoftDocs/azure-docs articles/storage/"
               "container-storage (container-storage-faq, install-container-storage-aks, "
               "use-container-storage-with-local-disk); Azure/local-csi-driver@cda8915 docs/design")
_AKS_WHY_NONE = (
    "AKS formats no filesystem on ND GB300 v6's local NVMe for pods and recommends Azure Container Storage for it, "
    "else emptyDir or a hostPath on a disk the operator formats (learn.microsoft.com/azure/aks/best-practices-"
    "storage-nvme; k3infra formats none). Azure Container Storage does not run on these nodes: its FAQ states "
    "\"Azure Container Storage doesn't support ARM node pools. Our supported architectures are AMD64/x86-64\" "
    "(container-storage-faq, ms.date 09/03/2025, the latest read; the v2.1.0 GA post of 2026-04-08, "
    "blog.aks.azure.com/2026/04/08/acstor-v2.1-ga, names no change to it) and ND GB300 v6 is Grace arm64 "
    "(catalog.accelerators). It is the "
    "cluster extension microsoft.azurecontainerstoragev2 (Microsoft.KubernetesConfiguration/extensions with "
    "configuration setting enable-azure-container-storage, install-container-storage-aks), which installs its latest "
    "version and updates itself (no version k3infra could pin). The volume's lifecycle itself would hold: its driver, "
    "the open-source Azure/local-csi-driver (provisioner localdisk.csi.acstor.io; chart and images built for arm64 "
    "too), by default sets no node affinity on a PersistentVolume whose claim carries localdisk.csi.acstor.io/"
    "accept-ephemeral-storage: \"true\", steers the pod back to its node with a preferred affinity from a mutating "
    "webhook (failurePolicy Ignore), and recreates the volume empty on whatever node the pod lands on once its node is "
    "deleted, reimaged or gone with the reservation (docs/design/pv-recovery.md, webhooks.md); installing that chart "
    "is outside Microsoft's supported extension and its default disk filter (models \"Microsoft NVMe Direct Disk\", "
    "\"... v2\", docs/design/disk-selection.md) matching ND GB300 v6's NVMe is UNCONFIRMED, so k3infra installs "
    "neither and the node keeps nothing across pods beyond the engine's caches on its OS disk")

_HYPERPOD_DIR = (f"{NVME_PAGE}: a HyperPod instance's local NVMe is mounted at {NVME_ROOT}; the endpoint's pod reaches "
                 "it as a hostPath (approach 2, \"Kubernetes volume with fallback\": modelSourceType kubernetesVolume, "
                 "an initContainer that fills the node from S3 with IRSA credentials where the model is missing), "
                 "which k3infra's initContainer does with the node agent's copier (aws/hyperpod_weights.py)")

NODE_DIRECTORIES: Mapping[Platform, NodeDirectory] = MappingProxyType({
    Platform.GKE: NodeDirectory("/mnt/stateful_partition/kube-ephemeral-ssd/k3infra", _GKE_DIR),
    Platform.EKS: NodeDirectory("/mnt/k8s-disks/0/k3infra", _EKS_DIR),
    Platform.AKS: NodeDirectory(None, _AKS_SOURCE, why_none=_AKS_WHY_NONE),
    Platform.ACK: NodeDirectory(
        None, "catalog.accelerators ecs.ebmgn8v.48xlarge local_nvme_tb",
        why_none="ecs.ebmgn8v.48xlarge has no local NVMe (Alibaba's ECS GPU instance families: cloud disks only); "
                 "a copy on its ESSD PL1 data disk would read no faster than the node's share of the bucket"),
    Platform.PAI_EAS: NodeDirectory(
        None, "catalog.accelerators ecs.ebmgn8v.48xlarge local_nvme_tb; PAI-EAS service configuration",
        why_none="PAI-EAS runs the service on ecs.ebmgn8v.48xlarge, which has no local NVMe (Alibaba's ECS GPU "
                 "instance families: cloud disks only), and gives an instance no node directory that outlives it "
                 "(its storage mounts are OSS, NAS and CPFS, read like the bucket): every instance reads the "
                 "weights from OSS and warms up in full"),
    Platform.HYPERPOD: NodeDirectory(f"{NVME_ROOT}/k3infra", _HYPERPOD_DIR),
    Platform.EXISTING_CLUSTER: NodeDirectory(
        None, "the cluster's own nodes",
        why_none="k3infra knows no local disk on a cluster it does not manage: state a host directory on the "
                 "nodes' local NVMe as k3infra:kubernetes.nodeLocalPath"),
})
"""Where each platform's GPU nodes keep the weights and the engine's caches across pods."""

FILLED_BY_THE_SERVER_POD = frozenset({Platform.HYPERPOD})
"""Platforms whose server pod fills its node's copy itself, in an init container before the engine starts (HyperPod:
the operator builds the pod, so k3infra runs no node agent there; catalog.hyperpod NVME_PAGE approach 2): a new
replica on a node without the copy waits for the fill, where elsewhere the node agent fills it in the background and
the pod reads the bucket meanwhile."""

GRAPH_CAPTURE_SECONDS: Mapping[EngineName, tuple[int, str]] = MappingProxyType({
    EngineName.VLLM: (90, "ESTIMATE: CUDA graph capture of vLLM's default capture sizes (up to 512) for a 61-layer "
                          "MoE at TP=8; vLLM logs \"Graph capturing finished in N secs\", tens of seconds for "
                          "dense models; vLLM keeps no CUDA graph across processes, so every start captures again"),
    EngineName.SGLANG: (120, "ESTIMATE: CUDA graph capture up to --cuda-graph-max-bs 512 (000); SGLang logs "
                             "\"Capture cuda graph end. Time elapsed\"; no graph survives the process"),
})
"""The part of an engine's warm-up no cache removes: capturing its CUDA graphs (the restart floor's second term)."""

WARM_CACHE_BYTES = 20 * 10**9
"""ESTIMATE: the engine's compile and JIT caches for one layout (torch.compile's artifacts per rank, DeepGEMM's and
FlashInfer's kernels, Triton's): a few GB per node; 20 GB at the pessimistic end, read back from the bucket before a
new pod starts."""

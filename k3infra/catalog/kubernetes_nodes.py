"""What a cloud's Kubernetes nodes carry besides what their pool asks for: the labels and taints the platform
puts on every node, and each GPU machine's capacity as the kubelet reports it.

One table per concern, each fact with its source (or ESTIMATE): ``CLOUD_NODES`` (per cloud: the pool, zone and
platform labels, taints the platform adds), ``GPU_NODES`` (per GPU machine type: the accelerator labels, the
NVLink-domain topology labels, huge pages, EFA devices, pods per node). The local control plane's node profiles
(tests/cluster/profiles.py) are built from these and the stack's own plan: the pool's labels, taints, machine type
and count come from the plan, never from here.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .types import Cloud


@dataclass(frozen=True)
class Taint:
    """A node taint."""

    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class CloudNodes:
    """The labels and taints one cloud's managed Kubernetes puts on every node of a pool."""

    cloud: Cloud
    pool_labels: tuple[str, ...]
    """Labels whose value is the pool's name (GKE ``cloud.google.com/gke-nodepool``; AKS both
    ``kubernetes.azure.com/agentpool`` and the legacy ``agentpool``)."""
    platform_labels: Mapping[str, str]
    """Further labels with fixed values on every node (``{pool}`` is replaced by the pool's name)."""
    arm64_taint: Taint | None
    """The taint the platform puts on Arm nodes, where it puts one."""
    gpu_taint: Taint | None
    """The taint the platform puts on GPU nodes by itself, where it puts one."""
    ephemeral_storage_eviction: float
    """Share of the node file system the kubelet keeps free (``nodefs.available``): allocatable ephemeral storage is
    the rest."""
    sources: Mapping[str, str]


_NODEFS = 0.10
"""The kubelet's default hard eviction ``nodefs.available<10%`` (kubernetes.io "Node-pressure Eviction"); GKE, the
EKS AL2023 AMI (nodeadm ``EvictionHard``) and AKS (node-resource-reservations) keep it."""

ARM64_TAINT = Taint("kubernetes.io/arch", "arm64", "NoSchedule")

CLOUD_NODES: Mapping[Cloud, CloudNodes] = MappingProxyType({c.cloud: c for c in (
    CloudNodes(
        cloud=Cloud.GCP,
        pool_labels=("cloud.google.com/gke-nodepool",),
        platform_labels=MappingProxyType({"cloud.google.com/gke-os-distribution": "cos",
                                          "cloud.google.com/gke-boot-disk": "{boot_disk}"}),
        arm64_taint=ARM64_TAINT,
        gpu_taint=Taint("nvidia.com/gpu", "present", "NoSchedule"),
        ephemeral_storage_eviction=_NODEFS,
        sources=MappingProxyType({
            "pool_labels": "cloud.google.com/kubernetes-engine/docs/concepts/node-pools (cloud.google.com/gke-nodepool)",
            "platform_labels": "GKE node labels (kubernetes/autoscaler cluster-autoscaler/cloudprovider/gce "
                               "templates.go: gke-os-distribution, gke-boot-disk)",
            "arm64_taint": "cloud.google.com/kubernetes-engine/docs/how-to/prepare-arm-workloads-for-deployment "
                           "(GKE taints Arm nodes kubernetes.io/arch=arm64:NoSchedule)",
            "gpu_taint": "cloud.google.com/kubernetes-engine/docs/how-to/gpus (GKE adds nvidia.com/gpu=present:"
                         "NoSchedule to GPU node pools when the cluster has non-GPU pools)",
        }),
    ),
    CloudNodes(
        cloud=Cloud.AWS,
        pool_labels=("eks.amazonaws.com/nodegroup",),
        platform_labels=MappingProxyType({"eks.amazonaws.com/capacityType": "{capacity_type}"}),
        arm64_taint=None,
        gpu_taint=None,
        ephemeral_storage_eviction=_NODEFS,
        sources=MappingProxyType({
            "pool_labels": "docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html (managed node groups "
                           "label nodes eks.amazonaws.com/nodegroup and eks.amazonaws.com/capacityType)",
            "gpu_taint": "EKS adds no taint of its own to a managed node group (the group's taints are the plan's)",
        }),
    ),
    CloudNodes(
        cloud=Cloud.AZURE,
        pool_labels=("kubernetes.azure.com/agentpool", "agentpool"),
        platform_labels=MappingProxyType({"kubernetes.azure.com/mode": "{mode}", "kubernetes.azure.com/os-sku": "Ubuntu",
                                          "kubernetes.azure.com/role": "agent"}),
        arm64_taint=None,
        gpu_taint=None,
        ephemeral_storage_eviction=_NODEFS,
        sources=MappingProxyType({
            "pool_labels": "learn.microsoft.com/azure/aks/use-labels (kubernetes.azure.com/agentpool, agentpool, "
                           "kubernetes.azure.com/mode, kubernetes.azure.com/os-sku, kubernetes.azure.com/role)",
            "gpu_taint": "AKS adds no GPU taint itself (learn.microsoft.com/azure/aks/use-nvidia-gpu: the pool's "
                         "--node-taints sku=gpu:NoSchedule is the user's)",
        }),
    ),
    CloudNodes(
        cloud=Cloud.ALICLOUD,
        pool_labels=(),
        platform_labels=MappingProxyType({"alibabacloud.com/nodepool-id": "np-{pool}"}),
        arm64_taint=None,
        gpu_taint=None,
        ephemeral_storage_eviction=_NODEFS,
        sources=MappingProxyType({
            "platform_labels": "alibabacloud.com/help/en/ack (node pool labels: alibabacloud.com/nodepool-id, the pool's "
                               "id, not its name; the value here is a stand-in id)",
            "gpu_taint": "ACK adds no GPU taint itself (the pool's taints are the plan's)",
        }),
    ),
)})
"""What each cloud's managed Kubernetes puts on every node."""


@dataclass(frozen=True)
class GpuNode:
    """A GPU machine type as its Kubernetes node reports it."""

    sku: str
    cloud: Cloud
    accelerator_labels: Mapping[str, str]
    """Labels the platform (or, where stated, the pool's own GPU software) puts on the node naming its GPUs."""
    topology_labels: tuple[str, ...]
    """Labels naming the node's place in the fabric (GKE block / sub-block / host, GPU feature discovery's NVLink
    clique); every node of one pool in one domain shares their values."""
    hugepages_2m: int
    """2 MiB huge pages the node pre-allocates (``hugepages-2Mi`` capacity): the pool's setting where the plan has one."""
    efa_devices: int
    """``vpc.amazonaws.com/efa`` devices, where the EFA device plugin runs (0: none advertised)."""
    max_pods: int
    sources: Mapping[str, str]


GKE_TOPOLOGY = ("cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
                "cloud.google.com/gce-topology-host")
_GKE_TOPOLOGY_SOURCE = ("cloud.google.com/ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas (nodes of A3 "
                        "Ultra, A4 and A4X reservations carry gce-topology-block, -subblock and -host); cluster-toolkit "
                        "examples/gke-a4x-max-bm/nccl-jobset-example.yaml requires one gce-topology-subblock per job")
_GKE_MAX_PODS = ("cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr (110 pods per node, the GKE "
                 "Standard default)")

GPU_NODES: Mapping[str, GpuNode] = MappingProxyType({n.sku: n for n in (
    GpuNode("a4x-maxgpu-4g-metal", Cloud.GCP,
            accelerator_labels=MappingProxyType({"cloud.google.com/gke-accelerator": "nvidia-gb300",
                                                 "cloud.google.com/gke-gpu": "true",
                                                 "cloud.google.com/machine-family": "a4x"}),
            topology_labels=GKE_TOPOLOGY, hugepages_2m=4096, efa_devices=0, max_pods=110, sources=MappingProxyType({
                "accelerator_labels": "002 §5.2 (--accelerator=type=nvidia-gb300); GKE GPU node labels (kubernetes/"
                                      "autoscaler gce templates.go: gke-accelerator, gke-gpu, machine-family)",
                "topology_labels": _GKE_TOPOLOGY_SOURCE,
                "hugepages_2m": "the pool's linuxNodeConfig (k3infra.catalog.gke: cluster-toolkit hugepage_size_2m 4096)",
                "max_pods": _GKE_MAX_PODS})),
    GpuNode("a4x-highgpu-4g", Cloud.GCP,
            accelerator_labels=MappingProxyType({"cloud.google.com/gke-accelerator": "nvidia-gb200",
                                                 "cloud.google.com/gke-gpu": "true",
                                                 "cloud.google.com/machine-family": "a4x"}),
            topology_labels=GKE_TOPOLOGY, hugepages_2m=0, efa_devices=0, max_pods=110, sources=MappingProxyType({
                "accelerator_labels": "cluster-toolkit examples/gke-a4x (accelerator_type: nvidia-gb200); GKE GPU node "
                                      "labels (kubernetes/autoscaler gce templates.go: gke-accelerator, gke-gpu, "
                                      "machine-family)",
                "topology_labels": _GKE_TOPOLOGY_SOURCE,
                "hugepages_2m": "none: the pool sets no hugepage config (k3infra.catalog.gke, as cluster-toolkit "
                                "examples/gke-a4x)",
                "max_pods": _GKE_MAX_PODS})),
    GpuNode("a4-highgpu-8g", Cloud.GCP,
            accelerator_labels=MappingProxyType({"cloud.google.com/gke-accelerator": "nvidia-b200",
                                                 "cloud.google.com/gke-gpu": "true",
                                                 "cloud.google.com/machine-family": "a4"}),
            topology_labels=GKE_TOPOLOGY, hugepages_2m=0, efa_devices=0, max_pods=110, sources=MappingProxyType({
                "accelerator_labels": "000 (cloud.google.com/gke-accelerator: nvidia-b200)",
                "topology_labels": _GKE_TOPOLOGY_SOURCE, "max_pods": _GKE_MAX_PODS})),
    GpuNode("p6-b300.48xlarge", Cloud.AWS,
            accelerator_labels=MappingProxyType({}),
            topology_labels=(), hugepages_2m=0, efa_devices=0, max_pods=250, sources=MappingProxyType({
                "accelerator_labels": "the EKS AL2023 NVIDIA AMI labels no accelerator (the group's own "
                                      "nvidia.com/gpu.present is the plan's)",
                "efa_devices": "the aws-eks stack installs no EFA device plugin (k3infra.aws.efa needs_efa false: one "
                               "node per group, no KV over EFA): nothing advertises vpc.amazonaws.com/efa; where it "
                               "installs one (aws-eks-pd), 16 (k3infra.aws.efa EFA_LAYOUTS)",
                "max_pods": "ESTIMATE: 250, the largest max pods the EKS AMI sets on large instances (VPC CNI "
                            "max-pods-calculator caps at 250 above 30 vCPU)"})),
    GpuNode("ml.p6-b300.48xlarge", Cloud.AWS,
            accelerator_labels=MappingProxyType({"sagemaker.amazonaws.com/compute-type": "hyperpod"}),
            topology_labels=(), hugepages_2m=0, efa_devices=16, max_pods=250, sources=MappingProxyType({
                "accelerator_labels": "docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate.html "
                                      "(HyperPod nodes carry sagemaker.amazonaws.com/compute-type: hyperpod)",
                "efa_devices": "HyperPod installs the EFA device plugin (aws/sagemaker-hyperpod-cli helm_chart "
                               "HyperPodHelmChart: aws-efa-k8s-device-plugin); 16 EFA cards (k3infra.aws.efa)",
                "max_pods": "ESTIMATE: as p6-b300.48xlarge"})),
    GpuNode("Standard_ND128isr_GB300_v6", Cloud.AZURE,
            accelerator_labels=MappingProxyType({"kubernetes.azure.com/accelerator": "nvidia"}),
            topology_labels=("nvidia.com/gpu.clique",), hugepages_2m=0, efa_devices=0, max_pods=250, sources=MappingProxyType({
                "accelerator_labels": "learn.microsoft.com/azure/aks/use-nvidia-gpu (GPU nodes carry "
                                      "kubernetes.azure.com/accelerator=nvidia)",
                "topology_labels": "GPU feature discovery, which the azure-gb300 stack installs with the device "
                                   "plugin (NVIDIA/k8s-device-plugin internal/lm/imex.go: <cluster uuid>.<clique id>)",
                "max_pods": "k3infra.catalog.system_nodes AKS_MAX_PODS (Azure CNI Overlay, the pool sets none)"})),
    GpuNode("ecs.ebmgn8v.48xlarge", Cloud.ALICLOUD,
            accelerator_labels=MappingProxyType({"aliyun.accelerator/nvidia_name": "NVIDIA-H20",
                                                 "aliyun.accelerator/nvidia_count": "8",
                                                 "aliyun.accelerator/nvidia_mem": "97871MiB"}),
            topology_labels=(), hugepages_2m=0, efa_devices=0, max_pods=256, sources=MappingProxyType({
                "accelerator_labels": "alibabacloud.com/help/en/ack (GPU node labels aliyun.accelerator/nvidia_name, "
                                      "nvidia_count, nvidia_mem); the values: ESTIMATE for an H20-class 96 GB GPU",
                "max_pods": "ESTIMATE: 256 (Terway's default upper bound per node)"})),
)})
"""Every GPU machine type a Kubernetes stack runs on, as its node reports it."""

__all__ = ["ARM64_TAINT", "CLOUD_NODES", "CloudNodes", "GKE_TOPOLOGY", "GPU_NODES", "GpuNode", "Taint"]

"""What a CPU system node leaves for pods: its allocatable CPU and memory under its cloud's reservation rule.

Allocatable = capacity - kube-reserved - system-reserved - the kubelet's hard eviction threshold (Kubernetes
"Reserve Compute Resources for System Daemons"). Each cloud reserves by its own rule, cited with it below; the
capacity the kubelet sees is the memory the kernel reports (``MemTotal``), which is below the machine's nominal
memory. Every figure is from the pessimistic end: a pod that fits these fits the real node.

The clouds' own system pods (DNS, metrics, CNI and agents) take their share of the allocatable too; they are not
counted here.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .transfer import CPU_NODES, CpuNode
from .types import Cloud

KERNEL_MEMORY_SHARE = 0.055
"""ESTIMATE: the share of a VM's nominal memory the kernel keeps from ``MemTotal`` (ACK's resource reservation
policy page, alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/resource-reservation-policy:
a 4 vCPU / 8 GiB sample node reports ``memory: 7925980Ki``, 94.5% of 8 GiB)."""

EVICTION_HARD_MIB = 100
"""``memory.available<100Mi``: the kubelet's hard eviction threshold on GKE (plan-node-sizes), EKS AL2023
(awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go ``EvictionHard``) and AKS 1.29+
(node-resource-reservations)."""

EKS_MAX_PODS: Mapping[str, int] = MappingProxyType({"m7i.2xlarge": 58, "c6in.8xlarge": 234})
"""Pods per node the EKS AL2023 AMI sets on an instance type: ENIs x (IPv4 addresses per ENI - 1) + 2
(awslabs/amazon-eks-ami nodeadm/internal/kubelet/eni_max_pods.go ``calculateStandardMaxPods``, no cap by vCPUs;
nodeadm/internal/kubelet/instance-info.jsonl: m7i.2xlarge 4 ENIs of 15 addresses, the sync pool's c6in.8xlarge 8 of
30)."""

AKS_MAX_PODS = 250
"""Pods per node of an AKS pool that sets none, under Azure CNI Overlay (k3infra.azure.cluster): 250, the largest
AKS allows, so the largest memory reservation (learn.microsoft.com/azure/aks/azure-cni-overlay)."""

AKS_CPU_RESERVED_MILLIS: Mapping[int, int] = MappingProxyType({1: 60, 2: 100, 4: 140, 8: 180, 16: 260, 32: 420,
                                                               64: 740})
"""AKS kube-reserved CPU by the host's cores (learn.microsoft.com/azure/aks/node-resource-reservations, "CPU
reservations")."""


@dataclass(frozen=True)
class Allocatable:
    """What the scheduler can place on one node."""

    cpu_millis: int
    memory_mib: int
    source: str
    """The reservation rule the figures come from."""


def _tiered(total: float, tiers: tuple[tuple[float, float], ...]) -> float:
    """A reservation that takes ``rate`` of each successive ``size`` of ``total`` (the last tier takes the rest)."""
    reserved, start = 0.0, 0.0
    for size, rate in tiers:
        reserved += max(0.0, min(total, start + size) - start) * rate
        start += size
    return reserved


CPU_TIERS = ((1, 0.06), (1, 0.01), (2, 0.005), (float("inf"), 0.0025))
"""Cores: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of every core above four (GKE,
cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes "CPU reservations"; the same tiers as EKS AL2023,
amazon-eks-ami nodeadm/internal/kubelet/config.go ``getCPUMillicoresToReserve``: 600, 100, 50, 25 per 10,000)."""

GKE_MEMORY_TIERS = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (float("inf"), 0.02))
"""GiB: 25% of the first 4, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128 (GKE,
plan-node-sizes "Memory reservations")."""


def memory_capacity_mib(memory_gib: float, kernel_share: float = KERNEL_MEMORY_SHARE) -> int:
    """The memory the kubelet reports as capacity on a machine of ``memory_gib`` nominal (MemTotal)."""
    return int(memory_gib * 1024 * (1 - kernel_share))


def _gke(vcpus: int, memory_gib: float, max_pods: int) -> Allocatable:
    cpu = vcpus * 1000 - round(_tiered(vcpus, CPU_TIERS) * 1000)
    mem = memory_capacity_mib(memory_gib) - round(_tiered(memory_gib, GKE_MEMORY_TIERS) * 1024) - EVICTION_HARD_MIB
    return Allocatable(cpu, mem, "GKE plan-node-sizes: CPU and memory reservation tiers, eviction at 100 MiB")


def _eks(vcpus: int, memory_gib: float, max_pods: int) -> Allocatable:
    cpu = vcpus * 1000 - round(_tiered(vcpus, CPU_TIERS) * 1000)
    mem = memory_capacity_mib(memory_gib) - (11 * max_pods + 255) - EVICTION_HARD_MIB
    return Allocatable(cpu, mem, "EKS AL2023 nodeadm: CPU tiers, 11 MiB x max pods + 255 MiB "
                                 "(getMemoryMebibytesToReserve), eviction at 100 MiB")


def _aks_cpu_reserved(vcpus: int) -> int:
    """AKS_CPU_RESERVED_MILLIS; above its last row (64 cores) ESTIMATE: the last step's rate, 10m per core."""
    if vcpus in AKS_CPU_RESERVED_MILLIS:
        return AKS_CPU_RESERVED_MILLIS[vcpus]
    top = max(AKS_CPU_RESERVED_MILLIS)
    return AKS_CPU_RESERVED_MILLIS[top] + (vcpus - top) * 10


def _aks(vcpus: int, memory_gib: float, max_pods: int) -> Allocatable:
    cpu = vcpus * 1000 - _aks_cpu_reserved(vcpus)
    mem = memory_capacity_mib(memory_gib) - min(20 * max_pods + 50, int(memory_gib * 1024) // 4) - EVICTION_HARD_MIB
    return Allocatable(cpu, mem, "AKS node-resource-reservations (1.29+): the CPU table, min(20 MB x max pods + 50 "
                                 "MB, 25% of memory), eviction at 100 MiB")


ACK_SAMPLE = (4, 8, 3900, 5824732 / 1024)
"""UNCONFIRMED: ACK's default reservation rule is not stated here; its resource reservation policy page shows a
sample node of 4 vCPU and 8 GiB with 3,900m CPU and 5,824,732 KiB memory allocatable (cores, GiB, millicores, MiB)."""

ACK_SAMPLE_MAX_GIB = 64
"""Largest node the sample's shares are scaled to. ESTIMATE: a reservation grows more slowly than the node (every
documented rule is tiered), so 69% of a 1 TiB GPU node's memory would understate what it leaves by hundreds of GiB;
above this size the GKE tiers (the largest reservation of the documented rules at that size) stand in."""


def _ack(vcpus: int, memory_gib: float, max_pods: int) -> Allocatable:
    if memory_gib > ACK_SAMPLE_MAX_GIB:
        gke = _gke(vcpus, memory_gib, max_pods)
        return Allocatable(gke.cpu_millis, gke.memory_mib, "ESTIMATE: ACK's rule for large nodes is not stated; "
                                                           "the GKE tiers stand in (ACK_SAMPLE_MAX_GIB)")
    cores, gib, cpu_alloc, mem_alloc = ACK_SAMPLE
    cpu = int(vcpus * 1000 * cpu_alloc / (cores * 1000))
    mem = int(memory_gib * 1024 * mem_alloc / (gib * 1024))
    return Allocatable(cpu, mem, "UNCONFIRMED: the shares ACK's sample node leaves allocatable (97.5% of its CPU, "
                                 "69.4% of its nominal memory), scaled to this node; the other clouds' rules reserve "
                                 "a smaller share of a larger node, so this is likely pessimistic")


def _kubeadm(vcpus: int, memory_gib: float, max_pods: int) -> Allocatable:
    """An existing cluster: kubeadm's kubelet reserves nothing for kube or the system unless told to, and evicts at
    100 MiB (kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources: kube-reserved and
    system-reserved default to none; ``memory.available<100Mi``)."""
    return Allocatable(vcpus * 1000, memory_capacity_mib(memory_gib) - EVICTION_HARD_MIB,
                       "kubeadm defaults: no kube- or system-reserved, eviction at 100 MiB (an existing cluster may "
                       "reserve more)")


RULES = MappingProxyType({Cloud.GCP: _gke, Cloud.AWS: _eks, Cloud.AZURE: _aks, Cloud.ALICLOUD: _ack,
                          Cloud.KUBERNETES: _kubeadm})

SYSTEM_MAX_PODS: Mapping[Cloud, Mapping[str, int] | int] = MappingProxyType({
    Cloud.GCP: 110, Cloud.AWS: EKS_MAX_PODS, Cloud.AZURE: AKS_MAX_PODS, Cloud.ALICLOUD: 256,
    Cloud.KUBERNETES: 110})
"""Pods per system node: GKE Standard's default 110; EKS by instance type; AKS's 250; ACK ESTIMATE 256 (Terway); an
existing cluster the kubelet's default maxPods, 110 (KubeletConfiguration)."""


def node_allocatable(cloud: Cloud, vcpus: int, memory_gib: float, max_pods: int) -> Allocatable:
    """The allocatable CPU and memory of a node of ``vcpus`` and ``memory_gib`` (nominal) running at most
    ``max_pods``, by its cloud's reservation rule."""
    return RULES[cloud](vcpus, memory_gib, max_pods)


def max_pods(node: CpuNode) -> int:
    """Pods per node of system node type ``node``."""
    table = SYSTEM_MAX_PODS[node.cloud]
    return table if isinstance(table, int) else table[node.sku]


def allocatable(node: CpuNode) -> Allocatable:
    """The allocatable CPU and memory of one node of ``node``'s type, by its cloud's reservation rule."""
    return node_allocatable(node.cloud, node.vcpus, node.memory_gib, max_pods(node))


ALLOCATABLE: Mapping[str, Allocatable] = MappingProxyType({sku: allocatable(n) for sku, n in CPU_NODES.items()})
"""Allocatable CPU and memory of every CPU system node type the catalog knows, by SKU (e2-standard-8: 7,910m,
27,220 MiB; m7i.2xlarge: 7,910m, 29,972 MiB; Standard_D8s_v5: 7,820m, 25,815 MiB; ecs.g7.2xlarge: 7,800m,
22,752 MiB)."""

__all__ = ["ALLOCATABLE", "Allocatable", "allocatable", "max_pods", "memory_capacity_mib", "node_allocatable"]

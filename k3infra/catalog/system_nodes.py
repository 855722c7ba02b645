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

EKS_MAX_PODS: Mapping[str, int] = MappingProxyType({"m7i.2xlarge": 58})
"""Pods per node the EKS AL2023 AMI sets on an instance type: ENIs x (IPv4 addresses per ENI - 1) + 2
(awslabs/amazon-eks-ami nodeadm/internal/kubelet/eni_max_pods.go ``calculateStandardMaxPods``; m7i.2xlarge: 4 ENIs
of 15 addresses, nodeadm/internal/kubelet/instance-info.jsonl)."""

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


def _capacity_mib(node: CpuNode) -> int:
    return int(node.memory_gib * 1024 * (1 - KERNEL_MEMORY_SHARE))


def _gke(node: CpuNode) -> Allocatable:
    cpu = node.vcpus * 1000 - round(_tiered(node.vcpus, CPU_TIERS) * 1000)
    mem = _capacity_mib(node) - round(_tiered(node.memory_gib, GKE_MEMORY_TIERS) * 1024) - EVICTION_HARD_MIB
    return Allocatable(cpu, mem, "GKE plan-node-sizes: CPU and memory reservation tiers, eviction at 100 MiB")


def _eks(node: CpuNode) -> Allocatable:
    cpu = node.vcpus * 1000 - round(_tiered(node.vcpus, CPU_TIERS) * 1000)
    mem = _capacity_mib(node) - (11 * EKS_MAX_PODS[node.sku] + 255) - EVICTION_HARD_MIB
    return Allocatable(cpu, mem, "EKS AL2023 nodeadm: CPU tiers, 11 MiB x max pods + 255 MiB "
                                 "(getMemoryMebibytesToReserve), eviction at 100 MiB")


def _aks(node: CpuNode) -> Allocatable:
    cpu = node.vcpus * 1000 - AKS_CPU_RESERVED_MILLIS[node.vcpus]
    mem = _capacity_mib(node) - min(20 * AKS_MAX_PODS + 50, node.memory_gib * 1024 // 4) - EVICTION_HARD_MIB
    return Allocatable(cpu, mem, "AKS node-resource-reservations (1.29+): the CPU table, min(20 MB x max pods + 50 "
                                 "MB, 25% of memory), eviction at 100 MiB")


ACK_SAMPLE = (4, 8, 3900, 5824732 / 1024)
"""UNCONFIRMED: ACK's default reservation rule is not stated here; its resource reservation policy page shows a
sample node of 4 vCPU and 8 GiB with 3,900m CPU and 5,824,732 KiB memory allocatable (cores, GiB, millicores, MiB)."""


def _ack(node: CpuNode) -> Allocatable:
    cores, gib, cpu_alloc, mem_alloc = ACK_SAMPLE
    cpu = int(node.vcpus * 1000 * cpu_alloc / (cores * 1000))
    mem = int(node.memory_gib * 1024 * mem_alloc / (gib * 1024))
    return Allocatable(cpu, mem, "UNCONFIRMED: the shares ACK's sample node leaves allocatable (97.5% of its CPU, "
                                 "69.4% of its nominal memory), scaled to this node; the other clouds' rules reserve "
                                 "a smaller share of a larger node, so this is likely pessimistic")


def _kubeadm(node: CpuNode) -> Allocatable:
    """An existing cluster: kubeadm's kubelet reserves nothing for kube or the system unless told to, and evicts at
    100 MiB (kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources: kube-reserved and
    system-reserved default to none; ``memory.available<100Mi``)."""
    cpu = node.vcpus * 1000
    mem = _capacity_mib(node) - EVICTION_HARD_MIB
    return Allocatable(cpu, mem, "kubeadm defaults: no kube- or system-reserved, eviction at 100 MiB (an existing "
                                 "cluster may reserve more)")


RULES = MappingProxyType({Cloud.GCP: _gke, Cloud.AWS: _eks, Cloud.AZURE: _aks, Cloud.ALICLOUD: _ack,
                          Cloud.KUBERNETES: _kubeadm})


def allocatable(node: CpuNode) -> Allocatable:
    """The allocatable CPU and memory of one node of ``node``'s type, by its cloud's reservation rule."""
    return RULES[node.cloud](node)


ALLOCATABLE: Mapping[str, Allocatable] = MappingProxyType({sku: allocatable(n) for sku, n in CPU_NODES.items()})
"""Allocatable CPU and memory of every CPU system node type the catalog knows, by SKU (e2-standard-8: 7,910m,
27,220 MiB; m7i.2xlarge: 7,910m, 29,972 MiB; Standard_D8s_v5: 7,820m, 25,815 MiB; ecs.g7.2xlarge: 7,800m,
22,752 MiB)."""

__all__ = ["ALLOCATABLE", "Allocatable", "allocatable"]

"""What GKE needs to know about each GPU machine type, beyond the cloud-neutral catalog.

The catalog (``k3infra.catalog.ACCELERATORS``) holds the facts that decide sizing; this table holds the ones
that decide the shape of a GKE node pool: how its GPU NICs are attached, which boot disk it accepts,
whether it runs in one NVL72 sub-block, which taints GKE puts on it. Each entry cites its source.
"""

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Mapping


class GpuNetworkMode(StrEnum):
    """How a GPU node pool's RDMA NICs are attached."""

    ACCELERATOR_PROFILE = "accelerator-profile"
    """GKE builds the GPU VPCs and subnets itself (``--accelerator-network-profile=auto``) and hands the
    NICs to pods through managed DRANET (002 §5.2)."""
    RDMA_MULTI_NIC = "rdma-multi-nic"
    """k3infra builds a second gVNIC network and a RoCE VPC with one subnet per GPU NIC, attaches them as
    additional node networks, and declares the Kubernetes ``Network`` objects pods name in their
    ``networking.gke.io/interfaces`` annotation (000)."""
    NONE = "none"
    """No scale-out fabric: the primary NIC only."""


@dataclass(frozen=True)
class GkeMachine:
    """GKE node-pool facts of one GPU machine type."""

    machine_type: str
    network_mode: GpuNetworkMode
    rdma_nics: int
    """RDMA NICs per node (one RoCE subnet each in RDMA_MULTI_NIC mode)."""
    boot_disk_type: str
    accelerator_topology: str | None
    """Workload-policy accelerator topology of a compact placement (``1x72`` = one NVL72 sub-block);
    None where the machine needs no compact placement."""
    bare_metal: bool
    arm64: bool
    """GKE taints Arm nodes ``kubernetes.io/arch=arm64:NoSchedule``; pods need the matching toleration."""
    node_labels: Mapping[str, str]
    """Kubernetes labels the pool's nodes need (DRANET on A4X Max)."""
    hugepages_2m: int | None
    """2 MiB huge pages per node, where the machine's fabric wants them."""
    pod_resources: Mapping[str, str]
    """What a serving pod requests on this machine, where a seed states it (GpuPool ``cpu_request``,
    ``memory_request``, ``shm_size``)."""
    sources: Mapping[str, str]
    rdma_device_class: str | None = None
    """DeviceClass of the RDMA NICs under GKE managed DRANET (ACCELERATOR_PROFILE): pods claim every NIC of it."""
    nvlink_domain_label: str | None = None
    """Node label whose value is one NVLink domain, where the domain spans nodes: a replica's pods share it."""


DRANET_LABEL = "cloud.google.com/gke-networking-dra-driver"
"""Node label that turns on GKE managed DRANET for the pool (002 §5.2)."""

UNIFIED_CNI_LABEL = "cloud.google.com/gke-dpv2-unified-cni"
"""Node label 002 §5.2 sets next to DRANET (value ``cni-migration``)."""

GKE_MACHINES: Mapping[str, GkeMachine] = MappingProxyType(
    {
        m.machine_type: m
        for m in (
            GkeMachine(
                machine_type="a4x-maxgpu-4g-metal",
                network_mode=GpuNetworkMode.ACCELERATOR_PROFILE,
                rdma_nics=8,
                boot_disk_type="hyperdisk-balanced",
                accelerator_topology="1x72",
                bare_metal=True,
                arm64=True,
                node_labels=MappingProxyType({DRANET_LABEL: "true", UNIFIED_CNI_LABEL: "cni-migration"}),
                hugepages_2m=4096,
                pod_resources=MappingProxyType({}),
                sources=MappingProxyType({
                    "network_mode": "002 §5.2 (--accelerator-network-profile=auto; no multi-networking, DRANET instead)",
                    "boot_disk_type": "cluster-toolkit examples/gke-a4x-max-bm (disk_type: hyperdisk-balanced); "
                                      "docs/catalog-research.md §1.5 (Hyperdisk only)",
                    "accelerator_topology": "cluster-toolkit examples/gke-a4x-max-bm (workload_policy HIGH_THROUGHPUT, "
                                            "accelerator_topology 1x72); 002 §5.2 --placement-policy",
                    "bare_metal": "002 §5.1 (Provisioning type: bare metal instance)",
                    "arm64": "002 §5.1 (NVIDIA Grace, ARM Neoverse V2); cluster-toolkit job templates tolerate "
                             "kubernetes.io/arch=arm64:NoSchedule",
                    "node_labels": "002 §5.2 (--node-labels=cloud.google.com/gke-networking-dra-driver=true,"
                                   "cloud.google.com/gke-dpv2-unified-cni=cni-migration)",
                    "hugepages_2m": "cluster-toolkit examples/gke-a4x-max-bm (hugepage_size_2m: 4096)",
                    "rdma_device_class": "cluster-toolkit examples/gke-a4x-max-bm/nccl-jobset-example.yaml "
                                         "(ResourceClaimTemplate deviceClassName: mrdma.google.com, count: 8)",
                    "nvlink_domain_label": "cluster-toolkit examples/gke-a4x-max-bm/nccl-jobset-example.yaml "
                                           "(kueue.x-k8s.io/podset-required-topology: "
                                           "cloud.google.com/gce-topology-subblock: one NVL72 sub-block)",
                }),
                rdma_device_class="mrdma.google.com",
                nvlink_domain_label="cloud.google.com/gce-topology-subblock",
            ),
            GkeMachine(
                machine_type="a4-highgpu-8g",
                network_mode=GpuNetworkMode.RDMA_MULTI_NIC,
                rdma_nics=8,
                boot_disk_type="hyperdisk-balanced",
                accelerator_topology=None,
                bare_metal=False,
                arm64=False,
                node_labels=MappingProxyType({}),
                hugepages_2m=None,
                pod_resources=MappingProxyType({"cpu_request": "206", "memory_request": "1500Gi", "shm_size": "100Gi"}),
                sources=MappingProxyType({
                    "pod_resources": "000 (cpu: 206, memory: 1500Gi of 224 vCPU / 3,968 GB; /dev/shm sizeLimit 100Gi)",
                    "network_mode": "000 (networking.gke.io/interfaces eth2..eth9 = rdma-0..rdma-7); cluster-toolkit "
                                    "examples/gke-a4 (second gVNIC VPC + {zone}-vpc-roce VPC with 8 subnets)",
                    "boot_disk_type": "A4 attaches Hyperdisk only (cloud.google.com/compute/docs/accelerator-optimized-machines)",
                }),
            ),
            GkeMachine(
                machine_type="a3-ultragpu-8g",
                network_mode=GpuNetworkMode.RDMA_MULTI_NIC,
                rdma_nics=8,
                boot_disk_type="hyperdisk-balanced",
                accelerator_topology=None,
                bare_metal=False,
                arm64=False,
                node_labels=MappingProxyType({}),
                hugepages_2m=None,
                pod_resources=MappingProxyType({}),
                sources=MappingProxyType({
                    "network_mode": "docs/catalog-research.md §1.7 (same NIC layout as A4: 8 CX-7 + 2 gVNIC)",
                    "boot_disk_type": "A3 Ultra attaches Hyperdisk only",
                }),
            ),
        )
    }
)
"""GKE facts per GPU machine type of the catalog's Google Cloud SKUs."""

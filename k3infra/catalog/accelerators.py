"""GPU machine types, one entry per SKU, named exactly as its cloud names it.

Over 500 lines: a table of data, one entry per machine type with the source of each figure; split by cloud it would
scatter the one table sizing and validation read.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .types import CapacityType, Cloud, CpuArch, GpuArchitecture


@dataclass(frozen=True)
class Fabric:
    """The scale-out network between nodes (GPU to GPU across the NVLink domain's edge)."""

    name: str
    """E.g. ``EFA``, ``InfiniBand``, ``RoCEv2``, ``eRDMA``."""
    nics: int
    gbps_per_nic: int
    rdma: bool
    pods_lack_it: str | None = None
    """Where k3infra gives the engine's pods no access to this fabric: what their traffic between nodes crosses
    instead, and why. None: the pods use the fabric (device plugin, DRA claim or NCCL plugin)."""

    @property
    def total_gbps(self) -> int:
        """Aggregate scale-out bandwidth of one node."""
        return self.nics * self.gbps_per_nic

    @property
    def carrier(self) -> str:
        """What the engine's traffic between nodes travels over."""
        return self.pods_lack_it or f"the {self.name} fabric"


@dataclass(frozen=True)
class PriceRange:
    """Hourly price of one node, in USD."""

    low: float
    high: float
    estimate: bool
    """True where no seed or price list gives the figure and it is derived (see ``sources["price"]``)."""


@dataclass(frozen=True)
class Accelerator:
    """A GPU machine type and the facts that decide sizing, scheduling and procurement."""

    sku: str
    """The cloud's own name for the machine type."""
    cloud: Cloud
    gpu_model: str
    gpus_per_node: int
    gpu_memory_gb: float
    """HBM per GPU in decimal GB: the cloud's own figure where it states less than the vendor's nameplate."""
    cpu_arch: CpuArch
    vcpus: int
    host_memory_gib: int
    """System memory of one node in GiB; a vendor figure in "GB" is read as decimal (the smaller reading)."""
    gpu_architecture: GpuArchitecture
    """The GPU generation the engines' recipes key their settings on (vllm-project/recipes Kimi-K3.yaml)."""
    nvlink_domain_gpus: int
    """GPUs in one NVLink domain. Larger than ``gpus_per_node`` where NVLink spans nodes (NVL72 racks)."""
    fabric: Fabric
    local_nvme_tb: float
    frontend_gbps: float
    """The node's front-end network in Gbit/s, pessimistic end: what reads the bucket (the VPC network, not the RDMA
    fabric). The loaders' NIC term (catalog.loaders)."""
    max_nodes_per_pool: int | None
    """Most nodes one pool may hold (18 where the pool is one NVL72 rack); None where the SKU sets no limit."""
    capacity_types: tuple[CapacityType, ...]
    """How capacity can be obtained, the recommended way first."""
    price: PriceRange
    kubernetes_accelerator: str | None
    """The accelerator name the cloud's Kubernetes labels nodes with (GKE ``cloud.google.com/gke-accelerator``)."""
    quota_family: str | None
    """The vCPU quota family that gates the SKU, where the cloud gates it (Azure)."""
    sources: Mapping[str, str]

    @property
    def node_memory_gb(self) -> float:
        """GPU memory of one node."""
        return self.gpus_per_node * self.gpu_memory_gb

    @property
    def nvlink_spans_nodes(self) -> bool:
        """True where one NVLink domain spans several nodes (multi-node NVLink, MNNVL)."""
        return self.nvlink_domain_gpus > self.gpus_per_node


def _sources(**kv: str) -> Mapping[str, str]:
    return MappingProxyType(kv)


_B300_PRICE = PriceRange(low=59.0, high=142.0, estimate=False)

ERDMA_NOT_IN_PODS = ("TCP over the VPC (k3infra enables no eRDMA for the engine: ACK \"Add eRDMA nodes to ACK "
                     "clusters\" needs the ACK eRDMA Controller on the nodes and the eRDMA user-space driver in the "
                     "container image, and k3infra installs neither)")
"""What ebmgn8v's engine traffic between nodes crosses: the instance has an eRDMA interface, but a container uses
it only with the eRDMA user-space driver installed in its image (ACK docs, "Add eRDMA nodes to ACK clusters":
"To use eRDMA in Docker containers, install the eRDMA user-space driver package in the container") and the ACK
eRDMA Controller on the node; k3infra installs neither, and its pods request no eRDMA resource."""

R = "docs/catalog-research.md"

OWNED_HARDWARE = PriceRange(low=0.0, high=0.0, estimate=True)
"""An existing cluster's nodes (``cloud: kubernetes``): k3infra rents nothing, so the plan adds no hourly price;
power, hosting and depreciation are the owner's and not estimated here."""
OWNED_PRICE_SOURCE = ("ESTIMATE (OWNED_HARDWARE): owned nodes, no hourly charge; power, hosting and depreciation not "
                      "counted")
OWNED_CAPACITY_SOURCE = "the cluster's own nodes"
OWNED_LOCAL_NVME_SOURCE = "not counted: no loader k3infra runs on an existing cluster copies to local disk"
"""The sources every existing-cluster node shape states alike (its price, capacity and local disk)."""

EXISTING_FRONTEND_SOURCE = ("ESTIMATE: an existing cluster's node reaches its S3-compatible store over the cluster's "
                            "Ethernet, unknown here; 100 GbE at the pessimistic end")
"""The front-end NIC source of every existing-cluster node shape."""

EXISTING_CLUSTER_NICS = ("the cluster's pod network (k3infra claims no RDMA device on a cluster it does not manage: "
                         "the nodes' NICs reach pods only through the cluster's own RDMA device plugin or DRANET, "
                         "which k3infra does not configure there)")
"""What an existing cluster's engine traffic between nodes crosses, where it is not NVLink."""

DGX_B300 = "docs.nvidia.com/dgx/dgxb300-user-guide (DGX B300: 8x B300 288 GB, 2x Intel Xeon 6776P, 2 TB)"
DGX_B200 = "docs.nvidia.com/dgx/dgxb200-user-guide (DGX B200: 8x B200 180 GB, 2x Intel Xeon 8570, 2 TB)"
DGX_H200 = "docs.nvidia.com/dgx/dgxh100-user-guide (DGX H200: 8x H200 141 GB, 2x Intel Xeon 8480C, 2 TB)"

ACCELERATORS: Mapping[str, Accelerator] = MappingProxyType(
    {
        a.sku: a
        for a in (
            Accelerator(
                sku="p6-b300.48xlarge",
                cloud=Cloud.AWS,
                gpu_model="B300",
                gpus_per_node=8,
                gpu_memory_gb=288,
                cpu_arch=CpuArch.AMD64,
                vcpus=192,
                host_memory_gib=4096,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="EFA", nics=16, gbps_per_nic=400, rdma=True),
                local_nvme_tb=30.4,
                frontend_gbps=300,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.CAPACITY_BLOCK, CapacityType.ON_DEMAND),
                price=_B300_PRICE,
                kubernetes_accelerator=None,
                quota_family=None,
                sources=_sources(
                    gpu_model="002 §2.3 (8x B300)",
                    gpus_per_node="002 §2.3; caveat 3",
                    gpu_memory_gb="002 §2.2 (B300 288GB)",
                    cpu_arch="002 caveat 2 (x86_64 HGX B300)",
                    vcpus="docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (192 vCPU, Emerald Rapids)",
                    host_memory_gib="docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (4 TiB)",
                    gpu_architecture="002 §2.3 (B300: Blackwell Ultra)",
                    nvlink_domain_gpus="002 caveat 3 (TP=8 inside one node)",
                    fabric="EC2 User Guide, EFA configuration for P6-B300: 16 EFA cards x 400 Gbps (card 0 ENA only)",
                    local_nvme_tb="docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (8 x 3,800 GB NVMe)",
                    frontend_gbps=f"AWS P6-B300 launch blog: 300 Gbps dedicated ENA; EC2 User Guide, EFA configuration for P6-B300: card 0 is ENA only, up to 350 Gbps ({R} §1.1); the lower figure",
                    max_nodes_per_pool="no SKU limit",
                    capacity_types="002 §2.3, §3.2 (Capacity Blocks); on demand through the account team",
                    price="002 §8 (USD 59-142 per hour; AWS lists USD 142.416 on demand, 112.32 as a Capacity Block)",
                ),
            ),
            Accelerator(
                sku="ml.p6-b300.48xlarge",
                cloud=Cloud.AWS,
                gpu_model="B300",
                gpus_per_node=8,
                gpu_memory_gb=288,
                cpu_arch=CpuArch.AMD64,
                vcpus=192,
                host_memory_gib=4096,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="EFA", nics=16, gbps_per_nic=400, rdma=True),
                local_nvme_tb=30.4,
                frontend_gbps=300,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.TRAINING_PLAN, CapacityType.ON_DEMAND),
                price=_B300_PRICE,
                kubernetes_accelerator=None,
                quota_family=None,
                sources=_sources(
                    gpu_model="002 §2.3 (ml.p6-b300.48xlarge, 8x B300)",
                    gpus_per_node="002 §3.1 (nvidia.com/gpu: 8)",
                    gpu_memory_gb="002 §2.2 (B300 288GB)",
                    cpu_arch="002 §2.3 (x86_64)",
                    vcpus="same hardware as p6-b300.48xlarge",
                    host_memory_gib="same hardware as p6-b300.48xlarge (4 TiB)",
                    gpu_architecture="002 §2.3 (B300: Blackwell Ultra)",
                    nvlink_domain_gpus="002 §3.1 (TP=8 on one instance)",
                    fabric="same hardware as p6-b300.48xlarge",
                    local_nvme_tb="same hardware as p6-b300.48xlarge",
                    frontend_gbps="same hardware as p6-b300.48xlarge (300 Gbps dedicated ENA)",
                    max_nodes_per_pool="no SKU limit",
                    capacity_types="002 §3.1 prerequisite 2 (Flexible Training Plan)",
                    price="002 §8 (USD 59-142 per hour for an 8x B300 node)",
                ),
            ),
            Accelerator(
                sku="p5en.48xlarge",
                cloud=Cloud.AWS,
                gpu_model="H200",
                gpus_per_node=8,
                gpu_memory_gb=141,
                cpu_arch=CpuArch.AMD64,
                vcpus=192,
                host_memory_gib=2048,
                gpu_architecture=GpuArchitecture.HOPPER,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="EFAv3", nics=16, gbps_per_nic=200, rdma=True),
                local_nvme_tb=30.4,
                frontend_gbps=100,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.CAPACITY_BLOCK, CapacityType.ON_DEMAND),
                price=PriceRange(low=49.93, high=63.30, estimate=False),
                kubernetes_accelerator=None,
                quota_family=None,
                sources=_sources(
                    gpu_model="aws.amazon.com/ec2/instance-types/p5 (p5en: 8x H200)",
                    gpus_per_node="aws.amazon.com/ec2/instance-types/p5",
                    gpu_memory_gb="002 §2.2 (H200 141GB)",
                    cpu_arch="aws.amazon.com/ec2/instance-types/p5 (Intel Sapphire Rapids)",
                    vcpus="aws.amazon.com/ec2/instance-types/p5",
                    host_memory_gib="aws.amazon.com/ec2/instance-types/p5 (2 TiB)",
                    gpu_architecture="H200 is Hopper (aws.amazon.com/ec2/instance-types/p5)",
                    nvlink_domain_gpus="HGX H200 board: 8 GPUs on NVLink",
                    fabric="aws.amazon.com/ec2/instance-types/p5 (3,200 Gbps EFAv3)",
                    local_nvme_tb="docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (8 x 3,800 GB)",
                    frontend_gbps=f"ESTIMATE: no page read here states P5en's ENA share of its 3,200 Gbps; half of one of its 16 network cards (about 200 Gbps each, {R} §1.3)",
                    max_nodes_per_pool="no SKU limit",
                    capacity_types="EC2 Capacity Blocks for ML support p5en",
                    price=f"AWS price sheet via {R} §1.3: USD 63.296 on demand, ~6.24/GPU-h as a Capacity Block",
                ),
            ),
            Accelerator(
                sku="Standard_ND128isr_GB300_v6",
                cloud=Cloud.AZURE,
                gpu_model="GB300",
                gpus_per_node=4,
                gpu_memory_gb=288,
                cpu_arch=CpuArch.ARM64,
                vcpus=128,
                host_memory_gib=804,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=72,
                fabric=Fabric(name="InfiniBand", nics=4, gbps_per_nic=800, rdma=True),
                local_nvme_tb=16,
                frontend_gbps=160,
                max_nodes_per_pool=18,
                capacity_types=(CapacityType.CAPACITY_RESERVATION_GROUP, CapacityType.ON_DEMAND),
                price=PriceRange(low=72.0, high=130.0, estimate=True),
                kubernetes_accelerator=None,
                quota_family="standardNDISRGB300V6Family",
                sources=_sources(
                    gpu_model="002 §4.1 (4x NVIDIA Blackwell Ultra B300 on Grace: GB300)",
                    gpus_per_node="002 §4.1",
                    gpu_memory_gb="002 §4.1 (288 GB HBM3E)",
                    cpu_arch="002 §4.1; caveat 2 (ARM64 Grace)",
                    vcpus="002 §4.1 (128 vCPU)",
                    host_memory_gib="002 §4.1 (864 GB LPDDR, read as decimal GB: 804 GiB)",
                    gpu_architecture="002 §4.1 (Blackwell Ultra B300)",
                    nvlink_domain_gpus="002 §4.1 (18 VMs per rack = 72 GPUs, in-rack NVLink)",
                    fabric="002 §4.1 (800 Gb/s InfiniBand per GPU)",
                    local_nvme_tb="002 §4.1 (4x NVMe, 16 TB)",
                    frontend_gbps=f"learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-gb300-v6-series as quoted by a secondary source ({R} §1.4): 160 Gbps Ethernet, one NIC",
                    max_nodes_per_pool="002 §2.3 (18 VMs per rack max)",
                    capacity_types="002 §4.2 (quota approval, Capacity Reservation Group)",
                    price=f"ESTIMATE ({R} §1.4): no public price; between OCI GB300 (USD 18/GPU-h) and ND GB200 v6 (USD 108-114/h)",
                    quota_family=f"Azure SKU API name ({R} §1.4); 002 §4.2 calls it Standard NDGB300v6 Family",
                ),
            ),
            Accelerator(
                sku="a4x-maxgpu-4g-metal",
                cloud=Cloud.GCP,
                gpu_model="GB300",
                gpus_per_node=4,
                gpu_memory_gb=279,
                cpu_arch=CpuArch.ARM64,
                vcpus=144,
                host_memory_gib=894,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=72,
                fabric=Fabric(name="RoCEv2 (GPUDirect RDMA)", nics=8, gbps_per_nic=400, rdma=True),
                local_nvme_tb=12.9,
                frontend_gbps=400,
                max_nodes_per_pool=18,
                capacity_types=(CapacityType.RESERVATION,),
                price=PriceRange(low=72.0, high=100.0, estimate=True),
                kubernetes_accelerator="nvidia-gb300",
                quota_family=None,
                sources=_sources(
                    gpu_model="002 §5.1 (4x NVIDIA GB300 Grace Blackwell Ultra Superchip)",
                    gpus_per_node="002 §5.1",
                    gpu_memory_gb="cloud.google.com/compute/docs/gpus (1,116 GB per VM = 279 GB per GPU; 002 §5.1 implies 288)",
                    cpu_arch="002 §5.1; caveat 2 (ARM Neoverse V2)",
                    vcpus="cloud.google.com/compute/docs/gpus (144 vCPU, bare metal)",
                    host_memory_gib="cloud.google.com/compute/docs/gpus (960 GB instance memory, read as decimal GB: 894 GiB)",
                    gpu_architecture="002 §5.1 (GB300 Grace Blackwell Ultra)",
                    nvlink_domain_gpus="002 §5.1 (rack-scale GB300 NVL72, 72 GPUs)",
                    fabric="cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (8 MRDMA x 400 Gbps); 002 §5.1",
                    local_nvme_tb="cloud.google.com/compute/docs/gpus (12,000 GiB Titanium SSD; boot disk Hyperdisk only)",
                    frontend_gbps=f"cloud.google.com/compute/docs/gpus/gpu-network-bandwidth: 3,600 Gbps in all less the 3,200 Gbps of the four ConnectX-8 RDMA NICs ({R} §1.5, arithmetic)",
                    max_nodes_per_pool="002 §5.1, §5.2 (18 nodes per node pool)",
                    capacity_types="002 §5.1, §5.2 (reservation mandatory, sub-block path)",
                    price=f"ESTIMATE ({R} §1.5): not on the public price sheet; USD 18-25 per GPU-hour",
                    kubernetes_accelerator="002 §5.2 (--accelerator=type=nvidia-gb300)",
                ),
            ),
            Accelerator(
                sku="a4x-highgpu-4g",
                cloud=Cloud.GCP,
                gpu_model="GB200",
                gpus_per_node=4,
                gpu_memory_gb=186,
                cpu_arch=CpuArch.ARM64,
                vcpus=140,
                host_memory_gib=823,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=72,
                fabric=Fabric(name="RoCEv2 (GPUDirect RDMA)", nics=4, gbps_per_nic=400, rdma=True),
                local_nvme_tb=12.9,
                frontend_gbps=400,
                max_nodes_per_pool=18,
                capacity_types=(CapacityType.RESERVATION,),
                price=PriceRange(low=28.35, high=114.05, estimate=True),
                kubernetes_accelerator="nvidia-gb200",
                quota_family=None,
                sources=_sources(
                    gpu_model="000 (\"16 x GB200 on 4 x A4X VMs\"); cloud.google.com/compute/docs/accelerator-optimized-machines (A4X: NVIDIA GB200 Superchips)",
                    gpus_per_node="000 (16 GB200 on 4 VMs); cluster-toolkit examples/gke-a4x/gke-a4x.yaml (guest_accelerator nvidia-gb200, count: 4)",
                    gpu_memory_gb="cloud.google.com/compute/docs/accelerator-optimized-machines (A4X: B200 GPUs with 186 GB memory per GPU; the nameplate says 192)",
                    cpu_arch="cloud.google.com/compute/docs/accelerator-optimized-machines (NVIDIA Grace platform, Arm images only); cluster-toolkit examples/gke-a4x (target_architecture arm64, arm64 toleration)",
                    vcpus="cloud.google.com/compute/docs/accelerator-optimized-machines (A4X: up to 140 vCPUs; one machine type)",
                    host_memory_gib="cloud.google.com/compute/docs/accelerator-optimized-machines (884 GB, read as decimal GB: 823 GiB)",
                    gpu_architecture="GB200 is Blackwell (cloud.google.com/compute/docs/gpus/gpu-network-bandwidth: \"based on the NVIDIA Blackwell architecture\")",
                    nvlink_domain_gpus="000 (NVL72 domain); GKE docs ray-a4x (workload policy HIGH_THROUGHPUT, accelerator topology 1x72: 18 VMs x 4 GPUs)",
                    fabric="cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (A4X: 4 CX-7 NICs, 1,600 Gbps, 4-way rail-aligned, MRDMA VFs; "
                           "plus 2 Titanium NICs of 400 Gbps for everything else: 2,000 Gbps in all)",
                    local_nvme_tb="cloud.google.com/compute/docs/accelerator-optimized-machines (A4X Max and A4X come with 12,000 GiB of Local SSD)",
                    frontend_gbps="cloud.google.com/compute/docs/gpus/gpu-network-bandwidth: A4X's 2,000 Gbps in all less the 1,600 Gbps of its four CX-7 RDMA NICs (arithmetic): its two gVNICs",
                    max_nodes_per_pool="GKE docs ray-a4x (NODE_COUNT 18 on a 1x72 workload policy: one sub-block of 18 VMs)",
                    capacity_types="cloud.google.com/compute/docs (future reservations through the account team list a4x-highgpu-4g); "
                                   "cluster-toolkit examples/gke-a4x (SPECIFIC_RESERVATION, down to reservationBlocks/B)",
                    price=f"ESTIMATE: not on the public price sheet. Low: A4's 3-year commitment, 4 x USD 7.088 per GPU-hour "
                          f"({R} §1.6); high: Azure's list price for 4 x GB200 (ND GB200 v6, USD 114.05 per hour, {R} §1.4)",
                    kubernetes_accelerator="cluster-toolkit examples/gke-a4x (accelerator_type: nvidia-gb200); GKE docs ray-a4x "
                                           "(--accelerator type=nvidia-gb200,count=4)",
                ),
            ),
            Accelerator(
                sku="a4-highgpu-8g",
                cloud=Cloud.GCP,
                gpu_model="B200",
                gpus_per_node=8,
                gpu_memory_gb=180,
                cpu_arch=CpuArch.AMD64,
                vcpus=224,
                host_memory_gib=3695,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="RoCEv2 (GPUDirect RDMA)", nics=8, gbps_per_nic=400, rdma=True),
                local_nvme_tb=12.9,
                frontend_gbps=400,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.RESERVATION,),
                price=PriceRange(low=56.70, high=88.93, estimate=True),
                kubernetes_accelerator="nvidia-b200",
                quota_family=None,
                sources=_sources(
                    gpu_model="000 (A4 VM, NVIDIA B200)",
                    gpus_per_node="000 (nvidia.com/gpu: 8)",
                    gpu_memory_gb="002 §2.2 (B200 180GB)",
                    cpu_arch="000 (A4 is x86; the manifest runs lmsysorg/sglang)",
                    vcpus="cloud.google.com/compute/docs/gpus (224 vCPU); 000 requests 206",
                    host_memory_gib="cloud.google.com/compute/docs/gpus (3,968 GB, read as decimal GB: 3,695 GiB); 000 requests 1500Gi",
                    gpu_architecture="000 (B200: Blackwell)",
                    nvlink_domain_gpus="000 (NVLink inside the VM, RDMA between VMs)",
                    fabric="000 (8 RDMA NICs rdma-0..rdma-7, RoCEv2); gpu-network-bandwidth doc (8 x 400 Gbps CX-7)",
                    local_nvme_tb="cloud.google.com/compute/docs/gpus (12,000 GiB local SSD)",
                    frontend_gbps=f"cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (A4 and A3 Ultra): 2 gVNICs, 400 Gbps together ({R} §1.6)",
                    max_nodes_per_pool="no SKU limit",
                    capacity_types=f"cloud.google.com/compute/docs/gpus: reservation, Spot or Flex-start; no on-demand ({R} §1.6)",
                    price=f"ESTIMATE ({R} §1.6): 8 x USD 7.088-11.116 per GPU-hour (3-year to 1-year commitment)",
                    kubernetes_accelerator="000 (cloud.google.com/gke-accelerator: nvidia-b200)",
                ),
            ),
            Accelerator(
                sku="a3-ultragpu-8g",
                cloud=Cloud.GCP,
                gpu_model="H200",
                gpus_per_node=8,
                gpu_memory_gb=141,
                cpu_arch=CpuArch.AMD64,
                vcpus=224,
                host_memory_gib=2749,
                gpu_architecture=GpuArchitecture.HOPPER,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="RoCEv2 (GPUDirect RDMA)", nics=8, gbps_per_nic=400, rdma=True),
                local_nvme_tb=12.9,
                frontend_gbps=400,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.RESERVATION, CapacityType.ON_DEMAND),
                price=PriceRange(low=37.21, high=84.81, estimate=True),
                kubernetes_accelerator="nvidia-h200-141gb",
                quota_family=None,
                sources=_sources(
                    gpu_model="cloud.google.com/compute/docs/accelerator-optimized-machines#a3-ultra-vms",
                    gpus_per_node="cloud.google.com/compute/docs/accelerator-optimized-machines#a3-ultra-vms",
                    gpu_memory_gb="002 §2.2 (H200 141GB)",
                    cpu_arch="cloud.google.com/compute/docs/accelerator-optimized-machines (Intel Emerald Rapids)",
                    vcpus="cloud.google.com/compute/docs/accelerator-optimized-machines#a3-ultra-vms",
                    host_memory_gib="cloud.google.com/compute/docs/accelerator-optimized-machines#a3-ultra-vms (2,952 GB, read as decimal GB: 2,749 GiB)",
                    gpu_architecture="H200 is Hopper",
                    nvlink_domain_gpus="HGX H200 board: 8 GPUs on NVLink",
                    fabric="cloud.google.com/compute/docs/accelerator-optimized-machines#a3-ultra-vms (8x 400 Gbps RDMA)",
                    local_nvme_tb="cloud.google.com/compute/docs/gpus (12,000 GiB local SSD)",
                    frontend_gbps=f"cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (A4 and A3 Ultra): 2 gVNICs, 400 Gbps together ({R} §1.7)",
                    max_nodes_per_pool="no SKU limit",
                    capacity_types="reservations, or on demand where the zone has it",
                    price=f"ESTIMATE ({R} §1.7): USD 84.81 on demand, 8 x 4.651 per GPU-hour on a 3-year commitment",
                    kubernetes_accelerator="cloud.google.com/kubernetes-engine/docs/how-to/gpus",
                ),
            ),
            Accelerator(
                sku="ecs.ebmgn8v.48xlarge",
                cloud=Cloud.ALICLOUD,
                gpu_model="H20-class (96 GB)",
                gpus_per_node=8,
                gpu_memory_gb=96,
                cpu_arch=CpuArch.AMD64,
                vcpus=192,
                host_memory_gib=1024,
                gpu_architecture=GpuArchitecture.HOPPER,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="eRDMA", nics=1, gbps_per_nic=160, rdma=True, pods_lack_it=ERDMA_NOT_IN_PODS),
                local_nvme_tb=0,
                frontend_gbps=170,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.PRIVATE_POOL, CapacityType.LINGJUN, CapacityType.ON_DEMAND),
                price=PriceRange(low=25.0, high=45.0, estimate=True),
                kubernetes_accelerator=None,
                quota_family=None,
                sources=_sources(
                    gpu_model=f"Alibaba ECS GPU instance families doc ({R} §1.8): 96 GB HBM3, specs of an H20; not H200 as 002 §6.1 says",
                    gpus_per_node="002 §6.1 (8-GPU configuration with NVLink)",
                    gpu_memory_gb=f"Alibaba ECS GPU instance families doc ({R} §1.8; no 141 GB variant exists)",
                    cpu_arch="002 §2.3 (x86_64); Sapphire Rapids per the ECS doc",
                    vcpus="Alibaba ECS GPU instance families doc (192 vCPU, 1024 GiB)",
                    host_memory_gib="Alibaba ECS GPU instance families doc (1024 GiB)",
                    gpu_architecture="Alibaba ECS GPU instance families doc (H20-class: Hopper); vllm-project/recipes Kimi-K3.yaml hardware_overrides.hopper",
                    nvlink_domain_gpus="002 §6.1 (8-GPU supporting NVLink interconnect)",
                    fabric=f"Alibaba ECS GPU instance families doc ({R} §1.8): eRDMA up to 160 Gbit/s; not used by "
                           "the pods (ERDMA_NOT_IN_PODS)",
                    local_nvme_tb="Alibaba ECS GPU instance families doc: cloud disks only",
                    frontend_gbps=f"Alibaba ECS GPU instance families doc ({R} §1.8): baseline 170 Gbit/s (85 x 2)",
                    max_nodes_per_pool="002 §2.3 (varies by region)",
                    capacity_types="002 §6.1, §6.2 (Lingjun resources; sales contact); ECS private pools",
                    price=f"ESTIMATE ({R} §1.8): no public price; H20-class 8-GPU bare metal",
                ),
            ),
            Accelerator(
                sku="hgx-b300",
                cloud=Cloud.KUBERNETES,
                gpu_model="B300",
                gpus_per_node=8,
                gpu_memory_gb=288,
                cpu_arch=CpuArch.AMD64,
                vcpus=128,
                host_memory_gib=1862,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="ConnectX-8", nics=8, gbps_per_nic=800, rdma=True, pods_lack_it=EXISTING_CLUSTER_NICS),
                local_nvme_tb=0,
                frontend_gbps=100,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.EXISTING,),
                price=OWNED_HARDWARE,
                kubernetes_accelerator=None,
                quota_family=None,
                sources=_sources(
                    gpu_model="002 §2.3 (self-hosted 8x B300 HGX)",
                    gpus_per_node=DGX_B300,
                    gpu_memory_gb="002 §2.2 (B300 288GB)",
                    cpu_arch=DGX_B300,
                    vcpus=f"{DGX_B300}: 2 x 64 cores, counted without SMT (the pessimistic end; state "
                          "kubernetes.gpuNodes.vcpus for another HGX B300 system)",
                    host_memory_gib=f"{DGX_B300}: 2 TB read as decimal (1,862 GiB)",
                    gpu_architecture="002 §2.3 (B300: Blackwell Ultra)",
                    nvlink_domain_gpus="HGX B300 board: 8 GPUs on NVLink 5 (002 caveat 3: TP=8 inside one node)",
                    fabric=f"{DGX_B300}: 8 x ConnectX-8 800 Gb/s; not used by the pods (EXISTING_CLUSTER_NICS)",
                    local_nvme_tb=OWNED_LOCAL_NVME_SOURCE,
                    frontend_gbps=EXISTING_FRONTEND_SOURCE,
                    max_nodes_per_pool="no SKU limit",
                    capacity_types=OWNED_CAPACITY_SOURCE,
                    price=OWNED_PRICE_SOURCE,
                ),
            ),
            Accelerator(
                sku="gb300-nvl72",
                cloud=Cloud.KUBERNETES,
                gpu_model="GB300",
                gpus_per_node=4,
                gpu_memory_gb=279,
                cpu_arch=CpuArch.ARM64,
                vcpus=144,
                host_memory_gib=894,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=72,
                fabric=Fabric(name="ConnectX-8", nics=4, gbps_per_nic=800, rdma=True, pods_lack_it=EXISTING_CLUSTER_NICS),
                local_nvme_tb=0,
                frontend_gbps=100,
                max_nodes_per_pool=18,
                capacity_types=(CapacityType.EXISTING,),
                price=OWNED_HARDWARE,
                kubernetes_accelerator=None,
                quota_family=None,
                sources=_sources(
                    gpu_model="002 §2.3 (GB300 NVL72 rack: 18 compute trays of 4 Blackwell Ultra GPUs on 2 Grace CPUs)",
                    gpus_per_node="002 §4.1, §5.1 (4 GPUs per tray)",
                    gpu_memory_gb="cloud.google.com/compute/docs/gpus: the same bare-metal tray (a4x-maxgpu-4g-metal) "
                                  "exposes 279 GB per GPU, below the 288 GB nameplate; the pessimistic figure",
                    cpu_arch="002 caveat 2 (ARM64 Grace)",
                    vcpus="cloud.google.com/compute/docs/gpus (a4x-maxgpu-4g-metal, bare metal: 144 vCPU)",
                    host_memory_gib="cloud.google.com/compute/docs/gpus (bare-metal tray: 960 GB, read as decimal: 894 GiB)",
                    gpu_architecture="002 §5.1 (GB300 Grace Blackwell Ultra)",
                    nvlink_domain_gpus="002 §5.1 (rack-scale GB300 NVL72, 72 GPUs)",
                    fabric="002 §4.1 (800 Gb/s per GPU); not used by the pods (EXISTING_CLUSTER_NICS)",
                    local_nvme_tb=OWNED_LOCAL_NVME_SOURCE,
                    frontend_gbps=EXISTING_FRONTEND_SOURCE,
                    max_nodes_per_pool="002 §2.3 (18 trays per rack)",
                    capacity_types=OWNED_CAPACITY_SOURCE,
                    price=OWNED_PRICE_SOURCE,
                ),
            ),
            Accelerator(
                sku="hgx-b200",
                cloud=Cloud.KUBERNETES,
                gpu_model="B200",
                gpus_per_node=8,
                gpu_memory_gb=180,
                cpu_arch=CpuArch.AMD64,
                vcpus=112,
                host_memory_gib=1862,
                gpu_architecture=GpuArchitecture.BLACKWELL,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="ConnectX-7", nics=8, gbps_per_nic=400, rdma=True, pods_lack_it=EXISTING_CLUSTER_NICS),
                local_nvme_tb=0,
                frontend_gbps=100,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.EXISTING,),
                price=OWNED_HARDWARE,
                kubernetes_accelerator=None,
                quota_family=None,
                sources=_sources(
                    gpu_model=DGX_B200,
                    gpus_per_node=DGX_B200,
                    gpu_memory_gb="002 §2.2 (B200 180GB)",
                    cpu_arch=DGX_B200,
                    vcpus=f"{DGX_B200}: 2 x 56 cores, counted without SMT",
                    host_memory_gib=f"{DGX_B200}: 2 TB read as decimal (1,862 GiB)",
                    gpu_architecture="B200 is Blackwell",
                    nvlink_domain_gpus="HGX B200 board: 8 GPUs on NVLink 5",
                    fabric=f"{DGX_B200}: 8 x ConnectX-7 400 Gb/s; not used by the pods (EXISTING_CLUSTER_NICS)",
                    local_nvme_tb=OWNED_LOCAL_NVME_SOURCE,
                    frontend_gbps=EXISTING_FRONTEND_SOURCE,
                    max_nodes_per_pool="no SKU limit",
                    capacity_types=OWNED_CAPACITY_SOURCE,
                    price=OWNED_PRICE_SOURCE,
                ),
            ),
            Accelerator(
                sku="hgx-h200",
                cloud=Cloud.KUBERNETES,
                gpu_model="H200",
                gpus_per_node=8,
                gpu_memory_gb=141,
                cpu_arch=CpuArch.AMD64,
                vcpus=112,
                host_memory_gib=1862,
                gpu_architecture=GpuArchitecture.HOPPER,
                nvlink_domain_gpus=8,
                fabric=Fabric(name="ConnectX-7", nics=8, gbps_per_nic=400, rdma=True, pods_lack_it=EXISTING_CLUSTER_NICS),
                local_nvme_tb=0,
                frontend_gbps=100,
                max_nodes_per_pool=None,
                capacity_types=(CapacityType.EXISTING,),
                price=OWNED_HARDWARE,
                kubernetes_accelerator=None,
                quota_family=None,
                sources=_sources(
                    gpu_model=DGX_H200,
                    gpus_per_node=DGX_H200,
                    gpu_memory_gb="002 §2.2 (H200 141GB)",
                    cpu_arch=DGX_H200,
                    vcpus=f"{DGX_H200}: 2 x 56 cores, counted without SMT",
                    host_memory_gib=f"{DGX_H200}: 2 TB read as decimal (1,862 GiB)",
                    gpu_architecture="H200 is Hopper",
                    nvlink_domain_gpus="HGX H200 board: 8 GPUs on NVLink 4",
                    fabric=f"{DGX_H200}: 8 x ConnectX-7 400 Gb/s; not used by the pods (EXISTING_CLUSTER_NICS)",
                    local_nvme_tb=OWNED_LOCAL_NVME_SOURCE,
                    frontend_gbps=EXISTING_FRONTEND_SOURCE,
                    max_nodes_per_pool="no SKU limit",
                    capacity_types=OWNED_CAPACITY_SOURCE,
                    price=OWNED_PRICE_SOURCE,
                ),
            ),
        )
    }
)
"""Every GPU machine type k3infra can size and deploy, by SKU."""


def accelerators_of(cloud: Cloud) -> list[Accelerator]:
    """The machine types of one cloud, in catalog order."""
    return [a for a in ACCELERATORS.values() if a.cloud == cloud]

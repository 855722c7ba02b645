"""The arguments of :class:`k3infra.gcp.node_pool.GkeGpuNodePool`: what a caller may set and the default of each."""

from typing import Mapping, NotRequired, Optional, TypedDict

import pulumi

from ..catalog.gke import GpuNetworkMode
from .reservation import ReservationRef


class GkeGpuNodePoolArgs(TypedDict):
    """Arguments of :class:`GkeGpuNodePool`. Defaults come from the machine type (``k3infra.catalog.gke``)."""

    project: pulumi.Input[str]
    """Project of the cluster (and of the networks the pool adds)."""
    region: str
    """Region of the cluster: the workload policy and the extra subnets live there."""
    zone: str
    """Zone of the pool; the reservation must be in it."""
    cluster: pulumi.Input[str]
    """The cluster's name (pass ``GkeCluster.cluster_name`` so the pool waits for the cluster)."""
    cluster_location: pulumi.Input[str]
    """The cluster's location (its region for a regional cluster)."""
    pool_name: str
    """GKE node pool name (pods select it with ``cloud.google.com/gke-nodepool``)."""
    resource_prefix: str
    """Prefix of the Compute Engine names the pool creates (workload policy, networks); unique in the project."""
    machine_type: str
    """GPU machine type, e.g. ``a4x-maxgpu-4g-metal`` or ``a4-highgpu-8g``."""
    node_count: int
    """Nodes in the pool (the sizing's total)."""
    accelerator_type: NotRequired[str]
    """Guest accelerator type. Default: the catalog's, e.g. ``nvidia-gb300``."""
    accelerator_count: NotRequired[int]
    """GPUs per node. Default: the catalog's."""
    max_node_count: NotRequired[Optional[int]]
    """Most nodes one pool may hold. Default: the catalog's (18 for an NVL72 rack, 002 §5.2)."""
    gpu_driver_version: NotRequired[pulumi.Input[str]]
    """GPU driver GKE installs: DEFAULT, LATEST or INSTALLATION_DISABLED. Default: LATEST (002 §5.2)."""
    reservation: NotRequired[Optional[ReservationRef]]
    """Reservation to consume (SPECIFIC_RESERVATION). Default: none (on-demand capacity)."""
    check_reservation: NotRequired[bool]
    """Read the reservation while the program runs and fail when it cannot hold the pool. Default: true."""
    network_mode: NotRequired[GpuNetworkMode]
    """How the RDMA NICs are attached. Default: the machine type's."""
    rdma_nics: NotRequired[int]
    """RDMA NICs per node. Default: the machine type's (8)."""
    accelerator_topology: NotRequired[Optional[str]]
    """Compact placement over a workload policy with this accelerator topology (``1x72``). Default: the
    machine type's (A4X Max: 1x72; A4: none)."""
    boot_disk_type: NotRequired[str]
    """Boot disk type. Default: the machine type's (hyperdisk-balanced)."""
    boot_disk_size_gb: NotRequired[int]
    """Boot disk size. Default: 200 (the engine image is tens of GB)."""
    local_ssd_count: NotRequired[Optional[int]]
    """Local SSDs backing the nodes' ephemeral storage (the GCS FUSE file cache). Default: every SSD the machine
    type bundles, as the catalog states it (A4 32, A4X Max 4); None for a machine type the catalog does not
    know, whose pool then keeps ephemeral storage on the boot disk."""
    node_labels: NotRequired[Mapping[str, str]]
    """Extra node labels, added to the machine type's (DRANET on A4X Max). On a pool with the accelerator network
    profile they are set at creation only: GKE adds a label of its own there, so later label changes are ignored
    (recreate the pool, or ``gcloud container node-pools update --node-labels``)."""
    service_account: NotRequired[pulumi.Input[str]]
    """Email of the nodes' service account. Default: the project's default compute service account."""
    gvnic_cidr: NotRequired[str]
    """Range of the second gVNIC subnet (RDMA_MULTI_NIC). Default: 192.168.64.0/18."""
    rdma_cidr: NotRequired[str]
    """Range split into one subnet per RDMA NIC (RDMA_MULTI_NIC). Default: 192.168.128.0/18."""
    multi_node_nvlink: NotRequired[bool]
    """Install the NVIDIA DRA driver (ComputeDomains only, GKE values) so that a replica whose tensor parallelism
    spans nodes reaches them over NVLink. Default: true where the machine's NVLink domain spans nodes (A4X Max);
    set false for a layout that keeps tensor parallelism inside each node (TP=4 x PP=2)."""
    secure_boot: NotRequired[bool]
    """Boot the nodes with Secure Boot (only signed boot components and kernel modules load); integrity monitoring
    is always on. Set at creation: changing it replaces the pool. Default: true, as cluster-toolkit's gke-node-pool
    sets ``shielded_instance_config`` on every pool (``enable_secure_boot`` default true,
    ``enable_integrity_monitoring = true``), its bare-metal A4X Max pool (examples/gke-a4x-max-bm) included: the
    cluster-wide ``enable_shielded_nodes: false`` there is a different switch. Set false only for a node image
    that loads unsigned kernel modules."""
    grant_network_admin: NotRequired[bool]
    """Grant the project's GKE service agent ``roles/compute.networkAdmin``, which Google's A4X Max guide requires for
    the accelerator network profile. Default: true where the pool has the profile; set false when the project's
    IAM is managed elsewhere (the grant must then exist before the pool)."""

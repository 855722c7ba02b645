"""AckGpuNodePool: the ebmgn8v GPU node pool, sized by the sizing, on a private pool or a Lingjun node group."""

from enum import Enum
from typing import Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_alicloud as alicloud

from ..catalog.ack import LINGJUN_DRIVER_NOTE, ack_driver_problem
from ..serving.contract import GpuPool, Toleration
from .cluster import NODE_IMAGE, POOL_LABEL_KEY, node_pool_management
from ..component_args import reject_unknown

GPU_POOL_LABEL = "gpu"
"""Value of ``k3infra.io/pool`` on the GPU pool's nodes; serving selects them by it."""

DRIVER_LABEL = "ack.aliyun.com/nvidia-driver-version"
"""Node-pool label that makes ACK install a given NVIDIA driver (002 §6.3; docs/catalog-research.md §3.5), one of
the versions ACK lists (k3infra.catalog.ack); Lingjun nodes ignore it."""

GPU_TAINT_KEY = "nvidia.com/gpu"
"""Taint that keeps everything but the model server off the GPU nodes."""

PRIVATE_POOL_MATCH = "Target"
"""Launch only from the named private pool: fail rather than silently buy public capacity (cs.NodePool docs)."""

LINGJUN_POOL_TYPE = "lingjun"
"""cs.NodePool ``type`` of a Lingjun node pool (the default, ``ess``, is an ECS auto-scaling group)."""


class AckCapacity(Enum):
    """Where the GPU pool's machines come from."""

    PRIVATE_POOL = "private-pool"
    """An ECS private pool (capacity reservation or elasticity assurance, crp-/eap-), by id."""
    LINGJUN = "lingjun"
    """A Lingjun (EFLO) node group, bought through Alibaba Cloud sales."""
    ON_DEMAND = "on-demand"
    """Pay-as-you-go ECS stock in the zone; nothing holds it for this pool."""


class AckGpuNodePoolArgs(TypedDict):
    """Inputs of an AckGpuNodePool."""

    cluster_id: pulumi.Input[str]
    """The ACK cluster."""
    vswitch_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """vSwitches of the nodes (the GPU zone's)."""
    instance_type: str
    """ECS instance type, e.g. ``ecs.ebmgn8v.48xlarge`` (8 x 96 GB)."""
    node_count: int
    """Nodes in the pool: the sizing's (replicas x nodes per replica); 3 for Kimi K3 on 96 GB GPUs, never the
    seed's 2 (002 §6.1 assumed 141 GB GPUs)."""
    gpus_per_node: int
    """GPUs on each node (8 on ebmgn8v)."""
    key_name: pulumi.Input[str]
    """ECS key pair the nodes log in with (ACK node pools take a password or a key pair; a managed pool only a key
    pair): ``AckCluster``'s ``node_key_name``, whose private key nobody holds."""
    capacity: AckCapacity
    """Where the machines come from."""
    private_pool_id: NotRequired[Optional[pulumi.Input[str]]]
    """ECS private pool id (crp-... or eap-...). Required with capacity private-pool."""
    lingjun_cluster_id: NotRequired[Optional[pulumi.Input[str]]]
    """Lingjun (EFLO) cluster id. Required with capacity lingjun."""
    lingjun_node_group_id: NotRequired[Optional[pulumi.Input[str]]]
    """Lingjun (EFLO) node group id. Required with capacity lingjun."""
    gpu_driver_version: NotRequired[Optional[str]]
    """NVIDIA driver ACK installs, through the ``ack.aliyun.com/nvidia-driver-version`` label (002 §6.3): a version
    ACK lists for the label (k3infra.catalog.ack). Not with capacity lingjun, whose OS image carries the driver.
    Default: ACK's default driver."""
    system_disk_gb: NotRequired[int]
    """System disk (ESSD) size. Default: 200 GB (the engine image is ~20 GB)."""
    data_disk_gb: NotRequired[int]
    """Data disk (ESSD PL1) for the container runtime and local copies of the weights; ebmgn8v has no local NVMe.
    Default: 500 GB."""
    node_auto_upgrade: NotRequired[bool]
    """Managed node pool: kubelet/runtime upgrades and CVE fixes with node restarts, in the cluster's maintenance
    window (``AckCluster``'s ``maintenance_window``). Default: false: the nodes change only when you upgrade them."""
    tags: NotRequired[Optional[Mapping[str, str]]]
    """Tags on the node pool's instances. Default: none."""


class AckGpuNodePool(pulumi.ComponentResource):
    """The GPU node pool of 002 §6.3: ``node_count`` ebmgn8v-class nodes, tainted for the model server, labelled
    with the pinned driver version (ECS nodes only: a Lingjun node's OS image carries its driver), logging in with
    the cluster's key pair, drawing on an ECS private pool by id (``private_pool_options``, match criteria Target)
    or on a Lingjun node group (``type: lingjun``, ``eflo_node_group``).

    ``gpu_pool`` is what serving schedules on (contract.GpuPool); ``pool`` is the cs.NodePool the server waits
    for. A Lingjun node pool's ``vswitch_ids`` and the absence of ``instance_types`` follow the cs.NodePool schema;
    that ACK accepts a Lingjun node pool in an ACK Pro (not Lingjun) cluster is UNCONFIRMED."""

    node_pool_id: pulumi.Output[str]
    """The ACK node pool id (np...)."""

    def __init__(self, name: str, args: AckGpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:AckGpuNodePool", name, None, opts)
        reject_unknown(args, AckGpuNodePoolArgs)
        count = int(args["node_count"])
        gpus = int(args["gpus_per_node"])
        capacity = AckCapacity(args["capacity"])
        if count < 1:
            raise pulumi.InputPropertyError("node_count", "a GPU pool needs at least one node")
        if gpus < 1:
            raise pulumi.InputPropertyError("gpus_per_node", "a GPU node has at least one GPU")
        if capacity == AckCapacity.PRIVATE_POOL and not args.get("private_pool_id"):
            raise pulumi.InputPropertyError("private_pool_id", "capacity private-pool draws on a private pool by id")
        if capacity == AckCapacity.LINGJUN and not (args.get("lingjun_cluster_id") and args.get("lingjun_node_group_id")):
            raise pulumi.InputPropertyError("lingjun_node_group_id",
                                            "capacity lingjun joins an EFLO cluster and node group: give both ids")

        labels = [alicloud.cs.NodePoolLabelArgs(key=POOL_LABEL_KEY, value=GPU_POOL_LABEL)]
        driver = args.get("gpu_driver_version")
        if driver:
            why = LINGJUN_DRIVER_NOTE if capacity == AckCapacity.LINGJUN else ack_driver_problem(driver)
            if why:
                raise pulumi.InputPropertyError("gpu_driver_version", why)
            labels.append(alicloud.cs.NodePoolLabelArgs(key=DRIVER_LABEL, value=driver))
        taints = [alicloud.cs.NodePoolTaintArgs(key=GPU_TAINT_KEY, value="present", effect="NoSchedule")]

        private_pool = None
        eflo = None
        pool_type = None
        instance_types: Optional[list[str]] = [args["instance_type"]]
        if capacity == AckCapacity.PRIVATE_POOL:
            private_pool = alicloud.cs.NodePoolPrivatePoolOptionsArgs(
                private_pool_options_id=args.get("private_pool_id"),
                private_pool_options_match_criteria=PRIVATE_POOL_MATCH)
        elif capacity == AckCapacity.LINGJUN:
            pool_type = LINGJUN_POOL_TYPE
            eflo = alicloud.cs.NodePoolEfloNodeGroupArgs(cluster_id=args.get("lingjun_cluster_id"),
                                                         group_id=args.get("lingjun_node_group_id"))
            instance_types = None  # the node group's machines decide

        pool = alicloud.cs.NodePool(f"{name}-pool", alicloud.cs.NodePoolArgs(
            cluster_id=args["cluster_id"],
            node_pool_name=name,
            key_name=args["key_name"],
            type=pool_type,
            eflo_node_group=eflo,
            vswitch_ids=args["vswitch_ids"],
            instance_types=instance_types,
            desired_size=str(count),
            instance_charge_type="PostPaid",
            private_pool_options=private_pool,
            image_type=NODE_IMAGE,
            system_disk_category="cloud_essd",
            system_disk_size=int(args.get("system_disk_gb", 200)),
            data_disks=[alicloud.cs.NodePoolDataDiskArgs(category="cloud_essd", performance_level="PL1",
                                                         size=int(args.get("data_disk_gb", 500)))],
            labels=labels,
            taints=taints,
            management=node_pool_management(bool(args.get("node_auto_upgrade"))),
            tags=dict(args.get("tags") or {}),
        ), opts=pulumi.ResourceOptions(parent=self, custom_timeouts=pulumi.CustomTimeouts(create="60m")))

        self.pool = pool
        self.node_pool_id = pool.node_pool_id
        tolerations: list[Toleration] = [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
        self.gpu_pool: GpuPool = {
            "node_selector": {POOL_LABEL_KEY: GPU_POOL_LABEL},
            "tolerations": tolerations,
            "gpus_per_node": gpus,
            "node_count": count,
            "gpu_resource": "nvidia.com/gpu",
        }
        self.register_outputs({"node_pool_id": self.node_pool_id})

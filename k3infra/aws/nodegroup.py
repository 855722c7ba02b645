"""EksGpuNodeGroup: a managed node group of p6-b300 (or p5en) nodes on an EC2 Capacity Block."""

import base64
from enum import Enum
from typing import NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..catalog import ACCELERATORS
from ..serving.contract import GpuPool
from ..serving.gpu_addons import GPU_PRESENT_LABEL, nvidia_device_plugin
from ..serving.pods import NODE_SHARE, node_requests
from . import efa
from ..component_args import reject_unknown

GPU_TAINT_KEY = "nvidia.com/gpu"

POOL_LABEL = "k3infra.io/pool"

EFA_DEVICE_PLUGIN_CHART = ("https://aws.github.io/eks-charts", "aws-efa-k8s-device-plugin", "0.5.29")
"""(repository, chart, version): advertises ``vpc.amazonaws.com/efa`` (EKS docs device-management-efa)."""

#: NodeConfig for nodeadm (AL2023): the eight local NVMe disks become one RAID0 volume for containerd and
#: kubelet, so a ~20 GB engine image and any local weight copy land on 30 TB of NVMe, not the root volume.
NODEADM_LOCAL_STORAGE = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="K3INFRA"

--K3INFRA
Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: RAID0

--K3INFRA--
"""


class CapacityKind(str, Enum):
    """Where the node group's instances come from."""

    CAPACITY_BLOCK = "capacity-block"
    """An EC2 Capacity Block for ML (consumed by id, or bought from an offering)."""
    ON_DEMAND = "on-demand"
    """On-demand instances, without a reservation."""


class EksGpuNodeGroupArgs(TypedDict):
    """Arguments of EksGpuNodeGroup."""

    cluster_name: pulumi.Input[str]
    """Name of the EKS cluster."""
    node_role_arn: pulumi.Input[str]
    """IAM role of the nodes (EksCluster.node_role_arn)."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """Subnets in the capacity's availability zone only (EksCluster.capacity_subnet_ids)."""
    security_group_id: pulumi.Input[str]
    """Security group of every network interface; it must allow all traffic between its members for EFA
    (EksCluster.cluster_security_group_id)."""
    instance_type: str
    """EC2 instance type: p6-b300.48xlarge or p5en.48xlarge (they have an EFA layout)."""
    gpus_per_node: int
    """GPUs each node exposes as nvidia.com/gpu."""
    vcpus: NotRequired[int]
    """vCPUs of the instance type: the serving pod requests 85 % of them (``serving.pods.NODE_SHARE``), and as
    much of the catalog's host memory. Default: the catalog's figures for ``instance_type``."""
    node_count: int
    """Nodes the group runs."""
    capacity: CapacityKind
    """capacity-block (with one of the two fields below) or on-demand."""
    capacity_reservation_id: NotRequired[Optional[pulumi.Input[str]]]
    """The Capacity Block reservation (cr-...) to consume. Default: none (see the next field)."""
    capacity_block_offering_id: NotRequired[Optional[str]]
    """Buy this Capacity Block offering (cb-...) and consume it. Irreversible and non-refundable; `pulumi
    destroy` only forgets the reservation. Default: none; exactly one of the two is required with
    capacity-block."""
    efa_device_plugin: NotRequired[bool]
    """Install the EFA device plugin and have pods request every EFA device (needed when a replica spans
    nodes). Default: false (the interfaces exist; a single-node replica does not use them)."""
    root_volume_gib: NotRequired[int]
    """Root EBS volume per node, in GiB. Default: 512."""
    starts_later: NotRequired[bool]
    """The Capacity Block starts after this update: the group is created at 0 nodes and an Auto Scaling
    scheduled action on its ASG scales it to ``node_count`` at the block's start; the GPU pool says its
    capacity is pending, so ``pulumi up`` does not wait for the server. Default: false (the block is active:
    the group runs ``node_count`` nodes now)."""
    capacity_pending: NotRequired[Optional[str]]
    """Why the capacity may not be running when ``pulumi up`` ends (e.g. a block this update buys may start later
    in its window): the GPU pool says so and serving does not wait. Default: implied by ``starts_later``."""
    draining: NotRequired[bool]
    """The Capacity Block is in its last 40 minutes, where EKS has scaled the group to zero: keep it there.
    Default: false."""


def _checked(args: EksGpuNodeGroupArgs) -> tuple[CapacityKind, bool]:
    """The capacity kind and whether the block starts later; InputPropertyError where the arguments disagree."""
    instance_type = args["instance_type"]
    if instance_type not in efa.EFA_LAYOUTS:
        raise pulumi.InputPropertyError("instance_type", f"{instance_type} has no EFA layout here; "
                                        f"known: {', '.join(efa.EFA_LAYOUTS)}")
    if int(args["node_count"]) < 1:
        raise pulumi.InputPropertyError("node_count", "a GPU node group needs at least one node")
    capacity = CapacityKind(args["capacity"])
    reservation_id = args.get("capacity_reservation_id")
    offering_id = args.get("capacity_block_offering_id")
    if capacity == CapacityKind.CAPACITY_BLOCK and (reservation_id is None) == (offering_id is None):
        raise pulumi.InputPropertyError("capacity_reservation_id", "a Capacity Block node group takes exactly one "
                                        "of capacity_reservation_id (consume) and capacity_block_offering_id (buy)")
    if capacity == CapacityKind.ON_DEMAND and (reservation_id is not None or offering_id is not None):
        raise pulumi.InputPropertyError("capacity", "on-demand node groups take no Capacity Block")
    starts_later = bool(args.get("starts_later"))
    if starts_later and capacity != CapacityKind.CAPACITY_BLOCK:
        raise pulumi.InputPropertyError("starts_later", "only a Capacity Block starts later")
    return capacity, starts_later


def _gpu_pool(name: str, args: EksGpuNodeGroupArgs, starts_later: bool) -> GpuPool:
    """What serving needs to schedule on the group's nodes (the EFA extras are added where the plugin runs)."""
    node_count, gpus, instance_type = int(args["node_count"]), int(args["gpus_per_node"]), args["instance_type"]
    pool: GpuPool = {
        "node_selector": {POOL_LABEL: name},
        "tolerations": [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "gpus_per_node": gpus,
        "node_count": node_count,
        "gpu_resource": "nvidia.com/gpu",
    }
    machine = ACCELERATORS.get(instance_type)
    if machine is not None:
        pool["cpu_request"], pool["memory_request"] = node_requests(machine)
    if args.get("vcpus"):
        pool["cpu_request"] = str(int(int(args.get("vcpus") or 0) * NODE_SHARE))
    pending = args.get("capacity_pending") or (
        "the GPU nodes join when the Capacity Block starts" if starts_later else None)
    if pending:
        pool["capacity_pending"] = pending
    return pool


class EksGpuNodeGroup(pulumi.ComponentResource):
    """GPU nodes for the model server on an EC2 Capacity Block (002 §3.2 steps 2-3).

    A launch template with market type ``capacity-block`` that targets the reservation, one interface per
    network card (EFA wherever the card allows it: cards 1-16 ``efa-only`` on p6-b300, whose card 0 is
    ENA only), IMDSv2 with a hop limit of 2 and NVMe RAID0 local storage; a managed node group with
    capacity type ``CAPACITY_BLOCK``, the ``AL2023_x86_64_NVIDIA`` AMI, the ``nvidia.com/gpu`` NoSchedule
    taint, node auto repair and the ``MINIMAL`` update strategy (a block holds no spare instance to surge into);
    and the NVIDIA device plugin (plus the EFA device plugin when asked).

    Capacity windows as code (EKS User Guide, capacity-blocks-mng): before the block starts the group's desired
    size is 0 and a scheduled action scales it up at the start; while it runs the desired size is the node
    count, so a new block consumed by an existing group scales up on the next ``pulumi up``; in the last 40
    minutes EKS's own scale-down action has set it to 0, and so does k3infra.

    The Kubernetes provider comes from the options (``providers={"kubernetes": cluster.provider}``).
    """

    node_group_name: pulumi.Output[str]
    """Name of the managed node group."""
    launch_template_id: pulumi.Output[str]
    """The launch template."""
    capacity_reservation_id: Optional[pulumi.Output[str]]
    """The Capacity Block in use (cr-...), purchased or consumed; None on demand."""
    capacity_start: Optional[pulumi.Output[str]]
    """When the Capacity Block starts (RFC 3339)."""
    capacity_end: Optional[pulumi.Output[str]]
    """When the Capacity Block ends (RFC 3339): EKS scales the group to zero 40 minutes before."""
    scale_up_schedule: Optional[aws.autoscaling.Schedule]
    """The scheduled action that scales the group up when its capacity starts (only before the start)."""

    def __init__(self, name: str, args: EksGpuNodeGroupArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:EksGpuNodeGroup", name, None, opts)
        reject_unknown(args, EksGpuNodeGroupArgs)
        capacity, starts_later = _checked(args)
        instance_type, node_count = args["instance_type"], int(args["node_count"])
        self._capacity_block(name, args.get("capacity_block_offering_id"), args.get("capacity_reservation_id"))
        lt = self._launch_template(name, args)
        group = self._node_group(name, args, lt, capacity, starts_later)
        self.scale_up_schedule = None
        if starts_later:
            assert self.capacity_start is not None
            asg = group.resources.apply(lambda rs: (rs[0].autoscaling_groups or [])[0].name or "")
            self.scale_up_schedule = aws.autoscaling.Schedule(
                f"{name}-scale-up",
                autoscaling_group_name=asg,
                scheduled_action_name="k3infra-scale-up-at-capacity-start",
                start_time=self.capacity_start,
                desired_capacity=node_count,
                min_size=-1,  # -1: unchanged (min 0, max node_count stay the node group's)
                max_size=-1,
                opts=pulumi.ResourceOptions(parent=self),
            )
        plugins = self._device_plugins(name, args)
        pool = _gpu_pool(name, args, starts_later)
        if args.get("efa_device_plugin"):
            pool["extra_resources"] = {"vpc.amazonaws.com/efa": str(efa.EFA_LAYOUTS[instance_type].efa_devices)}
            pool["env"] = {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}
            # EFA registers memory for RDMA (libfabric), which needs IPC_LOCK in the engine container.
            pool["capabilities"] = ["IPC_LOCK"]
        self.pool = pool
        """What serving needs to schedule on these nodes."""
        self.node_group = group
        """The managed node group."""
        self.pool_resources: list[pulumi.Resource] = [group, *plugins]
        """What must exist before a GPU pod can schedule: the node group and its device plugins."""
        self.node_group_name = group.node_group_name
        self.launch_template_id = lt.id
        self.register_outputs({
            "node_group_name": self.node_group_name,
            "launch_template_id": self.launch_template_id,
            "capacity_reservation_id": self.capacity_reservation_id,
            "capacity_start": self.capacity_start,
            "capacity_end": self.capacity_end,
        })

    def _capacity_block(self, name: str, offering_id: pulumi.Input[str] | None,
                        reservation_id: pulumi.Input[str] | None) -> None:
        """The Capacity Block bought (``offering_id``) or consumed (``reservation_id``), its start and end; None
        for each on demand."""
        self.capacity_reservation_id = None
        self.capacity_start = None
        self.capacity_end = None
        if offering_id is not None:
            block = aws.ec2.CapacityBlockReservation(
                f"{name}-capacity-block",
                capacity_block_offering_id=offering_id,
                instance_platform="Linux/UNIX",
                # The purchase cannot be undone: destroy only removes it from the state.
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
            )
            self.capacity_reservation_id = block.id
            self.capacity_start = block.start_date
            self.capacity_end = block.end_date
        elif reservation_id is not None:
            found = aws.ec2.get_capacity_block_reservation_output(id=reservation_id, opts=pulumi.InvokeOptions(parent=self))
            self.capacity_reservation_id = pulumi.Output.from_input(reservation_id)
            self.capacity_start = found.start_date
            self.capacity_end = found.end_date

    def _launch_template(self, name: str, args: EksGpuNodeGroupArgs) -> aws.ec2.LaunchTemplate:
        """The launch template: the block's market options, one interface per network card (EFA where the card
        allows it), IMDSv2 with a hop limit of 2, the root volume and the NVMe RAID0 local storage."""
        instance_type = args["instance_type"]
        child = pulumi.ResourceOptions(parent=self)
        market = capacity_spec = None
        if self.capacity_reservation_id is not None:
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
            capacity_spec = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=self.capacity_reservation_id))

        interfaces = [
            aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                device_index=i.device_index,
                network_card_index=i.network_card_index,
                interface_type=i.interface_type,
                security_groups=[args["security_group_id"]],
                delete_on_termination="true",
            )
            for i in efa.interfaces(instance_type)
        ]
        return aws.ec2.LaunchTemplate(
            f"{name}-lt",
            instance_type=instance_type,
            instance_market_options=market,
            capacity_reservation_specification=capacity_spec,
            network_interfaces=interfaces,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=2),
            block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name="/dev/xvda",
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=args.get("root_volume_gib", 512), volume_type="gp3", encrypted="true",
                    delete_on_termination="true"))],
            user_data=base64.b64encode(NODEADM_LOCAL_STORAGE.encode()).decode(),
            update_default_version=True,
            opts=child,
        )

    def _node_group(self, name: str, args: EksGpuNodeGroupArgs, lt: aws.ec2.LaunchTemplate, capacity: CapacityKind,
                    starts_later: bool) -> aws.eks.NodeGroup:
        """The managed node group on the launch template: tainted, repaired, MINIMAL updates on a block, at zero
        until a later block starts or while draining."""
        instance_type, node_count = args["instance_type"], int(args["node_count"])
        child = pulumi.ResourceOptions(parent=self)
        labels = {POOL_LABEL: name, GPU_PRESENT_LABEL: "true", "k3infra.io/instance-type": instance_type}
        desired = 0 if starts_later or args.get("draining") else node_count
        block = capacity == CapacityKind.CAPACITY_BLOCK
        return aws.eks.NodeGroup(
            f"{name}-nodes",
            cluster_name=args["cluster_name"],
            node_role_arn=args["node_role_arn"],
            subnet_ids=args["subnet_ids"],
            ami_type="AL2023_x86_64_NVIDIA",
            capacity_type="CAPACITY_BLOCK" if block else "ON_DEMAND",
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=lt.id, version=lt.latest_version.apply(str)),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(desired_size=desired, min_size=0, max_size=node_count),
            # A launch template change replaces nodes. The default strategy launches the new instance first, which a
            # block (all of its instances in use) cannot do; MINIMAL terminates first ("useful ... with hardware
            # accelerators such as GPUs", EKS API NodegroupUpdateConfig.updateStrategy).
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1,
                                                            update_strategy="MINIMAL" if block else None),
            labels=labels,
            taints=[aws.eks.NodeGroupTaintArgs(key=GPU_TAINT_KEY, value="true", effect="NO_SCHEDULE")],
            # With the eks-node-monitoring-agent add-on (EksCluster) repair also reacts to AcceleratedHardwareReady.
            node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True),
            opts=child,
        )

    def _device_plugins(self, name: str, args: EksGpuNodeGroupArgs) -> list[pulumi.Resource]:
        """The NVIDIA device plugin, and the EFA device plugin when asked."""
        child = pulumi.ResourceOptions(parent=self)
        gpu_toleration = {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
        # The chart's default affinity selects nodes labelled nvidia.com/gpu.present=true (_node_group sets it).
        nvidia_plugin = nvidia_device_plugin(f"{name}-nvidia-device-plugin", feature_discovery=False, opts=child,
                                             tolerations=[{"key": GPU_TAINT_KEY, "operator": "Exists"}])
        plugins: list[pulumi.Resource] = [nvidia_plugin]
        if args.get("efa_device_plugin"):
            repo, chart, version = EFA_DEVICE_PLUGIN_CHART
            plugins.append(k8s.helm.v4.Chart(
                f"{name}-efa-device-plugin", chart=chart, version=version,
                repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=repo), namespace="kube-system",
                values={"tolerations": [gpu_toleration], "nodeSelector": {POOL_LABEL: name}},
                opts=child,
            ))
        return plugins

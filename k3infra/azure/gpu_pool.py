"""AksGpuNodePool: a user-mode AKS pool of GPU VMs in one zone, on a Capacity Reservation Group, with the node
software that gets its devices into pods.

The group is either referenced by id (the default: it exists and bills already) or, only when the caller says
so, created here together with its reservation (both bill from creation, 002 §4.2 and §4.6). The cluster's
user-assigned identity gets Contributor on the group's resource group, as AKS requires for the association, and
the pool waits for that grant to propagate: "It can take up to 60 minutes for the role assignment to propagate"
(learn.microsoft.com aks/use-capacity-reservation-groups). An AgentPool that fails its first create is left in
Azure, and the next `pulumi up` cannot create it again over the existing one, so waiting beats retrying here.

``nvidia.com/gpu`` is advertised by the NVIDIA device plugin chart this pool installs. With ``gpuProfile.driver:
Install`` and the managed GPU experience off, AKS installs the driver only: its node bootstrap stops the device
plugin the GB image bakes (Azure/AgentBaker ``cse_config.sh`` ``configureManagedGPUExperience``), and "no
nvidia.com/gpu resource is advertised until you deploy a device plugin" (MicrosoftDocs/azure-aks-docs
``aks-managed-gpu-nodes.md``, driver-only profile). The managed experience (``gpuProfile.nvidia.managementMode:
Managed``) is a preview behind the ``ManagedGPUExperiencePreview`` subscription feature and absent from the API
version the Azure Native SDK uses; the GPU Operator needs ``gpuProfile.driver: None``, on which AKS removes the
driver its image bakes (AgentBaker ``cleanUpPrebakedGPUDriver``) and supports none of the GPU stack. So the pool
keeps AKS's driver and adds the plugin, as the EKS pool does (the "self-managed GPU setup" of ``use-nvidia-gpu.md``).

That driver-only profile is AKS's default: ``aks-managed-gpu-nodes.md`` says "managementMode ... The default is
`Unmanaged`" and "If you don't pass `--enable-managed-gpu` or `--gpu-driver`, AKS applies the Driver only profile"
(one table cell, "(or neither flag)" beside the full managed stack, says otherwise). AgentBaker turns the managed stack
on only when the node's bootstrap configuration asks for it (``EnableManagedGPU``, from a ``Managed`` profile this pool
cannot send) or the VM carries the ``EnableManagedGPUExperience`` tag, which the pool refuses. Should a node come up
managed anyway, it carries ``MANAGED_GPU_LABEL`` and the pool's device plugin (and k3infra's DCGM exporter) stay off
it: one device plugin and one DCGM per node either way.

On an NVL72 machine (ND GB300 v6) it also installs GPU feature discovery (the ``nvidia.com/gpu.clique`` label a
replica's pods share), the NVIDIA DRA driver for ComputeDomains, and DRANET for the InfiniBand NICs
(kubernetes-sigs/dranet ``examples/azure_aks_examples/gb300``), and hands serving the claims.
"""

import re
from enum import Enum
from typing import Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumiverse_time as time
from pulumi_azure_native import compute
from pulumi_azure_native import containerservice as aks
from pulumi_azure_native import resources

from ..catalog import ACCELERATORS
from ..serving import dra, gpu_addons
from ..serving.contract import GpuPool, Toleration
from . import roles
from ..component_args import reject_unknown
from .capacity import CapacityGroupError, group_problems, parse_group_id

GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT = f"{GPU_TAINT_KEY}=present:NoSchedule"
"""The taint 002 §4.2 puts on the GB300 pool (``--node-taints nvidia.com/gpu=present:NoSchedule``)."""

ROLE_PROPAGATION_MINUTES = 60
"""How long a role assignment can take to propagate before AKS can use it (aks/use-capacity-reservation-groups:
"up to 60 minutes"): the default wait between the reservation-group grant and the pool."""

GPU_PRESENT_LABEL = gpu_addons.GPU_PRESENT_LABEL
"""Node label the device plugin chart's default affinity selects (``"true"``), as the EKS pool sets it."""

MANAGED_GPU_LABEL = "kubernetes.azure.com/dcgm-exporter"
"""The label (``enabled``) AKS's node bootstrap puts on a node where it runs the managed GPU stack: its own device
plugin, DCGM host engine and DCGM exporter as systemd services (Azure/AgentBaker ``cse_config.sh``
``configureManagedGPUExperience``; MicrosoftDocs/azure-aks-docs ``aks-managed-gpu-nodes.md``). k3infra's device
plugin and DCGM exporter stay off such a node, so it never runs two of either."""

MANAGED_GPU_TAG = "EnableManagedGPUExperience"
"""The VM tag by which AKS's node bootstrap turns the managed GPU stack on whatever the pool's GPU profile says
(AgentBaker ``cse_main.sh`` ``should_enable_managed_gpu_experience``: a tag whose name contains it, in any case, with a
value containing ``true``). The pool refuses it: this pool installs its own device plugin."""

CLIQUE_LABEL = "nvidia.com/gpu.clique"
"""GPU feature discovery's label of a node's NVLink partition (``<cluster uuid>.<clique id>``,
NVIDIA/k8s-device-plugin ``internal/lm/imex.go``): the pods of a replica share one value."""

AKS_NVIDIA_DRIVER_ROOT = "/"
"""AKS installs the NVIDIA driver on the host (the GB image bakes it). Which version is UNCONFIRMED: AgentBaker's
``gb-mai-bom.json`` (580.159.04) was first committed after the frozen GB image ``202602.19.0`` was built, so
nothing here states or relies on it; the engine scripts read the loaded driver on the node (docs/azure.md)."""

OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
"""Where the GPU Operator's driver container puts the driver (NVIDIA DRA driver chart ``values.yaml``)."""

RDMA_DEVICE_CLASS = "dranet-rdma"
"""DeviceClass of DRANET's RDMA devices that the pool creates (AKS has no managed DRANET to provide one)."""

INTERCONNECT_SUBGROUP_ATTRIBUTE = 'device.attributes["azure.dra.net"]["interconnectSubgroupId"]'
"""DRANET 1.4.0's device attribute from IMDS ``compute/interconnectSubgroupId``: VMs of one subgroup (one
InterconnectBlock) share one InfiniBand fabric (kubernetes-sigs/dranet ``pkg/cloudprovider/azure/azure.go``,
``examples/azure_aks_examples/README.md``, the CEL selector of the ``ib-same-fabric`` claim template)."""

_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

NVL72_PLACEMENT_ADVICE = (
    "ND GB300 v6 VMs share an NVLink domain and an InfiniBand fabric only inside one rack, an InterconnectBlock of 18 "
    "VMs, and AKS places a pool's VMs without regard to it (VMs in different placement groups cannot even reach each "
    "other over InfiniBand: kubernetes-sigs/dranet examples/azure_aks_examples/gb300). Ask your Azure account team to "
    "place the pool's VMs in one interconnect group (Microsoft.Network/interconnectGroups; the AKS API has no field "
    "for it), set azure.interconnectSubgroupId to its subgroup so the RDMA claims stay on that fabric, and recreate "
    "the pool's nodes (docs/azure.md, \"One NVLink domain per replica\").")
"""What the placement check says when a pool's VMs report different ``nvidia.com/gpu.clique`` values."""

_POOL_NAME = re.compile(r"[a-z][a-z0-9]{0,11}")
_IDENTITY_ID = re.compile(r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.ManagedIdentity/"
                          r"userAssignedIdentities/[^/]+", re.IGNORECASE)


class GpuDriver(str, Enum):
    """What AKS installs on the GPU nodes (the API's ``gpuProfile.driver``)."""

    INSTALL = "Install"
    """AKS installs the NVIDIA driver (002 §4.2 ``--skip-gpu-driver-install false``); the pool adds the device plugin."""
    NONE = "None"
    """Nothing: bring the NVIDIA GPU Operator (driver, device plugin, feature discovery); the pool adds neither."""


class ClusterIdentity(TypedDict):
    """The cluster's user-assigned control-plane identity (``AksCluster.identity_id`` / ``identity_principal_id``)."""

    resource_id: pulumi.Input[str]
    """Resource id of a user-assigned identity (``.../Microsoft.ManagedIdentity/userAssignedIdentities/NAME``)."""
    principal_id: pulumi.Input[str]
    """Its principal (object) id: the role assignment on the reservation group's resource group names it."""


class AksGpuNodePoolArgs(TypedDict):
    """Arguments of :class:`AksGpuNodePool`."""

    resource_group_name: pulumi.Input[str]
    """The cluster's resource group."""
    cluster_name: pulumi.Input[str]
    """The AKS cluster the pool joins."""
    location: pulumi.Input[str]
    """The cluster's region; an existing reservation group must be in it."""
    cluster_identity: ClusterIdentity
    """The cluster's user-assigned identity; required: a reservation group association needs one."""
    vm_size: str
    """GPU VM size, e.g. ``Standard_ND128isr_GB300_v6``."""
    node_count: int
    """Nodes in the pool (from the sizing)."""
    zone: str
    """Availability zone of the pool (``1``, ``2`` or ``3``); the reservation must hold capacity there."""
    gpus_per_node: int
    """GPUs each node exposes (what serving requests per pod)."""
    agent_pool_name: NotRequired[Optional[str]]
    """AKS pool name (1-12 lowercase letters and digits, starting with a letter); nodes carry it in the
    ``agentpool`` label serving selects on. Default: ``gpupool``."""
    gpu_driver: NotRequired[Optional[GpuDriver]]
    """GPU driver installation. Default: Install."""
    capacity_reservation_group_id: NotRequired[Optional[pulumi.Input[str]]]
    """Id of an existing Capacity Reservation Group the pool joins. When a plain string, the group is read at
    preview and must be in ``location``, hold ``zone`` and contain a reservation. Default: none."""
    verify_capacity_reservation_group: NotRequired[Optional[bool]]
    """Read an existing group at preview and check its region, zone and reservations. Turn off only for a group
    shared from a subscription the provider cannot read. Default: true."""
    create_capacity_reservation: NotRequired[Optional[bool]]
    """Create a Capacity Reservation Group and a reservation of ``node_count`` x ``vm_size`` in ``zone`` (in a
    resource group of their own). They bill from creation until deleted. Default: false."""
    capacity_resource_group_name: NotRequired[Optional[str]]
    """Resource group for a created reservation group. Default: ``<name>-capacity``."""
    role_propagation_minutes: NotRequired[Optional[int]]
    """Minutes the pool waits after the Contributor grant on the reservation group's resource group (a
    ``time:Sleep`` between them, created again only when the identity or the scope changes, so only the first
    `pulumi up` waits). 0 creates no wait: then the grant must have propagated before the pool is created (create
    it first with `pulumi up --target` on the grant, wait, then run `pulumi up`). Default: 60 (AKS: "up to 60
    minutes")."""
    node_labels: NotRequired[Optional[Mapping[str, pulumi.Input[str]]]]
    """Extra node labels. Default: none."""
    tags: NotRequired[Optional[Mapping[str, pulumi.Input[str]]]]
    """Tags on every Azure resource the component creates; ``EnableManagedGPUExperience`` is refused (it would turn
    AKS's managed GPU stack on beside the pool's own device plugin). Default: none."""
    multi_node_nvlink: NotRequired[Optional[bool]]
    """Install the NVIDIA DRA driver (ComputeDomains) so that a replica whose tensor parallelism spans nodes reaches
    them over NVLink. Default: true where the VM size's NVLink domain spans VMs (ND GB300 v6); set false for a
    layout that keeps tensor parallelism inside each VM (TP=4 x PP=2)."""
    rdma_nics: NotRequired[Optional[int]]
    """InfiniBand NICs per VM that pods claim through DRANET. Default: the catalog's (ND GB300 v6: 4); 0 installs
    no DRANET."""
    interconnect_subgroup_id: NotRequired[Optional[str]]
    """The InterconnectBlock's subgroup id (a GUID; DRANET publishes it from IMDS as ``azure.dra.net/
    interconnectSubgroupId``): every RDMA NIC a server pod claims must be in it, so a replica's pods schedule only
    on VMs that share one InfiniBand fabric (dranet's ``ib-same-fabric`` template). Default: none (any NIC)."""


def _rdma_nics(args: AksGpuNodePoolArgs) -> int:
    """The InfiniBand NICs each pod claims: as given, else the VM size's (the catalog's fabric)."""
    nics = args.get("rdma_nics")
    if nics is None:
        accel = ACCELERATORS.get(args["vm_size"])
        nics = accel.fabric.nics if accel and accel.fabric.rdma else 0
    return int(nics)


def _require_user_assigned(identity: object) -> None:
    """The pool is built only against a user-assigned cluster identity: a system-assigned one cannot be given."""
    if not isinstance(identity, dict) or not identity.get("principal_id") or not identity.get("resource_id"):
        raise pulumi.InputPropertyError("cluster_identity", "the cluster's user-assigned identity (resource_id and "
                                        "principal_id) is required: a capacity reservation group association does "
                                        "not work with a system-assigned identity")
    rid = identity["resource_id"]
    if isinstance(rid, str) and not _IDENTITY_ID.fullmatch(rid):
        raise pulumi.InputPropertyError("cluster_identity.resource_id", f"{rid!r} is not a user-assigned identity "
                                        "(.../Microsoft.ManagedIdentity/userAssignedIdentities/NAME): a system-"
                                        "assigned identity cannot use a capacity reservation group")


class AksGpuNodePool(pulumi.ComponentResource):
    """A GPU agent pool: ``User`` mode, fixed size, one zone, the GPU taint, on a Capacity Reservation Group."""

    agent_pool_name: pulumi.Output[str]
    """The pool name (the ``agentpool`` node label)."""
    capacity_reservation_group_id: Optional[pulumi.Output[str]]
    """The reservation group the pool draws on (None without one)."""

    def __init__(self, name: str, args: AksGpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        """Give it the cluster's Kubernetes provider (``providers={"kubernetes": cluster.provider}``): it installs
        the device plugin (and on NVL72 machines the DRA driver and DRANET) with it."""
        super().__init__("k3infra:index:AksGpuNodePool", name, None, opts)
        reject_unknown(args, AksGpuNodePoolArgs)
        _require_user_assigned(args.get("cluster_identity"))
        tags = dict(args.get("tags") or {})
        pool_name = args.get("agent_pool_name") or "gpupool"
        node_count = int(args["node_count"])
        zone = str(args["zone"])
        existing = args.get("capacity_reservation_group_id")
        create = bool(args.get("create_capacity_reservation"))
        identity = args.get("cluster_identity")
        given_wait = args.get("role_propagation_minutes")
        wait_minutes = ROLE_PROPAGATION_MINUTES if given_wait is None else int(given_wait)
        self._validate(pool_name, node_count, zone, existing, create, tags)
        self._validate_subgroup(args)
        if not 0 <= wait_minutes <= 24 * 60:
            raise pulumi.InputPropertyError("role_propagation_minutes", f"{wait_minutes}: 0 (no wait) to 1440 minutes")
        assert identity is not None
        gated, group_id, scope = self._capacity(name, args)
        self.role_propagation: Optional[time.Sleep] = None
        """The wait between the reservation-group grant and the pool (None without a group or with 0 minutes)."""
        if scope is not None:
            gated += self._reservation_group_access(name, identity, scope, wait_minutes)
        driver = args.get("gpu_driver") or GpuDriver.INSTALL
        pool = self._agent_pool(name, args, driver, group_id, gated)
        self.agent_pool = pool
        """The AKS agent pool resource."""
        self.gpu_pool: GpuPool = GpuPool(
            node_selector={"agentpool": pool_name},
            tolerations=[Toleration(key=GPU_TAINT_KEY, operator="Exists", effect="NoSchedule")],
            gpus_per_node=int(args["gpus_per_node"]),
            node_count=node_count,
            gpu_resource="nvidia.com/gpu",
            shm_size="64Gi",
        )
        """What serving needs to place pods on the pool."""
        self.node_software = self._node_software(name, args, driver)
        """The Helm charts and DeviceClass that get the devices into pods (installed in the cluster)."""
        self.resources: Sequence[pulumi.Resource] = [*gated, pool, *self.node_software]
        """What the server must wait for (reservation, role assignment, pool, device plugin, DRA drivers)."""
        self.agent_pool_name = pulumi.Output.from_input(pool_name)
        self.capacity_reservation_group_id = group_id
        self.register_outputs({"agent_pool_name": self.agent_pool_name,
                               "capacity_reservation_group_id": self.capacity_reservation_group_id})

    def _capacity(self, name: str, args: AksGpuNodePoolArgs) -> tuple[
            list[pulumi.Resource], Optional[pulumi.Output[str]], Optional[pulumi.Input[str]]]:
        """The Capacity Reservation Group the pool draws on: created with its reservation (in a resource group of its
        own) or an existing one, checked; what the pool waits for, the group's id, and the scope of the identity's
        grant (None without a group)."""
        tags = dict(args.get("tags") or {})
        node_count, zone = int(args["node_count"]), str(args["zone"])
        existing = args.get("capacity_reservation_group_id")
        child = pulumi.ResourceOptions(parent=self)
        if args.get("create_capacity_reservation"):
            cap_rg = resources.ResourceGroup(
                f"{name}-capacity-rg",
                resources.ResourceGroupArgs(
                    resource_group_name=args.get("capacity_resource_group_name") or f"{name}-capacity",
                    location=args["location"], tags=tags),
                opts=child,
            )
            group = compute.CapacityReservationGroup(
                f"{name}-crg",
                compute.CapacityReservationGroupArgs(
                    resource_group_name=cap_rg.name, location=args["location"], zones=[zone], tags=tags),
                opts=child,
            )
            reservation = compute.CapacityReservation(
                f"{name}-reservation",
                compute.CapacityReservationArgs(
                    resource_group_name=cap_rg.name,
                    capacity_reservation_group_name=group.name,
                    location=args["location"],
                    sku=compute.SkuArgs(name=args["vm_size"], capacity=node_count),
                    zones=[zone],
                    tags=tags,
                ),
                opts=child,
            )
            return [reservation], group.id, cap_rg.id
        if existing is not None:
            verify = args.get("verify_capacity_reservation_group") is not False
            group_id, scope = self._existing_group(existing, args["location"], zone, verify)
            return [], group_id, scope
        return [], None, None

    def _reservation_group_access(self, name: str, identity: ClusterIdentity, scope: pulumi.Input[str],
                                  wait_minutes: int) -> list[pulumi.Resource]:
        """The cluster identity's grant on the group's scope, and the wait for it to propagate."""
        child = pulumi.ResourceOptions(parent=self)
        out: list[pulumi.Resource] = []
        grant = roles.assign(
            f"{name}-crg-access",
            role=roles.BuiltInRole.CONTRIBUTOR,
            principal_id=identity["principal_id"],
            scope=scope,
            description="AKS cluster identity: associate GPU pools with the capacity reservation group",
            opts=child,
        )
        out.append(grant)
        if wait_minutes:
            self.role_propagation = time.Sleep(
                f"{name}-crg-access-propagation",
                time.SleepArgs(
                    create_duration=f"{wait_minutes}m",
                    # A new identity or scope is a new grant: wait again. Nothing else re-creates the wait.
                    triggers={"principal_id": identity["principal_id"], "scope": scope},
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[grant]),
            )
            out.append(self.role_propagation)
        return out

    def _agent_pool(self, name: str, args: AksGpuNodePoolArgs, driver: GpuDriver,
                    group_id: Optional[pulumi.Output[str]], gated: list[pulumi.Resource]) -> aks.AgentPool:
        """The User pool: fixed size, one zone, the GPU taint, on the group, upgraded in place."""
        tags = dict(args.get("tags") or {})
        pool_name = args.get("agent_pool_name") or "gpupool"
        node_count, zone = int(args["node_count"]), str(args["zone"])
        labels: dict[str, pulumi.Input[str]] = {GPU_PRESENT_LABEL: "true"} if driver == GpuDriver.INSTALL else {}
        labels.update(args.get("node_labels") or {})
        return aks.AgentPool(
            f"{name}-pool",
            resource_group_name=args["resource_group_name"],
            resource_name_=args["cluster_name"],
            agent_pool_name=pool_name,
            mode=aks.AgentPoolMode.USER,
            vm_size=args["vm_size"],
            count=node_count,
            enable_auto_scaling=False,
            availability_zones=[zone],
            capacity_reservation_group_id=group_id,
            node_taints=[GPU_TAINT],
            node_labels=labels or None,
            gpu_profile=aks.GPUProfileArgs(driver=aks.GPUDriver(driver.value)),
            os_type=aks.OSType.LINUX,
            # Ubuntu 24.04 from Kubernetes 1.35 (config validation requires it for GB VM sizes, whose node image
            # exists for arm64 Ubuntu 24.04 only). Not the versioned Ubuntu2404: the API version of the Azure Native
            # SDK (2025-09-01) does not list it, and it blocks upgrades past 1.38 (upgrade-os-version.md).
            os_sku=aks.OSSKU.UBUNTU,
            type=aks.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
            # A reserved pool holds exactly node_count VMs: upgrade in place rather than surge into
            # capacity the reservation does not hold.
            upgrade_settings=aks.AgentPoolUpgradeSettingsArgs(max_surge="0", max_unavailable="1"),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=gated),
        )

    def _node_software(self, name: str, args: AksGpuNodePoolArgs, driver: GpuDriver) -> list[pulumi.Resource]:
        """Device plugin (with feature discovery on NVL72), DRA driver and DRANET; fills in ``gpu_pool``."""
        accel = ACCELERATORS.get(args["vm_size"])
        nvl72 = bool(accel and accel.nvlink_spans_nodes)
        nics = _rdma_nics(args)
        opts = pulumi.ResourceOptions(parent=self)
        pool = self.gpu_pool
        out: list[pulumi.Resource] = []
        if driver == GpuDriver.INSTALL:
            # With driver None the GPU Operator brings its own device plugin and feature discovery.
            out.append(gpu_addons.nvidia_device_plugin(f"{name}-nvidia-device-plugin", tolerations=pool["tolerations"],
                                                       feature_discovery=nvl72, opts=opts,
                                                       avoid_node_labels=(MANAGED_GPU_LABEL,)))
        if nvl72:
            pool["group_topology_label"] = CLIQUE_LABEL
            pool["placement_advice"] = NVL72_PLACEMENT_ADVICE
        if args.get("multi_node_nvlink", nvl72):
            root = AKS_NVIDIA_DRIVER_ROOT if driver == GpuDriver.INSTALL else OPERATOR_DRIVER_ROOT
            out += gpu_addons.nvidia_dra_driver(f"{name}-nvidia-dra", driver_root=root,
                                                node_selector=pool["node_selector"], tolerations=pool["tolerations"],
                                                opts=opts)
            pool["compute_domains"] = True
        if int(nics) > 0:
            out.append(gpu_addons.dranet(f"{name}-dranet", node_selector=pool["node_selector"], move_ib_interfaces=False,
                                         opts=opts))
            out.append(gpu_addons.rdma_device_class(f"{name}-rdma-class", class_name=RDMA_DEVICE_CLASS, opts=opts))
            subgroup = args.get("interconnect_subgroup_id")
            dra.claim_rdma_nics(pool, device_class=RDMA_DEVICE_CLASS, count=int(nics),
                                selectors=[f'{INTERCONNECT_SUBGROUP_ATTRIBUTE} == "{subgroup.lower()}"'] if subgroup else ())
        return out

    @staticmethod
    def _validate_subgroup(args: AksGpuNodePoolArgs) -> None:
        subgroup = args.get("interconnect_subgroup_id")
        if subgroup is None:
            return
        if not _GUID.fullmatch(subgroup):
            raise pulumi.InputPropertyError("interconnect_subgroup_id", f"{subgroup!r} is not a subgroup id (a GUID "
                                            "such as 0f0ba375-aaf1-4ac8-a579-a3b180d47de5, from `kubectl get "
                                            "resourceslices` on a node of the block)")
        nics = _rdma_nics(args)
        if not nics:
            raise pulumi.InputPropertyError("interconnect_subgroup_id", f"it pins the pods' RDMA NICs to one fabric, "
                                            f"and this pool ({args['vm_size']}, rdma_nics {nics}) claims none")

    @staticmethod
    def _validate(pool_name: str, node_count: int, zone: str, existing: object, create: bool,
                  tags: Mapping[str, object]) -> None:
        if not _POOL_NAME.fullmatch(pool_name):
            raise pulumi.InputPropertyError("agent_pool_name", f"{pool_name!r}: AKS Linux pool names are 1-12 "
                                            "lowercase letters and digits, starting with a letter")
        if node_count < 1:
            raise pulumi.InputPropertyError("node_count", f"a GPU pool needs at least 1 node, got {node_count}")
        if zone not in ("1", "2", "3"):
            raise pulumi.InputPropertyError("zone", f"{zone!r}: Azure availability zones are 1, 2 or 3")
        if create and existing is not None:
            raise pulumi.InputPropertyError("capacity_reservation_group_id", "give an existing group or "
                                            "create_capacity_reservation, not both")
        managed = [key for key in tags if MANAGED_GPU_TAG.lower() in key.lower()]
        if managed:
            raise pulumi.InputPropertyError("tags", f"{managed[0]!r}: AKS turns its managed GPU stack (device plugin, "
                                            "DCGM) on for VMs with this tag, and this pool installs its own device "
                                            "plugin: leave the tag out")
        if isinstance(existing, str) and parse_group_id(existing) is None:
            raise pulumi.InputPropertyError("capacity_reservation_group_id", f"{existing!r} is not a Capacity "
                                            "Reservation Group id (/subscriptions/SUB/resourceGroups/RG/providers/"
                                            "Microsoft.Compute/capacityReservationGroups/NAME)")

    def _existing_group(self, group_id: pulumi.Input[str], location: pulumi.Input[str], zone: str,
                        verify: bool) -> tuple[pulumi.Output[str], pulumi.Input[str]]:
        """The group id the pool takes (after the preview lookup when the id is known) and the role scope."""
        if not isinstance(group_id, str) or not verify:
            out = pulumi.Output.from_input(group_id)
            scope = out.apply(lambda g: ref.resource_group_id if (ref := parse_group_id(g)) else g)
            return out, scope
        ref = parse_group_id(group_id)
        assert ref is not None
        found = compute.get_capacity_reservation_group_output(
            resource_group_name=ref.resource_group, capacity_reservation_group_name=ref.name,
            opts=pulumi.InvokeOutputOptions(parent=self))

        def checked(values: list[object]) -> str:
            group, where = values
            assert isinstance(group, compute.GetCapacityReservationGroupResult) and isinstance(where, str)
            problems = group_problems(
                group_id, group_location=group.location, group_zones=list(group.zones or []),
                reservations=len(group.capacity_reservations or []), location=where, zone=zone)
            if problems:
                raise CapacityGroupError("; ".join(problems))
            return group_id

        return pulumi.Output.all(found, location).apply(checked), ref.resource_group_id

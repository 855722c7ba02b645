"""GkeGpuNodePool: the reserved GPU node pool (A4X Max ``a4x-maxgpu-4g-metal``, A4X ``a4x-highgpu-4g``, A4
``a4-highgpu-8g``).

It consumes a specific reservation down to the sub-block (002 §5.2), pins A4X Max pools to one NVL72
sub-block with a compact placement backed by a workload policy (``HIGH_THROUGHPUT``, ``1x72``), turns on
the accelerator network profile (with the GKE service agent's network admin role it needs) and managed DRANET
there (A4X Max with ``asapd-lite``, which brings up the MRDMA NICs DRANET hands out; A4X with the gIB NCCL plugin,
as cluster-toolkit examples/gke-a4x does); for A4 (000) it builds the second
gVNIC network, the RoCE VPC with one subnet per RDMA NIC, the Kubernetes network objects and the gIB NCCL plugin.
Before anything is registered it reads the reservation, so ``pulumi preview`` fails with a message that
names the reservation when it cannot hold the pool.

It hands serving a :class:`~k3infra.serving.contract.GpuPool` (``gpu_pool``): node selector, tolerations,
and, for A4, seed 000's pod annotations, host mounts, NCCL settings and set-up commands; for A4X Max the RDMA NIC
claim of managed DRANET, IPC_LOCK, the sub-block a replica stays in, and ComputeDomains from the NVIDIA DRA driver
it installs (cluster-toolkit examples/gke-a4x-max-bm); for A4X the same plus the gIB plugin's mount, script and
GPUDirect settings (gpu-recipes' A4X chart).
"""

from dataclasses import dataclass
from typing import Mapping

import pulumi
import pulumi_gcp as gcp

from ..catalog import ACCELERATORS, Accelerator
from ..serving import dra, gpu_addons
from ..serving.contract import GpuPool, HostPathMount, Toleration
from . import asapd, rdma
from ..catalog.gke import ACCELERATOR_NETWORK_PROFILE_LABEL, GKE_MACHINES, GkeMachine, GpuNetworkMode
from .reservation import check_capacity, reservation_path
from ..component_args import reject_unknown
from .node_pool_args import GkeGpuNodePoolArgs
from ..sizing import IMAGE_PULL_SECONDS

RESERVATION_KEY = "compute.googleapis.com/reservation-name"
"""``reservation_affinity.key`` of a specific reservation (002 §5.2 ``--reservation-affinity=specific``)."""

GPU_TAINT_KEY = "nvidia.com/gpu"

LOCAL_SSD_DRIFT = ("nodeConfig.ephemeralStorageLocalSsdConfig", "nodeConfig.localNvmeSsdBlockConfig")
"""Fields GKE fills from the machine type and reads back; both force a replacement of the pool, so their drift
is ignored (cluster-toolkit modules/compute/gke-node-pool main.tf ignores the same two: "tied to machine
types"; hashicorp/terraform-provider-google#17068)."""

PROFILE_LABEL_DRIFT = "nodeConfig.labels"
"""On a pool with the accelerator network profile GKE adds ``gke.networks.io/accelerator-network-profile: auto`` to
the pool's own labels (``gcloud container node-pools describe`` lists it in ``config.labels``), which the pool's
arguments do not carry: every later ``pulumi up`` would try to take it off again. The labels' drift is ignored
there, as cluster-toolkit's gke-node-pool ignores ``node_config[0].labels`` on every pool; ignoring only that key
would not do, since a key missing from the arguments is a change of the whole map (Terraform's
``ignore_changes`` caveat, which the Pulumi bridge follows)."""

ACCELERATOR_NETWORK_PROFILE = "auto"
"""``networkConfig.acceleratorNetworkProfile`` (002 §5.2 ``--accelerator-network-profile=auto``), and the value GKE
gives the profile's node label."""

NETWORK_ADMIN_ROLE = "roles/compute.networkAdmin"
"""What Google's A4X Max guide requires of the GKE service account for ``--accelerator-network-profile=auto``, which
builds the accelerator VPC and its subnets (NVIDIA/aicr docs/integrator/gke-a4x-max-networking.md). The service
agent's own role, ``roles/container.serviceAgent``, holds every permission of it today (all 965 in
iann0036/iam-dataset gcp/roles at 2073fa5); the grant states the documented prerequisite instead of relying on
that, and still holds where a project narrowed the agent's role."""

SEED_000_TOLERATIONS: tuple[Toleration, ...] = (
    {"key": "nvidia.com/gpu", "operator": "Exists"},
    {"key": "cloud.google.com/impending-node-termination", "operator": "Exists"},
    {"key": "user-workload", "operator": "Exists"},
)
"""000's StatefulSet tolerations: the GPU taint, GKE's termination notice, cluster-toolkit's pool taint."""

ARM64_TOLERATION: Toleration = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
"""GKE taints Arm nodes ``kubernetes.io/arch=arm64:NoSchedule``; without this toleration nothing schedules there."""

GKE_NVIDIA_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"
"""Where GKE installs the NVIDIA driver on the node (cluster-toolkit kubectl-apply ``nvidiaDriverRoot``)."""

GKE_DRIVER_MOUNT: HostPathMount = {"name": "library-dir-host", "host_path": GKE_NVIDIA_DRIVER_ROOT,
                                   "mount_path": "/usr/local/nvidia"}
"""The node's NVIDIA driver libraries, where GKE installs them (``GKE_NVIDIA_DRIVER_ROOT``), at the path CUDA images
look in. A4X Max mounts them explicitly, as gpu-recipes' A4X Max recipes do (AI-Hypercomputer/gpu-recipes 2e1fd5e
src/helm-charts/a4xmax/inference-templates/*: ``hostPath /home/kubernetes/bin/nvidia`` at ``/usr/local/nvidia``),
rather than relying on the GKE device plugin's own mount; ``DRIVER_CHECK`` then checks it."""

GIB_MOUNT: HostPathMount = {"name": "gib-nccl-plugin-volume", "host_path": "/home/kubernetes/bin/gib",
                             "mount_path": "/usr/local/gib"}
"""The gIB NCCL plugin the installer DaemonSet (``rdma.gib_installer``) copies onto the node, where 000 and
gpu-recipes' A4X chart mount it."""

SEED_000_HOST_MOUNTS: tuple[HostPathMount, ...] = (GKE_DRIVER_MOUNT, GIB_MOUNT)
"""000: NVIDIA libraries and the gIB NCCL plugin. 000's third host path, a Hugging Face cache on the local SSD
holding the draft model, is not a fabric need: k3infra reads the draft model from the bucket next to the model."""


GIB_ENV_SCRIPT = "/usr/local/gib/scripts/set_nccl_env.sh"
"""The gIB plugin's NCCL settings, copied to the node by the pool's installer DaemonSet and mounted at /usr/local/gib."""

GIB_SETUP: tuple[str, ...] = (
    'export LD_LIBRARY_PATH="/usr/local/gib/lib64:/usr/local/nvidia/lib64:$LD_LIBRARY_PATH"',
    f"for i in $(seq {IMAGE_PULL_SECONDS // 5}); do [ -f {GIB_ENV_SCRIPT} ] && break; sleep 5; done",
    f'if [ ! -f {GIB_ENV_SCRIPT} ]; then echo "k3infra: no gIB NCCL plugin at {GIB_ENV_SCRIPT} after '
    f'{IMAGE_PULL_SECONDS} s: the pool\'s gIB installer DaemonSet copies it to the node\'s /home/kubernetes/bin/gib" >&2; '
    "exit 1; fi",
    f"source {GIB_ENV_SCRIPT}",
)
"""Load the gIB NCCL plugin and its settings (000; gpu-recipes src/helm-charts/a4x/inference-templates/lws-deployment
sources ``. /usr/local/gib/scripts/set_nccl_env.sh`` unconditionally under ``set -e``). The script waits for the
installer as long as an image pull takes (sizing.IMAGE_PULL_SECONDS), then fails naming the file: a rank that
started without it would run NCCL on its default transport, off RDMA, without a word (the independent review of
gcp-a4x-sglang, m1)."""

def socket_ifname_setup(interface: str) -> tuple[str, ...]:
    """Bootstrap, NCCL socket and Gloo traffic on the pod's primary interface (``GkeMachine.socket_interface``), last
    in the setup: after ``set_nccl_env.sh``, which sets its own (000; gpu-recipes' A4X and A4X Max charts)."""
    return (f"export GLOO_SOCKET_IFNAME={interface}", f"export NCCL_SOCKET_IFNAME={interface}")

SEED_000_SETUP: tuple[str, ...] = (
    "ldconfig /usr/local/nvidia/lib64/ || true",
    *GIB_SETUP,
    # After set_nccl_env.sh, as in 000: RoCE v2 GID index and the socket interface override the script's.
    "export NCCL_IB_GID_INDEX=3",
    "export NCCL_IB_ROCE_VERSION_NUM=2",
)
"""000's shell lines before ``sglang serve``: load the gIB NCCL plugin, then the RoCE v2 settings (the socket
interface follows, ``socket_ifname_setup``)."""

DRIVER_CHECK: tuple[str, ...] = (
    'if [ ! -e /usr/local/nvidia/lib64/libcuda.so.1 ]; then echo "k3infra: no NVIDIA driver library at '
    '/usr/local/nvidia/lib64/libcuda.so.1: the pod must mount the node\'s /home/kubernetes/bin/nvidia there '
    '(GKE installs the driver in it)" >&2; exit 1; fi',
    'export LD_LIBRARY_PATH="/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"',
)
"""Before the engine starts on A4X Max: the driver library the mount brings is there, and on the library path (an
image built for arm64 by the user need not set it, as NVIDIA's CUDA images do); a missing mount fails at once,
naming the path, instead of CUDA failing to initialise."""

SEED_000_ENV: Mapping[str, str] = {"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64", "NCCL_DEBUG": "INFO"}
"""000's container environment for the fabric (the engine's own variables are serving's)."""

GRACE_GIB_ENV: Mapping[str, str] = {"NCCL_NET_GDR_LEVEL": "PIX", "NCCL_NET_GDR_C2C": "1"}
"""NCCL's GPUDirect RDMA settings of gpu-recipes' A4X chart (src/helm-charts/a4x/inference-templates/lws-deployment
lws-launcher.yaml): GDR between a GPU and a NIC on the same PCI switch, and over Grace's NVLink-C2C, where NCCL
would otherwise stage through host memory. The script the pod sources afterwards may override them, as there."""


@dataclass(frozen=True)
class _Machine:
    """The pool's machine: the catalog's facts where it knows the type, and what the arguments override."""

    machine_type: str
    machine: GkeMachine | None
    accel: Accelerator | None
    accelerator_type: str
    accelerator_count: int
    node_count: int
    mode: GpuNetworkMode
    nics: int
    topology: str | None
    arm64: bool


def _machine_of(args: GkeGpuNodePoolArgs) -> _Machine:
    """The machine's facts, refusing a type the catalog does not know without its accelerators, and more nodes
    than one pool holds."""
    machine_type = args["machine_type"]
    machine = GKE_MACHINES.get(machine_type)
    accel = ACCELERATORS.get(machine_type)
    accelerator_type = args.get("accelerator_type") or (accel.kubernetes_accelerator if accel else None)
    accelerator_count = args.get("accelerator_count") or (accel.gpus_per_node if accel else None)
    if not accelerator_type or not accelerator_count:
        raise pulumi.InputPropertyError("accelerator_type", f"{machine_type} is not in the catalog: give "
                                        "accelerator_type and accelerator_count")
    node_count = int(args["node_count"])
    max_nodes = args.get("max_node_count", accel.max_nodes_per_pool if accel else None)
    if node_count < 1:
        raise pulumi.InputPropertyError("node_count", "a GPU pool needs at least one node")
    if max_nodes is not None and node_count > int(max_nodes):
        raise pulumi.InputPropertyError(
            "node_count", f"{node_count} {machine_type} nodes: one pool holds at most {int(max_nodes)} "
            "(one NVL72 rack / reservation sub-block, 002 §5.2)")
    return _Machine(
        machine_type=machine_type, machine=machine, accel=accel, accelerator_type=accelerator_type,
        accelerator_count=int(accelerator_count), node_count=node_count,
        mode=args.get("network_mode") or (machine.network_mode if machine else GpuNetworkMode.NONE),
        nics=int(args.get("rdma_nics") or (machine.rdma_nics if machine else 0)),
        topology=args.get("accelerator_topology", machine.accelerator_topology if machine else None),
        arm64=machine.arm64 if machine else False)


def _node_config(args: GkeGpuNodePoolArgs, m: _Machine, path: str) -> gcp.container.NodePoolNodeConfigArgs:
    """The GPU nodes: the machine and its accelerators and driver, the reservation, the bundled Local SSDs, gVNIC,
    hugepages, the GPU taint, Workload Identity metadata, Shielded VM settings."""
    machine = m.machine
    labels = {"k3infra.dev/pool": "gpu", **(dict(machine.node_labels) if machine else {}),
              **dict(args.get("node_labels", {}))}
    hugepages = machine.hugepages_2m if machine else None
    local_ssds = args.get("local_ssd_count", machine.bundled_local_ssds if machine else None)
    return gcp.container.NodePoolNodeConfigArgs(
        machine_type=m.machine_type,
        disk_type=args.get("boot_disk_type") or (machine.boot_disk_type if machine else "pd-balanced"),
        disk_size_gb=int(args.get("boot_disk_size_gb", 200)),
        guest_accelerators=[gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
            type=m.accelerator_type, count=m.accelerator_count,
            gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                gpu_driver_version=args.get("gpu_driver_version", "LATEST")))],
        reservation_affinity=gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION", key=RESERVATION_KEY, values=[path],
        ) if args.get("reservation") else None,
        # The bundled count, not 0 ("all of them"): GKE reads the real count back, and a 0 would
        # differ from it on every refresh and replace the pool (cluster-toolkit disk_definitions.tf).
        ephemeral_storage_local_ssd_config=gcp.container.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs(
            local_ssd_count=local_ssds) if local_ssds is not None else None,
        gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True)
        if m.mode == GpuNetworkMode.RDMA_MULTI_NIC or (machine and machine.gvnic) else None,
        linux_node_config=gcp.container.NodePoolNodeConfigLinuxNodeConfigArgs(
            hugepages_config=gcp.container.NodePoolNodeConfigLinuxNodeConfigHugepagesConfigArgs(
                hugepage_size2m=hugepages)) if hugepages else None,
        labels=labels,
        taints=[gcp.container.NodePoolNodeConfigTaintArgs(key=GPU_TAINT_KEY, value="present",
                                                          effect="NO_SCHEDULE")],
        service_account=args.get("service_account"),
        oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
            mode="GKE_METADATA"),
        shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=bool(args.get("secure_boot", True)), enable_integrity_monitoring=True),
    )


def _gpu_pool(args: GkeGpuNodePoolArgs, m: _Machine) -> GpuPool:
    """What serving needs to place its pods on the pool: selector, tolerations, GPUs, and the fabric's pod settings
    (A4's RDMA interfaces and 000's environment and mounts; the accelerator network profile's driver mount)."""
    selector = {"cloud.google.com/gke-accelerator": m.accelerator_type,
                "cloud.google.com/gke-nodepool": args["pool_name"]}
    if m.mode == GpuNetworkMode.ACCELERATOR_PROFILE:
        # Google's A4X Max guide: workloads on the profile's nodes carry its label in their nodeSelector.
        selector[ACCELERATOR_NETWORK_PROFILE_LABEL] = ACCELERATOR_NETWORK_PROFILE
    tolerations = list(SEED_000_TOLERATIONS)
    if m.arm64:
        selector["kubernetes.io/arch"] = "arm64"
        tolerations.append(ARM64_TOLERATION)
    gpu_pool: GpuPool = {
        "node_selector": selector,
        "tolerations": tolerations,
        "gpus_per_node": m.accelerator_count,
        "node_count": m.node_count,
        "gpu_resource": "nvidia.com/gpu",
    }
    if m.mode == GpuNetworkMode.RDMA_MULTI_NIC:
        gpu_pool.update({
            "pod_annotations": {"networking.gke.io/default-interface": "eth0",
                                "networking.gke.io/interfaces": rdma.interfaces_annotation(m.nics)},
            "env": dict(SEED_000_ENV),
            "host_mounts": list(SEED_000_HOST_MOUNTS),
            "setup_commands": list(SEED_000_SETUP),
            "capabilities": list(dra.RDMA_CAPABILITIES),
        })
    if m.mode == GpuNetworkMode.ACCELERATOR_PROFILE:
        gpu_pool["host_mounts"] = [GKE_DRIVER_MOUNT]
        gpu_pool["setup_commands"] = list(DRIVER_CHECK)
    return gpu_pool


def _pod_resources(gpu_pool: GpuPool, m: _Machine) -> None:
    """The server pods' CPU, memory and shared memory where the catalog states them for the machine (seed 000)."""
    seed = m.machine.pod_resources if m.machine else {}
    if "cpu_request" in seed:
        gpu_pool["cpu_request"] = seed["cpu_request"]
    if "memory_request" in seed:
        gpu_pool["memory_request"] = seed["memory_request"]
    if "shm_size" in seed:
        gpu_pool["shm_size"] = seed["shm_size"]


class GkeGpuNodePool(pulumi.ComponentResource):
    """A GKE node pool of GPU machines on a specific reservation, with the fabric the machine type needs.

    Give it the cluster's Kubernetes provider (``providers={"kubernetes": cluster.provider}``) when the machine
    type needs Kubernetes objects (A4: RDMA networks and the NCCL plugin installer).
    """

    pool_name: pulumi.Output[str]
    """The GKE node pool name."""
    node_count: pulumi.Output[int]
    """Nodes in the pool."""
    reservation_path: pulumi.Output[str]
    """The reservation the pool consumes (``projects/P/reservations/R/...``), or empty."""
    gpu_pool: GpuPool
    """What serving needs to place its pods on this pool."""
    warnings: list[str]
    """What the reservation lookup found worth saying (hosts in use, degraded hosts)."""

    def __init__(self, name: str, args: GkeGpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("k3infra:index:GkeGpuNodePool", name, {}, opts)
        reject_unknown(args, GkeGpuNodePoolArgs)
        m = _machine_of(args)
        ref = args.get("reservation")
        path = reservation_path(ref) if ref else ""
        self.warnings = self._check_reservation(args, m)
        placement = self._placement(name, args, m)
        network_config, depends, kubernetes_objects, ignored = self._fabric(name, args, m)
        pool = self._node_pool(name, args, m, path, placement, network_config, depends, ignored)
        gpu_pool = _gpu_pool(args, m)
        kubernetes_objects += self._fabric_addons(name, args, m, gpu_pool, pool)
        _pod_resources(gpu_pool, m)
        self.pool_name = pool.name
        self.node_count = pool.node_count.apply(lambda n: int(n or m.node_count))
        self.reservation_path = pulumi.Output.from_input(path)
        self.gpu_pool = gpu_pool
        self._resources: list[pulumi.Resource] = [pool, *kubernetes_objects]
        self.register_outputs({"pool_name": self.pool_name, "node_count": self.node_count,
                               "reservation_path": self.reservation_path, "gpu_pool": self.gpu_pool,
                               "warnings": self.warnings})

    def _check_reservation(self, args: GkeGpuNodePoolArgs, m: "_Machine") -> list[str]:
        """What the reservation lookup found worth saying (hosts in use, degraded hosts), said in the plan too."""
        ref = args.get("reservation")
        warnings: list[str] = []
        if ref and args.get("check_reservation", True):
            _, warnings = check_capacity(ref, zone=args["zone"], machine_type=m.machine_type, nodes=m.node_count,
                                         opts=pulumi.InvokeOptions(parent=self))
            for w in warnings:
                pulumi.log.warn(w, self)
        return warnings

    def _placement(self, name: str, args: GkeGpuNodePoolArgs,
                   m: "_Machine") -> gcp.container.NodePoolPlacementPolicyArgs | None:
        """Compact placement over a workload policy of the machine's accelerator topology (``1x72``), or none."""
        if not m.topology:
            return None
        policy = gcp.compute.ResourcePolicy(
            f"{name}-workload-policy",
            gcp.compute.ResourcePolicyArgs(
                name=f"{args['resource_prefix']}-workload", project=args["project"], region=args["region"],
                description=f"Compact placement of {args['pool_name']}: one {m.topology} accelerator topology",
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT", accelerator_topology=m.topology)),
            pulumi.ResourceOptions(parent=self))
        return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", policy_name=policy.name)

    def _fabric(self, name: str, args: GkeGpuNodePoolArgs, m: "_Machine") -> tuple[
            gcp.container.NodePoolNetworkConfigArgs | None, list[pulumi.Resource], list[pulumi.Resource], list[str]]:
        """The pool's network: the accelerator network profile (and the GKE agent's grant it needs), or the A4
        RDMA networks (cloud and Kubernetes objects); what the pool waits for, and the drift it ignores."""
        project, prefix = args["project"], args["resource_prefix"]
        depends: list[pulumi.Resource] = []
        network_config = None
        kubernetes_objects: list[pulumi.Resource] = []
        ignored: list[str] = list(LOCAL_SSD_DRIFT)
        if m.mode == GpuNetworkMode.ACCELERATOR_PROFILE:
            network_config = gcp.container.NodePoolNetworkConfigArgs(
                accelerator_network_profile=ACCELERATOR_NETWORK_PROFILE)
            ignored.append(PROFILE_LABEL_DRIFT)
            if args.get("grant_network_admin", True):
                depends.append(self._network_admin_grant(name, project))
        elif m.mode == GpuNetworkMode.RDMA_MULTI_NIC:
            nets = rdma.create_networks(
                name, prefix=prefix, project=project, region=args["region"], zone=args["zone"], nics=m.nics,
                gvnic_cidr=args.get("gvnic_cidr", "192.168.64.0/18"), rdma_cidr=args.get("rdma_cidr", "192.168.128.0/18"),
                accelerator=m.accelerator_type, pool_name=args["pool_name"], parent=self)
            network_config = gcp.container.NodePoolNetworkConfigArgs(
                additional_node_network_configs=nets.additional_networks)
            depends += nets.cloud_resources
            kubernetes_objects = nets.kubernetes_resources
        return network_config, depends, kubernetes_objects, ignored

    def _node_pool(self, name: str, args: GkeGpuNodePoolArgs, m: "_Machine", path: str,
                   placement: gcp.container.NodePoolPlacementPolicyArgs | None,
                   network_config: gcp.container.NodePoolNetworkConfigArgs | None, depends: list[pulumi.Resource],
                   ignored: list[str]) -> gcp.container.NodePool:
        """The node pool on the reservation, upgraded one node at a time."""
        zone = args["zone"]
        return gcp.container.NodePool(
            f"{name}-pool",
            gcp.container.NodePoolArgs(
                name=args["pool_name"],
                project=args["project"],
                cluster=args["cluster"],
                location=args["cluster_location"],
                node_locations=[zone],
                node_count=m.node_count,
                # A cluster in a release channel cannot turn node auto-upgrade off (GKE release channels); what
                # keeps GKE from recreating this pool is the cluster's NO_MINOR_OR_NODE_UPGRADES exclusion
                # (GkeCluster), as in cluster-toolkit examples/gke-a4x-max-bm and gke-a4 (auto_upgrade: true).
                management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
                # A reservation has no spare host to surge onto: replace nodes one at a time (cluster-toolkit
                # gke-node-pool's default upgrade_settings: SURGE, max_surge 0, max_unavailable 1).
                upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=0,
                                                                          max_unavailable=1),
                placement_policy=placement,
                network_config=network_config,
                node_config=_node_config(args, m, path),
            ),
            pulumi.ResourceOptions(parent=self, depends_on=depends, ignore_changes=ignored,
                                   custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m")))

    def _fabric_addons(self, name: str, args: GkeGpuNodePoolArgs, m: "_Machine", gpu_pool: GpuPool,
                       pool: gcp.container.NodePool) -> list[pulumi.Resource]:
        """What the machine's fabric adds on Kubernetes (the gIB plugin, managed DRANET's NIC claims, the ASAPD
        agent, the NVIDIA DRA driver's ComputeDomains), and the pods' settings for it."""
        machine, arm64, nics, accelerator_type = m.machine, m.arm64, m.nics, m.accelerator_type
        pool_name, accel = args["pool_name"], m.accel
        selector, tolerations = gpu_pool["node_selector"], gpu_pool["tolerations"]
        kubernetes_objects: list[pulumi.Resource] = []
        if m.mode == GpuNetworkMode.ACCELERATOR_PROFILE and machine and machine.gib_plugin:
            # A4X: DRANET hands out the NICs, Google's gIB plugin drives them (cluster-toolkit examples/gke-a4x).
            kubernetes_objects.append(rdma.gib_installer(
                f"{name}-gib-installer", nics=nics, accelerator=accelerator_type, pool_name=pool_name, parent=self,
                arm64=arm64, martian_sysctls=False))
            gpu_pool["host_mounts"] = [GKE_DRIVER_MOUNT, GIB_MOUNT]
            gpu_pool["setup_commands"] = [*DRIVER_CHECK, *GIB_SETUP]
            gpu_pool["env"] = dict(GRACE_GIB_ENV)
        if machine and machine.socket_interface:
            # Every pool whose pods carry RDMA NICs besides the primary one, whatever the engine (issue 36 item 13).
            gpu_pool["setup_commands"] = [*gpu_pool.get("setup_commands", ()),
                                          *socket_ifname_setup(machine.socket_interface)]
        if m.mode == GpuNetworkMode.ACCELERATOR_PROFILE and machine and machine.rdma_device_class:
            # Managed DRANET hands pods the RDMA NICs through DRA (cluster-toolkit nccl-jobset-example.yaml).
            dra.claim_rdma_nics(gpu_pool, device_class=machine.rdma_device_class, count=nics)
        if machine and machine.asapd_lite:
            # After the pool: Pulumi then waits until the agent is ready on its nodes, and so does the server.
            kubernetes_objects.append(asapd.daemonset(f"{name}-asapd-lite", opts=pulumi.ResourceOptions(
                parent=self, depends_on=[pool],
                # ESTIMATE: an image pull, the agent's start and 15 s settle, a restart after a failed IPv6
                # address check; Pulumi's 10-minute default leaves no room for a second restart.
                custom_timeouts=pulumi.CustomTimeouts(create="20m", update="20m"))))
        if machine and machine.nvlink_domain_label:
            gpu_pool["group_topology_label"] = machine.nvlink_domain_label
            gpu_pool["placement_advice"] = (
                "The pool consumes the reservation down to its sub-block with a compact placement (1x72): name the "
                "reservation's block and sub-block in capacity.block and capacity.subBlock, check with `gcloud compute "
                "reservations describe` that one sub-block holds the pool, and recreate the pool (docs/gcp.md).")
        if args.get("multi_node_nvlink", bool(accel and accel.nvlink_spans_nodes)):
            kubernetes_objects += gpu_addons.nvidia_dra_driver(
                f"{name}-nvidia-dra", driver_root=GKE_NVIDIA_DRIVER_ROOT, node_selector=selector,
                tolerations=tolerations, opts=pulumi.ResourceOptions(parent=self))
            gpu_pool["compute_domains"] = True
        return kubernetes_objects

    def _network_admin_grant(self, name: str, project: pulumi.Input[str]) -> gcp.projects.IAMMember:
        """``roles/compute.networkAdmin`` for the project's GKE service agent (NETWORK_ADMIN_ROLE); the number in
        its address is looked up, never guessed."""
        number = gcp.organizations.get_project_output(project_id=project, opts=pulumi.InvokeOptions(parent=self)).number
        agent = pulumi.Output.concat("serviceAccount:service-", number, "@container-engine-robot.iam.gserviceaccount.com")
        return gcp.projects.IAMMember(
            f"{name}-gke-agent-network-admin",
            gcp.projects.IAMMemberArgs(project=project, role=NETWORK_ADMIN_ROLE, member=agent),
            pulumi.ResourceOptions(parent=self))

    @property
    def resources(self) -> list[pulumi.Resource]:
        """Everything serving's pods need to exist first (the pool, the Kubernetes network objects, the plugin).

        A Python-side handle for ``serve(pool_resources=...)``; not a schema output."""
        return list(self._resources)

"""What GKE needs to know about each GPU machine type, beyond the cloud-neutral accelerator entry.

``ACCELERATORS`` holds the facts that decide sizing; this table holds the ones that decide the shape of a
GKE cluster and node pool: how the GPU NICs are attached, which boot disk the machine accepts, whether it
runs in one NVL72 sub-block, how many Local SSDs it bundles (GKE reads them back on every refresh), and the
oldest GKE version that runs it. It lives in the catalog, not in ``k3infra.gcp``, because configuration
validation checks a stack's GKE version against it before any resource exists. Each entry cites its source.

A4X (``a4x-highgpu-4g``, GB200) is not A4X Max (``a4x-maxgpu-4g-metal``, GB300), although both are 18-VM, 72-GPU
NVL72 sub-blocks of Grace (arm64) nodes with Hyperdisk boot disks, a ``HIGH_THROUGHPUT`` / ``1x72`` workload policy
and the NVIDIA DRA driver's ComputeDomains for multi-node NVLink:

- form: A4X is a VM, A4X Max bare metal;
- NICs: A4X has 4 ConnectX-7 NICs as MRDMA virtual functions (1,600 Gbps, 4-way rail-aligned) and 2 Titanium NICs;
  A4X Max 4 ConnectX-8 SuperNICs as 8 MRDMA physical functions (3,200 Gbps, 8-way rail-aligned);
- networking: both hand the RDMA NICs to pods as managed DRANET claims of ``mrdma.google.com`` on a pool with the
  accelerator network profile (A4X: cluster-toolkit examples/gke-a4x since June 2026, #5822/#5835, with only the
  ``gke-networking-dra-driver`` label; A4X Max: 002 §5.2, which adds ``gke-dpv2-unified-cni``). Google's older A4X
  guides attach them by multi-networking (``gvnic-1``, ``rdma-0..3``), which A4X Max does not support;
- NCCL's network plugin: A4X loads Google's gIB plugin (arm64 build) from a DaemonSet, as A4 does; cluster-toolkit's
  A4X Max blueprint (gke-a4x-max-bm) installs none;
- NIC bring-up: the A4X hypervisor initialises the NICs; A4X Max needs the ``asapd-lite`` DaemonSet;
- driver and version: GKE installs the R570 driver on A4X from 1.32.4-gke.1533000; A4X Max needs R580.95.05, CDMM
  and its per-branch GKE floors (1.34.3-gke.1318000 / 1.35.0-gke.2745000); DRANET needs 1.34.1-gke.1829001 on both;
- huge pages: A4X Max's pool pre-allocates 4096 x 2 MiB; cluster-toolkit's A4X pool none.
"""

import re
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Mapping


_GKE_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+)(?:-gke\.(\d+))?)?")


@dataclass(frozen=True)
class GkeVersion:
    """A GKE version or version prefix: ``1.34``, ``1.34.3``, ``1.34.3-gke.1318000``.

    A prefix names every version that starts with it (GKE resolves ``1.34`` to a 1.34 patch of the release
    channel), so it meets a floor only when the lowest version it can name does.
    """

    parts: tuple[int, ...]
    """(major, minor[, patch[, gke build]])."""

    @classmethod
    def parse(cls, text: str) -> "GkeVersion | None":
        """The version ``text`` names, or None when it is not a GKE version."""
        m = _GKE_VERSION.fullmatch(text.strip())
        return cls(tuple(int(g) for g in m.groups() if g is not None)) if m else None

    @property
    def lowest(self) -> tuple[int, int, int, int]:
        """The lowest version this names: missing parts count as 0."""
        padded = (*self.parts, 0, 0, 0, 0)
        return padded[0], padded[1], padded[2], padded[3]

    def at_least(self, floor: "GkeVersion") -> bool:
        """True when every version this names is at or above ``floor``."""
        return self.lowest >= floor.lowest

    def __str__(self) -> str:
        text = ".".join(str(p) for p in self.parts[:3])
        return text + (f"-gke.{self.parts[3]}" if len(self.parts) > 3 else "")


@dataclass(frozen=True)
class VersionFloor:
    """The oldest GKE version something needs, and why; where the need is stated per minor branch, the oldest
    patch of each branch.

    GKE ships a fix to several minor branches at once, each in a patch of its own: A4X Max needs
    1.34.3-gke.1318000 on 1.34 and 1.35.0-gke.2745000 on 1.35, so 1.35.0-gke.1000 is too old although it is
    newer than the 1.34 patch. A version meets the floor when it is at or above the minimum of its own branch,
    or of the newest branch before it that has one; a branch older than ``version``'s is below the floor.
    """

    version: GkeVersion
    """The minimum on the oldest branch that has the feature."""
    why: str
    """What needs it and where that is stated."""
    later_branches: tuple[GkeVersion, ...] = ()
    """The minimum on each later minor branch that states its own, oldest branch first."""

    def minimum_for(self, given: GkeVersion) -> GkeVersion:
        """The minimum that applies to ``given``: that of its branch or of the newest branch before it."""
        branch = given.lowest[:2]
        return ([m for m in (self.version, *self.later_branches) if m.lowest[:2] <= branch] or [self.version])[-1]

    def admits(self, given: GkeVersion) -> bool:
        """True when every version ``given`` names meets the floor."""
        return given.at_least(self.minimum_for(given))

    @property
    def requirement(self) -> str:
        """What is allowed, e.g. ``1.34.3-gke.1318000 or later on 1.34, 1.35.0-gke.2745000 or later from 1.35``."""
        if not self.later_branches:
            return f"{self.version} or later"
        branches = [self.version, *self.later_branches]
        parts = [f"{m} or later on {m.parts[0]}.{m.parts[1]}" for m in branches[:-1]]
        last = branches[-1]
        return ", ".join([*parts, f"{last} or later from {last.parts[0]}.{last.parts[1]}"])


def floor(version: str, why: str, *, later_branches: tuple[str, ...] = ()) -> VersionFloor:
    """A :class:`VersionFloor` from its text (a typo in the table fails at import)."""
    parsed = [GkeVersion.parse(v) for v in (version, *later_branches)]
    for text, p in zip((version, *later_branches), parsed):
        assert p is not None and len(p.parts) >= 3, f"a floor names a patch version at least: {text!r}"
    versions = [p for p in parsed if p is not None]
    branches = [v.lowest[:2] for v in versions]
    assert branches == sorted(set(branches)), f"one minimum per branch, oldest first: {(version, *later_branches)}"
    return VersionFloor(versions[0], why, tuple(versions[1:]))


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
    bundled_local_ssds: int
    """Local (Titanium) SSDs Compute Engine attaches to every instance of the type. GKE backs ephemeral storage
    with them and reports this count back, so the pool asks for exactly it (asking for 0, "all of them",
    reads back as this number and forces a replacement: hashicorp/terraform-provider-google#17068)."""
    min_gke_versions: tuple[VersionFloor, ...]
    """Every stated floor of the GKE version the pool's nodes need (the machine itself, the features the
    pool turns on); a version must meet each. Empty where none is stated."""
    sources: Mapping[str, str]
    rdma_device_class: str | None = None
    """DeviceClass of the RDMA NICs under GKE managed DRANET (ACCELERATOR_PROFILE): pods claim every NIC of it."""
    nvlink_domain_label: str | None = None
    """Node label whose value is one NVLink domain, where the domain spans nodes: a replica's pods share it."""
    asapd_lite: bool = False
    """The machine's MRDMA NICs are brought up by Google's ``asapd-lite`` DaemonSet: without it no child
    interface exists, DRANET publishes no RDMA device and every RDMA claim stays pending."""
    gvnic: bool = False
    """The pool turns on gVNIC for the nodes' primary interfaces. Implied by RDMA_MULTI_NIC (A4's second gVNIC
    network); stated where a reference turns it on otherwise."""
    gib_plugin: bool = False
    """NCCL reaches the RDMA NICs through Google's gIB plugin, which a DaemonSet copies onto every node and the
    engine loads (``set_nccl_env.sh``). Implied by RDMA_MULTI_NIC (A4); stated for a DRANET pool that needs it
    too (A4X); cluster-toolkit's A4X Max blueprint installs none."""
    socket_interface: str | None = None
    """The pod's primary interface, where NCCL's bootstrap and socket transport and Gloo (the engines' CPU process
    group) must stay: the pods also carry the RDMA NICs as interfaces, and both libraries otherwise pick any
    interface that is up, one the other node cannot reach over TCP. None where the pods have the primary one only."""


DRANET_LABEL = "cloud.google.com/gke-networking-dra-driver"
"""Node label that turns on GKE managed DRANET for the pool (002 §5.2)."""

UNIFIED_CNI_LABEL = "cloud.google.com/gke-dpv2-unified-cni"
"""Node label 002 §5.2 sets next to DRANET (value ``cni-migration``)."""

ACCELERATOR_NETWORK_PROFILE_LABEL = "gke.networks.io/accelerator-network-profile"
"""Node label GKE puts on every node of a pool created with ``--accelerator-network-profile=auto`` (value
``auto``), in the pool's own ``config.labels`` too. Google's A4X Max guide requires workloads to carry it in their
``nodeSelector`` (NVIDIA/aicr docs/integrator/gke-a4x-max-networking.md, summarising Google's "Create an
AI-optimized GKE cluster that uses A4X Max"; kubernetes/autoscaler's GKE labels name it
``AcceleratorNetworkProfileLabel``)."""

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
                pod_resources=MappingProxyType({"shm_size": "250Gi"}),
                bundled_local_ssds=4,
                min_gke_versions=(
                    floor("1.34.3-gke.1318000", "A4X Max node pools need GKE 1.34.3-gke.1318000 or later on 1.34 and "
                          "1.35.0-gke.2745000 or later from 1.35, the first patches of each branch with the GB300's "
                          "minimum driver 580.95.05, CDMM, GPUDirect RDMA and MNNVL (Google's A4X Max requirements, "
                          "as NVIDIA/aicr's GB300 GKE recipes encode them: \">= 1.34.3-gke.1318000 < 1.35 || >= "
                          "1.35.0-gke.2745000\"; cluster-toolkit examples/gke-a4x-max-bm README, requirement 2)",
                          later_branches=("1.35.0-gke.2745000",)),
                    floor("1.34.1-gke.1829001", "managed DRANET needs GKE 1.34.1-gke.1829001 or later (cluster-toolkit "
                          "modules/compute/gke-node-pool main.tf, check dranet_requirements)"),
                    floor("1.34.0", "the NVIDIA DRA driver's ComputeDomains and the RDMA claims are resource.k8s.io/v1 "
                          "objects, which GKE serves from 1.34 (GKE docs, set-up-dra: DRA needs 1.34 or later)"),
                ),
                sources=MappingProxyType({
                    "bundled_local_ssds": "cloud.google.com/compute/docs/disks/local-ssd#lssd_disks_fixed (Machine types that automatically attach Local SSD disks: a4x-maxgpu-4g-metal 4, "
                                          "3,000 GiB Titanium SSD each = the 12,000 GiB of the A4X Max machine table)",
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
                    "pod_resources": "/dev/shm 250Gi: cluster-toolkit examples/gke-a4x-max-bm/nccl-jobset-example.yaml "
                                     "(medium: Memory, sizeLimit: 250Gi) and gpu-recipes' A4X Max charts "
                                     "(shared-memory sizeLimit: 250Gi)",
                    "rdma_device_class": "cluster-toolkit examples/gke-a4x-max-bm/nccl-jobset-example.yaml "
                                         "(ResourceClaimTemplate deviceClassName: mrdma.google.com, count: 8)",
                    "nvlink_domain_label": "cluster-toolkit examples/gke-a4x-max-bm/nccl-jobset-example.yaml "
                                           "(kueue.x-k8s.io/podset-required-topology: "
                                           "cloud.google.com/gce-topology-subblock: one NVL72 sub-block)",
                    "asapd_lite": "cluster-toolkit examples/gke-a4x-max-bm/gke-a4x-max-bm.yaml (kubectl-apply "
                                  "asapd_lite: install: true, asapd-lite-installer.yaml); NVIDIA/aicr "
                                  "docs/integrator/gke-a4x-max-networking.md (\"Without it, child interfaces aren't "
                                  "created and DRANET filters out the RDMA NICs\")",
                    "socket_interface": "AI-Hypercomputer/gpu-recipes 2e1fd5e inference/a4xmax/disaggregated-"
                                        "serving/dynamo/values_deepep.yaml and values_wo_deepep.yaml "
                                        "(GLOO_SOCKET_IFNAME: eth0, TP_SOCKET_IFNAME: eth0 on every worker) and "
                                        "src/helm-charts/a4xmax/inference-templates/tensorrt-llm-deployment/templates/"
                                        "multi-node-aggregated-tensorrt-llm-deployment.yaml "
                                        "(OMPI_MCA_oob_tcp_if_include=eth0); the pods carry the 8 MRDMA NICs DRANET "
                                        "hands them besides eth0",
                    "min_gke_versions": "NVIDIA/aicr docs/integrator/gke-a4x-max-networking.md (GKE version floor: "
                                        "the per-branch minimums of Google's A4X Max requirements); cluster-toolkit "
                                        "modules/compute/gke-node-pool main.tf (check dranet_requirements)",
                }),
                rdma_device_class="mrdma.google.com",
                nvlink_domain_label="cloud.google.com/gce-topology-subblock",
                asapd_lite=True,
                socket_interface="eth0",
            ),
            GkeMachine(
                machine_type="a4x-highgpu-4g",
                network_mode=GpuNetworkMode.ACCELERATOR_PROFILE,
                rdma_nics=4,
                boot_disk_type="hyperdisk-balanced",
                accelerator_topology="1x72",
                bare_metal=False,
                arm64=True,
                node_labels=MappingProxyType({DRANET_LABEL: "true"}),
                hugepages_2m=None,
                pod_resources=MappingProxyType({"shm_size": "250Gi"}),
                bundled_local_ssds=4,
                min_gke_versions=(
                    floor("1.32.4-gke.1533000", "GKE installs the GB200's required R570 driver on A4X nodes from "
                          "1.32.4-gke.1533000 (GKE docs, \"Set up Ray on GKE with A4X and GB200\": \"GKE automatically "
                          "installs the required 570 GPU driver version on all A4X nodes that run GKE version "
                          "1.32.4-gke.1533000 or later\")"),
                    floor("1.34.1-gke.1829001", "managed DRANET needs GKE 1.34.1-gke.1829001 or later (cluster-toolkit "
                          "modules/compute/gke-node-pool main.tf, check dranet_requirements)"),
                    floor("1.34.0", "the NVIDIA DRA driver's ComputeDomains are resource.k8s.io/v1 objects, which GKE "
                          "serves from 1.34 (GKE docs, set-up-dra; NVIDIA/aicr docs/integrator/gke-gb200-networking.md: "
                          "every GB200 GKE recipe enforces K8s.server.version >= 1.34 for the ComputeDomain)"),
                ),
                sources=MappingProxyType({
                    "network_mode": "cluster-toolkit examples/gke-a4x/gke-a4x.yaml at 1047080 (#5822, #5835: the A4X pool "
                                    "sets enable_dranet: true and no additional_networks; modules/compute/gke-node-pool "
                                    "main.tf then sets network_config.accelerator_network_profile = \"auto\", adds the "
                                    "node label cloud.google.com/gke-networking-dra-driver=true and applies the "
                                    "default-rdma ResourceClaimTemplate). Google's older A4X guides (ray-a4x, "
                                    "gke-ai-hypercompute-custom-a4x) attach the NICs by multi-networking instead "
                                    "(gvnic-1, rdma-0..3); cluster-toolkit #5682 removed those networks",
                    "node_labels": "cluster-toolkit modules/compute/gke-node-pool main.tf (kubernetes_labels: "
                                   "cloud.google.com/gke-networking-dra-driver = \"true\" when DRANET is on; A4X Max's "
                                   "002 §5.2 adds gke-dpv2-unified-cni, the A4X blueprint does not)",
                    "rdma_nics": "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (4 CX-7 NICs, MRDMA VFs); "
                                 "NVIDIA/aicr gke-gb200-networking.md (1 gVNIC + 4 RDMA NICs per node)",
                    "rdma_device_class": "cluster-toolkit modules/compute/gke-node-pool resource-claim-template.yaml.tftpl "
                                         "(default-rdma: deviceClassName mrdma.google.com, variables.tf "
                                         "dranet_device_class_name default) and examples/gke-a4x/nccl-jobset-example.yaml "
                                         "(every pod claims default-rdma next to the ComputeDomain channel)",
                    "gvnic": "cluster-toolkit modules/compute/gke-node-pool main.tf (gvnic { enabled = var.image_type == "
                             "\"COS_CONTAINERD\" }, the default image type) on examples/gke-a4x's A4X pool",
                    "pod_resources": "/dev/shm 250Gi: gpu-recipes' A4X SGLang chart (templates/lws-launcher.yaml, "
                                     "the dshm emptyDir sizeLimit: 250Gi on leader and workers) and cluster-toolkit "
                                     "examples/gke-a4x/nccl-jobset-example.yaml (sizeLimit: 250Gi); the 64Gi default "
                                     "is below both (the independent review of gcp-a4x-sglang, m3)",
                    "gib_plugin": "cluster-toolkit examples/gke-a4x/gke-a4x.yaml (gib: install: true, image "
                                  "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64, v1.1.0, on arm64 "
                                  "nodes; nccl-installer.yaml.tftpl has no martian-log sysctls, unlike gke-a4's); "
                                  "gpu-recipes src/helm-charts/a4x/inference-templates/lws-deployment (sources "
                                  "/usr/local/gib/scripts/set_nccl_env.sh before sglang.launch_server)",
                    "boot_disk_type": "cluster-toolkit examples/gke-a4x (disk_type: hyperdisk-balanced); NVIDIA/aicr "
                                      "gke-gb200-networking.md (a4x-highgpu-4g cannot attach Persistent Disk, only Hyperdisk)",
                    "accelerator_topology": "cluster-toolkit examples/gke-a4x (workload_policy HIGH_THROUGHPUT, "
                                            "accelerator_topology 1x72); GKE docs ray-a4x (--placement-policy)",
                    "bare_metal": "cloud.google.com/compute/docs/accelerator-optimized-machines (A4X is a VM; A4X Max is "
                                  "the bare-metal a4x-maxgpu-4g-metal)",
                    "arm64": "cluster-toolkit examples/gke-a4x (target_architecture arm64; job templates tolerate "
                             "kubernetes.io/arch=arm64:NoSchedule)",
                    "hugepages_2m": "none: cluster-toolkit examples/gke-a4x sets no hugepage config (A4X Max's 4096 is for "
                                    "its bare-metal MRDMA PFs)",
                    "bundled_local_ssds": "ASSUMPTION: 4 x 3,000 GiB Titanium SSD, as on A4X Max: Compute Engine states "
                                          "12,000 GiB of Local SSD for both A4X and A4X Max (accelerator-optimized-machines) "
                                          "and 4 disks for a4x-maxgpu-4g-metal (local-ssd#lssd_disks_fixed); the A4X row of "
                                          "that table was not found. Confirm with `gcloud compute machine-types describe "
                                          "a4x-highgpu-4g` before the first pool: a wrong count forces a replacement",
                    "min_gke_versions": "GKE docs ray-a4x (R570 driver from 1.32.4-gke.1533000); cluster-toolkit "
                                        "modules/compute/gke-node-pool main.tf (check dranet_requirements); NVIDIA/aicr "
                                        "gke-gb200-networking.md (>= 1.34 for ComputeDomains); cluster-toolkit examples/gke-a4x "
                                        "pins version_prefix 1.35.",
                    "nvlink_domain_label": "cluster-toolkit examples/gke-a4x/nccl-jobset-example.yaml "
                                           "(kueue.x-k8s.io/podset-required-topology: cloud.google.com/gce-topology-subblock); "
                                           "gpu-recipes src/helm-charts/a4x/inference-templates/lws-deployment lws-launcher.yaml "
                                           "(podAffinity topologyKey cloud.google.com/gce-topology-subblock)",
                    "socket_interface": "AI-Hypercomputer/gpu-recipes 2e1fd5e src/helm-charts/a4x/inference-templates/"
                                        "lws-deployment/templates/lws-launcher.yaml (export GLOO_SOCKET_IFNAME=eth0, "
                                        "export NCCL_SOCKET_IFNAME=eth0 after set_nccl_env.sh, leader and workers)",
                    "asapd_lite": "NVIDIA/aicr docs/integrator/gke-a4x-max-networking.md (A4X: NIC init by the host "
                                  "hypervisor; only A4X Max needs the asapd-lite DaemonSet); cluster-toolkit "
                                  "examples/gke-a4x installs none",
                }),
                rdma_device_class="mrdma.google.com",
                nvlink_domain_label="cloud.google.com/gce-topology-subblock",
                gib_plugin=True,
                gvnic=True,
                socket_interface="eth0",
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
                bundled_local_ssds=32,
                min_gke_versions=(),
                sources=MappingProxyType({
                    "bundled_local_ssds": "cloud.google.com/compute/docs/disks/local-ssd#lssd_disks_fixed (Machine types that automatically attach Local SSD disks: a4-highgpu-8g 32 x 375 GiB); cluster-toolkit "
                                          "modules/compute/gke-node-pool/disk_definitions.tf (a4-highgpu-8g = 32)",
                    "min_gke_versions": "none stated: cluster-toolkit examples/gke-a4 pins only a version prefix",
                    "pod_resources": "000 (cpu: 206, memory: 1500Gi of 224 vCPU / 3,968 GB; /dev/shm sizeLimit 100Gi)",
                    "network_mode": "000 (networking.gke.io/interfaces eth2..eth9 = rdma-0..rdma-7); cluster-toolkit "
                                    "examples/gke-a4 (second gVNIC VPC + {zone}-vpc-roce VPC with 8 subnets)",
                    "boot_disk_type": "A4 attaches Hyperdisk only (cloud.google.com/compute/docs/accelerator-optimized-machines)",
                    "socket_interface": "000 (export GLOO_SOCKET_IFNAME=eth0, NCCL_SOCKET_IFNAME=eth0 after "
                                        "set_nccl_env.sh; the pod's eth2..eth9 are the RDMA NICs)",
                }),
                socket_interface="eth0",
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
                bundled_local_ssds=32,
                min_gke_versions=(),
                sources=MappingProxyType({
                    "bundled_local_ssds": "cloud.google.com/compute/docs/disks/local-ssd#lssd_disks_fixed (Machine types that automatically attach Local SSD disks: a3-ultragpu-8g 32); cluster-toolkit disk_definitions.tf "
                                          "(a3-ultragpu-8g = 32)",
                    "network_mode": "docs/catalog-research.md §1.7 (same NIC layout as A4: 8 CX-7 + 2 gVNIC)",
                    "boot_disk_type": "A3 Ultra attaches Hyperdisk only",
                    "socket_interface": "as A4 (000): the same NIC layout, the RDMA NICs beside eth0",
                }),
                socket_interface="eth0",
            ),
        )
    }
)
"""GKE facts per GPU machine type of the catalog's Google Cloud SKUs."""

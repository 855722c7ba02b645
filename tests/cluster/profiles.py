"""Node profiles: the kwok nodes, ResourceSlices and platform DeviceClasses of one stack, derived from its plan.

What a node carries comes from three places and nowhere else:
- the stack's own plan: each node pool's registration (GKE NodePool, EKS NodeGroup, HyperPod instance group, AKS
  agent pool, ACK node pool) gives the pool's name, machine type, node count, zone, its own labels and taints,
  boot disk and huge pages;
- the catalog: what the cloud adds to every node (k3infra.catalog.kubernetes_nodes ``CLOUD_NODES``, ``GPU_NODES``),
  the machine's CPUs, memory and GPUs (``accelerators``, ``transfer.CPU_NODES``) and the cloud's reservation rule
  for allocatable (``system_nodes.node_allocatable``);
- the Helm charts the render lists, by the values it gives them (the charts cannot be expanded offline, so their
  effects stand in): the NVIDIA device plugin advertises ``nvidia.com/gpu`` on the nodes its affinity and
  tolerations admit (where the platform has no device plugin of its own), DRANET and the NVIDIA DRA driver's
  kubelet plugin publish ResourceSlices on the nodes they run on (``dra_slices``), and the DRA driver's chart
  creates its DeviceClasses. GKE's managed DRANET publishes its ``mrdma.google.com`` NICs where the pool turns it on.

The serving side's node selector, tolerations and claims are never read here: a pod schedules only if what the
stack asks for matches what its platform and pools give.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from k3infra.aws.efa import EFA_LAYOUTS, needs_efa
from k3infra.catalog.accelerators import ACCELERATORS
from k3infra.catalog.gke import DRANET_LABEL, GKE_MACHINES
from k3infra.catalog.kubernetes_nodes import CLOUD_NODES, GPU_NODES, Taint
from k3infra.catalog.system_nodes import max_pods as system_max_pods, memory_capacity_mib, node_allocatable
from k3infra.catalog.transfer import CPU_NODES, SYNC_POOLS, CpuNode
from k3infra.catalog.types import Cloud, CpuArch
from k3infra.planning import Plan
from k3infra.render import apply_order, masked

from . import dra
from .scheduling import runs_on

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
"""kwok manages (heartbeats, runs the pods of) nodes annotated ``fake`` (tests/cluster/local.py)."""

_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}
_BOOT_DISK_GIB = {"gcp": 100, "aws": 20, "azure": 128, "alicloud": 120}
"""Boot disk where a pool states none: GKE's 100 GB, EKS's 20 GiB, AKS's 128 GB OS disk, ACK's 120 GiB (each
platform's default)."""


@dataclass
class Pool:
    """One node pool as the plan registers it."""

    name: str
    machine: str
    count: int
    """Nodes; for a pool autoscaled from zero (the sync's), its maximum: what the cluster autoscaler, which does not
    run here, adds for the sync Job's pods."""
    zone: str
    labels: dict[str, str]
    taints: list[Taint]
    gpu: bool
    disk_gib: int
    local_ssd: bool = False
    hugepages_2m: int = 0
    extra_labels: dict[str, str] = field(default_factory=dict)
    """Labels the platform derives from the pool's settings (GKE's accelerator network profile, capacity type)."""
    topology: tuple[str, ...] = ()
    """The pool's place in the fabric, outermost first (GKE: the reservation's block and sub-block names; AKS: the
    capacity reservation group): the topology labels' values."""
    efa_devices: int | None = None
    """EFA devices each node advertises where the plan installs the EFA device plugin (None: the machine's catalog
    figure, GPU_NODES)."""
    managed_group: bool = True
    """False where the nodes are not the platform's own node pool (HyperPod instance groups on EKS): the cloud's
    pool and platform labels do not apply."""


def _effect(e: str) -> str:
    return _EFFECTS.get(e, e)


def _gke(inputs: dict[str, Any], cfg: Any) -> Pool:
    nc = inputs.get("nodeConfig") or {}
    machine = nc["machineType"]
    accel = nc.get("guestAccelerators") or []
    res = ((nc.get("reservationAffinity") or {}).get("values") or [""])[0]
    extra: dict[str, str] = {}
    profile = (inputs.get("networkConfig") or {}).get("acceleratorNetworkProfile")
    if profile:
        # k3infra.catalog.gke ACCELERATOR_NETWORK_PROFILE_LABEL: GKE labels every node of such a pool.
        extra["gke.networks.io/accelerator-network-profile"] = profile
    return Pool(
        name=inputs["name"], machine=machine,
        count=int(inputs.get("nodeCount") or (inputs.get("autoscaling") or {}).get("totalMaxNodeCount") or 1),
        zone=(inputs.get("nodeLocations") or [cfg.zone])[0], labels=dict(nc.get("labels") or {}),
        taints=[Taint(t["key"], t.get("value", ""), _effect(t["effect"])) for t in nc.get("taints") or []],
        gpu=bool(accel), disk_gib=int(nc.get("diskSizeGb") or _BOOT_DISK_GIB["gcp"]),
        local_ssd=bool((nc.get("ephemeralStorageLocalSsdConfig") or {}).get("localSsdCount")),
        hugepages_2m=int(((nc.get("linuxNodeConfig") or {}).get("hugepagesConfig") or {}).get("hugepageSize2m") or 0),
        extra_labels={"cloud.google.com/gke-boot-disk": nc.get("diskType") or "pd-balanced", **extra},
        topology=_reservation_topology(res))


def _reservation_topology(path: str) -> tuple[str, ...]:
    """(block, sub-block) of a reservation path ``projects/P/reservations/R[/reservationBlocks/B[/reservationSubBlocks/S]]``;
    the reservation's name stands for a level the path does not name."""
    parts = path.split("/")
    named = {parts[i]: parts[i + 1] for i in range(0, len(parts) - 1, 2)}
    reservation = named.get("reservations", "reservation")
    block = named.get("reservationBlocks", reservation)
    return block, named.get("reservationSubBlocks", block)


def _eks(inputs: dict[str, Any], cfg: Any, launch_templates: Mapping[str, dict[str, Any]]) -> Pool:
    machine = (inputs.get("instanceTypes") or [None])[0]
    if machine is None:
        machine = next(iter(launch_templates.values()))["instanceType"]
    name = inputs.get("nodeGroupName") or inputs["_name"]
    scaling = inputs.get("scalingConfig") or {}
    return Pool(  # a group at zero nodes (the sync's) at its maximum: what the autoscaler would add
        name=name, machine=machine, count=int(scaling.get("desiredSize") or scaling.get("maxSize") or 1),
        zone=f"{cfg.region}a", labels=dict(inputs.get("labels") or {}),
        taints=[Taint(t["key"], t.get("value", ""), _effect(t["effect"])) for t in inputs.get("taints") or []],
        gpu=machine in ACCELERATORS, disk_gib=int(inputs.get("diskSize") or _BOOT_DISK_GIB["aws"]),
        extra_labels={"eks.amazonaws.com/capacityType": inputs.get("capacityType") or "ON_DEMAND"},
        # the GPU group's EFA device plugin advertises the instance's EFA devices (k3infra.aws.efa.needs_efa)
        efa_devices=EFA_LAYOUTS[machine].efa_devices if machine in ACCELERATORS and needs_efa(cfg) else None)


def _hyperpod(inputs: dict[str, Any], cfg: Any) -> list[Pool]:
    out = []
    for g in inputs.get("instanceGroups") or []:
        kc = g.get("kubernetesConfig") or {}
        out.append(Pool(
            name=g["instanceGroupName"], machine=g["instanceType"], count=int(g.get("instanceCount") or 1),
            zone=f"{cfg.region}a", labels=dict(kc.get("labels") or {}),
            taints=[Taint(t["key"], t.get("value", ""), t["effect"]) for t in kc.get("taints") or []],
            gpu=True, disk_gib=500, managed_group=False,
            # HyperPod labels its nodes with the instance group (docs: sagemaker-hyperpod-eks-operate).
            extra_labels={"sagemaker.amazonaws.com/instance-group-name": g["instanceGroupName"]}))
    return out


def _aks_taint(text: str) -> Taint:
    kv, effect = text.rsplit(":", 1)
    key, _, value = kv.partition("=")
    return Taint(key, value, effect)


def _aks(profile: dict[str, Any], cfg: Any, name_key: str) -> Pool:
    zones = profile.get("availabilityZones") or []
    return Pool(
        name=profile[name_key], machine=profile["vmSize"],
        count=int(profile.get("count") or (profile.get("maxCount") if profile.get("enableAutoScaling") else 0) or 1),
        zone=f"{cfg.region}-{zones[0]}" if zones else "0", labels=dict(profile.get("nodeLabels") or {}),
        taints=[_aks_taint(t) for t in profile.get("nodeTaints") or []], gpu=profile["vmSize"] in ACCELERATORS,
        disk_gib=int(profile.get("osDiskSizeGB") or _BOOT_DISK_GIB["azure"]),
        extra_labels={"kubernetes.azure.com/mode": (profile.get("mode") or "User").lower()},
        topology=(profile.get("capacityReservationGroupID", "").rsplit("/", 1)[-1],))


def _ack(inputs: dict[str, Any], cfg: Any) -> Pool:
    machine = inputs["instanceTypes"][0]
    return Pool(
        name=inputs["nodePoolName"], machine=machine, count=int(inputs.get("desiredSize") or 1),
        zone=f"{cfg.region}-a", labels={lab["key"]: lab.get("value", "") for lab in inputs.get("labels") or []},
        taints=[Taint(t["key"], t.get("value", ""), t.get("effect") or "NoSchedule") for t in inputs.get("taints") or []],
        gpu=machine in ACCELERATORS, disk_gib=int(inputs.get("systemDiskSize") or _BOOT_DISK_GIB["alicloud"]))


def pools(plan: Plan) -> list[Pool]:
    """Every node pool the plan registers, system pools first."""
    cfg = plan.config
    regs = plan.recording.ordered()
    launch_templates = {r.name: masked(r.inputs) for r in regs if r.type == "aws:ec2/launchTemplate:LaunchTemplate"}
    out: list[Pool] = []
    for r in regs:
        inputs = masked(r.inputs)
        if r.type == "gcp:container/nodePool:NodePool":
            out.append(_gke(inputs, cfg))
        elif r.type == "aws:eks/nodeGroup:NodeGroup":
            out.append(_eks({**inputs, "_name": r.name}, cfg, launch_templates))
        elif r.type == "aws-native:sagemaker:Cluster":
            out.extend(_hyperpod(inputs, cfg))
        elif r.type == "azure-native:containerservice:ManagedCluster":
            out.extend(_aks(p, cfg, "name") for p in inputs.get("agentPoolProfiles") or [])
        elif r.type == "azure-native:containerservice:AgentPool":
            out.append(_aks(inputs, cfg, "agentPoolName"))
        elif r.type == "alicloud:cs/nodePool:NodePool":
            out.append(_ack(inputs, cfg))
    return sorted(out, key=lambda p: p.gpu)


def charts(plan: Plan) -> dict[str, dict[str, Any]]:
    """The Helm charts of the render, by chart name: their rendered document (values included)."""
    return {str(item.document["chart"]).rsplit("/", 1)[-1]: item.document
            for item in apply_order(plan.recording) if item.chart}


# --- node objects ------------------------------------------------------------------------------------------------

def _cpu_node(machine: str) -> CpuNode:
    """A system pool's machine, or the sync pool's (catalog.transfer.SYNC_POOLS)."""
    return CPU_NODES.get(machine) or next(p.node for p in SYNC_POOLS.values() if p.node.sku == machine)


def _resources(cloud: Cloud, pool: Pool, gpus: int) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) of one node of ``pool``."""
    if pool.gpu:
        acc, shape = ACCELERATORS[pool.machine], GPU_NODES[pool.machine]
        vcpus, memory_gib, max_pods = acc.vcpus, acc.host_memory_gib, shape.max_pods
        disk_gib = int(acc.local_nvme_tb * 1000 / 1.073741824) if pool.local_ssd else pool.disk_gib
    else:
        node = _cpu_node(pool.machine)
        vcpus, memory_gib, disk_gib = node.vcpus, node.memory_gib, pool.disk_gib
        max_pods = system_max_pods(node)
    alloc = node_allocatable(cloud, vcpus, memory_gib, max_pods)
    huge_mib = pool.hugepages_2m * 2
    rules = CLOUD_NODES[cloud]
    capacity = {"cpu": str(vcpus), "memory": f"{memory_capacity_mib(memory_gib)}Mi",
                "ephemeral-storage": f"{disk_gib}Gi", "pods": str(max_pods), "hugepages-2Mi": f"{huge_mib}Mi",
                "hugepages-1Gi": "0"}
    allocatable = {"cpu": f"{alloc.cpu_millis}m", "memory": f"{alloc.memory_mib - huge_mib}Mi",
                   "ephemeral-storage": f"{int(disk_gib * (1 - rules.ephemeral_storage_eviction))}Gi",
                   "pods": str(max_pods), "hugepages-2Mi": f"{huge_mib}Mi", "hugepages-1Gi": "0"}
    if gpus:
        capacity["nvidia.com/gpu"] = allocatable["nvidia.com/gpu"] = str(gpus)
    efa = (pool.efa_devices if pool.efa_devices is not None else GPU_NODES[pool.machine].efa_devices) if pool.gpu else 0
    if efa:
        capacity["vpc.amazonaws.com/efa"] = allocatable["vpc.amazonaws.com/efa"] = str(efa)
    return capacity, allocatable


def _labels(cloud: Cloud, pool: Pool, node_name: str, arch: CpuArch, region: str) -> dict[str, str]:
    rules = CLOUD_NODES[cloud]
    fill = {"pool": pool.name, "boot_disk": pool.extra_labels.get("cloud.google.com/gke-boot-disk", ""),
            "capacity_type": pool.extra_labels.get("eks.amazonaws.com/capacityType", ""),
            "mode": pool.extra_labels.get("kubernetes.azure.com/mode", "user")}
    labels = {}
    if pool.managed_group:
        labels.update({k: v.format(**fill) for k, v in rules.platform_labels.items()})
        labels.update({k: pool.name for k in rules.pool_labels})
    labels.update(pool.extra_labels)
    labels.update({
        "kubernetes.io/arch": str(arch), "kubernetes.io/os": "linux", "kubernetes.io/hostname": node_name,
        "node.kubernetes.io/instance-type": pool.machine, "topology.kubernetes.io/zone": pool.zone,
        "topology.kubernetes.io/region": region, "type": "kwok",
    })
    if pool.gpu:
        shape = GPU_NODES[pool.machine]
        labels.update(shape.accelerator_labels)
        labels.update(_topology(shape.topology_labels, pool, node_name))
    labels.update(pool.labels)
    return labels


def _topology(keys: Sequence[str], pool: Pool, node_name: str) -> dict[str, str]:
    """Topology label values: GKE's block, sub-block and host (one host per node); GPU feature discovery's clique
    ``<cluster uuid>.<clique id>`` (NVIDIA/k8s-device-plugin internal/lm/imex.go), one per pool's rack."""
    out: dict[str, str] = {}
    levels = list(pool.topology) or [f"{pool.name}-domain"]
    for key in keys:
        if key == "nvidia.com/gpu.clique":
            out[key] = f"{uuid.uuid5(uuid.NAMESPACE_DNS, levels[-1])}.0"
        elif key.endswith("-host"):
            out[key] = f"{levels[-1][:50]}-{node_name}"[:63]
        else:
            out[key] = (levels[0] if key.endswith("-block") else levels[-1])[:63]
    return out


def _taints(cloud: Cloud, pool: Pool, arch: CpuArch) -> list[Taint]:
    rules = CLOUD_NODES[cloud]
    taints = list(pool.taints)
    if pool.gpu and rules.gpu_taint and all(t.key != rules.gpu_taint.key for t in taints):
        taints.append(rules.gpu_taint)
    if arch == CpuArch.ARM64 and rules.arm64_taint:
        taints.append(rules.arm64_taint)
    return taints


def _device_plugin_gpus(cloud: Cloud, pool: Pool, labels: Mapping[str, str], taints: Sequence[Taint],
                        plugin: Mapping[str, Any] | None) -> int:
    """GPUs the node advertises: GKE and ACK run NVIDIA's device plugin themselves (GKE gpus how-to: "GKE installs
    the device plugin"; ACK installs it on every GPU node pool); elsewhere it takes the chart, on the nodes the
    chart's affinity (default: ``nvidia.com/gpu.present=true``, its values.yaml) and tolerations admit."""
    if not pool.gpu:
        return 0
    gpus = ACCELERATORS[pool.machine].gpus_per_node
    if cloud in (Cloud.GCP, Cloud.ALICLOUD) or pool.machine.startswith("ml."):
        return gpus  # HyperPod installs the plugin with its own dependencies chart
    if plugin is None:
        return 0
    values = plugin.get("values") or {}
    affinity = values.get("affinity") or {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In",
                                                     "values": ["true"]}]}]}}}
    return gpus if runs_on(labels, taints, values.get("nodeSelector") or {}, affinity,
                           values.get("tolerations") or []) else 0


@dataclass
class Profile:
    """A stack's nodes and what the platform and its charts publish about them."""

    nodes: list[dict[str, Any]]
    slices: list[dict[str, Any]]
    device_classes: list[dict[str, Any]]
    gpu_nodes: list[str]
    system_nodes: list[str]
    notes: list[str]
    """What stands in for what (chart effects)."""
    charts: list[str] = field(default_factory=list)
    """The charts of the render, by chart name."""

    @property
    def objects(self) -> list[dict[str, Any]]:
        """Everything to create, in order: nodes, DeviceClasses, then ResourceSlices (which name their node)."""
        return [*self.nodes, *self.device_classes, *self.slices]


def existing_cluster_profile(plan: Plan) -> Profile:
    """The profile of an existing-cluster stack (``cloud: kubernetes``), whose nodes are the user's: kwok GPU nodes
    shaped from the stack's own plan (tests/e2e/cluster_objects.py, the same ones the real engine's run gets) and two
    CPU nodes; where the stack's replicas claim ComputeDomains (``draDriver: present``), what the NVIDIA DRA driver
    the user runs publishes: its DeviceClasses and its kubelet plugin's slice on every GPU node."""
    from tests.e2e import cluster_objects  # the e2e tests' nodes: one shape for both harnesses

    gpu, cpu = cluster_objects.gpu_nodes(plan), cluster_objects.cpu_nodes()
    names = [n["metadata"]["name"] for n in gpu]
    domains = plan.config.sizing.layout.multi_node_nvlink
    return Profile(
        nodes=[*gpu, *cpu], slices=[dra.compute_domain_slice(n) for n in names] if domains else [],
        device_classes=dra.compute_domain_classes() if domains else [], gpu_nodes=names,
        system_nodes=[n["metadata"]["name"] for n in cpu],
        notes=["the user's cluster: kwok GPU nodes from the plan's gpuNodes output (tests/e2e/cluster_objects.py)",
               *(["the NVIDIA DRA driver the stack says is present: its DeviceClasses and ComputeDomain slices"]
                 if domains else [])],
        charts=sorted(charts(plan)))


def profile(plan: Plan) -> Profile:
    """The node profile of ``plan``'s stack (see the module docstring)."""
    cfg = plan.config
    cloud = cfg.cloud
    if cloud == Cloud.KUBERNETES:
        return existing_cluster_profile(plan)
    chart_docs = charts(plan)
    out = Profile([], [], [], [], [], [], sorted(chart_docs))
    for pool in pools(plan):
        arch = ACCELERATORS[pool.machine].cpu_arch if pool.gpu else CpuArch.AMD64
        for i in range(pool.count):
            name = f"{pool.name}-{i}".lower().replace("_", "-")
            labels = _labels(cloud, pool, name, arch, cfg.region)
            taints = _taints(cloud, pool, arch)
            gpus = _device_plugin_gpus(cloud, pool, labels, taints, chart_docs.get("nvidia-device-plugin"))
            capacity, allocatable = _resources(cloud, pool, gpus)
            out.nodes.append({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
                "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]},
                "status": {"capacity": capacity, "allocatable": allocatable,
                           "nodeInfo": {"architecture": str(arch), "operatingSystem": "linux",
                                        "kubeletVersion": "v1.35.4"}},
            })
            (out.gpu_nodes if pool.gpu else out.system_nodes).append(name)
            if pool.gpu:
                out.slices.extend(dra.node_slices(name, labels, taints, pool, chart_docs, index=i))
    out.device_classes.extend(dra.device_classes(cloud, chart_docs, any(
        (p.labels.get(DRANET_LABEL) == "true" and p.machine in GKE_MACHINES) for p in pools(plan))))
    out.notes.extend(dra.notes(chart_docs))
    return out


__all__ = ["KWOK_ANNOTATION", "Pool", "Profile", "charts", "existing_cluster_profile", "pools", "profile"]

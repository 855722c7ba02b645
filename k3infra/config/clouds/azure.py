"""Azure configuration rules beyond the cloud-neutral ones.

Upgrades: the cluster channel defaults to none (the Kubernetes version moves only when the stack says), the node OS
channel to SecurityPatch in the maintenance window (None would leave every node unpatched), each channel with the
warning of what it will do to the GPU pool (learn.microsoft.com aks/auto-upgrade-cluster,
aks/auto-upgrade-node-os-image, aks/planned-maintenance). API access: a public API server (the default, since AKS
creates the cluster's network itself) admits azure.authorizedIpRanges only (aks/api-server-authorized-ip-ranges);
a private one has no authorized ranges (aks/private-clusters). A stack with neither is a configuration problem
(config.clouds.control_plane_access). Identity: Entra ID with local accounts off unless azure.localAccounts, and
then no 0.0.0.0/0 and no Entra admin groups (k3infra.azure.entra).
"""

import re
from typing import Any, Mapping

from ...catalog import CapacityType, Loader
from ...catalog.control_planes import AKS_RBAC_PROPAGATION_MINUTES
from ..model import AzureConfig
from ..problems import Problems
from .common import (EXAMPLE_CIDR, OPEN_TO_EVERY_ADDRESS, CheckContext, control_plane_access, given, maintenance_window,
                     window_text)

K = "k3infra:"

GROUP_ID = re.compile(r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
                      r"Microsoft\.Compute/capacityReservationGroups/(?P<name>[^/]+)", re.IGNORECASE)

REGISTRY_ID = re.compile(r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.ContainerRegistry/"
                         r"registries/(?P<name>[^/]+)", re.IGNORECASE)

ACR_HOST = re.compile(r"(?P<name>[a-z0-9]+)\.azurecr\.io/", re.IGNORECASE)
"""An image in an Azure Container Registry: its login server is ``<registry name>.azurecr.io``."""

UBUNTU_2404_FROM = (1, 35)
"""AKS runs Ubuntu 24.04 for osSKU Ubuntu from Kubernetes 1.35 (MicrosoftDocs/azure-aks-docs upgrade-os-version.md:
"Ubuntu 24.04 is default for Kubernetes versions 1.35+"). The GB300 node image exists for arm64 Ubuntu 24.04 only
(Azure/AgentBaker install-dependencies.sh configureGraceBlackwell: "NVIDIA GB setup is only supported on arm64
Ubuntu 24.04"); 1.35 also serves resource.k8s.io/v1, which the DRA claims need (1.34+)."""

GB_GPU_MODELS = frozenset({"GB200", "GB300"})
"""Grace Blackwell GPUs: the VM sizes that need AKS's GB node image."""


def pool_wait_seconds(v: dict[str, object]) -> int:
    """What the first `pulumi up` waits before it creates the GPU pool: a pool that joins a Capacity Reservation
    Group waits ``azure.rolePropagationMinutes`` after the cluster identity's grant on it (k3infra.azure.gpu_pool, a
    time:Sleep beside the cluster's creation: the identity exists before the cluster), else nothing."""
    capacity, azure = v.get("capacity"), v.get("azure")
    if not isinstance(capacity, dict) or capacity.get("type") != CapacityType.CAPACITY_RESERVATION_GROUP:
        return 0
    minutes = azure.get("rolePropagationMinutes") if isinstance(azure, dict) else None
    return 60 * minutes if isinstance(minutes, int) and not isinstance(minutes, bool) else 0


def kubernetes_wait_seconds(v: dict[str, object]) -> int:
    """What the first `pulumi up` waits after the cluster before it creates any Kubernetes object: with Entra ID (the
    default) the Kubernetes provider waits for the deployer's cluster-admin grant to propagate (k3infra.azure.entra, a
    time:Sleep of catalog.control_planes.AKS_RBAC_PROPAGATION_MINUTES); with azure.localAccounts true there is no
    grant and no wait."""
    azure = v.get("azure")
    local = isinstance(azure, dict) and azure.get("localAccounts") is True
    return 0 if local else 60 * AKS_RBAC_PROPAGATION_MINUTES


def check(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    """Report Azure-specific problems in ``ctx``."""
    azure = ctx.values.get("azure")
    azure = azure if isinstance(azure, dict) else {}
    accel, sizing = ctx.accelerator, ctx.sizing

    # Quota gate, config-time half (the lookup half is k3infra.azure.quota): 002 §4.2.
    quota = azure.get("quotaVcpus")
    if isinstance(quota, int) and accel is not None and sizing is not None and accel.quota_family:
        need = sizing.total_nodes * accel.vcpus
        if quota < need:
            p.add(K + "azure.quotaVcpus",
                  f"{accel.quota_family} quota of {quota} vCPUs in {ctx.region} is below what the GPU pool needs: "
                  f"{sizing.total_nodes} x {accel.sku} x {accel.vcpus} vCPUs = {need} vCPUs. The quota defaults to 0; "
                  "request an increase under Quotas > Compute (002 §4.2; approval takes days)",
                  quota, f"at least {need} (the approved {accel.quota_family} vCPUs in {ctx.region})")

    # The reservation group: the id carries the subscription, not the region or zone. Those are checked at
    # preview by AksGpuNodePool's lookup; here only what the id itself shows.
    cap = ctx.capacity
    if cap is not None and cap.type == CapacityType.CAPACITY_RESERVATION_GROUP and cap.group_id:
        m = GROUP_ID.fullmatch(cap.group_id)
        sub = ctx.raw.get("azure-native:subscriptionId")
        if m and isinstance(sub, str) and m.group("sub").lower() != sub.lower():
            warnings.append(f"capacity.groupId is in subscription {m.group('sub')}, the stack in {sub}: the preview "
                            "lookup cannot read a group shared from another subscription, so its region and zone "
                            "are not checked")
    if cap is not None and cap.type == CapacityType.ON_DEMAND and accel is not None and accel.quota_family:
        warnings.append(f"capacity type on-demand on Azure: nothing holds {accel.sku} for this stack; 002 §4.2 "
                        "recommends a Capacity Reservation Group for persistent workloads")

    if azure.get("gpuDriver") == "None":
        warnings.append("azure.gpuDriver is None: AKS installs no NVIDIA driver and k3infra no device plugin on the "
                        "GPU pool; install the NVIDIA GPU Operator (driver, device plugin, GPU feature discovery) "
                        "before the server can request nvidia.com/gpu")

    _node_image(ctx, p, warnings)
    _registry(ctx, azure, p, warnings)

    subgroup = azure.get("interconnectSubgroupId")
    if subgroup and accel is not None and not accel.fabric.rdma:
        p.add(K + "azure.interconnectSubgroupId", f"pins the server pods' RDMA NICs to one InfiniBand fabric, and "
              f"{accel.sku} has no RDMA fabric for them to claim", subgroup,
              "unset, or an accelerator with InfiniBand (ND GB300 v6)")

    if ctx.weights is not None and ctx.weights.loader == Loader.FUSE:
        warnings.append("weights.loader fuse on Azure: the Blob CSI mount authenticates with the pod's workload "
                        "identity token (mountWithWorkloadIdentityToken, Blob CSI driver 1.27+, preview) because "
                        "the storage account has shared-key access off; the streamer loader (az://) needs neither")

    _upgrades(ctx, p, warnings)
    _api_access(ctx, p, warnings)


REIMAGING_NODE_CHANNELS = ("NodeImage", "SecurityPatch")
"""Node OS channels that reimage nodes (drain, reboot) in the window (aks/auto-upgrade-node-os-image): NodeImage
every week, SecurityPatch when an update cannot be applied in place."""


def _upgrades(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    azure = ctx.values.get("azure")
    if not isinstance(azure, dict):
        return
    channel, node_channel = azure.get("upgradeChannel"), azure.get("nodeOsUpgradeChannel")
    when = window_text(azure.get("maintenanceWindow"))
    cluster = ctx.cluster
    if isinstance(channel, str) and channel != "none":
        if cluster is not None and cluster.kubernetes_version:
            p.add(K + "cluster.kubernetesVersion", f"azure.upgradeChannel {channel} moves the Kubernetes version, and "
                  "a pinned version would be sent back on the next `pulumi up` (AKS refuses a downgrade)",
                  cluster.kubernetes_version, "unset (AKS's default at creation, then the channel's)")
        warnings.append(f"azure.upgradeChannel {channel}: AKS upgrades the control plane and then every node pool, the "
                        f"GPU pool too, on {when}; each GPU node is drained in turn, so the replica it serves stops "
                        "until it reloads the weights")
    # No PodDisruptionBudget guards a one-replica server (nothing may block every eviction of it): a drain evicts
    # its pods at once.
    if node_channel == "SecurityPatch":
        warnings.append(f"azure.nodeOsUpgradeChannel SecurityPatch: AKS applies tested security updates to every node "
                        f"on {when}, in place where it can; the channel is the cluster's (the pinned API, "
                        "containerservice 2025-09-01, has no per-pool channel), so it reaches the GPU pool too. An "
                        "update AKS cannot apply in place reimages the node: the GPU pool does so in place, one node at "
                        "a time (maxSurge 0: the capacity reservation holds no spare node), and nothing holds the "
                        "drain (one replica has no disruption budget), so such a reimage stops the server until the "
                        "node is back and the weights are reloaded. azure.nodeOsUpgradeChannel None stops it and "
                        "leaves every node unpatched")
    elif node_channel in REIMAGING_NODE_CHANNELS:
        warnings.append(f"azure.nodeOsUpgradeChannel {node_channel}: AKS reimages the GPU nodes one at a time on "
                        f"{when}; nothing holds the drain (one replica has no disruption budget), so each reimage stops "
                        "the server until the node is back and the weights are reloaded")
    elif node_channel == "None":
        warnings.append("azure.nodeOsUpgradeChannel None: AKS applies no OS security updates to any node, the system "
                        "pool's included (\"you are responsible for your security updates\", the API's "
                        "NodeOSUpgradeChannel): patch them yourself (`az aks nodepool upgrade --node-image-only`), or "
                        "leave the channel at its default, SecurityPatch")
    elif node_channel == "Unmanaged":
        warnings.append("azure.nodeOsUpgradeChannel Unmanaged: Ubuntu's unattended upgrades patch every node daily "
                        "around 06:00 UTC, outside the maintenance window, and reboots are yours to schedule")


def _api_access(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    azure = ctx.values.get("azure")
    if not isinstance(azure, dict):
        return
    ranges = azure.get("authorizedIpRanges")
    ranges = ranges if isinstance(ranges, list) else None
    private = azure.get("privateCluster") is True
    if private and ranges:
        p.add(K + "azure.authorizedIpRanges", "authorized IP ranges apply to a public API server; a private AKS "
              "cluster has no internet address to restrict", ranges, "unset, or azure.privateCluster: false")
    control_plane_access(p, warnings, plane="AKS API server", cidrs_key="azure.authorizedIpRanges", cidrs=ranges,
                         private_key="azure.privateCluster", private=private)
    _api_identity(ctx, azure, ranges, p)


def _api_identity(ctx: CheckContext, azure: dict[str, Any], ranges: list[Any] | None, p: Problems) -> None:
    """Who the API server lets in: Entra ID with local accounts off (the default, k3infra.azure.entra), or local
    accounts, whose cluster-admin certificate no open range may expose (aks/manage-local-accounts-managed-azure-ad)."""
    if azure.get("localAccounts") is not True:
        return
    for i, cidr in enumerate(ranges or ()):
        if cidr == OPEN_TO_EVERY_ADDRESS:
            p.add(f"{K}azure.authorizedIpRanges[{i}]", "opens the AKS API server to every internet address, and "
                  "azure.localAccounts true keeps local accounts: a cluster-admin client certificate, valid until the "
                  "cluster's certificates are rotated, would answer from anywhere, with no Entra ID sign-in, MFA or "
                  "conditional access in front of it", cidr,
                  f"the CIDRs `pulumi up` and kubectl connect from ({EXAMPLE_CIDR}); or azure.privateCluster: true; "
                  f"or azure.localAccounts: false (Entra ID, local accounts disabled, the default) to open it on "
                  "purpose")
    groups = azure.get("entraAdminGroups")
    if groups:
        p.add(K + "azure.entraAdminGroups", "names Entra groups as cluster-admin, and azure.localAccounts true turns "
              "the Entra integration off", groups, "unset, or azure.localAccounts: false")
    if given(ctx, "azure", "deployerPrincipalType"):
        p.add(K + "azure.deployerPrincipalType", "names the kind of identity the stack grants Azure RBAC cluster "
              "admin, and azure.localAccounts true makes no such grant", azure.get("deployerPrincipalType"),
              "unset, or azure.localAccounts: false")

def default_kubernetes_version(gpu_model: str, upgrade_channel: str) -> str | None:
    """The cluster version of a stack that states none: 1.35 for Grace Blackwell VM sizes, else AKS's default.
    Not with an upgrade channel: the channel moves the version, and a pinned one would be sent back."""
    if gpu_model in GB_GPU_MODELS and upgrade_channel == "none":
        return f"{UBUNTU_2404_FROM[0]}.{UBUNTU_2404_FROM[1]}"
    return None


def _node_image(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    """Grace Blackwell VM sizes need Kubernetes 1.35 or later, where osSKU Ubuntu is Ubuntu 24.04."""
    accel = ctx.accelerator
    if accel is None or accel.gpu_model not in GB_GPU_MODELS:
        return
    cluster = ctx.values.get("cluster")
    version = cluster.get("kubernetesVersion") if isinstance(cluster, dict) else None
    azure = ctx.values.get("azure")
    channel = azure.get("upgradeChannel") if isinstance(azure, dict) else None
    if version is None and isinstance(channel, str) and channel != "none":
        warnings.append(f"azure.upgradeChannel {channel} without cluster.kubernetesVersion: AKS creates the cluster at "
                        f"its default version, which must be 1.35 or later for {accel.sku} (its node image is Ubuntu "
                        "24.04, osSKU Ubuntu's OS from 1.35); check `az aks get-versions` before `pulumi up`")
    need = f"{UBUNTU_2404_FROM[0]}.{UBUNTU_2404_FROM[1]} or later (the default for this VM size)"
    why = (f"{accel.sku} runs only on AKS's Ubuntu 24.04 GB node image, which osSKU Ubuntu gets from Kubernetes "
           "1.35 (upgrade-os-version.md; AgentBaker configureGraceBlackwell)")
    m = re.match(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
    if m and (int(m.group(1)), int(m.group(2))) < UBUNTU_2404_FROM:
        p.add(K + "cluster.kubernetesVersion", why, version, need)


def _registry(ctx: CheckContext, azure: dict[str, object], p: Problems, warnings: list[str]) -> None:
    """The kubelet can pull the image: an ACR image names its registry in azure.containerRegistry."""
    if K + "image" in p.keys():
        return  # the image is wrong already: one mistake, one problem
    image = ctx.values.get("image")
    if not isinstance(image, str) and ctx.engine is not None:
        image = ctx.engine.default_image
    host = ACR_HOST.match(image) if isinstance(image, str) else None
    registry = azure.get("containerRegistry")
    named = REGISTRY_ID.fullmatch(registry) if isinstance(registry, str) else None
    if named is not None:
        if host is None:
            p.add(K + "azure.containerRegistry", f"grants pull access to registry {named.group('name')}, and the "
                  f"image {image} is not in an Azure Container Registry", registry,
                  "unset, or the registry of an image <name>.azurecr.io/...")
        elif host.group("name").lower() != named.group("name").lower():
            p.add(K + "azure.containerRegistry", f"names registry {named.group('name')}, and the image is in "
                  f"{host.group('name')}.azurecr.io", registry,
                  f"the resource id of registry {host.group('name')}")
    elif host is not None and registry is None:
        warnings.append(f"the image is in {host.group('name')}.azurecr.io and azure.containerRegistry is not set: "
                        "the kubelet identity gets no AcrPull, so a private registry refuses the pull; set it to the "
                        "registry's resource id")


def settings(v: dict[str, Any], raw: Mapping[str, Any], region: str, stack: str) -> AzureConfig:
    """The typed ``k3infra:azure`` section (the subscription is the provider's; the resource group defaults to
    ``rg-k3-<stack>``)."""
    a = v["azure"]
    return AzureConfig(location=region, subscription_id=raw.get("azure-native:subscriptionId"),
                       resource_group=a.get("resourceGroup") or f"rg-k3-{stack}", quota_vcpus=a.get("quotaVcpus"),
                       gpu_driver=a["gpuDriver"], role_propagation_minutes=a["rolePropagationMinutes"],
                       upgrade_channel=a["upgradeChannel"], node_os_upgrade_channel=a["nodeOsUpgradeChannel"],
                       maintenance_window=maintenance_window(a["maintenanceWindow"]),
                       authorized_ip_ranges=tuple(a.get("authorizedIpRanges") or ()),
                       private_cluster=bool(a["privateCluster"]), local_accounts=bool(a["localAccounts"]),
                       deployer_principal_type=a["deployerPrincipalType"],
                       entra_admin_groups=tuple(a.get("entraAdminGroups") or ()),
                       container_registry=a.get("containerRegistry"),
                       interconnect_subgroup_id=a.get("interconnectSubgroupId"))

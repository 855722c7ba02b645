"""Azure configuration rules beyond the cloud-neutral ones."""

import re

from ...catalog import CapacityType, Loader
from ..problems import Problems
from . import CheckContext

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

    _node_image(ctx, p)
    _registry(ctx, azure, p, warnings)

    if ctx.weights is not None and ctx.weights.loader == Loader.FUSE:
        warnings.append("weights.loader fuse on Azure: the Blob CSI mount authenticates with the pod's workload "
                        "identity token (mountWithWorkloadIdentityToken, Blob CSI driver 1.27+, preview) because "
                        "the storage account has shared-key access off; the streamer loader (az://) needs neither")


def default_kubernetes_version(gpu_model: str) -> str | None:
    """The cluster version of a stack that states none: 1.35 for Grace Blackwell VM sizes, else AKS's default."""
    return f"{UBUNTU_2404_FROM[0]}.{UBUNTU_2404_FROM[1]}" if gpu_model in GB_GPU_MODELS else None


def _node_image(ctx: CheckContext, p: Problems) -> None:
    """Grace Blackwell VM sizes need Kubernetes 1.35 or later, where osSKU Ubuntu is Ubuntu 24.04."""
    accel = ctx.accelerator
    if accel is None or accel.gpu_model not in GB_GPU_MODELS:
        return
    cluster = ctx.values.get("cluster")
    version = cluster.get("kubernetesVersion") if isinstance(cluster, dict) else None
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

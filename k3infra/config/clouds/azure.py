"""Azure configuration rules beyond the cloud-neutral ones."""

import re

from ...catalog import CapacityType, Loader
from ..problems import Problems
from . import CheckContext

K = "k3infra:"

GROUP_ID = re.compile(r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
                      r"Microsoft\.Compute/capacityReservationGroups/(?P<name>[^/]+)", re.IGNORECASE)


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
        warnings.append("azure.gpuDriver is None: AKS installs no NVIDIA driver or device plugin on the GPU pool; "
                        "install the NVIDIA GPU Operator before the server can request nvidia.com/gpu")

    if ctx.weights is not None and ctx.weights.loader == Loader.FUSE:
        warnings.append("weights.loader fuse on Azure: the Blob CSI mount authenticates with the pod's workload "
                        "identity token (mountWithWorkloadIdentityToken, Blob CSI driver 1.27+, preview) because "
                        "the storage account has shared-key access off; the streamer loader (az://) needs neither")

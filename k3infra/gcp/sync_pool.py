"""GkeSyncPool: the weight sync's own node pool, empty until the sync Job's pods ask for nodes.

The sync copies 1.56 TB from the Hub into the bucket once; on the system nodes (e2-standard-8, 16 Gbps egress) it
is held to a few Gbps. This pool holds network-optimized machines (catalog.transfer.SYNC_POOLS: c3-highcpu-44 with
Tier_1 egress and gVNIC, which Tier_1 needs) at zero nodes: GKE's cluster autoscaler adds them when the Job's pods
are pending and removes them once the pods are gone (the Job ends when the completion marker is written), so the
pool costs the copy's minutes. Its taint keeps every other pod off it; the Job tolerates it and selects its label.
"""

from typing import NotRequired, Optional, TypedDict

import pulumi
import pulumi_gcp as gcp

from ..catalog.transfer import SYNC_POOL_LABEL, SYNC_POOL_TAINT_KEY, SyncPool
from ..serving.contract import SyncNodes

POOL_NAME = "sync"
"""GKE name of the sync node pool."""


class GkeSyncPoolArgs(TypedDict):
    """Arguments of GkeSyncPool."""

    project: str
    """Project of the cluster."""
    region: str
    """Region of the (regional) cluster."""
    zone: str
    """Zone the pool's nodes run in (the cluster's node zone, next to the bucket's region)."""
    cluster: pulumi.Input[str]
    """Name of the cluster."""
    service_account: pulumi.Input[str]
    """The nodes' service account (the cluster's)."""
    pool: SyncPool
    """The catalog's sync pool: machine type, Tier_1."""
    nodes: NotRequired[int]
    """Most nodes the pool grows to: one per sync worker (the sizing's sync nodes). Default: the catalog's."""


class GkeSyncPool(pulumi.ComponentResource):
    """An autoscaled GKE node pool of network-optimized CPU machines that exists at zero nodes between syncs."""

    node_pool: gcp.container.NodePool
    """The GKE node pool."""
    sync_nodes: SyncNodes
    """What the sync Job needs to land on the pool."""

    def __init__(self, name: str, args: GkeSyncPoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:gcp:GkeSyncPool", name, None, opts)
        pool = args["pool"]
        tier = (gcp.container.NodePoolNetworkConfigArgs(
            network_performance_config=gcp.container.NodePoolNetworkConfigNetworkPerformanceConfigArgs(
                total_egress_bandwidth_tier="TIER_1")) if pool.tier_1 else None)
        self.node_pool = gcp.container.NodePool(
            f"{name}-pool",
            gcp.container.NodePoolArgs(
                name=POOL_NAME, project=args["project"], cluster=args["cluster"], location=args["region"],
                node_locations=[args["zone"]],
                initial_node_count=0,
                # total_*: the bounds over all the pool's zones; zero nodes while no sync pod is pending.
                autoscaling=gcp.container.NodePoolAutoscalingArgs(
                    total_min_node_count=0, total_max_node_count=args.get("nodes") or pool.nodes,
                    location_policy="ANY"),
                management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
                network_config=tier,
                node_config=gcp.container.NodePoolNodeConfigArgs(
                    machine_type=pool.node.sku,
                    disk_type="pd-balanced",
                    disk_size_gb=100,
                    # Tier_1 bandwidth needs gVNIC (cloud.google.com/compute/docs/networking/
                    # configure-vm-with-high-bandwidth-configuration).
                    gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
                    service_account=args["service_account"],
                    oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
                    workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                        mode="GKE_METADATA"),
                    shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                        enable_secure_boot=True, enable_integrity_monitoring=True),
                    labels={SYNC_POOL_LABEL: POOL_NAME},
                    taints=[gcp.container.NodePoolNodeConfigTaintArgs(
                        key=SYNC_POOL_TAINT_KEY, value="true", effect="NO_SCHEDULE")],
                ),
            ),
            pulumi.ResourceOptions(parent=self))
        self.sync_nodes = SyncNodes(node_selector={SYNC_POOL_LABEL: POOL_NAME},
                                    tolerations=[{"key": SYNC_POOL_TAINT_KEY, "operator": "Exists",
                                                  "effect": "NoSchedule"}])
        self.register_outputs({"pool_name": self.node_pool.name})


__all__ = ["GkeSyncPool", "GkeSyncPoolArgs", "POOL_NAME"]

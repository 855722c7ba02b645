"""AksSyncPool: the weight sync's own agent pool, at zero nodes until the sync Job's pods ask for nodes.

The sync copies 1.56 TB from the Hub into the storage account once; on the system nodes (Standard_D8s_v5, 12.5
Gbps) the Hub's streams hold it to a few Gbps. This User pool holds network-optimized VMs (catalog.transfer
SYNC_POOLS: Standard_D48s_v5, 24 Gbps, accelerated networking always on) under the cluster autoscaler with a
minimum of zero: AKS adds the nodes when the Job's pods are pending and removes them once the pods are gone (the
Job ends when the completion marker is written), so the pool costs the copy's minutes. The subscription needs
the family's vCPU quota for ``nodes`` x 48 vCPUs. Its taint keeps every other pod off it; the Job tolerates it.
"""

from typing import Mapping, NotRequired, Optional, TypedDict

import pulumi
from pulumi_azure_native import containerservice as aks

from ..catalog.transfer import SYNC_POOL_LABEL, SYNC_POOL_TAINT_KEY, SyncPool
from ..serving.contract import SyncNodes

POOL_NAME = "sync"
"""AKS name of the sync agent pool (1-12 lowercase letters and digits)."""


class AksSyncPoolArgs(TypedDict):
    """Arguments of AksSyncPool."""

    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    cluster_name: pulumi.Input[str]
    """Name of the AKS cluster."""
    pool: SyncPool
    """The catalog's sync pool: VM size."""
    nodes: NotRequired[int]
    """Most nodes the pool grows to: one per sync worker (the sizing's sync nodes). Default: the catalog's."""
    tags: Mapping[str, str]
    """Tags of the pool's scale set."""


class AksSyncPool(pulumi.ComponentResource):
    """An autoscaled AKS User pool of network-optimized VMs that sits at zero nodes between syncs."""

    agent_pool: aks.AgentPool
    """The AKS agent pool."""
    sync_nodes: SyncNodes
    """What the sync Job needs to land on the pool."""

    def __init__(self, name: str, args: AksSyncPoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:azure:AksSyncPool", name, None, opts)
        pool = args["pool"]
        self.agent_pool = aks.AgentPool(
            f"{name}-pool",
            resource_group_name=args["resource_group_name"],
            resource_name_=args["cluster_name"],
            agent_pool_name=POOL_NAME,
            mode=aks.AgentPoolMode.USER,
            vm_size=pool.node.sku,
            count=0,
            enable_auto_scaling=True,
            min_count=0,
            max_count=args.get("nodes") or pool.nodes,
            node_labels={SYNC_POOL_LABEL: POOL_NAME},
            node_taints=[f"{SYNC_POOL_TAINT_KEY}=true:NoSchedule"],
            os_type=aks.OSType.LINUX,
            os_sku=aks.OSSKU.UBUNTU,
            type=aks.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
            tags=dict(args["tags"]),
            # The autoscaler owns the count: a second `pulumi up` must not set it back to zero mid-copy.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["count"]))
        self.sync_nodes = SyncNodes(node_selector={SYNC_POOL_LABEL: POOL_NAME},
                                    tolerations=[{"key": SYNC_POOL_TAINT_KEY, "operator": "Exists",
                                                  "effect": "NoSchedule"}])
        self.register_outputs({"pool_name": POOL_NAME})


__all__ = ["AksSyncPool", "AksSyncPoolArgs", "POOL_NAME"]

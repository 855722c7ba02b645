"""The arguments of :class:`k3infra.gcp.cluster.GkeCluster`: what a caller may set and the default of each."""

from enum import StrEnum
from typing import NotRequired, Optional, Sequence, TypedDict

import pulumi


class ReleaseChannel(StrEnum):
    """GKE release channel."""

    RAPID = "RAPID"
    REGULAR = "REGULAR"
    STABLE = "STABLE"
    EXTENDED = "EXTENDED"


class UpgradeExclusion(StrEnum):
    """Scope of the maintenance exclusion that holds GKE's automatic upgrades (GKE maintenance exclusions)."""

    NO_MINOR_OR_NODE_UPGRADES = "NO_MINOR_OR_NODE_UPGRADES"
    """No node upgrades and no minor control-plane upgrades; control-plane patches still apply."""
    NO_MINOR_UPGRADES = "NO_MINOR_UPGRADES"
    """No minor upgrades; node and control-plane patches still apply."""


class GkeClusterArgs(TypedDict):
    """Arguments of :class:`GkeCluster`."""

    project: pulumi.Input[str]
    """Project that holds the cluster and its network."""
    region: str
    """Region of the control plane, the VPC subnets and Cloud NAT."""
    zone: str
    """Zone the nodes run in (the zone of the GPU reservation)."""
    cluster_name: str
    """GKE cluster name (at most 40 characters). Also prefixes the network, subnets and service account."""
    kubernetes_version: NotRequired[Optional[str]]
    """GKE version to create the control plane at (``1.34`` or ``1.34.3-gke.1318000``); preview fails when the
    channel offers nothing that new. Default: chosen from the channel (``gpu_machine_type``)."""
    gpu_machine_type: NotRequired[Optional[str]]
    """GPU machine type the cluster's pools run. Its minimum GKE version (k3infra.catalog.gke) decides the version:
    the channel's default when that meets it, else the channel's newest; preview fails when neither does.
    Default: none (the channel's default)."""
    release_channel: NotRequired[ReleaseChannel]
    """Release channel. Default: REGULAR (cluster-toolkit examples/gke-a4x-max-bm and gke-a4)."""
    maintenance_window_start: NotRequired[str]
    """Start of the daily four-hour maintenance window, HH:MM UTC. Default: 09:00."""
    upgrade_exclusion: NotRequired[Optional[UpgradeExclusion]]
    """Maintenance exclusion until the minor version's end of support; None for none. Default:
    NO_MINOR_OR_NODE_UPGRADES: GKE never recreates the GPU nodes on its own (node auto-upgrade cannot be turned
    off in a release channel)."""
    upgrade_exclusion_start: NotRequired[str]
    """When the exclusion starts (RFC 3339). Default: 2026-01-01T00:00:00Z."""
    deletion_protection: NotRequired[pulumi.Input[bool]]
    """Refuse to delete the cluster (``pulumi destroy`` fails until it is turned off). Default: true."""
    system_machine_type: NotRequired[pulumi.Input[str]]
    """Machine type of the CPU system pool. Default: e2-standard-8 (002 §5.2)."""
    system_node_count: NotRequired[pulumi.Input[int]]
    """Nodes in the system pool. Default: 2 (002 §5.2 ``--num-nodes=2``)."""
    multi_networking: NotRequired[bool]
    """Enable multi-networking (extra node networks for GPU NICs). Fixed at creation. Default: false."""
    proxy_only_subnet: NotRequired[bool]
    """Create the regional proxy-only subnet a GKE Gateway needs (both ``gke-l7-rilb`` and
    ``gke-l7-regional-external-managed`` run their Envoy proxies in it). Default: false."""
    node_cidr: NotRequired[str]
    """Primary range of the node subnet. Default: 10.0.0.0/20."""
    pod_cidr: NotRequired[str]
    """Secondary range for pods. Default: 10.16.0.0/14."""
    service_cidr: NotRequired[str]
    """Secondary range for services. Default: 10.20.0.0/20."""
    proxy_cidr: NotRequired[str]
    """Range of the proxy-only subnet. Default: 10.129.0.0/23."""
    master_cidr: NotRequired[str]
    """/28 for the private control plane's peering. Default: 172.16.0.32/28."""
    shielded_nodes: NotRequired[bool]
    """Require Shielded GKE nodes. Default: true; bare-metal GPU machines (A4X Max) need false
    (cluster-toolkit examples/gke-a4x-max-bm sets enable_shielded_nodes: false)."""
    dcgm_metrics: NotRequired[bool]
    """Turn on GKE's managed DCGM metrics (monitoring component ``DCGM``: GKE installs the exporter on GPU nodes).
    Managed Service for Prometheus collection is on either way. Default: true (cluster-toolkit's gke-cluster
    ``enable_dcgm_monitoring``)."""
    hpa_metrics: NotRequired[bool]
    """Turn on GKE's managed kube-state-metrics for HorizontalPodAutoscalers (monitoring component ``HPA``; GKE docs
    "Collect and view kube state metrics": the Workloads State package, metric names as open-source
    kube-state-metrics exposes them, ``kube_horizontalpodautoscaler_status_desired_replicas`` and the rest, queried
    with PromQL in Managed Service for Prometheus), what the scaler's alerts and the dashboard's replica panels
    read. An explicit ``enable_components`` list turns on only what it names, so the component must be listed.
    Default: false."""
    webhook_ports: NotRequired[Sequence[int]]
    """TCP ports on the nodes the control plane must reach for admission webhooks, beyond GKE's own 443 and 10250
    (the target ports of the webhooks the stack's charts serve, catalog.charts). Default: none, and no rule."""
    authorized_cidrs: NotRequired[Sequence[str]]
    """Networks allowed to reach the control plane. Default: none listed: the public endpoint answers any
    address (authenticated by IAM), and the component warns."""
    private_endpoint: NotRequired[bool]
    """Serve the control plane on its private address only (``pulumi up`` and kubectl then run from inside
    the VPC or a network connected to it). Default: false."""

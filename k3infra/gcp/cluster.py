"""GkeCluster: a GKE Standard cluster for Kimi K3, with its VPC, a small CPU system pool and a Kubernetes provider.

What it creates (002 §5.2 step 1, made secure by default):

- a VPC with jumbo frames (MTU 8896) and one subnet (pod and service secondary ranges, Private Google Access),
  a Cloud Router and Cloud NAT so private nodes reach Hugging Face and container registries, and, when asked,
  the regional proxy-only subnet an internal Gateway (``gke-l7-rilb``) needs;
- a least-privilege node service account (logs, metrics, Artifact Registry reads);
- the cluster: regional control plane, nodes in the GPU zone, default pool removed, private nodes,
  Workload Identity, the GCS FUSE CSI driver, Dataplane V2 (``ADVANCED_DATAPATH``), the Gateway API,
  multi-networking when a GPU pool needs extra networks, deletion protection;
- upgrades that never surprise the reserved pool: the REGULAR channel, created at a version the channel offers
  at or above the GPU machine type's floor (``versions.py``), a daily maintenance window and a
  ``NO_MINOR_OR_NODE_UPGRADES`` exclusion until the minor version's end of support (cluster-toolkit
  examples/gke-a4x-max-bm and gke-a4);
- control-plane access limited to the authorized networks, or to the private endpoint; the plan warns when the
  public endpoint answers every address;
- an ingress firewall rule from the control plane's range to the nodes' service account on the ports the stack's
  admission webhooks listen on (``webhook_ports``): a private cluster's own rule admits only TCP 443 and 10250
  (catalog.control_planes), and LWS's webhooks, ``failurePolicy: Fail``, listen on 9443;
- a CPU system pool (002 §5.2: ``e2-standard-8``) where controllers and the weight sync Job run;
- a Kubernetes provider built from a kubeconfig that authenticates with ``gke-gcloud-auth-plugin``.
"""

import json
from typing import Sequence

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from ..catalog import Cloud, pod_health_check_ranges
from ..catalog.control_planes import CONTROL_PLANE_REACH
from ..catalog.gke import GKE_MACHINES
from ..serving.contract import LoadBalancerSettings
from ..component_args import reject_unknown
from .cluster_args import GkeClusterArgs, ReleaseChannel, UpgradeExclusion
from .versions import master_version

DEFAULT_SYSTEM_MACHINE_TYPE = "e2-standard-8"
"""002 §5.2 (``--machine-type=e2-standard-8``)."""

VPC_MTU = 8896
"""MTU of the cluster's VPC and of every network a GPU pool adds (the A4 second gVNIC and RoCE VPCs): jumbo frames,
the most Compute Engine allows. cluster-toolkit's vpc and gpu-rdma-vpc modules default to it and its A4 and A4X Max
examples build every network with it (modules/network/vpc/variables.tf ``mtu``); the networks GKE builds for an
accelerator network profile use it too. Nodes take the MTU of each network from DHCP and Pods inherit their node
NIC's, so the primary network (NCCL's bootstrap and socket traffic on eth0, the weight copy, the gateway's
backends) and the GPU networks must carry the same value; Google recommends one MTU across connected networks
(cloud.google.com/vpc/docs/mtu). Traffic leaving the VPC is clamped to 1460-1500 by MSS clamping."""

NODE_SERVICE_ACCOUNT_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)
"""Least privilege for GKE nodes (GKE hardening guide); weights are read by pods through Workload Identity."""

GATEWAY_CLASS_INTERNAL = "gke-l7-rilb"
"""Regional internal Application Load Balancer (needs the proxy-only subnet; docs/catalog-research.md §3.3)."""
GATEWAY_CLASS_PUBLIC = "gke-l7-regional-external-managed"
"""Regional external Application Load Balancer (docs/catalog-research.md §3.3)."""

GKE_CONTROL_PLANE_PORTS = tuple(sorted(CONTROL_PLANE_REACH[Cloud.GCP].ports or ()))
"""What GKE's own control-plane rule admits on the nodes of a private cluster (catalog.control_planes)."""

HEALTH_CHECK_RANGES = pod_health_check_ranges(Cloud.GCP)
"""Google Cloud load-balancer health checks probe the pods (container-native, NEG) from these ranges
(k3infra.catalog.health_checks)."""


def load_balancer_settings(vpc_ranges: Sequence[str], proxy_range: str | None) -> LoadBalancerSettings:
    """How a GKE cluster makes Services and Gateways internal or public (serving contract).

    An internal Service is an internal passthrough load balancer that admits the cluster VPC's own ranges
    (nodes and pods); a Gateway's Envoy proxies reach the pods from the proxy-only subnet, and its health
    checks from Google's health-check ranges.
    """
    settings: LoadBalancerSettings = {
        "internal_annotations": {"networking.gke.io/load-balancer-type": "Internal"},
        "public_annotations": {},
        "internal_gateway_class": GATEWAY_CLASS_INTERNAL,
        "public_gateway_class": GATEWAY_CLASS_PUBLIC,
        "gateway_provider": "gke",
        "internal_source_ranges": list(vpc_ranges),
    }
    if proxy_range:
        settings["gateway_source_ranges"] = [proxy_range, *HEALTH_CHECK_RANGES]
    return settings


DEFAULT_MAINTENANCE_WINDOW_START = "09:00"
"""cluster-toolkit modules/scheduler/gke-cluster (maintenance_start_time default)."""
DEFAULT_UPGRADE_EXCLUSION_START = "2026-01-01T00:00:00Z"
"""A fixed past time, so two plans are identical; cluster-toolkit's examples use one too (2025-12-01)."""
UPGRADE_EXCLUSION_NAME = "k3-no-unplanned-upgrades"
NAT_MIN_PORTS_PER_VM = 1024
"""Cloud NAT ports a VM starts with under dynamic allocation: a power of two (the API's rule), room for the sync's
streams before the first doubling."""
NAT_MAX_PORTS_PER_VM = 65536
"""The most dynamic allocation may give a VM (the API's maximum)."""
OPEN_ENDPOINT_WARNING = ("the control plane's public endpoint answers every address (IAM still authenticates): set "
                         "gcp.authorizedNetworks to the CIDRs `pulumi up` and kubectl run from, or gcp.privateEndpoint")


class GkeCluster(pulumi.ComponentResource):
    """A GKE Standard cluster sized for Kimi K3's GPU pools, with a Kubernetes provider for the workloads.

    Example::

        cluster = GkeCluster("k3", {"project": "my-project", "region": "us-central1", "zone": "us-central1-b",
                                    "cluster_name": "k3-gcp-a4xmax"})
        pool = GkeGpuNodePool("k3-gpu", {...}, opts=pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}))
    """

    cluster_name: pulumi.Output[str]
    """The GKE cluster name."""
    cluster_id: pulumi.Output[str]
    """``projects/P/locations/L/clusters/NAME``."""
    location: pulumi.Output[str]
    """The control plane's location (the region)."""
    endpoint: pulumi.Output[str]
    """The control plane's IP address."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig (secret) that authenticates through ``gke-gcloud-auth-plugin``."""
    network: pulumi.Output[str]
    """Self link of the cluster's VPC."""
    subnetwork: pulumi.Output[str]
    """Self link of the node subnet."""
    workload_pool: pulumi.Output[str]
    """Workload Identity pool, ``PROJECT.svc.id.goog``, as the cluster reports it (``workloadIdentityConfig``):
    IAM members built from it are created only after the pool exists."""
    node_service_account: pulumi.Output[str]
    """Email of the nodes' service account."""
    provider: k8s.Provider
    """Kubernetes provider for the cluster; it waits for the system pool."""
    load_balancer: LoadBalancerSettings
    """Service and Gateway settings for serving (internal LB annotation, gateway classes)."""
    system_pool: gcp.container.NodePool
    """The CPU system pool (serving's Jobs and controllers need it to exist)."""
    warnings: list[str]
    """What the plan should say: an endpoint open to every address, a version chosen above the channel's default."""

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("k3infra:index:GkeCluster", name, {}, opts)
        reject_unknown(args, GkeClusterArgs)
        cluster_name = args["cluster_name"]
        if not 1 <= len(cluster_name) <= 40:
            raise pulumi.InputPropertyError("cluster_name", f"GKE cluster names are 1-40 characters; {cluster_name!r} "
                                            f"has {len(cluster_name)}")
        network, subnet = self._network(name, args)
        node_sa, roles = self._node_identity(name, args)
        cluster = self._control_plane(name, args, network, subnet, node_sa, roles)
        self._webhook_access = self._webhook_firewall(name, args, network, node_sa)
        system_pool = self._system_pool(name, args, cluster, node_sa)
        kubeconfig, provider = self._kubernetes_provider(name, cluster, system_pool)
        self._outputs(args, cluster, network, subnet, node_sa, kubeconfig, provider, system_pool)

    def _network(self, name: str, args: GkeClusterArgs) -> tuple[gcp.compute.Network, gcp.compute.Subnetwork]:
        """The VPC (jumbo frames), the node subnet with its pod and service ranges, the proxy-only subnet when asked,
        and the Cloud Router and NAT private nodes reach the internet through."""
        cluster_name, project, region = args["cluster_name"], args["project"], args["region"]
        child = pulumi.ResourceOptions(parent=self)
        network = gcp.compute.Network(
            f"{name}-network",
            gcp.compute.NetworkArgs(name=f"{cluster_name}-net", project=project, auto_create_subnetworks=False,
                                    routing_mode="REGIONAL", mtu=VPC_MTU),
            child)
        subnet = gcp.compute.Subnetwork(
            f"{name}-subnet",
            gcp.compute.SubnetworkArgs(
                name=f"{cluster_name}-nodes", project=project, region=region, network=network.id,
                ip_cidr_range=args.get("node_cidr", "10.0.0.0/20"), private_ip_google_access=True,
                secondary_ip_ranges=[
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name="pods",
                                                               ip_cidr_range=args.get("pod_cidr", "10.16.0.0/14")),
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name="services",
                                                               ip_cidr_range=args.get("service_cidr", "10.20.0.0/20")),
                ]),
            child)
        if args.get("proxy_only_subnet"):
            gcp.compute.Subnetwork(
                f"{name}-proxy-subnet",
                gcp.compute.SubnetworkArgs(
                    name=f"{cluster_name}-proxy", project=project, region=region, network=network.id,
                    ip_cidr_range=args.get("proxy_cidr", "10.129.0.0/23"), purpose="REGIONAL_MANAGED_PROXY",
                    role="ACTIVE"),
                child)
        router = gcp.compute.Router(
            f"{name}-router",
            gcp.compute.RouterArgs(name=f"{cluster_name}-router", project=project, region=region, network=network.id),
            child)
        gcp.compute.RouterNat(
            f"{name}-nat",
            gcp.compute.RouterNatArgs(
                name=f"{cluster_name}-nat", project=project, region=region, router=router.name,
                nat_ip_allocate_option="AUTO_ONLY", source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
                # The static default is 64 ports a VM, one per concurrent connection to one destination address
                # (cloud.google.com/nat/docs/ports-and-addresses); a sync node keeps 40+ streams open to a few Hub
                # CDN addresses and a GPU node pulls a 20 GB image in parallel layers: connections past the
                # allocation are dropped (OUT_OF_RESOURCES). Dynamic allocation doubles a VM's ports as it needs
                # them, from a power of two, up to 65536; it excludes endpoint-independent mapping (same page).
                enable_dynamic_port_allocation=True, enable_endpoint_independent_mapping=False,
                min_ports_per_vm=NAT_MIN_PORTS_PER_VM, max_ports_per_vm=NAT_MAX_PORTS_PER_VM,
                log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY")),
            child)
        return network, subnet

    def _node_identity(self, name: str, args: GkeClusterArgs) -> tuple[gcp.serviceaccount.Account,
                                                                       list[gcp.projects.IAMMember]]:
        """The nodes' service account and its least-privilege roles."""
        cluster_name, project = args["cluster_name"], args["project"]
        child = pulumi.ResourceOptions(parent=self)
        node_sa = gcp.serviceaccount.Account(
            f"{name}-nodes",
            gcp.serviceaccount.AccountArgs(account_id=f"{cluster_name}-nodes"[:30].rstrip("-"), project=project,
                                           display_name=f"GKE nodes of {cluster_name}"),
            child)
        sa_member = node_sa.email.apply(lambda e: f"serviceAccount:{e}")
        roles = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.rsplit('/', 1)[-1].replace('.', '-').lower()}",
                gcp.projects.IAMMemberArgs(project=project, role=role, member=sa_member),
                child)
            for role in NODE_SERVICE_ACCOUNT_ROLES
        ]
        return node_sa, roles

    def _control_plane(self, name: str, args: GkeClusterArgs, network: gcp.compute.Network,
                       subnet: gcp.compute.Subnetwork, node_sa: gcp.serviceaccount.Account,
                       roles: Sequence[pulumi.Resource]) -> gcp.container.Cluster:
        """The cluster at a version its channel offers at or above the GPU machine's floor, with what the plan
        should say about it (the version chosen, an endpoint open to every address)."""
        project, region = args["project"], args["region"]
        authorized = list(args.get("authorized_cidrs", ()))
        private_endpoint = bool(args.get("private_endpoint", False))
        channel = ReleaseChannel(args.get("release_channel", ReleaseChannel.REGULAR))
        machine = GKE_MACHINES.get(args.get("gpu_machine_type") or "")
        version = master_version(project=project if isinstance(project, str) else None, location=region,
                                 channel=str(channel), given=args.get("kubernetes_version"),
                                 floors=machine.min_gke_versions if machine else (),
                                 opts=pulumi.InvokeOptions(parent=self))
        self.warnings = [w for w in (version.note, None if authorized or private_endpoint else OPEN_ENDPOINT_WARNING)
                         if w]
        for w in self.warnings:
            pulumi.log.warn(w, self)
        return gcp.container.Cluster(
            f"{name}-cluster",
            _cluster_args(args, network, subnet, node_sa, version.min_master_version, channel),
            # The default pool's node_config only matters for the minutes before it is removed; changing it
            # later would otherwise replace the cluster. A version read from the channel moves with it (as in
            # cluster-toolkit's gke-cluster, which ignores min_master_version for the same reason).
            pulumi.ResourceOptions(parent=self, depends_on=list(roles),
                                   ignore_changes=["nodeConfig", *(["minMasterVersion"] if version.chosen else [])]))

    def _webhook_firewall(self, name: str, args: GkeClusterArgs, network: gcp.compute.Network,
                          node_sa: gcp.serviceaccount.Account) -> list[pulumi.Resource]:
        """The rule from the control plane to the webhook ports GKE's own rule does not admit, or nothing."""
        cluster_name, project = args["cluster_name"], args["project"]
        child = pulumi.ResourceOptions(parent=self)
        master_cidr = args.get("master_cidr", "172.16.0.32/28")
        access: list[pulumi.Resource] = []
        extra_ports = sorted({int(port) for port in args.get("webhook_ports", ())} - set(GKE_CONTROL_PLANE_PORTS))
        if extra_ports:
            # GKE's own rule admits only 443 and 10250 from the control plane (catalog.control_planes); the nodes'
            # service account is the target, as for every node of the cluster's pools.
            access.append(gcp.compute.Firewall(
                f"{name}-control-plane-webhooks",
                gcp.compute.FirewallArgs(
                    name=f"{cluster_name}-control-plane-webhooks", project=project, network=network.id,
                    description="GKE control plane to the admission webhooks served on the nodes",
                    direction="INGRESS", priority=1000, source_ranges=[master_cidr],
                    target_service_accounts=[node_sa.email],
                    allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(p) for p in extra_ports])]),
                child))
        return access

    def _system_pool(self, name: str, args: GkeClusterArgs, cluster: gcp.container.Cluster,
                     node_sa: gcp.serviceaccount.Account) -> gcp.container.NodePool:
        """The CPU pool controllers and the weight sync run on."""
        project, region, zone = args["project"], args["region"], args["zone"]
        child = pulumi.ResourceOptions(parent=self)
        return gcp.container.NodePool(
            f"{name}-system",
            gcp.container.NodePoolArgs(
                name="system",
                project=project,
                cluster=cluster.name,
                location=region,
                node_locations=[zone],
                node_count=args.get("system_node_count", 2),
                management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
                node_config=gcp.container.NodePoolNodeConfigArgs(
                    machine_type=args.get("system_machine_type", DEFAULT_SYSTEM_MACHINE_TYPE),
                    disk_type="pd-balanced",
                    disk_size_gb=100,
                    service_account=node_sa.email,
                    oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
                    workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
                    shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                        enable_secure_boot=True, enable_integrity_monitoring=True),
                    labels={"k3infra.dev/pool": "system"},
                ),
            ),
            child)

    def _kubernetes_provider(self, name: str, cluster: gcp.container.Cluster,
                             system_pool: gcp.container.NodePool) -> tuple[pulumi.Output[str], k8s.Provider]:
        """The kubeconfig (secret, through gke-gcloud-auth-plugin) and the Kubernetes provider, which waits for the
        system pool."""
        kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint,
                              cluster.master_auth.apply(lambda m: m.cluster_ca_certificate)).apply(
                lambda a: kubeconfig_for(a[0], a[1], a[2] or "")))
        provider = k8s.Provider(
            f"{name}-k8s",
            k8s.ProviderArgs(kubeconfig=kubeconfig, enable_server_side_apply=True),
            pulumi.ResourceOptions(parent=self, depends_on=[system_pool]))
        return kubeconfig, provider

    def _outputs(self, args: GkeClusterArgs, cluster: gcp.container.Cluster, network: gcp.compute.Network,
                 subnet: gcp.compute.Subnetwork, node_sa: gcp.serviceaccount.Account, kubeconfig: pulumi.Output[str],
                 provider: k8s.Provider, system_pool: gcp.container.NodePool) -> None:
        """The component's outputs, registered."""
        self.cluster_name = cluster.name
        self.cluster_id = cluster.id
        self.location = cluster.location
        self.endpoint = cluster.endpoint
        self.kubeconfig = kubeconfig
        self.network = network.self_link
        self.subnetwork = subnet.self_link
        # From the cluster, not the project: the pool exists only once a Workload Identity cluster does, and IAM
        # refuses a principal of a pool that does not exist yet ("Identity Pool does not exist",
        # terraform-google-kubernetes-engine#916), so grants built from this wait for the cluster.
        self.workload_pool = cluster.workload_identity_config.apply(_workload_pool)
        self.node_service_account = node_sa.email
        self.provider = provider
        self.load_balancer = load_balancer_settings(
            [args.get("node_cidr", "10.0.0.0/20"), args.get("pod_cidr", "10.16.0.0/14")],
            args.get("proxy_cidr", "10.129.0.0/23") if args.get("proxy_only_subnet") else None)
        self.system_pool = system_pool
        self.register_outputs({
            "cluster_name": self.cluster_name, "cluster_id": self.cluster_id, "location": self.location,
            "endpoint": self.endpoint, "kubeconfig": self.kubeconfig, "network": self.network,
            "subnetwork": self.subnetwork, "workload_pool": self.workload_pool,
            "node_service_account": self.node_service_account, "provider": self.provider,
            "load_balancer": self.load_balancer, "system_pool": self.system_pool, "warnings": self.warnings,
        })

    @property
    def webhook_access(self) -> list[pulumi.Resource]:
        """The firewall rule that lets the control plane call the webhooks (``webhook_ports``), or nothing: every
        object a webhook intercepts must be created after it. A Python-side handle for ``serve(webhook_access=...)``;
        not a schema output."""
        return list(self._webhook_access)


def _cluster_args(args: GkeClusterArgs, network: gcp.compute.Network, subnet: gcp.compute.Subnetwork,
                  node_sa: gcp.serviceaccount.Account, min_master_version: pulumi.Input[str] | None,
                  channel: ReleaseChannel) -> gcp.container.ClusterArgs:
    """The cluster: regional, nodes in the GPU zone, the default pool removed, private nodes, Workload Identity,
    the GCS FUSE CSI driver, Dataplane V2, the Gateway API, upgrades held, monitoring."""
    workload_pool = pulumi.Output.concat(args["project"], ".svc.id.goog")
    private_endpoint = bool(args.get("private_endpoint", False))
    return gcp.container.ClusterArgs(
        name=args["cluster_name"],
        project=args["project"],
        location=args["region"],
        node_locations=[args["zone"]],
        network=network.id,
        subnetwork=subnet.id,
        networking_mode="VPC_NATIVE",
        ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name="pods", services_secondary_range_name="services"),
        remove_default_node_pool=True,
        initial_node_count=1,
        # The default pool lives only until the system pool exists; keep it off the public internet too.
        node_config=gcp.container.ClusterNodeConfigArgs(
            service_account=node_sa.email, oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
            workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA")),
        min_master_version=min_master_version,
        release_channel=gcp.container.ClusterReleaseChannelArgs(channel=str(channel)),
        maintenance_policy=_maintenance_policy(args),
        deletion_protection=args.get("deletion_protection", True),
        workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(workload_pool=workload_pool),
        addons_config=gcp.container.ClusterAddonsConfigArgs(
            gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(enabled=True),
            http_load_balancing=gcp.container.ClusterAddonsConfigHttpLoadBalancingArgs(disabled=False)),
        datapath_provider="ADVANCED_DATAPATH",
        enable_multi_networking=args.get("multi_networking", False),
        gateway_api_config=gcp.container.ClusterGatewayApiConfigArgs(channel="CHANNEL_STANDARD"),
        private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True, enable_private_endpoint=private_endpoint,
            master_ipv4_cidr_block=args.get("master_cidr", "172.16.0.32/28")),
        master_authorized_networks_config=_authorized_networks(args),
        enable_shielded_nodes=args.get("shielded_nodes", True),
        monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
            enable_components=["SYSTEM_COMPONENTS", *(["DCGM"] if args.get("dcgm_metrics", True) else []),
                               *(["HPA"] if args.get("hpa_metrics") else [])],
            managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True)),
    )


def _maintenance_policy(args: GkeClusterArgs) -> gcp.container.ClusterMaintenancePolicyArgs:
    """A daily window, and an exclusion of minor and node upgrades until the minor version's end of support."""
    exclusion = args.get("upgrade_exclusion", UpgradeExclusion.NO_MINOR_OR_NODE_UPGRADES)
    return gcp.container.ClusterMaintenancePolicyArgs(
        daily_maintenance_window=gcp.container.ClusterMaintenancePolicyDailyMaintenanceWindowArgs(
            start_time=args.get("maintenance_window_start", DEFAULT_MAINTENANCE_WINDOW_START)),
        maintenance_exclusions=[gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
            exclusion_name=UPGRADE_EXCLUSION_NAME,
            start_time=args.get("upgrade_exclusion_start", DEFAULT_UPGRADE_EXCLUSION_START),
            exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                scope=str(exclusion), end_time_behavior="UNTIL_END_OF_SUPPORT"),
        )] if exclusion else None)


def _authorized_networks(args: GkeClusterArgs) -> gcp.container.ClusterMasterAuthorizedNetworksConfigArgs | None:
    """The networks that reach the control plane, or None when it answers every address."""
    authorized = list(args.get("authorized_cidrs", ()))
    private_endpoint = bool(args.get("private_endpoint", False))
    # A private endpoint requires authorized networks on (gcloud --enable-private-endpoint needs
    # --enable-master-authorized-networks); the node subnet reaches it without being listed.
    return gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
        cidr_blocks=[gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
            cidr_block=c, display_name=f"authorized-{i}") for i, c in enumerate(authorized)],
        gcp_public_cidrs_access_enabled=False,
    ) if authorized or private_endpoint else None


def _workload_pool(config: object) -> str:
    pool = getattr(config, "workload_pool", None)
    if not pool:
        raise pulumi.RunError("the cluster reports no Workload Identity pool (workloadIdentityConfig.workloadPool)")
    return str(pool)


def kubeconfig_for(cluster_name: str, endpoint: str, ca_data: str) -> str:
    """A kubeconfig (JSON, which kubectl reads as YAML) that gets tokens from ``gke-gcloud-auth-plugin``."""
    context = f"gke-{cluster_name}"
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": f"https://{endpoint}",
                                                    "certificate-authority-data": ca_data}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "users": [{"name": context, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin "
                           "(cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl)",
            "provideClusterInfo": True,
        }}}],
    }, indent=2, sort_keys=True)

"""AksCluster: resource group, user-assigned control-plane identity, AKS with OIDC issuer, Workload Identity and
the Blob CSI driver, a small system pool, upgrade channels with their maintenance windows, API server access (Entra
ID with local accounts off by default, k3infra.azure.entra), and a Kubernetes provider built from the cluster's
kubeconfig."""

import base64
from typing import Mapping, NamedTuple, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import containerservice as aks
from pulumi_azure_native import authorization, managedidentity, resources

from ..catalog import Cloud, pod_health_check_ranges
from ..config.clouds.common import OPEN_TO_EVERY_ADDRESS
from ..serving.contract import LoadBalancerSettings

from ..component_args import reject_unknown
from ..maintenance import MaintenanceWindowSpec, checked
from . import entra

DEFAULT_SYSTEM_VM_SIZE = "Standard_D8s_v5"
"""002 §4.2 (``az aks create --node-vm-size Standard_D8s_v5``)."""

VNET_CIDR = "10.224.0.0/12"
"""Address space of the virtual network AKS creates for a cluster that brings none (``aks-vnet-*`` in the node
resource group): the clients an internal load balancer admits."""

POD_CIDR = "10.244.0.0/16"
"""Overlay pod range (AKS's default, stated so the network policy and the load balancer ranges are known)."""

INTERNAL_LB_ANNOTATION = "service.beta.kubernetes.io/azure-load-balancer-internal"
"""Makes a LoadBalancer Service an internal Azure load balancer (a private IP in the cluster's virtual network)."""

UPGRADE_CHANNELS = ("none", "patch", "stable", "rapid")
"""Cluster auto-upgrade channels (aks/auto-upgrade-cluster); ``node-image`` is legacy and left out."""

NODE_OS_UPGRADE_CHANNELS = ("None", "Unmanaged", "SecurityPatch", "NodeImage")
"""Node OS auto-upgrade channels (aks/auto-upgrade-node-os-image). AKS's default for a new cluster is NodeImage."""

DEFAULT_NODE_OS_UPGRADE_CHANNEL = "SecurityPatch"
"""Tested security updates in the maintenance window, in place where AKS can (the API's NodeOSUpgradeChannel enum:
"On some occasions it's not possible to apply the updates in place, in such cases the existing nodes will also be
re-imaged"). ``None`` would leave every node unpatched ("you are responsible for your security updates"), and
``NodeImage`` reimages every node weekly. The channel is the cluster's: containerservice 2025-09-01, the API the
pinned azure-native SDK uses, has none per agent pool (an AgentPool has only ``upgradeSettings``), so it reaches
the GPU pool too, which reimages in place (maxSurge 0: its capacity reservation holds no surge node)."""

DEPLOYER_PRINCIPAL_TYPES = ("User", "ServicePrincipal")
"""What the identity running Pulumi can be, for its cluster-admin grant (a managed identity is a service principal)."""

MAINTENANCE_CONFIGURATIONS = {
    "default": "default",
    "cluster": "aksManagedAutoUpgradeSchedule",
    "node-os": "aksManagedNodeOSUpgradeSchedule",
}
"""Child name suffix -> AKS maintenance configuration: AKS's weekly releases (control plane, add-ons), the cluster
auto-upgrade channel, the node OS channel (aks/planned-maintenance: all three can coexist)."""


class AksClusterArgs(TypedDict):
    """Arguments of :class:`AksCluster`.

    There is deliberately no identity-type argument: the control plane always runs as a user-assigned managed
    identity, because a Capacity Reservation Group association needs one (a system-assigned identity does not
    work with the feature, learn.microsoft.com aks/use-capacity-reservation-groups).
    """

    resource_group_name: str
    """Name of the resource group k3infra creates for the cluster (and, in the stacks, the weight storage)."""
    location: pulumi.Input[str]
    """Azure region, e.g. ``eastus2``."""
    cluster_name: str
    """AKS cluster name; also the DNS prefix."""
    kubernetes_version: NotRequired[Optional[pulumi.Input[str]]]
    """Kubernetes version. Default: AKS's default version at creation."""
    system_vm_size: NotRequired[Optional[pulumi.Input[str]]]
    """VM size of the system pool (controllers; the weight sync runs on its own pool, AksSyncPool). Default:
    Standard_D8s_v5 (002 §4.2)."""
    system_node_count: NotRequired[Optional[int]]
    """Nodes in the system pool. Default: 2 (002 §4.2)."""
    deletion_protection: NotRequired[Optional[bool]]
    """Protect the cluster from `pulumi destroy` (Pulumi ``protect``). Default: true."""
    upgrade_channel: NotRequired[Optional[str]]
    """Cluster auto-upgrade channel: none, patch, stable or rapid. Default: none (the version changes only when
    ``kubernetes_version`` does)."""
    node_os_upgrade_channel: NotRequired[Optional[str]]
    """Node OS auto-upgrade channel, for every pool of the cluster: None, Unmanaged, SecurityPatch or NodeImage.
    Default: SecurityPatch, in the maintenance window (AKS's own default, NodeImage, reimages every node weekly;
    None patches nothing). A patch AKS cannot apply in place reimages the node, a GPU node included."""
    maintenance_window: NotRequired[Optional[MaintenanceWindowSpec]]
    """When AKS may run its weekly releases and the two channels' upgrades (the three planned-maintenance
    configurations). Default: Sundays 02:00 UTC for 4 hours."""
    private_api_server: NotRequired[Optional[bool]]
    """A private cluster: the API server has only an address in the cluster's virtual network, so Pulumi must run
    where it reaches that network. Default: false."""
    api_authorized_cidrs: NotRequired[Optional[Sequence[str]]]
    """The only source ranges a public API server admits (authorized IP ranges). Default: any address."""
    local_accounts: NotRequired[Optional[bool]]
    """Keep AKS local accounts: no Entra integration, and a cluster-admin client certificate in the kubeconfig.
    Default: false: AKS-managed Microsoft Entra ID with Azure RBAC authenticates and authorizes every caller, local
    accounts are disabled, the identity running Pulumi holds Azure Kubernetes Service RBAC Cluster Admin on the
    cluster, and the kubeconfig logs in through kubelogin with the Azure CLI (k3infra.azure.entra)."""
    deployer_principal_type: NotRequired[Optional[str]]
    """What the identity running Pulumi is, for its cluster-admin grant: ``User`` or ``ServicePrincipal`` (CI, a
    managed identity). Default: User. Not with ``local_accounts``."""
    admin_group_object_ids: NotRequired[Optional[Sequence[str]]]
    """Entra group object ids whose members are cluster-admin (``aadProfile.adminGroupObjectIDs``); not with
    ``local_accounts``. Default: none (grant people Azure roles on the cluster)."""
    tags: NotRequired[Optional[Mapping[str, pulumi.Input[str]]]]
    """Tags on every Azure resource the component creates. Default: none."""
    managed_prometheus: NotRequired[Optional[bool]]
    """Run the Azure Monitor metrics add-on (``azureMonitorProfile.metrics``: ama-metrics and its PodMonitor CRDs);
    the workspace and its data collection rule come with it (``k3infra.azure.monitoring``). Default: false."""
    keda: NotRequired[Optional[bool]]
    """Run AKS's managed KEDA add-on (``workloadAutoScalerProfile.keda.enabled``; AKS docs "Install the KEDA
    add-on"): the operator, its metrics API server and admission webhooks in ``kube-system``, the KEDA version
    AKS pairs with the cluster's Kubernetes version. Default: false."""


class _Settings(NamedTuple):
    """An AksCluster's arguments, checked, with their defaults."""

    system_count: int
    channel: str
    node_channel: str
    window: MaintenanceWindowSpec
    private: bool
    authorized: list[str]
    local: bool
    """Local accounts kept: no Entra integration."""
    admin_groups: list[str]
    deployer: str
    tags: dict[str, pulumi.Input[str]]


class AksCluster(pulumi.ComponentResource):
    """An AKS cluster ready for GPU pools on a Capacity Reservation Group and for workload identity.

    Creates the resource group, a user-assigned identity for the control plane (the one a reservation group's
    resource group grants Contributor to), the cluster with the OIDC issuer, Workload Identity and the Blob CSI
    driver on, a ``System`` pool, and a Kubernetes provider from the cluster user kubeconfig (a secret).
    """

    resource_group_name: pulumi.Output[str]
    """The cluster's resource group."""
    cluster_name: pulumi.Output[str]
    """The AKS cluster name (what agent pools take as ``resource_name``)."""
    oidc_issuer_url: pulumi.Output[str]
    """Issuer of the cluster's service account tokens: what federated identity credentials trust."""
    identity_id: pulumi.Output[str]
    """Resource id of the user-assigned control-plane identity."""
    identity_principal_id: pulumi.Output[str]
    """Principal (object) id of the control-plane identity: what role assignments name."""
    kubeconfig: pulumi.Output[str]
    """Cluster user kubeconfig (secret)."""

    def __init__(self, name: str, args: AksClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:AksCluster", name, None, opts)
        reject_unknown(args, AksClusterArgs)
        settings = _settings(args)
        rg = self._resource_group(name, args, settings)
        identity = self._control_plane_identity(name, args, settings, rg)
        cluster = self._managed_cluster(name, args, settings, rg, identity)
        self.maintenance = self._maintenance(name, settings, rg, cluster)
        """The planned-maintenance configurations: AKS's weekly releases and both channels run only in the window."""
        kubeconfig = _kubeconfig(settings, rg, cluster)
        self.deployer_access = self._deployer_access(name, settings, cluster)
        """The wait after the grant of cluster admin to the identity running Pulumi (None with local accounts)."""
        self.provider = self._kubernetes_provider(name, kubeconfig)
        """Kubernetes provider for the cluster (pass it with ``providers={"kubernetes": ...}``)."""
        self._outputs(rg, cluster, identity, kubeconfig)

    def _resource_group(self, name: str, args: AksClusterArgs, settings: _Settings) -> resources.ResourceGroup:
        """The resource group of the cluster (and, in the stacks, of the weight storage)."""
        return resources.ResourceGroup(
            f"{name}-rg",
            resources.ResourceGroupArgs(resource_group_name=args["resource_group_name"], location=args["location"],
                                        tags=settings.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _control_plane_identity(self, name: str, args: AksClusterArgs, settings: _Settings,
                                rg: resources.ResourceGroup) -> managedidentity.UserAssignedIdentity:
        """The control plane's user-assigned identity (a Capacity Reservation Group association needs one)."""
        return managedidentity.UserAssignedIdentity(
            f"{name}-identity",
            resource_group_name=rg.name,
            resource_name_=f"{args['cluster_name']}-control-plane",
            location=args["location"],
            tags=settings.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _managed_cluster(self, name: str, args: AksClusterArgs, settings: _Settings, rg: resources.ResourceGroup,
                         identity: managedidentity.UserAssignedIdentity) -> aks.ManagedCluster:
        """The AKS cluster: OIDC issuer, Workload Identity, the Blob CSI driver, Cilium, the System pool, Entra ID
        (unless local accounts), the upgrade channels, API server access and the optional add-ons."""
        # Keyword form: the SDK's ManagedClusterArgs cannot carry resource_name (it collides with the logical
        # name in _internal_init), so the typed keyword overload is used with resource_name_.
        return aks.ManagedCluster(
            f"{name}-aks",
            resource_group_name=rg.name,
            resource_name_=args["cluster_name"],
            location=args["location"],
            dns_prefix=args["cluster_name"],
            kubernetes_version=args.get("kubernetes_version"),
            identity=aks.ManagedClusterIdentityArgs(
                type=aks.ResourceIdentityType.USER_ASSIGNED,
                user_assigned_identities=[identity.id],
            ),
            oidc_issuer_profile=aks.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=aks.ManagedClusterSecurityProfileArgs(
                workload_identity=aks.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True),
            ),
            storage_profile=aks.ManagedClusterStorageProfileArgs(
                blob_csi_driver=aks.ManagedClusterStorageProfileBlobCSIDriverArgs(enabled=True),
            ),
            network_profile=_network_profile(),
            agent_pool_profiles=[_system_pool_profile(args, settings)],
            enable_rbac=True,
            aad_profile=None if settings.local else entra.aad_profile(settings.admin_groups),
            disable_local_accounts=not settings.local,
            auto_upgrade_profile=aks.ManagedClusterAutoUpgradeProfileArgs(
                upgrade_channel=settings.channel, node_os_upgrade_channel=settings.node_channel),
            api_server_access_profile=_api_server_access(settings),
            azure_monitor_profile=aks.ManagedClusterAzureMonitorProfileArgs(
                metrics=aks.ManagedClusterAzureMonitorProfileMetricsArgs(enabled=True),
            ) if args.get("managed_prometheus") else None,
            workload_auto_scaler_profile=aks.ManagedClusterWorkloadAutoScalerProfileArgs(
                keda=aks.ManagedClusterWorkloadAutoScalerProfileKedaArgs(enabled=True),
            ) if args.get("keda") else None,
            tags=settings.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.get("deletion_protection") is not False),
        )

    def _maintenance(self, name: str, settings: _Settings, rg: resources.ResourceGroup,
                     cluster: aks.ManagedCluster) -> list[aks.MaintenanceConfiguration]:
        """The three planned-maintenance configurations (MAINTENANCE_CONFIGURATIONS), all in the one window."""
        window = settings.window
        return [
            aks.MaintenanceConfiguration(
                f"{name}-maintenance-{suffix}",
                resource_group_name=rg.name,
                resource_name_=cluster.name,
                config_name=config,
                maintenance_window=aks.MaintenanceWindowArgs(
                    schedule=aks.ScheduleArgs(weekly=aks.WeeklyScheduleArgs(day_of_week=window["day"],
                                                                            interval_weeks=1)),
                    start_time=window["start_time"],
                    duration_hours=window["duration_hours"],
                    utc_offset="+00:00",
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for suffix, config in MAINTENANCE_CONFIGURATIONS.items()
        ]

    def _deployer_access(self, name: str, settings: _Settings,
                         cluster: aks.ManagedCluster) -> Optional[pulumi.Resource]:
        """Cluster admin for the identity running Pulumi and the wait for the grant to take (k3infra.azure.entra),
        or nothing with local accounts."""
        if settings.local:
            return None
        return entra.deployer_access(name, cluster, self, authorization.PrincipalType(settings.deployer))

    def _kubernetes_provider(self, name: str, kubeconfig: pulumi.Output[str]) -> k8s.Provider:
        """The Kubernetes provider, which waits for the deployer's grant to take."""
        wait = [self.deployer_access] if self.deployer_access else None
        return k8s.Provider(f"{name}-k8s", k8s.ProviderArgs(kubeconfig=kubeconfig),
                            opts=pulumi.ResourceOptions(parent=self, depends_on=wait))

    def _outputs(self, rg: resources.ResourceGroup, cluster: aks.ManagedCluster,
                 identity: managedidentity.UserAssignedIdentity, kubeconfig: pulumi.Output[str]) -> None:
        """The load balancer settings serving takes and the component's outputs, registered."""
        self.load_balancer: LoadBalancerSettings = LoadBalancerSettings(
            internal_annotations={INTERNAL_LB_ANNOTATION: "true"},
            public_annotations={},
            internal_source_ranges=[VNET_CIDR],
            # AKS has no inference gateway: serving installs agentgateway (serving.gateway_install).
            install_gateway=True,
            # Empty: Azure Load Balancer probes the node's health-check port, not the pods (catalog.health_checks).
            health_check_ranges=list(pod_health_check_ranges(Cloud.AZURE)),
        )
        """How serving exposes an endpoint on this cluster: an internal load balancer admitting the cluster's
        virtual network (002 §4.4's public LoadBalancer only with ``endpoint.exposure: public``)."""
        self.resource_group = rg
        """The resource group resource (for ``depends_on``)."""
        self.managed_cluster = cluster
        """The AKS resource (for ``depends_on``)."""
        self.resource_group_name = rg.name
        self.cluster_name = cluster.name
        self.oidc_issuer_url = cluster.oidc_issuer_profile.apply(lambda p: (p.issuer_url if p else None) or "")
        self.identity_id = identity.id
        self.identity_principal_id = identity.principal_id
        self.kubeconfig = kubeconfig
        self.register_outputs({
            "resource_group_name": self.resource_group_name,
            "cluster_name": self.cluster_name,
            "oidc_issuer_url": self.oidc_issuer_url,
            "identity_id": self.identity_id,
            "identity_principal_id": self.identity_principal_id,
            "kubeconfig": self.kubeconfig,
        })


def _settings(args: AksClusterArgs) -> _Settings:
    """The arguments checked (``InputPropertyError`` naming the first one wrong), with their defaults."""
    given_count = args.get("system_node_count")
    system_count = 2 if given_count is None else int(given_count)
    if system_count < 1:
        raise pulumi.InputPropertyError("system_node_count", f"a System pool needs at least 1 node, got {system_count}")
    channel = args.get("upgrade_channel") or "none"
    node_channel = args.get("node_os_upgrade_channel") or DEFAULT_NODE_OS_UPGRADE_CHANNEL
    if channel not in UPGRADE_CHANNELS:
        raise pulumi.InputPropertyError("upgrade_channel", f"{channel!r}: one of {', '.join(UPGRADE_CHANNELS)}")
    if node_channel not in NODE_OS_UPGRADE_CHANNELS:
        raise pulumi.InputPropertyError("node_os_upgrade_channel",
                                        f"{node_channel!r}: one of {', '.join(NODE_OS_UPGRADE_CHANNELS)}")
    window = checked(args.get("maintenance_window"))
    private = bool(args.get("private_api_server"))
    authorized = list(args.get("api_authorized_cidrs") or [])
    if private and authorized:
        raise pulumi.InputPropertyError("api_authorized_cidrs", "authorized IP ranges apply to a public API "
                                        "server; a private cluster has none")
    local = bool(args.get("local_accounts"))
    admin_groups = list(args.get("admin_group_object_ids") or [])
    if local and admin_groups:
        raise pulumi.InputPropertyError("admin_group_object_ids", "Entra admin groups need the Entra integration, "
                                        "which local_accounts turns off")
    deployer = args.get("deployer_principal_type") or "User"
    if deployer not in DEPLOYER_PRINCIPAL_TYPES:
        raise pulumi.InputPropertyError("deployer_principal_type",
                                        f"{deployer!r}: one of {', '.join(DEPLOYER_PRINCIPAL_TYPES)}")
    if local and OPEN_TO_EVERY_ADDRESS in authorized:
        raise pulumi.InputPropertyError("api_authorized_cidrs", "0.0.0.0/0 with local accounts would open a "
                                        "cluster-admin certificate's API server to every address")
    return _Settings(system_count=system_count, channel=channel, node_channel=node_channel, window=window,
                     private=private, authorized=authorized, local=local, admin_groups=admin_groups,
                     deployer=deployer, tags=dict(args.get("tags") or {}))


def _network_profile() -> aks.ContainerServiceNetworkProfileArgs:
    """Azure CNI overlay powered by Cilium: NetworkPolicies (the server's and the sync Job's) are enforced; without a
    policy engine AKS would accept them and enforce nothing."""
    return aks.ContainerServiceNetworkProfileArgs(
        network_plugin=aks.NetworkPlugin.AZURE,
        network_plugin_mode=aks.NetworkPluginMode.OVERLAY,
        network_dataplane=aks.NetworkDataplane.CILIUM,
        network_policy=aks.NetworkPolicy.CILIUM,
        pod_cidr=POD_CIDR,
        load_balancer_sku=aks.LoadBalancerSku.STANDARD,
    )


def _system_pool_profile(args: AksClusterArgs, settings: _Settings) -> aks.ManagedClusterAgentPoolProfileArgs:
    """The ``System`` pool the cluster is created with (controllers)."""
    return aks.ManagedClusterAgentPoolProfileArgs(
        name="system",
        mode=aks.AgentPoolMode.SYSTEM,
        vm_size=args.get("system_vm_size") or DEFAULT_SYSTEM_VM_SIZE,
        count=settings.system_count,
        os_type=aks.OSType.LINUX,
        os_sku=aks.OSSKU.UBUNTU,
        type=aks.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
    )


def _api_server_access(settings: _Settings) -> Optional[aks.ManagedClusterAPIServerAccessProfileArgs]:
    """A private API server, a public one limited to the authorized ranges, or AKS's default (public, any address)."""
    if settings.private:
        return aks.ManagedClusterAPIServerAccessProfileArgs(enable_private_cluster=True)
    if settings.authorized:
        return aks.ManagedClusterAPIServerAccessProfileArgs(authorized_ip_ranges=settings.authorized)
    return None


def _kubeconfig(settings: _Settings, rg: resources.ResourceGroup, cluster: aks.ManagedCluster) -> pulumi.Output[str]:
    """The cluster user kubeconfig (a secret): kubelogin through the Azure CLI with Entra ID, AKS's own with local
    accounts."""
    local = settings.local
    creds = aks.list_managed_cluster_user_credentials_output(
        resource_group_name=rg.name, resource_name=cluster.name, format=None if local else "exec")
    return pulumi.Output.secret(creds.kubeconfigs.apply(
        lambda ks: _user_kubeconfig(base64.b64decode(ks[0].value).decode("utf-8"), local)))


def _user_kubeconfig(text: str, local_accounts: bool) -> str:
    """The cluster user kubeconfig as AKS returns it with local accounts; with Entra ID, its kubelogin logging in
    through the Azure CLI (k3infra.azure.entra)."""
    return text if local_accounts else entra.azurecli_kubeconfig(text)

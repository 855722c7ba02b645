"""AckCluster: a VPC, an ACK managed cluster (Pro) with RRSA, a private API server, upgrades only in a maintenance
window, a small CPU pool and a Kubernetes provider."""

from typing import Mapping, NamedTuple, NotRequired, Optional, TypedDict

import pulumi
import pulumi_alicloud as alicloud
import pulumi_kubernetes as k8s

from .network import service_cidr, vswitch_cidrs
from ..component_args import reject_unknown
from ..maintenance import MaintenanceWindowSpec, checked, first_occurrence

CLUSTER_SPEC = "ack.pro.small"
"""ACK Pro (managed control plane with an SLA); RRSA and the managed add-ons need Pro (cloud-api.md §9)."""

NETWORK_PLUGIN = "terway-eniip"
"""Terway: pods get VPC addresses from their own vSwitch (the ACK reference example in pulumi_alicloud)."""

NETWORK_PLUGIN_CONFIG = '{"IPVlan":"false","NetworkPolicy":"true","ENITrunking":"false"}'
"""Terway with NetworkPolicy enforcement on (the ACK Terraform guide's addon config), so the serving namespace's
NetworkPolicy holds."""

CREATE_ADDONS = (NETWORK_PLUGIN, "csi-plugin", "csi-provisioner")
"""Installed at creation: the network plugin and the CSI components that mount OSS (docs/catalog-research.md
§3.5; csi-plugin >= 1.30.4 is needed for RRSA-authenticated OSS volumes, >= 1.33.1 for ossfs 2.0)."""

POD_IDENTITY_ADDON = "ack-pod-identity-webhook"
"""Injects the RRSA token and ``ALIBABA_CLOUD_*`` variables into pods whose service account names a RAM role
(docs/catalog-research.md §3.5). Managed as its own resource so it can be upgraded after creation."""

DEFAULT_SYSTEM_NODE_TYPE = "ecs.g7.2xlarge"
"""8 vCPU, 32 GiB: controllers, the LeaderWorkerSet operator and the weight sync Job."""

SYSTEM_POOL_LABEL = "system"
"""Value of ``k3infra.io/pool`` on the CPU pool's nodes."""

POOL_LABEL_KEY = "k3infra.io/pool"
"""Node label k3infra puts on each of its node pools (``system``, ``gpu``)."""

NODE_IMAGE = "AliyunLinux3"
"""Alibaba Cloud Linux 3: ACK's default node image, with UEFI builds for the ebmgn8v bare-metal family."""

UPGRADE_CHANNELS = ("none", "patch", "stable", "rapid")
"""``none`` turns cluster auto-upgrade off; the others are ACK's channels (cs.ManagedKubernetes
operation_policy.cluster_auto_upgrade.channel: patch, stable, rapid)."""


def node_pool_management(auto_upgrade: bool) -> alicloud.cs.NodePoolManagementArgs:
    """A node pool's managed operations: kubelet/runtime upgrades and CVE fixes (with node restarts) in the cluster's
    maintenance window when ``auto_upgrade``, nothing otherwise. Auto-repair stays off: it needs the
    node-lifecycle-controller and ack-node-problem-detector add-ons (cs.NodePool management.auto_repair)."""
    return alicloud.cs.NodePoolManagementArgs(
        enable=auto_upgrade,
        auto_repair=False,
        auto_upgrade=auto_upgrade,
        auto_upgrade_policy=alicloud.cs.NodePoolManagementAutoUpgradePolicyArgs(auto_upgrade_kubelet=auto_upgrade),
        auto_vul_fix=auto_upgrade,
        auto_vul_fix_policy=alicloud.cs.NodePoolManagementAutoVulFixPolicyArgs(restart_node=auto_upgrade),
        max_unavailable=1,
    )


class AckClusterArgs(TypedDict):
    """Inputs of an AckCluster."""

    cluster_name: pulumi.Input[str]
    """Name of the ACK cluster."""
    zone_id: str
    """Zone of the node and pod vSwitches; the GPU pool's zone (its capacity lives there)."""
    vpc_cidr: NotRequired[str]
    """CIDR of the VPC k3infra creates; the node and pod vSwitches take its first two quarters (at most /16 each).
    Default: 10.0.0.0/8."""
    kubernetes_version: NotRequired[Optional[pulumi.Input[str]]]
    """Kubernetes version. Default: ACK's latest."""
    system_node_type: NotRequired[Optional[str]]
    """Instance type of the CPU pool. Default: ecs.g7.2xlarge (8 vCPU, 32 GiB)."""
    system_nodes: NotRequired[int]
    """Nodes in the CPU pool. Default: 2."""
    deletion_protection: NotRequired[bool]
    """Refuse to delete the cluster through the API. Default: true."""
    public_api_server: NotRequired[bool]
    """Give the API server an internet-facing load balancer (``slb_internet_enabled``, create-time only), so `pulumi
    up` can manage Kubernetes objects from outside the VPC. Default: false: the API server has only a VPC address,
    and Pulumi runs inside the VPC or reaches it through VPN Gateway, CEN or Express Connect."""
    upgrade_channel: NotRequired[str]
    """Cluster auto-upgrade channel: none, patch, stable or rapid. Default: none."""
    node_auto_upgrade: NotRequired[bool]
    """Managed CPU pool: kubelet/runtime upgrades and CVE fixes with node restarts, in the maintenance window (the GPU
    pool takes the same argument). Default: false."""
    maintenance_window: NotRequired[Optional[MaintenanceWindowSpec]]
    """When ACK may run automatic operations (cluster auto-upgrade, managed node pools). Default: Sundays 02:00 UTC
    for 4 hours."""
    tags: NotRequired[Optional[Mapping[str, str]]]
    """Tags on every Alibaba Cloud resource. Default: none."""


class _Settings(NamedTuple):
    """An AckCluster's arguments, checked, with the address ranges they give."""

    zone: str
    vpc_cidr: str
    node_cidr: str
    pod_cidr: str
    service_cidr: str
    system_nodes: int
    channel: str
    window: MaintenanceWindowSpec
    tags: dict[str, str]


def _settings(args: AckClusterArgs) -> _Settings:
    """The arguments checked (``InputPropertyError`` naming the first one wrong) and the vSwitch and Service ranges
    carved out of the VPC's."""
    zone = args["zone_id"]
    if not zone:
        raise pulumi.InputPropertyError("zone_id", "the vSwitches need a zone (the GPU capacity's zone)")
    vpc_cidr = args.get("vpc_cidr") or "10.0.0.0/8"
    nodes = int(args.get("system_nodes", 2))
    if nodes < 1:
        raise pulumi.InputPropertyError("system_nodes", "the CPU pool needs at least one node")
    try:
        node_cidr, pod_cidr = vswitch_cidrs(vpc_cidr, 2)
        svc_cidr = service_cidr(vpc_cidr)
    except ValueError as e:
        raise pulumi.InputPropertyError("vpc_cidr", str(e)) from e
    channel = args.get("upgrade_channel") or "none"
    if channel not in UPGRADE_CHANNELS:
        raise pulumi.InputPropertyError("upgrade_channel", f"{channel!r}: one of {', '.join(UPGRADE_CHANNELS)}")
    if channel != "none" and args.get("kubernetes_version") is not None:
        raise pulumi.InputPropertyError("kubernetes_version", "ACK takes no version with cluster auto-upgrade "
                                        "(cs.ManagedKubernetes: \"Do not specify if cluster auto upgrade is "
                                        "enabled\")")
    window = checked(args.get("maintenance_window"))
    return _Settings(zone=zone, vpc_cidr=vpc_cidr, node_cidr=node_cidr, pod_cidr=pod_cidr, service_cidr=svc_cidr,
                     system_nodes=nodes, channel=channel, window=window, tags=dict(args.get("tags") or {}))


class _Network(NamedTuple):
    """The VPC and its two vSwitches."""

    vpc: alicloud.vpc.Network
    nodes: alicloud.vpc.Switch
    pods: alicloud.vpc.Switch


class AckCluster(pulumi.ComponentResource):
    """An ACK Pro cluster for Kimi K3 (002 §6.3): VPC, node and pod vSwitches in the GPU zone, RRSA for pod
    identities (enable_rrsa, ack-pod-identity-webhook), the OSS CSI components, a small CPU node pool, and a
    Kubernetes provider built from the cluster's kubeconfig (a secret).

    The node pools log in with an ECS key pair created here whose private key nobody holds: ACK node pools need a
    password or a key pair, and neither a password nor a private key reaches the state.

    Besides the outputs: ``provider`` (the Kubernetes provider serving uses), ``pod_identity`` (the webhook
    add-on) and ``system_pool`` (the CPU pool), which workloads that need pod identities wait for."""

    cluster_id: pulumi.Output[str]
    """ACK cluster id."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig of the cluster (secret)."""
    vpc_id: pulumi.Output[str]
    """The VPC."""
    node_vswitch_id: pulumi.Output[str]
    """vSwitch of the nodes (the GPU pool joins it too)."""
    pod_vswitch_id: pulumi.Output[str]
    """vSwitch Terway gives pod addresses from."""
    security_group_id: pulumi.Output[str]
    """Security group ACK created for the nodes."""
    oidc_provider_arn: pulumi.Output[str]
    """ARN of the RAM OIDC provider RRSA registered (acs:ram::ACCOUNT:oidc-provider/ack-rrsa-CLUSTER)."""
    oidc_issuer_url: pulumi.Output[str]
    """Issuer URL of the cluster's service account tokens (the ``oidc:iss`` of RRSA trust policies)."""
    node_key_name: pulumi.Output[str]
    """ECS key pair the node pools log in with; nobody holds its private key (none is stored anywhere)."""

    def __init__(self, name: str, args: AckClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:AckCluster", name, None, opts)
        reject_unknown(args, AckClusterArgs)
        settings = _settings(args)
        net = self._network(name, args, settings)
        cluster = self._control_plane(name, args, settings, net)
        self.pod_identity = self._pod_identity(name, cluster)
        self.node_key = self._node_key(name, args, settings)
        self.system_pool = self._system_pool(name, args, settings, cluster, net)
        kubeconfig, self.provider = self._kubernetes_provider(name, cluster)
        self.cluster = cluster
        self._outputs(cluster, net, kubeconfig)

    def _network(self, name: str, args: AckClusterArgs, settings: _Settings) -> _Network:
        """The VPC and the node and pod vSwitches in the GPU zone."""
        tags, zone = settings.tags, settings.zone
        child = pulumi.ResourceOptions(parent=self)
        vpc = alicloud.vpc.Network(f"{name}-vpc", alicloud.vpc.NetworkArgs(
            vpc_name=args["cluster_name"], cidr_block=settings.vpc_cidr, tags=tags), opts=child)
        node_vsw = alicloud.vpc.Switch(f"{name}-nodes", alicloud.vpc.SwitchArgs(
            vpc_id=vpc.id, zone_id=zone, cidr_block=settings.node_cidr,
            vswitch_name=pulumi.Output.concat(args["cluster_name"], "-nodes"), tags=tags), opts=child)
        pod_vsw = alicloud.vpc.Switch(f"{name}-pods", alicloud.vpc.SwitchArgs(
            vpc_id=vpc.id, zone_id=zone, cidr_block=settings.pod_cidr,
            vswitch_name=pulumi.Output.concat(args["cluster_name"], "-pods"), tags=tags), opts=child)
        return _Network(vpc=vpc, nodes=node_vsw, pods=pod_vsw)

    def _control_plane(self, name: str, args: AckClusterArgs, settings: _Settings,
                       net: _Network) -> alicloud.cs.ManagedKubernetes:
        """The ACK Pro cluster: RRSA, Terway with NetworkPolicy, the OSS CSI components, upgrades only in the
        maintenance window."""
        window, channel = settings.window, settings.channel
        return alicloud.cs.ManagedKubernetes(f"{name}-cluster", alicloud.cs.ManagedKubernetesArgs(
            name=args["cluster_name"],
            cluster_spec=CLUSTER_SPEC,
            version=args.get("kubernetes_version"),
            vswitch_ids=[net.nodes.id],
            pod_vswitch_ids=[net.pods.id],
            service_cidr=settings.service_cidr,
            proxy_mode="ipvs",
            new_nat_gateway=True,  # nodes pull the engine image and the sync Job reaches Hugging Face
            slb_internet_enabled=bool(args.get("public_api_server", False)),
            maintenance_window=alicloud.cs.ManagedKubernetesMaintenanceWindowArgs(
                enable=True,
                maintenance_time=first_occurrence(window),
                duration=f"{window['duration_hours']}h",
                weekly_period=window["day"],
            ),
            # Only works with the maintenance window enabled (cs.ManagedKubernetes operation_policy).
            operation_policy=alicloud.cs.ManagedKubernetesOperationPolicyArgs(
                cluster_auto_upgrade=alicloud.cs.ManagedKubernetesOperationPolicyClusterAutoUpgradeArgs(
                    enabled=channel != "none", channel=None if channel == "none" else channel)),
            enable_rrsa=True,
            deletion_protection=bool(args.get("deletion_protection", True)),
            addons=[alicloud.cs.ManagedKubernetesAddonArgs(name=a, config=NETWORK_PLUGIN_CONFIG if a == NETWORK_PLUGIN
                                                           else None) for a in CREATE_ADDONS],
            tags=settings.tags,
        ), opts=pulumi.ResourceOptions(parent=self, ignore_changes=["addons"]))

    def _pod_identity(self, name: str, cluster: alicloud.cs.ManagedKubernetes) -> alicloud.cs.KubernetesAddon:
        """The RRSA webhook add-on, managed on its own so it can be upgraded after creation."""
        return alicloud.cs.KubernetesAddon(f"{name}-pod-identity", alicloud.cs.KubernetesAddonInitArgs(
            cluster_id=cluster.id, name=POD_IDENTITY_ADDON), opts=pulumi.ResourceOptions(parent=self))

    def _node_key(self, name: str, args: AckClusterArgs, settings: _Settings) -> alicloud.ecs.EcsKeyPair:
        """The key pair every node pool logs in with (the GPU pool too), whose private key nobody holds.

        ACK node pools take a password or a key pair (pulumi-alicloud cs.NodePool: "You have to specify one of
        `password` and `key_name`"; a managed pool takes only key_name). Created without public_key or key_file,
        CreateKeyPair's private key is kept nowhere (terraform-provider-alicloud resource_alicloud_ecs_key_pair.go
        writes it only to key_file): no password or key in the state. Shell access: Cloud Assistant / Workbench or
        `kubectl debug node`; to SSH, bind a key pair of your own to the nodes in the ECS console."""
        return alicloud.ecs.EcsKeyPair(f"{name}-node-key", alicloud.ecs.EcsKeyPairArgs(
            key_pair_name=pulumi.Output.concat(args["cluster_name"], "-nodes"), tags=settings.tags),
            opts=pulumi.ResourceOptions(parent=self))

    def _system_pool(self, name: str, args: AckClusterArgs, settings: _Settings, cluster: alicloud.cs.ManagedKubernetes,
                     net: _Network) -> alicloud.cs.NodePool:
        """The CPU pool controllers, the LeaderWorkerSet operator and the weight sync run on."""
        return alicloud.cs.NodePool(f"{name}-system", alicloud.cs.NodePoolArgs(
            cluster_id=cluster.id,
            node_pool_name="system",
            key_name=self.node_key.key_pair_name,
            vswitch_ids=[net.nodes.id],
            instance_types=[args.get("system_node_type") or DEFAULT_SYSTEM_NODE_TYPE],
            desired_size=str(settings.system_nodes),
            image_type=NODE_IMAGE,
            system_disk_category="cloud_essd",
            system_disk_size=120,
            labels=[alicloud.cs.NodePoolLabelArgs(key=POOL_LABEL_KEY, value=SYSTEM_POOL_LABEL)],
            management=node_pool_management(bool(args.get("node_auto_upgrade"))),
            tags=settings.tags,
        ), opts=pulumi.ResourceOptions(parent=self))

    def _kubernetes_provider(self, name: str,
                             cluster: alicloud.cs.ManagedKubernetes) -> tuple[pulumi.Output[str], k8s.Provider]:
        """The cluster's kubeconfig (a secret) and the Kubernetes provider built from it."""
        credential = alicloud.cs.get_cluster_credential_output(
            cluster_id=cluster.id, opts=pulumi.InvokeOutputOptions(parent=self))
        kubeconfig = pulumi.Output.secret(credential.kube_config)
        provider = k8s.Provider(f"{name}-k8s", k8s.ProviderArgs(kubeconfig=kubeconfig),
                                opts=pulumi.ResourceOptions(parent=self))
        return kubeconfig, provider

    def _outputs(self, cluster: alicloud.cs.ManagedKubernetes, net: _Network, kubeconfig: pulumi.Output[str]) -> None:
        """The component's outputs, registered."""
        rrsa = cluster.rrsa_metadata
        self.cluster_id = cluster.id
        self.kubeconfig = kubeconfig
        self.vpc_id = net.vpc.id
        self.node_vswitch_id = net.nodes.id
        self.pod_vswitch_id = net.pods.id
        self.security_group_id = cluster.security_group_id
        self.api_server_intranet = cluster.connections.apply(
            lambda cs: next((c.api_server_intranet for c in cs or [] if c.api_server_intranet), ""))
        """The API server's VPC address (``https://IP:6443``)."""
        self.oidc_provider_arn = rrsa.apply(lambda m: m.ram_oidc_provider_arn or "")
        self.oidc_issuer_url = rrsa.apply(lambda m: m.rrsa_oidc_issuer_url or "")
        self.node_key_name = self.node_key.key_pair_name
        self.register_outputs({
            "cluster_id": self.cluster_id,
            "kubeconfig": self.kubeconfig,
            "vpc_id": self.vpc_id,
            "node_vswitch_id": self.node_vswitch_id,
            "pod_vswitch_id": self.pod_vswitch_id,
            "security_group_id": self.security_group_id,
            "oidc_provider_arn": self.oidc_provider_arn,
            "oidc_issuer_url": self.oidc_issuer_url,
            "node_key_name": self.node_key_name,
        })

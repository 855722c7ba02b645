"""EksCluster: the VPC, the EKS control plane in API authentication mode, its add-ons and a small CPU pool."""

import json
from typing import Mapping, NamedTuple, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..catalog.eks_addons import EBS_CSI, EKS_CLUSTER_ADDONS, NODE_MONITORING, POD_IDENTITY_AGENT, VPC_CNI
from ..catalog.eks_versions import EKS_DEFAULT_KUBERNETES, minor
from ..serving.contract import LoadBalancerSettings
from . import policies
from .iam import granted_arn
from .kubeconfig import kubeconfig_json
from .network import SubnetPlan, other_zone, subnet_plan
from .nodegroup import GPU_TAINT_KEY
from ..component_args import reject_unknown

DEFAULT_SYSTEM_NODE_TYPE = "m7i.2xlarge"
"""The system pool's instance type: 8 vCPU, 32 GiB (controllers, add-ons, the weight sync Job)."""


SYSTEM_POOL_LABEL = "k3infra.io/pool"

VPC_CNI_CONFIGURATION = {"enableNetworkPolicy": "true"}
"""The managed VPC CNI enforces NetworkPolicies only when told (EKS User Guide, cni-network-policy-configure;
amazon-vpc-cni-k8s chart value ``enableNetworkPolicy``, a string). Without it every NetworkPolicy is ignored."""

NODE_MONITORING_ADDON = NODE_MONITORING
"""Reads node logs and sets NodeConditions (AcceleratedHardwareReady for GPU faults) that node auto repair acts on
(EKS User Guide, node-health: "When paired with the node monitoring agent, node auto repair can react to more
conditions")."""
NODE_MONITORING_CONFIGURATION = {"dcgmAgent": {"tolerations": [
    {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]}}
"""The agent DaemonSet tolerates every taint, its DCGM DaemonSet none (aws/eks-node-monitoring-agent
``charts/eks-node-monitoring-agent/values.yaml``, chart 1.7.0): without this the GPU checks never reach the tainted
GPU nodes. Keys from the add-on's configuration schema (schemas/addons/)."""

NODE_MONITORING_HOSTENGINE_PORT = 5555
"""Where the node monitoring agent's ``dcgm-server`` DaemonSet serves DCGM on every EKS GPU node: ``nv-hostengine -n
-b ALL`` with ``hostPort: 5555`` (aws/eks-node-monitoring-agent ``charts/eks-node-monitoring-agent/templates/
dcgm-daemonset.yaml``; the agent connects to it as a DCGM client, chart README "DCGM host engine"). Other DCGM clients
on the node (the DCGM exporter) connect to it too, so the node runs one engine."""

#: Service annotations of the AWS cloud controller: a Network Load Balancer, internal unless public.
INTERNAL_LB_ANNOTATIONS = {
    "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
    "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
}
PUBLIC_LB_ANNOTATIONS = {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}


class EksClusterArgs(TypedDict):
    """Arguments of EksCluster."""

    cluster_name: str
    """Name of the EKS cluster (also names the VPC and tags the subnets for load balancer discovery)."""
    region: str
    """AWS region of the cluster (the kubeconfig's ``aws eks get-token --region``)."""
    zone: str
    """Availability zone of the GPU capacity: the capacity subnet is created there. Must be a zone of
    ``region``; checked against the region's available zones at preview."""
    vpc_cidr: NotRequired[str]
    """CIDR of the VPC, /16 to /20. Default: 10.0.0.0/16."""
    kubernetes_version: NotRequired[Optional[pulumi.Input[str]]]
    """Kubernetes version, a plain string (a minor such as ``1.35``): the cluster's add-ons are the versions pinned
    for it (catalog.eks_addons.EKS_CLUSTER_ADDONS, which names the minors k3infra pins). Default:
    catalog.eks_versions.EKS_DEFAULT_KUBERNETES."""
    public_access_cidrs: NotRequired[Sequence[str]]
    """Public CIDRs that may reach the Kubernetes API's public endpoint. Default: none given, which EKS takes
    as 0.0.0.0/0 (open to the internet, authenticated by IAM)."""
    private_endpoint: NotRequired[bool]
    """Turn the public endpoint off: the API is reachable only from the VPC and connected networks (so is
    `pulumi up`, which talks to it). Default: false."""
    deletion_protection: NotRequired[bool]
    """EKS deletion protection: `pulumi destroy` fails until it is turned off. Default: true."""
    system_node_type: NotRequired[str]
    """Instance type of the CPU system pool. Default: m7i.2xlarge."""
    system_nodes: NotRequired[int]
    """Nodes in the system pool, spread over both private subnets. Default: 2."""
    secrets_key_administrators: NotRequired[Sequence[str]]
    """IAM principals (ARNs) that administer the KMS key of the cluster's Secrets; they cannot decrypt with it.
    Default: the account itself, so that its IAM policies decide who may (KMS key-policy-default); naming the identity
    that runs Pulumi instead would change the key policy with whoever runs the next update."""
    oidc_provider: NotRequired[bool]
    """Create the cluster's IAM OIDC provider (IAM roles for service accounts). The HyperPod inference
    operator and its ALB and KEDA controllers need it; Pod Identity does not. Default: false."""


def _kubernetes_and_addons(args: EksClusterArgs) -> tuple[str, Mapping[str, str]]:
    """The cluster's Kubernetes version and the add-on versions the catalog pins for its minor."""
    kubernetes = args.get("kubernetes_version") or EKS_DEFAULT_KUBERNETES
    if not isinstance(kubernetes, str):
        raise pulumi.InputPropertyError("kubernetes_version", "must be a plain string: the add-ons are pinned per "
                                        "Kubernetes minor")
    addons = EKS_CLUSTER_ADDONS.get(minor(kubernetes))
    if addons is None:
        raise pulumi.InputPropertyError("kubernetes_version", f"{kubernetes}: k3infra pins the EKS add-ons for "
                                        f"Kubernetes {', '.join(EKS_CLUSTER_ADDONS)} only")
    return kubernetes, addons


def _second_zone(args: EksClusterArgs) -> str:
    """The zone of the second subnet pair (EKS wants two), after checking the capacity's zone is available."""
    region, zone = args["region"], args["zone"]
    zones = aws.get_availability_zones(state="available", region=region).names
    if zone not in zones:
        raise pulumi.InputPropertyError("zone", f"{zone} is not an available zone of {region} ({', '.join(zones)})")
    return other_zone(zone, list(zones))


class _Network(NamedTuple):
    """What the cluster's other steps use of its network."""

    vpc: aws.ec2.Vpc
    private_capacity: aws.ec2.Subnet
    """The private subnet in the GPU capacity's zone."""
    private_other: aws.ec2.Subnet
    """The private subnet in the second zone."""


class EksCluster(pulumi.ComponentResource):
    """An EKS cluster ready for reserved GPU capacity in one availability zone (002 §3.2 step 1).

    - VPC: private subnets in the capacity's zone and in a second zone (EKS needs two), small public
      subnets with one NAT gateway, and an S3 gateway endpoint so weight traffic bypasses the NAT.
    - EKS with authentication mode ``API`` (access entries; SageMaker HyperPod requires API or
      API_AND_CONFIG_MAP), the creator as cluster admin, the API endpoint public (optionally limited to
      given CIDRs) or private only, the managed VPC CNI (``efa-only`` interfaces need >= 1.18.5, HyperPod >= 1.18.3)
      with NetworkPolicy enforcement on, the Pod Identity agent, the node monitoring agent (GPU health for node auto
      repair), and the EBS CSI driver, each at the version the catalog pins for the cluster's minor.
    - A small on-demand CPU system pool (controllers and the weight sync Job; GPU pools are tainted).
    - A Kubernetes provider built from the cluster's kubeconfig (a secret; tokens come from
      ``aws eks get-token`` at each use).

    Example::

        cluster = EksCluster("k3", {"cluster_name": "k3", "region": "us-west-2", "zone": "us-west-2a"})
        pulumi.export("kubeconfig", cluster.kubeconfig)
    """

    cluster_name: pulumi.Output[str]
    """Name of the EKS cluster."""
    arn: pulumi.Output[str]
    """ARN of the EKS cluster (HyperPod's orchestrator)."""
    endpoint: pulumi.Output[str]
    """Kubernetes API endpoint."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig (JSON) for the cluster: a secret."""
    vpc_id: pulumi.Output[str]
    """The VPC."""
    capacity_subnet_ids: pulumi.Output[Sequence[str]]
    """Private subnet(s) in the GPU capacity's availability zone."""
    private_subnet_ids: pulumi.Output[Sequence[str]]
    """Both private subnets."""
    cluster_security_group_id: pulumi.Output[str]
    """The security group EKS creates for the cluster; it allows all traffic between its members (EFA needs that)."""
    node_role_arn: pulumi.Output[str]
    """IAM role of managed node groups, as an output that depends on the role's policy attachments: a node group
    given it is created after them and deleted before them."""
    oidc_issuer: pulumi.Output[str]
    """The cluster's OIDC issuer URL."""
    oidc_provider_arn: Optional[pulumi.Output[str]]
    """ARN of the IAM OIDC provider, when ``oidc_provider`` is true."""

    def __init__(self, name: str, args: EksClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:EksCluster", name, None, opts)
        reject_unknown(args, EksClusterArgs)
        cluster_name, region = args["cluster_name"], args["region"]
        kubernetes, addons = _kubernetes_and_addons(args)
        vpc_cidr = args.get("vpc_cidr") or "10.0.0.0/16"
        try:
            plan = subnet_plan(vpc_cidr)
        except ValueError as e:
            raise pulumi.InputPropertyError("vpc_cidr", f"{vpc_cidr}: {e}") from None
        second = _second_zone(args)
        public_cidrs = list(args.get("public_access_cidrs") or ())
        private_only = bool(args.get("private_endpoint"))
        if private_only and public_cidrs:
            raise pulumi.InputPropertyError("public_access_cidrs", "a private-only endpoint has no public access to limit")

        net = self._network(name, args, vpc_cidr, plan, second)
        cluster = self._control_plane(name, args, kubernetes, net, private_only, public_cidrs)
        node_role, node_policies = self._node_role(name)
        system_pool, pod_identity = self._system_pool(name, args, cluster, addons, node_role, node_policies, net)
        self._ebs_csi(name, cluster, addons, system_pool, pod_identity)
        issuer = cluster.identities.apply(lambda ids: (ids[0].oidcs[0].issuer or "") if ids and ids[0].oidcs else "")
        self.oidc_provider_arn = None
        if args.get("oidc_provider"):
            oidc = aws.iam.OpenIdConnectProvider(f"{name}-oidc", url=issuer, client_id_lists=["sts.amazonaws.com"],
                                                 opts=pulumi.ResourceOptions(parent=self))
            self.oidc_provider_arn = oidc.arn
        ca = cluster.certificate_authority.apply(lambda c: c.data or "")
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(cluster.name, cluster.endpoint, ca).apply(
            lambda v: kubeconfig_json(v[0], v[1], v[2], region)))
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=pulumi.ResourceOptions(parent=self))
        """Kubernetes provider of this cluster; pass it on with ``providers={"kubernetes": ...}``."""
        self._outputs(kubernetes, cluster, net, plan, granted_arn(node_role, node_policies), issuer, system_pool,
                      pod_identity)

    def _network(self, name: str, args: EksClusterArgs, vpc_cidr: str, plan: SubnetPlan, second: str) -> _Network:
        """The VPC over two zones: a private and a public subnet in each, a NAT gateway, routes, the S3 endpoint."""
        cluster_name, region, zone = args["cluster_name"], args["region"], args["zone"]
        child = pulumi.ResourceOptions(parent=self)
        vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=vpc_cidr, enable_dns_hostnames=True, enable_dns_support=True,
                          tags={"Name": cluster_name}, opts=child)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={"Name": cluster_name}, opts=child)
        owned = {f"kubernetes.io/cluster/{cluster_name}": "shared"}

        def subnet(role: str, cidr: str, az: str, public: bool) -> aws.ec2.Subnet:
            elb = {"kubernetes.io/role/elb": "1"} if public else {"kubernetes.io/role/internal-elb": "1"}
            return aws.ec2.Subnet(f"{name}-{role}", vpc_id=vpc.id, cidr_block=cidr, availability_zone=az,
                                  map_public_ip_on_launch=False,
                                  tags={"Name": f"{cluster_name}-{role}", **owned, **elb}, opts=child)

        private_cap = subnet("private-capacity", plan.private_capacity, zone, False)
        private_other = subnet("private-other", plan.private_other, second, False)
        public_cap = subnet("public-capacity", plan.public_capacity, zone, True)
        public_other = subnet("public-other", plan.public_other, second, True)
        eip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc", tags={"Name": cluster_name}, opts=child)
        nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=eip.id, subnet_id=public_cap.id,
                                 tags={"Name": cluster_name}, opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]))
        public_rt = aws.ec2.RouteTable(f"{name}-public", vpc_id=vpc.id, routes=[
            aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={"Name": f"{cluster_name}-public"}, opts=child)
        private_rt = aws.ec2.RouteTable(f"{name}-private", vpc_id=vpc.id, routes=[
            aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            tags={"Name": f"{cluster_name}-private"}, opts=child)
        for role, sn, rt in (("private-capacity", private_cap, private_rt), ("private-other", private_other, private_rt),
                             ("public-capacity", public_cap, public_rt), ("public-other", public_other, public_rt)):
            aws.ec2.RouteTableAssociation(f"{name}-{role}-routes", subnet_id=sn.id, route_table_id=rt.id, opts=child)
        # Weights move between S3 and the nodes through a gateway endpoint: no NAT processing charge per GB.
        aws.ec2.VpcEndpoint(f"{name}-s3", vpc_id=vpc.id, service_name=f"com.amazonaws.{region}.s3",
                            vpc_endpoint_type="Gateway", route_table_ids=[private_rt.id, public_rt.id],
                            tags={"Name": f"{cluster_name}-s3"}, opts=child)
        return _Network(vpc, private_cap, private_other)

    def _control_plane(self, name: str, args: EksClusterArgs, kubernetes: str, net: _Network, private_only: bool,
                       public_cidrs: list[str]) -> aws.eks.Cluster:
        """The cluster's role, its Secrets key, and the EKS cluster in the private subnets."""
        cluster_name = args["cluster_name"]
        child = pulumi.ResourceOptions(parent=self)
        cluster_role = aws.iam.Role(f"{name}-cluster-role",
                                    assume_role_policy=json.dumps(policies.service_trust("eks.amazonaws.com")),
                                    opts=child)
        cluster_policy = aws.iam.RolePolicyAttachment(f"{name}-cluster-policy", role=cluster_role.name,
                                                      policy_arn=policies.MANAGED + "AmazonEKSClusterPolicy", opts=child)
        # Envelope encryption of Secrets with a customer-managed key, as terraform-aws-modules/eks does it (a key with
        # rotation, encryptionConfig for secrets, the cluster role allowed to use the key): EKS already encrypts all
        # API data with an AWS-owned key (1.28+, envelope-encryption); this key is the account's, rotated yearly,
        # and its policy and CloudTrail say who may decrypt. Once set it cannot be removed (EKS enable-kms).
        admins = list(args.get("secrets_key_administrators") or ())
        key = aws.kms.Key(
            f"{name}-secrets-key", description=f"{cluster_name} EKS Secrets encryption key",
            key_usage="ENCRYPT_DECRYPT", customer_master_key_spec="SYMMETRIC_DEFAULT", enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=cluster_role.arn.apply(lambda arn: json.dumps(policies.secrets_key_policy(arn, admins or None))),
            opts=child)
        aws.kms.Alias(f"{name}-secrets-key-alias", name=f"alias/eks/{cluster_name}", target_key_id=key.key_id,
                      opts=child)
        encryption_policy = aws.iam.RolePolicy(
            f"{name}-cluster-encryption", role=cluster_role.id,
            policy=key.arn.apply(lambda arn: json.dumps(policies.cluster_encryption(arn))), opts=child)
        return aws.eks.Cluster(
            f"{name}-eks",
            name=cluster_name,
            role_arn=cluster_role.arn,
            version=kubernetes,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=[net.private_capacity.id, net.private_other.id],
                endpoint_private_access=True,
                endpoint_public_access=not private_only,
                public_access_cidrs=public_cidrs or None,
            ),
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API",
                bootstrap_cluster_creator_admin_permissions=True,
            ),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key.arn), resources=["secrets"]),
            deletion_protection=args.get("deletion_protection", True),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster_policy, encryption_policy]),
        )

    def _node_role(self, name: str) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
        """The managed node groups' role and its policy attachments."""
        child = pulumi.ResourceOptions(parent=self)
        node_role = aws.iam.Role(f"{name}-node-role",
                                 assume_role_policy=json.dumps(policies.service_trust("ec2.amazonaws.com")), opts=child)
        node_policies = [
            aws.iam.RolePolicyAttachment(f"{name}-node-{short}", role=node_role.name,
                                         policy_arn=policies.MANAGED + managed, opts=child)
            for short, managed in (("worker", "AmazonEKSWorkerNodePolicy"),
                                   ("ecr", "AmazonEC2ContainerRegistryReadOnly"),
                                   ("cni", "AmazonEKS_CNI_Policy"))
        ]
        return node_role, node_policies

    def _system_pool(self, name: str, args: EksClusterArgs, cluster: aws.eks.Cluster, addons: Mapping[str, str],
                     node_role: aws.iam.Role, node_policies: list[aws.iam.RolePolicyAttachment],
                     net: _Network) -> tuple[aws.eks.NodeGroup, aws.eks.Addon]:
        """The VPC CNI and Pod Identity add-ons, the CPU system pool after them, and the node monitoring agent on it;
        the pool and the Pod Identity add-on."""
        child = pulumi.ResourceOptions(parent=self)
        vpc_cni = aws.eks.Addon(f"{name}-vpc-cni", cluster_name=cluster.name, addon_name=VPC_CNI,
                                addon_version=addons[VPC_CNI],
                                configuration_values=json.dumps(VPC_CNI_CONFIGURATION, sort_keys=True),
                                resolve_conflicts_on_create="OVERWRITE", resolve_conflicts_on_update="OVERWRITE",
                                opts=child)
        pod_identity = aws.eks.Addon(f"{name}-pod-identity", cluster_name=cluster.name,
                                     addon_name=POD_IDENTITY_AGENT, addon_version=addons[POD_IDENTITY_AGENT],
                                     resolve_conflicts_on_create="OVERWRITE",
                                     opts=child)
        system_nodes = args.get("system_nodes", 2)
        system_pool = aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=cluster.name,
            node_role_arn=node_role.arn,
            subnet_ids=[net.private_capacity.id, net.private_other.id],
            instance_types=[args.get("system_node_type") or DEFAULT_SYSTEM_NODE_TYPE],
            ami_type="AL2023_x86_64_STANDARD",
            capacity_type="ON_DEMAND",
            disk_size=100,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(desired_size=system_nodes, min_size=system_nodes,
                                                              max_size=system_nodes),
            labels={SYSTEM_POOL_LABEL: "system"},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*node_policies, vpc_cni, pod_identity]),
        )
        aws.eks.Addon(f"{name}-node-monitoring", cluster_name=cluster.name, addon_name=NODE_MONITORING_ADDON,
                      addon_version=addons[NODE_MONITORING_ADDON],
                      configuration_values=json.dumps(NODE_MONITORING_CONFIGURATION, sort_keys=True),
                      resolve_conflicts_on_create="OVERWRITE", resolve_conflicts_on_update="OVERWRITE",
                      opts=pulumi.ResourceOptions(parent=self, depends_on=[system_pool]))
        return system_pool, pod_identity

    def _ebs_csi(self, name: str, cluster: aws.eks.Cluster, addons: Mapping[str, str], system_pool: aws.eks.NodeGroup,
                 pod_identity: aws.eks.Addon) -> None:
        """The EBS CSI driver add-on with its Pod Identity role."""
        child = pulumi.ResourceOptions(parent=self)
        ebs_role = aws.iam.Role(f"{name}-ebs-csi-role", assume_role_policy=json.dumps(policies.pod_identity_trust()),
                                opts=child)
        ebs_policy = aws.iam.RolePolicyAttachment(
            f"{name}-ebs-csi-policy", role=ebs_role.name,
            policy_arn=policies.MANAGED + "service-role/AmazonEBSCSIDriverPolicy", opts=child)
        aws.eks.Addon(
            f"{name}-ebs-csi", cluster_name=cluster.name, addon_name=EBS_CSI, addon_version=addons[EBS_CSI],
            pod_identity_associations=[aws.eks.AddonPodIdentityAssociationArgs(
                role_arn=ebs_role.arn, service_account="ebs-csi-controller-sa")],
            resolve_conflicts_on_create="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[system_pool, pod_identity, ebs_policy]))

    def _outputs(self, kubernetes: str, cluster: aws.eks.Cluster, net: _Network, plan: SubnetPlan,
                 node_role_arn: pulumi.Output[str], issuer: pulumi.Output[str], system_pool: aws.eks.NodeGroup,
                 pod_identity: aws.eks.Addon) -> None:
        """The component's attributes and registered outputs."""
        self.kubernetes_version = kubernetes
        """The cluster's Kubernetes version (what its pinned add-ons and charts are chosen by)."""
        self.cluster_name = cluster.name
        self.arn = cluster.arn
        self.endpoint = cluster.endpoint
        self.vpc_id = net.vpc.id
        self.capacity_subnet_ids = pulumi.Output.all(net.private_capacity.id).apply(list)
        self.private_subnet_ids = pulumi.Output.all(net.private_capacity.id, net.private_other.id).apply(list)
        self.cluster_security_group_id = cluster.vpc_config.apply(lambda v: v.cluster_security_group_id or "")
        self.node_role_arn = node_role_arn
        self.oidc_issuer = issuer
        self.system_pool = system_pool
        """The CPU node group: add-ons whose pods need nodes depend on it."""
        self.pod_identity_agent = pod_identity
        """The Pod Identity agent add-on: pods using Pod Identity associations depend on it."""
        self.load_balancer: LoadBalancerSettings = {
            "internal_annotations": dict(INTERNAL_LB_ANNOTATIONS),
            "public_annotations": dict(PUBLIC_LB_ANNOTATIONS),
            # The private subnets, not the whole VPC: in-VPC clients, nodes and pods (VPC CNI) live there; the
            # public subnets hold only the NAT gateway and public load balancers.
            "internal_source_ranges": [plan.private_capacity, plan.private_other],
            # EKS has no inference gateway: serving installs agentgateway (serving.gateway_install).
            "install_gateway": True,
        }
        """How Services of type LoadBalancer become internal (admitting the private subnets only) or public NLBs."""
        self.register_outputs({
            "cluster_name": self.cluster_name,
            "arn": self.arn,
            "endpoint": self.endpoint,
            "kubeconfig": self.kubeconfig,
            "vpc_id": self.vpc_id,
            "capacity_subnet_ids": self.capacity_subnet_ids,
            "private_subnet_ids": self.private_subnet_ids,
            "cluster_security_group_id": self.cluster_security_group_id,
            "node_role_arn": self.node_role_arn,
            "oidc_issuer": self.oidc_issuer,
            "oidc_provider_arn": self.oidc_provider_arn,
        })

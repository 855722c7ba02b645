"""EksSyncNodeGroup: the weight sync's own managed node group, at zero nodes until the sync Job's pods ask for nodes.

The sync copies 1.56 TB from the Hub into S3 once; on the system nodes (m7i.2xlarge, 3.125 Gbps baseline) it takes
about 40 minutes. This managed node group holds network-optimized instances (catalog.transfer.SYNC_POOLS:
c6in.8xlarge, 50 Gbps, 32 vCPUs so that traffic through the internet gateway keeps half of it) at zero nodes.

EKS has no cluster autoscaler of its own, so this component installs one (kubernetes/autoscaler's chart, the one
built for the cluster's Kubernetes minor: catalog.charts.CLUSTER_AUTOSCALER_CHARTS) that manages this group's Auto
Scaling group alone (``autoscalingGroups``: no auto-discovery, so it never touches the system or GPU groups): it adds nodes when the Job's pods are pending and removes them once the pods are gone (the
Job ends when the completion marker is written), so the group costs the copy's minutes. Its identity (EKS Pod
Identity) may change the desired capacity of this group's ASG only (``aws:ResourceTag/eks:nodegroup-name``).

As terraform-aws-modules/eks builds a managed node group for the Cluster Autoscaler (modules/eks-managed-node-group):
the desired size is the autoscaler's (``ignore_changes`` on it, the module's ``lifecycle``), and the group's
labels and taints are also ASG tags under ``k8s.io/cluster-autoscaler/node-template/`` so that a scale-up from
zero knows them (cluster-autoscaler/cloudprovider/aws/README.md, "Auto-Discovery Setup": scaling from 0).
"""

import json
from typing import Optional, Sequence, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..catalog.charts import CLUSTER_AUTOSCALER_CHARTS
from ..catalog.eks_versions import minor
from ..catalog.transfer import SYNC_POOL_LABEL, SYNC_POOL_TAINT_KEY, SyncPool
from ..serving.contract import SyncNodes
from . import policies
from .cluster import SYSTEM_POOL_LABEL

POOL_NAME = "sync"
"""Value of the sync pool's label (and the node group's name suffix)."""

AUTOSCALER_REPOSITORY = "https://kubernetes.github.io/autoscaler"
AUTOSCALER_NAMESPACE = "kube-system"
AUTOSCALER_SERVICE_ACCOUNT = "k3-sync-autoscaler"
"""The autoscaler's service account (``rbac.serviceAccount.name``): the identity its IAM role is bound to."""
AUTOSCALER_RESOURCES = {"requests": {"cpu": "100m", "memory": "300Mi"}, "limits": {"memory": "300Mi"}}
"""The chart's commented example (values.yaml ``resources``): its default sets none."""
SCALE_DOWN_AFTER = "2m"
"""``scale-down-unneeded-time`` and ``scale-down-delay-after-add``: a node without sync pods goes after two minutes
(the autoscaler's defaults are ten each); nothing else runs there."""


def node_template_tags(pool_label: str, taint_key: str) -> dict[str, str]:
    """The ASG tags that tell the autoscaler a zero-node group's labels and taints (its AWS README)."""
    return {f"k8s.io/cluster-autoscaler/node-template/label/{SYNC_POOL_LABEL}": pool_label,
            f"k8s.io/cluster-autoscaler/node-template/taint/{taint_key}": "true:NoSchedule"}


def autoscaler_policy(cluster_name: str, node_group_name: str) -> policies.Document:
    """What the autoscaler needs (its AWS README's minimal policy): describe everything, change only the ASG whose
    ``eks:cluster-name`` and ``eks:nodegroup-name`` tags are this cluster's and node group's (EKS tags a managed
    node group's ASG with both; a node group's name is unique in its cluster only)."""
    return {
        "Version": policies.VERSION,
        "Statement": [
            {"Effect": "Allow", "Resource": "*", "Action": [
                "autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
                "autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeScalingActivities",
                "autoscaling:DescribeTags", "ec2:DescribeImages", "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplateVersions", "ec2:GetInstanceTypesFromInstanceRequirements",
                "eks:DescribeNodegroup"]},
            {"Effect": "Allow", "Resource": "*",
             "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
             "Condition": {"StringEquals": {"aws:ResourceTag/eks:cluster-name": cluster_name,
                                            "aws:ResourceTag/eks:nodegroup-name": node_group_name}}},
        ],
    }


class EksSyncNodeGroupArgs(TypedDict):
    """Arguments of EksSyncNodeGroup."""

    cluster_name: pulumi.Input[str]
    """Name of the EKS cluster."""
    node_role_arn: pulumi.Input[str]
    """IAM role of the nodes (EksCluster.node_role_arn)."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """The cluster's private subnets (its NAT gateway reaches the Hub; the S3 gateway endpoint the bucket)."""
    region: str
    """Region of the cluster (the autoscaler's ``awsRegion``)."""
    kubernetes_version: str
    """The cluster's Kubernetes version: the autoscaler's chart is the one built for its minor."""
    pool: SyncPool
    """The catalog's sync pool: instance type and most nodes."""


class EksSyncNodeGroup(pulumi.ComponentResource):
    """A managed node group of network-optimized instances at zero nodes between syncs, and the autoscaler that
    scales it (and nothing else)."""

    node_group: aws.eks.NodeGroup
    """The managed node group."""
    sync_nodes: SyncNodes
    """What the sync Job needs to land on the group."""

    def __init__(self, name: str, args: EksSyncNodeGroupArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:aws:EksSyncNodeGroup", name, None, opts)
        pool = args["pool"]
        autoscaler_chart = CLUSTER_AUTOSCALER_CHARTS.get(minor(args["kubernetes_version"]))
        if autoscaler_chart is None:
            raise pulumi.InputPropertyError("kubernetes_version", f"{args['kubernetes_version']}: k3infra pins the "
                                            "Cluster Autoscaler chart for Kubernetes "
                                            f"{', '.join(CLUSTER_AUTOSCALER_CHARTS)} only")
        child = pulumi.ResourceOptions(parent=self)
        self.node_group = aws.eks.NodeGroup(
            f"{name}-pool",
            cluster_name=args["cluster_name"],
            node_role_arn=args["node_role_arn"],
            subnet_ids=args["subnet_ids"],
            instance_types=[pool.node.sku],
            ami_type="AL2023_x86_64_STANDARD",
            capacity_type="ON_DEMAND",
            disk_size=100,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(desired_size=0, min_size=0, max_size=pool.nodes),
            labels={SYNC_POOL_LABEL: POOL_NAME},
            taints=[aws.eks.NodeGroupTaintArgs(key=SYNC_POOL_TAINT_KEY, value="true", effect="NO_SCHEDULE")],
            # The autoscaler owns the desired size: a second `pulumi up` mid-copy must not set it back to zero.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["scalingConfig.desiredSize"]))
        asg = self.node_group.resources.apply(lambda rs: (rs[0].autoscaling_groups or [])[0].name or "")
        tags = [aws.autoscaling.Tag(
            f"{name}-template-{i}", autoscaling_group_name=asg,
            tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False), opts=child)
            for i, (key, value) in enumerate(sorted(node_template_tags(POOL_NAME, SYNC_POOL_TAINT_KEY).items()))]

        role = aws.iam.Role(f"{name}-autoscaler-role", assume_role_policy=json.dumps(policies.pod_identity_trust()),
                            opts=child)
        policy = aws.iam.RolePolicy(f"{name}-autoscaler-policy", role=role.id,
                                    policy=pulumi.Output.all(args["cluster_name"], self.node_group.node_group_name)
                                    .apply(lambda v: json.dumps(autoscaler_policy(v[0], v[1]))), opts=child)
        identity = aws.eks.PodIdentityAssociation(
            f"{name}-autoscaler-identity", cluster_name=args["cluster_name"], namespace=AUTOSCALER_NAMESPACE,
            service_account=AUTOSCALER_SERVICE_ACCOUNT, role_arn=role.arn,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]))
        chart, version = autoscaler_chart
        self.autoscaler = k8s.helm.v4.Chart(
            f"{name}-autoscaler", chart=chart, version=version, namespace=AUTOSCALER_NAMESPACE,
            name=f"{name}-autoscaler",
            repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=AUTOSCALER_REPOSITORY),
            values={
                "cloudProvider": "aws",
                "awsRegion": args["region"],
                "autoscalingGroups": [{"name": asg, "minSize": 0, "maxSize": pool.nodes}],
                "rbac": {"serviceAccount": {"name": AUTOSCALER_SERVICE_ACCOUNT}},
                "nodeSelector": {SYSTEM_POOL_LABEL: "system"},
                "resources": AUTOSCALER_RESOURCES,
                "extraArgs": {"scale-down-unneeded-time": SCALE_DOWN_AFTER,
                              "scale-down-delay-after-add": SCALE_DOWN_AFTER,
                              # The sync pods' ConfigMap volume is no reason to keep a node.
                              "skip-nodes-with-local-storage": "false"},
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[identity, *tags]))
        self.sync_nodes = SyncNodes(node_selector={SYNC_POOL_LABEL: POOL_NAME},
                                    tolerations=[{"key": SYNC_POOL_TAINT_KEY, "operator": "Exists",
                                                  "effect": "NoSchedule"}])
        self.resources: list[pulumi.Resource] = [self.node_group, self.autoscaler]
        """What must exist before the sync Job's pods can get a node: the group and its autoscaler."""
        self.register_outputs({"node_group_name": self.node_group.node_group_name})


__all__ = ["EksSyncNodeGroup", "EksSyncNodeGroupArgs", "POOL_NAME", "autoscaler_policy", "node_template_tags"]

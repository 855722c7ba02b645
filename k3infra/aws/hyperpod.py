"""SageMaker HyperPod on an EKS orchestrator: the cluster (HyperPodCluster) and the model on it (HyperPodEndpoint).

002 §3.1: an EKS-orchestrated HyperPod cluster with an ``ml.p6-b300.48xlarge`` instance group on a
Flexible Training Plan, and the model served by the HyperPod Inference Operator from an
``InferenceEndpointConfig``. The training plan has no CloudFormation or Pulumi resource: buy it first
(docs/aws.md) and pass its ARN.
"""

import hashlib
import json
from typing import Any, Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_aws_native as aws_native
import pulumi_kubernetes as k8s

from . import policies
from .iam import granted_arn
from ..catalog import ACCELERATORS
from ..catalog.eks_addons import (CERT_MANAGER, FSX_CSI, HYPERPOD_ADDONS, HYPERPOD_INFERENCE, METRICS_SERVER,
                                  MOUNTPOINT)
from ..serving.options import parent_depends_on
from ..serving.pods import node_requests
from ..component_args import reject_unknown
from .hyperpod_chart import DEFAULT_DEPENDENCIES_CHART
from .hyperpod_endpoint_config import InferenceEndpointConfigResource, inference_endpoint_config
from .hyperpod_prepull import image_pre_pull
from .hyperpod_weights import NodeWeights, node_weights_identity
from ..catalog.hyperpod import CUSTOM_SERVICE_ACCOUNTS

INFERENCE_ROLE_PREFIX = "SageMakerHyperPodInference"
"""With ``isAddOn`` the inference chart fails unless the execution role's name starts with this
(aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/charts/inference-operator/templates/
_validateRequiredValues.tpl``: "executionRoleArn must have a role name with prefix 'SageMakerHyperPodInference'";
the managed policy's restrictions key on it)."""
IAM_ROLE_NAME_MAX = 64

OPERATOR_DEFAULT_DEPLOY_SECONDS = 3600
"""The InferenceEndpointConfig's default ``maxDeployTimeInSeconds`` (its CRD: "Defaults to 1 hour"): the
operator's own floor for a deployment, which for 1.56 TB includes the S3 prefetch. k3infra never asks for less."""

CONNECTIVITY_MIN_INSTANCES = 2
"""InstanceConnectivity is HyperPod's cluster-level deep health check (NCCL tests across instances); with one
instance there is nothing to connect, so only InstanceStress runs (SageMaker developer guide,
sagemaker-hyperpod-eks-resiliency-deep-health-checks: instance-level vs cluster-level checks)."""

INFERENCE_ADDON = HYPERPOD_INFERENCE
"""The HyperPod Inference Operator as an EKS add-on (docs/catalog-research.md §3.4)."""
INFERENCE_ADDON_VERSION = HYPERPOD_ADDONS[HYPERPOD_INFERENCE]
"""The inference add-on's version as upstream's migration script installs it (catalog.eks_addons.HYPERPOD_ADDONS,
from aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/charts/inference-operator/migration/helm_to_addon.sh``
at ``DEPENDENCIES_CHART_COMMIT``)."""
INFERENCE_ADDON_ALB_CONTROLLER = {"v1.0.0-eksbuild.1": "v2.13.2", "v1.3.0-eksbuild.1": "v2.13.2"}
"""The AWS Load Balancer Controller each inference add-on version runs: v1.0.0 came with the operator's add-on
support (inference-operator chart 2.0.0, commit 51b8dd2, 2026-02-16), and every chart since, through 2.2.2 at
``DEPENDENCIES_CHART_COMMIT`` (operator v3.2, add-on v1.3.0-eksbuild.1 by the inference release notes), depends on
aws-load-balancer-controller chart 1.13.2 (aws/eks-charts: app v2.13.2).
The ALB role gets the policy of this version (vendored, ``policies.load_balancer_controller``): a new add-on pin
needs its row here and, when its controller moves, that controller's policy in ``vendor/``."""
ALB_CONTROLLER_VERSION = INFERENCE_ADDON_ALB_CONTROLLER[INFERENCE_ADDON_VERSION]
"""The AWS Load Balancer Controller the pinned inference add-on runs."""
INFERENCE_NAMESPACE = "hyperpod-inference-system"
OPERATOR_SERVICE_ACCOUNT = "hyperpod-inference-controller-manager"
ALB_SERVICE_ACCOUNT = "aws-load-balancer-controller"
KEDA_SERVICE_ACCOUNT = "keda-operator"

#: EKS add-ons the inference add-on refuses to install without (SageMaker developer guide,
#: model-deployment-setup, "Install the dependency EKS Add-Ons"), at the versions helm_to_addon.sh installs them
#: (catalog.eks_addons.HYPERPOD_ADDONS); Mountpoint comes with the weight bucket, pinned to
#: ``MOUNTPOINT_ADDON_VERSION``.
INFERENCE_DEPENDENCY_ADDONS = {name: HYPERPOD_ADDONS[name] for name in (CERT_MANAGER, METRICS_SERVER, FSX_CSI)}
MOUNTPOINT_ADDON_VERSION = HYPERPOD_ADDONS[MOUNTPOINT]
"""The Mountpoint for Amazon S3 CSI driver add-on as helm_to_addon.sh installs it beside the inference add-on: v1, whose
driver reads IRSA and not EKS Pod Identity (catalog.eks_addons.MOUNTPOINT_CAPABILITIES), so the bucket gives its
driver an IRSA role, as the script does."""


class HyperPodClusterArgs(TypedDict):
    """Arguments of HyperPodCluster."""

    cluster_name: str
    """Name of the HyperPod cluster."""
    region: str
    """Region (the aws-native provider is configured with it)."""
    eks_cluster_arn: pulumi.Input[str]
    """ARN of the orchestrating EKS cluster (authentication mode API or API_AND_CONFIG_MAP)."""
    vpc_id: pulumi.Input[str]
    """The VPC of the subnets (the instance role may manage interfaces in it)."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """Subnets of the instances: in the training plan's availability zone."""
    security_group_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """Security groups of the instances; they must allow all traffic between members (EFA)."""
    instance_type: str
    """SageMaker instance type, e.g. ml.p6-b300.48xlarge."""
    instance_count: int
    """Instances in the group (one per model replica)."""
    training_plan_arn: NotRequired[Optional[str]]
    """Flexible Training Plan that holds the instances. Default: none (on-demand, where quota allows)."""
    dependencies_chart: NotRequired[str]
    """Local path of the HyperPod dependencies Helm chart (a checkout of aws/sagemaker-hyperpod-cli at
    ``DEPENDENCIES_CHART_COMMIT``), installed before the cluster is created.
    Default: sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart (relative to where Pulumi runs)."""
    deep_health_checks: NotRequired[bool]
    """Run deep health checks on every new or replacement instance: InstanceStress, plus InstanceConnectivity when
    the group has at least two instances. They keep each instance ``Unschedulable`` for hours
    (catalog.hyperpod.DEEP_HEALTH_CHECK_MINUTES), and with no spare instance the group serves nothing meanwhile.
    Default: false (SageMaker's resiliency guide: without spares, run them at creation only or not at all)."""
    automatic_node_recovery: NotRequired[bool]
    """Replace or reboot faulty instances automatically. Default: true."""


class HyperPodCluster(pulumi.ComponentResource):
    """A SageMaker HyperPod cluster orchestrated by an EKS cluster (002 §3.1 prerequisites 1 and 2).

    Installs the HyperPod dependencies chart (required before cluster creation when the cluster is
    created through the API), creates the instances' execution role (the instance, CNI, image-pull and node
    policies, plus the ENI permissions the reference role adds, scoped to the cluster's VPC, subnets and
    security groups) and the ``AWS::SageMaker::Cluster`` with one instance group on the training plan, automatic
    node recovery and, when asked, the deep health checks that fit the group's size. No taints on the GPU instances: the
    inference operator's pods carry no tolerations.

    The Kubernetes provider comes from the options (``providers={"kubernetes": cluster.provider}``).
    """

    cluster_arn: pulumi.Output[str]
    """ARN of the HyperPod cluster."""
    execution_role_arn: pulumi.Output[str]
    """IAM role of the instances (an output that depends on the role's policies)."""

    def __init__(self, name: str, args: HyperPodClusterArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:HyperPodCluster", name, None, opts)
        reject_unknown(args, HyperPodClusterArgs)
        if not args["instance_type"].startswith("ml."):
            raise pulumi.InputPropertyError("instance_type", "HyperPod instance groups take SageMaker instance types (ml.*)")
        count = int(args["instance_count"])
        if count < 1:
            raise pulumi.InputPropertyError("instance_count", "an instance group needs at least one instance")
        child = pulumi.ResourceOptions(parent=self)

        # The chart's Chart.yaml declares remote dependencies (cert-manager from oci://quay.io/jetstack/charts,
        # nvidia-device-plugin 0.16.1, aws-efa-k8s-device-plugin 0.5.20) that its charts/ does not vendor, and it has
        # no Chart.lock: Helm refuses to install it until they are fetched ("found in Chart.yaml, but missing in
        # charts/ directory"; upstream's readme runs `helm dependencies update` first). pulumi-kubernetes'
        # helm/tool.go fetches them only when they are missing, so later runs reuse the checkout's charts/.
        # The health-monitoring agent's image is regional. Without a region its chart looks one up from the nodes
        # (`lookup`, which renders empty without a cluster connection, as Pulumi renders) and falls back to us-east-1
        # (charts/health-monitoring-agent/templates/_helpers.tpl); the chart's readme sets it explicitly.
        chart = k8s.helm.v4.Chart(
            f"{name}-dependencies", chart=args.get("dependencies_chart") or DEFAULT_DEPENDENCIES_CHART,
            dependency_update=True, namespace="kube-system",
            values={"health-monitoring-agent": {"region": args["region"]}},
            opts=pulumi.ResourceOptions(parent=self, depends_on=parent_depends_on(opts)))

        role = aws.iam.Role(f"{name}-execution-role",
                            assume_role_policy=json.dumps(policies.service_trust("sagemaker.amazonaws.com")), opts=child)
        # The HyperPod execution role for EKS: the instance policy, plus what an EKS node does (VPC CNI,
        # image pulls, Pod Identity) (SageMaker developer guide, IAM role for SageMaker HyperPod).
        attachments: list[pulumi.Resource] = [
            aws.iam.RolePolicyAttachment(f"{name}-execution-{short}", role=role.name,
                                         policy_arn=policies.MANAGED + managed, opts=child)
            for short, managed in (("instance", "AmazonSageMakerClusterInstanceRolePolicy"),
                                   ("cni", "AmazonEKS_CNI_Policy"),
                                   ("ecr", "AmazonEC2ContainerRegistryReadOnly"),
                                   ("worker", "AmazonEKSWorkerNodePolicy"))
        ]

        eni_document = pulumi.Output.all(args["eks_cluster_arn"], args["vpc_id"], args["subnet_ids"],
                                         args["security_group_ids"]).apply(lambda v: json.dumps(_eni_policy(*v)))
        eni = aws.iam.RolePolicy(f"{name}-execution-eni", role=role.id, policy=eni_document, opts=child)
        attachments.append(eni)

        provider = aws_native.Provider(f"{name}-aws-native", region=args["region"], opts=child)
        checks = deep_health_checks(count) if args.get("deep_health_checks", False) else None
        cluster = aws_native.sagemaker.Cluster(
            f"{name}-cluster",
            cluster_name=args["cluster_name"],
            orchestrator=aws_native.sagemaker.ClusterOrchestratorArgs(
                eks=aws_native.sagemaker.ClusterOrchestratorEksConfigArgs(cluster_arn=args["eks_cluster_arn"])),
            vpc_config=aws_native.sagemaker.ClusterVpcConfigArgs(
                security_group_ids=args["security_group_ids"], subnets=args["subnet_ids"]),
            node_recovery=(aws_native.sagemaker.ClusterNodeRecovery.AUTOMATIC
                           if args.get("automatic_node_recovery", True) else aws_native.sagemaker.ClusterNodeRecovery.NONE),
            instance_groups=[aws_native.sagemaker.ClusterInstanceGroupArgs(
                instance_group_name="gpu",
                instance_type=args["instance_type"],
                instance_count=count,
                execution_role=role.arn,
                training_plan_arn=args.get("training_plan_arn"),
                on_start_deep_health_checks=checks,
                kubernetes_config=aws_native.sagemaker.ClusterKubernetesConfigArgs(labels={"k3infra.io/pool": name}),
            )],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[chart, *attachments]),
        )
        self.cluster = cluster
        """The ``AWS::SageMaker::Cluster`` resource."""
        self.cluster_arn = cluster.cluster_arn
        self.execution_role_arn = granted_arn(role, attachments)
        self.register_outputs({"cluster_arn": self.cluster_arn, "execution_role_arn": self.execution_role_arn})


HEALTH_MONITORING_AGENT_REGIONS = frozenset((
    "us-east-1", "us-west-2", "us-east-2", "us-west-1", "eu-central-1", "eu-north-1", "eu-west-1", "eu-west-2",
    "eu-south-2", "ap-northeast-1", "ap-south-1", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3",
    "ap-southeast-4", "ca-central-1", "sa-east-1"))
"""Regions whose ECR holds the health-monitoring agent's image: the chart's ``$regionAccountMap``
(``charts/health-monitoring-agent/templates/_helpers.tpl`` at ``DEPENDENCIES_CHART_COMMIT``). Elsewhere the chart
pulls the us-east-1 image."""


def health_agent_region_warning(region: str) -> str | None:
    """What the plan says when the agent's image cannot come from ``region``."""
    if region in HEALTH_MONITORING_AGENT_REGIONS:
        return None
    return (f"the HyperPod health-monitoring agent has no image in {region} (its chart maps "
            f"{len(HEALTH_MONITORING_AGENT_REGIONS)} regions): the chart pulls it from us-east-1, across regions")


def _eni_policy(eks_cluster_arn: str, vpc_id: str, subnet_ids: Sequence[str],
                security_group_ids: Sequence[str]) -> dict[str, Any]:
    partition, region, account = policies.arn_parts(eks_cluster_arn)
    return policies.hyperpod_instance_eni(partition=partition, region=region, account=account, vpc_id=vpc_id,
                                          subnet_ids=list(subnet_ids), security_group_ids=list(security_group_ids))


def deep_health_checks(instances: int) -> list[aws_native.sagemaker.ClusterDeepHealthCheckType]:
    """The on-start deep health checks an instance group of ``instances`` can pass: InstanceStress always,
    InstanceConnectivity (across instances) from ``CONNECTIVITY_MIN_INSTANCES`` on."""
    checks = [aws_native.sagemaker.ClusterDeepHealthCheckType.INSTANCE_STRESS]
    if instances >= CONNECTIVITY_MIN_INSTANCES:
        checks.append(aws_native.sagemaker.ClusterDeepHealthCheckType.INSTANCE_CONNECTIVITY)
    return checks


def inference_role_name(cluster_name: str, region: str) -> str:
    """``SageMakerHyperPodInference-<cluster>-<region>``: the prefix the inference add-on requires, unique per
    cluster and region (IAM is global), at most 64 characters (a longer name keeps a digest of the whole)."""
    name = f"{INFERENCE_ROLE_PREFIX}-{cluster_name}-{region}"
    if len(name) <= IAM_ROLE_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:IAM_ROLE_NAME_MAX - len(digest) - 1]}-{digest}"


def inference_addon_configuration(*, execution_role_arn: str, tls_bucket: str, hyperpod_cluster_arn: str,
                                  alb_role_arn: str, keda_role_arn: str,
                                  custom_service_accounts: bool = False) -> dict[str, Any]:
    """The inference add-on's ``configurationValues`` as upstream's migration script writes them
    (aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/charts/inference-operator/migration/helm_to_addon.sh``,
    ``ADDON_CONFIG``): the ALB controller and KEDA turned on explicitly, KEDA with IRSA. The script's
    ``jumpstartGatedModelDownloadRoleArn`` is left out: it serves gated JumpStart models, and k3infra serves from S3.
    ``custom_service_accounts``: an IEC may name its pod's ServiceAccount (catalog.hyperpod CUSTOM_SERVICE_ACCOUNTS),
    which the weights on the node's NVMe need (k3infra.aws.hyperpod_weights)."""
    return {
        **({CUSTOM_SERVICE_ACCOUNTS: True} if custom_service_accounts else {}),
        "executionRoleArn": execution_role_arn,
        "tlsCertificateS3Bucket": tls_bucket,
        "hyperpodClusterArn": hyperpod_cluster_arn,
        "alb": {"enabled": True, "serviceAccount": {"create": True, "roleArn": alb_role_arn}},
        "keda": {"enabled": True, "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda_role_arn}}}},
    }


class InferenceEndpointArgs(TypedDict):
    """What the endpoint serves (the command line is built by k3infra.serving.engine)."""

    name: str
    """Name of the InferenceEndpointConfig object."""
    namespace: str
    """Namespace of the endpoint (created here)."""
    model_name: str
    """Served model name (the operator's ``modelName``)."""
    instance_type: str
    """SageMaker instance type of one replica."""
    replicas: int
    """Replicas; each runs on one instance."""
    image: str
    """Engine image."""
    args: Sequence[str]
    """Engine arguments (``vllm_command(...).args``)."""
    env: Mapping[str, str]
    """Engine environment (``vllm_command(...).env``)."""
    port: int
    """Engine port."""
    health_path: str
    """Engine health path (load balancer check and probes)."""
    metrics_path: str
    """Where the engine serves Prometheus metrics, on ``port`` (the operator's ``metrics.modelMetrics``)."""
    gpus: int
    """GPUs per replica."""
    cpu: NotRequired[str]
    """CPU the worker requests and is limited to. Default: 85 % of the instance type's vCPUs in the catalog
    (``serving.pods.node_requests``); required for an instance type outside the catalog."""
    memory: NotRequired[str]
    """Memory the worker requests and is limited to; it must hold the model when ``prefetch`` stages it in memory.
    Default: 85 % of the instance type's host memory in the catalog; required for an instance type outside it."""
    model_location: str
    """The model's prefix inside the bucket (PREFIX/<Hugging Face id>)."""
    prefetch: bool
    """Have the operator copy the model from S3 to node memory before the engine starts."""
    max_deploy_seconds: int
    """The operator's deployment deadline and Pulumi's wait (the sizing's await budget); at least
    ``OPERATOR_DEFAULT_DEPLOY_SECONDS``."""
    startup_budget_seconds: int
    """What the start-up probe must cover (the sizing's probe budget)."""
    node_weights: NotRequired[Optional[NodeWeights]]
    """Keep the weights on the instances' local NVMe, filled from S3 by the pod's init container (issue 40,
    k3infra.aws.hyperpod_weights). Default: none (the operator's S3 source)."""
    autoscaling: NotRequired[Optional[Mapping[str, Any]]]
    """The CRD's ``autoScalingSpec`` (k3infra.serving.autoscaling.hyperpod_autoscaling_spec). Default: none
    (``replicas`` replicas, always)."""
    create_namespace: NotRequired[bool]
    """Create the namespace. Default: true (false when the caller made it, e.g. for the weight sync)."""
    capacity_pending: NotRequired[Optional[str]]
    """Why the instances cannot serve yet (e.g. the training plan starts later): the InferenceEndpointConfig is then
    not created, because the operator's ``maxDeployTimeInSeconds`` runs from its creation (the CRD: "Maximum allowed
    time in seconds for the deployment to complete before timing out") and would end in DeploymentFailed before
    the capacity starts; the next ``pulumi up`` after the start creates it and waits for it. Default: none (created
    now, and ``pulumi up`` waits until a replica is available)."""


class HyperPodEndpointArgs(TypedDict):
    """Arguments of HyperPodEndpoint."""

    region: str
    """Region of the cluster and the bucket."""
    eks_cluster_name: pulumi.Input[str]
    """Name of the orchestrating EKS cluster (the add-ons go there)."""
    hyperpod_cluster_arn: pulumi.Input[str]
    """ARN of the HyperPod cluster whose instances serve."""
    oidc_provider_arn: pulumi.Input[str]
    """The EKS cluster's IAM OIDC provider (the operator, its ALB and KEDA controllers use IRSA)."""
    oidc_issuer: pulumi.Input[str]
    """The EKS cluster's OIDC issuer URL."""
    bucket_name: pulumi.Input[str]
    """The weight bucket (the operator mounts it through the Mountpoint CSI driver)."""
    endpoint: InferenceEndpointArgs
    """What to serve."""


class HyperPodEndpoint(pulumi.ComponentResource):
    """The model served by the HyperPod Inference Operator (002 §3.1 deployment manifest).

    Installs the operator as the EKS add-on ``amazon-sagemaker-hyperpod-inference`` with its dependency
    add-ons (cert-manager, metrics-server, FSx CSI; Mountpoint comes with S3WeightBucket), its execution
    role (named ``SageMakerHyperPodInference-...`` as the add-on requires; IRSA for
    ``hyperpod-inference-controller-manager`` and ``sagemaker.amazonaws.com``, with
    ``AmazonSageMakerHyperPodInferenceAccess``), the ALB controller role (upstream's IAM policy at the pinned
    controller version) and KEDA role (IRSA for ``keda-operator`` and, as upstream's migration script has it,
    ``sagemaker.amazonaws.com``) and a private TLS certificate bucket; with ``node_weights`` the pod's own
    ServiceAccount (an IRSA role reading the model's prefix, k3infra.aws.hyperpod_weights) and the add-on's
    ``enableCustomServiceAccounts``; the image's pre-pull on its instances (k3infra.aws.hyperpod_prepull); then the
    ``InferenceEndpointConfig``, which Pulumi waits on until a replica is available (not created while
    ``capacity_pending`` says why the instances cannot serve yet). Give the component ``depends_on`` the system node
    group and the Mountpoint add-on.
    """

    endpoint: pulumi.Output[str]
    """HTTPS URL of the operator's load balancer (empty until the operator reports it)."""
    operator_role_arn: pulumi.Output[str]
    """The inference operator's execution role."""
    tls_bucket_name: pulumi.Output[str]
    """Bucket of the operator's TLS certificates."""

    def __init__(self, name: str, args: HyperPodEndpointArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:HyperPodEndpoint", name, None, opts)
        reject_unknown(args, HyperPodEndpointArgs)
        ep = args["endpoint"]
        if int(ep["replicas"]) < 1:
            raise pulumi.InputPropertyError("endpoint.replicas", "an endpoint needs at least one replica")
        if int(ep["max_deploy_seconds"]) < OPERATOR_DEFAULT_DEPLOY_SECONDS:
            raise pulumi.InputPropertyError("endpoint.max_deploy_seconds", f"{ep['max_deploy_seconds']} s is shorter "
                                            f"than the operator's default of {OPERATOR_DEFAULT_DEPLOY_SECONDS} s")
        cpu, memory = worker_resources(ep)
        child = pulumi.ResourceOptions(parent=self)
        after = parent_depends_on(opts)
        oidc_arn, issuer = args["oidc_provider_arn"], args["oidc_issuer"]

        def irsa_role(role: str, account: str, *services: str,
                      role_name: Optional[pulumi.Input[str]] = None) -> aws.iam.Role:
            trust = pulumi.Output.all(oidc_arn, issuer).apply(lambda v: json.dumps(
                policies.irsa_trust(v[0], v[1], INFERENCE_NAMESPACE, account, also_services=services)))
            return aws.iam.Role(f"{name}-{role}", name=role_name, assume_role_policy=trust, opts=child)

        region = args["region"]
        operator = irsa_role("operator-role", OPERATOR_SERVICE_ACCOUNT, "sagemaker.amazonaws.com",
                             role_name=pulumi.Output.from_input(args["eks_cluster_name"]).apply(
                                 lambda cluster: inference_role_name(cluster, region)))
        operator_policy = aws.iam.RolePolicyAttachment(
            f"{name}-operator-access", role=operator.name,
            policy_arn=policies.MANAGED + "AmazonSageMakerHyperPodInferenceAccess", opts=child)
        tls = aws.s3.Bucket(f"{name}-tls", bucket_prefix="hyperpod-tls-", force_destroy=True, opts=child)
        aws.s3.BucketPublicAccessBlock(f"{name}-tls-public-access-block", bucket=tls.id, block_public_acls=True,
                                       block_public_policy=True, ignore_public_acls=True,
                                       restrict_public_buckets=True, opts=child)
        tls_policy = aws.iam.RolePolicy(f"{name}-operator-tls", role=operator.id,
                                        policy=tls.arn.apply(lambda arn: json.dumps(policies.tls_bucket_access(arn))),
                                        opts=child)
        alb = irsa_role("alb-role", ALB_SERVICE_ACCOUNT)
        alb_policy = aws.iam.RolePolicy(f"{name}-alb", role=alb.id,
                                        policy=json.dumps(policies.load_balancer_controller(ALB_CONTROLLER_VERSION),
                                                          separators=(",", ":")),
                                        opts=child)
        keda = irsa_role("keda-role", KEDA_SERVICE_ACCOUNT, "sagemaker.amazonaws.com")
        keda_policy = aws.iam.RolePolicy(f"{name}-keda", role=keda.id, policy=json.dumps(policies.keda_operator()),
                                         opts=child)

        dependencies = [
            aws.eks.Addon(f"{name}-{addon}", cluster_name=args["eks_cluster_name"], addon_name=addon,
                          addon_version=version, resolve_conflicts_on_create="OVERWRITE",
                          opts=pulumi.ResourceOptions(parent=self, depends_on=after))
            for addon, version in INFERENCE_DEPENDENCY_ADDONS.items()
        ]
        configuration = pulumi.Output.all(operator.arn, tls.bucket, args["hyperpod_cluster_arn"], alb.arn, keda.arn).apply(
            lambda v: json.dumps(inference_addon_configuration(
                execution_role_arn=v[0], tls_bucket=v[1], hyperpod_cluster_arn=v[2], alb_role_arn=v[3],
                keda_role_arn=v[4], custom_service_accounts=bool(ep.get("node_weights"))), sort_keys=True))
        operator_addon = aws.eks.Addon(
            f"{name}-inference-operator", cluster_name=args["eks_cluster_name"], addon_name=INFERENCE_ADDON,
            addon_version=INFERENCE_ADDON_VERSION, configuration_values=configuration,
            resolve_conflicts_on_create="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*dependencies, *after, operator_policy, tls_policy,
                                                                  alb_policy, keda_policy]))

        in_namespace = [*after, *([k8s.core.v1.Namespace(f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(
            name=ep["namespace"]), opts=child)] if ep.get("create_namespace", True) else [])]
        image_pre_pull(name, namespace=ep["namespace"], image=ep["image"], instance_type=ep["instance_type"],
                       gpus=int(ep["gpus"]), instances=int(ep["replicas"]), parent=self, depends_on=in_namespace)
        weights = ep.get("node_weights")
        account = (node_weights_identity(name, weights, namespace=ep["namespace"], oidc_provider_arn=oidc_arn,
                                         oidc_issuer=issuer, parent=self, depends_on=in_namespace)
                   if weights else None)
        config = None
        if not ep.get("capacity_pending"):
            config = self._endpoint_config(name, args, cpu, memory, depends_on=[
                operator_addon, *in_namespace, *([account] if account is not None else [])])
        self.inference_endpoint_config = config
        """The InferenceEndpointConfig custom resource (None while the capacity is pending)."""
        self.endpoint = config.status.apply(_alb_url) if config is not None else pulumi.Output.from_input("")
        self.operator_role_arn = operator.arn
        self.tls_bucket_name = tls.bucket
        self.register_outputs({"endpoint": self.endpoint, "operator_role_arn": self.operator_role_arn,
                               "tls_bucket_name": self.tls_bucket_name})

    def _endpoint_config(self, name: str, args: HyperPodEndpointArgs, cpu: str, memory: str,
                         depends_on: Sequence[pulumi.Resource]) -> "InferenceEndpointConfigResource":
        """The InferenceEndpointConfig, awaited until its replicas are available for as long as it may deploy."""
        ep = args["endpoint"]
        wait = int(ep["max_deploy_seconds"])
        weights = ep.get("node_weights")
        body = pulumi.Output.all(args["bucket_name"], weights["repo"] if weights else "").apply(lambda v: inference_endpoint_config(
            name=ep["name"], namespace=ep["namespace"], model_name=ep["model_name"],
            instance_type=ep["instance_type"], replicas=int(ep["replicas"]), image=ep["image"], args=ep["args"],
            env=ep["env"], port=int(ep["port"]), health_path=ep["health_path"], metrics_path=ep["metrics_path"],
            gpus=int(ep["gpus"]), cpu=cpu, memory=memory, bucket_name=v[0], region=args["region"],
            model_location=ep["model_location"], prefetch=ep["prefetch"],
            max_deploy_seconds=wait, startup_budget_seconds=int(ep["startup_budget_seconds"]),
            autoscaling=ep.get("autoscaling"), node_weights=weights, node_repo=v[1]))
        # Under autoscaling the replica count moves: wait for the operator to report available replicas at all
        # (an equality would hang the next `pulumi up` whenever the scaler has moved off the initial count).
        ready = ("jsonpath={.status.deploymentStatus.status.availableReplicas}" if ep.get("autoscaling") else
                 f"jsonpath={{.status.deploymentStatus.status.availableReplicas}}={int(ep['replicas'])}")
        return InferenceEndpointConfigResource(
            f"{name}-config",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=ep["name"],
                namespace=ep["namespace"],
                annotations={
                    # Custom resources are not awaited by default: wait until the operator's Deployment has
                    # as many available replicas as asked, for as long as the deployment may take.
                    "pulumi.com/waitFor": ready,
                    "pulumi.com/timeoutSeconds": str(wait),
                },
            ),
            spec=body.apply(lambda b: b["spec"]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )


def worker_resources(endpoint: InferenceEndpointArgs) -> tuple[str, str]:
    """The worker's CPU and memory: the endpoint's own, or the catalog's share of its instance type."""
    machine = ACCELERATORS.get(endpoint["instance_type"])
    default_cpu, default_memory = node_requests(machine) if machine is not None else (None, None)
    cpu, memory = endpoint.get("cpu") or default_cpu, endpoint.get("memory") or default_memory
    if cpu is None or memory is None:
        raise pulumi.InputPropertyError("endpoint.cpu", f"{endpoint['instance_type']} is not in k3infra's catalog: "
                                        "give the worker's cpu and memory")
    return cpu, memory


def _alb_url(status: Any) -> str:
    """``https://<load balancer>`` from the operator's status, or empty while it has none."""
    if not isinstance(status, dict):
        return ""
    names = (status.get("tlsCertificate") or {}).get("certificateDomainNames") or []
    return f"https://{names[0]}" if names else ""

"""EKS: KEDA, installed by its chart on the system nodes, scaling the serving workload on the engine's metrics in the
stack's Amazon Managed Service for Prometheus workspace.

- KEDA chart 2.20.2 (catalog.charts.KEDA_CHART) in namespace ``keda``, its pods on the CPU system pool.
- The operator's identity: an IAM role through EKS Pod Identity (the cluster runs the Pod Identity agent, as for
  the weight bucket's roles) allowed only ``aps:QueryMetrics`` on the workspace.
- A TriggerAuthentication with ``podIdentity.provider: aws`` and no role: KEDA signs its AMP queries with SigV4 as
  the operator itself (kedacore/keda v2.20.2 ``pkg/scalers/aws/aws_config_cache.go``: the default credential chain,
  which reads EKS Pod Identity's credentials; ``pkg/scalers/prometheus_scaler.go``: ``awsRegion`` turns SigV4 on).
- The ScaledObject (k3infra.serving.autoscaling) on the Deployment or LeaderWorkerSet.
"""

import json

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from .. import names
from ..catalog.autoscaling import KEDA_API_VERSION
from ..catalog.charts import KEDA_CHART
from ..config import StackConfig
from ..serving import pods
from ..serving.autoscaling import SCALER_NAME, scaled_object, signal_query, workload_target
from ..serving.stack import Serving
from . import policies
from .cluster import SYSTEM_POOL_LABEL, EksCluster

KEDA_NAMESPACE = "keda"
KEDA_SERVICE_ACCOUNT = "keda-operator"
"""The operator's service account in chart 2.20.2 (values.yaml ``serviceAccount.operator.name``)."""
KEDA_REPOSITORY = "https://kedacore.github.io/charts"
TRIGGER_AUTH = f"{names.PREFIX}-keda-aws"


def amp_endpoint(region: str, workspace_id: str) -> str:
    """The workspace's Prometheus-compatible query base (AMP user guide)."""
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace_id}"


def keda(cfg: StackConfig, cluster: EksCluster, serving: Serving, workspace_arn: pulumi.Input[str],
         workspace_id: pulumi.Input[str]) -> list[pulumi.Resource]:
    """KEDA and the ScaledObject of a stack with autoscaling on (nothing otherwise)."""
    a = cfg.autoscaling
    target = workload_target(cfg.workload)
    if a is None or not a.enabled or target is None:
        return []
    parent = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster.system_pool])
    role = aws.iam.Role(f"{names.PREFIX}-keda-role", assume_role_policy=json.dumps(policies.pod_identity_trust()))
    policy = aws.iam.RolePolicy(f"{names.PREFIX}-keda-amp-query", role=role.id,
                                policy=pulumi.Output.from_input(workspace_arn).apply(
                                    lambda arn: json.dumps(policies.amp_query(arn))))
    identity = aws.eks.PodIdentityAssociation(
        f"{names.PREFIX}-keda-identity", cluster_name=cluster.cluster_name, namespace=KEDA_NAMESPACE,
        service_account=KEDA_SERVICE_ACCOUNT, role_arn=role.arn, opts=pulumi.ResourceOptions(depends_on=[policy]))
    ns = k8s.core.v1.Namespace(f"{names.PREFIX}-keda-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(
        name=KEDA_NAMESPACE, labels=pods.labels(names.PREFIX, "autoscaling")), opts=parent)
    chart, version = KEDA_CHART
    system = {SYSTEM_POOL_LABEL: "system"}
    release = k8s.helm.v4.Chart(
        f"{names.PREFIX}-keda", chart=chart, version=version, namespace=KEDA_NAMESPACE, name="keda",
        repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=KEDA_REPOSITORY), values={"nodeSelector": system},
        opts=pulumi.ResourceOptions.merge(parent, pulumi.ResourceOptions(depends_on=[ns, identity])))
    after = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[release, serving.server])
    auth = k8s.apiextensions.CustomResource(
        TRIGGER_AUTH, api_version=KEDA_API_VERSION, kind="TriggerAuthentication",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=TRIGGER_AUTH, namespace=cfg.namespace),
        spec={"podIdentity": {"provider": "aws"}}, opts=after)
    query = signal_query(cfg.engine.name, a.signal, {"namespace": cfg.namespace})
    api_version, kind = target

    def body(v: list[str]) -> dict[str, object]:
        workload, ws = v
        obj = scaled_object(name=SCALER_NAME, namespace=cfg.namespace, target_api_version=api_version,
                            target_kind=kind, target_name=workload, server_address=amp_endpoint(cfg.region, ws),
                            query=query, scaling=a, authentication=TRIGGER_AUTH,
                            extra_metadata={"awsRegion": cfg.region})
        return obj["spec"]  # type: ignore[return-value]

    scaler = k8s.apiextensions.CustomResource(
        SCALER_NAME, api_version=KEDA_API_VERSION, kind="ScaledObject",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=SCALER_NAME, namespace=cfg.namespace),
        spec=pulumi.Output.all(serving.server.workload_name, workspace_id).apply(body),
        opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[release, serving.server, auth])))
    return [role, policy, identity, ns, release, auth, scaler]

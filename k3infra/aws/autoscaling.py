"""EKS: KEDA, installed by its chart on the system nodes, scaling the serving workload on the engine's metrics in the
stack's Amazon Managed Service for Prometheus workspace.

- KEDA's chart and the scaler objects: k3infra.serving.keda.
- The operator's identity: an IAM role through EKS Pod Identity (the cluster runs the Pod Identity agent, as for
  the weight bucket's roles) allowed only ``aps:QueryMetrics`` on the workspace.
- A TriggerAuthentication with ``podIdentity.provider: aws`` and no role: KEDA signs its AMP queries with SigV4 as
  the operator itself (kedacore/keda v2.20.2 ``pkg/scalers/aws/aws_config_cache.go``: the default credential chain,
  which reads EKS Pod Identity's credentials; ``pkg/scalers/prometheus_scaler.go``: ``awsRegion`` turns SigV4 on).
"""

import json

import pulumi
import pulumi_aws as aws

from .. import names
from ..config import StackConfig
from ..serving.autoscaling import workload_target
from ..serving.keda import KEDA_NAMESPACE, KEDA_SERVICE_ACCOUNT, install_keda, scaler_objects
from ..serving.stack import Serving
from . import policies
from .cluster import SYSTEM_POOL_LABEL, EksCluster

TRIGGER_AUTH = f"{names.PREFIX}-keda-aws"


def amp_endpoint(region: str, workspace_id: str) -> str:
    """The workspace's Prometheus-compatible query base (AMP user guide)."""
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace_id}"


def keda(cfg: StackConfig, cluster: EksCluster, serving: Serving, workspace_arn: pulumi.Input[str],
         workspace_id: pulumi.Input[str]) -> list[pulumi.Resource]:
    """KEDA and the ScaledObject of a stack with autoscaling on (nothing otherwise)."""
    a = cfg.autoscaling
    if a is None or not a.enabled or workload_target(cfg.workload) is None:
        return []
    role = aws.iam.Role(f"{names.PREFIX}-keda-role", assume_role_policy=json.dumps(policies.pod_identity_trust()))
    policy = aws.iam.RolePolicy(f"{names.PREFIX}-keda-amp-query", role=role.id,
                                policy=pulumi.Output.from_input(workspace_arn).apply(
                                    lambda arn: json.dumps(policies.amp_query(arn))))
    identity = aws.eks.PodIdentityAssociation(
        f"{names.PREFIX}-keda-identity", cluster_name=cluster.cluster_name, namespace=KEDA_NAMESPACE,
        service_account=KEDA_SERVICE_ACCOUNT, role_arn=role.arn, opts=pulumi.ResourceOptions(depends_on=[policy]))
    installed = install_keda({SYSTEM_POOL_LABEL: "system"}, pulumi.ResourceOptions(
        provider=cluster.provider, depends_on=[cluster.system_pool, identity]))
    address = pulumi.Output.from_input(workspace_id).apply(lambda ws: amp_endpoint(cfg.region, ws))
    return [role, policy, identity, *installed, *scaler_objects(
        cfg, serving, provider=cluster.provider, auth_name=TRIGGER_AUTH,
        auth_spec={"podIdentity": {"provider": "aws"}},
        server_address=address, labels={"namespace": cfg.namespace}, extra_metadata={"awsRegion": cfg.region},
        depends_on=installed)]

"""ACK: KEDA, installed by its chart on the system nodes, scaling the serving workload on the engine's metrics in the
cluster's ARMS Prometheus instance (the one the ``arms-prometheus`` add-on creates, ``k3infra.alicloud.monitoring``).

- KEDA's chart (catalog.charts.KEDA_CHART), as on EKS and GKE, rather than ACK's ack-keda: the catalog's ACK
  scaler says why.
- The query endpoint: the instance's internal HTTP API URL, read with ``arms.get_prometheus`` (``enable_details``)
  by the cluster's id (catalog.autoscaling.ARMS_INSTANCE_IS_CLUSTER_ID); KEDA appends ``/api/v1/query`` to it.
- Authentication: a RAM user of its own holding only AliyunPrometheusMetricReadAccess, and an AccessKey of that user
  (a Pulumi secret) in a Kubernetes Secret in the serving namespace, which a TriggerAuthentication hands to the
  Prometheus scaler as basic auth (``authModes: basic``, ``username``/``password``: KEDA v2.20.2
  ``pkg/scalers/authentication``), what a V2 instance requires (catalog.autoscaling.ARMS_INSTANCE_VERSION).
  ACK's RRSA pod identity cannot sign these queries: the HTTP API takes an AccessKey, not an STS token exchange.
"""

import pulumi
import pulumi_alicloud as alicloud
import pulumi_kubernetes as k8s

from .. import names
from ..catalog.autoscaling import ARMS_METRICS_READ_POLICY
from ..config import StackConfig
from ..serving import pods
from ..serving.autoscaling import workload_target
from ..serving.keda import install_keda, scaler_objects
from ..serving.stack import Serving
from .cluster import POOL_LABEL_KEY, SYSTEM_POOL_LABEL, AckCluster

TRIGGER_AUTH = f"{names.PREFIX}-keda-arms"
CREDENTIALS_SECRET = f"{names.PREFIX}-keda-arms-credentials"
"""The Secret in the serving namespace holding the AccessKey pair (keys ``username`` and ``password``)."""


def arms_query_url(cluster_id: pulumi.Input[str], after: pulumi.Resource) -> pulumi.Output[str]:
    """The internal HTTP API URL of the cluster's ARMS Prometheus instance, read once ``after`` (the add-on that
    creates the instance) exists."""
    found = alicloud.arms.get_prometheus_output(ids=pulumi.Output.from_input(cluster_id).apply(lambda c: [c]),
                                                enable_details=True,
                                                opts=pulumi.InvokeOutputOptions(depends_on=[after]))
    def url(found_instances: list[alicloud.arms.outputs.GetPrometheusPrometheiResult]) -> str:
        if not found_instances:
            raise ValueError("autoscaling on ACK: ARMS finds no Prometheus instance with the cluster's id, which "
                             "the arms-prometheus add-on's instance is assumed to have (k3infra.catalog.autoscaling."
                             "ARMS_INSTANCE_IS_CLUSTER_ID); set autoscaling.enabled false and report the instance's id")
        return found_instances[0].http_api_intra_url

    return found.prometheis.apply(url)


def keda(cfg: StackConfig, cluster: AckCluster, serving: Serving,
         prometheus_addon: pulumi.Resource | None) -> list[pulumi.Resource]:
    """The RAM user and its key, KEDA and the scaler objects of a stack with autoscaling on (nothing otherwise;
    config validation requires observability with autoscaling on ACK, so the add-on is there)."""
    a = cfg.autoscaling
    if a is None or not a.enabled or workload_target(cfg.workload) is None or prometheus_addon is None:
        return []
    user = alicloud.ram.User(f"{names.PREFIX}-keda-user", alicloud.ram.UserArgs(
        name=f"{cfg.cluster.name}-keda", display_name=f"{cfg.cluster.name} KEDA",
        comments="KEDA reads the Kimi K3 engine's metrics from ARMS Prometheus to scale the server (k3infra)"))
    policy = alicloud.ram.UserPolicyAttachment(f"{names.PREFIX}-keda-metrics-read", alicloud.ram.UserPolicyAttachmentArgs(
        user_name=user.name, policy_name=ARMS_METRICS_READ_POLICY, policy_type="System"))
    key = alicloud.ram.AccessKey(f"{names.PREFIX}-keda-key", alicloud.ram.AccessKeyArgs(user_name=user.name),
                                 opts=pulumi.ResourceOptions(additional_secret_outputs=["secret"],
                                                             depends_on=[policy]))
    k8s_opts = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[serving.server])
    secret = k8s.core.v1.Secret(
        CREDENTIALS_SECRET, metadata=k8s.meta.v1.ObjectMetaArgs(
            name=CREDENTIALS_SECRET, namespace=cfg.namespace, labels=pods.labels(names.PREFIX, "autoscaling")),
        type="Opaque", string_data={"username": key.id, "password": pulumi.Output.secret(key.secret)},
        opts=k8s_opts)
    installed = install_keda({POOL_LABEL_KEY: SYSTEM_POOL_LABEL}, pulumi.ResourceOptions(
        provider=cluster.provider, depends_on=[cluster.system_pool]))
    return [user, policy, key, secret, *installed, *scaler_objects(
        cfg, serving, provider=cluster.provider, auth_name=TRIGGER_AUTH,
        auth_spec={"secretTargetRef": [{"parameter": p, "name": CREDENTIALS_SECRET, "key": p}
                                       for p in ("username", "password")]},
        server_address=arms_query_url(cluster.cluster_id, prometheus_addon), labels={"namespace": cfg.namespace},
        extra_metadata={"authModes": "basic"}, depends_on=[*installed, secret])]

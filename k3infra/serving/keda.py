"""KEDA on a cluster k3infra creates: its chart (catalog.charts.KEDA_CHART) on the CPU system nodes, and the scaler
objects of the serving workload: a TriggerAuthentication with the cloud identity KEDA queries the managed Prometheus
with, and the ScaledObject (k3infra.serving.autoscaling builds its body)."""

from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .. import names
from ..catalog.autoscaling import KEDA_API_VERSION
from ..catalog.charts import KEDA_CHART
from ..config import StackConfig
from . import pods
from .autoscaling import SCALER_NAME, scaled_object, signal_query, workload_target
from .stack import Serving

KEDA_NAMESPACE = "keda"
KEDA_SERVICE_ACCOUNT = "keda-operator"
"""The operator's service account in chart 2.20.2 (values.yaml ``serviceAccount.operator.name``): the identity
the cloud grants the metrics query to."""
KEDA_REPOSITORY = "https://kedacore.github.io/charts"


def install_keda(node_selector: Mapping[str, str], opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """The ``keda`` namespace and KEDA's chart, every pod on the nodes ``node_selector`` picks."""
    ns = k8s.core.v1.Namespace(f"{names.PREFIX}-keda-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(
        name=KEDA_NAMESPACE, labels=pods.labels(names.PREFIX, "autoscaling")), opts=opts)
    chart, version = KEDA_CHART
    release = k8s.helm.v4.Chart(
        f"{names.PREFIX}-keda", chart=chart, version=version, namespace=KEDA_NAMESPACE, name="keda",
        repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=KEDA_REPOSITORY),
        values={"nodeSelector": dict(node_selector)},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ns])))
    return [ns, release]


def scaler_objects(cfg: StackConfig, serving: Serving, *, provider: k8s.Provider, auth_name: str,
                   auth_spec: Mapping[str, Any], server_address: pulumi.Input[str],
                   labels: Mapping[str, str], extra_metadata: Mapping[str, str] | None = None,
                   depends_on: Sequence[pulumi.Resource] = ()) -> list[pulumi.Resource]:
    """The TriggerAuthentication (``auth_spec``: its spec, ``podIdentity`` with the cloud's provider or
    ``secretTargetRef`` into a Secret) and the ScaledObject on the serving workload, its Prometheus trigger at
    ``server_address`` over the series ``labels`` select."""
    a, target = cfg.autoscaling, workload_target(cfg.workload)
    assert a is not None and a.enabled and target is not None
    after = pulumi.ResourceOptions(provider=provider, depends_on=[*depends_on, serving.server])
    auth = k8s.apiextensions.CustomResource(
        auth_name, api_version=KEDA_API_VERSION, kind="TriggerAuthentication",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=auth_name, namespace=cfg.namespace),
        spec=dict(auth_spec), opts=after)
    query = signal_query(cfg.engine.name, a.signal, labels)
    api_version, kind = target

    def body(v: list[str]) -> Any:
        workload, address = v
        return scaled_object(name=SCALER_NAME, namespace=cfg.namespace, target_api_version=api_version,
                             target_kind=kind, target_name=workload, server_address=address, query=query,
                             scaling=a, authentication=auth_name, extra_metadata=extra_metadata)["spec"]

    scaler = k8s.apiextensions.CustomResource(
        SCALER_NAME, api_version=KEDA_API_VERSION, kind="ScaledObject",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=SCALER_NAME, namespace=cfg.namespace),
        spec=pulumi.Output.all(serving.server.workload_name, server_address).apply(body),
        opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[auth])))
    return [auth, scaler]

"""KEDA on a cluster k3infra creates: its chart (catalog.charts.KEDA_CHART) on the CPU system nodes, and the scaler
objects of the serving workload: a TriggerAuthentication with the cloud identity KEDA queries the managed Prometheus
with, and the ScaledObject (k3infra.serving.autoscaling builds its body): one on the server, or one per role of a
disaggregated topology on the role's own workload and series (``scaler_targets``, issue 37 §6)."""

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .. import names
from ..catalog.autoscaling import KEDA_API_VERSION
from ..catalog.charts import KEDA_CHART
from ..config import StackConfig
from ..config.model import AutoscalingConfig
from . import pods
from .autoscaling import (SCALER_NAME, TARGETS, SignalQuery, role_scaler_name, role_series, scaled_object,
                          signal_query, workload_target)
from .model_server import ModelServer
from .roles import role_workload
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


@dataclass(frozen=True)
class ScalerTarget:
    """One ScaledObject: the workload it scales, how, and the series its query selects."""

    name: str
    """The ScaledObject's name (``SCALER_NAME``, or ``role_scaler_name`` of a role)."""
    api_version: str
    kind: str
    server: ModelServer
    """The ModelServer whose workload it scales."""
    scaling: AutoscalingConfig
    """Its floor, ceiling, signal and target (a role's: ``AutoscalingConfig.for_role``)."""
    labels: dict[str, str]
    """The Prometheus label matchers of its query."""


def scaler_targets(cfg: StackConfig, serving: Serving, labels: Mapping[str, str]) -> list[ScalerTarget]:
    """What the stack's scalers scale: the server's workload, or each role's of a disaggregated topology (prefill
    first), its query on the role's own series (``role_series``); none where nothing is scaled."""
    a, target = cfg.autoscaling, workload_target(cfg.workload)
    if a is None or not a.enabled or target is None:
        return []
    if not a.roles:
        return [ScalerTarget(SCALER_NAME, *target, serving.server, a, dict(labels))]
    return [ScalerTarget(role_scaler_name(r.role), *TARGETS[role_workload(r.nodes)], serving.roles[r.role],
                         a.for_role(r.role), role_series(labels, r.role)) for r in a.roles]


def scaled_objects(cfg: StackConfig, serving: Serving, *, provider: k8s.Provider, server_address: pulumi.Input[str],
                   labels: Mapping[str, str], authentication: str | None = None,
                   extra_metadata: Mapping[str, str] | None = None, depends_on: Sequence[pulumi.Resource] = (),
                   then: Sequence[pulumi.Resource] = ()) -> list[pulumi.Resource]:
    """One ScaledObject per ``scaler_targets``, its Prometheus trigger at ``server_address`` over the series ``labels``
    (and the role's) select, each after ``depends_on``, the server it scales and ``then``."""
    out: list[pulumi.Resource] = []
    for t in scaler_targets(cfg, serving, labels):
        query = signal_query(cfg.engine.name, t.scaling.signal, t.labels)

        def body(v: list[str], t: ScalerTarget = t, query: SignalQuery = query) -> Any:
            workload, address = v
            return scaled_object(name=t.name, namespace=cfg.namespace, target_api_version=t.api_version,
                                 target_kind=t.kind, target_name=workload, server_address=address, query=query,
                                 scaling=t.scaling, authentication=authentication,
                                 extra_metadata=extra_metadata)["spec"]

        out.append(k8s.apiextensions.CustomResource(
            t.name, api_version=KEDA_API_VERSION, kind="ScaledObject",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=t.name, namespace=cfg.namespace),
            spec=pulumi.Output.all(t.server.workload_name, server_address).apply(body),
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[*depends_on, t.server, *then])))
    return out


def scaler_objects(cfg: StackConfig, serving: Serving, *, provider: k8s.Provider, auth_name: str,
                   auth_spec: Mapping[str, Any], server_address: pulumi.Input[str],
                   labels: Mapping[str, str], extra_metadata: Mapping[str, str] | None = None,
                   depends_on: Sequence[pulumi.Resource] = ()) -> list[pulumi.Resource]:
    """The TriggerAuthentication (``auth_spec``: its spec, ``podIdentity`` with the cloud's provider or
    ``secretTargetRef`` into a Secret) and the ScaledObjects (``scaled_objects``: the server's, or one per role),
    their Prometheus triggers at ``server_address`` over the series ``labels`` select."""
    a, target = cfg.autoscaling, workload_target(cfg.workload)
    assert a is not None and a.enabled and target is not None
    after = pulumi.ResourceOptions(provider=provider, depends_on=[*depends_on, serving.server])
    auth = k8s.apiextensions.CustomResource(
        auth_name, api_version=KEDA_API_VERSION, kind="TriggerAuthentication",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=auth_name, namespace=cfg.namespace),
        spec=dict(auth_spec), opts=after)
    return [auth, *scaled_objects(cfg, serving, provider=provider, server_address=server_address, labels=labels,
                                  authentication=auth_name, extra_metadata=extra_metadata,
                                  depends_on=depends_on, then=[auth])]

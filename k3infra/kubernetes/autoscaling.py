"""An existing cluster's scaler: a KEDA ScaledObject on the serving workload, its Prometheus trigger querying the
cluster's prometheus-operator Prometheus (``prometheus-operated`` in kubernetes.prometheusNamespace), which the
stack's PodMonitor has scrape the server. KEDA itself must be there (k3infra.kubernetes.presence checks
scaledobjects.keda.sh at preview)."""

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.autoscaling import KEDA_API_VERSION, PROMETHEUS_OPERATED_PORT
from ..config import StackConfig
from ..serving.autoscaling import SCALER_NAME, scaled_object, signal_query, workload_target
from ..serving.stack import Serving


def prometheus_address(namespace: str) -> str:
    """prometheus-operator's governing Service of the Prometheus in ``namespace``."""
    return f"http://prometheus-operated.{namespace}.svc:{PROMETHEUS_OPERATED_PORT}"


def scaler(cfg: StackConfig, serving: Serving, provider: k8s.Provider) -> k8s.apiextensions.CustomResource | None:
    """The ScaledObject of a stack with autoscaling on (None otherwise)."""
    a, k, target = cfg.autoscaling, cfg.kubernetes, workload_target(cfg.workload)
    if a is None or not a.enabled or k is None or target is None:
        return None
    api_version, kind = target
    query = signal_query(cfg.engine.name, a.signal, {"namespace": cfg.namespace})

    def body(target: str) -> dict[str, object]:
        return scaled_object(name=SCALER_NAME, namespace=cfg.namespace, target_api_version=api_version,
                             target_kind=kind, target_name=target,
                             server_address=prometheus_address(k.prometheus_namespace), query=query, scaling=a)

    spec = serving.server.workload_name.apply(lambda target: body(target)["spec"])
    return k8s.apiextensions.CustomResource(
        SCALER_NAME, api_version=KEDA_API_VERSION, kind="ScaledObject",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=SCALER_NAME, namespace=cfg.namespace),
        spec=spec, opts=pulumi.ResourceOptions(provider=provider, depends_on=[serving.server]))

"""An existing cluster's scaler: a KEDA ScaledObject on the serving workload, its Prometheus trigger querying the
cluster's prometheus-operator Prometheus (``prometheus-operated`` in kubernetes.prometheusNamespace), which the
stack's PodMonitor has scrape the server. KEDA itself must be there (k3infra.kubernetes.presence checks
scaledobjects.keda.sh at preview)."""

import pulumi
import pulumi_kubernetes as k8s

from .. import names
from ..catalog import Workload
from ..catalog.autoscaling import KEDA_API_VERSION, PROMETHEUS_OPERATED_PORT
from ..config import StackConfig
from ..serving.autoscaling import scaled_object, signal_query
from ..serving.model_server import LWS_API_VERSION
from ..serving.stack import Serving

SCALER_NAME = f"{names.PREFIX}-scaler"
"""The ScaledObject's name (KEDA's HPA is ``keda-hpa-`` and this)."""

TARGETS = {Workload.DEPLOYMENT: ("apps/v1", "Deployment"), Workload.LEADER_WORKER_SET: (LWS_API_VERSION, "LeaderWorkerSet")}
"""What the ScaledObject scales for each workload: a Deployment's pods, a LeaderWorkerSet's groups."""


def prometheus_address(namespace: str) -> str:
    """prometheus-operator's governing Service of the Prometheus in ``namespace``."""
    return f"http://prometheus-operated.{namespace}.svc:{PROMETHEUS_OPERATED_PORT}"


def scaler(cfg: StackConfig, serving: Serving, provider: k8s.Provider) -> k8s.apiextensions.CustomResource | None:
    """The ScaledObject of a stack with autoscaling on (None otherwise)."""
    a, k, workload = cfg.autoscaling, cfg.kubernetes, cfg.workload
    if a is None or not a.enabled or k is None or workload is None or workload not in TARGETS:
        return None
    api_version, kind = TARGETS[workload]
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

"""An existing cluster's scalers: a KEDA ScaledObject on the serving workload (or one per role of a disaggregated
topology), its Prometheus trigger querying the cluster's prometheus-operator Prometheus (``prometheus-operated`` in
kubernetes.prometheusNamespace), which the stack's PodMonitor has scrape the server. KEDA itself must be there
(k3infra.kubernetes.presence checks scaledobjects.keda.sh at preview)."""

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.autoscaling import PROMETHEUS_OPERATED_PORT
from ..config import StackConfig
from ..serving.keda import scaled_objects
from ..serving.stack import Serving


def prometheus_address(namespace: str) -> str:
    """prometheus-operator's governing Service of the Prometheus in ``namespace``."""
    return f"http://prometheus-operated.{namespace}.svc:{PROMETHEUS_OPERATED_PORT}"


def scaler(cfg: StackConfig, serving: Serving, provider: k8s.Provider) -> list[pulumi.Resource]:
    """The ScaledObjects of a stack with autoscaling on (none otherwise)."""
    k = cfg.kubernetes
    if k is None:
        return []
    return scaled_objects(cfg, serving, provider=provider, server_address=prometheus_address(k.prometheus_namespace),
                          labels={"namespace": cfg.namespace})

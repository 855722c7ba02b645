"""Monitoring on an existing cluster: prometheus-operator's PodMonitor, where the cluster runs prometheus-operator.

The cluster's own Prometheus scrapes the server's leader pods (``observability.scrape.server_target``) through a
``monitoring.coreos.com/v1`` PodMonitor in the serving namespace, carrying the labels its ``podMonitorSelector``
picks (``kubernetes.podMonitorLabels``); the server's NetworkPolicy admits its namespace
(``kubernetes.prometheusNamespace``). GPU metrics are the cluster's: the GPU Operator runs NVIDIA's dcgm-exporter
with a ServiceMonitor of its own. k3infra writes no alert rules here (a cluster's Alertmanager routing is its
own); the committed rules and dashboard (docs/serving.md) load into it as they are. The one exception is the
stack's own scaler: with autoscaling on, a ``monitoring.coreos.com/v1`` PrometheusRule holds its alerts (replicas
wanted and not serving, at the maximum, thrash), labelled like the PodMonitor so the Prometheus's ruleSelector,
usually the same labels, picks it; routing them stays the cluster's.
"""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import AddonState
from ..config import StackConfig
from ..observability import rules as r
from ..observability.outputs import Monitoring, monitoring_output
from ..observability.scrape import SCRAPE_INTERVAL, picker_target, server_target
from ..serving import pods
from ..serving.stack import Serving
from .presence import PODMONITOR_API


def observe(cfg: StackConfig, name: str, serving: Serving, provider: k8s.Provider) -> dict[str, Any]:
    """The server's PodMonitor where prometheus-operator is present; the ``monitoring`` output says what is there."""
    k = cfg.kubernetes
    assert k is not None
    if not cfg.observability.enabled:
        return {}
    if k.prometheus_operator != AddonState.PRESENT:
        return {"monitoring": {"metrics": "none: kubernetes.prometheusOperator is absent, so no scrape object is "
                                          f"created; the server serves {cfg.engine.metrics_path} on its http port"}}
    parent = Monitoring(f"{name}-monitoring")
    name = f"{name}-monitoring"
    target = server_target(cfg, serving.server.leader_selector)
    k8s.apiextensions.CustomResource(
        f"{name}-server-pod-monitor", api_version=PODMONITOR_API, kind="PodMonitor",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-server", namespace=cfg.namespace,
                                            labels={**pods.labels(name, "monitoring"), **k.pod_monitor_labels}),
        spec=target.pod_monitor_spec(SCRAPE_INTERVAL),
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[serving.namespace]))
    if serving.gateway is not None:  # issue 38: the gateway's endpoint picker (observability.scrape.picker_target)
        k8s.apiextensions.CustomResource(
            f"{name}-picker-pod-monitor", api_version=PODMONITOR_API, kind="PodMonitor",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-picker", namespace=cfg.namespace,
                                                labels={**pods.labels(name, "monitoring"), **k.pod_monitor_labels}),
            spec=picker_target(cfg, serving.gateway.picker_selector).pod_monitor_spec(SCRAPE_INTERVAL),
            opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[serving.namespace]))
    alerts = r.scaler_alerts(cfg.engine.name, cfg.namespace, cfg.autoscaling, cfg.workload)
    if alerts:
        k8s.apiextensions.CustomResource(
            f"{name}-autoscaling-rules", api_version=PODMONITOR_API, kind="PrometheusRule",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-autoscaling", namespace=cfg.namespace,
                                                labels={**pods.labels(name, "monitoring"), **k.pod_monitor_labels}),
            spec=r.prometheus_rule_groups(alerts, "kimi-k3-autoscaling"),
            opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[serving.namespace]))
    return {"monitoring": monitoring_output(
        service=f"the cluster's prometheus-operator (PodMonitor {name}-server in {cfg.namespace}, scraped from "
                f"namespace {k.prometheus_namespace})", engine=cfg.engine.name, alerts=alerts,
        gpu_metrics="the cluster's own dcgm-exporter (the GPU Operator's ServiceMonitor), not installed by k3infra",
        import_into="Grafana with the cluster's Prometheus as data source: Dashboards > New > Import, upload the file")}

"""Monitoring on an existing cluster: prometheus-operator's PodMonitor, where the cluster runs prometheus-operator.

The cluster's own Prometheus scrapes the server's leader pods (``observability.scrape.server_targets``) through a
``monitoring.coreos.com/v1`` PodMonitor in the serving namespace, carrying the labels its ``podMonitorSelector``
picks (``kubernetes.podMonitorLabels``); the server's NetworkPolicy admits its namespace
(``kubernetes.prometheusNamespace``). GPU metrics are the cluster's: the GPU Operator runs NVIDIA's dcgm-exporter
with a ServiceMonitor of its own. k3infra writes no alert rules here (a cluster's Alertmanager routing is its
own); the committed rules and dashboard (docs/serving.md) load into it as they are. The one exception is the
stack's own scaler: with autoscaling on, a ``monitoring.coreos.com/v1`` PrometheusRule holds its alerts (replicas
wanted and not serving, at the maximum, thrash), labelled like the PodMonitor so the Prometheus's ruleSelector,
usually the same labels, picks it; routing them stays the cluster's. So does the stack's own topology: a
disaggregated one gets a PrometheusRule of its roles' and KV transfer's alerts (``observability.role_rules``), and
a PodMonitor per role, labelling the series with the pods' ``llm-d.ai/role``.
"""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import AddonState
from ..config import StackConfig
from ..observability import rules as r
from ..observability.outputs import Monitoring, monitoring_output
from ..observability.role_rules import role_alerts
from ..observability.scrape import SCRAPE_INTERVAL, picker_target, server_targets
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
    for role, target in server_targets(cfg, serving).items():  # the server, and a disaggregated topology's prefill
        k8s.apiextensions.CustomResource(
            f"{name}-{role}-pod-monitor", api_version=PODMONITOR_API, kind="PodMonitor",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-{role}", namespace=cfg.namespace,
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
    alerts: list[r.Alert] = []
    for part, rules in (("autoscaling", r.scaler_alerts(cfg.engine.name, cfg.namespace, cfg.autoscaling, cfg.workload)),
                        ("roles", role_alerts(cfg))):
        if rules:
            k8s.apiextensions.CustomResource(
                f"{name}-{part}-rules", api_version=PODMONITOR_API, kind="PrometheusRule",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-{part}", namespace=cfg.namespace,
                                                    labels={**pods.labels(name, "monitoring"), **k.pod_monitor_labels}),
                spec=r.prometheus_rule_groups(rules, f"kimi-k3-{part}"),
                opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[serving.namespace]))
            alerts += rules
    return {"monitoring": monitoring_output(
        service=f"the cluster's prometheus-operator (PodMonitor {name}-server in {cfg.namespace}, scraped from "
                f"namespace {k.prometheus_namespace})",
        engine=cfg.engine.name, disaggregated=cfg.topology.disaggregated, alerts=alerts,
        gpu_metrics="the cluster's own dcgm-exporter (the GPU Operator's ServiceMonitor), not installed by k3infra",
        import_into="Grafana with the cluster's Prometheus as data source: Dashboards > New > Import, upload the file")}

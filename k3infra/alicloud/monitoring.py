"""ACK: Alibaba Cloud Managed Service for Prometheus (ARMS Prometheus) and its GPU monitoring.

What the ACK docs require: the ``arms-prometheus`` cluster add-on (the ack-arms-prometheus agent in ``arms-prom``,
which creates the cluster's ARMS Prometheus instance, keyed by the cluster id, and reads prometheus-operator
``ServiceMonitor``/``PodMonitor`` objects); then

- a ``PodMonitor`` (``monitoring.coreos.com/v1``) scrapes the server's leader pods; the agent runs in ``arms-prom``,
  which the server's NetworkPolicy admits on the serving port;
- GPU metrics: ACK's GPU monitoring (ack-gpu-exporter, DCGM exporter metric names) comes with the Prometheus
  add-on on GPU nodes ("GPU Monitoring 2.0: introduction to metrics"), so no exporter is installed here;
- alerts: one ``alicloud.arms.PrometheusAlertRule`` per alert on the cluster's instance, sent through ARMS'
  Alertmanager (notification policies in the ARMS console); with autoscaling on, the scaler's alerts read the
  HorizontalPodAutoscaler series of a kube-state-metrics of the stack's own (``observability.kube_state_metrics``,
  scraped by a PodMonitor): no ACK page lists those series among the agent's default metrics;
- dashboard: ARMS' Grafana (or Alibaba Cloud Managed Grafana) imports the committed file; no Pulumi resource
  provisions a dashboard into it.
"""

import re
from typing import Any

import pulumi
import pulumi_alicloud as alicloud
import pulumi_kubernetes as k8s

from ..config import StackConfig
from ..observability import rules as r
from ..observability.outputs import Monitoring, monitoring_output
from ..observability.kube_state_metrics import install_kube_state_metrics, ksm_target
from ..observability.scrape import SCRAPE_INTERVAL, ScrapeTarget, picker_target, server_target
from ..serving import pods
from ..serving.contract import MetricsAccess
from ..serving.stack import Serving
from .cluster import POOL_LABEL_KEY, SYSTEM_POOL_LABEL, AckCluster

PROMETHEUS_ADDON = "arms-prometheus"
"""ACK add-on that installs ack-arms-prometheus (Managed Service for Prometheus) on the cluster."""
COLLECTOR_NAMESPACE = "arms-prom"
"""Where the ARMS Prometheus agent runs."""


def metrics_access(cfg: StackConfig) -> MetricsAccess | None:
    """Where the ARMS agent scrapes the server from."""
    return MetricsAccess(namespaces=[COLLECTOR_NAMESPACE]) if cfg.observability.enabled else None


def observe(cfg: StackConfig, name: str, cluster: AckCluster,
            serving: Serving) -> tuple[dict[str, Any], alicloud.cs.KubernetesAddon | None]:
    """The Prometheus add-on, the PodMonitor and the alert rules; the stack outputs and the add-on, which creates
    the cluster's ARMS Prometheus instance (None with observability off)."""
    if not cfg.observability.enabled:
        return {}, None
    parent = Monitoring(f"{name}-monitoring")
    name = f"{name}-monitoring"
    o = cfg.observability
    addon = alicloud.cs.KubernetesAddon(f"{name}-prometheus", alicloud.cs.KubernetesAddonInitArgs(
        cluster_id=cluster.cluster_id, name=PROMETHEUS_ADDON), opts=pulumi.ResourceOptions(parent=parent, 
            depends_on=[cluster.system_pool]))
    labels = pods.labels(name, "monitoring")
    _pod_monitor(f"{name}-pod-monitor", f"{name}-server", server_target(cfg, serving.server.leader_selector), labels,
                 pulumi.ResourceOptions(parent=parent, provider=cluster.provider, depends_on=[addon, serving.server]))
    picker: list[r.Alert] = []
    if serving.gateway is not None:  # issue 38: the installed gateway's endpoint picker
        _pod_monitor(f"{name}-picker-pod-monitor", f"{name}-picker", picker_target(cfg, serving.gateway.picker_selector),
                     labels, pulumi.ResourceOptions(parent=parent, provider=cluster.provider,
                                                    depends_on=[addon, serving.gateway]))
        picker = r.picker_alerts(cfg.namespace)
    scaler = r.scaler_alerts(cfg.engine.name, cfg.namespace, cfg.autoscaling, cfg.workload)
    if scaler:
        ksm = install_kube_state_metrics(f"{name}-kube-state-metrics", cfg.namespace,
                                         {POOL_LABEL_KEY: SYSTEM_POOL_LABEL}, pulumi.ResourceOptions(
                                             parent=parent, provider=cluster.provider,
                                             depends_on=[serving.namespace, cluster.system_pool]))
        _pod_monitor(f"{name}-kube-state-metrics-pod-monitor", f"{name}-kube-state-metrics", ksm_target(cfg.namespace),
                     labels, pulumi.ResourceOptions(parent=parent, provider=cluster.provider, depends_on=[addon, ksm]))
    alerts = r.engine_alerts(cfg.engine.name, cfg.namespace, ready_budget_seconds=cfg.sizing.probe_budget_seconds,
                             stall_minutes=o.stall_minutes) + picker + r.gpu_alerts() + scaler
    for a in alerts:
        alicloud.arms.PrometheusAlertRule(
            f"{name}-alert-{re.sub(r'(?<!^)(?=[A-Z])', '-', a.name).lower()}", cluster_id=cluster.cluster_id, prometheus_alert_rule_name=a.name,
            expression=a.expr, duration=str(max(1, -(-a.for_seconds // 60))), message=a.summary,
            notify_type="ALERT_MANAGER", type="kimi-k3",
            labels=[alicloud.arms.PrometheusAlertRuleLabelArgs(name="severity", value=a.severity)],
            annotations=[alicloud.arms.PrometheusAlertRuleAnnotationArgs(name="summary", value=a.summary)],
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[addon]))
    return {"monitoring": monitoring_output(
        service="Alibaba Cloud Managed Service for Prometheus (ARMS, add-on arms-prometheus)", engine=cfg.engine.name,
        disaggregated=cfg.topology.disaggregated,
        alerts=alerts, gpu_metrics="ACK GPU monitoring (ack-gpu-exporter, DCGM metric names)",
        import_into="the ARMS Prometheus instance's Grafana (or Managed Grafana) with the cluster's Prometheus data "
                    "source: Dashboards > New > Import (docs/alicloud.md#monitoring)")}, addon


def _pod_monitor(resource: str, name: str, target: ScrapeTarget, labels: dict[str, str],
                 opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    """A prometheus-operator PodMonitor, which the ARMS agent reads."""
    return k8s.apiextensions.CustomResource(
        resource, api_version="monitoring.coreos.com/v1", kind="PodMonitor",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=target.namespace, labels=labels),
        spec=target.pod_monitor_spec(SCRAPE_INTERVAL), opts=opts)

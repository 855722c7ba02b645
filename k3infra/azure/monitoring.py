"""AKS: Azure Monitor managed service for Prometheus, an Azure Monitor dashboard with Grafana, and Prometheus rule
groups.

What the AKS docs require to turn managed Prometheus on (MicrosoftDocs/azure-monitor-docs, "Enable Prometheus
metrics" ARM template and "Customize collection using CRDs"):
- an Azure Monitor workspace (or ``k3infra:observability.workspace``);
- a data collection endpoint and a data collection rule forwarding ``Microsoft-PrometheusMetrics`` to the
  workspace, both named ``MSProm-<location>-<cluster>``; the rule associated with the cluster, and the endpoint
  associated with it as ``configurationAccessEndpoint`` (the name Azure requires);
- ``azureMonitorProfile.metrics.enabled`` on the cluster (``AksCluster`` sets it), which runs the ama-metrics
  add-on in ``kube-system`` and installs its ``azmonitoring.coreos.com`` PodMonitor and ServiceMonitor CRDs.

Then a PodMonitor scrapes the server's leader pods, and another the DCGM exporter: AKS's GPU node pools get the
driver and the device plugin but no DCGM exporter, so NVIDIA's chart is installed on the GPU pool
(``observability.scrape.install_dcgm_exporter``). Alerts are one ``prometheusRuleGroups`` resource scoped to the
workspace and the cluster; the scaler's read the HorizontalPodAutoscaler series of the add-on's own kube-state-metrics
(collector ``horizontalpodautoscalers`` in Azure/prometheus-collector's addon chart ``values-template.yaml``; its
minimal ingestion profile keeps ``kube_horizontalpodautoscaler_status_desired_replicas`` and ``..._spec_max_replicas``:
``kubestateRegex_minimal_mac`` in ``otelcollector/shared/configmap/mp/tomlparser-default-targets-metrics-keep-list.go``). The dashboard is provisioned as an Azure Monitor dashboard with Grafana
(``Microsoft.Dashboard/dashboards`` and its definition: the Grafana JSON, no Grafana instance to run).
"""

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import alertsmanagement, dashboard as azdash, monitor

from ..config import StackConfig
from ..observability import dashboard as board, rules as r
from ..observability.outputs import Monitoring, monitoring_output
from ..observability.role_rules import role_alerts
from ..observability.scrape import (DCGM_TARGET, SCRAPE_INTERVAL, ScrapeTarget, install_dcgm_exporter, picker_target,
                                    server_targets)
from ..serving import pods
from ..serving.contract import GpuPool, MetricsAccess
from ..serving.stack import Serving
from .cluster import AksCluster
from .gpu_pool import MANAGED_GPU_LABEL

AZMONITORING_API = "azmonitoring.coreos.com/v1"
COLLECTOR_NAMESPACE = "kube-system"
"""Where the ama-metrics add-on runs."""
PROMETHEUS_STREAM = "Microsoft-PrometheusMetrics"
SEVERITY = {"critical": 0, "warning": 2}
"""Azure alert severities: 0 Critical ... 4 Verbose."""


def metrics_access(cfg: StackConfig) -> MetricsAccess | None:
    """Where ama-metrics scrapes the server from."""
    return MetricsAccess(namespaces=[COLLECTOR_NAMESPACE]) if cfg.observability.enabled else None


DCE_NAME_MAX = 44
DCR_NAME_MAX = 64
"""How long Azure/prometheus-collector's add-on templates let the data collection endpoint's and rule's names be:
``substr("MSProm-<location>-<cluster>", 0, min(44, ...))`` for the DCE and ``min(64, ...)`` for the DCR
(``AddonTerraformTemplate/main.tf``; ``AddonBicepTemplate/FullAzureMonitorMetricsProfile.bicep`` ``dceName``,
``dcrName``); the association keeps the whole name."""


def _ms_prom_name(location: str, cluster: str, limit: int | None = None) -> str:
    """``MSProm-<location>-<cluster>``, the name the AKS docs give the DCE, DCR and DCR association, cut to ``limit``
    as the add-on's templates cut it (without a trailing hyphen the cut may leave: names end in a letter or digit)."""
    name = f"MSProm-{location}-{cluster}"
    return name if limit is None else name[:limit].rstrip("-")


@dataclass(frozen=True)
class MonitorWorkspace:
    """The Azure Monitor workspace the stack's metrics go to (the scaler queries it)."""

    id: pulumi.Input[str]
    """Resource id: the scope of the scaler's Monitoring Data Reader grant."""
    query_endpoint: pulumi.Input[str]
    """Its Prometheus query endpoint (``metrics.prometheusQueryEndpoint``,
    ``https://NAME-SUFFIX.REGION.prometheus.monitor.azure.com``)."""


def _existing_workspace(workspace_id: str) -> MonitorWorkspace:
    """A workspace the stack names by id (``/subscriptions/S/resourceGroups/RG/providers/Microsoft.Monitor/accounts/N``):
    its query endpoint read from Azure."""
    parts = workspace_id.strip("/").split("/")
    found = monitor.get_azure_monitor_workspace_output(resource_group_name=parts[3], azure_monitor_workspace_name=parts[-1])
    return MonitorWorkspace(id=workspace_id, query_endpoint=found.metrics.apply(lambda m: m.prometheus_query_endpoint))


def observe(cfg: StackConfig, name: str, cluster: AksCluster, serving: Serving, pool: GpuPool,
            tags: dict[str, str]) -> tuple[dict[str, Any], MonitorWorkspace | None]:
    """The workspace, its collection rule and associations, scrape objects, DCGM exporter, alerts and dashboard;
    the stack outputs and the workspace (None with observability off)."""
    if not cfg.observability.enabled:
        return {}, None
    parent = Monitoring(f"{name}-monitoring")
    name = f"{name}-monitoring"
    assert cfg.azure is not None
    o = cfg.observability
    location, rg = cfg.azure.location, cluster.resource_group_name
    cluster_id = cluster.managed_cluster.id
    dce_name, dcr_name = (_ms_prom_name(location, cfg.cluster.name, limit) for limit in (DCE_NAME_MAX, DCR_NAME_MAX))
    opts = pulumi.ResourceOptions(parent=parent, depends_on=[cluster.managed_cluster])

    if o.workspace:
        workspace = _existing_workspace(o.workspace)
    else:
        made = monitor.AzureMonitorWorkspace(
            f"{name}-prometheus", resource_group_name=rg, azure_monitor_workspace_name=f"{cfg.cluster.name}-prometheus",
            location=location, tags=tags, opts=opts)
        workspace = MonitorWorkspace(id=made.id, query_endpoint=made.metrics.apply(lambda m: m.prometheus_query_endpoint))
    workspace_id = workspace.id
    endpoint = monitor.DataCollectionEndpoint(
        f"{name}-prometheus-dce", resource_group_name=rg, data_collection_endpoint_name=dce_name, location=location,
        kind="Linux", tags=tags, opts=opts)
    rule = monitor.DataCollectionRule(
        f"{name}-prometheus-dcr", resource_group_name=rg, data_collection_rule_name=dcr_name, location=location,
        kind="Linux", data_collection_endpoint_id=endpoint.id,
        data_sources=monitor.DataCollectionRuleDataSourcesArgs(prometheus_forwarder=[
            monitor.PrometheusForwarderDataSourceArgs(name="PrometheusDataSource", streams=[PROMETHEUS_STREAM],
                                                      label_include_filter={})]),
        destinations=monitor.DataCollectionRuleDestinationsArgs(monitoring_accounts=[
            monitor.MonitoringAccountDestinationArgs(account_resource_id=workspace_id, name="MonitoringAccount1")]),
        data_flows=[monitor.DataFlowArgs(destinations=["MonitoringAccount1"], streams=[PROMETHEUS_STREAM])],
        tags=tags, opts=opts)
    monitor.DataCollectionRuleAssociation(
        f"{name}-prometheus-dcra", resource_uri=cluster_id, association_name=_ms_prom_name(location, cfg.cluster.name),
        data_collection_rule_id=rule.id, opts=opts)
    monitor.DataCollectionRuleAssociation(
        f"{name}-prometheus-dcea", resource_uri=cluster_id, association_name="configurationAccessEndpoint",
        data_collection_endpoint_id=endpoint.id, opts=opts)

    _scrape_objects(cfg, name, parent, cluster, serving, pool)

    alerts = r.engine_alerts(cfg.engine.name, cfg.namespace, ready_budget_seconds=cfg.sizing.probe_budget_seconds,
                             stall_minutes=o.stall_minutes) + role_alerts(cfg) + (
        r.picker_alerts(cfg.namespace) if serving.gateway is not None else []) + r.gpu_alerts() + r.scaler_alerts(
        cfg.engine.name, cfg.namespace, cfg.autoscaling, cfg.workload)
    alertsmanagement.PrometheusRuleGroup(
        f"{name}-alerts", resource_group_name=rg, rule_group_name=f"{cfg.cluster.name}-kimi-k3", location=location,
        scopes=[workspace_id, cluster_id], cluster_name=cfg.cluster.name, enabled=True, interval="PT1M",
        description="Kimi K3 serving and GPU alerts (k3infra)",
        rules=[alertsmanagement.PrometheusRuleArgs(
            alert=a.name, expression=a.expr, for_=a.for_iso8601 if a.for_seconds else None,
            severity=SEVERITY[a.severity], labels={"severity": a.severity}, annotations={"summary": a.summary},
            enabled=True,
            resolve_configuration=alertsmanagement.PrometheusRuleResolveConfigurationArgs(
                auto_resolved=True, time_to_resolve="PT10M")) for a in alerts],
        tags=tags, opts=opts)

    dash = azdash.Dashboard(f"{name}-dashboard", resource_group_name=rg, dashboard_name=f"{cfg.cluster.name}-kimi-k3",
                            location=location, tags=tags, opts=opts)
    azdash.DashboardDefinition(
        f"{name}-dashboard-definition", resource_group_name=rg, dashboard_name=dash.name, definition_name="default",
        properties=azdash.DashboardDefinitionPropertiesArgs(
            serialized_data=json.dumps(board.build(cfg.engine.name, disaggregated=board.stack_board(
                cfg.engine.name, cfg.topology.disaggregated)), sort_keys=True)),
        opts=opts)
    return {"monitoring": monitoring_output(
        service="Azure Monitor managed service for Prometheus", engine=cfg.engine.name,
        disaggregated=cfg.topology.disaggregated, alerts=alerts,
        gpu_metrics=f"NVIDIA dcgm-exporter chart in namespace {DCGM_TARGET.namespace}",
        dashboard_at=dash.id, workspace=workspace_id,
        notifications="attach an action group to the rule group for notifications (docs/azure.md#monitoring)")}, workspace


def _scrape_objects(cfg: StackConfig, name: str, parent: pulumi.Resource, cluster: AksCluster, serving: Serving,
                    pool: GpuPool) -> None:
    """The DCGM exporter and the ama-metrics PodMonitors: the server (each role's), the gateway's picker, DCGM."""
    # A node running AKS's managed GPU stack has its own DCGM engine and exporter: stay off it.
    dcgm = install_dcgm_exporter(f"{name}-dcgm", pool, pulumi.ResourceOptions(parent=parent, provider=cluster.provider),
                                 avoid_node_labels=(MANAGED_GPU_LABEL,))
    labels = pods.labels(name, "monitoring")
    # After the server's await: by then the add-on has long installed its CRDs (it deploys after the cluster).
    targets: list[tuple[str, ScrapeTarget, list[pulumi.Resource]]] = [
        (role, target, [serving.server]) for role, target in server_targets(cfg, serving).items()]
    if serving.gateway is not None:  # issue 38: the installed gateway's endpoint picker
        targets.append(("picker", picker_target(cfg, serving.gateway.picker_selector), [serving.gateway]))
    targets.append(("dcgm", DCGM_TARGET, [dcgm, serving.server]))
    for role, target, deps in targets:
        _pod_monitor(f"{name}-{role}-pod-monitor", f"{name}-{role}", target, labels,
                     pulumi.ResourceOptions(parent=parent, provider=cluster.provider, depends_on=deps))


def _pod_monitor(resource: str, name: str, target: ScrapeTarget, labels: dict[str, str],
                 opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    """An ama-metrics PodMonitor (``azmonitoring.coreos.com``: prometheus-operator's kind under Azure's group)."""
    return k8s.apiextensions.CustomResource(
        resource, api_version=AZMONITORING_API, kind="PodMonitor",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=target.namespace, labels=labels),
        spec=target.pod_monitor_spec(SCRAPE_INTERVAL), opts=opts)

"""GKE: Google Cloud Managed Service for Prometheus (managed collection) and GKE's managed DCGM metrics.

- The cluster turns on managed collection and the ``DCGM`` monitoring component (``monitoring_config``, as
  cluster-toolkit's gke-cluster module does with ``enable_dcgm_monitoring``): GKE installs the DCGM exporter and
  its own ClusterPodMonitoring on GPU nodes, so k3infra installs no exporter here.
- A ``PodMonitoring`` (monitoring.googleapis.com/v1) scrapes the server's leader pods; the collectors run in
  ``gke-gmp-system``, which the server's NetworkPolicy admits on the serving port.
- Alerts: a namespaced ``Rules`` for the engine and, with autoscaling, its scaler (GMP scopes its queries to the
  namespace; the scaler's from GKE's managed kube-state-metrics, monitoring component ``HPA``) and a ``ClusterRules``
  for the GPUs (DCGM series live in GKE's own namespace): the lost-GPU alert only, since GKE's managed DCGM exports
  no XID or ECC field (catalog.metrics.GKE_MANAGED_DCGM_FIELDS). The managed rule evaluator sends them to the
  managed Alertmanager, configured through the ``alertmanager`` Secret in ``gmp-public``
  (docs/serving.md#metrics-dashboard-and-alerts).
- Dashboard: Google Cloud has no managed Grafana; the output names the committed file to import into a Grafana
  whose Prometheus data source is the GMP frontend or data source syncer.
"""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..config import StackConfig
from ..observability import rules as r
from ..catalog.metrics import GKE_MANAGED_DCGM_FIELDS
from ..observability.outputs import Monitoring, monitoring_output
from ..observability.role_rules import role_alerts
from ..observability.scrape import SCRAPE_INTERVAL, picker_target, server_targets
from ..serving import pods
from ..serving.contract import MetricsAccess
from ..serving.stack import Serving

GMP_API = "monitoring.googleapis.com/v1"
COLLECTOR_NAMESPACES = ("gke-gmp-system", "gmp-system")
"""Where the managed collectors (and the rule evaluator) run: on GKE ``gke-gmp-system`` (Managed Service for
Prometheus troubleshooting: "kubectl -n gke-gmp-system get pods" for managed collection on GKE), elsewhere, and on
clusters of the open-source operator, ``gmp-system`` (prometheus-engine manifests/operator.yaml). Both are
admitted: a NetworkPolicy that names only the second drops every scrape on GKE (Dataplane V2 enforces it)."""


def metrics_access(cfg: StackConfig) -> MetricsAccess | None:
    """Where managed collection scrapes the server from."""
    return MetricsAccess(namespaces=list(COLLECTOR_NAMESPACES)) if cfg.observability.enabled else None


def observe(cfg: StackConfig, name: str, serving: Serving, provider: k8s.Provider) -> dict[str, Any]:
    """The scrape object and the rule objects; returns the stack outputs (``monitoring``)."""
    if not cfg.observability.enabled:
        return {}
    parent = Monitoring(f"{name}-monitoring")
    name = f"{name}-monitoring"
    o = cfg.observability
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[serving.namespace, serving.server])
    labels = pods.labels(name, "monitoring")
    for role, target in server_targets(cfg, serving).items():  # the server, and a disaggregated topology's prefill
        k8s.apiextensions.CustomResource(
            f"{name}-pod-monitoring" if role == "server" else f"{name}-{role}-pod-monitoring", api_version=GMP_API,
            kind="PodMonitoring", metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-{role}", namespace=cfg.namespace,
                                                                      labels=labels),
            spec=target.pod_monitoring_spec(SCRAPE_INTERVAL), opts=opts)
    engine = r.engine_alerts(cfg.engine.name, cfg.namespace, ready_budget_seconds=cfg.sizing.probe_budget_seconds,
                             stall_minutes=o.stall_minutes) + role_alerts(cfg)
    if serving.gateway is not None:  # issue 38: the endpoint picker's metrics and alerts
        k8s.apiextensions.CustomResource(
            f"{name}-picker-monitoring", api_version=GMP_API, kind="PodMonitoring",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-picker", namespace=cfg.namespace, labels=labels),
            spec=picker_target(cfg, serving.gateway.picker_selector).pod_monitoring_spec(SCRAPE_INTERVAL), opts=opts)
        engine += r.picker_alerts(cfg.namespace)
    # The scaler's alerts read kube-state-metrics' HPA series from the cluster's HPA monitoring component (GkeCluster
    # hpa_metrics). UNCONFIRMED: GKE labels them with the HPA's namespace, as open-source kube-state-metrics does,
    # so the namespaced Rules' scope matches them (confirm: the PromQL of an alert in Metrics Explorer).
    engine += r.scaler_alerts(cfg.engine.name, cfg.namespace, cfg.autoscaling, cfg.workload)
    # GKE's managed DCGM exports no XID or ECC field: its GPU alert is the lost GPU, on what it does export.
    gpu = r.gpu_alerts(GKE_MANAGED_DCGM_FIELDS, expected_gpus=cfg.total_nodes * cfg.accelerator.gpus_per_node)
    k8s.apiextensions.CustomResource(
        f"{name}-rules", api_version=GMP_API, kind="Rules",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-serving", namespace=cfg.namespace, labels=labels),
        spec=r.prometheus_rule_groups(engine, "kimi-k3-serving"), opts=opts)
    k8s.apiextensions.CustomResource(
        f"{name}-cluster-rules", api_version=GMP_API, kind="ClusterRules",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{name}-gpus", labels=labels),
        spec=r.prometheus_rule_groups(gpu, "kimi-k3-gpus"), opts=pulumi.ResourceOptions(parent=parent, provider=provider))
    return {"monitoring": monitoring_output(
        service="Google Cloud Managed Service for Prometheus (managed collection)", engine=cfg.engine.name,
        disaggregated=cfg.topology.disaggregated,
        alerts=[*engine, *gpu], gpu_metrics="GKE managed DCGM metrics (monitoring component DCGM)",
        import_into="Grafana with a Prometheus data source on the GMP frontend or data source syncer: Dashboards > "
                    "New > Import, upload the file (docs/gcp.md#monitoring)",
        alertmanager="configure receivers in Secret gmp-public/alertmanager (managed Alertmanager)")}

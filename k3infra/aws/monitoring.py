"""EKS: Amazon Managed Service for Prometheus with its managed collector (an agentless scraper), NVIDIA's DCGM
exporter, and an AMP rule groups namespace.

- Workspace: ``aws.amp.Workspace``, or ``k3infra:observability.workspace`` (an ARN).
- Collector: ``aws.amp.Scraper`` on the cluster (its private subnets in two zones and the cluster security group,
  as the AMP user guide requires) with a scrape configuration of two jobs, the server's leader pods and the DCGM
  exporter; the scraper reaches the pods from network interfaces in the private subnets, which the server's
  NetworkPolicy admits on the serving port.
- In-cluster access for the collector (AMP user guide, "Configuring your Amazon EKS cluster"): the ClusterRole
  ``aps-collector-role`` bound to the user ``aps-collector-user``, and an EKS access entry mapping the scraper's
  role to that user (the cluster authenticates with access entries only).
- GPU metrics: EKS's accelerated AMIs run no DCGM exporter (the node monitoring agent reports XIDs as node
  conditions, not metrics), so NVIDIA's dcgm-exporter chart runs on the GPU nodes (awslabs/ai-on-eks does the same),
  connected to the DCGM host engine the node monitoring agent already runs there rather than starting a second one
  (``cluster.NODE_MONITORING_HOSTENGINE_PORT``).
- Alerts: ``aws.amp.RuleGroupNamespace`` with the engine, GPU and Capacity Block window alerts, and with autoscaling
  the scaler's, on kube-state-metrics' HPA series (``observability.kube_state_metrics``, scraped by the same
  collector: EKS runs no kube-state-metrics of its own).
- Dashboard: Amazon Managed Grafana needs IAM Identity Center or SAML set up for the account, which a stack cannot
  assume: the output names the committed file and the AMP data source to import it against.
"""

import re
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml

from ..config import StackConfig
from ..observability import rules as r
from ..observability.kube_state_metrics import install_kube_state_metrics, ksm_target
from ..observability.outputs import Monitoring, monitoring_output
from ..observability.role_rules import role_alerts
from ..observability.scrape import (DCGM_TARGET, SCRAPE_INTERVAL, ScrapeTarget, install_dcgm_exporter, picker_target,
                                    series_label,
                                    server_targets)
from ..serving import pods
from ..serving.contract import GpuPool, MetricsAccess
from ..serving.stack import Serving
from .cluster import NODE_MONITORING_HOSTENGINE_PORT, SYSTEM_POOL_LABEL, EksCluster
from .network import subnet_plan

COLLECTOR_USER = "aps-collector-user"
COLLECTOR_ROLE = "aps-collector-role"
"""Names the AMP user guide gives the collector's Kubernetes user and ClusterRole."""

SCRAPER_TAG_PATH = 'tags["AMPAgentlessScraper"]'
"""The tag AMP's managed collector puts on its destination workspace, as a property path the workspace ignores."""


def metrics_access(cfg: StackConfig) -> MetricsAccess | None:
    """The scraper's network interfaces live in the private subnets it is given (the cluster's two): admit those on
    the serving port, not the whole VPC."""
    if not cfg.observability.enabled:
        return None
    assert cfg.aws is not None
    plan = subnet_plan(cfg.aws.vpc_cidr)
    return MetricsAccess(cidrs=[plan.private_capacity, plan.private_other])


def _label(name: str) -> str:
    """The service-discovery meta label of a pod label (Prometheus replaces every invalid character with _)."""
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", name)


def scrape_job(job: str, target: ScrapeTarget) -> dict[str, Any]:
    """One Prometheus scrape job selecting ``target``'s pods and port, with namespace, pod and node labels."""
    relabel: list[dict[str, Any]] = [
        {"source_labels": [_label(k)], "regex": re.escape(v), "action": "keep"} for k, v in sorted(target.selector.items())]
    relabel += [
        {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": target.port, "action": "keep"},
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
        *({"source_labels": [_label(k)], "target_label": series_label(k)} for k in target.pod_labels),
    ]
    return {"job_name": job, "metrics_path": target.path, "scrape_interval": SCRAPE_INTERVAL,
            "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [target.namespace]}}],
            "relabel_configs": relabel}


def scrape_configuration(targets: dict[str, ScrapeTarget]) -> str:
    """The scraper's configuration (Prometheus YAML; AMP accepts ``global`` and ``scrape_configs``)."""
    return yaml.safe_dump({"global": {"scrape_interval": SCRAPE_INTERVAL},
                           "scrape_configs": [scrape_job(job, t) for job, t in targets.items()]}, sort_keys=False)


def _role_without_path(arn: str) -> str:
    """``arn:aws:iam::ACCOUNT:role/NAME`` from a role ARN with a path: the identity a pod-less caller presents to EKS
    (an STS assumed-role ARN) carries no path, and the scraper's service-linked role has one
    (``aws-service-role/scraper.aps.amazonaws.com/``)."""
    head, _, rest = arn.partition(":role/")
    return f"{head}:role/{rest.rsplit('/', 1)[-1]}" if rest else arn


@dataclass(frozen=True)
class AmpWorkspace:
    """The workspace the stack's metrics go to (the autoscaler queries it)."""

    arn: pulumi.Input[str]
    id: pulumi.Input[str]


def _collector_access(name: str, parent: pulumi.Resource, cluster: EksCluster) -> k8s.rbac.v1.ClusterRoleBinding:
    """The managed collector's read access to the cluster: its ClusterRole bound to its user."""
    k8s_opts = pulumi.ResourceOptions(parent=parent, provider=cluster.provider, depends_on=[cluster.system_pool])
    collector_role = k8s.rbac.v1.ClusterRole(
        f"{name}-aps-collector-role", metadata=k8s.meta.v1.ObjectMetaArgs(name=COLLECTOR_ROLE,
                                                                          labels=pods.labels(name, "monitoring")),
        rules=[
            k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["nodes", "nodes/proxy", "nodes/metrics", "services",
                                                                   "endpoints", "pods", "ingresses", "configmaps"],
                                       verbs=["describe", "get", "list", "watch"]),
            k8s.rbac.v1.PolicyRuleArgs(api_groups=["extensions", "networking.k8s.io"],
                                       resources=["ingresses/status", "ingresses"],
                                       verbs=["describe", "get", "list", "watch"]),
            k8s.rbac.v1.PolicyRuleArgs(non_resource_urls=["/metrics"], verbs=["get"]),
        ], opts=k8s_opts)
    return k8s.rbac.v1.ClusterRoleBinding(
        f"{name}-aps-collector-binding", metadata=k8s.meta.v1.ObjectMetaArgs(name="aps-collector-user-role-binding",
                                                                             labels=pods.labels(name, "monitoring")),
        role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=COLLECTOR_ROLE),
        subjects=[k8s.rbac.v1.SubjectArgs(kind="User", name=COLLECTOR_USER, api_group="rbac.authorization.k8s.io")],
        opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(parent=parent, depends_on=[collector_role])))


def observe(cfg: StackConfig, name: str, cluster: EksCluster, serving: Serving, pool: GpuPool,
            capacity_end: pulumi.Input[str] | None) -> tuple[dict[str, Any], AmpWorkspace | None]:
    """Workspace, scraper and its cluster access, DCGM exporter and the rule groups namespace; the stack outputs, and
    the workspace (None with observability off)."""
    if not cfg.observability.enabled:
        return {}, None
    parent = Monitoring(f"{name}-monitoring")
    name = f"{name}-monitoring"
    o = cfg.observability
    if o.workspace:
        workspace_arn: pulumi.Input[str] = o.workspace
        workspace_id: pulumi.Input[str] = o.workspace.rsplit("/", 1)[-1]
    else:
        # The scraper tags its destination workspace AMPAgentlessScraper; a refresh brings the tag into the state
        # and the next update would remove it (pulumi-aws amp.Scraper, "Ignoring changes to Prometheus Workspace
        # destination").
        ws = aws.amp.Workspace(f"{name}-prometheus", alias=f"{cfg.cluster.name}-prometheus",
                               opts=pulumi.ResourceOptions(parent=parent, ignore_changes=[SCRAPER_TAG_PATH]))
        workspace_arn, workspace_id = ws.arn, ws.id

    binding = _collector_access(name, parent, cluster)

    dcgm = install_dcgm_exporter(f"{name}-dcgm", pool, pulumi.ResourceOptions(parent=parent, provider=cluster.provider),
                                 hostengine_port=NODE_MONITORING_HOSTENGINE_PORT)
    # The scaler's alerts read kube-state-metrics' HPA series: installed here and scraped with the server.
    scaler = r.scaler_alerts(cfg.engine.name, cfg.namespace, cfg.autoscaling, cfg.workload)
    targets = {f"kimi-k3-{role}": t for role, t in server_targets(cfg, serving).items()}
    targets["dcgm-exporter"] = DCGM_TARGET
    if serving.gateway is not None:  # issue 38: the installed gateway's endpoint picker
        targets["kimi-k3-picker"] = picker_target(cfg, serving.gateway.picker_selector)
    scraped: list[pulumi.Resource] = [binding, dcgm]
    if scaler:
        scraped.append(install_kube_state_metrics(f"{name}-kube-state-metrics", cfg.namespace,
                                                  {SYSTEM_POOL_LABEL: "system"}, pulumi.ResourceOptions(
                                                      parent=parent, provider=cluster.provider,
                                                      depends_on=[serving.namespace, cluster.system_pool])))
        targets["kube-state-metrics"] = ksm_target(cfg.namespace)
    scraper = aws.amp.Scraper(
        f"{name}-scraper", alias=f"{cfg.cluster.name}-kimi-k3",
        source=aws.amp.ScraperSourceArgs(eks=aws.amp.ScraperSourceEksArgs(
            cluster_arn=cluster.arn, subnet_ids=cluster.private_subnet_ids,
            security_group_ids=cluster.cluster_security_group_id.apply(lambda sg: [sg]))),
        destination=aws.amp.ScraperDestinationArgs(amp=aws.amp.ScraperDestinationAmpArgs(workspace_arn=workspace_arn)),
        scrape_configuration=scrape_configuration(targets),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=scraped))
    aws.eks.AccessEntry(f"{name}-scraper-access", cluster_name=cluster.cluster_name,
                        principal_arn=scraper.role_arn.apply(_role_without_path), user_name=COLLECTOR_USER,
                        type="STANDARD", opts=pulumi.ResourceOptions(parent=parent))

    base = r.engine_alerts(cfg.engine.name, cfg.namespace, ready_budget_seconds=cfg.sizing.probe_budget_seconds,
                           stall_minutes=o.stall_minutes) + role_alerts(cfg) + (
        r.picker_alerts(cfg.namespace) if serving.gateway is not None else []) + r.gpu_alerts() + scaler

    def rule_file(end: str | None) -> str:
        alerts = base + ([r.capacity_alert(end, o.capacity_margin_hours)] if end else [])
        return yaml.safe_dump(r.prometheus_rule_groups(alerts, "kimi-k3"), sort_keys=False)

    data = pulumi.Output.from_input(capacity_end).apply(rule_file) if capacity_end is not None else rule_file(None)
    aws.amp.RuleGroupNamespace(f"{name}-alerts", name="kimi-k3", workspace_id=workspace_id, data=data,
                               opts=pulumi.ResourceOptions(parent=parent))
    names = [*base, *([r.capacity_alert("2000-01-01T00:00:00Z")] if capacity_end is not None else [])]
    return ({"monitoring": monitoring_output(
        service="Amazon Managed Service for Prometheus (managed collector)", engine=cfg.engine.name,
        disaggregated=cfg.topology.disaggregated, alerts=names,
        gpu_metrics=f"NVIDIA dcgm-exporter chart in namespace {DCGM_TARGET.namespace}",
        import_into="Amazon Managed Grafana (or any Grafana) with the workspace as an Amazon Managed Service for "
                    "Prometheus data source (SigV4): Dashboards > New > Import (docs/aws.md#monitoring)",
        workspace=workspace_arn, scraper=scraper.arn,
        notifications="add an alert manager definition (SNS receiver) to the workspace (docs/aws.md#monitoring)")},
            AmpWorkspace(arn=workspace_arn, id=workspace_id))

"""Each Kubernetes stack's monitoring: the cloud's managed Prometheus, scrape objects, alert rules, dashboard and
DCGM, the collector admitted by the server's NetworkPolicy, and the in-stack verify Job; all of it off with
``observability.enabled: false`` / ``verifyAfterDeploy: false``; an existing workspace used instead of a new one."""

import json
import re
from datetime import datetime
from typing import Any

import jsonschema
import pytest
import yaml

from k3infra.config import ConfigError
from k3infra.observability import dashboard
from k3infra.catalog.metrics import DCGM_EXPORTER_FIELDS, GKE_MANAGED_DCGM_FIELDS
from k3infra.offline import unwrap
from tests.support import ROOT, STACKS, plan

KUBERNETES_STACKS = [s for s in STACKS if s not in ("alicloud-pai", "aws-hyperpod")]
PROMETHEUS = json.loads((ROOT / "schemas" / "prometheus" / "prometheus.json").read_text())
RULES = json.loads((ROOT / "schemas" / "prometheus" / "prometheus.rules.json").read_text())
ENGINE_ALERTS = ["KimiK3ServerNotReady", "KimiK3NoTokensServed", "KimiK3KvCacheSaturated", "KimiK3PrefixCacheHitsCollapsed"]
GPU_ALERTS = ["KimiK3GpuXidError", "KimiK3GpuEccError"]
PICKER_ALERTS = ["KimiK3PickerFailingOpen", "KimiK3PickerNoEndpoint"]
"""Behind an inference gateway (issue 38)."""
GKE_GPU_ALERTS = ["KimiK3GpuMissing"]
ROLE_ALERTS = ["KimiK3KvTransferFailing", "KimiK3KvTransferSlow", "KimiK3KvTransferExpired", "KimiK3PrefillNotReady",
               "KimiK3PrefillQueueGrowing", "KimiK3DecodeNotReady", "KimiK3DecodeQueueGrowing"]
"""A disaggregated stack's (issue 37, observability.role_rules), after the engine's."""
ROLE_SCRAPES = {"gcp": "kubernetes:monitoring.googleapis.com/v1:PodMonitoring",
                "azure": "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"}
"""The scrape object a disaggregated stack adds for its prefill role (EKS: a job in the one scraper's configuration)."""
"""GKE's managed DCGM exports no XID or ECC field (catalog.metrics.GKE_MANAGED_DCGM_FIELDS)."""

MONITORING_TYPES = {
    "gcp": {"kubernetes:monitoring.googleapis.com/v1:PodMonitoring": 1, "kubernetes:monitoring.googleapis.com/v1:Rules": 1,
            "kubernetes:monitoring.googleapis.com/v1:ClusterRules": 1},
    "azure": {"azure-native:monitor:AzureMonitorWorkspace": 1, "azure-native:monitor:DataCollectionEndpoint": 1,
              "azure-native:monitor:DataCollectionRule": 1, "azure-native:monitor:DataCollectionRuleAssociation": 2,
              "azure-native:alertsmanagement:PrometheusRuleGroup": 1, "azure-native:dashboard:Dashboard": 1,
              "azure-native:dashboard:DashboardDefinition": 1, "kubernetes:azmonitoring.coreos.com/v1:PodMonitor": 2,
              "kubernetes:helm.sh/v4:Chart": 1, "kubernetes:core/v1:Namespace": 1},
    "aws": {"aws:amp/workspace:Workspace": 1, "aws:amp/scraper:Scraper": 1, "aws:eks/accessEntry:AccessEntry": 1,
            "aws:amp/ruleGroupNamespace:RuleGroupNamespace": 1,
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": 1,
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": 1, "kubernetes:helm.sh/v4:Chart": 1,
            "kubernetes:core/v1:Namespace": 1},
    "alicloud": {"alicloud:cs/kubernetesAddon:KubernetesAddon": 1, "kubernetes:monitoring.coreos.com/v1:PodMonitor": 1,
                 "alicloud:arms/prometheusAlertRule:PrometheusAlertRule": 6},
}
"""The children of each cloud's Monitoring component, by type: exactly these."""
PICKER_SCRAPES = {
    "gcp": {"kubernetes:monitoring.googleapis.com/v1:PodMonitoring": 1},
    "azure": {"kubernetes:azmonitoring.coreos.com/v1:PodMonitor": 1},
    "alicloud": {"kubernetes:monitoring.coreos.com/v1:PodMonitor": 1,
                 "alicloud:arms/prometheusAlertRule:PrometheusAlertRule": 2},
}
"""The Monitoring children a stack with the gateway adds for its picker."""


def cloud(stack: str) -> str:
    return stack.split("-")[0]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_every_kubernetes_stack_has_its_clouds_monitoring_and_the_verify_job(stack: str) -> None:
    p = plan(stack)
    rec = p.recording
    if cloud(stack) == "kubernetes":
        # prometheusOperator absent in both templates: no scrape object, and the output says so
        # (tests/kubernetes/test_platform.py: with it present, a PodMonitor).
        assert not [r for r in rec.resources if r.parent_type == "k3infra:index:Monitoring"]
        assert rec.outputs["monitoring"]["metrics"].startswith("none: kubernetes.prometheusOperator is absent")
        assert rec.one("kubernetes:batch/v1:Job", "k3-verify-job")
        return
    children = {}
    for r in rec.resources:
        if r.parent_type == "k3infra:index:Monitoring":
            children[r.type] = children.get(r.type, 0) + 1
    expected = dict(MONITORING_TYPES[cloud(stack)])
    # issue 38: the gateway's picker is scraped too, by a scrape object of its own (EKS: a job of the scraper's
    # configuration, tests/aws), and alerted on (ACK: a rule resource per alert)
    scraped_picker = p.config.endpoint.gateway
    if scraped_picker:
        for kind, count in PICKER_SCRAPES.get(cloud(stack), {}).items():
            expected[kind] += count
    roles = ROLE_ALERTS if p.config.topology.disaggregated else []
    if roles and cloud(stack) in ROLE_SCRAPES:
        expected[ROLE_SCRAPES[cloud(stack)]] += 1
    assert children == expected, stack
    out = rec.outputs["monitoring"]
    # a disaggregated (vLLM) stack's is the prefill/decode dashboard (tests/observability/test_pd_dashboard.py)
    board = f"kimi-k3-{p.config.engine.name}" + ("-pd" if stack.endswith("-pd") else "")
    assert {k: out["dashboard"][k] for k in ("file", "uid")} == {
        "file": f"k3infra/observability/dashboards/{board}.json", "uid": board}
    gpu = GKE_GPU_ALERTS if cloud(stack) == "gcp" else GPU_ALERTS
    picker = PICKER_ALERTS if scraped_picker else []
    assert out["alerts"][:len(ENGINE_ALERTS + roles + picker + gpu)] == ENGINE_ALERTS + roles + picker + gpu
    assert ("provisioned" in out["dashboard"]) == (cloud(stack) == "azure")
    job = rec.one("kubernetes:batch/v1:Job", "k3-verify-job")
    # after the server: every role's workload in a disaggregated stack (issue 37; the checklist crosses both roles)
    workloads = [r.name for r in rec.resources
                 if r.parent_type == "k3infra:index:ModelServer" and r.name.endswith("-workload")]
    assert workloads and all(any(d.endswith(f"::{w}") for d in job.dependencies) for w in workloads), (
        "the checklist runs after the server")
    pod = job.inputs["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == p.config.image
    assert pod["containers"][0]["command"] == ["python3", "-m", "k3infra.observability.checklist"]
    assert not pod["containers"][0]["resources"]["limits"].keys() & {"nvidia.com/gpu"}
    assert rec.outputs["verification"]["status"] == "pending"


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_gpu_alerts_read_only_fields_the_clusters_exporter_exports(stack: str) -> None:
    """Issue 36 item 12: an alert on a DCGM field the exporter does not export never fires. GKE's managed DCGM has
    no XID or ECC field; the chart k3infra installs elsewhere keeps dcgm-exporter's default counters."""
    rec = plan(stack).recording
    rules = json.dumps([unwrap(r.inputs) for r in rec.resources if r.parent_type == "k3infra:index:Monitoring"])
    read = set(re.findall(r"DCGM_FI_[A-Z0-9_]+", rules))
    exported = GKE_MANAGED_DCGM_FIELDS if cloud(stack) == "gcp" else DCGM_EXPORTER_FIELDS
    assert read <= exported, (stack, read - exported)
    if cloud(stack) == "gcp":
        p = plan(stack)
        gpus = p.config.total_nodes * p.config.accelerator.gpus_per_node
        (gpu_rules,) = rec.by_type("kubernetes:monitoring.googleapis.com/v1:ClusterRules")
        (group,) = unwrap(gpu_rules.inputs)["spec"]["groups"]
        assert [(a["alert"], a["expr"], a["for"]) for a in group["rules"]] == [
            ("KimiK3GpuMissing", f"count(DCGM_FI_DEV_GPU_UTIL) < {gpus}", "15m")]


@pytest.mark.parametrize("stack", ["aws-hyperpod", "alicloud-pai"])
def test_managed_platforms_use_their_own_metrics(stack: str) -> None:
    rec = plan(stack).recording
    assert not rec.by_type("k3infra:index:Monitoring")
    assert "monitoring" not in rec.outputs and "verification" not in rec.outputs


@pytest.mark.parametrize("stack", ["gcp-a4xmax", "azure-gb300", "aws-eks", "alicloud-ack"])  # one per cloud
def test_observability_off_removes_it_and_verify_off_removes_the_job(stack: str) -> None:
    rec = plan(stack, "observability={enabled: false}", "verifyAfterDeploy=false").recording
    assert not rec.by_type("k3infra:index:Monitoring") and not any(
        r.type in MONITORING_TYPES[cloud(stack)] and "monitoring" in r.name for r in rec.resources), stack
    assert "monitoring" not in rec.outputs and "verification" not in rec.outputs
    assert not rec.by_type("kubernetes:batch/v1:Job") or all("verify" not in j.name for j in rec.by_type(
        "kubernetes:batch/v1:Job"))
    policy = rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy")
    on = plan(stack).recording.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy")
    # The collectors' rule; on EKS the scraper's subnets, a rule of their own now that the gateway, not a load
    # balancer admitting those subnets, fronts the server.
    extra = 1
    assert len(policy.inputs["spec"]["ingress"]) == len(on.inputs["spec"]["ingress"]) - extra


def _namespaces(*names: str) -> list[dict]:
    return [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": n}}} for n in names]


# GKE: managed collection runs in gke-gmp-system (gmp-system on other clusters); admitting only gmp-system drops
# every scrape on GKE (the third review's finding on gcp-a4x-sglang).
COLLECTORS = {"gcp": _namespaces("gke-gmp-system", "gmp-system"), "azure": _namespaces("kube-system"),
              "alicloud": _namespaces("arms-prom")}


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_the_servers_network_policy_admits_the_collector_on_the_serving_port_only(stack: str) -> None:
    rec = plan(stack).recording
    # one policy per server: the aggregated one, or each role's in a disaggregated stack (issue 37)
    policies = [r for r in rec.by_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
                if r.parent_type == "k3infra:index:ModelServer"]
    assert [r.name for r in policies] == (["k3-server-network-policy"] if not stack.endswith("-pd")
                                          else ["k3-decode-network-policy", "k3-prefill-network-policy"])
    # the serving port by number (a decode's is its native sidecar's: the PD review, m1)
    http = [{"port": plan(stack).config.engine.port, "protocol": "TCP"}]
    for policy in policies:
        rules = policy.inputs["spec"]["ingress"]
        if cloud(stack) == "kubernetes":
            assert all("namespaceSelector" not in str(r) or "monitoring" not in str(r) for r in rules)  # no collector
            continue
        if cloud(stack) == "aws":
            # the scraper's interfaces are in the two private subnets it is given, which the internal load
            # balancer's rule already admits on the serving port: no second rule, and never the whole VPC
            admitted = [p["ipBlock"]["cidr"] for r in rules if r.get("ports") == http for p in r["from"]
                        if "ipBlock" in p]
            assert admitted == ["10.0.0.0/18", "10.0.64.0/18"]
            continue
        assert rules[-1] == {"from": COLLECTORS[cloud(stack)], "ports": http}


def test_gke_turns_on_managed_collection_and_managed_dcgm_and_rules_are_prometheus_rule_files() -> None:
    for stack in ("gcp-a4xmax", "gcp-a4-sglang", "gcp-a4x-sglang"):
        rec = plan(stack).recording
        mc = rec.one("gcp:container/cluster:Cluster").inputs["monitoringConfig"]
        assert mc == {"enableComponents": ["SYSTEM_COMPONENTS", "DCGM"], "managedPrometheus": {"enabled": True}}
        pm = rec.one("kubernetes:monitoring.googleapis.com/v1:PodMonitoring", "k3-monitoring-pod-monitoring").inputs
        assert pm["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
        leader = {"k3infra.dev/role": "leader"}  # both stacks run a LeaderWorkerSet: the leader serves the API
        assert leader.items() <= pm["spec"]["selector"]["matchLabels"].items()  # the pod serving the API
        picker = PICKER_ALERTS  # every GKE stack has the gateway
        for kind, names in (("Rules", ENGINE_ALERTS + picker), ("ClusterRules", GKE_GPU_ALERTS)):
            spec = rec.one(f"kubernetes:monitoring.googleapis.com/v1:{kind}").inputs["spec"]
            jsonschema.validate(spec, RULES)
            assert [x["alert"] for x in spec["groups"][0]["rules"]] == names
    off = plan("gcp-a4xmax", "observability={enabled: false}").recording.one("gcp:container/cluster:Cluster")
    assert off.inputs["monitoringConfig"]["enableComponents"] == ["SYSTEM_COMPONENTS"]


def test_server_not_ready_waits_out_the_start_up_budget() -> None:
    p = plan("gcp-a4xmax")
    spec = p.recording.one("kubernetes:monitoring.googleapis.com/v1:Rules").inputs["spec"]
    rule = spec["groups"][0]["rules"][0]
    assert rule["alert"] == "KimiK3ServerNotReady"
    assert rule["for"] == f"{-(-p.config.sizing.probe_budget_seconds // 60)}m"
    assert rule["expr"] == 'absent(vllm:num_requests_running{namespace="kimi-k3"})'


def test_aks_managed_prometheus_is_wired_the_way_the_aks_docs_require() -> None:
    p = plan("azure-gb300")
    rec = p.recording
    aks = rec.one("azure-native:containerservice:ManagedCluster").inputs
    assert aks["azureMonitorProfile"] == {"metrics": {"enabled": True}}
    name = f"MSProm-{p.config.azure.location}-{p.config.cluster.name}"
    dce = rec.one("azure-native:monitor:DataCollectionEndpoint").inputs
    dcr = rec.one("azure-native:monitor:DataCollectionRule").inputs
    assert dce["dataCollectionEndpointName"] == dcr["dataCollectionRuleName"] == name
    assert dcr["dataSources"]["prometheusForwarder"] == [
        {"name": "PrometheusDataSource", "streams": ["Microsoft-PrometheusMetrics"], "labelIncludeFilter": {}}]
    assert dcr["dataFlows"] == [{"destinations": ["MonitoringAccount1"], "streams": ["Microsoft-PrometheusMetrics"]}]
    assocs = {a.inputs["associationName"]: a.inputs for a in rec.by_type("azure-native:monitor:DataCollectionRuleAssociation")}
    assert set(assocs) == {name, "configurationAccessEndpoint"}
    assert "dataCollectionRuleId" in assocs[name] and "dataCollectionEndpointId" in assocs["configurationAccessEndpoint"]
    group = rec.one("azure-native:alertsmanagement:PrometheusRuleGroup").inputs
    assert len(group["scopes"]) == 2 and group["clusterName"] == p.config.cluster.name
    assert [x["alert"] for x in group["rules"]] == ENGINE_ALERTS + PICKER_ALERTS + GPU_ALERTS
    assert {x["severity"] for x in group["rules"]} == {0, 2}
    definition = rec.one("azure-native:dashboard:DashboardDefinition").inputs
    assert json.loads(definition["properties"]["serializedData"]) == dashboard.build(p.config.engine.name)
    monitors = {m.inputs["metadata"]["name"]: m.inputs for m in rec.by_type("kubernetes:azmonitoring.coreos.com/v1:PodMonitor")}
    assert {n: m["metadata"]["namespace"] for n, m in monitors.items()} == {
        "k3-monitoring-server": "kimi-k3", "k3-monitoring-picker": "kimi-k3", "k3-monitoring-dcgm": "k3-dcgm"}
    assert monitors["k3-monitoring-picker"]["spec"] == {  # the installed gateway's picker (issue 38)
        "selector": {"matchLabels": {"llm-d-router-gateway": "k3-gateway-epp"}},
        "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}]}
    chart = next(c for c in rec.by_type("kubernetes:helm.sh/v4:Chart") if c.name == "k3-monitoring-dcgm").inputs
    assert (chart["chart"], chart["version"], chart["values"]["serviceMonitor"]) == ("dcgm-exporter", "4.8.2",
                                                                                     {"enabled": False})


def test_aks_collection_names_are_cut_as_the_add_on_templates_cut_them() -> None:
    """Azure/prometheus-collector AddonTerraformTemplate/main.tf (and the Bicep and ARM templates): the DCE name is
    "MSProm-<location>-<cluster>" cut to 44 characters, the DCR's to 64; the association keeps the whole name."""
    cluster = "k3-" + "a" * 25 + "-b" + "c" * 20  # 50 characters: "MSProm-eastus2-" + it = 65
    rec = plan("azure-gb300", f"cluster={{name: {cluster}}}").recording
    whole = f"MSProm-eastus2-{cluster}"
    dce = rec.one("azure-native:monitor:DataCollectionEndpoint").inputs["dataCollectionEndpointName"]
    dcr = rec.one("azure-native:monitor:DataCollectionRule").inputs["dataCollectionRuleName"]
    assert (dce, len(dce)) == (whole[:44].rstrip("-"), 43)  # the 44th character is a hyphen: names end alphanumeric
    assert (dcr, len(dcr)) == (whole[:64], 64)
    assocs = {a.inputs["associationName"] for a in rec.by_type("azure-native:monitor:DataCollectionRuleAssociation")}
    assert assocs == {whole, "configurationAccessEndpoint"}


def test_aks_dcgm_exporter_runs_its_own_engine_off_nodes_with_aks_managed_gpu_stack() -> None:
    """AKS runs no DCGM on the driver-only profile, so the exporter embeds the engine; a node with AKS's managed GPU
    stack (label kubernetes.azure.com/dcgm-exporter) has AKS's engine and exporter, and this one stays off it."""
    chart = next(c for c in plan("azure-gb300").recording.by_type("kubernetes:helm.sh/v4:Chart")
                 if c.name == "k3-monitoring-dcgm").inputs
    assert "extraEnv" not in chart["values"]
    (term,) = chart["values"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "kubernetes.azure.com/dcgm-exporter", "operator": "DoesNotExist"}]}
    assert chart["values"]["nodeSelector"] == {"agentpool": "gb300pool"}


def test_eks_scraper_configuration_and_rules_are_valid_prometheus_files() -> None:
    p = plan("aws-eks")
    rec = p.recording
    scraper = rec.one("aws:amp/scraper:Scraper").inputs
    config = yaml.safe_load(scraper["scrapeConfiguration"])
    jsonschema.validate(config, PROMETHEUS)
    assert set(config) == {"global", "scrape_configs"}
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert set(jobs) == {"kimi-k3-server", "kimi-k3-picker", "dcgm-exporter"}
    picker = {tuple(r["source_labels"]): r["regex"] for r in jobs["kimi-k3-picker"]["relabel_configs"]
              if r.get("action") == "keep"}
    assert re.fullmatch(picker[("__meta_kubernetes_pod_label_llm_d_router_gateway",)], "k3-gateway-epp")
    assert picker[("__meta_kubernetes_pod_container_port_name",)] == "metrics"
    keep = {tuple(r["source_labels"]): r["regex"] for r in jobs["kimi-k3-server"]["relabel_configs"] if r.get("action") == "keep"}
    assert keep[("__meta_kubernetes_pod_label_k3infra_dev_role",)] == "leader"
    assert keep[("__meta_kubernetes_pod_container_port_name",)] == "http"
    assert jobs["kimi-k3-server"]["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": ["kimi-k3"]}}]
    assert len(scraper["source"]["eks"]["subnetIds"]) == 2, "the AMP scraper needs subnets in two zones"
    entry = rec.one("aws:eks/accessEntry:AccessEntry").inputs
    assert entry["userName"] == "aps-collector-user" and "/aws-service-role/" not in entry["principalArn"]
    assert entry["principalArn"].startswith("arn:aws:iam::123456789012:role/AWSServiceRoleForAmazonPrometheusScraper_")
    binding = rec.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding").inputs
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "aps-collector-user"}]
    data = yaml.safe_load(unwrap(rec.one("aws:amp/ruleGroupNamespace:RuleGroupNamespace").inputs["data"]))
    jsonschema.validate(data, RULES)
    capacity = data["groups"][0]["rules"][-1]
    assert capacity["alert"] == "KimiK3CapacityWindowEnding"
    end = rec.outputs["capacityEndTime"]
    threshold = int(datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp()) - 24 * 3600
    assert capacity["expr"] == f"vector(time()) > {threshold}"


def test_ack_installs_the_arms_prometheus_add_on_and_its_alert_rules() -> None:
    rec = plan("alicloud-ack").recording
    addons = {a.inputs["name"] for a in rec.by_type("alicloud:cs/kubernetesAddon:KubernetesAddon")}
    assert "arms-prometheus" in addons
    rules = rec.by_type("alicloud:arms/prometheusAlertRule:PrometheusAlertRule")
    assert sorted(r.inputs["prometheusAlertRuleName"] for r in rules) == sorted(ENGINE_ALERTS + PICKER_ALERTS + GPU_ALERTS)
    assert all(r.inputs["notifyType"] == "ALERT_MANAGER" and int(r.inputs["duration"]) >= 1 for r in rules)
    pm = rec.one("kubernetes:monitoring.coreos.com/v1:PodMonitor", "k3-monitoring-pod-monitor").inputs
    assert pm["spec"]["podMetricsEndpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
    picker = rec.one("kubernetes:monitoring.coreos.com/v1:PodMonitor", "k3-monitoring-picker-pod-monitor").inputs
    assert picker["spec"]["selector"] == {"matchLabels": {"llm-d-router-gateway": "k3-gateway-epp"}}


WORKSPACES = {
    "aws-eks": "arn:aws:aps:us-west-2:123456789012:workspace/ws-11111111-2222-3333-4444-555555555555",
    "azure-gb300": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-obs/providers/"
                   "Microsoft.Monitor/accounts/shared-prometheus",
}


@pytest.mark.parametrize("stack", sorted(WORKSPACES))
def test_an_existing_workspace_is_used_instead_of_a_new_one(stack: str) -> None:
    ws = WORKSPACES[stack]
    rec = plan(stack, f"observability={{workspace: '{ws}'}}").recording
    assert not rec.by_type("aws:amp/workspace:Workspace") and not rec.by_type("azure-native:monitor:AzureMonitorWorkspace")
    assert rec.outputs["monitoring"]["workspace"] == ws
    if stack == "aws-eks":
        assert rec.one("aws:amp/scraper:Scraper").inputs["destination"]["amp"]["workspaceArn"] == ws
        assert rec.one("aws:amp/ruleGroupNamespace:RuleGroupNamespace").inputs["workspaceId"] == ws.rsplit("/", 1)[1]
    else:
        dcr = rec.one("azure-native:monitor:DataCollectionRule").inputs
        assert dcr["destinations"]["monitoringAccounts"][0]["accountResourceId"] == ws


@pytest.mark.parametrize("stack, value, says", [
    ("gcp-a4xmax", "projects/x", "gcp has no workspace to name"),
    ("alicloud-ack", "arms-1", "alicloud has no workspace to name"),
    ("aws-eks", "ws-123", "an Amazon Managed Service for Prometheus workspace ARN"),
    ("azure-gb300", "/subscriptions/x", "an Azure Monitor workspace id"),
])
def test_a_workspace_the_cloud_cannot_use_is_rejected_with_what_is_allowed(stack: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        plan(stack, f"observability={{workspace: '{value}'}}")
    (problem,) = [x for x in e.value.problems if x.key == "k3infra:observability.workspace"]
    assert says in problem.reason or says in problem.allowed


def test_a_new_rollout_replaces_the_verify_job_and_an_unchanged_one_keeps_it() -> None:
    def revision(*sets: str) -> Any:
        job = plan("gcp-a4xmax", *sets).recording.one("kubernetes:batch/v1:Job", "k3-verify-job")
        return job.inputs["spec"]["template"]["metadata"]["annotations"]["k3infra.dev/revision"]

    assert revision() == revision("weights.retainOnDestroy=false")
    assert revision() != revision("memoryFraction=0.88")
    assert revision() != revision("image=docker.io/vllm/vllm-openai:v0.33.0", "imagePlatforms=[arm64, amd64]")


def test_the_verify_job_reads_the_api_key_from_its_secret_as_a_file() -> None:
    rec = plan("gcp-a4xmax", "apiKey=sk-test-key").recording
    pod = rec.one("kubernetes:batch/v1:Job", "k3-verify-job").inputs["spec"]["template"]["spec"]
    assert {"name": "api-key", "secret": {"secretName": "k3-api-key"}} in pod["volumes"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["K3_API_KEY_FILE"] == "/var/run/k3infra/api-key/api-key" and "K3_API_KEY" not in env
    assert env["K3_BASE_URL"] == "http://k3-server.kimi-k3.svc.cluster.local:8000"
    role = rec.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "k3-verify-role").inputs
    assert role["rules"] == [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "patch"],
                              "resourceNames": ["k3-verify"]}]


def test_gke_scrapes_the_gateway_s_picker_on_its_metrics_port_without_a_token() -> None:
    """llm-d-router v0.10.0 routerlib: the EPP pods carry ``llm-d-router-gateway: <release>-epp`` and serve /metrics on
    the container port ``metrics``; GMP's collectors send no Kubernetes token, so the chart's metrics auth is off."""
    rec = plan("gcp-a4xmax").recording
    pm = rec.one("kubernetes:monitoring.googleapis.com/v1:PodMonitoring", "k3-monitoring-picker-monitoring").inputs
    assert pm["metadata"]["namespace"] == "kimi-k3"
    assert pm["spec"] == {"selector": {"matchLabels": {"llm-d-router-gateway": "k3-gateway-epp"}},
                          "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}]}
    chart = rec.one("kubernetes:helm.sh/v4:Chart", "k3-gateway-epp").inputs
    assert chart["name"] == "k3-gateway" and chart["values"]["router"]["monitoring"] == {
        "prometheus": {"auth": {"enabled": False}}}
    rules = rec.one("kubernetes:monitoring.googleapis.com/v1:Rules").inputs["spec"]["groups"][0]["rules"]
    exprs = {x["alert"]: x["expr"] for x in rules}
    assert exprs["KimiK3PickerFailingOpen"] == 'absent(llm_d_epp_ready_endpoints{namespace="kimi-k3"})'
    assert not [r for r in plan("gcp-a4-sglang", "endpoint.gateway=false").recording.resources
                if r.name == "k3-monitoring-picker-monitoring"], "no gateway, no picker to scrape"

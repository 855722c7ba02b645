"""Issue 27: k3infra:autoscaling. Each platform's scaler as rendered (validated against its CRD), what a new replica
and the first request after idle cost, and the bad combinations rejected with key, value and what is allowed."""

import json
from typing import Any

import pytest

from k3infra import offline, planning
from k3infra.catalog.autoscaling import ARMS_INSTANCE_IS_CLUSTER_ID, ARMS_INSTANCE_VERSION
from k3infra.config import ConfigError
from k3infra.sizing import IMAGE_PULL_SECONDS, SCHEDULING_SECONDS
from tests.support import ROOT, STACKS, plan
from tests.validation import crd_errors

PAI_ZERO = ("autoscaling.enabled=true", "autoscaling.scaleToZero=true")
AMP = "arn:aws:aps:us-east-1:123456789012:workspace/ws-0123abcd-4567-89ef"


def _resources(p: planning.Plan, type_suffix: str) -> list[dict[str, Any]]:
    return [r for r in p.to_json()["resources"] if r["type"].endswith(type_suffix)]


def _problems(stack: str, *sets: str) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load(stack, sets, root=ROOT))
    return [(x.key, x.given, x.allowed) for x in e.value.problems]


def _service_config(p: planning.Plan) -> dict[str, Any]:
    (svc,) = _resources(p, "alicloud:pai/service:Service")
    return json.loads(svc["inputs"]["serviceConfig"])


def test_pai_eas_autoscaler_and_scale_to_zero_in_the_service_definition():
    p = plan("alicloud-pai", *PAI_ZERO)
    a = p.config.autoscaling
    assert a is not None and a.enabled and a.scale_to_zero
    start = SCHEDULING_SECONDS + IMAGE_PULL_SECONDS + p.config.sizing.load.seconds + p.config.engine.warmup_seconds
    delay = -(-2 * start // 60) * 60
    assert _service_config(p)["autoscaler"] == {
        "min": 0, "max": 1, "scaleStrategies": [{"metricName": "qps", "threshold": 1.0}],
        "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0},
                     "scaleDown": {"stabilizationWindowSeconds": delay},
                     "onZero": {"scaleDownGracePeriodSeconds": delay}}}
    summary = p.to_json()["autoscaling"]
    assert summary["newReplica"]["totalSeconds"] == start
    assert summary["firstRequestAfterIdleSeconds"] == start + 30
    assert _service_config(p)["metadata"]["instance"] == 1


def test_plan_prints_the_eas_settings_and_the_first_request_wait():
    from typer.testing import CliRunner

    from k3infra.cli import app

    out = CliRunner().invoke(app, ["plan", "alicloud-pai", "--set", "autoscaling.enabled=true", "--set",
                                   "autoscaling.scaleToZero=true"]).output
    flat = " ".join(out.replace("│", " ").split())
    assert "EAS horizontal auto scaling" in flat
    assert "0-1 replica(s)" in flat
    assert "the first request after idle waits 59 min 6 s" in flat


@pytest.mark.parametrize("stack", STACKS)
def test_off_by_default_and_every_stack_says_its_scaler_or_why_none(stack):
    p = plan(stack)
    a = p.config.autoscaling
    assert a is not None and not a.enabled
    assert "autoscaling" not in p.to_json()  # the JSON plan (and the goldens) are as before the block existed
    assert a.min_replicas == a.max_replicas == p.config.replicas
    assert a.why_none or a.scaler.mechanism


def test_hyperpod_autoscaling_spec_matches_the_operator_crd():
    p = plan("aws-hyperpod", "autoscaling.enabled=true", f"observability.workspace={AMP}")
    (iec,) = _resources(p, "InferenceEndpointConfig")
    doc = {"apiVersion": iec["inputs"]["apiVersion"], "kind": iec["inputs"]["kind"],
           "metadata": iec["inputs"]["metadata"], "spec": iec["inputs"]["spec"]}
    assert crd_errors(doc) == []
    spec = doc["spec"]["autoScalingSpec"]
    assert spec["prometheusTrigger"] == {
        "name": "engine-queue", "metricType": "Average", "targetValue": 4.0,
        "serverAddress": "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123abcd-4567-89ef",
        "query": 'sum(vllm:num_requests_waiting{namespace="kimi-k3"})'}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (1, p.config.replicas)
    assert doc["metadata"]["annotations"]["pulumi.com/waitFor"] == \
        "jsonpath={.status.deploymentStatus.status.availableReplicas}"


def test_existing_cluster_scaled_object_matches_keda_crd_and_targets_the_workload():
    p = plan("kubernetes-b300", "autoscaling.enabled=true", "kubernetes.prometheusOperator=present", "replicas=3",
             "autoscaling.signal=kvCache")
    (so,) = _resources(p, "keda.sh/v1alpha1:ScaledObject")
    assert crd_errors(so["inputs"]) == []
    (workload,) = _resources(p, "apps/v1:Deployment")
    assert so["inputs"]["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                                      "name": workload["inputs"]["metadata"]["name"]}
    assert so["inputs"]["spec"]["triggers"] == [{
        "type": "prometheus", "name": "engine-kvcache", "metricType": "Value",
        "metadata": {"serverAddress": "http://prometheus-operated.monitoring.svc:9090",
                     "query": 'avg(vllm:kv_cache_usage_perc{namespace="kimi-k3"})', "threshold": "0.8"}}]
    assert (so["inputs"]["spec"]["minReplicaCount"], so["inputs"]["spec"]["maxReplicaCount"]) == (1, 3)
    assert workload["inputs"]["spec"]["replicas"] == 1
    assert workload["options"]["ignoreChanges"] == ["spec.replicas"]


@pytest.mark.parametrize("stack, sets, expected", [
    ("kubernetes-b300", ("autoscaling.enabled=true", "autoscaling.scaleToZero=true",
                         "kubernetes.prometheusOperator=present"),
     [("k3infra:autoscaling.scaleToZero", "true",
       "false (minReplicas 1 or more); scale-to-zero is PAI-EAS's (its gateway wakes the service)")]),
    ("alicloud-pai", ("autoscaling.enabled=true", "autoscaling.maxReplicas=2"),
     [("k3infra:autoscaling.maxReplicas", "2", "at most 1, or more reserved capacity (k3infra:replicas)")]),
    ("alicloud-pai", ("autoscaling.enabled=true", "autoscaling.signal=queue", "autoscaling.minReplicas=0"),
     [("k3infra:autoscaling.minReplicas", "0", "1 or more, or scaleToZero: true (PAI-EAS)"),
      ("k3infra:autoscaling.signal", "'queue'", "rps, gpu")]),
    ("aws-hyperpod", ("autoscaling.enabled=true",),
     [("k3infra:observability.workspace", "nothing", "the workspace's ARN, arn:aws:aps:REGION:ACCOUNT:workspace/ws-...")]),
    ("kubernetes-b300", ("autoscaling.enabled=true", "autoscaling.signal=gpu"),
     [("k3infra:autoscaling.signal", "'gpu'", "queue, kvCache, rps"),
      ("k3infra:kubernetes.prometheusOperator", "'absent'", "present")]),
    ("alicloud-ack", ("autoscaling.enabled=true", "observability.enabled=false"),
     [("k3infra:observability.enabled", "false", "true")]),
    ("alicloud-ack", ("autoscaling.enabled=true", "replicas=2", "autoscaling.maxReplicas=3"),
     [("k3infra:autoscaling.maxReplicas", "3", "at most 2, or more reserved capacity (k3infra:replicas)")]),
    ("aws-eks", ("autoscaling.enabled=true", "observability.enabled=false"),
     [("k3infra:observability.enabled", "false", "true")]),
    ("azure-gb300", ("autoscaling.enabled=true", "observability.enabled=false"),
     [("k3infra:observability.enabled", "false", "true")]),
    ("azure-gb300", ("autoscaling.enabled=true", "replicas=2", "azure.quotaVcpus=512", "autoscaling.minReplicas=3"),
     [("k3infra:autoscaling.minReplicas", "3", "0 to 2")]),
    ("kubernetes-b300", ("autoscaling.enabled=true", "kubernetes.prometheusOperator=present",
                         "autoscaling.signal=kvCache", "autoscaling.target=80"),
     [("k3infra:autoscaling.target", "80.0", "0.05 to 1")]),
])
def test_bad_combinations_are_rejected_with_key_value_and_allowed(stack, sets, expected):
    assert _problems(stack, *sets) == expected


def test_max_over_the_reserved_capacity_names_both_numbers():
    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load("alicloud-pai", ("autoscaling.enabled=true", "autoscaling.maxReplicas=2"),
                                        root=ROOT))
    (problem,) = e.value.problems
    assert problem.reason == ("2 replica(s) of 3 node(s) need 6 nodes, and the reserved capacity holds 1 replica(s) "
                              "(3 nodes, k3infra:replicas)")


def test_pai_resource_machines_raise_the_ceiling():
    p = plan("alicloud-pai", "autoscaling.enabled=true", "alicloud.paiResourceMachines=6")
    a = p.config.autoscaling
    assert a is not None and (a.capacity_replicas, a.max_replicas) == (2, 2)
    assert _service_config(p)["autoscaler"]["max"] == 2
    # sized as if at the maximum: no room beside two 3-machine units in 6 machines, so updates stop one first
    assert _service_config(p)["metadata"]["rolling_strategy"] == {"max_surge": 0, "max_unavailable": 1}


def test_existing_cluster_scaler_alerts_as_a_prometheus_rule():
    p = plan("kubernetes-b300", "autoscaling.enabled=true", "kubernetes.prometheusOperator=present")
    (rule,) = _resources(p, "monitoring.coreos.com/v1:PrometheusRule")
    assert crd_errors(rule["inputs"]) == []
    (group,) = rule["inputs"]["spec"]["groups"]
    by_name = {r["alert"]: r for r in group["rules"]}
    assert list(by_name) == ["KimiK3ReplicasWantedNotServing", "KimiK3ReplicasAtMaximum", "KimiK3ScalingThrash"]
    hpa = '{namespace="kimi-k3",horizontalpodautoscaler="keda-hpa-k3-scaler"}'
    wanted = by_name["KimiK3ReplicasWantedNotServing"]
    assert wanted["expr"] == (f"max(kube_horizontalpodautoscaler_status_desired_replicas{hpa}) > "
                              '(count(vllm:num_requests_running{namespace="kimi-k3"}) or vector(0))')
    start = p.config.autoscaling.start.total_seconds  # type: ignore[union-attr]
    assert wanted["for"] == f"{-(-int(1.5 * start) // 60)}m"
    assert by_name["KimiK3ReplicasAtMaximum"]["for"] == "30m"
    assert p.to_json()["outputs"]["monitoring"]["alerts"] == list(by_name)


def test_no_scaler_rules_without_autoscaling():
    p = plan("kubernetes-b300", "kubernetes.prometheusOperator=present")
    assert _resources(p, "PrometheusRule") == [] and _resources(p, "ScaledObject") == []


def test_eks_installs_keda_and_scales_on_the_amp_workspace():
    from k3infra import webhook_reach

    p = plan("aws-eks", "autoscaling.enabled=true", "replicas=2")
    (so,) = _resources(p, "keda.sh/v1alpha1:ScaledObject")
    (auth,) = _resources(p, "keda.sh/v1alpha1:TriggerAuthentication")
    assert crd_errors(so["inputs"]) == [] and crd_errors(auth["inputs"]) == []
    assert auth["inputs"]["spec"] == {"podIdentity": {"provider": "aws"}}
    (trigger,) = so["inputs"]["spec"]["triggers"]
    assert trigger["authenticationRef"] == {"name": auth["inputs"]["metadata"]["name"]}
    assert trigger["metadata"]["awsRegion"] == p.config.region
    assert trigger["metadata"]["serverAddress"].startswith(f"https://aps-workspaces.{p.config.region}.amazonaws.com"
                                                           "/workspaces/ws-")
    (chart,) = [r for r in _resources(p, "helm.sh/v4:Chart") if r["inputs"]["chart"] == "keda"]
    assert (chart["inputs"]["version"], chart["inputs"]["values"]) == ("2.20.2", {"nodeSelector": {"k3infra.io/pool":
                                                                                                   "system"}})
    (identity,) = [r for r in _resources(p, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
                   if r["name"] == "k3-keda-identity"]
    assert [identity["inputs"][k] for k in ("namespace", "serviceAccount")] == ["keda", "keda-operator"]
    (policy,) = [r for r in _resources(p, "aws:iam/rolePolicy:RolePolicy") if r["name"] == "k3-keda-amp-query"]
    (statement,) = json.loads(policy["inputs"]["policy"])["Statement"]
    assert statement["Action"] == ["aps:QueryMetrics"] and statement["Resource"].startswith("arn:aws:aps:")
    keda_hooks = [(w, port) for by, w, port in webhook_reach.inventory(p.recording.resources) if by == "k3-keda"]
    assert ("v1beta1.external.metrics.k8s.io (APIService)", 6443) in keda_hooks and len(keda_hooks) == 7
    assert webhook_reach.unreachable(p.config.cloud, p.recording.resources) == []


def test_gke_installs_keda_scaling_whole_groups_on_managed_prometheus():
    from k3infra import webhook_reach

    p = plan("gcp-a4-sglang", "autoscaling.enabled=true", "replicas=2", "gcp.checkReservation=false")
    (so,) = _resources(p, "keda.sh/v1alpha1:ScaledObject")
    (auth,) = _resources(p, "keda.sh/v1alpha1:TriggerAuthentication")
    assert crd_errors(so["inputs"]) == [] and crd_errors(auth["inputs"]) == []
    assert auth["inputs"]["spec"] == {"podIdentity": {"provider": "gcp"}}
    (lws,) = _resources(p, "leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
    assert so["inputs"]["spec"]["scaleTargetRef"] == {"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                                      "kind": "LeaderWorkerSet",
                                                      "name": lws["inputs"]["metadata"]["name"]}
    assert lws["inputs"]["spec"]["replicas"] == 1 and lws["options"]["ignoreChanges"] == ["spec.replicas"]
    (trigger,) = so["inputs"]["spec"]["triggers"]
    assert trigger["metadata"] == {
        "serverAddress": "https://monitoring.googleapis.com/v1/projects/my-project/location/global/prometheus",
        "query": 'sum(sglang:num_queue_reqs{cluster="k3-gcp-a4-sglang",namespace="kimi-k3"})', "threshold": "4"}
    (grant,) = [r for r in _resources(p, "gcp:projects/iAMMember:IAMMember") if r["name"] == "k3-keda-metrics-reader"]
    assert grant["inputs"]["role"] == "roles/monitoring.viewer"
    assert grant["inputs"]["member"].endswith("/subject/ns/keda/sa/keda-operator")
    (rule,) = [r for r in _resources(p, "gcp:compute/firewall:Firewall") if r["name"] == "k3-control-plane-webhooks"]
    assert rule["inputs"]["allows"] == [{"protocol": "tcp", "ports": ["6443", "9443"]}]
    assert webhook_reach.unreachable(p.config.cloud, p.recording.resources) == []


def _inventory(p: planning.Plan) -> set[tuple[str, str]]:
    return {(r["type"], r["name"]) for r in p.to_json()["resources"]}


AKS = ("autoscaling.enabled=true", "replicas=2", "azure.quotaVcpus=512")


def test_aks_runs_the_keda_addon_with_a_workload_identity_on_the_monitor_workspace():
    p, fixed = plan("azure-gb300", *AKS), plan("azure-gb300", "replicas=2", "azure.quotaVcpus=512")
    assert _inventory(p) - _inventory(fixed) == {
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-keda-identity"),
        ("azure-native:managedidentity:FederatedIdentityCredential", "k3-keda-federation"),
        ("azure-native:authorization:RoleAssignment", "k3-keda-metrics-reader"),
        ("kubernetes:apps/v1:DeploymentPatch", "k3-keda-operator-restart"),
        ("kubernetes:keda.sh/v1alpha1:TriggerAuthentication", "k3-keda-azure"),
        ("kubernetes:keda.sh/v1alpha1:ScaledObject", "k3-scaler"),
    }
    # the second group's LeaderWorkerSet and ComputeDomain are gone: one LWS, its groups sharing one domain; and
    # the disruption budget, as on every platform, since the workload starts at the floor of one replica
    assert _inventory(fixed) - _inventory(p) == {
        ("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "k3-server-workload-1"),
        ("kubernetes:resource.nvidia.com/v1beta1:ComputeDomain", "k3-server-nvlink-1"),
        ("kubernetes:policy/v1:PodDisruptionBudget", "k3-server-pdb"),
    }
    (cluster,) = _resources(p, "containerservice:ManagedCluster")
    assert cluster["inputs"]["workloadAutoScalerProfile"] == {"keda": {"enabled": True}}
    (fixed_cluster,) = _resources(fixed, "containerservice:ManagedCluster")
    assert "workloadAutoScalerProfile" not in fixed_cluster["inputs"]
    (identity,) = [r for r in _resources(p, "UserAssignedIdentity") if r["name"] == "k3-keda-identity"]
    (credential,) = [r for r in _resources(p, "FederatedIdentityCredential") if r["name"] == "k3-keda-federation"]
    assert (credential["inputs"]["subject"], credential["inputs"]["audiences"],
            credential["inputs"]["resourceName"]) == ("system:serviceaccount:kube-system:keda-operator",
                                                      ["api://AzureADTokenExchange"], identity["inputs"]["resourceName"])
    (workspace,) = _resources(p, "monitor:AzureMonitorWorkspace")
    (grant,) = [r for r in _resources(p, "RoleAssignment") if r["name"] == "k3-keda-metrics-reader"]
    assert grant["inputs"]["roleDefinitionId"].endswith("/roleDefinitions/b0d8363b-8ddd-447d-831f-62ca05bff136")
    assert grant["inputs"]["scope"] == ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/"
                                        "rg-k3-azure-gb300/providers/Microsoft.Monitor/accounts/"
                                        f"{workspace['inputs']['azureMonitorWorkspaceName']}")
    (so,) = _resources(p, "keda.sh/v1alpha1:ScaledObject")
    (auth,) = _resources(p, "keda.sh/v1alpha1:TriggerAuthentication")
    assert crd_errors(so["inputs"]) == [] and crd_errors(auth["inputs"]) == []
    assert auth["inputs"]["spec"]["podIdentity"]["provider"] == "azure-workload"
    # the offline client id of the identity (offline_state.azure: a UUID from its resource group and name)
    from k3infra.offline_state.azure import user_assigned_identity
    assert auth["inputs"]["spec"]["podIdentity"]["identityId"] == user_assigned_identity(
        identity["name"], identity["inputs"])["clientId"]
    (trigger,) = so["inputs"]["spec"]["triggers"]
    assert trigger["authenticationRef"] == {"name": "k3-keda-azure"}
    assert trigger["metadata"]["query"] == 'sum(vllm:num_requests_waiting{namespace="kimi-k3"})'
    assert trigger["metadata"]["serverAddress"].startswith("https://k3-azure-gb300-prometheus-")
    assert trigger["metadata"]["serverAddress"].endswith(".eastus2.prometheus.monitor.azure.com")


def test_aks_gb300_scales_one_leader_worker_set_by_whole_groups_on_one_compute_domain():
    # a floor of two groups: without a shared domain they would be two LeaderWorkerSets, which KEDA cannot scale
    p = plan("azure-gb300", "autoscaling.enabled=true", "replicas=3", "azure.quotaVcpus=768",
             "autoscaling.minReplicas=2")
    (lws,) = _resources(p, "leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
    (domain,) = [d for d in _resources(p, "resource.nvidia.com/v1beta1:ComputeDomain")
                 if d["name"].startswith("k3-server")]  # the fabric check has its own, one per group it checks
    (so,) = _resources(p, "keda.sh/v1alpha1:ScaledObject")
    spec = so["inputs"]["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                                      "name": lws["inputs"]["metadata"]["name"]}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2, 3)
    assert (lws["inputs"]["spec"]["replicas"], lws["inputs"]["spec"]["leaderWorkerTemplate"]["size"]) == (2, 2)
    assert lws["options"]["ignoreChanges"] == ["spec.replicas"]
    channel = domain["inputs"]["spec"]["channel"]["resourceClaimTemplate"]["name"]
    for role in ("leaderTemplate", "workerTemplate"):
        claims = lws["inputs"]["spec"]["leaderWorkerTemplate"][role]["spec"]["resourceClaims"]
        assert {"name": "nvlink-channel", "resourceClaimTemplateName": channel} in claims
    assert crd_errors(lws["inputs"]) == []


def test_aks_maximum_must_fit_the_reserved_nodes():
    problems = _problems("azure-gb300", "autoscaling.enabled=true", "replicas=2", "azure.quotaVcpus=512",
                         "autoscaling.maxReplicas=3")
    assert problems == [("k3infra:autoscaling.maxReplicas", "3",
                         "at most 2, or more reserved capacity (k3infra:replicas)")]


def test_ack_installs_keda_and_scales_on_arms_prometheus_with_a_read_only_key():
    from k3infra import webhook_reach

    p, fixed = plan("alicloud-ack", "autoscaling.enabled=true", "replicas=2"), plan("alicloud-ack", "replicas=2")
    assert _inventory(p) - _inventory(fixed) == {
        ("alicloud:ram/user:User", "k3-keda-user"),
        ("alicloud:ram/userPolicyAttachment:UserPolicyAttachment", "k3-keda-metrics-read"),
        ("alicloud:ram/accessKey:AccessKey", "k3-keda-key"),
        ("kubernetes:core/v1:Secret", "k3-keda-arms-credentials"),
        ("kubernetes:core/v1:Namespace", "k3-keda-namespace"),
        ("kubernetes:helm.sh/v4:Chart", "k3-keda"),
        ("kubernetes:keda.sh/v1alpha1:TriggerAuthentication", "k3-keda-arms"),
        ("kubernetes:keda.sh/v1alpha1:ScaledObject", "k3-scaler"),
    } | ACK_SCALER_MONITORING
    (attachment,) = _resources(p, "ram/userPolicyAttachment:UserPolicyAttachment")
    (user,) = _resources(p, "ram/user:User")
    assert attachment["inputs"] == {"policyName": "AliyunPrometheusMetricReadAccess", "policyType": "System",
                                    "userName": user["inputs"]["name"]}
    (secret,) = [r for r in _resources(p, "core/v1:Secret") if r["name"] == "k3-keda-arms-credentials"]
    assert secret["inputs"]["stringData"] == "[secret]"  # the AccessKey pair never appears in the plan
    from k3infra.offline import unwrap
    from k3infra.offline_state.alicloud import access_key
    made = access_key("k3-keda-key", {})
    assert unwrap(p.recording.one("kubernetes:core/v1:Secret", "k3-keda-arms-credentials").inputs)["stringData"] == {
        "username": made["id"], "password": made["secret"]}
    (so,) = _resources(p, "keda.sh/v1alpha1:ScaledObject")
    (auth,) = _resources(p, "keda.sh/v1alpha1:TriggerAuthentication")
    assert crd_errors(so["inputs"]) == [] and crd_errors(auth["inputs"]) == []
    assert auth["inputs"]["spec"] == {"secretTargetRef": [
        {"parameter": "username", "name": "k3-keda-arms-credentials", "key": "username"},
        {"parameter": "password", "name": "k3-keda-arms-credentials", "key": "password"}]}
    (trigger,) = so["inputs"]["spec"]["triggers"]
    assert trigger["authenticationRef"] == {"name": "k3-keda-arms"}
    assert trigger["metadata"]["authModes"] == "basic"
    # the instance's internal HTTP API URL, looked up by the cluster's id after the arms-prometheus add-on
    (lookup,) = [i for i in p.recording.invocations if i.token == "alicloud:arms/getPrometheus:getPrometheus"]
    (cluster_id,) = lookup.args["ids"]
    assert lookup.args["enableDetails"] is True
    assert trigger["metadata"]["serverAddress"].startswith("http://ap-southeast-1-intranet.arms.aliyuncs.com:9090/")
    assert trigger["metadata"]["serverAddress"].endswith(f"/{cluster_id}/ap-southeast-1")
    (lws,) = _resources(p, "leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
    assert so["inputs"]["spec"]["scaleTargetRef"]["name"] == lws["inputs"]["metadata"]["name"]
    assert (so["inputs"]["spec"]["minReplicaCount"], so["inputs"]["spec"]["maxReplicaCount"]) == (1, 2)
    (chart,) = [r for r in _resources(p, "helm.sh/v4:Chart") if r["inputs"]["chart"] == "keda"]
    assert chart["inputs"]["values"] == {"nodeSelector": {"k3infra.io/pool": "system"}}
    assert webhook_reach.unreachable(p.config.cloud, p.recording.resources) == []
    assert [w for w in p.warnings if "UNCONFIRMED" in w] == [
        "autoscaling on ARMS Prometheus: " + f for f in (ARMS_INSTANCE_IS_CLUSTER_ID, ARMS_INSTANCE_VERSION)]


SCALER_ALERTS = ["KimiK3ReplicasWantedNotServing", "KimiK3ReplicasAtMaximum", "KimiK3ScalingThrash"]
HPA = '{namespace="kimi-k3",horizontalpodautoscaler="keda-hpa-k3-scaler"}'


def test_gke_scaler_alerts_in_the_namespaced_rules_on_gkes_hpa_metrics():
    sets = ("replicas=2", "gcp.checkReservation=false")
    p, fixed = plan("gcp-a4-sglang", "autoscaling.enabled=true", *sets), plan("gcp-a4-sglang", *sets)
    (rules,) = _resources(p, "monitoring.googleapis.com/v1:Rules")
    assert crd_errors(rules["inputs"]) == []
    (fixed_rules,) = _resources(fixed, "monitoring.googleapis.com/v1:Rules")
    (group,), (fixed_group,) = rules["inputs"]["spec"]["groups"], fixed_rules["inputs"]["spec"]["groups"]
    assert [r["alert"] for r in group["rules"]] == [r["alert"] for r in fixed_group["rules"]] + SCALER_ALERTS
    assert group["rules"][-2]["expr"] == (f"max(kube_horizontalpodautoscaler_status_desired_replicas{HPA}) >= "
                                          f"max(kube_horizontalpodautoscaler_spec_max_replicas{HPA})")
    (cluster,) = _resources(p, "gcp:container/cluster:Cluster")
    (fixed_cluster,) = _resources(fixed, "gcp:container/cluster:Cluster")
    assert cluster["inputs"]["monitoringConfig"]["enableComponents"] == ["SYSTEM_COMPONENTS", "DCGM", "HPA"]
    assert fixed_cluster["inputs"]["monitoringConfig"]["enableComponents"] == ["SYSTEM_COMPONENTS", "DCGM"]
    assert p.to_json()["outputs"]["monitoring"]["alerts"][6:9] == SCALER_ALERTS  # after the 4 engine, 2 picker alerts


def test_eks_scaler_alerts_in_the_amp_rule_groups_on_its_own_kube_state_metrics():
    import yaml

    p, fixed = plan("aws-eks", "autoscaling.enabled=true", "replicas=2"), plan("aws-eks", "replicas=2")
    assert _inventory(p) - _inventory(fixed) == {
        ("aws:iam/role:Role", "k3-keda-role"), ("aws:iam/rolePolicy:RolePolicy", "k3-keda-amp-query"),
        ("aws:eks/podIdentityAssociation:PodIdentityAssociation", "k3-keda-identity"),
        ("kubernetes:core/v1:Namespace", "k3-keda-namespace"), ("kubernetes:helm.sh/v4:Chart", "k3-keda"),
        ("kubernetes:keda.sh/v1alpha1:TriggerAuthentication", "k3-keda-aws"),
        ("kubernetes:keda.sh/v1alpha1:ScaledObject", "k3-scaler"),
        ("kubernetes:helm.sh/v4:Chart", "k3-monitoring-kube-state-metrics")}
    (chart,) = [r for r in _resources(p, "helm.sh/v4:Chart") if r["name"] == "k3-monitoring-kube-state-metrics"]
    assert chart["inputs"]["namespace"] == "kimi-k3" and chart["inputs"]["version"] == "7.0.1"
    assert chart["inputs"]["values"] == {"collectors": ["horizontalpodautoscalers"], "releaseNamespace": True,
                                         "nodeSelector": {"k3infra.io/pool": "system"},
                                         "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}}}
    (scraper,) = _resources(p, "aws:amp/scraper:Scraper")
    jobs = {j["job_name"]: j for j in yaml.safe_load(scraper["inputs"]["scrapeConfiguration"])["scrape_configs"]}
    assert list(jobs) == ["kimi-k3-server", "dcgm-exporter", "kimi-k3-picker", "kube-state-metrics"]
    ksm = jobs["kube-state-metrics"]
    assert ksm["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": ["kimi-k3"]}}]
    assert ksm["relabel_configs"][:3] == [
        {"source_labels": ["__meta_kubernetes_pod_label_app_kubernetes_io_instance"], "regex": "kube\\-state\\-metrics",
         "action": "keep"},
        {"source_labels": ["__meta_kubernetes_pod_label_app_kubernetes_io_name"], "regex": "kube\\-state\\-metrics",
         "action": "keep"},
        {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": "http", "action": "keep"}]
    (rules,) = _resources(p, "aws:amp/ruleGroupNamespace:RuleGroupNamespace")
    (fixed_rules,) = _resources(fixed, "aws:amp/ruleGroupNamespace:RuleGroupNamespace")
    names = [r["alert"] for r in yaml.safe_load(rules["inputs"]["data"])["groups"][0]["rules"]]
    fixed_names = [r["alert"] for r in yaml.safe_load(fixed_rules["inputs"]["data"])["groups"][0]["rules"]]
    assert names == fixed_names[:-1] + SCALER_ALERTS + fixed_names[-1:]  # before the Capacity Block window's
    assert p.to_json()["outputs"]["monitoring"]["alerts"] == names
    fixed_jobs = yaml.safe_load(_resources(fixed, "aws:amp/scraper:Scraper")[0]["inputs"]["scrapeConfiguration"])
    assert [j["job_name"] for j in fixed_jobs["scrape_configs"]] == ["kimi-k3-server", "dcgm-exporter", "kimi-k3-picker"]


def test_aks_restarts_the_keda_operator_once_its_federated_credential_exists():
    """AKS's KEDA workload-identity page: restart keda-operator after creating its federated credential."""
    rec = plan("azure-gb300", *AKS).recording
    patch = rec.one("kubernetes:apps/v1:DeploymentPatch", "k3-keda-operator-restart")
    inputs = offline.unwrap(patch.inputs)
    assert inputs["metadata"] == {"name": "keda-operator", "namespace": "kube-system"}
    (value,) = inputs["spec"]["template"]["metadata"]["annotations"].values()
    credential = rec.one("azure-native:managedidentity:FederatedIdentityCredential", "k3-keda-federation")
    assert credential.urn in patch.dependencies
    assert value  # the credential's id: a new credential rolls the pods again
    so = rec.one("kubernetes:keda.sh/v1alpha1:ScaledObject", "k3-scaler")
    assert patch.urn in so.dependencies


def test_aks_scaler_alerts_in_the_rule_group_on_the_addons_kube_state_metrics():
    p, fixed = plan("azure-gb300", *AKS), plan("azure-gb300", "replicas=2", "azure.quotaVcpus=512")
    (group,), (fixed_group,) = (_resources(x, "alertsmanagement:PrometheusRuleGroup") for x in (p, fixed))
    rules, fixed_rules = ([r["alert"] for r in g["inputs"]["rules"]] for g in (group, fixed_group))
    assert rules == fixed_rules + SCALER_ALERTS
    thrash = group["inputs"]["rules"][-1]
    assert thrash["expression"] == f"max(changes(kube_horizontalpodautoscaler_status_desired_replicas{HPA}[1h])) > 4"
    assert p.to_json()["outputs"]["monitoring"]["alerts"] == rules


ACK_SCALER_MONITORING = {
    ("kubernetes:helm.sh/v4:Chart", "k3-monitoring-kube-state-metrics"),
    ("kubernetes:monitoring.coreos.com/v1:PodMonitor", "k3-monitoring-kube-state-metrics-pod-monitor"),
    ("alicloud:arms/prometheusAlertRule:PrometheusAlertRule", "k3-monitoring-alert-kimi-k3-replicas-wanted-not-serving"),
    ("alicloud:arms/prometheusAlertRule:PrometheusAlertRule", "k3-monitoring-alert-kimi-k3-replicas-at-maximum"),
    ("alicloud:arms/prometheusAlertRule:PrometheusAlertRule", "k3-monitoring-alert-kimi-k3-scaling-thrash"),
}
"""What autoscaling adds to ACK's monitoring: its own kube-state-metrics (HPA series), the PodMonitor the ARMS agent
scrapes it by, and the scaler's three alerts."""


def test_ack_scaler_alerts_on_its_own_kube_state_metrics_scraped_by_the_arms_agent():
    p = plan("alicloud-ack", "autoscaling.enabled=true", "replicas=2")
    (chart,) = [r for r in _resources(p, "helm.sh/v4:Chart") if r["name"] == "k3-monitoring-kube-state-metrics"]
    assert chart["inputs"]["namespace"] == "kimi-k3" and chart["inputs"]["version"] == "7.0.1"
    assert chart["inputs"]["values"]["collectors"] == ["horizontalpodautoscalers"]
    assert chart["inputs"]["values"]["nodeSelector"] == {"k3infra.io/pool": "system"}
    (monitor,) = [r for r in _resources(p, "PodMonitor") if r["name"].endswith("kube-state-metrics-pod-monitor")]
    assert crd_errors(monitor["inputs"]) == []
    assert monitor["inputs"]["metadata"]["namespace"] == "kimi-k3"
    assert monitor["inputs"]["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/instance": "kube-state-metrics", "app.kubernetes.io/name": "kube-state-metrics"}
    assert monitor["inputs"]["spec"]["podMetricsEndpoints"][0]["port"] == "http"
    rules = {r["inputs"]["prometheusAlertRuleName"]: r["inputs"] for r in _resources(p, "PrometheusAlertRule")}
    alerts = p.to_json()["outputs"]["monitoring"]["alerts"]
    assert sorted(rules) == sorted(alerts) and alerts[-3:] == SCALER_ALERTS
    assert rules["KimiK3ReplicasAtMaximum"]["duration"] == "30"
    assert rules["KimiK3ReplicasAtMaximum"]["expression"] == (
        f"max(kube_horizontalpodautoscaler_status_desired_replicas{HPA}) >= "
        f"max(kube_horizontalpodautoscaler_spec_max_replicas{HPA})")


def test_ack_without_an_arms_instance_of_the_cluster_id_says_so(monkeypatch):
    from k3infra import offline_state

    monkeypatch.setitem(offline_state._FUNCTIONS, "alicloud:arms/getPrometheus:getPrometheus",  # pyright: ignore[reportPrivateUsage]
                        lambda args: {"id": "ap-southeast-1", "ids": [], "prometheis": []})
    with pytest.raises(Exception) as e:  # uncached: the cached plans keep the offline instance
        planning.plan("alicloud-ack", ("autoscaling.enabled=true",), root=ROOT)
    assert "ARMS finds no Prometheus instance with the cluster's id" in str(e.value)

"""The azure-gb300 stack as a whole: inventory, outputs, billing notes, preview-time checks, and its golden plan."""

import json
import os
from typing import Any

import pytest

from k3infra import offline, offline_state, planning
from k3infra.azure.capacity import CapacityGroupError
from k3infra.azure.deployment import agent_pool_name
from tests.support import INSTALLED_GATEWAY, ROOT, installed_gateway_spec, inventory, plan

GOLDEN = ROOT / "tests" / "golden" / "azure-gb300.json"
GROUP = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3-capacity/providers/"
         "Microsoft.Compute/capacityReservationGroups/crg-k3-gb300")
CLUSTER, POOL, BUCKET = "k3infra:index:AksCluster", "k3infra:index:AksGpuNodePool", "k3infra:index:BlobWeightBucket"
SERVER, SYNC = "k3infra:index:ModelServer", "k3infra:index:WeightSync"
MONITORING, VERIFY = "k3infra:index:Monitoring", "k3infra:index:VerifyJob"
PLACEMENT = "k3infra:index:PlacementCheck"
FABRIC = "k3infra:index:FabricCheck"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"


def _without_group(*sets: str) -> planning.Plan:
    sf = planning.load("azure-gb300", sets, root=ROOT)
    capacity = {k: v for k, v in sf.config["k3infra:capacity"].items() if k != "groupId"}
    sf = planning.StackFile(path=sf.path, stack=sf.stack, project=sf.project,
                            config={**sf.config, "k3infra:capacity": capacity}, secret_keys=sf.secret_keys,
                            notes=sf.notes)
    return planning.Plan(stack_file=sf, config=planning.validate(sf), recording=planning.record(sf))


def test_inventory() -> None:
    rec = plan("azure-gb300").recording
    assert inventory(rec) == [
        ("azure-native:authorization:RoleAssignment", "k3-acr-pull", None),
        # the sync's own pool: zero nodes until the sync Job asks (azure.sync_pool)
        ("k3infra:azure:AksSyncPool", "k3-sync-nodes", None),
        ("azure-native:containerservice:AgentPool", "k3-sync-nodes-pool", "k3infra:azure:AksSyncPool"),
        (CLUSTER, "k3", None),
        # Entra ID: the identity running Pulumi is cluster admin, and the provider waits for the grant (azure.entra)
        ("azure-native:authorization:RoleAssignment", "k3-deployer-cluster-admin", CLUSTER),
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-cluster", CLUSTER),
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-default", CLUSTER),
        ("azure-native:containerservice:MaintenanceConfiguration", "k3-maintenance-node-os", CLUSTER),
        ("azure-native:containerservice:ManagedCluster", "k3-aks", CLUSTER),
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-identity", CLUSTER),
        ("azure-native:resources:ResourceGroup", "k3-rg", CLUSTER),
        ("pulumi:providers:kubernetes", "k3-k8s", CLUSTER),
        ("time:index/sleep:Sleep", "k3-deployer-cluster-admin-propagation", CLUSTER),
        (POOL, "k3-gpu", None),
        ("azure-native:authorization:RoleAssignment", "k3-gpu-crg-access", POOL),
        ("azure-native:containerservice:AgentPool", "k3-gpu-pool", POOL),
        ("kubernetes:core/v1:Namespace", "k3-gpu-nvidia-dra-namespace", POOL),
        ("kubernetes:core/v1:ResourceQuota", "k3-gpu-nvidia-dra-critical-pods", POOL),
        ("kubernetes:helm.sh/v4:Chart", "k3-gpu-dranet", POOL),
        ("kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-device-plugin", POOL),
        ("kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-dra", POOL),
        ("kubernetes:resource.k8s.io/v1:DeviceClass", "k3-gpu-rdma-class", POOL),
        ("time:index/sleep:Sleep", "k3-gpu-crg-access-propagation", POOL),
        (BUCKET, "k3-weights", None),
        ("azure-native:authorization:RoleAssignment", "k3-weights-reader-access", BUCKET),
        ("azure-native:authorization:RoleAssignment", "k3-weights-writer-access", BUCKET),
        ("azure-native:managedidentity:FederatedIdentityCredential", "k3-weights-reader-federation", BUCKET),
        ("azure-native:managedidentity:FederatedIdentityCredential", "k3-weights-writer-federation", BUCKET),
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-weights-reader", BUCKET),
        ("azure-native:managedidentity:UserAssignedIdentity", "k3-weights-writer", BUCKET),
        ("azure-native:resources:ResourceGroup", "k3-weights-rg", BUCKET),
        ("azure-native:storage:BlobContainer", "k3-weights-container", BUCKET),
        ("azure-native:storage:StorageAccount", "k3-weights-account", BUCKET),
        (FABRIC, "k3-fabric", None),
        ("kubernetes:batch/v1:Job", "k3-fabric-0-job", FABRIC),
        ("kubernetes:core/v1:ConfigMap", "k3-fabric-code", FABRIC),
        ("kubernetes:core/v1:Service", "k3-fabric-0-leader", FABRIC),
        ("kubernetes:core/v1:ServiceAccount", "k3-fabric-account", FABRIC),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-fabric-network-policy", FABRIC),
        ("kubernetes:rbac.authorization.k8s.io/v1:Role", "k3-fabric-role", FABRIC),
        ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "k3-fabric-binding", FABRIC),
        ("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate", "k3-fabric-rdma", FABRIC),
        ("kubernetes:resource.nvidia.com/v1beta1:ComputeDomain", "k3-fabric-nvlink-0", FABRIC),
        ("k3infra:index:ImagePrePull", "k3-pre-pull", None),
        ("kubernetes:apps/v1:DaemonSet", "k3-pre-pull-daemon-set", "k3infra:index:ImagePrePull"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-pre-pull-network-policy", "k3infra:index:ImagePrePull"),
        *INSTALLED_GATEWAY,
        (SERVER, "k3-server", None),
        ("kubernetes:core/v1:Namespace", "k3-server-lws-namespace", SERVER),
        ("kubernetes:core/v1:Service", "k3-server-service", SERVER),
        ("kubernetes:helm.sh/v4:Chart", "k3-server-lws", SERVER),
        (LWS, "k3-server-workload", SERVER),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy", SERVER),
        ("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate", "k3-server-rdma", SERVER),
        ("kubernetes:resource.nvidia.com/v1beta1:ComputeDomain", "k3-server-nvlink-0", SERVER),
        (MONITORING, "k3-monitoring", None),
        ("azure-native:alertsmanagement:PrometheusRuleGroup", "k3-monitoring-alerts", MONITORING),
        ("azure-native:dashboard:Dashboard", "k3-monitoring-dashboard", MONITORING),
        ("azure-native:dashboard:DashboardDefinition", "k3-monitoring-dashboard-definition", MONITORING),
        ("azure-native:monitor:AzureMonitorWorkspace", "k3-monitoring-prometheus", MONITORING),
        ("azure-native:monitor:DataCollectionEndpoint", "k3-monitoring-prometheus-dce", MONITORING),
        ("azure-native:monitor:DataCollectionRule", "k3-monitoring-prometheus-dcr", MONITORING),
        ("azure-native:monitor:DataCollectionRuleAssociation", "k3-monitoring-prometheus-dcea", MONITORING),
        ("azure-native:monitor:DataCollectionRuleAssociation", "k3-monitoring-prometheus-dcra", MONITORING),
        ("kubernetes:azmonitoring.coreos.com/v1:PodMonitor", "k3-monitoring-dcgm-pod-monitor", MONITORING),
        ("kubernetes:azmonitoring.coreos.com/v1:PodMonitor", "k3-monitoring-picker-pod-monitor", MONITORING),
        ("kubernetes:azmonitoring.coreos.com/v1:PodMonitor", "k3-monitoring-server-pod-monitor", MONITORING),
        ("kubernetes:core/v1:Namespace", "k3-monitoring-dcgm-namespace", MONITORING),
        ("kubernetes:helm.sh/v4:Chart", "k3-monitoring-dcgm", MONITORING),
        # issue 40: AKS keeps no weights on the node, but the agent carries the engine's caches through the bucket
        ("k3infra:index:NodeAgent", "k3-node-agent", None),
        ("kubernetes:apps/v1:DaemonSet", "k3-node-agent-daemon-set", "k3infra:index:NodeAgent"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-node-agent-network-policy", "k3infra:index:NodeAgent"),
        (PLACEMENT, "k3-placement", None),
        ("kubernetes:batch/v1:Job", "k3-placement-job", PLACEMENT),
        ("kubernetes:core/v1:ConfigMap", "k3-placement-code", PLACEMENT),
        ("kubernetes:core/v1:ServiceAccount", "k3-placement-account", PLACEMENT),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-placement-network-policy", PLACEMENT),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "k3-placement-role", PLACEMENT),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "k3-placement-binding", PLACEMENT),
        (VERIFY, "k3-verify", None),
        ("kubernetes:batch/v1:Job", "k3-verify-job", VERIFY),
        ("kubernetes:core/v1:ConfigMap", "k3-verify-code", VERIFY),
        ("kubernetes:core/v1:ServiceAccount", "k3-verify-account", VERIFY),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-verify-network-policy", VERIFY),
        ("kubernetes:rbac.authorization.k8s.io/v1:Role", "k3-verify-role", VERIFY),
        ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "k3-verify-binding", VERIFY),
        (SYNC, "k3-sync", None),
        ("kubernetes:batch/v1:Job", "k3-sync-job", SYNC),
        ("kubernetes:core/v1:ConfigMap", "k3-sync-copier", SYNC),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-sync-network-policy", SYNC),
        ("kubernetes:core/v1:Namespace", "k3-namespace", None),
        ("kubernetes:core/v1:ServiceAccount", "k3-reader", None),
        ("kubernetes:core/v1:ServiceAccount", "k3-writer", None),
    ]


def test_seed_values() -> None:
    rec = plan("azure-gb300").recording
    pool = rec.one("azure-native:containerservice:AgentPool", "k3-gpu-pool").inputs
    assert (pool["vmSize"], pool["count"], pool["agentPoolName"], pool["mode"]) == (
        "Standard_ND128isr_GB300_v6", 2, "gb300pool", "User")
    assert pool["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert pool["availabilityZones"] == ["1"] and pool["capacityReservationGroupID"] == GROUP
    assert pool["gpuProfile"] == {"driver": "Install"}
    cluster = rec.one("azure-native:containerservice:ManagedCluster").inputs
    assert cluster["resourceGroupName"] == "rg-k3-azure-gb300" and cluster["location"] == "eastus2"
    assert cluster["agentPoolProfiles"][0]["vmSize"] == "Standard_D8s_v5"
    assert cluster["identity"]["type"] == "UserAssigned"
    grant = rec.one("azure-native:authorization:RoleAssignment", "k3-gpu-crg-access").inputs
    assert grant["scope"] == "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3-capacity"
    account = rec.one("azure-native:storage:StorageAccount").inputs
    assert (account["accountName"], account["resourceGroupName"]) == ("myorgk3weights", "rg-k3-azure-gb300-weights")
    assert rec.one("azure-native:storage:BlobContainer").inputs["containerName"] == "kimi-k3-weights"
    subjects = sorted(r.inputs["subject"] for r in rec.by_type("azure-native:managedidentity:FederatedIdentityCredential"))
    assert subjects == ["system:serviceaccount:kimi-k3:k3-server", "system:serviceaccount:kimi-k3:k3-weight-sync"]


def test_the_existing_group_is_looked_up() -> None:
    rec = plan("azure-gb300").recording
    calls = [c.args for c in rec.invocations if c.token == "azure-native:compute:getCapacityReservationGroup"]
    assert calls == [{"resourceGroupName": "rg-k3-capacity", "capacityReservationGroupName": "crg-k3-gb300"}]


def test_outputs() -> None:
    out = plan("azure-gb300").recording.outputs
    assert isinstance(out["kubeconfig"], offline.Secret)
    assert out["bucketUri"] == "az://kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert out["storageAccount"] == "myorgk3weights"
    assert out["reservationGroup"] == GROUP
    assert out["gpuPool"] == "gb300pool"
    assert out["servedModelName"] == "Kimi-K3"
    assert out["quota"] == {"family": "standardNDISRGB300V6Family", "needVcpus": 256, "limitVcpus": 256,
                            "inUseVcpus": None, "source": "config"}
    assert out["startupBudgetSeconds"] == plan("azure-gb300").config.sizing.probe_budget_seconds
    assert out["sizing"]["nodes"] == 2 and out["monthlyCost"]["currency"] == "USD"


def test_billing_after_destroy_names_the_group_and_the_retained_storage() -> None:
    billing = plan("azure-gb300").recording.outputs["billingAfterDestroy"]
    assert len(billing) == 2
    assert GROUP in billing[0] and "until you delete it" in billing[0] and "002 §4.6" in billing[0]
    assert "myorgk3weights" in billing[1] and "rg-k3-azure-gb300-weights" in billing[1]


def test_no_retained_storage_note_when_opted_out() -> None:
    billing = plan("azure-gb300", "weights.retainOnDestroy=false").recording.outputs["billingAfterDestroy"]
    assert len(billing) == 1 and GROUP in billing[0]


def test_created_group_inventory_and_billing() -> None:
    p = _without_group("capacity.create=true")
    pool_children = [(t, n) for t, n, parent in inventory(p.recording) if parent == POOL]
    assert pool_children == [
        ("azure-native:authorization:RoleAssignment", "k3-gpu-crg-access"),
        ("azure-native:compute:CapacityReservation", "k3-gpu-reservation"),
        ("azure-native:compute:CapacityReservationGroup", "k3-gpu-crg"),
        ("azure-native:containerservice:AgentPool", "k3-gpu-pool"),
        ("azure-native:resources:ResourceGroup", "k3-gpu-capacity-rg"),
        ("kubernetes:core/v1:Namespace", "k3-gpu-nvidia-dra-namespace"),
        ("kubernetes:core/v1:ResourceQuota", "k3-gpu-nvidia-dra-critical-pods"),
        ("kubernetes:helm.sh/v4:Chart", "k3-gpu-dranet"),
        ("kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-device-plugin"),
        ("kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-dra"),
        ("kubernetes:resource.k8s.io/v1:DeviceClass", "k3-gpu-rdma-class"),
        ("time:index/sleep:Sleep", "k3-gpu-crg-access-propagation"),
    ]
    rg = p.recording.one("azure-native:resources:ResourceGroup", "k3-gpu-capacity-rg")
    assert rg.inputs["resourceGroupName"] == "rg-k3-azure-gb300-capacity"
    reservation = p.recording.one("azure-native:compute:CapacityReservation").inputs
    assert reservation["sku"] == {"name": "Standard_ND128isr_GB300_v6", "capacity": 2} and reservation["zones"] == ["1"]
    assert all(GROUP not in b for b in p.recording.outputs["billingAfterDestroy"])
    assert any("bill from creation" in w for w in p.recording.outputs["warnings"])


def test_a_group_in_another_region_stops_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "azure-native:compute:getCapacityReservationGroup"
    real = offline_state._FUNCTIONS[token]  # noqa: SLF001 - the registry is the seam for this test
    monkeypatch.setitem(offline_state._FUNCTIONS, token, lambda args: {**real(args), "location": "westus3"})  # noqa: SLF001
    with pytest.raises(CapacityGroupError, match="the group is in westus3, the cluster and pool in eastus2"):
        planning.plan("azure-gb300", root=ROOT)


def test_group_shared_from_another_subscription_is_not_looked_up() -> None:
    rec = plan("azure-gb300", "azure-native:subscriptionId=11111111-1111-1111-1111-111111111111").recording
    assert not [c for c in rec.invocations if c.token == "azure-native:compute:getCapacityReservationGroup"]


def test_without_a_stated_quota_the_offline_plan_warns() -> None:
    sf = planning.load("azure-gb300", (), root=ROOT)
    azure = {k: v for k, v in sf.config["k3infra:azure"].items() if k != "quotaVcpus"}
    sf = planning.StackFile(path=sf.path, stack=sf.stack, project=sf.project,
                            config={**sf.config, "k3infra:azure": azure}, secret_keys=sf.secret_keys, notes=sf.notes)
    out = planning.record(sf).outputs
    assert out["quota"]["source"] == "skipped"
    assert any("standardNDISRGB300V6Family quota not checked (offline plan" in w for w in out["warnings"])


def test_every_kubernetes_object_goes_through_the_cluster_provider() -> None:
    rec = plan("azure-gb300").recording
    provider = rec.one("pulumi:providers:kubernetes").urn
    objects = [r for r in rec.resources if r.type.startswith("kubernetes:") and r.custom]
    assert objects and all(r.provider == provider for r in objects)


def _lws() -> dict[str, Any]:
    return offline.plain(plan("azure-gb300").recording.one(LWS).inputs)


def test_leader_worker_set_of_two_nodes_at_tp8() -> None:
    lws = _lws()
    tpl = lws["spec"]["leaderWorkerTemplate"]
    assert lws["spec"]["replicas"] == 1 and tpl["size"] == 2
    assert tpl["restartPolicy"] == "RecreateGroupOnPodRestart"
    leader, worker = tpl["leaderTemplate"]["spec"], tpl["workerTemplate"]["spec"]
    for pod in (leader, worker):
        assert pod["nodeSelector"] == {"agentpool": "gb300pool"}
        assert pod["tolerations"] == [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]
        (c,) = pod["containers"]
        assert c["image"] == "myregistry.azurecr.io/vllm-openai:kimi-k3-arm64"
        # requests = limits, CPU and memory from the machine type (85% of 128 vCPU and 804 GiB)
        assert c["resources"]["limits"] == {"nvidia.com/gpu": "4", "cpu": "108", "memory": "683Gi"}
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["AZURE_STORAGE_ACCOUNT_NAME"] == "myorgk3weights"  # 002 §4.3: the streamer's account
        assert env["VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"] == "1"
        assert env["K3_MODEL"] == "az://kimi-k3-weights/models/moonshotai/Kimi-K3"
        assert pod["serviceAccountName"] == "k3-server"
    for tpl_meta in (tpl["leaderTemplate"]["metadata"], tpl["workerTemplate"]["metadata"]):
        assert tpl_meta["labels"]["azure.workload.identity/use"] == "true"
    leader_cmd = leader["containers"][0]["args"][0]
    worker_cmd = worker["containers"][0]["args"][0]
    # 002 §4.4: the leader starts the Ray head, then vllm serve; the worker joins the leader's Ray cluster.
    # vLLM's own multi-node mode (TP=8 over 2 x 4 GPUs): --nnodes 2, the worker headless
    assert '--nnodes 2 --node-rank 0 --master-addr "$(LWS_LEADER_ADDRESS)"' in leader_cmd
    assert '--nnodes 2 --node-rank "$(LWS_WORKER_INDEX)" --master-addr "$(LWS_LEADER_ADDRESS)"' in worker_cmd
    assert "--headless" in worker_cmd and "--headless" not in leader_cmd
    for flag in ("--tensor-parallel-size 8", "--tool-call-parser kimi_k3", "--reasoning-parser kimi_k3",
                 "--served-model-name Kimi-K3", "--enable-auto-tool-choice", "--trust-remote-code",
                 "--load-format runai_streamer", "--port 8000"):
        assert flag in leader_cmd
    assert "exec vllm serve" in worker_cmd


def test_startup_budget_comes_from_the_sizing_not_900_seconds() -> None:
    p = plan("azure-gb300")
    budget = p.config.sizing.probe_budget_seconds
    leader = _lws()["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    probe = leader["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] >= budget != 900
    assert "initialDelaySeconds" not in leader["readinessProbe"]
    assert _lws()["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == str(p.config.sizing.await_timeout_seconds)


def test_the_gateway_is_agentgateway_behind_an_internal_load_balancer() -> None:
    """AKS has no inference gateway: the stack installs agentgateway, whose Service takes AKS's internal annotation;
    the endpoint is the gateway's."""
    rec = plan("azure-gb300").recording
    ref = {"group": "agentgateway.dev", "kind": "AgentgatewayParameters", "name": "k3-gateway-proxy"}
    assert installed_gateway_spec(rec)["infrastructure"] == {
        "annotations": {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}, "parametersRef": ref}
    public = installed_gateway_spec(plan("azure-gb300", "endpoint.exposure=public",
                                         "endpoint.allowedCidrs=[203.0.113.0/24]", "apiKey=sk-test").recording)
    assert public["infrastructure"] == {"parametersRef": ref}, "AKS's public load balancer takes no annotation"
    assert not rec.by_type("kubernetes:core/v1:Service") or not [
        r for r in rec.by_type("kubernetes:core/v1:Service") if r.name.startswith("k3-server-") and
        r.name.endswith(("-internal", "-public"))]


def test_endpoint_is_an_internal_load_balancer() -> None:
    rec = plan("azure-gb300", "endpoint.gateway=false").recording
    svc = offline.plain(rec.one("kubernetes:core/v1:Service", "k3-server-internal").inputs)
    assert svc["metadata"]["annotations"] == {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}
    assert svc["spec"]["type"] == "LoadBalancer" and svc["spec"]["loadBalancerSourceRanges"] == ["10.224.0.0/12"]
    assert not [r for r in rec.by_type("kubernetes:core/v1:Service") if r.name.endswith("-public")]
    assert rec.outputs["endpoint"].startswith("http://") and rec.outputs["endpoint"].endswith(":8000")


def test_public_endpoint_only_when_the_stack_says_so() -> None:
    rec = plan("azure-gb300", "endpoint.exposure=public", "endpoint.allowedCidrs=[203.0.113.0/24]",
               "apiKey=sk-test", "endpoint.gateway=false").recording
    svc = offline.plain(rec.one("kubernetes:core/v1:Service", "k3-server-public").inputs)
    assert svc["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24"]
    assert "service.beta.kubernetes.io/azure-load-balancer-internal" not in (svc["metadata"].get("annotations") or {})


def test_service_accounts_carry_the_identities() -> None:
    rec = plan("azure-gb300").recording
    ids = {r.name: r.outputs["clientId"] for r in rec.by_type("azure-native:managedidentity:UserAssignedIdentity")}
    reader = offline.plain(rec.one("kubernetes:core/v1:ServiceAccount", "k3-reader").inputs)["metadata"]
    writer = offline.plain(rec.one("kubernetes:core/v1:ServiceAccount", "k3-writer").inputs)["metadata"]
    assert (reader["name"], reader["namespace"]) == ("k3-server", "kimi-k3")
    assert reader["annotations"] == {"azure.workload.identity/client-id": ids["k3-weights-reader"]}
    assert writer["annotations"] == {"azure.workload.identity/client-id": ids["k3-weights-writer"]}


def test_server_waits_for_pool_and_identities_and_the_sync_does_not_wait_for_the_pool() -> None:
    rec = plan("azure-gb300").recording
    server, sync = rec.one(SERVER), rec.one(SYNC)
    pool = rec.one("azure-native:containerservice:AgentPool", "k3-gpu-pool").urn
    grants = {r.urn for r in rec.by_type("azure-native:authorization:RoleAssignment") if "weights" in r.name}
    feds = {r.urn for r in rec.by_type("azure-native:managedidentity:FederatedIdentityCredential")}
    assert pool in server.dependencies and grants | feds <= set(server.dependencies)
    assert pool not in sync.dependencies and grants | feds <= set(sync.dependencies)


@pytest.mark.parametrize("gpu, name", [("GB300", "gb300pool"), ("H100 NVL", "h100nvlpool"), ("300X", "gpu300xpool")])
def test_agent_pool_name(gpu: str, name: str) -> None:
    assert agent_pool_name(gpu) == name[:12]


def test_golden_plan() -> None:
    """`k3infra plan azure-gb300 --format json` equals tests/golden/azure-gb300.json.

    Regenerate after an intended change with ``K3INFRA_UPDATE_GOLDEN=1 pytest tests/azure/test_deployment.py``.
    """
    text = json.dumps(plan("azure-gb300").to_json(), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("K3INFRA_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.is_file(), f"{GOLDEN} is missing: run with K3INFRA_UPDATE_GOLDEN=1 to create it"
    expected: Any = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert json.loads(text) == expected


def test_golden_plan_of_the_disaggregated_stack() -> None:
    """`k3infra plan azure-gb300-pd --format json` equals tests/golden/azure-gb300-pd.json (issue 37)."""
    path = GOLDEN.with_name("azure-gb300-pd.json")
    text = json.dumps(plan("azure-gb300-pd").to_json(), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("K3INFRA_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert json.loads(text) == json.loads(path.read_text(encoding="utf-8"))


def test_the_kubelet_identity_may_pull_from_the_images_registry() -> None:
    """What `az aks update --attach-acr` does: AcrPull on the registry for identityProfile.kubeletidentity."""
    rec = plan("azure-gb300").recording
    grant = rec.one("azure-native:authorization:RoleAssignment", "k3-acr-pull")
    cluster = rec.one("azure-native:containerservice:ManagedCluster")
    assert grant.inputs["scope"] == ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3-registry/"
                                     "providers/Microsoft.ContainerRegistry/registries/myregistry")
    assert grant.inputs["roleDefinitionId"].endswith("/roleDefinitions/7f951dda-4ed3-4680-a7ca-43fe172d538d")
    assert grant.inputs["principalId"] == cluster.outputs["identityProfile"]["kubeletidentity"]["objectId"]
    assert grant.inputs["principalType"] == "ServicePrincipal"
    # the server's pods wait for it: the first pull of the private image must not fail
    lws = rec.one(LWS)
    assert grant.urn in lws.dependencies


def test_no_registry_no_grant() -> None:
    sf = planning.load("azure-gb300", (), root=ROOT)
    azure = {k: v for k, v in sf.config["k3infra:azure"].items() if k != "containerRegistry"}
    sf = planning.StackFile(path=sf.path, stack=sf.stack, project=sf.project, config={**sf.config, "k3infra:azure": azure},
                            secret_keys=sf.secret_keys, notes=sf.notes)
    rec = planning.record(sf)
    assert "k3-acr-pull" not in [r.name for r in rec.by_type("azure-native:authorization:RoleAssignment")]


def test_the_mnnvl_warning_is_gone_and_the_mode_is_stated() -> None:
    p = plan("azure-gb300")
    assert not [w for w in p.warnings if "MNNVL" in w or "multi-node NVLink" in w]
    assert p.config.sizing.as_dict()["layout"]["mode"] == "multi-node-nvlink"


def test_pipeline_fallback_needs_no_compute_domain() -> None:
    """002 appendix item 2 on AKS: TP=4 x PP=2, no DRA driver, no ComputeDomain, the mode and its cost stated."""
    p = plan("azure-gb300", "tensorParallel=4", "pipelineParallel=2")
    types = {r.type for r in p.recording.resources}
    assert "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain" not in types
    assert "k3-gpu-nvidia-dra" not in [r.name for r in p.recording.by_type("kubernetes:helm.sh/v4:Chart")]
    statement = [w for w in p.warnings if w.startswith("parallel layout: TP=4 x PP=2")]
    assert len(statement) == 1 and "ESTIMATE" in statement[0]
    # the InfiniBand NICs carry the pipeline stages' activations
    assert [r.inputs["metadata"]["name"] for r in p.recording.by_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
            if r.parent_type == SERVER] == ["k3-server-rdma"]

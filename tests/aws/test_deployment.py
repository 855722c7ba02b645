"""The two AWS stacks end to end under the recording engine: aws-eks (002 §3.2) and aws-hyperpod (002 §3.1)."""

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from k3infra import cli, offline, offline_state, planning
from k3infra.aws import policies
from k3infra.aws.hyperpod_endpoint_config import inference_endpoint_config
from k3infra.config import ConfigError
from k3infra.serving.engine import vllm_command
from tests.validation import crd_errors
from tests.support import INSTALLED_GATEWAY, ROOT, installed_gateway_spec, inventory, plan



def iec_object(p: planning.Plan) -> dict:
    reg = p.recording.one("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig")
    body = offline.unwrap(reg.inputs)
    return {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": body["metadata"], "spec": body["spec"]}


# --- aws-eks --------------------------------------------------------------------------------------------------


def test_eks_stack_composes_cluster_gpu_node_group_bucket_and_serving():
    top = [(t, n) for t, n, parent in inventory(plan("aws-eks").recording) if parent is None]
    assert top == [
        ("k3infra:aws:EksSyncNodeGroup", "k3-sync-nodes"),
        ("k3infra:index:EksCluster", "k3"),
        ("k3infra:index:EksGpuNodeGroup", "k3-gpu"),
        ("k3infra:index:ImagePrePull", "k3-pre-pull"),
        ("k3infra:index:InferenceGateway", "k3-gateway"),
        ("k3infra:index:ModelServer", "k3-server"),
        ("k3infra:index:Monitoring", "k3-monitoring"),
        ("k3infra:index:S3WeightBucket", "k3-weights"),
        ("k3infra:index:VerifyJob", "k3-verify"),
        ("k3infra:index:WeightSync", "k3-sync"),
        ("kubernetes:core/v1:Namespace", "k3-namespace"),
        ("kubernetes:core/v1:ServiceAccount", "k3-reader"),
        ("kubernetes:core/v1:ServiceAccount", "k3-writer"),
    ]
    # 65 + monitoring (9) + the verify Job (7) + the image pre-pull (3) + the sync's node group (8: the group, its
    # two node-template tags, the autoscaler's role, policy, identity and chart, the component) + the installed
    # gateway (12, INSTALLED_GATEWAY) - the server's internal NLB Service (1: the gateway's Service is the entry)
    rec = plan("aws-eks").recording
    assert [i for i in inventory(rec) if i[1].startswith("k3-gateway")] == INSTALLED_GATEWAY
    assert len(rec.resources) == 103


def test_the_dcgm_exporter_uses_the_node_monitoring_agents_host_engine():
    """eks-node-monitoring-agent runs nv-hostengine on every GPU node (dcgm-server DaemonSet, hostPort 5555); a second,
    embedded engine in the exporter is unsupported (NVIDIA/DCGM#108) and fails to start some modules
    (dcgm-exporter#61). The exporter connects to the node's engine through DCGM_REMOTE_HOSTENGINE_INFO (its -r)."""
    from tests.validation import validate_kubernetes

    rec = plan("aws-eks").recording
    chart = offline.unwrap(rec.one("kubernetes:helm.sh/v4:Chart", "k3-monitoring-dcgm").inputs)
    env = chart["values"]["extraEnv"]
    assert env == [{"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                   {"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": "$(NODE_IP):5555"}]
    # the chart renders extraEnv into the container's env as given: it must be valid Kubernetes EnvVars
    validate_kubernetes({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
                         "spec": {"containers": [{"name": "exporter", "image": "i", "env": env}]}})
    # the engine it connects to is the agent's, which the add-on runs on the tainted GPU nodes
    agent = offline.unwrap(rec.one("aws:eks/addon:Addon", "k3-node-monitoring").inputs)
    assert agent["addonName"] == "eks-node-monitoring-agent"
    assert json.loads(agent["configurationValues"])["dcgmAgent"]["tolerations"][0]["key"] == "nvidia.com/gpu"


def test_the_server_waits_for_the_gpu_pool_and_identities_the_sync_only_for_identities():
    rec = plan("aws-eks").recording
    urn = {r.name: r.urn for r in rec.resources}
    server = rec.one("k3infra:index:ModelServer").dependencies
    assert {urn["k3-gpu-nodes"], urn["k3-gpu-nvidia-device-plugin"], urn["k3-weights-reader-identity"],
            urn["k3-weights-writer-identity"], urn["k3-weights-mountpoint"], urn["k3-sync-job"]} <= set(server)
    sync = rec.one("k3infra:index:WeightSync").dependencies
    assert urn["k3-weights-writer-identity"] in sync
    assert urn["k3-gpu-nodes"] not in sync and urn["k3-gpu"] not in sync


def test_eks_server_mounts_the_bucket_as_its_own_read_only_identity():
    rec = plan("aws-eks").recording
    pv = offline.unwrap(rec.one("kubernetes:core/v1:PersistentVolume").inputs)["spec"]
    assert pv["csi"]["driver"] == "s3.csi.aws.com"
    assert pv["csi"]["volumeAttributes"]["authenticationSource"] == "pod"
    assert pv["accessModes"] == ["ReadOnlyMany"] and "read-only" in pv["mountOptions"]
    pod = offline.unwrap(rec.one("kubernetes:apps/v1:Deployment").inputs)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "k3-server"
    assert pod["nodeSelector"] == {"k3infra.io/pool": "k3-gpu"}
    (engine,) = pod["containers"]
    assert engine["resources"]["requests"] == {"cpu": "163", "memory": "3481Gi", "nvidia.com/gpu": "8"}


PRIVATE_SUBNETS = ["10.0.0.0/18", "10.0.64.0/18"]


def test_eks_gateway_is_agentgateway_behind_an_internal_nlb():
    """EKS has no inference gateway: the stack installs agentgateway; its Service takes the internal NLB's
    annotations, a public endpoint the internet-facing scheme."""
    assert installed_gateway_spec(plan("aws-eks").recording)["infrastructure"] == {"annotations": {
        "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
        "service.beta.kubernetes.io/aws-load-balancer-internal": "true"}, "parametersRef": {"group": "agentgateway.dev", "kind": "AgentgatewayParameters", "name": "k3-gateway-proxy"}}
    public = installed_gateway_spec(plan("aws-eks", "endpoint.exposure=public", "endpoint.allowedCidrs=[203.0.113.0/24]",
                                         "apiKey=sk-test").recording)
    assert "service.beta.kubernetes.io/aws-load-balancer-internal" not in public["infrastructure"]["annotations"]


def test_eks_endpoint_is_an_internal_nlb_for_the_private_subnets_only():
    rec = plan("aws-eks", "endpoint.gateway=false").recording
    svc = offline.unwrap(rec.one("kubernetes:core/v1:Service", "k3-server-internal").inputs)
    assert svc["metadata"]["annotations"] == {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
                                              "service.beta.kubernetes.io/aws-load-balancer-internal": "true"}
    assert svc["spec"]["type"] == "LoadBalancer" and svc["spec"]["loadBalancerSourceRanges"] == PRIVATE_SUBNETS


def test_eks_server_network_policy_is_enforced_and_admits_the_private_subnets_not_the_vpc():
    rec = plan("aws-eks").recording
    cni = offline.unwrap(rec.one("aws:eks/addon:Addon", "k3-vpc-cni").inputs)
    assert json.loads(cni["configurationValues"]) == {"enableNetworkPolicy": "true"}
    policy = offline.unwrap(rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy").inputs)
    blocks = [peer["ipBlock"]["cidr"] for rule in policy["spec"]["ingress"] for peer in rule["from"] if "ipBlock" in peer]
    assert blocks == PRIVATE_SUBNETS and "10.0.0.0/16" not in blocks


def test_eks_gpu_nodes_consume_the_stack_block_in_the_capacity_subnet():
    rec = plan("aws-eks").recording
    lt = offline.unwrap(rec.one("aws:ec2/launchTemplate:LaunchTemplate").inputs)
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"] == \
        "cr-0123456789abcdef0"
    ng = offline.unwrap(rec.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes").inputs)
    capacity_subnet = offline.unwrap(rec.one("aws:ec2/subnet:Subnet", "k3-private-capacity").inputs)
    assert capacity_subnet["availabilityZone"] == "us-west-2a"
    assert ng["subnetIds"] == [f"subnet-{offline_state.aws.digest('k3-private-capacity', 17)}"]
    assert ng["capacityType"] == "CAPACITY_BLOCK" and ng["clusterName"] == "k3-aws-eks"


def test_eks_outputs():
    out = plan("aws-eks").recording.outputs
    assert {"endpoint", "servedModelName", "kubeconfig", "bucketUri", "capacity", "capacityStartTime",
            "capacityEndTime", "sizing", "monthlyCost", "billingAfterDestroy", "clusterName", "region"} <= set(out)
    assert isinstance(out["kubeconfig"], offline.Secret)
    assert out["servedModelName"] == "Kimi-K3"
    assert out["bucketUri"] == "s3://my-org-kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert out["capacity"]["reservationId"] == "cr-0123456789abcdef0"
    assert out["capacity"]["availabilityZone"] == "us-west-2a" and out["capacity"]["purchased"] is False
    assert out["capacityStartTime"] == out["capacity"]["start"] == "2026-12-01T11:30:00Z"
    assert out["capacityEndTime"] == out["capacity"]["end"] == "2026-12-15T11:30:00Z"
    assert out["capacity"]["phase"] == "active"
    billing = out["billingAfterDestroy"]
    assert any(b.startswith("Capacity Block cr-0123456789abcdef0 was paid at purchase") for b in billing)
    assert any(b.startswith("S3 bucket my-org-kimi-k3-weights is retained") for b in billing)


def test_eks_bucket_waits_for_nodes_before_the_mountpoint_add_on():
    rec = plan("aws-eks").recording
    system = rec.one("aws:eks/nodeGroup:NodeGroup", "k3-system").urn
    assert system in rec.one("aws:eks/addon:Addon", "k3-weights-mountpoint").dependencies


def test_a_block_in_another_zone_stops_the_plan(monkeypatch):
    original = offline_state._FUNCTIONS["aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"]
    monkeypatch.setitem(offline_state._FUNCTIONS, "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation",
                        lambda args: {**original(args), "availabilityZone": "us-west-2c"})
    with pytest.raises(ConfigError) as e:
        planning.plan("aws-eks", root=ROOT)
    (p,) = e.value.problems
    assert p.key == "k3infra:zone"
    assert "Capacity Block cr-0123456789abcdef0 is in us-west-2c, and the GPU subnet is in us-west-2a" in p.reason
    r = CliRunner().invoke(cli.app, ["plan", "aws-eks"], catch_exceptions=False)
    assert r.exit_code == 2 and "k3infra:zone" in r.stderr and "Traceback" not in r.output


def test_an_expired_block_of_the_wrong_size_stops_the_plan(monkeypatch):
    original = offline_state._FUNCTIONS["aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"]
    monkeypatch.setitem(offline_state._FUNCTIONS, "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation",
                        lambda args: {**original(args), "state": "expired", "instanceType": "p5en.48xlarge"})
    with pytest.raises(ConfigError) as e:
        planning.plan("aws-eks", root=ROOT)
    assert [p.reason.split(",")[0] for p in e.value.problems] == [
        "Capacity Block cr-0123456789abcdef0 holds p5en.48xlarge",
        "Capacity Block cr-0123456789abcdef0 is expired (it ended 2026-12-15T11:30:00Z)",
    ]


def block_answer(monkeypatch, **fields):
    """Have the offline Capacity Block lookup answer with ``fields`` changed."""
    token = "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"
    original = offline_state._FUNCTIONS[token]
    monkeypatch.setitem(offline_state._FUNCTIONS, token, lambda args: {**original(args), **fields})


def test_an_active_block_runs_its_nodes_now_and_the_server_is_awaited():
    rec = plan("aws-eks").recording
    assert offline.unwrap(rec.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes").inputs)["scalingConfig"] == {
        "desiredSize": 1, "minSize": 0, "maxSize": 1}
    assert not rec.by_type("aws:autoscaling/schedule:Schedule")
    meta = offline.unwrap(rec.one("kubernetes:apps/v1:Deployment").inputs)["metadata"]
    assert "pulumi.com/skipAwait" not in meta["annotations"] and "pulumi.com/timeoutSeconds" in meta["annotations"]


def test_a_block_not_yet_active_scales_up_at_its_start_and_up_does_not_wait(monkeypatch):
    """capacity-blocks-mng: with desired 0 at creation, scale up with a scheduled action at the block's start."""
    block_answer(monkeypatch, state="scheduled", startDate="2026-12-20T11:30:00Z", endDate="2026-12-27T11:30:00Z")
    p = planning.plan("aws-eks", root=ROOT)
    rec = p.recording
    ng = offline.unwrap(rec.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes").inputs)
    assert ng["scalingConfig"] == {"desiredSize": 0, "minSize": 0, "maxSize": 1}
    sched = offline.unwrap(rec.one("aws:autoscaling/schedule:Schedule", "k3-gpu-scale-up").inputs)
    assert (sched["startTime"], sched["desiredCapacity"]) == ("2026-12-20T11:30:00Z", 1)
    meta = offline.unwrap(rec.one("kubernetes:apps/v1:Deployment").inputs)["metadata"]
    assert meta["annotations"]["pulumi.com/skipAwait"] == "true" and "pulumi.com/timeoutSeconds" not in meta["annotations"]
    assert any(w.startswith("Capacity Block cr-0123456789abcdef0 is not active until 2026-12-20T11:30:00Z: the GPU node "
                            "group is created at 0 nodes and a scheduled action scales it to 1 then; `pulumi up` does "
                            "not wait for the model server (pulumi.com/skipAwait)") for w in p.warnings)
    assert rec.outputs["capacityStartTime"] == "2026-12-20T11:30:00Z"
    assert rec.outputs["capacity"]["phase"] == "not-started"


def test_a_block_ending_within_the_margin_is_warned_about_and_the_margin_is_configurable(monkeypatch):
    block_answer(monkeypatch, endDate="2026-12-02T06:00:00Z")
    warned = [w for w in planning.plan("aws-eks", root=ROOT).warnings if "capacity.endMarginHours" in w]
    assert warned == ["Capacity Block cr-0123456789abcdef0 ends 2026-12-02T06:00:00Z, within capacity.endMarginHours "
                      "(24 h) of the plan's date: the GPU nodes stop then (EKS scales a Capacity Block's group to zero "
                      "40 minutes before its end)"]
    narrow = ("capacity={type: capacity-block, reservationId: cr-0123456789abcdef0, endMarginHours: 12}",)
    assert not [w for w in planning.plan("aws-eks", narrow, root=ROOT).warnings if "capacity.endMarginHours" in w]


def test_a_block_in_its_last_40_minutes_stays_at_zero(monkeypatch):
    block_answer(monkeypatch, endDate="2026-12-01T12:30:00Z")
    p = planning.plan("aws-eks", root=ROOT)
    ng = offline.unwrap(p.recording.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes").inputs)
    assert ng["scalingConfig"]["desiredSize"] == 0
    assert any("EKS has scaled its node group to zero" in w for w in p.warnings)


PURCHASE = ("capacity={type: capacity-block, purchase: true, durationHours: 168, startAfter: 2026-12-01, "
            "endBefore: 2026-12-31}",)


def test_a_purchase_shows_the_upfront_fee_and_the_window():
    p = plan("aws-eks", *PURCHASE)
    warning = next(w for w in p.warnings if w.startswith("capacity.purchase is true: `pulumi up` buys Capacity Block offering"))
    assert "(1 x p6-b300.48xlarge in us-west-2a, 168 hours between 2026-12-01T00:00:00Z and 2026-12-31T23:59:59Z)" in warning
    assert "upfront fee of USD 18,869.76, charged at purchase and not refundable" in warning
    (offer,) = [i for i in p.recording.invocations if i.token.endswith("getCapacityBlockOffering")]
    assert offer.args == {"capacityDurationHours": 168, "instanceCount": 1, "instanceType": "p6-b300.48xlarge",
                          "startDateRange": "2026-12-01T00:00:00Z", "endDateRange": "2026-12-31T23:59:59Z",
                          "region": "us-west-2"}
    block = p.recording.one("aws:ec2/capacityBlockReservation:CapacityBlockReservation")
    assert block.retain_on_delete
    out = p.recording.outputs
    assert out["capacity"]["purchased"] is True and out["capacity"]["upfrontFee"] == "18869.76"
    assert out["capacityEndTime"] == out["capacity"]["end"]
    assert any("does not cancel or refund it" in b for b in out["billingAfterDestroy"])
    # The window opened before the plan's date: the block may start now or later; nothing waits for it.
    ng = offline.unwrap(p.recording.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes").inputs)
    assert ng["scalingConfig"]["desiredSize"] == 1 and not p.recording.by_type("aws:autoscaling/schedule:Schedule")
    meta = offline.unwrap(p.recording.one("kubernetes:apps/v1:Deployment").inputs)["metadata"]
    assert meta["annotations"]["pulumi.com/skipAwait"] == "true"


def test_a_purchase_for_a_later_window_schedules_the_scale_up_at_the_bought_blocks_start():
    p = plan("aws-eks", "capacity={type: capacity-block, purchase: true, durationHours: 168, startAfter: 2026-12-20, "
                        "endBefore: 2026-12-31}")
    block = p.recording.one("aws:ec2/capacityBlockReservation:CapacityBlockReservation")
    sched = offline.unwrap(p.recording.one("aws:autoscaling/schedule:Schedule").inputs)
    assert sched["startTime"] == offline.unwrap(block.outputs)["startDate"]
    ng = offline.unwrap(p.recording.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes").inputs)
    assert ng["scalingConfig"]["desiredSize"] == 0


def test_a_purchase_offered_in_another_zone_stops_before_buying(monkeypatch):
    original = offline_state._FUNCTIONS["aws:ec2/getCapacityBlockOffering:getCapacityBlockOffering"]
    monkeypatch.setitem(offline_state._FUNCTIONS, "aws:ec2/getCapacityBlockOffering:getCapacityBlockOffering",
                        lambda args: {**original(args), "availabilityZone": "us-west-2d"})
    registered = []

    class Spy(offline.RecordingMonitor):
        def RegisterResource(self, request):  # noqa: N802
            registered.append(request.type)
            return super().RegisterResource(request)

    monkeypatch.setattr(offline, "RecordingMonitor", Spy)
    with pytest.raises(ConfigError) as e:
        planning.plan("aws-eks", PURCHASE, root=ROOT)
    assert e.value.problems[0].key == "k3infra:zone" and "offering" in e.value.problems[0].reason
    assert "aws:ec2/capacityBlockReservation:CapacityBlockReservation" not in registered


def test_on_demand_eks_stack():
    p = plan("aws-eks", "capacity={type: on-demand}")
    ng = offline.unwrap(p.recording.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes").inputs)
    assert ng["capacityType"] == "ON_DEMAND"
    assert p.recording.outputs["capacity"]["type"] == "on-demand"


def test_p5en_two_nodes_get_efa_for_the_pipeline():
    p = plan("aws-eks", "accelerator=p5en.48xlarge")
    rec = p.recording
    assert offline.unwrap(rec.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes").inputs)["scalingConfig"]["maxSize"] == 2
    assert rec.one("kubernetes:helm.sh/v4:Chart", "k3-gpu-efa-device-plugin")


# --- aws-hyperpod ---------------------------------------------------------------------------------------------


def test_hyperpod_stack_composes_cluster_bucket_sync_hyperpod_and_endpoint():
    top = [(t, n) for t, n, parent in inventory(plan("aws-hyperpod").recording) if parent is None]
    assert top == [("k3infra:aws:EksSyncNodeGroup", "k3-sync-nodes"),
                   ("k3infra:index:EksCluster", "k3"), ("k3infra:index:HyperPodCluster", "k3-hyperpod"),
                   ("k3infra:index:HyperPodEndpoint", "k3-endpoint"), ("k3infra:index:S3WeightBucket", "k3-weights"),
                   ("k3infra:index:WeightSync", "k3-sync"), ("kubernetes:core/v1:Namespace", "k3-namespace"),
                   ("kubernetes:core/v1:ServiceAccount", "k3-writer")]
    # the sync node group's 8 with its own; the node weights' role, its policy and ServiceAccount; the image pre-pull's
    # component, DaemonSet and NetworkPolicy
    assert len(plan("aws-hyperpod").recording.resources) == 95


def test_hyperpod_endpoint_starts_after_the_weights_are_in_s3():
    rec = plan("aws-hyperpod").recording
    urn = {r.name: r.urn for r in rec.resources}
    # A dependency on a component is recorded as its children: the Job, the HyperPod cluster.
    assert {urn["k3-sync-job"], urn["k3-namespace"], urn["k3-hyperpod-cluster"]} <= set(
        rec.one("k3infra:index:HyperPodEndpoint").dependencies)
    iec = rec.one("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig")
    assert urn["k3-sync-job"] in iec.dependencies
    job = offline.unwrap(rec.one("kubernetes:batch/v1:Job").inputs)["spec"]["template"]["spec"]
    assert job["serviceAccountName"] == "k3-weight-sync"
    terms = job["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "k3infra.io/pool", "operator": "NotIn", "values": ["k3-hyperpod"]} in terms[0]["matchExpressions"]


def test_hyperpod_without_sync_makes_only_the_namespace():
    p = plan("aws-hyperpod", "weights.sync=false")
    assert not p.recording.by_type("k3infra:index:WeightSync")
    assert p.recording.one("kubernetes:core/v1:Namespace", "k3-namespace")


def test_hyperpod_eks_cluster_has_an_oidc_provider_and_a_supported_version():
    rec = plan("aws-hyperpod").recording
    assert rec.one("aws:iam/openIdConnectProvider:OpenIdConnectProvider")
    # the newest HyperPod supports, in EKS standard support until 2026-12-02 (the tests' plan date: 2026-12-01)
    assert offline.unwrap(rec.one("aws:eks/cluster:Cluster").inputs)["version"] == "1.34"
    assert not [w for w in plan("aws-hyperpod").warnings if "standard support" in w]


def test_default_kubernetes_versions_are_in_standard_support_on_the_plan_date():
    assert offline.unwrap(plan("aws-eks").recording.one("aws:eks/cluster:Cluster").inputs)["version"] == "1.35"
    assert not [w for w in plan("aws-eks").warnings if "standard support" in w]


def test_a_version_out_of_standard_support_is_warned_about(monkeypatch):
    monkeypatch.setenv("K3INFRA_PLAN_TIME", "2026-12-03T00:00:00Z")
    warned = [w for w in planning.plan("aws-hyperpod", root=ROOT).warnings if "standard support" in w]
    assert warned == ["Kubernetes 1.34 (k3infra's default) left EKS standard support on 2026-12-02 and is in extended "
                      "support (EKS bills USD 0.60 instead of 0.10 per cluster hour); versions in standard support on "
                      "2026-12-03: 1.35"]
    pinned = planning.plan("aws-eks", ("cluster={kubernetesVersion: '1.34'}",), root=ROOT).warnings
    assert any(w.startswith("Kubernetes 1.34 (cluster.kubernetesVersion) left EKS standard support on 2026-12-02")
               for w in pinned)


def test_hyperpod_instance_group_uses_the_stacks_training_plan():
    rec = plan("aws-hyperpod").recording
    (group,) = offline.unwrap(rec.one("aws-native:sagemaker:Cluster").inputs)["instanceGroups"]
    assert group["trainingPlanArn"] == "arn:aws:sagemaker:us-west-2:123456789012:training-plan/k3-p6-b300"
    assert group["instanceType"] == "ml.p6-b300.48xlarge" and group["instanceCount"] == 1


def test_inference_endpoint_config_validates_against_its_crd():
    obj = iec_object(plan("aws-hyperpod"))
    assert crd_errors(obj) == []


def test_crd_validation_is_strict():
    obj = iec_object(plan("aws-hyperpod", "nodeWeights=false"))
    obj["spec"]["worker"]["tolerations"] = []
    obj["spec"]["modelSourceConfig"]["s3Storage"]["prefix"] = "x"
    found = crd_errors(obj)
    assert len(found) == 2 and all("Additional properties are not allowed" in e for e in found)


def test_inference_endpoint_serves_the_canonical_vllm_command_from_s3():
    p = plan("aws-hyperpod", "nodeWeights=false")
    spec = iec_object(p)["spec"]
    cmd = vllm_command(p.config, model="/opt/ml/model")
    assert spec["worker"]["args"] == cmd.api_server_args()
    args = spec["worker"]["args"]
    for flag, value in (("--tool-call-parser", "kimi_k3"), ("--reasoning-parser", "kimi_k3"),
                        ("--served-model-name", "Kimi-K3"), ("--tensor-parallel-size", "8"),
                        ("--load-format", "fastsafetensors"), ("--model", "/opt/ml/model")):
        assert args[args.index(flag) + 1] == value
    assert spec["worker"]["environmentVariables"] == [{"name": k, "value": v} for k, v in cmd.env.items()]
    assert [e["name"] for e in spec["worker"]["environmentVariables"]] == [
        "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION",  # kept for the day-0 image (catalog/recipes.py IGNORED_ENV)
        "VLLM_ALLREDUCE_USE_FLASHINFER", "VLLM_USE_V2_MODEL_RUNNER", "VLLM_USE_RUST_FRONTEND",  # recipe, Blackwell
        "VLLM_ENGINE_READY_TIMEOUT_S"]
    assert spec["modelSourceConfig"] == {"modelSourceType": "s3", "modelLocation": "models/moonshotai/Kimi-K3",
                                         "prefetchEnabled": True,
                                         "s3Storage": {"bucketName": "my-org-kimi-k3-weights-hyperpod",
                                                       "region": "us-west-2"}}
    assert "huggingFaceModel" not in spec["modelSourceConfig"]
    assert spec["instanceType"] == "ml.p6-b300.48xlarge" and spec["modelName"] == "Kimi-K3"


def test_the_hyperpod_worker_requests_and_is_limited_to_the_machines_cpu_and_memory():
    """The operator prefetches the model into the instance's memory (CRD prefetchEnabled); its S3 prefetch sample
    requests CPU and memory (cpu 100000m, memory 384Gi on a g5.48xlarge). Without them the worker is BestEffort."""
    p = plan("aws-hyperpod")
    resources = iec_object(p)["spec"]["worker"]["resources"]
    amounts = {"cpu": "163", "memory": "3481Gi", "nvidia.com/gpu": 8}  # 85 % of 192 vCPUs and 4,096 GiB, 8 GPUs
    assert resources == {"limits": amounts, "requests": amounts}
    machine = p.config.accelerator
    assert (machine.sku, machine.vcpus, machine.host_memory_gib) == ("ml.p6-b300.48xlarge", 192, 4096)
    # the prefetched model fits in the worker's memory with room for the engine
    assert p.config.model.weight_bytes < 0.5 * 3481 * 2**30
    # the same share the EKS pool's server asks of a p6-b300.48xlarge
    eks = offline.unwrap(plan("aws-eks").recording.one("kubernetes:apps/v1:Deployment").inputs)
    (engine,) = [c for c in eks["spec"]["template"]["spec"]["containers"] if c["name"] == "engine"]
    assert {k: v for k, v in engine["resources"]["limits"].items() if k in ("cpu", "memory")} == {
        "cpu": "163", "memory": "3481Gi"}


def test_a_model_the_hyperpod_worker_cannot_hold_in_memory_is_refused():
    from k3infra.aws.hyperpod_weights import prefetch_fits

    cfg = plan("aws-hyperpod", "nodeWeights=false").config
    prefetch_fits(cfg)
    small = dataclasses.replace(cfg.accelerator, host_memory_gib=1024)
    prefetch_fits(dataclasses.replace(plan("aws-hyperpod").config, accelerator=small))  # the node's copy: no prefetch
    with pytest.raises(ConfigError) as e:
        prefetch_fits(dataclasses.replace(cfg, accelerator=small))
    (problem,) = e.value.problems
    assert problem.key == "k3infra:accelerator"
    assert "prefetches the model (1,453 GiB) into the worker's memory, and a ml.p6-b300.48xlarge worker has 870Gi" \
        in problem.reason


def test_deploy_time_and_start_up_probe_come_from_the_sizing():
    p = plan("aws-hyperpod")
    s = p.config.sizing
    spec = iec_object(p)["spec"]
    # the sizing's await budget covers a pod that fills its instance's copy first (one copier process, 8 Gbps at the
    # pessimistic end: 1,560 s) then reads it and warms up: 1.5 x (1,560 + 130 + 600) + image pull + scheduling,
    # above the operator's own default of 3,600 s (never asked for less)
    assert s.await_timeout_seconds == 3860 and spec["maxDeployTimeInSeconds"] == 3860
    startup = spec["worker"]["probes"]["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= s.probe_budget_seconds
    assert startup["httpGet"] == {"path": "/health", "port": 8000}
    assert spec["loadBalancer"] == {"healthCheckPath": "/health"}


def test_deep_health_checks_are_off_by_default_and_when_on_count_in_the_pool_the_deadline_and_the_cold_start():
    """Issue 36 major 3: InstanceStress kept the only instance Unschedulable for hours after every replacement, past
    the endpoint's one-hour deadline. Off by default (a group without spares); on, every HyperPod instance runs
    them and their time goes into the GPU pool phase, the operator's deadline and Pulumi's wait."""
    off, on = plan("aws-hyperpod"), plan("aws-hyperpod", "aws.deepHealthChecks=true")
    groups = [offline.unwrap(p.recording.one("aws-native:sagemaker:Cluster").inputs)["instanceGroups"][0] for p in (off, on)]
    assert ["onStartDeepHealthChecks" in groups[0], groups[1]["onStartDeepHealthChecks"]] == [False, ["InstanceStress"]]
    pools = [dict((ph.name, ph.seconds) for ph in p.config.sizing.cold_start.phases)["GPU pool"] for p in (off, on)]
    assert pools == [25 * 60, 25 * 60 + 3 * 3600]
    assert on.config.sizing.cold_start.total_seconds - off.config.sizing.cold_start.total_seconds == 3 * 3600
    deadlines = [(iec_object(p)["spec"]["maxDeployTimeInSeconds"],
                  iec_object(p)["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) for p in (off, on)]
    assert deadlines == [(3860, "3860"), (3860 + 3 * 3600, str(3860 + 3 * 3600))]
    assert any(w.startswith("aws.deepHealthChecks is true: every new or replacement HyperPod instance runs deep health "
                            "checks (up to ~3 h") for w in on.warnings)
    assert not [w for w in off.warnings if "deep health" in w]


def test_with_deep_health_checks_the_update_that_creates_the_cluster_leaves_the_endpoint_out(monkeypatch):
    """The operator's deadline runs from the InferenceEndpointConfig's creation: on the update that creates the
    HyperPod cluster, whose instances start in their checks, the endpoint is not created; once the cluster exists
    it is (never withdrawn: its instance may be a replacement in its checks)."""
    from k3infra.aws import hyperpod_nodes

    iec = "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"
    late = ("no instance of HyperPod cluster k3-aws-hyperpod is Running yet (DeepHealthCheckInProgress): `pulumi up` "
            "waits for the endpoint up to its deadline (14660 s, which includes the deep health checks)")
    for check, created, warned in ((hyperpod_nodes.NodesCheck(False), False, False),
                                   (hyperpod_nodes.NodesCheck(True, ("DeepHealthCheckInProgress",)), True, True),
                                   (hyperpod_nodes.NodesCheck(True, ("Running",)), True, False)):
        monkeypatch.setattr(hyperpod_nodes, "lookup", lambda *a, check=check, **k: check)
        p = planning.plan("aws-hyperpod", ("aws.deepHealthChecks=true",), root=ROOT)
        assert bool(p.recording.by_type(iec)) is created
        assert (p.recording.outputs["endpoint"] == "") is not created
        waits = [w for w in p.warnings if "is created by this update, and its instances run deep health checks" in w]
        assert bool(waits) is not created
        assert (late in p.warnings) is warned


def test_hyperpod_mountpoint_driver_reads_its_role_through_irsa_and_the_endpoint_waits_for_it():
    """Issue 36 blocker 1: the Mountpoint driver v1.14.1 that helm_to_addon.sh pins reads secrets, driver-level IRSA
    or the instance profile, never EKS Pod Identity (v1.14.1 docs/CONFIGURATION.md); a Pod Identity association left
    it on the instance role, which may read sagemaker-* buckets only, so the model never mounted. Its role is an IRSA
    role of kube-system/s3-csi-driver-sa on the cluster's OIDC provider, read-only on the bucket."""
    rec = plan("aws-hyperpod").recording
    mount = rec.one("aws:eks/addon:Addon", "k3-weights-mountpoint")
    addon = offline.unwrap(mount.inputs)
    assert (addon["addonVersion"], "podIdentityAssociations" in addon) == ("v1.14.1-eksbuild.1", False)
    role = rec.one("aws:iam/role:Role", "k3-weights-mountpoint")
    assert addon["serviceAccountRoleArn"] == offline.unwrap(role.outputs)["arn"]
    oidc = offline.unwrap(rec.one("aws:iam/openIdConnectProvider:OpenIdConnectProvider").outputs)
    host = oidc["url"].removeprefix("https://")
    assert json.loads(offline.unwrap(role.inputs)["assumeRolePolicy"])["Statement"] == [{
        "Effect": "Allow", "Principal": {"Federated": oidc["arn"]}, "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {f"{host}:sub": "system:serviceaccount:kube-system:s3-csi-driver-sa",
                                       f"{host}:aud": "sts.amazonaws.com"}}}]
    policy = rec.one("aws:iam/rolePolicy:RolePolicy", "k3-weights-mountpoint-weights")
    assert json.loads(offline.unwrap(policy.inputs)["policy"]) == policies.s3_read_only(
        "arn:aws:s3:::my-org-kimi-k3-weights-hyperpod")
    assert policy.urn in mount.dependencies
    operator = rec.one("aws:eks/addon:Addon", "k3-endpoint-inference-operator")
    assert mount.urn in operator.dependencies


def test_hyperpod_outputs():
    out = plan("aws-hyperpod").recording.outputs
    assert out["endpoint"].startswith("https://internal-k8s-") and out["endpoint"].endswith("/v1/chat/completions")
    assert isinstance(out["kubeconfig"], offline.Secret)
    assert out["capacity"] == {
        "type": "training-plan", "trainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/k3-p6-b300",
        "start": None, "end": None,
        "windowCommand": "aws sagemaker describe-training-plan --region us-west-2 --training-plan-name k3-p6-b300 "
                         "--query '[StartTime,EndTime,Status]'"}
    assert out["capacityStartTime"] is None and out["capacityEndTime"] is None
    assert any(b.startswith("Flexible Training Plan arn:aws:sagemaker") for b in out["billingAfterDestroy"])
    assert out["hyperpodClusterArn"].startswith("arn:aws:sagemaker:us-west-2:123456789012:cluster/")


def test_two_replicas_are_two_instances_and_two_endpoint_replicas():
    p = plan("aws-hyperpod", "replicas=2")
    (group,) = offline.unwrap(p.recording.one("aws-native:sagemaker:Cluster").inputs)["instanceGroups"]
    assert group["instanceCount"] == 2 and iec_object(p)["spec"]["replicas"] == 2
    assert crd_errors(iec_object(p)) == []


def test_the_spec_builder_alone_validates_too():
    obj = inference_endpoint_config(
        name="m", namespace="n", model_name="Kimi-K3", instance_type="ml.p6-b300.48xlarge", replicas=1,
        image="i", args=["--model", "/opt/ml/model"], env={"A": "1"}, port=8000, health_path="/health", gpus=8,
        cpu="163", memory="3481Gi", bucket_name="b", region="us-west-2", model_location="models/x", prefetch=False, max_deploy_seconds=3600,
        startup_budget_seconds=1)
    assert crd_errors(obj) == []
    assert obj["spec"]["worker"]["probes"]["startupProbe"]["failureThreshold"] == 1
    assert json.loads(json.dumps(obj)) == obj


def test_hyperpod_iam_keeps_the_least_privilege_rule():
    """The ENI policy and the vendored ALB controller policy pass the pack's least-privilege-iam rule."""
    from k3infra import policy_rules as pr
    from tests.ecosystem import policy_programs as pp

    res = pp.resources(plan("aws-hyperpod").recording)
    names = {r.name for r in res if r.type == "aws:iam/rolePolicy:RolePolicy"}
    assert {"k3-hyperpod-execution-eni", "k3-endpoint-alb"} <= names
    assert list(pr.check_least_privilege(res, {})) == []


# --- issue 23 -----------------------------------------------------------------------------------------------------


def test_the_amp_workspace_ignores_the_tag_its_scraper_adds():
    """A managed scraper tags its destination workspace AMPAgentlessScraper (pulumi-aws amp.Scraper, "Ignoring changes
    to Prometheus Workspace destination"); after a refresh the next `pulumi up` would remove it."""
    ws = plan("aws-eks").recording.one("aws:amp/workspace:Workspace")
    assert ws.ignore_changes == ('tags["AMPAgentlessScraper"]',)
    (planned,) = [r for r in plan("aws-eks").to_json()["resources"] if r["urn"] == ws.urn]
    assert planned["options"] == {"ignoreChanges": ['tags["AMPAgentlessScraper"]']}


def test_the_operator_scrapes_the_engines_own_metrics_port():
    """The CRD's metrics.modelMetrics.port defaults to 8080; vLLM serves /metrics on its API port."""
    p = plan("aws-hyperpod")
    spec = iec_object(p)["spec"]
    assert spec["metrics"] == {"enabled": True, "modelMetrics": {"port": p.config.engine.port,
                                                                  "path": p.config.engine.metrics_path}}
    assert spec["metrics"]["modelMetrics"]["port"] == spec["worker"]["modelInvocationPort"]["containerPort"] == 8000
    assert crd_errors(iec_object(p)) == []


def test_hyperpod_add_ons_are_pinned_as_upstreams_migration_script_pins_them():
    """helm_to_addon.sh (aws/sagemaker-hyperpod-cli at 011ca92) pins the four dependencies; the inference add-on is
    the release of the vendored CRD (operator v3.2: the inference release notes' v1.3.0-eksbuild.1), which has the
    kubernetesVolume source and custom service accounts (v3.1.2, add-on v1.2.0) that the script's v1.0.0 lacks."""
    rec = plan("aws-hyperpod").recording
    versions = {offline.unwrap(r.inputs)["addonName"]: offline.unwrap(r.inputs).get("addonVersion")
                for r in rec.by_type("aws:eks/addon:Addon")}
    assert {k: versions[k] for k in ("amazon-sagemaker-hyperpod-inference", "aws-mountpoint-s3-csi-driver",
                                     "aws-fsx-csi-driver", "cert-manager", "metrics-server")} == {
        "amazon-sagemaker-hyperpod-inference": "v1.3.0-eksbuild.1",
        "aws-mountpoint-s3-csi-driver": "v1.14.1-eksbuild.1",
        "aws-fsx-csi-driver": "v1.6.0-eksbuild.1",
        "cert-manager": "v1.18.2-eksbuild.2",
        "metrics-server": "v0.7.2-eksbuild.4",
    }


def test_the_vendored_alb_policy_is_the_pinned_add_ons_controller_version():
    """The ALB role's policy is read for the controller the pinned add-on runs; its file and SOURCES.md row exist."""
    from k3infra.aws import hyperpod, policies

    controller = hyperpod.INFERENCE_ADDON_ALB_CONTROLLER[hyperpod.INFERENCE_ADDON_VERSION]
    assert (hyperpod.INFERENCE_ADDON_VERSION, controller) == ("v1.3.0-eksbuild.1", "v2.13.2")
    vendored = policies.load_balancer_controller_policy_file(controller)
    sources = (policies.VENDOR / "SOURCES.md").read_text()
    row = next(line for line in sources.splitlines() if vendored.name in line)
    assert f"| {controller} (" in row and hyperpod.INFERENCE_ADDON_VERSION in sources
    alb = json.loads(offline.unwrap(plan("aws-hyperpod").recording.one("aws:iam/rolePolicy:RolePolicy",
                                                                       "k3-endpoint-alb").inputs)["policy"])
    assert alb == json.loads(vendored.read_text())


def test_eks_secrets_are_envelope_encrypted_with_a_rotating_key():
    """terraform-aws-modules/eks: a KMS key with rotation, encryptionConfig for secrets, and the cluster role allowed
    to use the key; the key policy lets only the cluster role use the key and the account administer it."""
    for stack in ("aws-eks", "aws-hyperpod"):
        rec = plan(stack).recording
        urn = {r.name: r.urn for r in rec.resources}
        key = offline.unwrap(rec.one("aws:kms/key:Key").inputs)
        assert key["enableKeyRotation"] is True and key["deletionWindowInDays"] == 30
        assert key["keyUsage"] == "ENCRYPT_DECRYPT" and key["customerMasterKeySpec"] == "SYMMETRIC_DEFAULT"
        eks = rec.one("aws:eks/cluster:Cluster")
        admin, usage = json.loads(key["policy"])["Statement"]
        assert admin["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}
        assert not {"kms:Encrypt", "kms:Decrypt", "kms:*"} & set(admin["Action"])
        role_arn = offline.unwrap(eks.inputs)["roleArn"]
        assert usage["Principal"] == {"AWS": role_arn} and role_arn.startswith("arn:aws:iam::123456789012:role/k3-cluster-role")
        assert usage["Action"] == ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*",
                                   "kms:DescribeKey"]
        config = offline.unwrap(eks.inputs)["encryptionConfig"]
        assert config["resources"] == ["secrets"] and config["provider"]["keyArn"].startswith("arn:aws:kms:")
        role_policy = json.loads(offline.unwrap(rec.one("aws:iam/rolePolicy:RolePolicy", "k3-cluster-encryption").inputs)[
            "policy"])
        (st,) = role_policy["Statement"]
        assert st["Action"] == ["kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey"]
        assert st["Resource"] == config["provider"]["keyArn"]
        assert urn["k3-cluster-encryption"] in eks.dependencies
        alias = offline.unwrap(rec.one("aws:kms/alias:Alias").inputs)
        assert alias["name"] == f"alias/eks/{plan(stack).config.cluster.name}"


def test_the_health_monitoring_agent_is_given_its_region():
    """The agent's image is regional; without a region the chart looks one up from the nodes (`lookup`, empty when
    rendered without a cluster) and falls back to us-east-1 (health-monitoring-agent/templates/_helpers.tpl)."""
    chart = offline.unwrap(plan("aws-hyperpod").recording.one("kubernetes:helm.sh/v4:Chart",
                                                              "k3-hyperpod-dependencies").inputs)
    assert chart["values"] == {"health-monitoring-agent": {"region": "us-west-2"}}
    from k3infra.aws.hyperpod import health_agent_region_warning

    assert health_agent_region_warning("us-west-2") is None
    assert health_agent_region_warning("il-central-1") == (
        "the HyperPod health-monitoring agent has no image in il-central-1 (its chart maps 17 regions): the chart "
        "pulls it from us-east-1, across regions")

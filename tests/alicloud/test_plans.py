"""The alicloud-ack and alicloud-pai stacks end to end: golden plan files and what each plan must hold.

The golden files are ``k3infra plan <stack> --format json``. After an intended change, regenerate them with
``K3INFRA_UPDATE_GOLDEN=1 pytest tests/alicloud/test_plans.py`` and review the diff.
"""

import json
import os

import pytest

from k3infra import offline
from k3infra.offline_state.alicloud import _hex, cluster_id
from tests.support import ROOT, installed_gateway_spec, plan

GOLDEN = ROOT / "tests" / "golden"
STACKS = ("alicloud-ack", "alicloud-pai")


def rendered(stack: str) -> str:
    """Exactly what `k3infra plan STACK --format json` prints."""
    return json.dumps(plan(stack).to_json(), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("stack", STACKS)
def test_plan_matches_golden(stack):
    path = GOLDEN / f"{stack}.json"
    text = rendered(stack)
    if os.environ.get("K3INFRA_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.is_file(), f"{path} is missing: run K3INFRA_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(), f"{stack} plan changed: review it, then K3INFRA_UPDATE_GOLDEN=1 to accept"


@pytest.fixture(scope="module")
def ack():
    return plan("alicloud-ack")


def types_of(p):
    return {(r.type, r.name) for r in p.recording.resources}


def test_ack_plan_holds_cluster_pool_bucket_and_identities(ack):
    t = types_of(ack)
    for needed in [
        ("k3infra:index:AckCluster", "k3"),
        ("alicloud:cs/managedKubernetes:ManagedKubernetes", "k3-cluster"),
        ("alicloud:cs/kubernetesAddon:KubernetesAddon", "k3-pod-identity"),
        ("alicloud:cs/nodePool:NodePool", "k3-system"),
        ("pulumi:providers:kubernetes", "k3-k8s"),
        ("k3infra:index:AckGpuNodePool", "k3-gpu"),
        ("alicloud:cs/nodePool:NodePool", "k3-gpu-pool"),
        ("k3infra:index:OssWeightBucket", "k3-weights"),
        ("alicloud:oss/bucket:Bucket", "k3-weights-bucket"),
        ("alicloud:oss/bucketAcl:BucketAcl", "k3-weights-acl"),
        ("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock", "k3-weights-public-access-block"),
        ("alicloud:ram/role:Role", "k3-weights-reader"),
        ("alicloud:ram/role:Role", "k3-weights-writer"),
    ]:
        assert needed in t


def test_ack_gpu_pool_has_the_sizings_node_count_not_the_seeds_two(ack):
    pool = offline.plain(ack.recording.one("alicloud:cs/nodePool:NodePool", "k3-gpu-pool").inputs)
    assert ack.config.sizing.nodes == 3
    assert pool["desiredSize"] == "3"
    assert pool["privatePoolOptions"] == {"privatePoolOptionsId": "crp-k3ebmgn8v0001",
                                          "privatePoolOptionsMatchCriteria": "Target"}
    assert {"key": "ack.aliyun.com/nvidia-driver-version", "value": "570.169"} in pool["labels"]


def test_ack_rrsa_roles_trust_the_clusters_oidc_provider(ack):
    rrsa = ack.recording.one("alicloud:cs/managedKubernetes:ManagedKubernetes", "k3-cluster").outputs["rrsaMetadata"]
    for role in ("k3-weights-reader", "k3-weights-writer"):
        doc = json.loads(ack.recording.one("alicloud:ram/role:Role", role).inputs["assumeRolePolicyDocument"])
        st = doc["Statement"][0]
        assert st["Principal"]["Federated"] == [rrsa["ramOidcProviderArn"]]
        assert st["Condition"]["StringEquals"]["oidc:iss"] == rrsa["rrsaOidcIssuerUrl"]


def test_ack_outputs(ack):
    out = ack.recording.outputs
    assert isinstance(out["kubeconfig"], offline.Secret)
    assert ack.to_json()["outputs"]["kubeconfig"] == "[secret]"
    assert out["servedModelName"] == "Kimi-K3"
    assert out["bucketUri"] == "oss://my-org-kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert out["sizing"]["nodes"] == 3 and out["monthlyCost"]["estimate"] is True
    assert out["billingAfterDestroy"] == [
        "OSS bucket oss://my-org-kimi-k3-weights is kept on destroy with the 1.56 TB of weights in it: Standard "
        "storage bills monthly until you delete it (002 §6.4; ossutil rm -r -f, then ossutil rb)",
        "ECS private pool crp-k3ebmgn8v0001 (capacity reservation or elasticity assurance) bills until it expires or "
        "you release it, whether or not nodes use it; the stack only consumes it",
    ]
    assert out["endpoint"] == out["endpoint"].split("/v1")[0], "the gateway's address, port 80"
    assert installed_gateway_spec(ack.recording)["infrastructure"] == {"annotations": {
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}, "parametersRef": {"group": "agentgateway.dev", "kind": "AgentgatewayParameters", "name": "k3-gateway-proxy"}}
    assert (out["servingNamespace"], out["serverService"], out["weightSyncJob"]) == ("kimi-k3", "k3-server",
                                                                                      "k3-sync")
    assert not any("has not landed" in w for w in out["warnings"])


def test_ack_serving_runs_on_the_gpu_pool_with_the_buckets_identities(ack):
    rec = ack.recording
    lws = offline.plain(rec.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet").inputs)
    tmpl = lws["spec"]["leaderWorkerTemplate"]
    assert tmpl["size"] == 3 and lws["spec"]["replicas"] == 1
    for role in ("leaderTemplate", "workerTemplate"):
        spec = tmpl[role]["spec"]
        assert spec["nodeSelector"] == {"k3infra.io/pool": "gpu"}
        assert spec["tolerations"] == [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]
        assert spec["serviceAccountName"] == "k3-server"
        assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    pv = offline.plain(rec.one("kubernetes:core/v1:PersistentVolume").inputs)
    assert pv["spec"]["csi"]["driver"] == "ossplugin.csi.alibabacloud.com"
    assert pv["spec"]["csi"]["volumeAttributes"]["authType"] == "rrsa"
    assert pv["spec"]["accessModes"] == ["ReadOnlyMany"]
    ns = offline.plain(rec.one("kubernetes:core/v1:Namespace", "k3-namespace").inputs)
    assert ns["metadata"]["labels"]["pod-identity.alibabacloud.com/injection"] == "on"
    svc = offline.plain(plan("alicloud-ack", "endpoint.gateway=false").recording.one(
        "kubernetes:core/v1:Service", "k3-server-internal").inputs)
    assert svc["metadata"]["annotations"] == {
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}
    assert svc["spec"]["loadBalancerSourceRanges"] == ["10.0.0.0/8"]
    sa = {r.name: offline.plain(r.inputs) for r in rec.by_type("kubernetes:core/v1:ServiceAccount")}
    assert sa["k3-reader"]["metadata"]["annotations"] == {
        "pod-identity.alibabacloud.com/role-name": "my-org-kimi-k3-weights-reader"}
    assert sa["k3-writer"]["metadata"]["annotations"] == {
        "pod-identity.alibabacloud.com/role-name": "my-org-kimi-k3-weights-writer"}


def test_ack_serving_waits_for_the_pool_and_the_identities(ack):
    rec = ack.recording
    server = rec.one("k3infra:index:ModelServer")
    deps = set(server.dependencies)
    for t, n in [("alicloud:cs/nodePool:NodePool", "k3-gpu-pool"), ("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment",
                 "k3-weights-reader-attachment"), ("alicloud:cs/kubernetesAddon:KubernetesAddon", "k3-pod-identity")]:
        assert rec.one(t, n).urn in deps
    sync = rec.one("k3infra:index:WeightSync")
    assert rec.one("alicloud:cs/nodePool:NodePool", "k3-gpu-pool").urn not in set(sync.dependencies)
    assert rec.one("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment", "k3-weights-writer-attachment").urn in \
        set(sync.dependencies)
    for r in rec.resources:
        if r.type.startswith("kubernetes:") and r.custom:
            assert r.provider is not None and "k3-k8s" in r.provider, r.name


def test_ack_lingjun_capacity_plan():
    # the stack's driver pin goes: a Lingjun node's OS image carries its driver (k3infra.catalog.ack)
    p = plan("alicloud-ack", "capacity={type: lingjun, lingjunClusterId: eflo-c1, lingjunNodeGroupId: ng-1}",
             "alicloud={acrInstanceId: cri-k3registry0001}")
    pool = offline.plain(p.recording.one("alicloud:cs/nodePool:NodePool", "k3-gpu-pool").inputs)
    assert pool["type"] == "lingjun" and pool["efloNodeGroup"] == {"clusterId": "eflo-c1", "groupId": "ng-1"}
    assert pool["labels"] == [{"key": "k3infra.io/pool", "value": "gpu"}]
    assert ("Lingjun node group ng-1 (cluster eflo-c1) is contracted through sales and bills per the contract: cancel "
            "it separately (002 §6.4)") in p.recording.outputs["billingAfterDestroy"]


def test_bucket_copy_loader_sizes_the_data_disk_for_the_local_copy():
    p = plan("alicloud-ack", "weights.loader=bucket-copy")
    pool = offline.plain(p.recording.one("alicloud:cs/nodePool:NodePool", "k3-gpu-pool").inputs)
    per_node = p.config.sizing.load.bytes_per_node / 1e9
    assert pool["dataDisks"][0]["size"] >= per_node * 1.2


def test_retain_opt_out_drops_the_bucket_note():
    p = plan("alicloud-ack", "weights.retainOnDestroy=false")
    assert not any(n.startswith("OSS bucket") for n in p.recording.outputs["billingAfterDestroy"])
    assert not p.recording.one("alicloud:oss/bucket:Bucket", "k3-weights-bucket").retain_on_delete


@pytest.mark.parametrize("stack", STACKS)
def test_layout_statement_names_what_the_engine_talks_over(stack):
    """ebmgn8v has an eRDMA interface, but nothing gives it to the engine (no ACK eRDMA Controller, no eRDMA
    user-space driver in the image, no eRDMA resource requested): the plan says TCP over the VPC, and never
    promises the eRDMA fabric."""
    p = plan(stack)
    statement = p.config.sizing.layout.statement
    assert "pipeline stages across nodes over TCP over the VPC (k3infra enables no eRDMA for the engine" in statement
    assert "eRDMA fabric" not in json.dumps(p.to_json())
    assert "erdma" not in json.dumps(offline.plain([r.inputs for r in p.recording.resources])).lower()


def test_tensor_parallelism_across_nodes_is_refused_without_rdma_in_the_pods():
    from k3infra import sizing
    from k3infra.catalog import ACCELERATORS

    with pytest.raises(sizing.LayoutError, match=r"ecs.ebmgn8v.48xlarge's pods have no RDMA fabric \(they talk over "
                                                 r"TCP over the VPC"):
        sizing.layout(ACCELERATORS["ecs.ebmgn8v.48xlarge"], 4, tensor_parallel=16)
    # where the pods do get the fabric (A4's RDMA NICs through DRANET), TP may still span nodes (000)
    assert sizing.layout(ACCELERATORS["a4-highgpu-8g"], 2, tensor_parallel=16).mode == sizing.ParallelMode.TENSOR_OVER_FABRIC


def test_ack_cluster_vpc_joins_the_enterprise_registrys_acl_before_the_server_pulls(ack):
    """Issue 23 item 5: an Enterprise instance's VPC names resolve only in VPCs on its ACL."""
    rec = ack.recording
    link = rec.one("alicloud:cr/vpcEndpointLinkedVpc:VpcEndpointLinkedVpc", "k3-registry-vpc")
    assert offline.plain(link.inputs) == {
        "instanceId": "cri-k3registry0001", "moduleName": "Registry", "enableCreateDnsRecordInPvzt": True,
        "vpcId": "vpc-" + _hex("k3-vpc", 17), "vswitchId": "vsw-" + _hex("k3-nodes", 17)}
    assert link.urn in set(rec.one("k3infra:index:ModelServer").dependencies)
    assert not plan("alicloud-ack", "image=registry-vpc.ap-southeast-1.aliyuncs.com/my-org/vllm:k3",
                    "k3infra:alicloud.acrInstanceId=null").recording.by_type(
        "alicloud:cr/vpcEndpointLinkedVpc:VpcEndpointLinkedVpc")


def test_ack_installs_the_managed_acr_credential_helper_for_the_images_instance_and_namespace(ack):
    """Issue 36 item 10: without credentials ACK's nodes cannot pull a private ACR repository, and the pre-pull
    DaemonSet fails `pulumi up`. The stack installs ACK's managed credential helper for the image's instance and host
    and the serving namespace only, pulling with ACK's managed role (no RRSA: same account); every pod that pulls the
    engine image waits for it."""
    rec = ack.recording
    addon = rec.one("alicloud:cs/kubernetesAddon:KubernetesAddon", "k3-acr-credential-helper")
    inputs = offline.plain(addon.inputs)
    assert (inputs["name"], inputs["clusterId"]) == ("managed-aliyun-acr-credential-helper", cluster_id("k3-cluster"))
    assert json.loads(inputs["config"]) == {
        "AcrInstanceInfo": [{"instanceId": "cri-k3registry0001", "regionId": "ap-southeast-1",
                             "domains": "k3-registry-vpc.ap-southeast-1.cr.aliyuncs.com"}],
        "enableRRSA": False, "serviceAccount": "*", "watchNamespace": "kimi-k3"}
    pulling = [r for r in rec.resources if r.type in ("k3infra:index:ModelServer", "k3infra:index:ImagePrePull",
                                                      "k3infra:index:PlacementCheck")]
    assert {r.type for r in pulling} >= {"k3infra:index:ModelServer", "k3infra:index:ImagePrePull"}
    assert all(addon.urn in set(r.dependencies) for r in pulling)
    # a Personal Edition instance (before 2024-09-09): no instance id, no VPC ACL to join
    personal = plan("alicloud-ack", "image=registry-vpc.ap-southeast-1.aliyuncs.com/my-org/vllm:k3",
                    "k3infra:alicloud.acrInstanceId=null").recording
    config = json.loads(offline.plain(personal.one("alicloud:cs/kubernetesAddon:KubernetesAddon",
                                                   "k3-acr-credential-helper").inputs)["config"])
    assert config["AcrInstanceInfo"] == [{"regionId": "ap-southeast-1",
                                          "domains": "registry-vpc.ap-southeast-1.aliyuncs.com"}]
    # an image off Container Registry: nothing to install
    hub = plan("alicloud-ack", "image=vllm/vllm-openai:kimi-k3", "k3infra:alicloud.acrInstanceId=null").recording
    assert not [r for r in hub.by_type("alicloud:cs/kubernetesAddon:KubernetesAddon")
                if r.name == "k3-acr-credential-helper"]

"""AckCluster, AckGpuNodePool and OssWeightBucket under the recording engine: exact inventories and the values
that matter (cluster spec, RRSA, add-ons, node count, taints, driver label, capacity, bucket protection, trust
and access policies, what serving receives)."""

import json

import pulumi
import pytest

from k3infra import offline
from k3infra.alicloud.bucket import (
    CSI_FUSE_SERVICE_ACCOUNT,
    OSSUTIL_SHA256,
    OSSUTIL_URL,
    OssWeightBucket,
    access_policy,
    copy_script,
    role_name,
    trust_policy,
)
from k3infra.alicloud.cluster import AckCluster
from k3infra.alicloud.gpu_pool import AckCapacity, AckGpuNodePool
from k3infra.alicloud.network import service_cidr, vswitch_cidrs
from k3infra.offline_state.alicloud import FAKE_ALICLOUD_ACCOUNT, _hex, cluster_id
from k3infra.serving.contract import SERVER_SERVICE_ACCOUNT, SYNC_SERVICE_ACCOUNT
from tests.support import inventory, record

REGION = {"alicloud:region": "ap-southeast-1"}
C = "k3infra:index:AckCluster"
P = "k3infra:index:AckGpuNodePool"
B = "k3infra:index:OssWeightBucket"
CID = cluster_id("k3-cluster")
PROVIDER_ARN = f"acs:ram::{FAKE_ALICLOUD_ACCOUNT}:oidc-provider/ack-rrsa-{CID}"
ISSUER = f"https://oidc-ack-ap-southeast-1.oss-ap-southeast-1.aliyuncs.com/{CID}"


def inputs(rec, type_, name):
    return offline.plain(rec.one(type_, name).inputs)


# ---------------------------------------------------------------------------------------------------- cluster


@pytest.fixture(scope="module")
def cluster_rec():
    box = {}

    def prog():
        c = AckCluster("k3", {"cluster_name": "k3-test", "zone_id": "ap-southeast-1c"})
        box["c"] = c
        pulumi.export("oidc", c.oidc_provider_arn)
        pulumi.export("issuer", c.oidc_issuer_url)
        pulumi.export("kubeconfig", c.kubeconfig)

    rec = record(prog, config=REGION)
    return rec, box["c"]


def test_cluster_inventory(cluster_rec):
    rec, _ = cluster_rec
    assert inventory(rec) == [
        (C, "k3", None),
        ("alicloud:cs/kubernetesAddon:KubernetesAddon", "k3-pod-identity", C),
        ("alicloud:cs/managedKubernetes:ManagedKubernetes", "k3-cluster", C),
        ("alicloud:cs/nodePool:NodePool", "k3-system", C),
        ("alicloud:ecs/ecsKeyPair:EcsKeyPair", "k3-node-key", C),
        ("alicloud:vpc/network:Network", "k3-vpc", C),
        ("alicloud:vpc/switch:Switch", "k3-nodes", C),
        ("alicloud:vpc/switch:Switch", "k3-pods", C),
        ("pulumi:providers:kubernetes", "k3-k8s", C),
    ]


def test_cluster_is_ack_pro_with_rrsa_and_the_oss_csi(cluster_rec):
    rec, _ = cluster_rec
    k = inputs(rec, "alicloud:cs/managedKubernetes:ManagedKubernetes", "k3-cluster")
    assert k["clusterSpec"] == "ack.pro.small"
    assert k["enableRrsa"] is True
    assert k["addons"] == [
        {"name": "terway-eniip", "config": '{"IPVlan":"false","NetworkPolicy":"true","ENITrunking":"false"}'},
        {"name": "csi-plugin"}, {"name": "csi-provisioner"}]
    assert (k["serviceCidr"], k["proxyMode"], k["newNatGateway"], k["deletionProtection"]) == \
        ("192.168.0.0/16", "ipvs", True, True)
    assert k["vswitchIds"] == ["vsw-" + _hex("k3-nodes", 17)]
    assert k["podVswitchIds"] == ["vsw-" + _hex("k3-pods", 17)]
    assert rec.one("alicloud:cs/managedKubernetes:ManagedKubernetes", "k3-cluster").ignore_changes == ("addons",)
    addon = inputs(rec, "alicloud:cs/kubernetesAddon:KubernetesAddon", "k3-pod-identity")
    assert addon == {"clusterId": CID, "name": "ack-pod-identity-webhook"}


def test_cluster_network_plan(cluster_rec):
    rec, _ = cluster_rec
    assert inputs(rec, "alicloud:vpc/network:Network", "k3-vpc")["cidrBlock"] == "10.0.0.0/8"
    nodes = inputs(rec, "alicloud:vpc/switch:Switch", "k3-nodes")
    pods = inputs(rec, "alicloud:vpc/switch:Switch", "k3-pods")
    assert (nodes["cidrBlock"], nodes["zoneId"]) == ("10.0.0.0/16", "ap-southeast-1c")
    assert (pods["cidrBlock"], pods["zoneId"]) == ("10.1.0.0/16", "ap-southeast-1c")


def test_cluster_system_pool_is_small_and_cpu_only(cluster_rec):
    rec, _ = cluster_rec
    sys_pool = inputs(rec, "alicloud:cs/nodePool:NodePool", "k3-system")
    assert sys_pool["instanceTypes"] == ["ecs.g7.2xlarge"]
    assert sys_pool["desiredSize"] == "2"
    assert sys_pool["labels"] == [{"key": "k3infra.io/pool", "value": "system"}]
    assert "taints" not in sys_pool


def test_node_pools_log_in_with_a_key_pair_nobody_holds(cluster_rec):
    """ACK node pools take a password or a key pair (a managed pool only a key pair): the key pair is created
    without a public key and without key_file, so its private key reaches neither the state nor the disk; no
    password anywhere."""
    rec, cluster = cluster_rec
    key = inputs(rec, "alicloud:ecs/ecsKeyPair:EcsKeyPair", "k3-node-key")
    assert key == {"keyPairName": "k3-test-nodes", "tags": {}}
    sys_pool = inputs(rec, "alicloud:cs/nodePool:NodePool", "k3-system")
    assert sys_pool["keyName"] == "k3-test-nodes"
    assert not {"password", "kmsEncryptedPassword"} & set(sys_pool)
    assert any(d.endswith("::k3-node-key") for d in rec.one("alicloud:cs/nodePool:NodePool", "k3-system").dependencies)


def test_cluster_kubeconfig_is_secret_and_feeds_the_provider(cluster_rec):
    rec, _ = cluster_rec
    prov = rec.one("pulumi:providers:kubernetes", "k3-k8s")
    assert isinstance(prov.inputs["kubeconfig"], offline.Secret)
    assert isinstance(rec.outputs["kubeconfig"], offline.Secret)
    assert f"server: https://{CID[:12]}.ap-southeast-1.cs.aliyuncs.com:6443" in offline.unwrap(rec.outputs["kubeconfig"])
    assert [i.token for i in rec.invocations] == ["alicloud:cs/getClusterCredential:getClusterCredential"]


def test_cluster_exports_the_rrsa_oidc_provider(cluster_rec):
    rec, _ = cluster_rec
    assert rec.outputs["oidc"] == PROVIDER_ARN
    assert rec.outputs["issuer"] == ISSUER


@pytest.mark.parametrize(("args", "path"), [({"zone_id": ""}, "zone_id"), ({"system_nodes": 0}, "system_nodes"),
                                            ({"vpc_cidr": "10.0.0.0/30"}, "vpc_cidr")])
def test_cluster_rejects_bad_args(args, path):
    with pytest.raises(pulumi.InputPropertyError) as e:
        record(lambda: AckCluster("k3", {"cluster_name": "k", "zone_id": "ap-southeast-1c", **args}), config=REGION)
    assert e.value.property_path == path


def test_address_plan():
    assert vswitch_cidrs("10.0.0.0/8", 2) == ["10.0.0.0/16", "10.1.0.0/16"]
    assert vswitch_cidrs("192.168.0.0/16", 2) == ["192.168.0.0/18", "192.168.64.0/18"]
    assert service_cidr("10.0.0.0/8") == "192.168.0.0/16"
    assert service_cidr("192.168.0.0/16") == "172.21.0.0/20"


# ---------------------------------------------------------------------------------------------------- GPU pool


def gpu_pool(capacity, **extra):
    box = {}

    def prog():
        box["p"] = AckGpuNodePool("gpu", {"cluster_id": "c1", "vswitch_ids": ["vsw-1"], "key_name": "k3-nodes",
                                          "instance_type": "ecs.ebmgn8v.48xlarge", "node_count": 3,
                                          "gpus_per_node": 8, "capacity": capacity, **extra})

    rec = record(prog, config=REGION)
    return rec, box["p"], inputs(rec, "alicloud:cs/nodePool:NodePool", "gpu-pool")


def test_gpu_pool_on_a_private_pool():
    rec, pool, np = gpu_pool(AckCapacity.PRIVATE_POOL, private_pool_id="crp-abc", gpu_driver_version="570.169")
    assert inventory(rec) == [(P, "gpu", None), ("alicloud:cs/nodePool:NodePool", "gpu-pool", P)]
    assert np["desiredSize"] == "3"
    assert np["keyName"] == "k3-nodes" and "password" not in np
    assert np["instanceTypes"] == ["ecs.ebmgn8v.48xlarge"]
    assert np["privatePoolOptions"] == {"privatePoolOptionsId": "crp-abc", "privatePoolOptionsMatchCriteria": "Target"}
    assert "type" not in np and "efloNodeGroup" not in np
    assert np["labels"] == [{"key": "k3infra.io/pool", "value": "gpu"},
                            {"key": "ack.aliyun.com/nvidia-driver-version", "value": "570.169"}]
    assert np["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert np["dataDisks"] == [{"category": "cloud_essd", "performanceLevel": "PL1", "size": 500}]
    assert (np["imageType"], np["instanceChargeType"], np["systemDiskSize"]) == ("AliyunLinux3", "PostPaid", 200)
    assert rec.one("alicloud:cs/nodePool:NodePool", "gpu-pool").custom_timeouts == {"create": "60m"}
    assert pool.gpu_pool == {
        "node_selector": {"k3infra.io/pool": "gpu"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "gpus_per_node": 8,
        "node_count": 3,
        "gpu_resource": "nvidia.com/gpu",
        "driver_version": "570.169",
    }


def test_gpu_pool_on_a_lingjun_node_group():
    _, pool, np = gpu_pool(AckCapacity.LINGJUN, lingjun_cluster_id="eflo-c1", lingjun_node_group_id="ng-1")
    assert np["type"] == "lingjun"
    assert "driver_version" not in pool.gpu_pool  # the OS image's driver, which the stack cannot know
    assert np["efloNodeGroup"] == {"clusterId": "eflo-c1", "groupId": "ng-1"}
    assert "instanceTypes" not in np and "privatePoolOptions" not in np


def test_gpu_pool_on_demand_without_a_driver_pin():
    _, pool, np = gpu_pool(AckCapacity.ON_DEMAND)
    assert pool.gpu_pool["driver_version"] == "535.161.07"  # what ACK installs without the label
    assert "privatePoolOptions" not in np and "type" not in np
    assert np["labels"] == [{"key": "k3infra.io/pool", "value": "gpu"}]


@pytest.mark.parametrize(("capacity", "extra", "path"), [
    (AckCapacity.PRIVATE_POOL, {}, "private_pool_id"),
    # ACK installs its default instead of a version it does not list; Lingjun nodes ignore the label
    (AckCapacity.ON_DEMAND, {"gpu_driver_version": "580.126.09"}, "gpu_driver_version"),
    (AckCapacity.ON_DEMAND, {"gpu_driver_version": "535.129.03"}, "gpu_driver_version"),
    (AckCapacity.LINGJUN, {"lingjun_cluster_id": "eflo-c1", "lingjun_node_group_id": "ng-1",
                           "gpu_driver_version": "570.169"}, "gpu_driver_version"),
    (AckCapacity.LINGJUN, {"lingjun_cluster_id": "eflo-c1"}, "lingjun_node_group_id"),
    (AckCapacity.ON_DEMAND, {"node_count": 0}, "node_count"),
])
def test_gpu_pool_rejects_incomplete_capacity(capacity, extra, path):
    with pytest.raises(pulumi.InputPropertyError) as e:
        gpu_pool(capacity, **extra)
    assert e.value.property_path == path


# ---------------------------------------------------------------------------------------------------- bucket


def bucket(**extra):
    box = {}

    def prog():
        b = OssWeightBucket("w", {"bucket_name": "kimi-w", "region": "ap-southeast-1",
                                  "model_subpath": "models/moonshotai/Kimi-K3", **extra})
        box["b"] = b
        pulumi.export("uri", b.uri)

    rec = record(prog, config=REGION)
    return rec, box["b"]


RRSA = {"namespace": "kimi-k3", "oidc_provider_arn": PROVIDER_ARN, "oidc_issuer_url": ISSUER}


def test_bucket_inventory_with_rrsa():
    rec, _ = bucket(**RRSA)
    assert inventory(rec) == [
        (B, "w", None),
        ("alicloud:oss/bucket:Bucket", "w-bucket", B),
        ("alicloud:oss/bucketAcl:BucketAcl", "w-acl", B),
        ("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock", "w-public-access-block", B),
        ("alicloud:ram/policy:Policy", "w-reader-policy", B),
        ("alicloud:ram/policy:Policy", "w-writer-policy", B),
        ("alicloud:ram/role:Role", "w-reader", B),
        ("alicloud:ram/role:Role", "w-writer", B),
        ("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment", "w-reader-attachment", B),
        ("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment", "w-writer-attachment", B),
    ]


def test_bucket_is_private_encrypted_unversioned_and_retained():
    rec, b = bucket()
    assert inventory(rec) == [
        (B, "w", None),
        ("alicloud:oss/bucket:Bucket", "w-bucket", B),
        ("alicloud:oss/bucketAcl:BucketAcl", "w-acl", B),
        ("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock", "w-public-access-block", B),
    ]
    ob = inputs(rec, "alicloud:oss/bucket:Bucket", "w-bucket")
    assert ob["serverSideEncryptionRule"] == {"sseAlgorithm": "AES256"}
    assert ob["forceDestroy"] is False
    assert "versioning" not in ob and "acl" not in ob and "policy" not in ob
    assert inputs(rec, "alicloud:oss/bucketAcl:BucketAcl", "w-acl") == {"acl": "private", "bucket": "kimi-w"}
    assert inputs(rec, "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock", "w-public-access-block") == \
        {"blockPublicAccess": True, "bucket": "kimi-w"}
    assert all(r.retain_on_delete for r in rec.resources if r.custom)
    assert rec.outputs["uri"] == "oss://kimi-w/models/moonshotai/Kimi-K3"
    assert b.reader_role_name is None and b.identity_resources == []


def test_bucket_can_opt_out_of_retention():
    rec, _ = bucket(retain_on_destroy=False)
    assert not any(r.retain_on_delete for r in rec.resources)


def test_reader_role_trusts_the_server_and_the_ossfs_pod_only():
    rec, _ = bucket(**RRSA)
    doc = json.loads(inputs(rec, "alicloud:ram/role:Role", "w-reader")["assumeRolePolicyDocument"])
    assert doc == {"Version": "1", "Statement": [{
        "Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Federated": [PROVIDER_ARN]},
        "Condition": {"StringEquals": {"oidc:aud": "sts.aliyuncs.com", "oidc:iss": ISSUER,
                                       "oidc:sub": [f"system:serviceaccount:kimi-k3:{SERVER_SERVICE_ACCOUNT}",
                                                    CSI_FUSE_SERVICE_ACCOUNT]}},
    }]}
    assert CSI_FUSE_SERVICE_ACCOUNT == "system:serviceaccount:ack-csi-fuse:csi-fuse-ossfs"


def test_writer_role_trusts_the_sync_job_only():
    rec, _ = bucket(**RRSA)
    doc = json.loads(inputs(rec, "alicloud:ram/role:Role", "w-writer")["assumeRolePolicyDocument"])
    assert doc["Statement"][0]["Condition"]["StringEquals"]["oidc:sub"] == \
        f"system:serviceaccount:kimi-k3:{SYNC_SERVICE_ACCOUNT}"


def test_reader_can_only_read_and_writer_deletes_only_completion_markers():
    rec, _ = bucket(**RRSA)
    reader = json.loads(inputs(rec, "alicloud:ram/policy:Policy", "w-reader-policy")["policyDocument"])
    writer = json.loads(inputs(rec, "alicloud:ram/policy:Policy", "w-writer-policy")["policyDocument"])
    assert reader == {"Version": "1", "Statement": [
        {"Effect": "Allow", "Action": ["oss:ListObjects", "oss:GetBucketInfo"], "Resource": ["acs:oss:*:*:kimi-w"]},
        {"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": ["acs:oss:*:*:kimi-w/*"]},
    ]}
    writer_actions = {a for s in writer["Statement"] for a in s["Action"]}
    assert writer_actions == {"oss:ListObjects", "oss:GetBucketInfo", "oss:ListMultipartUploads", "oss:GetObject",
                              "oss:PutObject", "oss:AbortMultipartUpload", "oss:ListParts", "oss:DeleteObject"}
    assert "oss:*" not in writer_actions
    assert [s["Resource"] for s in writer["Statement"] if "oss:DeleteObject" in s["Action"]] == [
        ["acs:oss:*:*:kimi-w/*/.k3infra/complete-*"]]
    for name, role in (("w-reader-attachment", "kimi-w-reader"), ("w-writer-attachment", "kimi-w-writer")):
        assert inputs(rec, "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment", name) == \
            {"policyName": f"{role}-oss", "policyType": "Custom", "roleName": role}


def test_weight_store_for_serving():
    rec, b = bucket(**RRSA)
    store = offline.unwrap(_resolve(rec, b.weight_store))
    assert store["uri"] == "oss://kimi-w/models/moonshotai/Kimi-K3"
    assert store["model_subpath"] == "models/moonshotai/Kimi-K3"
    assert store["reader"] == {"name": "k3-server",
                               "annotations": {"pod-identity.alibabacloud.com/role-name": "kimi-w-reader"},
                               "pod_labels": {"pod-identity.alibabacloud.com/injection": "on"}}
    assert store["writer"] == {"name": "k3-weight-sync",
                               "annotations": {"pod-identity.alibabacloud.com/role-name": "kimi-w-writer"},
                               "pod_labels": {"pod-identity.alibabacloud.com/injection": "on"}}
    assert store["fuse"] == {
        "driver": "ossplugin.csi.alibabacloud.com",
        "volume_attributes": {"bucket": "kimi-w", "url": "oss-ap-southeast-1-internal.aliyuncs.com", "path": "/",
                              "fuseType": "ossfs2", "authType": "rrsa", "roleName": "kimi-w-reader"},
        "inline": False,
        "volume_handle": "kimi-w-weights",
        "capacity": "2Ti",
    }
    assert "streamer_env" not in store
    assert store["download"]["image"] == "alpine:3.20"
    assert store["download"]["command"][:2] == ["/bin/sh", "-c"]
    assert json.loads(store["copy_env"]["K3_COPY_STORAGE_OPTIONS"]) == {
        "region": "ap-southeast-1", "endpoint": "oss-ap-southeast-1-internal.aliyuncs.com"}


def _resolve(rec, value):
    """Resolve the Outputs inside a plain structure (the recording has finished, so they are known)."""
    from pulumi.runtime.sync_await import _sync_await

    async def go(v):
        if isinstance(v, pulumi.Output):
            return await v.future()
        if isinstance(v, dict):
            return {k: await go(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [await go(x) for x in v]
        return v

    return _sync_await(go(value))


def test_copy_script_verifies_ossutil_and_uses_the_rrsa_role():
    s = copy_script("ap-southeast-1", "k3infra-weight-sync")
    assert s.splitlines()[:5] == [
        "set -eu",
        "cd /tmp",
        f"wget -q -O ossutil.zip {OSSUTIL_URL}",
        f'echo "{OSSUTIL_SHA256}  ossutil.zip" | sha256sum -c -',
        "unzip -q -o ossutil.zip",
    ]
    assert "mode = oidcRoleArn" in s and "roleArn = ${ALIBABA_CLOUD_ROLE_ARN}" in s
    assert "endpoint = oss-ap-southeast-1-internal.aliyuncs.com" in s
    assert s.rstrip().endswith('cp --recursive --update "$SOURCE" "$DEST"')
    assert "AccessKey" not in s and "accessKeyID" not in s


def test_role_names_fit_ram_limits():
    assert role_name("kimi-w", "reader") == "kimi-w-reader"
    long = role_name("b" * 63, "writer")
    assert len(long) <= 64 and long.endswith("-writer") and long != role_name("c" * 63, "writer")


def test_policy_helpers_are_deterministic():
    assert trust_policy("p", "i", ["a", "b"]) == trust_policy("p", "i", ["a", "b"])
    assert json.loads(access_policy("x", write=False))["Statement"][1]["Action"] == ["oss:GetObject"]


@pytest.mark.parametrize(("extra", "path"), [
    ({"oidc_provider_arn": PROVIDER_ARN}, "oidc_issuer_url"),
    ({"oidc_provider_arn": PROVIDER_ARN, "oidc_issuer_url": ISSUER}, "namespace"),
    ({"region": ""}, "region"),
])
def test_bucket_rejects_bad_args(extra, path):
    with pytest.raises(pulumi.InputPropertyError) as e:
        bucket(**extra)
    assert e.value.property_path == path

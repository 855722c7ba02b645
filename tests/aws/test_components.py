"""The AWS components under the recording engine: exact inventories and the properties that matter."""

import base64
import functools
import hashlib
import json

import pulumi
import pytest

from k3infra import offline, offline_state
from k3infra.aws import policies
from k3infra.aws.bucket import CsiCredentials, S3WeightBucket
from k3infra.aws.cluster import EksCluster
from k3infra.aws.hyperpod import HyperPodCluster, HyperPodEndpoint, inference_role_name
from k3infra.aws.nodegroup import CapacityKind, EksGpuNodeGroup
from k3infra.offline_state.aws import digest
from tests.support import ROOT, inventory, record

CONFIG = {"aws:region": "us-west-2", "k3infra:zone": "us-west-2a", "k3infra:accelerator": "p6-b300.48xlarge"}
C = "k3infra:index:EksCluster"
G = "k3infra:index:EksGpuNodeGroup"
B = "k3infra:index:S3WeightBucket"
HC = "k3infra:index:HyperPodCluster"
HE = "k3infra:index:HyperPodEndpoint"


def run(program) -> offline.Recording:
    return record(program, config=CONFIG)


def inputs(rec: offline.Recording, typ: str, name: str) -> dict:
    return offline.unwrap(rec.one(typ, name).inputs)


# --- EksCluster -----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def cluster(oidc: bool = False, **extra) -> offline.Recording:
    def program():
        c = EksCluster("k3", {"cluster_name": "k3-test", "region": "us-west-2", "zone": "us-west-2a",
                              "oidc_provider": oidc, **extra})
        pulumi.export("kubeconfig", c.kubeconfig)
        pulumi.export("lb", c.load_balancer)
    return run(program)


def test_cluster_inventory():
    assert inventory(cluster()) == [
        (C, "k3", None),
        ("aws:ec2/eip:Eip", "k3-nat-ip", C),
        ("aws:ec2/internetGateway:InternetGateway", "k3-igw", C),
        ("aws:ec2/natGateway:NatGateway", "k3-nat", C),
        ("aws:ec2/routeTable:RouteTable", "k3-private", C),
        ("aws:ec2/routeTable:RouteTable", "k3-public", C),
        ("aws:ec2/routeTableAssociation:RouteTableAssociation", "k3-private-capacity-routes", C),
        ("aws:ec2/routeTableAssociation:RouteTableAssociation", "k3-private-other-routes", C),
        ("aws:ec2/routeTableAssociation:RouteTableAssociation", "k3-public-capacity-routes", C),
        ("aws:ec2/routeTableAssociation:RouteTableAssociation", "k3-public-other-routes", C),
        ("aws:ec2/subnet:Subnet", "k3-private-capacity", C),
        ("aws:ec2/subnet:Subnet", "k3-private-other", C),
        ("aws:ec2/subnet:Subnet", "k3-public-capacity", C),
        ("aws:ec2/subnet:Subnet", "k3-public-other", C),
        ("aws:ec2/vpc:Vpc", "k3-vpc", C),
        ("aws:ec2/vpcEndpoint:VpcEndpoint", "k3-s3", C),
        ("aws:eks/addon:Addon", "k3-ebs-csi", C),
        ("aws:eks/addon:Addon", "k3-node-monitoring", C),
        ("aws:eks/addon:Addon", "k3-pod-identity", C),
        ("aws:eks/addon:Addon", "k3-vpc-cni", C),
        ("aws:eks/cluster:Cluster", "k3-eks", C),
        ("aws:eks/nodeGroup:NodeGroup", "k3-system", C),
        ("aws:iam/role:Role", "k3-cluster-role", C),
        ("aws:iam/role:Role", "k3-ebs-csi-role", C),
        ("aws:iam/role:Role", "k3-node-role", C),
        ("aws:iam/rolePolicy:RolePolicy", "k3-cluster-encryption", C),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-cluster-policy", C),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-ebs-csi-policy", C),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-node-cni", C),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-node-ecr", C),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-node-worker", C),
        ("aws:kms/alias:Alias", "k3-secrets-key-alias", C),
        ("aws:kms/key:Key", "k3-secrets-key", C),
        ("pulumi:providers:kubernetes", "k3-k8s", C),
    ]


def test_named_administrators_replace_the_account_on_the_secrets_key():
    admins = ("arn:aws:iam::123456789012:role/platform-admin",)
    policy = json.loads(inputs(cluster(secrets_key_administrators=admins), "aws:kms/key:Key", "k3-secrets-key")["policy"])
    admin, usage = policy["Statement"]
    assert admin["Principal"] == {"AWS": admins[0]} and "kms:Decrypt" not in admin["Action"]
    assert usage["Principal"]["AWS"].startswith("arn:aws:iam::123456789012:role/k3-cluster-role")


def test_cluster_uses_api_authentication_and_private_subnets_in_two_zones():
    rec = cluster()
    eks = inputs(rec, "aws:eks/cluster:Cluster", "k3-eks")
    assert eks["name"] == "k3-test"
    assert eks["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}
    assert eks["deletionProtection"] is True
    subnets = {r.name: offline.unwrap(r.inputs) for r in rec.by_type("aws:ec2/subnet:Subnet")}
    assert subnets["k3-private-capacity"]["availabilityZone"] == "us-west-2a"
    assert subnets["k3-private-other"]["availabilityZone"] == "us-west-2b"
    assert subnets["k3-private-capacity"]["cidrBlock"] == "10.0.0.0/18"
    assert subnets["k3-private-capacity"]["tags"]["kubernetes.io/role/internal-elb"] == "1"
    assert subnets["k3-public-capacity"]["tags"]["kubernetes.io/role/elb"] == "1"
    assert all(s["mapPublicIpOnLaunch"] is False for s in subnets.values())
    assert eks["vpcConfig"]["subnetIds"] == [f"subnet-{digest(n, 17)}" for n in ("k3-private-capacity", "k3-private-other")]
    assert eks["vpcConfig"]["endpointPrivateAccess"] is True
    assert eks["vpcConfig"]["endpointPublicAccess"] is True and "publicAccessCidrs" not in eks["vpcConfig"]


def test_api_endpoint_limited_to_given_cidrs_or_private_only():
    limited = inputs(cluster(public_access_cidrs=("203.0.113.0/24",)), "aws:eks/cluster:Cluster", "k3-eks")["vpcConfig"]
    assert (limited["endpointPublicAccess"], limited["publicAccessCidrs"]) == (True, ["203.0.113.0/24"])
    private = inputs(cluster(private_endpoint=True), "aws:eks/cluster:Cluster", "k3-eks")["vpcConfig"]
    assert (private["endpointPublicAccess"], private["endpointPrivateAccess"]) == (False, True)
    assert "publicAccessCidrs" not in private
    with pytest.raises(pulumi.InputPropertyError, match="no public access to limit"):
        cluster(private_endpoint=True, public_access_cidrs=("203.0.113.0/24",))


@pytest.mark.parametrize("kubernetes, pinned", [
    (None, {"vpc-cni": "v1.23.0-eksbuild.1", "eks-pod-identity-agent": "v1.4.0-eksbuild.1",
            "aws-ebs-csi-driver": "v1.54.0-eksbuild.1", "eks-node-monitoring-agent": "v1.7.0-eksbuild.1"}),
    ("1.34", {"vpc-cni": "v1.20.4-eksbuild.2", "eks-pod-identity-agent": "v1.3.10-eksbuild.3",
              "aws-ebs-csi-driver": "v1.54.0-eksbuild.1", "eks-node-monitoring-agent": "v1.7.0-eksbuild.1"}),
])
def test_every_cluster_add_on_is_pinned_for_the_clusters_minor(kubernetes, pinned):
    """Issue 36 minor 7: an add-on without a version takes EKS's default of the day, and vpc-cni's most_recent moved on
    every run; each is the catalog's pin for the cluster's minor (1.35 by default)."""
    rec = cluster(**({"kubernetes_version": kubernetes} if kubernetes else {}))
    added = [offline.unwrap(a.inputs) for a in rec.by_type("aws:eks/addon:Addon")]
    assert {a["addonName"]: a.get("addonVersion") for a in added} == pinned
    assert inputs(rec, "aws:eks/cluster:Cluster", "k3-eks")["version"] == (kubernetes or "1.35")
    with pytest.raises(pulumi.InputPropertyError, match="pins the EKS add-ons for Kubernetes 1.34, 1.35 only"):
        cluster(kubernetes_version="1.33")


def test_cluster_add_ons_cni_pod_identity_and_ebs():
    rec = cluster()
    cni = inputs(rec, "aws:eks/addon:Addon", "k3-vpc-cni")
    assert cni["addonName"] == "vpc-cni" and cni["addonVersion"] == "v1.23.0-eksbuild.1"
    # Without it the VPC CNI ignores every NetworkPolicy (EKS cni-network-policy-configure).
    assert json.loads(cni["configurationValues"]) == {"enableNetworkPolicy": "true"}
    assert inputs(rec, "aws:eks/addon:Addon", "k3-pod-identity")["addonName"] == "eks-pod-identity-agent"
    ebs = inputs(rec, "aws:eks/addon:Addon", "k3-ebs-csi")
    assert ebs["podIdentityAssociations"] == [{"roleArn": ebs["podIdentityAssociations"][0]["roleArn"],
                                               "serviceAccount": "ebs-csi-controller-sa"}]
    assert ebs["podIdentityAssociations"][0]["roleArn"].startswith("arn:aws:iam::123456789012:role/k3-ebs-csi-role")
    system = rec.one("aws:eks/nodeGroup:NodeGroup", "k3-system")
    urn = {r.name: r.urn for r in rec.resources}
    assert {urn["k3-vpc-cni"], urn["k3-pod-identity"]} <= set(system.dependencies)
    assert offline.unwrap(system.inputs)["instanceTypes"] == ["m7i.2xlarge"]
    assert offline.unwrap(system.inputs)["scalingConfig"] == {"desiredSize": 2, "minSize": 2, "maxSize": 2}


def test_node_monitoring_agent_reaches_the_tainted_gpu_nodes():
    """eks-node-monitoring-agent sets AcceleratedHardwareReady, which node auto repair acts on; its DCGM DaemonSet
    tolerates nothing by default, so it is told to tolerate the GPU taint. The configuration must pass the add-on's
    own schema (additionalProperties: false)."""
    import jsonschema

    rec = cluster()
    addon = inputs(rec, "aws:eks/addon:Addon", "k3-node-monitoring")
    assert addon["addonName"] == "eks-node-monitoring-agent"
    conf = json.loads(addon["configurationValues"])
    assert conf == {"dcgmAgent": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}
    schema = json.loads((ROOT / "schemas" / "addons" / "eks-node-monitoring-agent.schema.json").read_text())
    jsonschema.validate(conf, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"dcgm": conf["dcgmAgent"]}, schema)
    urn = {r.name: r.urn for r in rec.resources}
    assert urn["k3-system"] in rec.one("aws:eks/addon:Addon", "k3-node-monitoring").dependencies


def test_s3_traffic_goes_through_a_gateway_endpoint():
    ep = inputs(cluster(), "aws:ec2/vpcEndpoint:VpcEndpoint", "k3-s3")
    assert (ep["serviceName"], ep["vpcEndpointType"]) == ("com.amazonaws.us-west-2.s3", "Gateway")
    assert len(ep["routeTableIds"]) == 2


def test_kubeconfig_is_a_secret_and_the_provider_gets_it():
    rec = cluster()
    assert isinstance(rec.outputs["kubeconfig"], offline.Secret)
    kc = json.loads(offline.unwrap(rec.outputs["kubeconfig"]))
    assert kc["clusters"][0]["cluster"]["server"].endswith(".gr7.us-west-2.eks.amazonaws.com")
    assert isinstance(rec.one("pulumi:providers:kubernetes").inputs["kubeconfig"], offline.Secret)


def test_load_balancers_are_internal_nlbs_by_default():
    lb = rec_lb = cluster().outputs["lb"]
    assert rec_lb["internal_annotations"] == {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
                                              "service.beta.kubernetes.io/aws-load-balancer-internal": "true"}
    # the two private subnets, not the whole 10.0.0.0/16 (public subnets: NAT gateway and public LBs only)
    assert lb["internal_source_ranges"] == ["10.0.0.0/18", "10.0.64.0/18"]
    # The weight sync streams through memory: no scratch volume, so no scratch StorageClass.
    assert "scratch_storage_class" not in lb


def test_oidc_provider_only_when_asked():
    assert not cluster().by_type("aws:iam/openIdConnectProvider:OpenIdConnectProvider")
    oidc = inputs(cluster(True), "aws:iam/openIdConnectProvider:OpenIdConnectProvider", "k3-oidc")
    assert oidc["clientIdLists"] == ["sts.amazonaws.com"]
    assert oidc["url"].startswith("https://oidc.eks.us-west-2.amazonaws.com/id/")


def test_cluster_rejects_a_zone_outside_the_region():
    def program():
        EksCluster("k3", {"cluster_name": "k3", "region": "us-west-2", "zone": "us-east-1a"})
    with pytest.raises(pulumi.InputPropertyError, match="us-east-1a is not an available zone of us-west-2"):
        run(program)


# --- EksGpuNodeGroup --------------------------------------------------------------------------------------


def gpu(**extra) -> offline.Recording:
    def program():
        EksGpuNodeGroup("k3-gpu", {
            "cluster_name": "k3-test", "node_role_arn": "arn:aws:iam::123456789012:role/node",
            "subnet_ids": ["subnet-1"], "security_group_id": "sg-1", "instance_type": "p6-b300.48xlarge",
            "gpus_per_node": 8, "node_count": 1, **extra})
    return run(program)


@functools.lru_cache(maxsize=None)
def consumed() -> offline.Recording:
    return gpu(capacity=CapacityKind.CAPACITY_BLOCK, capacity_reservation_id="cr-0123456789abcdef0")


def test_node_group_inventory():
    assert inventory(consumed()) == [
        (G, "k3-gpu", None),
        ("aws:ec2/launchTemplate:LaunchTemplate", "k3-gpu-lt", G),
        ("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes", G),
        ("kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-device-plugin", G),
    ]


def test_launch_template_targets_the_capacity_block():
    lt = inputs(consumed(), "aws:ec2/launchTemplate:LaunchTemplate", "k3-gpu-lt")
    assert lt["instanceType"] == "p6-b300.48xlarge"
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}
    assert lt["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 2}
    assert "iamInstanceProfile" not in lt and "vpcSecurityGroupIds" not in lt
    assert "RAID0" in base64.b64decode(lt["userData"]).decode()


def test_launch_template_has_an_interface_per_network_card_efa_on_cards_1_to_16():
    nics = inputs(consumed(), "aws:ec2/launchTemplate:LaunchTemplate", "k3-gpu-lt")["networkInterfaces"]
    assert len(nics) == 17
    assert nics[0] == {"deviceIndex": 0, "networkCardIndex": 0, "securityGroups": ["sg-1"], "deleteOnTermination": "true"}
    for card, nic in enumerate(nics[1:], start=1):
        assert nic == {"deviceIndex": 1, "networkCardIndex": card, "interfaceType": "efa-only",
                       "securityGroups": ["sg-1"], "deleteOnTermination": "true"}
    assert not any("subnetId" in n for n in nics)


def test_node_group_is_a_capacity_block_group_with_gpu_taint_repair_and_minimal_updates():
    rec = consumed()
    ng = rec.one("aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes")
    i = offline.unwrap(ng.inputs)
    assert i["capacityType"] == "CAPACITY_BLOCK"
    assert i["amiType"] == "AL2023_x86_64_NVIDIA"
    assert "instanceTypes" not in i
    assert i["launchTemplate"]["version"] == "1"
    assert i["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    assert i["labels"] == {"k3infra.io/pool": "k3-gpu", "nvidia.com/gpu.present": "true",
                           "k3infra.io/instance-type": "p6-b300.48xlarge"}
    assert i["scalingConfig"] == {"desiredSize": 1, "minSize": 0, "maxSize": 1}
    assert i["nodeRepairConfig"] == {"enabled": True}
    # A block has no spare instance: replace by terminating first.
    assert i["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": "MINIMAL"}
    # The desired size is managed (a new block on an existing group scales up on the next `pulumi up`).
    assert ng.ignore_changes == ()
    assert not rec.by_type("aws:autoscaling/schedule:Schedule")


def test_a_block_that_starts_later_scales_up_at_its_start_and_is_not_awaited():
    rec = gpu(capacity=CapacityKind.CAPACITY_BLOCK, capacity_reservation_id="cr-0123456789abcdef0", starts_later=True)
    ng = inputs(rec, "aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes")
    assert ng["scalingConfig"] == {"desiredSize": 0, "minSize": 0, "maxSize": 1}
    sched = inputs(rec, "aws:autoscaling/schedule:Schedule", "k3-gpu-scale-up")
    (lookup,) = [i for i in rec.invocations if i.token.endswith("getCapacityBlockReservation")]
    block = offline_state.call(lookup.token, lookup.args)
    (asg,) = offline.unwrap(rec.one("aws:eks/nodeGroup:NodeGroup").outputs)["resources"][0]["autoscalingGroups"]
    assert sched == {"autoscalingGroupName": asg["name"],
                     "scheduledActionName": "k3infra-scale-up-at-capacity-start", "startTime": block["startDate"],
                     "desiredCapacity": 1, "minSize": -1, "maxSize": -1}
    assert rec.one("aws:autoscaling/schedule:Schedule").parent_type == G


def test_a_draining_block_keeps_the_group_at_zero():
    rec = gpu(capacity=CapacityKind.CAPACITY_BLOCK, capacity_reservation_id="cr-0123456789abcdef0", draining=True)
    assert inputs(rec, "aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes")["scalingConfig"]["desiredSize"] == 0
    assert not rec.by_type("aws:autoscaling/schedule:Schedule")


def test_on_demand_groups_keep_the_default_update_strategy():
    rec = gpu(capacity=CapacityKind.ON_DEMAND)
    assert inputs(rec, "aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes")["updateConfig"] == {"maxUnavailable": 1}


def test_nvidia_device_plugin_is_pinned_and_tolerates_the_gpu_taint():
    chart = inputs(consumed(), "kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-device-plugin")
    assert (chart["chart"], chart["version"], chart["repositoryOpts"]["repo"]) == (
        "nvidia-device-plugin", "0.17.4", "https://nvidia.github.io/k8s-device-plugin")
    assert chart["values"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_the_consumed_block_is_looked_up_for_its_end_time():
    rec = consumed()
    (lookup,) = [i for i in rec.invocations if i.token == "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"]
    assert lookup.args["id"] == "cr-0123456789abcdef0"


def test_buying_an_offering_registers_the_reservation_and_keeps_it_on_delete():
    rec = gpu(capacity=CapacityKind.CAPACITY_BLOCK, capacity_block_offering_id="cb-0123456789abcdef0")
    assert [n for _, n, _ in inventory(rec)] == ["k3-gpu", "k3-gpu-capacity-block", "k3-gpu-lt", "k3-gpu-nodes",
                                                 "k3-gpu-nvidia-device-plugin"]
    block = rec.one("aws:ec2/capacityBlockReservation:CapacityBlockReservation")
    assert offline.unwrap(block.inputs) == {"capacityBlockOfferingId": "cb-0123456789abcdef0",
                                            "instancePlatform": "Linux/UNIX"}
    assert block.retain_on_delete
    lt = inputs(rec, "aws:ec2/launchTemplate:LaunchTemplate", "k3-gpu-lt")
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"].startswith("cr-")


def test_on_demand_group_has_no_market_options():
    rec = gpu(capacity=CapacityKind.ON_DEMAND)
    lt = inputs(rec, "aws:ec2/launchTemplate:LaunchTemplate", "k3-gpu-lt")
    assert "instanceMarketOptions" not in lt and "capacityReservationSpecification" not in lt
    assert inputs(rec, "aws:eks/nodeGroup:NodeGroup", "k3-gpu-nodes")["capacityType"] == "ON_DEMAND"


def pool_of(**extra) -> dict:
    found = {}

    def program():
        g = EksGpuNodeGroup("k3-gpu", {
            "cluster_name": "k3-test", "node_role_arn": "arn:aws:iam::123456789012:role/node",
            "subnet_ids": ["subnet-1"], "security_group_id": "sg-1", "instance_type": "p6-b300.48xlarge",
            "gpus_per_node": 8, "node_count": 2, "capacity": CapacityKind.ON_DEMAND, **extra})
        found["pool"] = g.pool
        found["resources"] = [r for r in g.pool_resources]
    rec = run(program)
    found["rec"] = rec
    return found


def test_a_pool_whose_block_starts_later_says_so_and_an_active_one_does_not():
    later = pool_of(capacity=CapacityKind.CAPACITY_BLOCK, capacity_reservation_id="cr-0123456789abcdef0",
                    starts_later=True)["pool"]
    assert later["capacity_pending"] == "the GPU nodes join when the Capacity Block starts"
    assert "capacity_pending" not in pool_of()["pool"]
    with pytest.raises(pulumi.InputPropertyError, match="only a Capacity Block starts later"):
        pool_of(starts_later=True)


def test_gpu_pool_hand_over_for_one_node():
    pool = pool_of(vcpus=192)["pool"]
    assert pool == {
        "node_selector": {"k3infra.io/pool": "k3-gpu"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "gpus_per_node": 8, "node_count": 2, "gpu_resource": "nvidia.com/gpu",
        "cpu_request": "163", "memory_request": "3481Gi",
    }


def test_multi_node_pools_get_the_efa_device_plugin_devices_and_ipc_lock():
    found = pool_of(efa_device_plugin=True)
    chart = inputs(found["rec"], "kubernetes:helm.sh/v4:Chart", "k3-gpu-efa-device-plugin")
    assert (chart["chart"], chart["repositoryOpts"]["repo"]) == ("aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts")
    pool = found["pool"]
    assert pool["extra_resources"] == {"vpc.amazonaws.com/efa": "16"}
    assert pool["env"] == {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}
    assert pool["capabilities"] == ["IPC_LOCK"]
    assert len(found["resources"]) == 3


@pytest.mark.parametrize("args, path", [
    ({"capacity": CapacityKind.CAPACITY_BLOCK}, "capacity_reservation_id"),
    ({"capacity": CapacityKind.CAPACITY_BLOCK, "capacity_reservation_id": "cr-1", "capacity_block_offering_id": "cb-1"},
     "capacity_reservation_id"),
    ({"capacity": CapacityKind.ON_DEMAND, "capacity_reservation_id": "cr-1"}, "capacity"),
    ({"capacity": CapacityKind.ON_DEMAND, "instance_type": "g6.xlarge"}, "instance_type"),
])
def test_bad_node_group_args_fail_early(args, path):
    with pytest.raises(pulumi.InputPropertyError) as e:
        gpu(**args)
    assert e.value.property_path == path


# --- S3WeightBucket ----------------------------------------------------------------------------------------


def bucket(**extra) -> offline.Recording:
    def program():
        b = S3WeightBucket("k3-weights", {"bucket_name": "kimi-k3-weights", "region": "us-west-2",
                                          "cluster_name": "k3-test", "namespace": "kimi-k3",
                                          "model_subpath": "models/moonshotai/Kimi-K3", **extra})
        pulumi.export("store", b.store)
        pulumi.export("uri", b.uri)
    return run(program)


@functools.lru_cache(maxsize=None)
def pod_bucket() -> offline.Recording:
    return bucket()


def test_bucket_inventory():
    assert inventory(pod_bucket()) == [
        (B, "k3-weights", None),
        ("aws:eks/addon:Addon", "k3-weights-mountpoint", B),
        ("aws:eks/podIdentityAssociation:PodIdentityAssociation", "k3-weights-reader-identity", B),
        ("aws:eks/podIdentityAssociation:PodIdentityAssociation", "k3-weights-writer-identity", B),
        ("aws:iam/role:Role", "k3-weights-reader", B),
        ("aws:iam/role:Role", "k3-weights-writer", B),
        ("aws:iam/rolePolicy:RolePolicy", "k3-weights-reader-weights", B),
        ("aws:iam/rolePolicy:RolePolicy", "k3-weights-writer-weights", B),
        ("aws:s3/bucket:Bucket", "k3-weights-bucket", B),
        ("aws:s3/bucketOwnershipControls:BucketOwnershipControls", "k3-weights-ownership", B),
        ("aws:s3/bucketPolicy:BucketPolicy", "k3-weights-tls-only", B),
        ("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "k3-weights-public-access-block", B),
        ("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
         "k3-weights-encryption", B),
    ]


def test_all_four_public_access_switches_are_on():
    pab = inputs(pod_bucket(), "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "k3-weights-public-access-block")
    assert {k: pab[k] for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")} == {
        "blockPublicAcls": True, "blockPublicPolicy": True, "ignorePublicAcls": True, "restrictPublicBuckets": True}


def test_bucket_is_encrypted_unversioned_and_never_force_destroyed():
    rec = pod_bucket()
    b = inputs(rec, "aws:s3/bucket:Bucket", "k3-weights-bucket")
    assert b["bucket"] == "kimi-k3-weights" and b["forceDestroy"] is False
    assert "versioning" not in b and not rec.by_type("aws:s3/bucketVersioning:BucketVersioning")
    sse = inputs(rec, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
                 "k3-weights-encryption")
    assert sse["rules"] == [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}]
    own = inputs(rec, "aws:s3/bucketOwnershipControls:BucketOwnershipControls", "k3-weights-ownership")
    assert own["rule"] == {"objectOwnership": "BucketOwnerEnforced"}
    pol = json.loads(inputs(rec, "aws:s3/bucketPolicy:BucketPolicy", "k3-weights-tls-only")["policy"])
    assert pol == policies.deny_insecure_transport("arn:aws:s3:::kimi-k3-weights")


def test_bucket_and_its_protections_are_retained_by_default_and_not_when_opted_out():
    kept = {r.name for r in pod_bucket().resources if r.retain_on_delete}
    assert kept == {"k3-weights-bucket", "k3-weights-ownership", "k3-weights-tls-only", "k3-weights-public-access-block",
                    "k3-weights-encryption"}
    assert not any(r.retain_on_delete for r in bucket(retain_on_destroy=False).resources)


def test_reader_role_is_read_only_and_writer_deletes_only_completion_markers():
    rec = pod_bucket()
    reader = json.loads(inputs(rec, "aws:iam/rolePolicy:RolePolicy", "k3-weights-reader-weights")["policy"])
    writer = json.loads(inputs(rec, "aws:iam/rolePolicy:RolePolicy", "k3-weights-writer-weights")["policy"])
    assert reader == policies.s3_read_only("arn:aws:s3:::kimi-k3-weights")
    assert policies.actions_of(reader) == {"s3:ListBucket", "s3:GetObject"}
    assert "s3:PutObject" in policies.actions_of(writer)
    deletes = [st for st in writer["Statement"] if any("Delete" in a for a in st["Action"])]
    assert deletes == [{"Sid": "RetireMarkers", "Effect": "Allow", "Action": ["s3:DeleteObject"],
                        "Resource": "arn:aws:s3:::kimi-k3-weights/*/.k3infra/complete-*"}]
    for role in ("k3-weights-reader", "k3-weights-writer"):
        assert json.loads(inputs(rec, "aws:iam/role:Role", role)["assumeRolePolicy"]) == policies.pod_identity_trust()


def test_pod_identity_binds_the_server_reader_and_the_sync_writer():
    rec = pod_bucket()
    assocs = {r.name: offline.unwrap(r.inputs) for r in rec.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")}
    assert {(a["namespace"], a["serviceAccount"]) for a in assocs.values()} == {("kimi-k3", "k3-server"),
                                                                                ("kimi-k3", "k3-weight-sync")}
    assert assocs["k3-weights-reader-identity"]["roleArn"].startswith("arn:aws:iam::123456789012:role/k3-weights-reader")
    assert assocs["k3-weights-reader-identity"]["serviceAccount"] == "k3-server"


def test_weight_store_mounts_with_the_pods_own_identity():
    rec = pod_bucket()
    store = offline.unwrap(rec.outputs["store"])
    assert store["uri"] == "s3://kimi-k3-weights/models/moonshotai/Kimi-K3" == offline.unwrap(rec.outputs["uri"])
    assert store["model_subpath"] == "models/moonshotai/Kimi-K3"
    assert store["reader"] == {"name": "k3-server"} and store["writer"] == {"name": "k3-weight-sync"}
    assert store["fuse"] == {
        "driver": "s3.csi.aws.com",
        "volume_attributes": {"bucketName": "kimi-k3-weights", "authenticationSource": "pod", "stsRegion": "us-west-2"},
        "mount_options": ["region us-west-2", "read-only", "allow-other"],
        "inline": False, "volume_handle": "kimi-k3-weights-weights", "capacity": "2Ti",
    }
    assert store["download"]["image"].startswith("public.ecr.aws/aws-cli/aws-cli:2.")
    assert 'aws s3 sync "$SOURCE" "$DEST"' in store["download"]["command"][-1]
    assert store["copy_env"] == {"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "us-west-2"}
    assert "upload" not in store
    addon = inputs(rec, "aws:eks/addon:Addon", "k3-weights-mountpoint")
    assert addon["addonName"] == "aws-mountpoint-s3-csi-driver" and "podIdentityAssociations" not in addon


def test_driver_credentials_give_the_mountpoint_driver_its_own_read_only_role():
    rec = bucket(csi_credentials=CsiCredentials.DRIVER)
    addon = inputs(rec, "aws:eks/addon:Addon", "k3-weights-mountpoint")
    (assoc,) = addon["podIdentityAssociations"]
    assert assoc["serviceAccount"] == "s3-csi-driver-sa"
    assert assoc["roleArn"].startswith("arn:aws:iam::123456789012:role/k3-weights-mountpoint")
    doc = json.loads(inputs(rec, "aws:iam/rolePolicy:RolePolicy", "k3-weights-mountpoint-weights")["policy"])
    assert policies.actions_of(doc) == {"s3:ListBucket", "s3:GetObject"}


def test_no_mount_no_driver():
    rec = bucket(mount=False)
    assert not rec.by_type("aws:eks/addon:Addon") and "fuse" not in offline.unwrap(rec.outputs["store"])


def test_bucket_names_with_dots_are_refused():
    with pytest.raises(pulumi.InputPropertyError, match="dots"):
        bucket(bucket_name="kimi.k3")


# --- HyperPod -------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
@functools.lru_cache(maxsize=None)
def hyperpod_cluster(count: int = 1, **extra) -> offline.Recording:
    def program():
        HyperPodCluster("k3-hyperpod", {
            "cluster_name": "k3-test", "region": "us-west-2",
            "eks_cluster_arn": "arn:aws:eks:us-west-2:123456789012:cluster/k3-test", "vpc_id": "vpc-1",
            "subnet_ids": ["subnet-1"], "security_group_ids": ["sg-1"], "instance_type": "ml.p6-b300.48xlarge",
            "instance_count": count, "training_plan_arn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/k3",
            **extra})
    return run(program)


def test_hyperpod_cluster_inventory():
    assert inventory(hyperpod_cluster()) == [
        (HC, "k3-hyperpod", None),
        ("aws-native:sagemaker:Cluster", "k3-hyperpod-cluster", HC),
        ("aws:iam/role:Role", "k3-hyperpod-execution-role", HC),
        ("aws:iam/rolePolicy:RolePolicy", "k3-hyperpod-execution-eni", HC),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-hyperpod-execution-cni", HC),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-hyperpod-execution-ecr", HC),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-hyperpod-execution-instance", HC),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-hyperpod-execution-worker", HC),
        ("kubernetes:helm.sh/v4:Chart", "k3-hyperpod-dependencies", HC),
        ("pulumi:providers:aws-native", "k3-hyperpod-aws-native", HC),
    ]


def test_hyperpod_instance_group_on_the_training_plan_with_health_checks_and_recovery():
    rec = hyperpod_cluster()
    c = inputs(rec, "aws-native:sagemaker:Cluster", "k3-hyperpod-cluster")
    assert c["orchestrator"] == {"eks": {"clusterArn": "arn:aws:eks:us-west-2:123456789012:cluster/k3-test"}}
    assert c["nodeRecovery"] == "Automatic"
    assert c["vpcConfig"] == {"securityGroupIds": ["sg-1"], "subnets": ["subnet-1"]}
    (group,) = c["instanceGroups"]
    assert group["instanceType"] == "ml.p6-b300.48xlarge" and group["instanceCount"] == 1
    assert group["trainingPlanArn"] == "arn:aws:sagemaker:us-west-2:123456789012:training-plan/k3"
    # Issue 36 major 3: no deep health checks unless asked; with no spare instance a replacement would wait hours.
    assert "onStartDeepHealthChecks" not in group
    assert "taints" not in group["kubernetesConfig"]
    assert group["executionRole"].startswith("arn:aws:iam::123456789012:role/k3-hyperpod-execution-role")
    cluster_reg = rec.one("aws-native:sagemaker:Cluster")
    urn = {r.name: r.urn for r in rec.resources}
    assert {urn["k3-hyperpod-dependencies"], urn["k3-hyperpod-execution-eni"]} <= set(cluster_reg.dependencies)
    assert cluster_reg.provider == urn["k3-hyperpod-aws-native"]
    assert inputs(rec, "pulumi:providers:aws-native", "k3-hyperpod-aws-native")["region"] == "us-west-2"
    assert inputs(rec, "kubernetes:helm.sh/v4:Chart", "k3-hyperpod-dependencies")["chart"] == \
        "sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart"


def test_hyperpod_dependencies_chart_fetches_its_remote_dependencies():
    """At 011ca92 the chart's Chart.yaml declares cert-manager (oci://quay.io/jetstack/charts), nvidia-device-plugin
    0.16.1 and aws-efa-k8s-device-plugin 0.5.20, which its charts/ does not hold, and it has no Chart.lock: Helm's
    CheckDependencies refuses such a chart unless the install updates its dependencies (pulumi-kubernetes
    provider/pkg/helm/tool.go runs the update only then)."""
    chart = inputs(hyperpod_cluster(), "kubernetes:helm.sh/v4:Chart", "k3-hyperpod-dependencies")
    assert chart["dependencyUpdate"] is True and chart["namespace"] == "kube-system"


def test_hyperpod_execution_role_is_assumed_by_sagemaker():
    role = inputs(hyperpod_cluster(), "aws:iam/role:Role", "k3-hyperpod-execution-role")
    assert json.loads(role["assumeRolePolicy"]) == policies.service_trust("sagemaker.amazonaws.com")
    attached = {offline.unwrap(r.inputs)["policyArn"] for r in hyperpod_cluster().by_type(
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    assert "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy" in attached


def test_connectivity_checks_need_two_instances():
    """InstanceConnectivity is a cluster-level check (NCCL across instances): a one-instance group asks only for
    InstanceStress, which it can pass; two or more get both."""
    def checks(count: int) -> list[str]:
        (group,) = inputs(hyperpod_cluster(count, deep_health_checks=True), "aws-native:sagemaker:Cluster",
                          "k3-hyperpod-cluster")["instanceGroups"]
        return group["onStartDeepHealthChecks"]
    assert checks(1) == ["InstanceStress"]
    assert checks(2) == ["InstanceStress", "InstanceConnectivity"]


def test_hyperpod_instance_role_gets_the_reference_eni_actions_scoped_to_the_cluster_network():
    """awsome-distributed-training 7.sagemaker-hyperpod-eks: the execution role adds these ENI actions; the four
    managed policies do not have CreateNetworkInterfacePermission, DeleteNetworkInterfacePermission or
    DescribeDhcpOptions."""
    doc = json.loads(inputs(hyperpod_cluster(), "aws:iam/rolePolicy:RolePolicy", "k3-hyperpod-execution-eni")["policy"])
    scoped, describe, tag = doc["Statement"]
    assert set(scoped["Action"]) == {
        "ec2:AssignPrivateIpAddresses", "ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission",
        "ec2:DeleteNetworkInterface", "ec2:DeleteNetworkInterfacePermission", "ec2:ModifyNetworkInterfaceAttribute",
        "ec2:UnassignPrivateIpAddresses"}
    ec2 = "arn:aws:ec2:us-west-2:123456789012"
    assert scoped["Resource"] == [f"{ec2}:instance/*", f"{ec2}:network-interface/*", f"{ec2}:vpc/vpc-1",
                                  f"{ec2}:subnet/subnet-1", f"{ec2}:security-group/sg-1"]
    assert set(describe["Action"]) == {"ec2:DescribeDhcpOptions", "ec2:DescribeNetworkInterfaces",
                                       "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets", "ec2:DescribeVpcs",
                                       "ec2:DetachNetworkInterface"} and describe["Resource"] == "*"
    assert (tag["Action"], tag["Resource"]) == ("ec2:CreateTags", "arn:aws:ec2:*:*:network-interface/*")


def test_hyperpod_refuses_ec2_instance_types():
    def program():
        HyperPodCluster("h", {"cluster_name": "c", "region": "us-west-2", "eks_cluster_arn": "a", "vpc_id": "v",
                              "subnet_ids": [], "security_group_ids": [], "instance_type": "p6-b300.48xlarge",
                              "instance_count": 1})
    with pytest.raises(pulumi.InputPropertyError, match=r"ml\.\*"):
        run(program)


ENDPOINT = {
    "name": "kimi-k3", "namespace": "kimi-k3", "model_name": "Kimi-K3", "instance_type": "ml.p6-b300.48xlarge",
    "replicas": 1, "image": "vllm/vllm-openai:kimi-k3", "args": ["--model", "/opt/ml/model"],
    "env": {"VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION": "1"}, "port": 8000, "health_path": "/health", "metrics_path": "/metrics", "gpus": 8,
    "model_location": "models/moonshotai/Kimi-K3", "prefetch": True, "max_deploy_seconds": 3600,
    "startup_budget_seconds": 1670,
}


@functools.lru_cache(maxsize=None)
def hyperpod_endpoint(**extra) -> offline.Recording:
    def program():
        e = HyperPodEndpoint("k3-endpoint", {
            "region": "us-west-2", "eks_cluster_name": "k3-test",
            "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdefabcdef",
            "oidc_provider_arn": "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABC",
            "oidc_issuer": "https://oidc.eks.us-west-2.amazonaws.com/id/ABC", "bucket_name": "kimi-k3-weights",
            "endpoint": {**ENDPOINT, **extra}})  # type: ignore[typeddict-item]
        pulumi.export("endpoint", e.endpoint)
    return run(program)


def test_hyperpod_endpoint_inventory():
    assert inventory(hyperpod_endpoint()) == [
        (HE, "k3-endpoint", None),
        ("aws:eks/addon:Addon", "k3-endpoint-aws-fsx-csi-driver", HE),
        ("aws:eks/addon:Addon", "k3-endpoint-cert-manager", HE),
        ("aws:eks/addon:Addon", "k3-endpoint-inference-operator", HE),
        ("aws:eks/addon:Addon", "k3-endpoint-metrics-server", HE),
        ("aws:iam/role:Role", "k3-endpoint-alb-role", HE),
        ("aws:iam/role:Role", "k3-endpoint-keda-role", HE),
        ("aws:iam/role:Role", "k3-endpoint-operator-role", HE),
        ("aws:iam/rolePolicy:RolePolicy", "k3-endpoint-alb", HE),
        ("aws:iam/rolePolicy:RolePolicy", "k3-endpoint-keda", HE),
        ("aws:iam/rolePolicy:RolePolicy", "k3-endpoint-operator-tls", HE),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "k3-endpoint-operator-access", HE),
        ("aws:s3/bucket:Bucket", "k3-endpoint-tls", HE),
        ("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "k3-endpoint-tls-public-access-block", HE),
        ("k3infra:index:ImagePrePull", "k3-endpoint-pre-pull", HE),
        ("kubernetes:apps/v1:DaemonSet", "k3-endpoint-pre-pull-daemon-set", "k3infra:index:ImagePrePull"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-endpoint-pre-pull-network-policy",
         "k3infra:index:ImagePrePull"),
        ("kubernetes:core/v1:Namespace", "k3-endpoint-namespace", HE),
        ("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig", "k3-endpoint-config", HE),
    ]


def test_inference_operator_add_on_is_configured_with_its_roles_and_buckets():
    rec = hyperpod_endpoint()
    addon = inputs(rec, "aws:eks/addon:Addon", "k3-endpoint-inference-operator")
    assert addon["addonName"] == "amazon-sagemaker-hyperpod-inference"
    conf = json.loads(addon["configurationValues"])
    assert conf["executionRoleArn"] == "arn:aws:iam::123456789012:role/SageMakerHyperPodInference-k3-test-us-west-2"
    assert conf["tlsCertificateS3Bucket"].startswith("hyperpod-tls-")
    assert conf["hyperpodClusterArn"] == "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdefabcdef"
    assert conf["alb"]["serviceAccount"]["roleArn"].startswith("arn:aws:iam::123456789012:role/k3-endpoint-alb-role")
    assert conf["keda"]["auth"]["aws"]["irsa"]["roleArn"].startswith("arn:aws:iam::123456789012:role/k3-endpoint-keda-role")
    # the shape upstream's inference-operator/migration/helm_to_addon.sh gives ADDON_CONFIG (less the JumpStart role)
    alb, keda = conf["alb"]["serviceAccount"]["roleArn"], conf["keda"]["auth"]["aws"]["irsa"]["roleArn"]
    assert conf["alb"] == {"enabled": True, "serviceAccount": {"create": True, "roleArn": alb}}
    assert conf["keda"] == {"enabled": True, "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda}}}}
    assert set(conf) == {"executionRoleArn", "tlsCertificateS3Bucket", "hyperpodClusterArn", "alb", "keda"}
    reg = rec.one("aws:eks/addon:Addon", "k3-endpoint-inference-operator")
    urn = {r.name: r.urn for r in rec.resources}
    assert {urn[f"k3-endpoint-{a}"] for a in ("cert-manager", "metrics-server", "aws-fsx-csi-driver")} <= set(reg.dependencies)


def test_operator_role_name_passes_the_add_on_chart_validation():
    """With isAddOn the chart's _validateRequiredValues.tpl takes the last "/" segment of executionRoleArn and
    fails unless it starts with SageMakerHyperPodInference; IAM role names are at most 64 characters."""
    rec = hyperpod_endpoint()
    role = inputs(rec, "aws:iam/role:Role", "k3-endpoint-operator-role")
    conf = json.loads(inputs(rec, "aws:eks/addon:Addon", "k3-endpoint-inference-operator")["configurationValues"])
    name = conf["executionRoleArn"].split("/")[-1]
    assert name == role["name"] and name.startswith("SageMakerHyperPodInference") and len(name) <= 64
    long_name = inference_role_name("c" * 63, "ap-southeast-4")
    assert long_name.startswith("SageMakerHyperPodInference-ccc") and len(long_name) == 64
    assert long_name != inference_role_name("c" * 62 + "d", "ap-southeast-4")


def test_alb_controller_gets_upstreams_policy_at_the_pinned_version():
    doc = json.loads(inputs(hyperpod_endpoint(), "aws:iam/rolePolicy:RolePolicy", "k3-endpoint-alb")["policy"])
    upstream = policies.load_balancer_controller_policy_file("v2.13.2")
    assert upstream.name == "aws-load-balancer-controller-v2.13.2-iam-policy.json"
    assert doc == json.loads(upstream.read_text())
    assert hashlib.sha256(upstream.read_bytes()).hexdigest() in (upstream.parent / "SOURCES.md").read_text()
    # the per-tag conditions the condensed rewrite dropped are there
    tagged = [st for st in doc["Statement"] if "Condition" in st and "Null" in st["Condition"]]
    assert any("ec2:DeleteSecurityGroup" in st["Action"] for st in tagged)
    assert any("elasticloadbalancing:DeleteLoadBalancer" in st["Action"] for st in tagged)


def test_operator_role_trusts_its_service_account_and_sagemaker():
    trust = json.loads(inputs(hyperpod_endpoint(), "aws:iam/role:Role", "k3-endpoint-operator-role")["assumeRolePolicy"])
    web, svc = trust["Statement"]
    assert web["Condition"]["StringEquals"]["oidc.eks.us-west-2.amazonaws.com/id/ABC:sub"] == \
        "system:serviceaccount:hyperpod-inference-system:hyperpod-inference-controller-manager"
    assert svc["Principal"] == {"Service": "sagemaker.amazonaws.com"}


def test_keda_role_trusts_its_service_account_and_sagemaker():
    """helm_to_addon.sh's KEDA_TRUST_POLICY: sagemaker.amazonaws.com (sts:AssumeRole) and the keda-operator service
    account (web identity); the ALB role trusts its service account only."""
    trust = json.loads(inputs(hyperpod_endpoint(), "aws:iam/role:Role", "k3-endpoint-keda-role")["assumeRolePolicy"])
    web, svc = trust["Statement"]
    assert web["Condition"]["StringEquals"]["oidc.eks.us-west-2.amazonaws.com/id/ABC:sub"] == \
        "system:serviceaccount:hyperpod-inference-system:keda-operator"
    assert (svc["Principal"], svc["Action"]) == ({"Service": "sagemaker.amazonaws.com"}, "sts:AssumeRole")
    alb = json.loads(inputs(hyperpod_endpoint(), "aws:iam/role:Role", "k3-endpoint-alb-role")["assumeRolePolicy"])
    assert [st["Action"] for st in alb["Statement"]] == ["sts:AssumeRoleWithWebIdentity"]


def _worker(rec: offline.Recording) -> dict:
    iec = rec.one("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig")
    return offline.unwrap(iec.inputs)["spec"]["worker"]


def test_the_worker_gets_the_catalogs_share_of_the_instance_unless_told():
    amounts = {"nvidia.com/gpu": 8, "cpu": "163", "memory": "3481Gi"}
    assert _worker(hyperpod_endpoint())["resources"] == {"limits": amounts, "requests": amounts}
    told = {"nvidia.com/gpu": 8, "cpu": "150", "memory": "3000Gi"}
    assert _worker(hyperpod_endpoint(cpu="150", memory="3000Gi"))["resources"] == {"limits": told, "requests": told}


def test_an_instance_type_outside_the_catalog_needs_the_workers_cpu_and_memory():
    with pytest.raises(pulumi.InputPropertyError, match="ml.g6e.48xlarge is not in k3infra's catalog: give the "
                                                        "worker's cpu and memory"):
        hyperpod_endpoint(instance_type="ml.g6e.48xlarge")
    assert _worker(hyperpod_endpoint(instance_type="ml.g6e.48xlarge", cpu="160", memory="1200Gi"))["resources"][
        "limits"]["memory"] == "1200Gi"


def test_inference_endpoint_config_waits_for_an_available_replica():
    rec = hyperpod_endpoint()
    iec = rec.one("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig")
    meta = offline.unwrap(iec.inputs)["metadata"]
    assert meta["annotations"] == {
        "pulumi.com/waitFor": "jsonpath={.status.deploymentStatus.status.availableReplicas}=1",
        "pulumi.com/timeoutSeconds": "3600",
    }
    urn = {r.name: r.urn for r in rec.resources}
    assert {urn["k3-endpoint-inference-operator"], urn["k3-endpoint-namespace"]} <= set(iec.dependencies)
    assert rec.outputs["endpoint"].startswith("https://internal-k8s-")


def test_an_endpoint_whose_capacity_has_not_started_is_not_created():
    """The operator's deadline (maxDeployTimeInSeconds) runs from the InferenceEndpointConfig's creation: with the
    capacity pending the add-on and its roles are made, the endpoint is left to the next `pulumi up`."""
    rec = hyperpod_endpoint(capacity_pending="training plan k3 is Scheduled until 2026-12-20T00:00:00Z")
    assert not rec.by_type("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig")
    assert rec.one("aws:eks/addon:Addon", "k3-endpoint-inference-operator")
    assert rec.outputs["endpoint"] == ""


def test_deploy_time_below_the_operators_default_is_refused():
    with pytest.raises(pulumi.InputPropertyError, match="shorter than the operator's default of 3600 s"):
        hyperpod_endpoint(max_deploy_seconds=2090)


# --- multi-language schema -------------------------------------------------------------------------------------


def test_the_component_schema_analyzer_accepts_every_aws_component():
    import k3infra
    from pulumi.provider.experimental.component import ComponentProvider

    names = ["EksCluster", "EksGpuNodeGroup", "S3WeightBucket", "HyperPodCluster", "HyperPodEndpoint"]
    assert all(k3infra.COMPONENTS[n].startswith("k3infra.aws.") for n in names)
    provider = ComponentProvider([getattr(k3infra, n) for n in names], "k3infra", version="0.0.0")
    schema = provider.schema if isinstance(provider.schema, dict) else json.loads(provider.schema)
    assert sorted(schema["resources"]) == sorted(f"k3infra:index:{n}" for n in names)
    gpu_inputs = schema["resources"]["k3infra:index:EksGpuNodeGroup"]["inputProperties"]
    assert gpu_inputs["capacity"]["$ref"] == "#/types/k3infra:index:CapacityKind"
    assert all(p.get("description") for r in schema["resources"].values() for p in r["inputProperties"].values())

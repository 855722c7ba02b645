"""Alibaba Cloud configuration rules (k3infra/config/clouds/alicloud.py), each with its exact key and message."""

import dataclasses
import types

import pytest

from k3infra.catalog import ACCELERATORS, CapacityType, Platform
from k3infra.catalog.ack import ACK_NVIDIA_DRIVERS, ack_driver_problem
from k3infra.config import parse_config
from k3infra.config.clouds import alicloud as rules
from tests import configs
from tests.configs import with_

ACK = {
    "alicloud:region": "ap-southeast-1",
    "k3infra:cloud": "alicloud",
    "k3infra:zone": "ap-southeast-1c",
    "k3infra:accelerator": "ecs.ebmgn8v.48xlarge",
    "k3infra:capacity": {"type": "private-pool", "privatePoolId": "crp-abc123"},
    "k3infra:weights": {"bucket": "kimi-k3-weights", "sync": False},
}
PAI_IMAGE = "registry-vpc.ap-southeast-1.aliyuncs.com/my-org/vllm-openai:kimi-k3"  # Personal, before 2024-09-09
PAI = {
    **ACK,
    "k3infra:platform": "pai-eas",
    "k3infra:image": PAI_IMAGE,
    "k3infra:imagePlatforms": ["amd64"],
    "k3infra:capacity": {"type": "lingjun"},
    "k3infra:alicloud": {"paiResourceGroup": "quotak3abc", "paiWorkspaceId": "270001"},
}
ENTERPRISE_IMAGE = "k3-registry-vpc.ap-southeast-1.cr.aliyuncs.com/my-org/vllm-openai:kimi-k3"
PERSONAL_IMAGE = "crpi-k3abc123-vpc.ap-southeast-1.personal.cr.aliyuncs.com/my-org/vllm-openai:kimi-k3"

#: A Blackwell SKU as Alibaba would list it: no such SKU is in the catalog (none is sold), so the rule is tested
#: on a synthetic entry.
B300_SKU = dataclasses.replace(ACCELERATORS["ecs.ebmgn8v.48xlarge"], sku="ecs.ebmgn9b.48xlarge", gpu_model="B300",
                               gpu_memory_gb=288)


def problems(raw):
    """(key, reason) of every problem."""
    return [(p.key, p.reason) for p in configs.problems(raw)]


def only(raw):
    """(key, reason) of the one problem."""
    p = configs.only(raw)
    return p.key, p.reason


def test_both_stacks_shapes_validate():
    assert problems(ACK) == []
    cfg = parse_config(PAI, stack="t")
    assert cfg.platform == Platform.PAI_EAS and cfg.capacity.type == CapacityType.LINGJUN
    assert cfg.alicloud is not None and cfg.alicloud.pai_resource_group == "quotak3abc"


def test_two_nodes_on_96gb_gpus_is_rejected_with_why_and_how_many_fit():
    key, reason = only(with_(ACK, nodes=2))
    assert key == "k3infra:nodes"
    assert reason == ("2 x ecs.ebmgn8v.48xlarge gives 1,490 GB usable (16 x 96 GB at memory fraction 0.97); Kimi K3 "
                      "needs 1,720 GB (1,560 weights + 80 runtime + 80 KV cache): 3 nodes fit")


def test_the_sizing_gives_three_nodes_on_ebmgn8v():
    cfg = parse_config(ACK, stack="t")
    assert (cfg.nodes, cfg.sizing.layout.tensor_parallel, cfg.sizing.layout.pipeline_parallel) == (3, 8, 3)
    assert cfg.total_nodes == 3


@pytest.fixture
def b300(monkeypatch):
    """Put the synthetic Alibaba B300 SKU in the catalog the validation reads (the accelerator and the sizing)."""
    from k3infra.config import layout, target

    table = types.MappingProxyType({**ACCELERATORS, B300_SKU.sku: B300_SKU})
    monkeypatch.setattr(target, "ACCELERATORS", table)
    monkeypatch.setattr(layout, "ACCELERATORS", table)
    return B300_SKU.sku


def test_b300_in_a_mainland_region_is_rejected(b300):
    raw = with_(ACK, accelerator=b300, zone="cn-hangzhou-h", **{"alicloud:region": "cn-hangzhou"})
    key, reason = only(raw)
    assert key == "k3infra:accelerator"
    assert reason == ("ecs.ebmgn9b.48xlarge carries B300 GPUs, which US export controls bar from China, and "
                      "cn-hangzhou is a China region (002 §6.1: no B300-class GPUs in mainland regions; Hong Kong "
                      "counts as China)")


def test_b300_in_hong_kong_is_rejected_too(b300):
    raw = with_(ACK, accelerator=b300, zone="cn-hongkong-b", **{"alicloud:region": "cn-hongkong"})
    assert only(raw)[0] == "k3infra:accelerator"


def test_b300_outside_china_passes_with_the_sales_warning(b300):
    cfg = parse_config(with_(ACK, accelerator=b300), stack="t")
    assert ("ecs.ebmgn9b.48xlarge (B300) outside China is sold only after individual confirmation by an Alibaba "
            "Cloud sales representative (002 §6.1)") in cfg.warnings


def test_h20_class_ebmgn8v_is_allowed_in_mainland_regions():
    assert problems(with_(ACK, zone="cn-hangzhou-h", **{"alicloud:region": "cn-hangzhou"})) == []


@pytest.mark.parametrize(("model", "family"), [("B300", "B300"), ("GB300", "GB300"), ("H20-class (96 GB)", "H20"),
                                               ("H200", "H200"), ("", "")])
def test_gpu_family(model, family):
    assert rules.gpu_family(model) == family


def test_export_controlled_set_covers_blackwell_and_hopper_but_not_h20():
    assert {"B300", "GB300", "B200", "GB200", "H100", "H200"} == rules.EXPORT_CONTROLLED_GPUS
    assert rules.gpu_family(ACCELERATORS["ecs.ebmgn8v.48xlarge"].gpu_model) not in rules.EXPORT_CONTROLLED_GPUS


def test_pai_without_a_resource_group_is_rejected():
    key, reason = only(with_(PAI, alicloud={"paiWorkspaceId": "270001"}))
    assert key == "k3infra:alicloud.paiResourceGroup"
    assert reason == ("is required on platform pai-eas: the service runs on a dedicated EAS resource group or a "
                      "Lingjun resource quota you hold (002 §6.2), never on shared public resources")


def test_pai_dedicated_group_cannot_hold_a_multi_machine_replica():
    raw = with_(PAI, capacity={"type": "on-demand"}, alicloud={"paiResourceGroup": "eas-r-k3"})
    key, reason = only(raw)
    assert key == "k3infra:alicloud.paiResourceGroup"
    assert reason == ("is an EAS dedicated resource group, and one replica spans 3 ecs.ebmgn8v.48xlarge machines: "
                      "distributed deployment over several machines requires Lingjun resources and a quota (002 §6.2)")


def test_pai_quota_needs_capacity_type_lingjun_and_its_workspace():
    found = problems(with_(PAI, capacity={"type": "on-demand"}, alicloud={"paiResourceGroup": "quotak3abc"}))
    assert found == [
        ("k3infra:alicloud.paiWorkspaceId", "is required with a Lingjun quota: the quota is granted to a PAI "
         "workspace and the service must be created in it"),
        ("k3infra:capacity.type", "alicloud.paiResourceGroup quotak3abc is a Lingjun quota, so the GPUs come from "
         "Lingjun resources"),
    ]


def test_pai_rejects_ack_only_capacity():
    found = problems(with_(PAI, capacity={"type": "lingjun", "lingjunClusterId": "eflo-c", "lingjunNodeGroupId": "ng"}))
    assert [k for k, _ in found] == ["k3infra:capacity.lingjunClusterId", "k3infra:capacity.lingjunNodeGroupId"]
    key, reason = only(with_(PAI, capacity={"type": "private-pool", "privatePoolId": "crp-abc"}))
    assert key == "k3infra:capacity.type" and reason.startswith("ECS private pools feed ACK node pools")


def test_pai_lingjun_type_needs_no_eflo_ids():
    assert problems(PAI) == []


def test_pai_cannot_run_the_sync_job():
    key, reason = only(with_(PAI, weights={"bucket": "kimi-k3-weights", "revision": "main"}))
    assert key == "k3infra:weights.sync"
    assert reason == ("PAI-EAS has no Kubernetes cluster to run the sync Job: upload the weights beforehand (002 §6.2 "
                      "step 4; docs/alicloud.md: ossutil cp)")


def test_pai_resource_group_must_be_a_group_or_a_quota():
    key, reason = only(with_(PAI, alicloud={"paiResourceGroup": "rg-1", "paiWorkspaceId": "270001"}))
    assert (key, reason) == ("k3infra:alicloud.paiResourceGroup", "is not well formed")


def test_pai_settings_are_rejected_on_ack():
    found = problems(with_(ACK, alicloud={"paiResourceGroup": "quotak3abc", "paiWorkspaceId": "270001"}))
    assert found == [("k3infra:alicloud.paiResourceGroup", "applies to platform pai-eas; this stack runs on ACK"),
                     ("k3infra:alicloud.paiWorkspaceId", "applies to platform pai-eas; this stack runs on ACK")]


def test_ack_driver_pin_is_a_version_ack_lists():
    key, reason = only(with_(ACK, alicloud={"gpuDriverVersion": "580.126.09"}))
    assert key == "k3infra:alicloud.gpuDriverVersion"
    assert reason.startswith("ACK does not list NVIDIA driver 580.126.09 for clusters 1.28 and later, and installs its "
                             "default 535.161.07 instead of an unlisted version: the pin would do nothing")
    key, reason = only(with_(ACK, alicloud={"gpuDriverVersion": "535.129.03"}))
    assert reason.startswith("ACK lists NVIDIA driver 535.129.03 as incompatible with its latest OS images")
    assert problems(with_(ACK, alicloud={"gpuDriverVersion": "570.133.20"})) == []


def test_ack_driver_pin_is_rejected_on_lingjun_nodes():
    key, reason = only(with_(ACK, capacity={"type": "lingjun", "lingjunClusterId": "eflo-c1",
                                            "lingjunNodeGroupId": "ng-1"}, alicloud={"gpuDriverVersion": "570.169"}))
    assert key == "k3infra:alicloud.gpuDriverVersion"
    assert reason.startswith("Lingjun nodes carry their GPU driver in the OS image, and ACK does not install a driver "
                             "version from the node label on them")


def test_pai_driver_version_is_warned_not_applied():
    cfg = parse_config(with_(PAI, alicloud={"paiResourceGroup": "quotak3abc", "paiWorkspaceId": "270001",
                                            "gpuDriverVersion": "580.126.09"}), stack="t")
    assert any(w.startswith("alicloud.gpuDriverVersion is not applied on pai-eas") for w in cfg.warnings)


def test_bucket_in_another_region_is_rejected():
    found = problems(with_(ACK, weights={"bucket": "kimi-k3.oss-cn-beijing.aliyuncs.com", "sync": False}))
    assert ("k3infra:weights.bucket",
            "names a bucket in cn-beijing, and this stack deploys to ap-southeast-1: k3infra creates the bucket in the "
            "stack's region and both the OSS CSI mount and PAI-EAS read it through that region's internal endpoint; "
            "copy the weights across regions first (ossutil cp)") in found


def test_bucket_endpoint_of_the_same_region_gets_only_the_naming_problem():
    found = problems(with_(ACK, weights={"bucket": "kimi-k3.oss-ap-southeast-1-internal.aliyuncs.com", "sync": False}))
    assert found == [("k3infra:weights.bucket", "alicloud would reject this bucket name")]


@pytest.mark.parametrize(("bucket", "region"), [
    ("kimi.oss-cn-beijing.aliyuncs.com", "cn-beijing"),
    ("oss://kimi.oss-cn-shanghai-internal.aliyuncs.com/models", "cn-shanghai"),
    ("https://kimi.oss-ap-southeast-1.aliyuncs.com", "ap-southeast-1"),
    ("kimi-k3-weights", None),
])
def test_bucket_endpoint_region(bucket, region):
    assert rules.bucket_endpoint_region(bucket) == region


def test_ack_lingjun_pool_warns_to_check_the_machines():
    cfg = parse_config(with_(ACK, capacity={"type": "lingjun", "lingjunClusterId": "eflo-c1",
                                            "lingjunNodeGroupId": "ng-1"}), stack="t")
    assert ("capacity type lingjun: the node pool takes the machines of EFLO node group ng-1, and the sizing assumes "
            "ecs.ebmgn8v.48xlarge (8 x 96 GB): check that the node group's machines match") in cfg.warnings


def test_ack_lingjun_still_needs_the_eflo_ids():
    found = problems(with_(ACK, capacity={"type": "lingjun"}))
    assert [k for k, _ in found] == ["k3infra:capacity.lingjunClusterId", "k3infra:capacity.lingjunNodeGroupId"]


def test_every_problem_at_once():
    raw = with_(PAI, alicloud={}, weights={"bucket": "kimi.oss-cn-beijing.aliyuncs.com", "sync": True},
                capacity={"type": "private-pool", "privatePoolId": "crp-abc"})
    keys = [k for k, _ in problems(raw)]
    assert keys == ["k3infra:alicloud.paiResourceGroup", "k3infra:capacity.type", "k3infra:weights.bucket",
                    "k3infra:weights.bucket", "k3infra:weights.revision", "k3infra:weights.sync"]


def test_ack_kubernetes_older_than_1_26_cannot_mount_oss_with_rrsa():
    key, reason = only(with_(ACK, cluster={"kubernetesVersion": "1.24.6-aliyun.1"}))
    assert key == "k3infra:cluster.kubernetesVersion"
    assert reason == ("the weights are mounted through an RRSA-authenticated OSS volume, which needs Kubernetes 1.26 "
                      "or later on ACK")
    assert problems(with_(ACK, cluster={"kubernetesVersion": "1.33"})) == []


# --------------------------------------------------------------------------------------------- images


def test_pai_with_the_docker_hub_default_image_is_rejected_naming_the_image_key():
    key, reason = only(with_(PAI, image=None, imagePlatforms=None))
    assert key == "k3infra:image"
    assert reason.startswith("is on docker.io, and PAI-EAS services have no internet access by default")
    assert "mirror the image into ACR in ap-southeast-1" in reason


@pytest.mark.parametrize("image, why", [
    ("registry.ap-southeast-1.aliyuncs.com/my-org/vllm-openai:kimi-k3", "is a Container Registry internet endpoint"),
    ("registry-vpc.cn-hangzhou.aliyuncs.com/my-org/vllm-openai:kimi-k3",
     "is a Container Registry VPC endpoint in cn-hangzhou"),
    ("ghcr.io/my-org/vllm-openai:kimi-k3", "is on ghcr.io"),
])
def test_pai_needs_a_vpc_registry_endpoint_in_its_region(image, why):
    problem = configs.only(with_(PAI, image=image))
    assert (problem.key, problem.given) == ("k3infra:image", repr(image)) and problem.reason.startswith(why)
    assert problem.allowed.startswith("registry-vpc.ap-southeast-1.aliyuncs.com/NAMESPACE/REPOSITORY:TAG (Personal "
                                      "Edition before 2024-09-09), crpi-ID-vpc.ap-southeast-1.personal.cr.aliyuncs.com")


@pytest.mark.parametrize("image", [
    "registry-vpc.ap-southeast-1.cr.aliyuncs.com/my-org/vllm-openai:kimi-k3",  # the old default: no such host
    "registry.ap-southeast-1.cr.aliyuncs.com/my-org/vllm-openai:kimi-k3",
    "crpi-k3abc123-vpc.ap-southeast-1.cr.aliyuncs.com/my-org/vllm:k3",  # personal without .personal
    "k3-registry-vpc.ap-southeast-1.aliyuncs.com/my-org/vllm:k3",  # enterprise without .cr
])
@pytest.mark.parametrize("base", ["ack", "pai"])
def test_invented_registry_hosts_are_refused_on_both_platforms(image, base):
    problem = configs.only(with_(PAI if base == "pai" else ACK, image=image, imagePlatforms=["amd64"]))
    assert problem.key == "k3infra:image"
    assert problem.reason.startswith(f"names {image.split('/')[0]}, which is no Container Registry endpoint")


@pytest.mark.parametrize("image, extra", [
    (PAI_IMAGE, {}),
    (PERSONAL_IMAGE, {"registryAuth": "puller@5123456789012345:s3cret"}),
    (ENTERPRISE_IMAGE, {"alicloud": {**PAI["k3infra:alicloud"], "acrInstanceId": "cri-k3registry0001"}}),
    ("eas-registry-vpc.ap-southeast-1.cr.aliyuncs.com/pai-eas/vllm:k3",
     {"alicloud": {**PAI["k3infra:alicloud"], "acrInstanceId": "cri-eas0001"}}),
])
def test_pai_accepts_the_three_real_vpc_endpoint_forms(image, extra):
    assert problems(with_(PAI, image=image, **extra)) == []


def test_a_new_personal_instance_needs_registry_credentials_on_pai():
    problem = configs.only(with_(PAI, image=PERSONAL_IMAGE))
    assert (problem.key, problem.given) == ("k3infra:registryAuth", "nothing")
    assert "refuses anonymous pulls (ACR: \"A secret is required to pull images\")" in problem.reason


def test_registry_credentials_are_user_colon_password_and_never_echoed():
    problem = configs.only(with_(PAI, image=PERSONAL_IMAGE, registryAuth="s3cret-without-user"))
    assert (problem.key, problem.given) == ("k3infra:registryAuth", "'[secret]'")
    assert "s3cret" not in problem.reason + problem.allowed


@pytest.mark.parametrize("base", ["ack", "pai"])
def test_an_enterprise_vpc_endpoint_needs_the_instance_id_to_join_its_acl(base):
    problem = configs.only(with_(PAI if base == "pai" else ACK, image=ENTERPRISE_IMAGE, imagePlatforms=["amd64"]))
    assert (problem.key, problem.given) == ("k3infra:alicloud.acrInstanceId", "nothing")
    assert problem.reason.startswith("is required: the image is on Enterprise Edition instance k3's VPC endpoint")


def test_an_instance_id_without_an_enterprise_image_is_refused():
    problem = configs.only(with_(PAI, alicloud={**PAI["k3infra:alicloud"], "acrInstanceId": "cri-x1"}))
    assert problem.key == "k3infra:alicloud.acrInstanceId"


def test_ack_refuses_registry_credentials_and_a_new_personal_public_endpoint():
    assert only(with_(ACK, registryAuth="u:p"))[0] == "k3infra:registryAuth"
    key, reason = only(with_(ACK, image="crpi-k3abc123.ap-southeast-1.personal.cr.aliyuncs.com/my-org/vllm:k3",
                             imagePlatforms=["amd64"]))
    assert key == "k3infra:image" and "Public endpoints cannot be used to pull images" in reason


def test_pai_stack_file_shows_a_vpc_registry_image():
    from k3infra import planning
    from tests.support import ROOT

    for stack in ("alicloud-pai", "alicloud-ack"):
        config = planning.load(stack, (), root=ROOT).config
        acr = rules.acr_endpoint(config["k3infra:image"])
        assert acr is not None and (acr.edition, acr.region, acr.vpc) == ("enterprise", "ap-southeast-1", True)
        assert config["k3infra:alicloud"]["acrInstanceId"].startswith("cri-")


def _warnings(raw):
    return parse_config(raw, stack="t").warnings


def test_ack_warns_on_a_docker_hub_image_in_a_china_region():
    china = with_(ACK, **{"alicloud:region": "cn-hangzhou", "zone": "cn-hangzhou-h"})
    hub = [w for w in _warnings(china) if "Docker Hub" in w]
    assert hub == ["image vllm/vllm-openai:kimi-k3 comes from Docker Hub, and cn-hangzhou is a China region: the 3 GPU "
                   "nodes pull ~20 GB each over the NAT gateway, slowly, under Docker Hub's rate limits, when they reach "
                   "it at all; mirror it to Container Registry (002 §6.2 step 3) and set k3infra:image to its VPC "
                   "address, " + rules.vpc_forms("cn-hangzhou")]
    assert not [w for w in _warnings(ACK) if "Docker Hub" in w]  # Singapore: no warning


def test_ack_accepts_an_acr_image_and_says_how_nodes_pull_it():
    acr = with_(ACK, image="registry-vpc.ap-southeast-1.aliyuncs.com/my-org/vllm-openai:kimi-k3",
                imagePlatforms=["amd64"])
    assert [w for w in _warnings(acr) if "Container Registry" in w] == [
        "image registry-vpc.ap-southeast-1.aliyuncs.com/my-org/vllm-openai:kimi-k3 is on Container Registry: the stack "
        "installs ACK's managed-aliyun-acr-credential-helper add-on, which gives the service accounts of namespace "
        "kimi-k3 short-lived credentials for registry-vpc.ap-southeast-1.aliyuncs.com only and pulls with ACK's "
        "AliyunCSManagedAcrRole role: authorize that role once per account in the RAM console, or the add-on fails "
        "its precheck (https://www.alibabacloud.com/help/en/acr/user-guide/non-secret-pulling-container-image)"]


def test_ack_refuses_a_new_personal_instance_its_credential_helper_does_not_serve():
    """Issue 36 item 10: ACK's nodes pull with the managed credential helper, which serves Enterprise instances and
    Personal ones created before 2024-09-09 only; a newer Personal instance refuses anonymous pulls."""
    problem = configs.only(with_(ACK, image=PERSONAL_IMAGE, imagePlatforms=["amd64"]))
    assert (problem.key, problem.given) == ("k3infra:image", repr(PERSONAL_IMAGE))
    assert problem.reason.startswith("is on a Personal Edition instance created since 2024-09-09, which refuses "
                                     "anonymous pulls")
    assert "serves only Enterprise Edition instances and Personal ones created on or before 2024-09-08" in problem.reason


def test_ack_needs_the_instance_id_of_any_enterprise_image_for_its_credential_helper():
    public = "k3-registry.ap-southeast-1.cr.aliyuncs.com/my-org/vllm-openai:kimi-k3"
    problem = configs.only(with_(ACK, image=public, imagePlatforms=["amd64"]))
    assert (problem.key, problem.given) == ("k3infra:alicloud.acrInstanceId", "nothing")
    assert problem.reason == ("is required: ACK's nodes pull it with the managed-aliyun-acr-credential-helper add-on, "
                              "which needs the instance id of an Enterprise instance (https://www.alibabacloud.com/help/"
                              "en/acr/user-guide/non-secret-pulling-container-image)")
    assert problems(with_(ACK, image=public, imagePlatforms=["amd64"], alicloud={"acrInstanceId": "cri-k3public01"})) == []
    # PAI-EAS pulls an Enterprise image of its own account without it; its public endpoint is refused there anyway
    assert only(with_(PAI, image=public))[0] == "k3infra:image"


def test_ack_rejects_another_regions_vpc_registry_endpoint():
    key, reason = only(with_(ACK, image="registry-vpc.cn-beijing.aliyuncs.com/my-org/vllm:k3",
                             imagePlatforms=["amd64"]))
    assert key == "k3infra:image"
    assert reason == ("is a Container Registry VPC endpoint in cn-beijing, which resolves only inside cn-beijing's "
                      "VPCs, and the cluster is in ap-southeast-1")


@pytest.mark.parametrize("image, host", [
    ("vllm/vllm-openai:kimi-k3", "docker.io"), ("docker.io/lmsysorg/sglang:kimi-k3", "docker.io"),
    ("localhost:5000/vllm:k3", "localhost:5000"), ("my-org/vllm:k3", "docker.io"),
])
def test_image_host(image, host):
    assert rules.image_host(image) == host


def test_plan_of_alicloud_pai_with_a_docker_hub_image_exits_2_naming_the_image_key():
    from tests.test_cli import run

    r = run("plan", "alicloud-pai", "--set", "image=vllm/vllm-openai:kimi-k3")
    assert r.exit_code == 2
    assert "k3infra:image: is on docker.io, and PAI-EAS services have no internet access by default" in r.output


def test_ack_driver_table_is_consistent():
    t = ACK_NVIDIA_DRIVERS
    assert t.default in t.supported and not set(t.supported) & set(t.incompatible)
    assert all(ack_driver_problem(v) is None for v in t.supported)
    assert all("incompatible" in (ack_driver_problem(v) or "") for v in t.incompatible)


def test_pai_resource_machines_must_hold_the_service_and_is_pai_only():
    small = configs.only(with_(PAI, alicloud={**PAI["k3infra:alicloud"], "paiResourceMachines": 2}))
    assert (small.key, small.given) == ("k3infra:alicloud.paiResourceMachines", "2")
    assert small.reason.startswith("the service needs 3 machines (1 replica(s) of 3 ecs.ebmgn8v.48xlarge)")
    assert small.allowed == "at least 3; 6 lets an update start a unit beside the old"
    assert problems(with_(PAI, alicloud={**PAI["k3infra:alicloud"], "paiResourceMachines": 6})) == []
    assert only(with_(ACK, alicloud={"paiResourceMachines": 6}))[0] == "k3infra:alicloud.paiResourceMachines"


def test_registry_credentials_are_refused_outside_pai_eas():
    problem = configs.only({**configs.GCP, "k3infra:registryAuth": "u:p"})
    assert (problem.key, problem.given) == ("k3infra:registryAuth", "'[secret]'")
    assert problem.reason.startswith("is the PAI-EAS service's dockerAuth; on gke")

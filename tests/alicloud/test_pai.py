"""PAI-EAS: the service_config of the alicloud-pai stack field by field, the typed config objects, and the
PaiEasService component (inventory, quota vs. resource group, token secrecy, bad arguments)."""

import json
import shlex

import pulumi
import pytest

from k3infra import offline
from k3infra.alicloud.eas_config import (
    EasCloud,
    EasContainer,
    EasEmptyDir,
    EasMetadata,
    EasNetworking,
    EasOss,
    EasServiceConfig,
    EasStorage,
    EasUnit,
)
from k3infra.alicloud.eas_unit import rank_health_responder
from k3infra.catalog import ENGINES, EngineName
from k3infra.serving.engine import cuda_driver_check
from k3infra.alicloud.pai import PaiEasService, eas_script, endpoint
from k3infra.offline_state.alicloud import FAKE_ALICLOUD_ACCOUNT, _hex
from tests.support import inventory, plan, record

S = "k3infra:index:PaiEasService"
SERVICE = "alicloud:pai/service:Service"


def service_config(p) -> dict:
    return json.loads(offline.unwrap(p.recording.one(SERVICE, "k3-endpoint-service").inputs["serviceConfig"]))


@pytest.fixture(scope="module")
def pai():
    return plan("alicloud-pai")


@pytest.fixture(scope="module")
def cfg(pai):
    return service_config(pai)


def test_service_config_has_exactly_these_sections(cfg):
    assert sorted(cfg) == ["cloud", "containers", "metadata", "storage", "unit"]


def test_metadata_runs_on_the_lingjun_quota(cfg):
    assert cfg["metadata"] == {
        "name": "kimi_k3_alicloud_pai",
        "instance": 1,
        "cpu": 172,
        "memory": 943718,
        "gpu": 8,
        "workspace_id": "270001",
        "quota_id": "quotak3lingjun0001",
        "quota_type": "Lingjun",
        "resource_burstable": False,
        "rolling_strategy": {"max_surge": 0, "max_unavailable": 1},
    }


def test_unit_spans_the_sizings_machines(cfg, pai):
    assert pai.config.nodes == 3
    assert cfg["unit"] == {"size": 3}


def test_networking_is_the_vpc_created_for_the_service(cfg):
    assert cfg["cloud"] == {"networking": {
        "vpc_id": "vpc-" + _hex("k3-endpoint-vpc", 17),
        "vswitch_id": "vsw-" + _hex("k3-endpoint-vswitch", 17),
        "security_group_id": "sg-" + _hex("k3-endpoint-sg", 17),
    }}


def test_model_is_mounted_read_only_from_oss(cfg):
    assert cfg["storage"] == [
        {"mount_path": "/mnt/models/Kimi-K3",
         "oss": {"path": "oss://my-org-kimi-k3-weights-pai/models/moonshotai/Kimi-K3/", "readOnly": True}},
        {"mount_path": "/dev/shm", "empty_dir": {"medium": "memory", "size_limit": 64}},
    ]


def test_container_image_port_env_and_probes(cfg, pai):
    (c,) = cfg["containers"]
    assert sorted(c) == ["env", "health_check", "image", "port", "script", "startup_check"]
    assert c["image"] == "k3-registry-vpc.ap-southeast-1.cr.aliyuncs.com/my-org/vllm-openai:kimi-k3"  # Enterprise, VPC
    assert c["port"] == 8000
    assert c["env"] == [{"name": k, "value": v} for k, v in sorted({
        "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION": "1",  # kept for the day-0 image
        # the recipe's Hopper and TP x PP settings (catalog/recipes.py)
        "VLLM_USE_V2_MODEL_RUNNER": "1", "VLLM_USE_RUST_FRONTEND": "1",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_CUMEM_ENABLE": "1",
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1800", "VLLM_ENGINE_READY_TIMEOUT_S": "4650"}.items())]
    budget = pai.config.sizing.probe_budget_seconds
    assert c["startup_check"] == {"http_get": {"path": "/health", "port": 8000}, "initial_delay_seconds": 0,
                                  "period_seconds": 30, "failure_threshold": -(-budget // 30), "timeout_seconds": 10,
                                  "success_threshold": 1}
    assert c["startup_check"]["failure_threshold"] * 30 >= budget
    assert c["health_check"] == {"http_get": {"path": "/health", "port": 8000}, "initial_delay_seconds": 0,
                                 "period_seconds": 30, "failure_threshold": 3, "timeout_seconds": 10,
                                 "success_threshold": 1}


def test_script_is_the_canonical_vllm_command_by_rank(cfg):
    script = cfg["containers"][0]["script"]
    argv = shlex.split(script)
    assert argv[:2] == ["bash", "-c"] and len(argv) == 3
    body = argv[2]
    # 002 §6.2's canonical flags, then the recipe's TP x PP and Hopper settings (H20-class, 96 GB)
    flags = ("/mnt/models/Kimi-K3 --trust-remote-code --load-format fastsafetensors --enable-prefix-caching "
             "--enable-auto-tool-choice --tool-call-parser kimi_k3 --reasoning-parser kimi_k3 --served-model-name "
             "Kimi-K3 --moe-backend marlin --tensor-parallel-size 8 --no-enable-flashinfer-autotune --port 8000 "
             "--pipeline-parallel-size 3 --gpu-memory-utilization 0.97 --max-num-batched-tokens 4096 --max-num-seqs 5 "
             "--max-model-len 32768 --disable-custom-all-reduce --attention-backend FLASHMLA")
    check = cuda_driver_check(ENGINES[EngineName.VLLM])
    assert body == "\n".join([
        "set -eo pipefail",
        'if [ -n "${COMM_IFNAME:-}" ]; then export NCCL_SOCKET_IFNAME="$COMM_IFNAME" GLOO_SOCKET_IFNAME="$COMM_IFNAME"; fi',
        'if [ "${RANK_ID}" = "0" ]; then',
        *("  " + line for line in check),
        f"  exec vllm serve {flags} --nnodes 3 --node-rank 0 --master-addr \"${{MASTER_ADDRESS}}\" --master-port 29501",
        "fi",
        *check,
        rank_health_responder(8000, "/health"),
        f'exec vllm serve {flags} --nnodes 3 --node-rank "${{RANK_ID}}" --master-addr "${{MASTER_ADDRESS}}" '
        "--master-port 29501 --headless",
    ]) + "\n"


def test_every_rank_answers_the_probes_on_the_probed_port_and_path(cfg):
    """EAS probes every machine of the unit with the one container spec's checks: the ranks that run vLLM
    --headless (no API server) start the health responder on exactly the probed port and path."""
    (c,) = cfg["containers"]
    probes = {(c[k]["http_get"]["port"], c[k]["http_get"]["path"]) for k in ("startup_check", "health_check")}
    assert probes == {(c["port"], "/health")}
    ((port, path),) = probes
    lines = shlex.split(c["script"])[2].split("\n")
    headless = next(i for i, line in enumerate(lines) if line.startswith("exec ") and line.endswith(" --headless"))
    responder = rank_health_responder(port, path).split("\n")
    assert lines[headless - len(responder):headless] == responder
    assert lines.index("fi", lines.index('if [ "${RANK_ID}" = "0" ]; then')) < headless - len(responder)


def test_no_token_without_an_api_key(cfg, pai):
    assert "token" not in cfg
    assert not isinstance(pai.recording.one(SERVICE, "k3-endpoint-service").inputs["serviceConfig"], offline.Secret)


def test_service_resource_inputs(pai):
    svc = pai.recording.one(SERVICE, "k3-endpoint-service")
    assert {k: v for k, v in offline.plain(svc.inputs).items() if k != "serviceConfig"} == {
        "develop": "false", "workspaceId": "270001",
        "tags": {"k3infra-model": "Kimi-K3", "k3infra-stack": "alicloud-pai"}}
    budget = pai.config.sizing.await_timeout_seconds
    assert svc.custom_timeouts == {"create": f"{budget}s", "update": f"{budget}s"}
    assert any(d.endswith("OssWeightBucket$alicloud:oss/bucket:Bucket::k3-weights-bucket") for d in svc.dependencies)


def test_service_config_is_deterministic(pai):
    again = plan("alicloud-pai", "k3infra:replicas=1")
    raw = offline.unwrap(pai.recording.one(SERVICE, "k3-endpoint-service").inputs["serviceConfig"])
    assert raw == offline.unwrap(again.recording.one(SERVICE, "k3-endpoint-service").inputs["serviceConfig"])
    assert raw == json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_pai_stack_inventory(pai):
    assert inventory(pai.recording) == [
        ("k3infra:index:OssWeightBucket", "k3-weights", None),
        ("alicloud:oss/bucket:Bucket", "k3-weights-bucket", "k3infra:index:OssWeightBucket"),
        ("alicloud:oss/bucketAcl:BucketAcl", "k3-weights-acl", "k3infra:index:OssWeightBucket"),
        ("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock", "k3-weights-public-access-block",
         "k3infra:index:OssWeightBucket"),
        (S, "k3-endpoint", None),
        ("alicloud:cr/vpcEndpointLinkedVpc:VpcEndpointLinkedVpc", "k3-endpoint-registry-vpc", S),
        ("alicloud:ecs/securityGroup:SecurityGroup", "k3-endpoint-sg", S),
        (SERVICE, "k3-endpoint-service", S),
        ("alicloud:vpc/network:Network", "k3-endpoint-vpc", S),
        ("alicloud:vpc/switch:Switch", "k3-endpoint-vswitch", S),
    ]
    sg = offline.plain(pai.recording.one("alicloud:ecs/securityGroup:SecurityGroup", "k3-endpoint-sg").inputs)
    assert (sg["securityGroupType"], sg["innerAccessPolicy"]) == ("normal", "Accept")


def test_pai_outputs_and_cleanup_notes(pai):
    out = pai.recording.outputs
    assert out["endpoint"] == (f"http://{FAKE_ALICLOUD_ACCOUNT}.vpc.ap-southeast-1.pai-eas.aliyuncs.com/api/predict/"
                               "kimi_k3_alicloud_pai")
    assert out["easServiceName"] == "kimi_k3_alicloud_pai"
    assert out["bucketUri"] == "oss://my-org-kimi-k3-weights-pai/models/moonshotai/Kimi-K3"
    assert "kubeconfig" not in out
    assert out["billingAfterDestroy"] == [
        "PAI-EAS service kimi_k3_alicloud_pai bills until `pulumi destroy` deletes it, even while idle (002 §6.4)",
        "Lingjun resource quota quotak3lingjun0001 outlives the stack and bills per its contract: cancel it "
        "separately (002 §6.4)",
        "OSS bucket oss://my-org-kimi-k3-weights-pai is kept on destroy with the 1.56 TB of weights in it: Standard "
        "storage bills monthly until you delete it (002 §6.4; ossutil rm -r -f, then ossutil rb)",
    ]
    assert "PAI-EAS bills while the service exists, idle or not: stop or delete it after testing (002 §6.4)" in \
        out["warnings"]


def test_api_key_becomes_the_service_token_as_a_secret():
    p = plan("alicloud-pai", "apiKey=sk-test-123")
    svc = p.recording.one(SERVICE, "k3-endpoint-service")
    assert isinstance(svc.inputs["serviceConfig"], offline.Secret)
    assert json.loads(offline.unwrap(svc.inputs["serviceConfig"]))["token"] == "sk-test-123"
    assert "sk-test-123" not in json.dumps(p.to_json())
    # the provider stores EAS's echo of service_config, and a token EAS keeps apart would diff on every up
    assert any(w.startswith("k3infra:apiKey is the EAS service token inside service_config") and
               "pulumi preview --diff" in w for w in p.recording.outputs["warnings"])
    assert not any("inside service_config" in w for w in plan("alicloud-pai").recording.outputs["warnings"])


def test_service_name_from_the_stack():
    """One rule names the service the stack creates and the one ``k3infra status`` reads (config.naming)."""
    from k3infra.config.naming import eas_service_name
    from k3infra.status.managed.eas import service_name

    cfg = plan("alicloud-pai").config
    assert eas_service_name(cfg.stack) == service_name(cfg, None) == "kimi_k3_alicloud_pai"


# ---------------------------------------------------------------------------------------------------- typed config


def minimal(**changes) -> EasServiceConfig:
    base = dict(
        metadata=EasMetadata(name="s", instance=1, cpu=1, memory=1024, gpu=1, resource="eas-r-x"),
        cloud=EasCloud(networking=EasNetworking(vpc_id="vpc-1", vswitch_id="vsw-1", security_group_id="sg-1")),
        containers=(EasContainer(image="i", script="bash -c true", port=8000),),
    )
    base.update(changes)
    return EasServiceConfig(**base)  # type: ignore[arg-type]


def test_typed_config_drops_unset_fields_and_renames_read_only():
    c = minimal(storage=(EasStorage(mount_path="/m", oss=EasOss(path="oss://b/p/")),))
    assert c.to_dict() == {
        "metadata": {"name": "s", "instance": 1, "cpu": 1, "memory": 1024, "gpu": 1, "resource": "eas-r-x",
                     "resource_burstable": False},
        "cloud": {"networking": {"vpc_id": "vpc-1", "vswitch_id": "vsw-1", "security_group_id": "sg-1"}},
        "containers": [{"image": "i", "script": "bash -c true", "port": 8000, "env": []}],
        "storage": [{"mount_path": "/m", "oss": {"path": "oss://b/p/", "readOnly": True}}],
    }
    assert c.to_json() == json.dumps(c.to_dict(), sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize("build", [
    lambda: EasOss(path="s3://b/p"),
    lambda: EasStorage(mount_path="/m"),
    lambda: EasStorage(mount_path="/m", oss=EasOss(path="oss://b/"), empty_dir=EasEmptyDir(medium="memory")),
    lambda: EasMetadata(name="s", instance=1, cpu=1, memory=1, gpu=1),
    lambda: EasMetadata(name="s", instance=1, cpu=1, memory=1, gpu=1, resource="eas-r-x", quota_id="quota1"),
    lambda: EasMetadata(name="s", instance=1, cpu=1, memory=1, gpu=1, quota_id="quota1", quota_type="Lingjun"),
    lambda: minimal(containers=()),
    lambda: minimal(unit=EasUnit(size=1)),
])
def test_typed_config_rejects_impossible_shapes(build):
    with pytest.raises(ValueError):
        build()


def test_eas_script_quotes_the_body_as_one_argument():
    body = "set -e\necho 'it''s' \"$RANK_ID\"\n"
    assert shlex.split(eas_script(body)) == ["bash", "-c", body]


def test_endpoints():
    assert endpoint("123", "cn-hangzhou", "svc", vpc=True) == "http://123.vpc.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/svc"
    assert endpoint("123", "cn-hangzhou", "svc", vpc=False) == "http://123.cn-hangzhou.pai-eas.aliyuncs.com/api/predict/svc"


# ---------------------------------------------------------------------------------------------------- component


def service(**changes):
    args = {"service_name": "k3_one", "region": "ap-southeast-1", "zone_id": "ap-southeast-1c", "image": "img",
            "script": "exec vllm serve /mnt/models/M", "env": {"A": "1"}, "port": 8000, "health_path": "/health",
            "startup_budget_seconds": 600, "machines": 1, "replicas": 2, "gpus_per_machine": 8,
            "cpus_per_machine": 100, "memory_mb_per_machine": 1000, "resource": "eas-r-abc",
            "model_uri": "oss://b/models/M"}
    args.update(changes)
    return record(lambda: PaiEasService("eas", args), config={"alicloud:region": "ap-southeast-1"})


def test_one_machine_on_a_dedicated_group_has_no_unit():
    rec = service()
    c = json.loads(offline.plain(rec.one(SERVICE).inputs)["serviceConfig"])
    assert "unit" not in c
    assert c["metadata"]["resource"] == "eas-r-abc" and "quota_id" not in c["metadata"]
    assert c["metadata"]["instance"] == 2
    assert rec.one(SERVICE).custom_timeouts == {"create": "2400s", "update": "4800s"}  # two replicas in turn


@pytest.mark.parametrize(("changes", "path"), [
    ({"service_name": "Kimi-K3"}, "service_name"),
    ({"machines": 3}, "resource"),
    ({"resource": "quota1"}, "workspace_id"),
    ({"resource": "rg-1"}, "resource"),
    ({"machines": 0}, "machines"),
])
def test_service_rejects_bad_args(changes, path):
    with pytest.raises(pulumi.InputPropertyError) as e:
        service(**changes)
    assert e.value.property_path == path


# ------------------------------------------------------------------------------------- updates (issue 23 item 4)


def test_update_waits_the_start_up_budget_of_every_unit_not_the_providers_16_minutes(pai):
    # terraform-provider-alicloud resource_alicloud_pai_service.go: Update: schema.DefaultTimeout(16 * time.Minute);
    # an update rebuilds the 3-machine unit, which the start-up budget alone puts well past that
    svc = pai.recording.one(SERVICE, "k3-endpoint-service")
    await_s = pai.config.sizing.await_timeout_seconds
    assert await_s > 16 * 60
    assert svc.custom_timeouts == {"create": f"{await_s}s", "update": f"{await_s}s"}
    two = plan("alicloud-pai", "k3infra:replicas=2", "k3infra:alicloud.paiResourceMachines=6")
    # two units' machines read OSS at once on the first start, so each unit's budget is longer than one alone's
    two_await = two.config.sizing.await_timeout_seconds
    assert two_await > await_s
    assert two.recording.one(SERVICE, "k3-endpoint-service").custom_timeouts["update"] == f"{2 * two_await}s"


def test_a_quota_of_exactly_one_unit_stops_the_old_unit_first_and_the_plan_says_so(cfg, pai):
    assert cfg["metadata"]["rolling_strategy"] == {"max_surge": 0, "max_unavailable": 1}
    down = [w for w in pai.recording.outputs["warnings"] if "rolling_strategy" in w]
    assert len(down) == 1 and "the endpoint is down" in down[0] and "max_surge 0" in down[0]


def test_a_quota_with_room_for_a_second_unit_rolls_without_downtime():
    p = plan("alicloud-pai", "k3infra:alicloud.paiResourceMachines=6")
    assert service_config(p)["metadata"]["rolling_strategy"] == {"max_surge": 1, "max_unavailable": 0}
    assert not [w for w in p.recording.outputs["warnings"] if "rolling_strategy" in w]


def test_several_replicas_without_room_lose_one_replica_at_a_time():
    p = plan("alicloud-pai", "k3infra:replicas=2", "k3infra:alicloud.paiResourceMachines=6")
    assert service_config(p)["metadata"]["rolling_strategy"] == {"max_surge": 0, "max_unavailable": 1}
    (w,) = [w for w in p.recording.outputs["warnings"] if "rolling_strategy" in w]
    assert "one of the 2 replicas at a time" in w


def test_a_resource_smaller_than_the_service_is_refused_by_the_component():
    rec = service(resource_machines=3)  # two one-machine replicas and one spare: a surge fits
    c = json.loads(offline.plain(rec.one(SERVICE).inputs)["serviceConfig"])
    assert c["metadata"]["rolling_strategy"] == {"max_surge": 1, "max_unavailable": 0}
    with pytest.raises(pulumi.InputPropertyError) as e:
        service(resource_machines=1)
    assert e.value.property_path == "resource_machines" and "holds 1 machines" in str(e.value)


# ------------------------------------------------------------------------------------ registry (issue 23 item 5)

LINK = "alicloud:cr/vpcEndpointLinkedVpc:VpcEndpointLinkedVpc"


def test_the_services_vpc_joins_the_enterprise_registrys_acl_before_the_service(pai):
    link = pai.recording.one(LINK, "k3-endpoint-registry-vpc")
    assert offline.plain(link.inputs) == {
        "instanceId": "cri-k3registry0001", "moduleName": "Registry", "enableCreateDnsRecordInPvzt": True,
        "vpcId": "vpc-" + _hex("k3-endpoint-vpc", 17), "vswitchId": "vsw-" + _hex("k3-endpoint-vswitch", 17)}
    assert link.urn in pai.recording.one(SERVICE, "k3-endpoint-service").dependencies
    assert "dockerAuth" not in service_config(pai)  # same account and region: EAS pulls without credentials


def test_registry_credentials_become_docker_auth_inside_a_secret_service_config():
    p = plan("alicloud-pai", "image=crpi-k3abc123-vpc.ap-southeast-1.personal.cr.aliyuncs.com/my-org/vllm:k3",
             "k3infra:alicloud.acrInstanceId=null", "registryAuth=puller:s3cret-pw")
    svc = p.recording.one(SERVICE, "k3-endpoint-service")
    assert isinstance(svc.inputs["serviceConfig"], offline.Secret)
    assert json.loads(offline.unwrap(svc.inputs["serviceConfig"]))["dockerAuth"] == "cHVsbGVyOnMzY3JldC1wdw=="
    text = json.dumps(p.to_json())
    assert "s3cret-pw" not in text and "cHVsbGVyOnMzY3JldC1wdw==" not in text
    assert not p.recording.by_type(LINK)  # a Personal instance has no ACL to join

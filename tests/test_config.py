"""Configuration validation: every rule with its exact message, all problems at once, nothing registered."""

import json

import pytest

from k3infra import offline, program
from k3infra.catalog import CapacityType, Loader, Platform, Workload
from k3infra.config import ConfigError, parse_config
from tests.configs import ALI, AWS, AZURE, GCP, HYPERPOD, only, problems, with_

@pytest.mark.parametrize("raw", [GCP, AWS, HYPERPOD, AZURE, ALI], ids=["gcp", "aws", "hyperpod", "azure", "alicloud"])
def test_valid_configurations_pass(raw):
    cfg = parse_config(raw, stack="test")
    assert cfg.sizing.fit.fits


def test_defaults_are_filled():
    cfg = parse_config(GCP, stack="gcp-a4xmax")
    assert cfg.platform == Platform.GKE
    assert (cfg.nodes, cfg.replicas, cfg.workload) == (2, 1, Workload.LEADER_WORKER_SET)
    assert cfg.namespace == "kimi-k3"
    assert cfg.load_format == "fastsafetensors"
    assert cfg.weights.loader == Loader.FUSE and cfg.weights.retain_on_destroy and cfg.weights.prefix == "models"
    assert cfg.endpoint.exposure == "internal" and not cfg.endpoint.gateway
    assert cfg.cluster.name == "k3-gcp-a4xmax" and cfg.cluster.deletion_protection
    assert cfg.gcp is not None and cfg.gcp.release_channel == "REGULAR"
    assert parse_config(AWS, stack="t").workload == Workload.DEPLOYMENT
    hp = parse_config(HYPERPOD, stack="t")
    assert (hp.workload, hp.weights.loader) == (None, Loader.BUCKET_COPY)


def test_unknown_cloud():
    assert str(only(with_(GCP, cloud="oracle"))) == (
        "k3infra:cloud: is not a known value (given: 'oracle'; allowed: aws, azure, gcp, alicloud, kubernetes)")


def test_unknown_accelerator_with_did_you_mean():
    assert str(only(with_(GCP, accelerator="a4x-maxgpu-4g-meta"))) == (
        "k3infra:accelerator: is not a machine type the catalog knows (did you mean 'a4x-maxgpu-4g-metal'?) "
        "(given: 'a4x-maxgpu-4g-meta'; allowed: a4x-maxgpu-4g-metal, a4x-highgpu-4g, a4-highgpu-8g, a3-ultragpu-8g)")


def test_unknown_engine():
    assert str(only(with_(AWS, engine="tgi"))) == "k3infra:engine: is not a known value (given: 'tgi'; allowed: vllm, sglang)"


def test_accelerator_of_another_cloud():
    assert str(only(with_(AWS, accelerator="a4x-maxgpu-4g-metal"))) == (
        "k3infra:accelerator: is a gcp machine type, and this stack deploys to aws (given: 'a4x-maxgpu-4g-metal'; "
        "allowed: p6-b300.48xlarge, ml.p6-b300.48xlarge, p5en.48xlarge)")


def test_a_layout_that_does_not_fit_says_how_many_nodes_would():
    assert str(only(with_(GCP, nodes=1))) == (
        "k3infra:nodes: 1 x a4x-maxgpu-4g-metal gives 1,060 GB usable (4 x 279 GB at memory fraction 0.95); Kimi K3 "
        "needs 1,660 GB (1,560 weights + 20 runtime + 80 KV cache): 2 nodes fit (given: 1; allowed: 2 to 18)")


def test_two_nodes_of_96_gb_gpus_do_not_fit():
    p = only(with_(ALI, nodes=2))
    assert p.key == "k3infra:nodes" and p.given == "2" and p.allowed == "3 to 64"
    assert "3 nodes fit" in p.reason


def test_more_nodes_than_one_rack():
    assert str(only(with_(GCP, nodes=19))) == (
        "k3infra:nodes: 19 nodes x 1 replica(s) = 19 nodes, more than one a4x-maxgpu-4g-metal pool holds (one NVL72 "
        "rack, 002 §2.3 and §5.2) (given: 19; allowed: at most 18 nodes in all)")
    p = only(with_(GCP, replicas=10))
    assert (p.key, p.given) == ("k3infra:replicas", "10")


def test_tp_that_does_not_divide_the_gpus():
    assert str(only(with_(GCP, tensorParallel=3))) == (
        "k3infra:tensorParallel: tensorParallel 3 does not divide the 8 GPUs of 2 x a4x-maxgpu-4g-metal (given: 3; "
        "allowed: tensorParallel in 1, 2, 4, 8 with tensorParallel x pipelineParallel = 8)")


def test_capacity_type_the_sku_cannot_use():
    p = only(with_(GCP, capacity={"type": "on-demand"}))
    assert str(p) == ("k3infra:capacity.type: a4x-maxgpu-4g-metal capacity cannot be obtained that way "
                      "(given: 'on-demand'; allowed: reservation)")


def test_a4x_max_reservation_needs_block_and_sub_block():
    found = problems(with_(GCP, capacity={"type": "reservation", "reservation": "r"}))
    assert [str(p) for p in found] == [
        "k3infra:capacity.block: is required: a4x-maxgpu-4g-metal pools pin a reservation block and sub-block "
        "(002 §5.2) (given: nothing; allowed: a string)",
        "k3infra:capacity.subBlock: is required: a4x-maxgpu-4g-metal pools pin a sub-block: multi-node NVLink spans "
        "one sub-block (002 §5.2) (given: nothing; allowed: a string)",
    ]


def test_a4_reservation_needs_no_sub_block_but_a_sub_block_needs_its_block():
    a4 = with_(GCP, accelerator="a4-highgpu-8g", image=None, imagePlatforms=None)
    assert problems(with_(a4, capacity={"type": "reservation", "reservation": "r"})) == []
    p = only(with_(a4, capacity={"type": "reservation", "reservation": "r", "subBlock": "s"}))
    assert (p.key, p.reason) == ("k3infra:capacity.block", "is required: a reservation path names both the block and its sub-block")
    p = only(with_(a4, capacity={"type": "reservation"}))
    assert p.key == "k3infra:capacity.reservation"


def test_capacity_block_needs_a_reservation_id_or_a_purchase_window():
    p = only(with_(AWS, capacity={"type": "capacity-block"}))
    assert str(p) == ("k3infra:capacity.reservationId: is required: a Capacity Block is consumed by id (cr-...); set "
                      "purchase: true to buy one (given: nothing; allowed: a string)")
    found = problems(with_(AWS, capacity={"type": "capacity-block", "purchase": True}))
    assert [p.key for p in found] == ["k3infra:capacity.durationHours", "k3infra:capacity.endBefore",
                                      "k3infra:capacity.startAfter"]
    assert all("offering window" in p.reason for p in found)


def test_capacity_block_purchase_window_must_hold_the_block():
    base = {"type": "capacity-block", "purchase": True, "durationHours": 48}
    p = only(with_(AWS, capacity={**base, "startAfter": "2026-12-10", "endBefore": "2026-12-01"}))
    assert (p.key, p.reason) == ("k3infra:capacity.endBefore", "ends before the window starts (2026-12-10)")
    p = only(with_(AWS, capacity={**base, "startAfter": "2026-12-01", "endBefore": "2026-12-02"}))
    assert p.key == "k3infra:capacity.durationHours"
    cfg = parse_config(with_(AWS, capacity={**base, "startAfter": "2026-12-01", "endBefore": "2026-12-15"}), stack="t")
    assert cfg.capacity.purchases
    assert any("non-refundable" in w for w in cfg.warnings)


def test_capacity_block_id_shape():
    p = only(with_(AWS, capacity={"type": "capacity-block", "reservationId": "cr-123"}))
    assert str(p) == ("k3infra:capacity.reservationId: is not well formed (given: 'cr-123'; "
                      "allowed: cr- followed by 17 hexadecimal digits)")


def test_fields_of_another_capacity_type_are_errors():
    p = only(with_(AWS, capacity={"type": "capacity-block", "reservationId": "cr-0123456789abcdef0", "subBlock": "x"}))
    assert str(p) == ("k3infra:capacity.subBlock: applies to capacity type reservation, not capacity-block "
                      "(given: 'x'; allowed: fields durationHours, endBefore, endMarginHours, purchase, reservationId, startAfter "
                      "with type capacity-block)")


def test_training_plan_arn_shape_and_region():
    p = only(with_(HYPERPOD, capacity={"type": "training-plan", "trainingPlanArn": "arn:aws:sagemaker:us-west-2:1:tp/x"}))
    assert (p.key, p.reason) == ("k3infra:capacity.trainingPlanArn", "is not well formed")
    assert p.allowed == "arn:aws:sagemaker:REGION:ACCOUNT(12 digits):training-plan/NAME"
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/k3"
    p = only(with_(HYPERPOD, capacity={"type": "training-plan", "trainingPlanArn": arn}))
    assert p.reason == "the training plan is in us-east-1, the cluster in us-west-2"


def test_hyperpod_serves_one_instance_per_replica():
    p = only(with_(HYPERPOD, nodes=2))
    assert str(p) == ("k3infra:nodes: the HyperPod Inference Operator runs one replica on one instance (no "
                      "leader/worker field in InferenceEndpointConfig) (given: 2; allowed: 1)")


def test_platform_and_accelerator_must_agree():
    p = only(with_(AWS, platform="hyperpod"))
    assert p.reason == "HyperPod instance groups take SageMaker instance types (ml.*)"
    p = only(with_(HYPERPOD, platform="eks"))
    assert p.reason == "is a SageMaker instance type; platform eks takes EC2 instance types"
    p = only(with_(GCP, platform="aks"))
    assert str(p) == "k3infra:platform: is not a platform of gcp (given: 'aks'; allowed: gke)"


def test_engine_image_without_a_build_for_the_nodes():
    p = only(with_(GCP, image=None, imagePlatforms=None))
    assert str(p) == (
        "k3infra:image: has no known arm64 build (known: amd64), and a4x-maxgpu-4g-metal nodes are arm64 (Grace); "
        "build the engine for arm64 (002 appendix item 1) (given: 'vllm/vllm-openai:kimi-k3'; allowed: an image with "
        "a linux/arm64 build, declared in k3infra:imagePlatforms)")
    p = only(with_(AWS, image="registry.example.com/vllm:arm", imagePlatforms=["arm64"]))
    assert p.reason.startswith("has no known amd64 build (known: arm64), and p6-b300.48xlarge nodes are amd64")


def test_an_unknown_image_must_declare_its_platforms():
    p = only(with_(AWS, image="registry.example.com/vllm:k3"))
    assert str(p) == ("k3infra:imagePlatforms: is required for registry.example.com/vllm:k3, which the catalog does not "
                      "know (given: nothing; allowed: a list of amd64, arm64 (as docker manifest inspect shows them))")


def test_declaring_arm64_for_a_catalog_image_is_a_warning():
    cfg = parse_config(with_(GCP, image="vllm/vllm-openai:kimi-k3", imagePlatforms=["amd64", "arm64"]), stack="t")
    assert any("no source in the catalog confirms" in w for w in cfg.warnings)


def test_an_image_of_the_other_engine():
    p = only(with_(AWS, image="docker.io/lmsysorg/sglang:kimi-k3"))
    assert p.reason == "is a sglang image, and the engine is vllm"


def test_engine_version_of_images():
    """A catalog image's release is known; a user image names its own (engineVersion), at least the first
    release that serves Kimi K3, and another release than the validated one is warned about."""
    assert parse_config(with_(AWS), stack="t").engine_version == "0.33.0"
    p = only(with_(AWS, engineVersion="0.32.0"))
    assert str(p) == ("k3infra:engineVersion: vllm/vllm-openai:kimi-k3 is a catalog image with vllm 0.33.0 "
                      "(given: '0.32.0'; allowed: 0.33.0)")
    user = {"image": "registry.example.com/vllm:k3", "imagePlatforms": ["amd64"]}
    cfg = parse_config(with_(AWS, **user), stack="t")
    assert cfg.engine_version == "0.33.0"
    assert any("states no engineVersion: k3infra assumes vllm 0.33.0" in w for w in cfg.warnings)
    cfg = parse_config(with_(AWS, engineVersion="0.30.0", **user), stack="t")
    assert cfg.engine_version == "0.30.0"
    assert any("engineVersion 0.30.0: k3infra validates its vllm command lines against 0.33.0" in w
               for w in cfg.warnings)
    p = only(with_(AWS, engineVersion="0.26.0", **user))
    assert p.key == "k3infra:engineVersion" and p.reason.startswith("is older than the first vllm release")
    assert only(with_(AWS, engineVersion="latest", **user)).key == "k3infra:engineVersion"


def test_mxfp4_is_not_a_load_format():
    assert str(only(with_(AWS, loadFormat="MXFP4"))) == (
        "k3infra:loadFormat: MXFP4 is how the weights are stored, not how they are loaded (002 caveat 1: the seed's "
        "prose says MXFP4, its YAML says fastsafetensors) (given: 'MXFP4'; allowed: fastsafetensors, safetensors, "
        "runai_streamer, auto)")
    assert only(with_(AWS, loadFormat="mxfp4")).key == "k3infra:loadFormat"


def test_streamer_loader_needs_the_streamer_load_format():
    cfg = parse_config(with_(AWS, weights={"bucket": "b-weights", "sync": False, "loader": "streamer"}), stack="t")
    assert cfg.load_format == "runai_streamer"
    p = only(with_(AWS, loadFormat="fastsafetensors", weights={"bucket": "b-weights", "sync": False, "loader": "streamer"}))
    assert p.reason.endswith("(002 appendix item 4)")
    p = only(with_(ALI, weights={"bucket": "b-weights", "sync": False, "loader": "streamer"}))
    assert p.key == "k3infra:weights.loader" and "not alicloud buckets" in p.reason


def test_managed_platforms_restrict_the_loader():
    p = only(with_(HYPERPOD, weights={"bucket": "b-weights", "sync": False, "loader": "fuse"}))
    assert str(p) == "k3infra:weights.loader: platform hyperpod cannot load that way (given: 'fuse'; allowed: bucket-copy)"


def test_dspark_runs_on_either_engine_with_its_own_draft_model():
    """vLLM 0.33.0 accepts --speculative-config method dspark with the recipe's draft; not with pipeline
    parallelism (vllm-project/vllm#50098), and only where the draft is synced and mounted (Kubernetes)."""
    cfg = parse_config(with_(AWS, speculativeDecoding="dspark",
                             weights={"bucket": "my-org-kimi-k3-weights", "revision": "main", "draftRevision": "main"}),
                       stack="t")
    assert cfg.speculative_decoding and cfg.model.draft_model_for(cfg.engine.name).hf_id == (
        "RedHatAI/Kimi-K3-speculator.dspark")
    p = only(with_(ALI, speculativeDecoding="dspark"))
    assert p.key == "k3infra:speculativeDecoding" and p.reason.startswith("DSpark does not compose with pipeline")
    assert any(x.key == "k3infra:speculativeDecoding" and "mounts the model alone" in x.reason
               for x in problems(with_(HYPERPOD, speculativeDecoding="dspark")))


@pytest.mark.parametrize(
    "base, bucket, reason",
    [
        (GCP, "Kimi_K3", "Cloud Storage bucket names use lowercase letters, digits, -, _ and ., starting and ending with a letter or digit"),
        (GCP, "google-weights", "Cloud Storage bucket names cannot start with goog or contain google"),
        (AWS, "kimi_k3", "S3 bucket names use lowercase letters, digits, - and ., starting and ending with a letter or digit"),
        (AWS, "k3..weights", "S3 bucket names cannot contain .. or be an IP address"),
        (AWS, "kimi-k3-s3alias", "S3 reserves the prefixes xn--, sthree-, amzn-s3-demo- and the suffixes -s3alias, --ol-s3, .mrap, --x-s3"),
        (AZURE, "kimi--k3", "blob container names use lowercase letters, digits and single hyphens, starting and ending with a letter or digit"),
        (ALI, "kimi.k3", "OSS bucket names use lowercase letters, digits and -, starting and ending with a letter or digit"),
        (ALI, "k3", "OSS bucket names are 3-63 characters"),
    ],
)
def test_bucket_names_the_cloud_would_reject(base, bucket, reason):
    weights = {**base["k3infra:weights"], "bucket": bucket}
    p = only(with_(base, weights=weights))
    assert (p.key, p.allowed) == ("k3infra:weights.bucket", reason)
    assert p.reason.endswith("would reject this bucket name")


def test_azure_storage_account():
    p = only(with_(AZURE, weights={"bucket": "kimi-k3-weights", "sync": False}))
    assert p.key == "k3infra:weights.account" and p.reason.startswith("is required on Azure")
    p = only(with_(AZURE, weights={"bucket": "kimi-k3-weights", "account": "K3-Weights", "sync": False}))
    assert p.allowed == "storage account names are 3-24 lowercase letters and digits"
    p = only(with_(AWS, weights={"bucket": "kimi-k3-weights", "account": "x", "sync": False}))
    assert p.reason == "applies to Azure storage accounts; aws buckets have none"


def test_sync_workers_default_to_the_cpu_nodes_and_need_a_node_with_stated_bandwidth():
    synced = {"bucket": "kimi-k3-weights", "revision": "a" * 40}
    # ACK's sync runs on the system nodes (no pool of its own: OSS's account ingress binds first)
    ali = {**synced, "bucket": "kimi-k3-weights"}
    cfg = parse_config(with_(ALI, weights=ali, cluster={"systemNodes": 3}), stack="t")
    assert cfg.sizing.sync is not None and (cfg.sizing.sync.workers, cfg.sizing.sync.nodes) == (3, 3)
    cfg = parse_config(with_(ALI, weights={**ali, "syncWorkers": 6}), stack="t")
    assert cfg.sizing.sync is not None and (cfg.sizing.sync.workers, cfg.sizing.sync.nodes) == (6, 2)
    p = only(with_(ALI, weights=ali, cluster={"systemNodeType": "ecs.g6.large"}))
    assert str(p) == ("k3infra:cluster.systemNodeType: runs the weight sync, whose time and timeout come from the "
                      "node's network bandwidth, and the catalog states none for it (k3infra/catalog/transfer.py) "
                      "(given: 'ecs.g6.large'; allowed: ecs.g7.2xlarge)")
    assert parse_config(with_(ALI, weights={**ali, "sync": False}, cluster={"systemNodeType": "ecs.g6.large"}),
                        stack="t").sizing.sync is None
    assert str(only(with_(ALI, weights={**ali, "syncWorkers": 0}))).startswith("k3infra:weights.syncWorkers:")
    # EKS and HyperPod sync on their own pool, whatever the system nodes: one node per worker
    for base in (AWS, HYPERPOD):
        cfg = parse_config(with_(base, weights=synced, cluster={"systemNodes": 3, "systemNodeType": "m5.large"}),
                           stack="t")
        assert cfg.sizing.sync is not None and (
            cfg.sizing.sync.workers, cfg.sizing.sync.nodes, cfg.sizing.sync.pool) == (2, 2, True)
        cfg = parse_config(with_(base, weights={**synced, "syncWorkers": 6}), stack="t")
        assert cfg.sizing.sync is not None and (cfg.sizing.sync.workers, cfg.sizing.sync.nodes) == (6, 6)


def test_sync_needs_a_pinned_revision():
    p = only(with_(AWS, weights={"bucket": "kimi-k3-weights"}))
    assert str(p) == ("k3infra:weights.revision: is required when sync is true: the Job copies one pinned revision "
                      "(given: nothing; allowed: a 40-character commit SHA (or a tag))")
    cfg = parse_config(with_(AWS, weights={"bucket": "kimi-k3-weights", "revision": "main"}), stack="t")
    assert any("'main' is not a commit SHA" in w for w in cfg.warnings)
    assert any("hfToken is not set" in w for w in cfg.warnings)


def test_unknown_keys_have_did_you_mean():
    p = only(with_(AWS, accelerater="p6-b300.48xlarge"))
    assert p.key == "k3infra:accelerater" and p.reason == "is not a known key (did you mean 'accelerator'?)"
    p = only(with_(AWS, weights={"bucket": "kimi-k3-weights", "sync": False, "retainOnDestory": True}))
    assert p.key == "k3infra:weights.retainOnDestory"
    assert p.reason == "is not a known key (did you mean 'retainOnDestroy'?)"


def test_wrong_types_name_the_type():
    assert str(only(with_(AWS, nodes="two"))) == "k3infra:nodes: must be an integer (given: 'two'; allowed: an integer)"
    assert str(only(with_(AWS, nodes=0))) == "k3infra:nodes: is out of range (given: 0; allowed: at least 1)"
    p = only(with_(AWS, expertParallel="yes"))
    assert (p.reason, p.allowed) == ("must be true or false", "true or false")
    p = only(with_(AWS, capacity="cb"))
    assert p.key == "k3infra:capacity" and p.reason == "must be a mapping of keys"


def test_required_keys_and_provider_keys():
    found = problems({"k3infra:cloud": "gcp"})
    assert [p.key for p in found] == ["gcp:project", "gcp:region", "k3infra:accelerator", "k3infra:capacity",
                                      "k3infra:gcp.authorizedNetworks", "k3infra:weights", "k3infra:zone"]


def test_zone_outside_the_region():
    assert str(only(with_(GCP, zone="europe-west4-a"))) == (
        "k3infra:zone: is not a zone of us-central1: Google Cloud zones of us-central1 are us-central1-a, "
        "us-central1-b, ... (given: 'europe-west4-a'; allowed: a zone of us-central1)")
    assert only(with_(AWS, zone="us-east-1a")).key == "k3infra:zone"
    assert only(with_(AZURE, zone="4")).reason == "is not a zone of eastus2: Azure availability zones are 1, 2 or 3"
    assert problems(with_(ALI, **{"alicloud:region": "ap-southeast-1", "zone": "ap-southeast-1c"})) == []


def test_settings_of_another_cloud():
    p = only(with_(GCP, azure={"quotaVcpus": 10}))
    assert p.reason == "holds azure settings, but this stack deploys to gcp"


def test_public_exposure_needs_cidrs_and_an_api_key():
    found = problems(with_(AWS, endpoint={"exposure": "public"}))
    assert [str(p) for p in found] == [
        "k3infra:apiKey: is required when exposure is public: the endpoint checks an API key (given: nothing; "
        "allowed: a secret set with `pulumi config set --secret apiKey`)",
        "k3infra:endpoint.allowedCidrs: is required when exposure is public: name who may reach the endpoint "
        "(given: nothing; allowed: a non-empty list of IPv4 CIDRs)",
    ]
    p = only(with_(AWS, apiKey="k", endpoint={"exposure": "public", "allowedCidrs": ["10.0.0.1/8"]}))
    assert p.key == "k3infra:endpoint.allowedCidrs[0]" and "has host bits set" in p.reason
    cfg = parse_config(with_(AWS, apiKey="k", endpoint={"exposure": "public", "allowedCidrs": ["0.0.0.0/0"]}), stack="t")
    assert any("open to the internet" in w for w in cfg.warnings)


def test_a_deployment_cannot_span_nodes():
    p = only(with_(GCP, workload="deployment"))
    assert p.reason == "a Deployment runs one pod per replica, and a replica spans 2 nodes"
    p = only(with_(HYPERPOD, workload="deployment"))
    assert p.reason == "applies to Kubernetes platforms; hyperpod runs the server itself"


def test_azure_reservation_group_either_referenced_or_created():
    p = only(with_(AZURE, capacity={"type": "capacity-reservation-group"}))
    assert p.key == "k3infra:capacity.groupId"
    gid = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/crg"
    p = only(with_(AZURE, capacity={"type": "capacity-reservation-group", "create": True, "groupId": gid}))
    assert p.reason == "a stack either references a group or creates one"
    cfg = parse_config(AZURE, stack="t")
    assert any("bill from creation" in w for w in cfg.warnings)


def test_every_problem_is_reported_at_once():
    bad = with_(GCP, nodes=1, accelerater="x", loadFormat="MXFP4", zone="europe-west4-a", image=None,
                imagePlatforms=None, weights={"bucket": "Bad_Bucket"},
                capacity={"type": "reservation", "reservation": "r"})
    keys = [p.key for p in problems(bad)]
    assert keys == ["k3infra:accelerater", "k3infra:capacity.block", "k3infra:capacity.subBlock", "k3infra:image",
                    "k3infra:loadFormat", "k3infra:nodes", "k3infra:weights.bucket", "k3infra:weights.revision",
                    "k3infra:zone"]
    with pytest.raises(ConfigError) as e:
        parse_config(bad, stack="gcp-a4xmax")
    assert str(e.value).startswith("Stack gcp-a4xmax has 9 configuration problems:\n  - k3infra:accelerater:")


def test_runtime_strings_read_the_same_as_typed_yaml():
    # The Pulumi engine hands the program strings (objects as JSON); the result must be the same StackConfig.
    for raw in (GCP, AWS, HYPERPOD, AZURE, ALI):
        typed = parse_config(raw, stack="t")
        strings = parse_config(offline.config_strings(raw), stack="t", from_strings=True)
        assert strings == typed


def test_runtime_strings_report_type_errors():
    raw = {**offline.config_strings(AWS), "k3infra:nodes": "1.5", "k3infra:expertParallel": "maybe"}
    try:
        parse_config(raw, stack="t", from_strings=True)
    except ConfigError as e:
        assert [str(p) for p in e.problems] == [
            "k3infra:expertParallel: is not true or false (given: 'maybe'; allowed: true or false)",
            "k3infra:nodes: is not an integer (given: '1.5'; allowed: an integer)",
        ]
    else:
        pytest.fail("no ConfigError")


def test_a_bad_configuration_registers_no_resource():
    bad = with_(GCP, nodes=1)
    with pytest.raises(ConfigError):
        offline.run(program.main, project="k3infra", stack="bad", config=bad)
    # The engine records what was registered before the error: nothing.
    monitor_records = []

    class Spy(offline.RecordingMonitor):
        def RegisterResource(self, request):  # noqa: N802
            monitor_records.append(request.type)
            return super().RegisterResource(request)

    original = offline.RecordingMonitor
    offline.RecordingMonitor = Spy  # type: ignore[misc]
    try:
        with pytest.raises(ConfigError):
            offline.run(program.main, project="k3infra", stack="bad", config=bad)
    finally:
        offline.RecordingMonitor = original  # type: ignore[misc]
    assert monitor_records == ["pulumi:pulumi:Stack"]  # the root stack the mocks create, nothing of ours


def test_config_error_is_a_pulumi_run_error_so_pulumi_prints_no_traceback():
    import pulumi

    with pytest.raises(pulumi.RunError):
        parse_config(with_(GCP, nodes=1), stack="t")


def test_capacity_config_is_typed():
    cfg = parse_config(GCP, stack="t")
    assert cfg.capacity.type == CapacityType.RESERVATION
    assert (cfg.capacity.reservation, cfg.capacity.block, cfg.capacity.sub_block) == ("r", "b", "s")
    assert json.dumps(cfg.sizing.as_dict(), sort_keys=True)


def test_dspark_sync_pins_the_draft_model_too():
    a4 = with_(GCP, accelerator="a4-highgpu-8g", image=None, imagePlatforms=None, engine="sglang",
               speculativeDecoding="dspark", capacity={"type": "reservation", "reservation": "r"})
    p = only(a4)
    assert str(p) == ("k3infra:weights.draftRevision: is required when sync is true and speculativeDecoding is dspark: "
                      "the Job copies one pinned revision of the draft model too (given: nothing; allowed: a "
                      "40-character commit SHA (or a tag))")
    pinned = {**a4["k3infra:weights"], "draftRevision": "fedcba9876543210fedcba9876543210fedcba98"}
    assert parse_config(with_(a4, weights=pinned), stack="t").weights.draft_revision == pinned["draftRevision"]
    p = only(with_(GCP, weights={**GCP["k3infra:weights"], "draftRevision": "main"}))
    assert p.reason == "applies with speculativeDecoding dspark, which this stack does not use"

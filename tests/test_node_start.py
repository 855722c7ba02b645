"""Issue 40: every stack's restart beside its physical floor and its scale-out beside the 5-minute goal, with the
term that holds each above, and the weights kept on the node where the platform keeps them (sizing.restart)."""

import math

import pytest

from k3infra.catalog.node_local import GRAPH_CAPTURE_SECONDS, LOCAL_READ, NODE_DIRECTORIES
from k3infra.catalog import Platform
from k3infra.sizing import RESTART_FLOOR_FACTOR, SCALE_OUT_TARGET_SECONDS, SCHEDULING_SECONDS
from tests.support import plan

# stack: (restart, floor, scale-out, weights on the node)
NODE_FIGURES = {
    "alicloud-ack": (3216, 115, 3216, False),
    "alicloud-pai": (3216, 115, 3516, False),
    "aws-eks": (864, 132, 864, False),
    "aws-hyperpod": (850, 132, 2410, True),
    "azure-gb300": (464, 129, 464, False),
    "gcp-a4-sglang": (554, 152, 554, True),
    "gcp-a4x-sglang": (620, 152, 620, True),
    "gcp-a4xmax": (458, 106, 458, True),
    "kubernetes-b300": (1968, 215, 1968, False),
    "kubernetes-gb300-nvl72": (1968, 153, 1968, False),
}


@pytest.mark.parametrize("stack", sorted(NODE_FIGURES))
def test_each_stack_states_its_restart_floor_and_scale_out_or_what_holds_them(stack: str) -> None:
    cfg = plan(stack).config
    ns = cfg.sizing.node_start
    assert ns is not None
    assert (ns.restart_seconds, ns.floor_seconds, ns.scale_out_seconds, ns.local) == NODE_FIGURES[stack]
    assert ns.floor[-1].seconds == GRAPH_CAPTURE_SECONDS[cfg.engine.name][0]
    # every stack is above one goal today: the plan names the term that holds it, with its source
    assert ns.restart_holds is not None and ns.scale_out_holds is not None
    assert (ns.restart_seconds > RESTART_FLOOR_FACTOR * ns.floor_seconds
            and ns.scale_out_seconds > SCALE_OUT_TARGET_SECONDS)
    assert ("(ESTIMATE" in ns.restart_holds or "(ASSUMPTION" in ns.restart_holds
            or "limited by" in ns.restart_holds)
    if not ns.local:
        assert ns.why_not_local and ns.why_not_local in ns.restart_holds
    summary = cfg.sizing.as_dict()["nodeStart"]
    assert isinstance(summary, dict) and summary["ratioToFloor"] == ns.ratio
    assert summary["restartSeconds"] == cfg.sizing.cold_start.restart_seconds == ns.restart_seconds


def test_gke_reads_the_weights_back_from_the_local_ssd_at_its_rate() -> None:
    ns = plan("gcp-a4xmax").config.sizing.node_start
    assert ns is not None and ns.node_dir == NODE_DIRECTORIES[Platform.GKE].path
    scheduling, load, warm = ns.restart
    assert scheduling.seconds == SCHEDULING_SECONDS
    assert LOCAL_READ["a4x-maxgpu-4g-metal"].gbps == 64 and load.seconds == 98 == math.ceil(780e9 * 8 / 64e9)
    assert load.name.endswith("from its local NVMe at 64 Gbps")
    assert warm.name == "the warm-up from the engine's caches"
    # the image is on every node of the pool already, and the node agent restored every rank's caches ahead of the
    # scale-out (one stream, before its copy of the weights), so a new two-node group warms from them
    assert [t.name for t in ns.scale_out][1:2] == ["image pull"] and ns.scale_out[1].seconds == 0
    restore, new_warm = ns.scale_out[3:]
    assert restore.name == "every rank's caches, 2 x 20 GB, from the bucket" and restore.seconds == 0
    assert "one stream at 0.1 Gbps" in restore.source and "53 min 20 s after the node joins" in restore.source
    assert (new_warm.name, new_warm.seconds) == ("the warm-up from the engine's caches", 240)


def test_nodeweights_off_reads_the_bucket_again_and_says_so() -> None:
    ns = plan("gcp-a4xmax", "nodeWeights=false").config.sizing.node_start
    assert ns is not None and not ns.local and ns.why_not_local == "k3infra:nodeWeights is false"
    assert ns.restart[1].seconds == plan("gcp-a4xmax").config.sizing.load.seconds == 156


def test_eks_keeps_them_when_asked_and_an_existing_cluster_with_a_stated_path() -> None:
    eks = plan("aws-eks", "nodeWeights=true").config.sizing.node_start
    assert eks is not None and eks.local and eks.node_dir == "/mnt/k8s-disks/0/k3infra"
    own = plan("kubernetes-b300", "kubernetes.nodeLocalPath=/raid/k3infra").config.sizing.node_start
    assert own is not None and own.local and own.node_dir == "/raid/k3infra"
    assert own.restart_seconds < 1968


def test_the_start_up_budget_still_covers_the_first_load_from_the_bucket() -> None:
    """A node copy shortens restarts only: the probe budget stays 1.5 x (the bucket load + the full warm-up)."""
    s = plan("gcp-a4xmax").config.sizing
    assert s.probe_budget_seconds == 1140 and s.probe_budget_seconds >= 1.5 * (s.load.seconds + s.engine.warmup_seconds)


def test_the_node_fill_is_stated_with_the_agent_s_files_in_flight() -> None:
    from k3infra.sizing.restart import NODE_FILL_FILES
    from k3infra.weightcopy.copier.node import FILES_IN_FLIGHT

    assert NODE_FILL_FILES == FILES_IN_FLIGHT == 64
    gke = plan("gcp-a4xmax").config.sizing.as_dict()["nodeStart"]
    assert isinstance(gke, dict) and gke["nodeFill"]["seconds"] == math.ceil(1.56e12 * 8 / (64 * 0.1e9))
    assert plan("aws-eks").config.sizing.as_dict()["nodeStart"]["nodeFill"] is None  # pyright: ignore[reportIndexIssue]


@pytest.mark.parametrize("stack, allowed", [
    ("azure-gb300", "unset or false, or a platform with one (gke, eks, hyperpod)"),
    ("kubernetes-b300", "unset or false, or kubernetes.nodeLocalPath"),
])
def test_nodeweights_where_the_nodes_keep_nothing_is_refused_saying_why(stack: str, allowed: str) -> None:
    from k3infra import planning
    from k3infra.config import ConfigError
    from tests.support import ROOT

    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load(stack, ("nodeWeights=true",), root=ROOT))
    [problem] = e.value.problems
    assert (problem.key, problem.given, problem.allowed) == ("k3infra:nodeWeights", "true", allowed)
    platform = plan(stack).config.platform
    assert NODE_DIRECTORIES[platform].why_none in problem.reason


def test_a_node_local_path_must_be_absolute() -> None:
    from k3infra import planning
    from k3infra.config import ConfigError
    from tests.support import ROOT

    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load("kubernetes-b300", ("kubernetes.nodeLocalPath=raid",), root=ROOT))
    assert [(p.key, p.given) for p in e.value.problems] == [("k3infra:kubernetes.nodeLocalPath", "'raid'")]


def test_the_hyperpod_nvme_sources_the_catalog_names_are_what_the_vendored_crd_accepts() -> None:
    """catalog.node_local's HyperPod note: AWS's three local-NVMe sources (sagemaker-hyperpod-model-deployment-deploy-
    nvme) fit the vendored InferenceEndpointConfig CRD, the operator-managed ``modelCacheConfig`` does not (yet)."""
    from k3infra.aws.hyperpod_endpoint_config import inference_endpoint_config
    from tests.validation import crd_errors

    iec = inference_endpoint_config(
        name="k3", namespace="k3", model_name="kimi-k3", instance_type="ml.p6-b300.48xlarge", replicas=1,
        image="vllm/vllm-openai:v0.33.0", args=["--port", "8000"], env={}, port=8000, health_path="/health", gpus=8,
        cpu="100", memory="1000Gi", bucket_name="b", region="us-east-1", model_location="models/k3", prefetch=True,
        max_deploy_seconds=3600, startup_budget_seconds=1800)
    assert crd_errors(iec) == []
    nvme = {"name": "nvme-cache", "hostPath": {"path": "/opt/dlami/nvme/k3", "type": "DirectoryOrCreate"}}
    loader = {"name": "smart-loader", "image": "public.ecr.aws/aws-cli/aws-cli:latest",
              "volumeMounts": [{"name": "nvme-cache", "mountPath": "/nvme"},
                               {"name": "model-weights-copy", "mountPath": "/model"}]}
    # approach 3: s3 with prefetch, an nvme-cache hostPath and an initContainer filling model-weights-copy
    assert crd_errors({**iec, "spec": {**iec["spec"], "kubernetes": {"volumes": [nvme], "initContainers": [loader]}}}) \
        == []
    # approaches 1 and 2: kubernetesVolume, the hostPath named as the worker's modelVolumeMount, no modelLocation
    volume_source = {"modelSourceType": "kubernetesVolume"}
    k8s_volume = {**iec["spec"], "modelSourceConfig": volume_source,
                  "kubernetes": {"volumes": [{**nvme, "name": iec["spec"]["worker"]["modelVolumeMount"]["name"]}],
                                 "serviceAccountName": "k3-loader", "initContainers": [loader]}}
    assert crd_errors({**iec, "spec": k8s_volume}) == []
    # the operator-managed weights cache is not in the vendored CRD: re-vendor before k3infra sets it
    cached = {**iec["spec"], "modelCacheConfig": {"weightsCache": {"enabled": True}}}
    assert [e.split(":")[0] for e in crd_errors({**iec, "spec": cached})] == ["spec"]
    hyperpod = NODE_DIRECTORIES[Platform.HYPERPOD]
    assert hyperpod.path == "/opt/dlami/nvme/k3infra" and not hyperpod.why_none
    for fact in ("sagemaker-hyperpod-model-deployment-deploy-nvme", "kubernetesVolume", "/opt/dlami/nvme", "IRSA"):
        assert fact in hyperpod.source, fact


# stack: (restart today, restart were the weights read back from the node's local NVMe); None where the node keeps a
# copy already (GKE, HyperPod) or the machine has no local NVMe (ecs.ebmgn8v)
WITH_NODE_COPY = {
    "azure-gb300": (464, 458),
    "azure-gb300-pd": (672, 458),
    "aws-eks": (864, 850),
    "kubernetes-b300": (1968, 915),
    "gcp-a4xmax": (458, None),
    "alicloud-ack": (3216, None),
    "aws-hyperpod": (850, None),
}


@pytest.mark.parametrize("stack", sorted(WITH_NODE_COPY))
def test_the_plan_states_the_most_a_node_copy_would_gain_where_the_node_keeps_none(stack: str) -> None:
    s = plan(stack).config.sizing
    ns = s.node_start
    assert ns is not None and (ns.restart_seconds, ns.with_node_copy) == WITH_NODE_COPY[stack]
    summary = s.as_dict()["nodeStart"]
    assert isinstance(summary, dict) and summary["restartWithNodeCopySeconds"] == ns.with_node_copy
    if ns.with_node_copy is not None:
        assert ns.restart_holds is not None and ns.restart_holds.endswith(
            f"a node copy on the local NVMe would make the restart {_duration(ns.with_node_copy)} "
            f"({ns.with_node_copy} s, from {ns.restart_seconds} s)")


def test_on_aks_a_node_copy_would_replace_only_the_bucket_load() -> None:
    """ND GB300 v6: the node's 780 GB at the ESTIMATE 64 Gbps of its striped NVMe instead of its share of the bucket
    (60 Gbps on azure-gb300, 20 on -pd's six prefill nodes); scheduling and the warm-up from the caches stay."""
    for stack, bucket_seconds in (("azure-gb300", 104), ("azure-gb300-pd", 312)):
        ns = plan(stack).config.sizing.node_start
        assert ns is not None
        scheduling, load, warm = ns.restart
        assert load.seconds == bucket_seconds and LOCAL_READ["Standard_ND128isr_GB300_v6"].gbps == 64
        assert ns.with_node_copy == scheduling.seconds + math.ceil(780e9 * 8 / 64e9) + warm.seconds == 120 + 98 + 240


def test_the_aks_note_names_why_azure_container_storage_is_not_installed_and_what_lws_would_carry() -> None:
    """catalog.node_local's AKS note, and the LWS side of a future build: the vendored LWS v0.10.0 CRD takes
    volumeClaimTemplates with the local NVMe annotation and a retention policy (api/leaderworkerset/v1 @2161f38)."""
    from tests.validation import crd_errors

    why = NODE_DIRECTORIES[Platform.AKS].why_none
    for fact in ("doesn't support ARM node pools", "Grace arm64", "microsoft.azurecontainerstoragev2",
                 "enable-azure-container-storage", "localdisk.csi.acstor.io/accept-ephemeral-storage",
                 "no node affinity", "failurePolicy Ignore", "recreates the volume empty", "UNCONFIRMED"):
        assert fact in why, fact
    (lws,) = [r for r in plan("azure-gb300").to_json()["resources"]
              if r["type"].endswith("leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")]
    doc = lws["inputs"]
    claim = {"metadata": {"name": "node-weights",
                          "annotations": {"localdisk.csi.acstor.io/accept-ephemeral-storage": "true"}},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                      "resources": {"requests": {"storage": "1700G"}}}}
    template = {**doc["spec"]["leaderWorkerTemplate"], "volumeClaimTemplates": [claim],
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}}
    assert crd_errors({**doc, "spec": {**doc["spec"], "leaderWorkerTemplate": template}}) == []
    # a claim template is a PersistentVolumeClaim, not a volume: the CRD refuses a misplaced field in it
    wrong = {**template, "volumeClaimTemplates": [{**claim, "storageClassName": "local"}]}
    assert [e.split(":")[0] for e in crd_errors({**doc, "spec": {**doc["spec"], "leaderWorkerTemplate": wrong}})] \
        == ["spec/leaderWorkerTemplate/volumeClaimTemplates/0"]


def _duration(seconds: int) -> str:
    from k3infra.formatting import duration
    return duration(seconds)


@pytest.mark.parametrize("stack, sets, keys", [
    ("aws-eks", ("nodeWeights=true",), "k3infra:nodeWeights keeps"),
    ("aws-eks", ("nodeWeights=true", "engineCache=true"), "k3infra:nodeWeights and k3infra:engineCache keep"),
    ("kubernetes-b300", ("kubernetes.nodeLocalPath=/raid/k3infra",), "k3infra:nodeWeights keeps"),
    ("aws-hyperpod", (), "k3infra:nodeWeights keeps"),
    ("aws-eks", (), None),
    ("gcp-a4xmax", (), None),  # GKE's pool runs the server privileged anyway (catalog ENGINE_CACHE_BY_DEFAULT)
])
def test_a_host_directory_that_makes_the_namespace_privileged_is_warned_of(stack: str, sets: tuple[str, ...],
                                                                           keys: str | None) -> None:
    """Review of issue 40, MINOR 3: the switch from baseline to privileged was in the docs, not in the plan."""
    warned = [w for w in plan(stack, *sets).config.warnings if "Pod Security" in w and "host directory" in w]
    who = ("the server pod's init container fills them with a role that reads the weights' prefix only"
           if stack == "aws-hyperpod" else
           "the node agent that fills them runs as root on every GPU node with the bucket's writer identity")
    assert warned == ([] if keys is None else [
        f"{keys} files in a host directory of the GPU nodes (a hostPath, which Pod Security's baseline forbids): the "
        f"serving namespace enforces the privileged level instead of baseline, and {who}"])


def test_warm_caches_keyed_by_a_tag_are_warned_of_and_a_digest_is_not() -> None:
    """Issue 40 keys the caches by the image digest: a tag is the key only as long as it names one build."""
    digest = "us-central1-docker.pkg.dev/p/k3/vllm@sha256:" + "a" * 64
    tagged = [w for w in plan("gcp-a4xmax").config.warnings if "not pinned by digest" in w]
    assert len(tagged) == 1 and tagged[0].startswith(
        "k3infra:image 'us-central1-docker.pkg.dev/my-project/k3/vllm-openai:kimi-k3-arm64' is not pinned by digest")
    assert not [w for w in plan("gcp-a4xmax", f"image={digest}").config.warnings if "not pinned by digest" in w]
    assert not [w for w in plan("aws-eks").config.warnings if "not pinned by digest" in w]  # no caches carried

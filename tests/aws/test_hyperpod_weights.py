"""Issue 40 on HyperPod: the weights on the instances' local NVMe, AWS's "Kubernetes volume with fallback"
(sagemaker-hyperpod-model-deployment-deploy-nvme, approach 2) with k3infra's node copier in the init container.

The IEC is validated against the vendored CRD (tests.validation.crd_errors) and against what the NVMe page says the
operator validates at deployment (``operator_problems``: the CRD cannot say it), each seen failing on a planted
mistake."""

import json
import math
from typing import Any

from k3infra import offline
from k3infra.aws import hyperpod_weights as hw
from k3infra.catalog.hyperpod import RESERVED_VOLUMES
from k3infra.catalog.node_local import LOCAL_READ
from k3infra.sizing import IMAGE_PULL_SECONDS, SCHEDULING_SECONDS
from k3infra.weightcopy import delivery
from tests.aws.test_deployment import iec_object
from tests.support import plan
from tests.validation import crd_errors

REPO = "moonshotai/Kimi-K3@main=s3://my-org-kimi-k3-weights-hyperpod/models/moonshotai/Kimi-K3"
BUCKET_ARN = "arn:aws:s3:::my-org-kimi-k3-weights-hyperpod"


def operator_problems(spec: dict[str, Any], accounts: dict[str, dict[str, Any]], addon: dict[str, Any]) -> list[str]:
    """What the NVMe page says the operator refuses at deployment (``KubernetesVolumeValidationFailed``,
    ``DeploymentFailed``) for a kubernetesVolume source with a custom ServiceAccount."""
    problems = []
    volumes = {v["name"] for v in spec.get("kubernetes", {}).get("volumes", [])}
    if spec["worker"]["modelVolumeMount"]["name"] not in volumes:
        problems.append("no volume named as worker.modelVolumeMount.name")
    if "modelLocation" in spec["modelSourceConfig"]:
        problems.append("modelLocation with kubernetesVolume")
    problems += [f"reserved volume {v}" for v in sorted(volumes & RESERVED_VOLUMES)]
    name = spec.get("kubernetes", {}).get("serviceAccountName")
    if name is not None:
        sa = accounts.get(name)
        if sa is None:
            problems.append(f"serviceAccountName {name!r} not found")
        elif sa["metadata"]["labels"].get("sagemaker.amazonaws.com/user-assignable") != "true":
            problems.append(f"serviceAccountName {name!r} is not labeled as user-assignable")
        if addon.get("enableCustomServiceAccounts") is not True:
            problems.append("kubernetes.serviceAccountName is not enabled")
    for c in spec.get("kubernetes", {}).get("initContainers", []):
        problems += [f"{c['name']} mounts {m['name']}, no volume" for m in c["volumeMounts"] if m["name"] not in volumes]
    return problems


def _stack(*overrides: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any], Any]:
    p = plan("aws-hyperpod", *overrides)
    accounts = {offline.unwrap(r.inputs)["metadata"]["name"]: offline.unwrap(r.inputs)
                for r in p.recording.by_type("kubernetes:core/v1:ServiceAccount")}
    addon = json.loads(offline.unwrap(p.recording.one("aws:eks/addon:Addon", "k3-endpoint-inference-operator").inputs)
                       ["configurationValues"])
    return iec_object(p), accounts, addon, p


def test_the_endpoint_reads_the_node_s_nvme_copy_through_a_kubernetes_volume():
    iec, accounts, addon, _ = _stack()
    spec = iec["spec"]
    assert crd_errors(iec) == [] and operator_problems(spec, accounts, addon) == []
    assert spec["modelSourceConfig"] == {"modelSourceType": "kubernetesVolume"}
    assert spec["worker"]["modelVolumeMount"] == {"name": "model-weights", "mountPath": "/opt/ml/model"}
    k = spec["kubernetes"]
    assert k["serviceAccountName"] == "k3-node-weights"
    assert k["volumes"] == [
        {"name": "copier", "configMap": {"name": "k3-sync-copier"}},
        {"name": "copier-tmp", "emptyDir": {"sizeLimit": "2Gi"}},
        {"name": "node-weights", "hostPath": {"path": "/opt/dlami/nvme/k3infra", "type": "DirectoryOrCreate"}},
        {"name": "model-weights", "hostPath": {"path": "/opt/dlami/nvme/k3infra/weights/models/moonshotai/Kimi-K3",
                                               "type": "DirectoryOrCreate"}},
    ]
    (fill,) = k["initContainers"]
    assert (fill["name"], fill["image"], fill["command"]) == ("node-weights", delivery.IMAGE, list(delivery.COMMAND))
    assert fill["args"] == ["node-fill", "--repo", REPO, "--node-dir", "/var/lib/k3infra-node", "--timeout", "1140",
                            "--auth-window", "300"]
    assert fill["env"] == [{"name": "HOME", "value": "/tmp"}, {"name": "AWS_REGION", "value": "us-west-2"},
                           {"name": "AWS_DEFAULT_REGION", "value": "us-west-2"}]
    assert fill["securityContext"] == {"allowPrivilegeEscalation": False, "privileged": False,
                                       "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    assert addon["enableCustomServiceAccounts"] is True


def test_the_node_copy_the_worker_mounts_is_where_the_copier_writes_it():
    """``model-weights`` is the copier's ``node_root`` of the model under the init container's node directory."""
    from k3infra.weightcopy.copier.node import node_root

    spec = iec_object(plan("aws-hyperpod"))["spec"]["kubernetes"]
    host = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    root = node_root("/var/lib/k3infra-node", REPO.split("=", 1)[1])
    assert str(root).replace("/var/lib/k3infra-node", host["node-weights"]) == host["model-weights"]


def test_the_init_container_runs_the_copier_as_the_eks_node_agent_does():
    """One copier: the image, the command, the ConfigMap's mount and the node mount of aws-eks's node agent."""
    eks = plan("aws-eks", "nodeWeights=true").recording
    agent = offline.unwrap(eks.one("kubernetes:apps/v1:DaemonSet", "k3-node-agent-daemon-set").inputs)
    (container,) = agent["spec"]["template"]["spec"]["containers"]
    (fill,) = iec_object(plan("aws-hyperpod"))["spec"]["kubernetes"]["initContainers"]
    for key in ("image", "command"):
        assert fill[key] == container[key], key
    assert [(m["name"], m["mountPath"]) for m in fill["volumeMounts"]] == [
        (m["name"], m["mountPath"]) for m in container["volumeMounts"]]
    res = container["resources"]
    assert fill["resources"] == {"requests": res["requests"], "limits": res["limits"]}


def test_the_service_account_reads_the_model_prefix_only_through_irsa():
    _, accounts, _, p = _stack()
    rec = p.recording
    sa = accounts["k3-node-weights"]
    assert sa["metadata"]["namespace"] == "kimi-k3" and sa["automountServiceAccountToken"] is False
    assert sa["metadata"]["labels"]["sagemaker.amazonaws.com/user-assignable"] == "true"
    role = offline.unwrap(rec.one("aws:iam/role:Role", "k3-endpoint-node-weights-role").inputs)
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith(
        "arn:aws:iam::123456789012:role/k3-endpoint-node-weights-role")
    (trust,) = json.loads(role["assumeRolePolicy"])["Statement"]
    assert trust["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert [v for k, v in trust["Condition"]["StringEquals"].items() if k.endswith(":sub")] == [
        "system:serviceaccount:kimi-k3:k3-node-weights"]
    policy = json.loads(offline.unwrap(rec.one("aws:iam/rolePolicy:RolePolicy", "k3-endpoint-node-weights-read")
                                       .inputs)["policy"])
    assert policy["Statement"] == [
        {"Sid": "ListWeights", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": BUCKET_ARN},
        {"Sid": "ReadWeights", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": f"{BUCKET_ARN}/models/moonshotai/Kimi-K3/*"}]
    ns = offline.unwrap(rec.one("kubernetes:core/v1:Namespace", "k3-namespace").inputs)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_without_node_weights_the_endpoint_reads_s3_as_before():
    iec, accounts, addon, p = _stack("nodeWeights=false")
    spec = iec["spec"]
    assert "kubernetes" not in spec and spec["modelSourceConfig"]["modelSourceType"] == "s3"
    assert spec["modelSourceConfig"]["prefetchEnabled"] is True and "enableCustomServiceAccounts" not in addon
    assert "k3-node-weights" not in accounts and not [r for r in p.recording.resources if "node-weights" in r.name]
    ns = offline.unwrap(p.recording.one("kubernetes:core/v1:Namespace", "k3-namespace").inputs)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def test_the_operator_s_documented_validations_catch_a_broken_spec():
    iec, accounts, addon, _ = _stack()
    spec = iec["spec"]
    renamed = {**spec, "worker": {**spec["worker"], "modelVolumeMount": {"name": "weights", "mountPath": "/opt/ml/model"}}}
    located = {**spec, "modelSourceConfig": {**spec["modelSourceConfig"], "modelLocation": "models/x"}}
    unlabelled = {"k3-node-weights": {"metadata": {"labels": {}}}}
    assert operator_problems(renamed, accounts, addon) == ["no volume named as worker.modelVolumeMount.name"]
    assert operator_problems(located, accounts, addon) == ["modelLocation with kubernetesVolume"]
    assert operator_problems(spec, unlabelled, addon) == ["serviceAccountName 'k3-node-weights' is not labeled as "
                                                          "user-assignable"]
    assert operator_problems(spec, accounts, {}) == ["kubernetes.serviceAccountName is not enabled"]


def test_restart_reads_the_nvme_and_a_new_replica_holds_the_pod_s_own_fill():
    s = plan("aws-hyperpod").config.sizing
    ns = s.node_start
    assert ns is not None and ns.local and ns.filled_by_the_pod and ns.node_dir == "/opt/dlami/nvme/k3infra"
    assert LOCAL_READ["ml.p6-b300.48xlarge"].gbps == 96
    local = math.ceil(1.56e12 * 8 / 96e9)
    # one copier process (catalog.transfer NODE_COPY_PROCESS: 8 Gbps), under 64 files in flight x one S3 GET (43.52
    # Gbps) and the 300 Gbps NIC
    fill = math.ceil(1.56e12 * 8 / 8e9)
    assert (local, fill) == (130, 1560) and ns.fill is not None and ns.fill.seconds == fill
    assert ns.fill.source.startswith("limited by one copier process (ESTIMATE")
    assert [t.seconds for t in ns.restart] == [SCHEDULING_SECONDS, local, 600]
    # the image is on every instance already (aws.hyperpod_prepull)
    assert [t.seconds for t in ns.scale_out] == [SCHEDULING_SECONDS, 0, fill, local, 600]
    assert (ns.restart_seconds, ns.scale_out_seconds) == (850, 2410)


def test_the_start_budget_covers_a_first_fill_slower_than_the_bucket_load():
    """The init container fills before the probe starts, but the operator's deadline and Pulumi's wait (the await
    budget, from the probe budget) run from the pod's creation: with the bucket serving 5 Gbps, the fill (2,496 s)
    and the read back outlast the operator's prefetch figure the load was sized with (819 s)."""
    from k3infra.catalog import Loader
    from k3infra.sizing import NodeKeeping, PlatformTerms, size

    cfg = plan("aws-hyperpod").config
    read = LOCAL_READ["ml.p6-b300.48xlarge"]

    def sized(by_the_pod: bool):
        node = NodeKeeping(read=read, directory="/opt/dlami/nvme/k3infra", filled_by_the_pod=by_the_pod)
        return size(cfg.model, cfg.accelerator, cfg.engine, loader=Loader.BUCKET_COPY, bucket_egress_gbps=5,
                    region="us-west-2", platform=PlatformTerms(image_pre_pull=False, node=node))

    s, agent = sized(True), sized(False)
    stated = plan("aws-hyperpod", "weights.bucketEgressGbps=5")
    assert stated.config.sizing.probe_budget_seconds == s.probe_budget_seconds
    spec = iec_object(stated)["spec"]
    assert spec["worker"]["probes"]["startupProbe"]["failureThreshold"] * 10 == s.probe_budget_seconds
    assert spec["maxDeployTimeInSeconds"] >= stated.config.sizing.await_timeout_seconds
    ns = s.node_start
    assert ns is not None and ns.fill is not None and s.load.seconds == 819
    assert ns.fill.seconds == math.ceil(1.56e12 * 8 / 5e9) and ns.fill.source.startswith(
        "limited by its share of the bucket's egress: 5 Gbps / 1 node(s)")
    first = ns.fill.seconds + 130
    assert s.probe_budget_seconds == math.ceil(1.5 * (first + 600) / 10) * 10 == 4840
    assert s.await_timeout_seconds >= SCHEDULING_SECONDS + IMAGE_PULL_SECONDS + first + 600
    # where a node agent fills in the background, the pod reads the bucket meanwhile: the bucket load's budget
    assert agent.probe_budget_seconds == math.ceil(1.5 * (819 + 600) / 10) * 10 == 2130


def test_reserved_and_own_volume_names_do_not_meet():
    assert not {"copier", "copier-tmp", hw.NODE_VOLUME, hw.MODEL_VOLUME} & RESERVED_VOLUMES


def test_the_image_is_pulled_onto_every_instance_of_the_endpoint_s_type_ahead_of_a_scale_out() -> None:
    """Issue 40, images ahead of scale-out: HyperPod's instances carry node.kubernetes.io/instance-type=ml.<type>
    (the HyperPod chart's health-monitoring-agent DaemonSet selects them so), and the operator pulls at start."""
    from k3infra import offline
    from k3infra.aws.hyperpod_prepull import INSTANCE_TYPE_LABEL
    from tests.support import plan

    p = plan("aws-hyperpod")
    ds = offline.unwrap(p.recording.one("kubernetes:apps/v1:DaemonSet", "k3-endpoint-pre-pull-daemon-set")
                        .inputs)
    pod = ds["spec"]["template"]["spec"]
    assert ds["metadata"]["namespace"] == p.config.namespace
    assert pod["nodeSelector"] == {INSTANCE_TYPE_LABEL: "ml.p6-b300.48xlarge"} and not pod.get("tolerations")
    assert [c["image"] for c in pod["containers"]] == [p.config.image]
    ns = p.config.sizing.node_start
    assert ns is not None and [(t.name, t.seconds) for t in ns.scale_out][1] == ("image pull", 0)

"""serve() for each seed shape under the recording engine: inventory, ordering, probes, await settings,
exposure, NetworkPolicy, secret wiring, weights per loader."""

import json
import math
from typing import Any

import pulumi
import pytest

from k3infra import offline
from k3infra.offline import Recording, Registration, Secret
from k3infra.serving.engine import option
from tests.serving.shapes import (
    API_KEY,
    HF_TOKEN,
    SHAPES,
    record,
    record_shape,
    shape_config,
    variant,
)
from tests.support import ROOT, inventory

MS, WS, GW = "k3infra:index:ModelServer", "k3infra:index:WeightSync", "k3infra:index:InferenceGateway"
CORE = "kubernetes:core/v1:"
COMMON_TOP = [
    (CORE + "Namespace", "k3-namespace", None),
    (CORE + "Secret", "k3-hf-token", None),
    (CORE + "ServiceAccount", "k3-reader", None),
    (CORE + "ServiceAccount", "k3-writer", None),
    ("pulumi:providers:kubernetes", "cluster", None),
    ("test:index:GpuNodePool", "gpu-pool", None),
    ("test:index:IdentityBinding", "identity", None),
    ("k3infra:index:VerifyJob", "k3-verify", None),
    ("kubernetes:batch/v1:Job", "k3-verify-job", "k3infra:index:VerifyJob"),
    (CORE + "ConfigMap", "k3-verify-code", "k3infra:index:VerifyJob"),
    (CORE + "ServiceAccount", "k3-verify-account", "k3infra:index:VerifyJob"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-verify-network-policy", "k3infra:index:VerifyJob"),
    ("kubernetes:rbac.authorization.k8s.io/v1:Role", "k3-verify-role", "k3infra:index:VerifyJob"),
    ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "k3-verify-binding", "k3infra:index:VerifyJob"),
]
SYNC = [
    (WS, "k3-sync", None),
    ("kubernetes:batch/v1:Job", "k3-sync-job", WS),
    (CORE + "ConfigMap", "k3-sync-copier", WS),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-sync-network-policy", WS),
]
SYNC_POOL = [("test:index:SyncNodePool", "sync-pool", None)]  # the GKE, AKS and EKS shapes' stand-in
SERVER_TAIL = [
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy", MS),
    ("k3infra:index:ImagePrePull", "k3-pre-pull", None),
    ("kubernetes:apps/v1:DaemonSet", "k3-pre-pull-daemon-set", "k3infra:index:ImagePrePull"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-pre-pull-network-policy", "k3infra:index:ImagePrePull"),
]
FC = "k3infra:index:FabricCheck"
FABRIC = [  # a replica across nodes: the fabric check before the server (serving.fabric_check)
    (FC, "k3-fabric", None),
    ("kubernetes:batch/v1:Job", "k3-fabric-0-job", FC),
    (CORE + "ConfigMap", "k3-fabric-code", FC),
    (CORE + "Service", "k3-fabric-0-leader", FC),
    (CORE + "ServiceAccount", "k3-fabric-account", FC),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-fabric-network-policy", FC),
    # the probe's leader patches its report into its own Job (serving.fabric_report)
    ("kubernetes:rbac.authorization.k8s.io/v1:Role", "k3-fabric-role", FC),
    ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "k3-fabric-binding", FC),
]
LWS = [
    (CORE + "Namespace", "k3-server-lws-namespace", MS),
    (CORE + "Service", "k3-server-service", MS),
    ("kubernetes:helm.sh/v4:Chart", "k3-server-lws", MS),
    ("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "k3-server-workload", MS),
]

NA = "k3infra:index:NodeAgent"
NODE_AGENT = [(NA, "k3-node-agent", None), ("kubernetes:apps/v1:DaemonSet", "k3-node-agent-daemon-set", NA),
              ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-node-agent-network-policy", NA)]
"""Issue 40: where the stack keeps the weights or the engine's caches on its nodes (GKE, AKS by default)."""

EXPECTED_INVENTORY = {
    "p6-b300": sorted([
        (MS, "k3-server", None),
        ("kubernetes:apps/v1:Deployment", "k3-server-workload", MS),
        (CORE + "PersistentVolume", "k3-server-weights", MS),
        (CORE + "PersistentVolumeClaim", "k3-server-weights-claim", MS),
        (CORE + "Service", "k3-server-public", MS),
        (CORE + "Service", "k3-server-service", MS),
        *SERVER_TAIL, *SYNC, *SYNC_POOL, *COMMON_TOP,
        (CORE + "Secret", "k3-api-key", None),
    ]),
    "gb300": sorted([(MS, "k3-server", None), *LWS, (CORE + "Service", "k3-server-internal", MS), *SERVER_TAIL,
                     *SYNC, *SYNC_POOL, *COMMON_TOP, *FABRIC, *NODE_AGENT]),
    "a4-sglang": sorted([
        (MS, "k3-server", None),
        ("kubernetes:apps/v1:StatefulSet", "k3-server-workload", MS),
        (CORE + "Service", "k3-server-dist", MS),
        (CORE + "Service", "k3-server-service", MS),
        *SERVER_TAIL, *SYNC, *SYNC_POOL, *COMMON_TOP, *FABRIC, *NODE_AGENT,
    ]),
    "a4xmax-gateway": sorted([
        (GW, "k3-gateway", None),
        ("kubernetes:gateway.networking.k8s.io/v1:Gateway", "k3-gateway-gateway", GW),
        ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "k3-gateway-route", GW),
        ("kubernetes:helm.sh/v4:Chart", "k3-gateway-epp", GW),
        ("kubernetes:networking.gke.io/v1:GCPBackendPolicy", "k3-gateway-backend-policy", GW),
        ("kubernetes:networking.gke.io/v1:HealthCheckPolicy", "k3-gateway-health-check", GW),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-gateway-picker-network-policy", GW),
        (MS, "k3-server", None), *LWS, *SERVER_TAIL, *SYNC, *SYNC_POOL, *COMMON_TOP, *FABRIC, *NODE_AGENT,
    ]),
}


def rec_of(shape: str) -> Recording:
    return record_shape(shape).recording


def workload(rec: Recording) -> Registration:
    return next(r for r in rec.resources if r.name == "k3-server-workload")


def templates(rec: Recording) -> dict[str, dict[str, Any]]:
    """Pod templates of the server by role (single, leader, worker, shared)."""
    w = workload(rec)
    spec = offline.unwrap(w.inputs)["spec"]
    if w.type.endswith("LeaderWorkerSet"):
        lwt = spec["leaderWorkerTemplate"]
        return {"leader": lwt["leaderTemplate"], "worker": lwt["workerTemplate"]}
    if w.type.endswith("StatefulSet"):
        return {"shared": spec["template"]}
    return {"single": spec["template"]}


def engine(tmpl: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in tmpl["spec"]["containers"] if c["name"] == "engine")


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def by_name(rec: Recording, name: str) -> Registration:
    found = [r for r in rec.resources if r.name == name]
    assert len(found) == 1, (name, [r.name for r in found])
    return found[0]


def names(rec: Recording, urns: tuple[str, ...]) -> set[str]:
    return {rec.get(u).name for u in urns}


@pytest.mark.parametrize("shape", sorted(EXPECTED_INVENTORY))
def test_inventory_is_exact(shape: str) -> None:
    assert sorted(inventory(rec_of(shape)), key=lambda t: (t[0], t[1])) == sorted(
        EXPECTED_INVENTORY[shape], key=lambda t: (t[0], t[1]))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_kubernetes_object_uses_the_cluster_provider(shape: str) -> None:
    for r in rec_of(shape).resources:
        if r.type.startswith("kubernetes:"):
            assert r.provider and r.provider.endswith("::cluster"), r.name


# ---------------------------------------------------------------------------------------------------------
# Ordering: the critical path of Sizing.cold_start


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_sync_runs_in_parallel_with_the_gpu_pool_and_the_server_waits_for_both(shape: str) -> None:
    """cold_start: cluster, then max(GPU pool, sync), then load; so the sync must not wait for the pool. The GPU pool
    starts once the cluster and the pool's grant wait (AKS: beside the cluster) are both done; the sync and the pre-pull
    once the Kubernetes objects can be created (AKS: after the deployer's grant)."""
    rec = rec_of(shape)
    for r in rec.resources:
        if r.parent_type == WS or r.type == WS:
            assert "gpu-pool" not in names(rec, r.dependencies), f"{r.name} waits for the GPU pool"
            assert "identity" in names(rec, r.dependencies) or r.type == WS or "k3-sync-copier" in names(
                rec, r.dependencies)
    deps = names(rec, workload(rec).dependencies)
    assert {"gpu-pool", "identity", "k3-sync-job", "k3-reader", "k3-namespace"} <= deps
    cs = shape_config(shape).sizing.cold_start
    pool_start = max(cs.cluster_seconds, cs.pool_wait_seconds)
    objects = cs.cluster_seconds + cs.kubernetes_wait_seconds  # AKS: the deployer's grant, before every object
    assert cs.total_seconds == (max(max(pool_start + cs.gpu_pool_seconds, objects) + cs.image_pull_seconds
                                    + cs.fabric_check_seconds, objects + cs.sync_seconds) + cs.load_seconds + cs.warmup_seconds)
    assert cs.sync_seconds > 0
    # the image pre-pull waits for the pool only, and the server does not wait for it (the kubelet shares the pull)
    prepull = by_name(rec, "k3-pre-pull-daemon-set")
    assert "gpu-pool" in names(rec, prepull.dependencies) and "k3-sync-job" not in names(rec, prepull.dependencies)
    assert "k3-pre-pull" not in deps and "k3-pre-pull-daemon-set" not in deps


def test_without_sync_the_server_waits_only_for_pool_and_identities() -> None:
    rec = record(variant("gb300", config={"k3infra:weights": {"bucket": "kimi-k3-weights", "account": "myorgk3weights",
                                                              "sync": False, "loader": "streamer"}})).recording
    assert not [r for r in rec.resources if r.type == WS]
    assert not [r for r in rec.resources if r.name == "k3-hf-token"], "no token Secret without a consumer"
    assert {"gpu-pool", "identity"} <= names(rec, workload(rec).dependencies)


def test_lws_controller_installs_in_parallel_and_before_the_leaderworkerset() -> None:
    rec = rec_of("gb300")
    chart = by_name(rec, "k3-server-lws")
    assert offline.plain(chart.inputs) == {"chart": "oci://registry.k8s.io/lws/charts/lws", "name": "lws",
                                           "namespace": "lws-system", "version": "0.10.0"}
    assert names(rec, chart.dependencies) == {"k3-server-lws-namespace"}
    assert "k3-server-lws" in names(rec, workload(rec).dependencies)


# ---------------------------------------------------------------------------------------------------------
# Probes and await settings


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_startup_probe_covers_the_sizing_budget(shape: str) -> None:
    """002 appendix item 5: a readiness probe with default values kills a terabyte-scale load."""
    s = shape_config(shape).sizing
    assert s.probe_budget_seconds >= 1.5 * (s.load.seconds + s.engine.warmup_seconds)
    probed = 0
    for role, tmpl in templates(rec_of(shape)).items():
        c = engine(tmpl)
        if role == "worker":
            assert "startupProbe" not in c and "readinessProbe" not in c, "workers serve no HTTP"
            continue
        probed += 1
        startup, ready, live = c["startupProbe"], c["readinessProbe"], c["livenessProbe"]
        assert startup["failureThreshold"] * startup["periodSeconds"] >= s.probe_budget_seconds
        assert startup["failureThreshold"] == math.ceil(s.probe_budget_seconds / startup["periodSeconds"])
        assert live["failureThreshold"] * live["periodSeconds"] >= 300, "liveness must be lenient"
        for p in (startup, ready, live):
            if "httpGet" in p:
                assert p["httpGet"] == {"path": "/health", "port": "http"}
            else:
                assert "/health" in p["exec"]["command"][-1], "StatefulSet pods probe /health on pod 0"
    assert probed == 1


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_pulumi_waits_as_long_as_the_load_takes(shape: str) -> None:
    s = shape_config(shape).sizing
    w = workload(rec_of(shape))
    assert s.await_timeout_seconds > s.probe_budget_seconds
    # A create starts every group at once; an update replaces them one after the other: one replica here, whose
    # StatefulSet (000's pattern) replaces its pods one at a time (serving.rollout).
    starts = int(w.inputs["spec"]["replicas"]) if w.type.endswith("StatefulSet") else 1
    update = starts * s.await_timeout_seconds
    assert w.custom_timeouts == {"create": f"{s.await_timeout_seconds}s", "update": f"{update}s"}
    annotations = w.inputs["metadata"]["annotations"]
    assert annotations["pulumi.com/timeoutSeconds"] == str(update)
    assert "pulumi.com/skipAwait" not in annotations
    if w.type.endswith("LeaderWorkerSet"):
        # custom resources are not awaited at all unless told (docs/catalog-research.md §5)
        assert annotations["pulumi.com/waitFor"] == "condition=Available"
    if w.type.endswith("Deployment"):
        assert w.inputs["spec"]["progressDeadlineSeconds"] == s.await_timeout_seconds
    job = by_name(rec_of(shape), "k3-sync-job")
    assert job.custom_timeouts["create"] == job.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] + "s"
    assert s.sync is not None and int(job.custom_timeouts["create"][:-1]) == s.sync.timeout_seconds >= s.sync.seconds
    assert job.delete_before_replace


# ---------------------------------------------------------------------------------------------------------
# Workloads


def test_deployment_single_node_p6_b300() -> None:
    rec = rec_of("p6-b300")
    spec = workload(rec).inputs["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    c = engine(templates(rec)["single"])
    assert c["resources"]["requests"] == c["resources"]["limits"] == {
        "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "16", "cpu": "180", "memory": "3800Gi"}
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    script = c["args"][0]
    assert "exec vllm serve \"${K3_MODEL}\" --trust-remote-code --load-format fastsafetensors" in script
    assert option(script.split(), "--tensor-parallel-size") == "8"
    env = env_of(c)
    assert env["VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"] == "1"
    assert env["K3_MODEL"] == "/mnt/models/models/moonshotai/Kimi-K3"
    assert env["FI_PROVIDER"] == "efa"


def test_leaderworkerset_gb300_follows_002_4_4() -> None:
    rec = rec_of("gb300")
    w = workload(rec)
    assert w.inputs["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    spec = w.inputs["spec"]
    assert spec["replicas"] == 1
    assert spec["leaderWorkerTemplate"]["size"] == 2
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    t = templates(rec)
    leader, worker = engine(t["leader"]), engine(t["worker"])
    assert t["leader"]["metadata"]["labels"]["k3infra.dev/role"] == "leader"
    assert t["worker"]["metadata"]["labels"]["k3infra.dev/role"] == "worker"
    # vLLM's own multi-node mode: rank 0 serves, the worker joins it headless (no Ray)
    assert '--nnodes 2 --node-rank 0 --master-addr "$(LWS_LEADER_ADDRESS)" --master-port 29501' in leader["args"][0]
    assert ('--nnodes 2 --node-rank "$(LWS_WORKER_INDEX)" --master-addr "$(LWS_LEADER_ADDRESS)" --master-port 29501 '
            '--headless') in worker["args"][0]
    assert "ray" not in leader["args"][0] + worker["args"][0]
    # the pod standard of a Deployment: probes on the leader, requests = limits from the machine type, and
    # the written scan reasons on both templates (workers: no HTTP to probe)
    assert all(leader[p] for p in ("startupProbe", "readinessProbe", "livenessProbe"))
    assert not any(p in worker for p in ("startupProbe", "readinessProbe", "livenessProbe"))
    assert [p["name"] for p in leader["ports"]] == ["http", "dist"] and "ports" not in worker
    for tmpl, ids in ((t["leader"], {"CKV_K8S_15", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_40", "CKV_K8S_43"}),
                      (t["worker"], {"CKV_K8S_8", "CKV_K8S_9"})):
        reasons = {v.split("=", 1)[0]: v.split("=", 1)[1] for k, v in tmpl["metadata"]["annotations"].items()
                   if k.startswith("checkov.io/skip")}
        assert ids <= set(reasons) and all(len(r) > 20 for r in reasons.values())
        assert not {"CKV_K8S_10", "CKV_K8S_11", "CKV_K8S_12", "CKV_K8S_13"} & set(reasons)
    for c in (leader, worker):
        # Standard_ND128isr_GB300_v6: 85% of 128 vCPU and of 804 GiB
        assert c["resources"]["limits"] == c["resources"]["requests"] == {
            "nvidia.com/gpu": "4", "cpu": "108", "memory": "683Gi"}
        assert env_of(c)["VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"] == "1"
        assert env_of(c)["AZURE_STORAGE_ACCOUNT_NAME"] == "myorgk3weights", "streamer env from the store"
        assert env_of(c)["K3_MODEL"] == "az://kimi-k3-weights/models/moonshotai/Kimi-K3"
    for tmpl in t.values():
        assert tmpl["spec"]["nodeSelector"] == {"agentpool": "gb300pool"}
        assert tmpl["spec"]["serviceAccountName"] == "k3-server"
        assert tmpl["spec"]["automountServiceAccountToken"] is False
        assert tmpl["metadata"]["labels"]["azure.workload.identity/use"] == "true"
        assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}} in tmpl["spec"]["volumes"]
    assert "--model-loader-extra-config" in leader["args"][0]


def test_statefulset_a4_sglang_follows_000() -> None:
    rec = rec_of("a4-sglang")
    w = workload(rec)
    spec = w.inputs["spec"]
    assert spec["replicas"] == 2 and spec["podManagementPolicy"] == "Parallel"
    assert spec["serviceName"] == "k3-server-dist"
    dist = by_name(rec, "k3-server-dist").inputs["spec"]
    assert dist["clusterIP"] == "None"
    assert dist["publishNotReadyAddresses"] is True, "rank 0 must be reachable before it is Ready"
    assert dist["ports"] == [{"name": "dist", "port": 20000, "targetPort": 20000}]
    assert dist["selector"]["apps.kubernetes.io/pod-index"] == "0"
    svc = by_name(rec, "k3-server-service").inputs["spec"]
    assert svc["selector"]["apps.kubernetes.io/pod-index"] == "0" and svc["type"] == "ClusterIP"
    tmpl = templates(rec)["shared"]
    c = engine(tmpl)
    env = env_of(c)
    assert env["POD_INDEX"] == {"fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}}
    assert env["K3_DRAFT_MODEL"] == "/mnt/models/models/RadixArk/Kimi-K3-DSpark"
    for k, v in {"OMP_NUM_THREADS": "24", "SGLANG_SET_CPU_AFFINITY": "1", "SAFETENSORS_FAST_GPU": "1",
                 "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                 "RUNAI_STREAMER_MEMORY_LIMIT": str(8 * 34359738368),  # 000's 32 GiB a rank, as the node's total
                 "RUNAI_STREAMER_CONCURRENCY": "16", "SGLANG_USE_RUNAI_MODEL_STREAMER": "true",
                 "RUNAI_STREAMER_DIST_GLOBAL": "1", "RUNAI_STREAMER_PARTITION_POLICY": "files",
                 "SGLANG_REQUEST_STATE_WAIT_TIMEOUT": "18000", "NCCL_IB_GID_INDEX": "3"}.items():
        assert env[k] == v, k
    script = c["args"][0]
    assert script.splitlines()[1] == "ldconfig /usr/local/nvidia/lib64/ || true", "pool setup runs first"
    words = script.splitlines()[-1].split()
    assert option(words, "--tp-size") == "16" and option(words, "--nnodes") == "2"
    assert option(words, "--node-rank") == '"${POD_INDEX}"'
    assert option(words, "--dist-init-addr") == "k3-server-dist.kimi-k3.svc.cluster.local:20000"
    assert option(words, "--speculative-algorithm") == "DSPARK"
    assert option(words, "--speculative-dspark-block-size") == "7"
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "8", "cpu": "206", "memory": "1500Gi"}
    assert tmpl["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    assert tmpl["metadata"]["annotations"]["networking.gke.io/default-interface"] == "eth0"
    vols = {v["name"]: v for v in tmpl["spec"]["volumes"]}
    assert vols["weights"]["csi"]["driver"] == "gcsfuse.csi.storage.gke.io"
    assert vols["weights"]["csi"]["readOnly"] is True
    assert vols["weights"]["csi"]["volumeAttributes"]["mountOptions"].startswith("implicit-dirs,")
    assert vols["library-dir-host"]["hostPath"] == {"path": "/home/kubernetes/bin/nvidia", "type": "Directory"}
    assert vols["dshm"]["emptyDir"]["sizeLimit"] == "100Gi"
    ns = by_name(rec, "k3-namespace").inputs["metadata"]["labels"]
    assert ns["pod-security.kubernetes.io/enforce"] == "privileged", "host mounts need the privileged level"


def test_namespace_is_baseline_without_host_mounts_capabilities_or_engine_cache() -> None:
    from k3infra.serving.stack import pod_security_level

    shape = SHAPES["gb300"]
    assert pod_security_level(shape.pool, shape.store) == "baseline"
    # a stack's server keeps the engine's caches in a node directory: baseline forbids every hostPath volume
    labels = by_name(rec_of("gb300"), "k3-namespace").inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"


def test_static_csi_volume_is_read_only_and_retained() -> None:
    rec = rec_of("p6-b300")
    pv = by_name(rec, "k3-server-weights").inputs["spec"]
    assert pv["accessModes"] == ["ReadOnlyMany"]
    assert pv["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["csi"] == {"driver": "s3.csi.aws.com", "readOnly": True, "volumeHandle": "my-org-kimi-k3-weights",
                         "volumeAttributes": {"bucketName": "my-org-kimi-k3-weights"}}
    assert pv["mountOptions"] == ["read-only", "region us-west-2"]
    assert pv["claimRef"] == {"name": "k3-server-weights", "namespace": "kimi-k3"}
    pvc = by_name(rec, "k3-server-weights-claim").inputs["spec"]
    assert pvc["volumeName"] == "kimi-k3-k3-server-weights" and pvc["storageClassName"] == ""
    vols = {v["name"]: v for v in templates(rec)["single"]["spec"]["volumes"]}
    assert vols["weights"]["persistentVolumeClaim"] == {"claimName": "k3-server-weights", "readOnly": True}


def test_streamed_weights_copy_the_draft_model_with_the_download_tool() -> None:
    """SGLang + DSPARK with the streamer loader: the draft model comes from the bucket through an init container."""
    shape = variant("a4-sglang", config={"k3infra:weights": {"bucket": "my-project-kimi-k3-weights",
                                                              "revision": "0" * 40, "draftRevision": "1" * 40,
                                                              "loader": "streamer"}})
    rec = record(shape).recording
    tmpl = templates(rec)["shared"]
    init = {c["name"]: c for c in tmpl["spec"]["initContainers"]}
    assert list(init) == ["wait-for-weights", "copy-draft"]
    env = env_of(init["copy-draft"])
    assert env["SOURCE"] == "gs://my-project-kimi-k3-weights/models/RadixArk/Kimi-K3-DSpark"
    assert env["DEST"] == "/mnt/draft"
    assert env_of(engine(tmpl))["K3_MODEL"] == "gs://my-project-kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert env_of(engine(tmpl))["K3_DRAFT_MODEL"] == "/mnt/draft"


def test_bucket_copy_loader_copies_to_local_disk_first() -> None:
    shape = variant("p6-b300", config={"k3infra:weights": {"bucket": "my-org-kimi-k3-weights", "revision": "0" * 40,
                                                            "loader": "bucket-copy"}})
    tmpl = templates(record(shape).recording)["single"]
    wait, copy = tmpl["spec"]["initContainers"]
    assert wait["name"] == "wait-for-weights"
    assert copy["image"] == "public.ecr.aws/aws-cli/aws-cli:2.27.0"
    assert env_of(copy)["SOURCE"] == "s3://my-org-kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert env_of(copy)["DEST"] == "/mnt/models/models/moonshotai/Kimi-K3"
    vols = {v["name"]: v for v in tmpl["spec"]["volumes"]}
    assert vols["weights"]["emptyDir"]["sizeLimit"] == "1599Gi"


# ---------------------------------------------------------------------------------------------------------
# Exposure and NetworkPolicy


def test_public_exposure_uses_public_annotations_source_ranges_and_an_api_key() -> None:
    rec = rec_of("p6-b300")
    svc = by_name(rec, "k3-server-public").inputs
    assert svc["metadata"]["annotations"] == {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing"}
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24"]
    assert svc["spec"]["externalTrafficPolicy"] == "Local"
    assert svc["spec"]["selector"]["k3infra.dev/role"] == "leader"
    c = engine(templates(rec)["single"])
    assert env_of(c)["VLLM_API_KEY"] == {"secretKeyRef": {"name": "k3-api-key", "key": "api-key"}}
    assert '--api-key "${VLLM_API_KEY}"' in c["args"][0]
    assert rec.outputs["endpoint"].startswith("http://203.0.113.")


def test_internal_exposure_is_an_internal_load_balancer_when_the_cluster_states_client_ranges() -> None:
    rec = rec_of("gb300")
    svc = by_name(rec, "k3-server-internal").inputs
    assert svc["metadata"]["annotations"] == {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}
    assert svc["spec"]["loadBalancerSourceRanges"] == ["10.0.0.0/8"]
    assert not [r for r in rec.resources if r.name == "k3-server-public"]
    assert "VLLM_API_KEY" not in env_of(engine(templates(rec)["leader"]))


def test_internal_exposure_is_cluster_only_without_client_ranges() -> None:
    rec = rec_of("a4-sglang")
    assert sorted(r.name for r in rec.resources if r.type == CORE + "Service") == [
        "k3-fabric-0-leader", "k3-server-dist", "k3-server-service"]
    assert rec.outputs["endpoint"] == "http://k3-server.kimi-k3.svc.cluster.local:30000"
    assert any("cluster-internal" in w for w in record_shape("a4-sglang").serving.warnings)


def _rules(rec: Recording) -> list[dict[str, Any]]:
    return by_name(rec, "k3-server-network-policy").inputs["spec"]["ingress"]


SELECTOR = {"app.kubernetes.io/component": "model-server", "app.kubernetes.io/instance": "k3-server"}
FROM_NAMESPACE = {"from": [{"podSelector": {}}], "ports": [{"port": 8000, "protocol": "TCP"}]}
WITHIN_GROUP = {"from": [{"podSelector": {"matchLabels": SELECTOR}}]}


@pytest.mark.parametrize("shape,ranges", [
    ("p6-b300", ["203.0.113.0/24"]),      # public load balancer clients
    ("gb300", ["10.0.0.0/8"]),            # internal load balancer clients
    ("a4-sglang", []),                    # cluster-only
    # the managed gateway's proxy-only subnet, then Google's health checkers
    ("a4xmax-gateway", ["10.129.0.0/23", "35.191.0.0/16", "130.211.0.0/22"]),
])
def test_network_policy_admits_the_port_from_namespace_clients_or_gateway_and_the_group(shape: str,
                                                                                         ranges: list[str]) -> None:
    rec = rec_of(shape)
    np = by_name(rec, "k3-server-network-policy").inputs["spec"]
    assert np["podSelector"] == {"matchLabels": SELECTOR}
    assert np["policyTypes"] == ["Ingress"]
    # Behind a gateway the picker (in the namespace) also dials the engines' KV-event publisher (issue 38).
    picker = [{"port": "kv-events", "protocol": "TCP"}] if shape == "a4xmax-gateway" else []
    # the serving port by number (a decode's is its native sidecar's: independent review of issue 37, m1)
    serving = [{"port": 30000 if "sglang" in shape else 8000, "protocol": "TCP"}]
    expected = [{**FROM_NAMESPACE, "ports": serving + picker}, WITHIN_GROUP]
    if ranges:
        expected.append({"from": [{"ipBlock": {"cidr": c}} for c in ranges], "ports": serving})
    assert _rules(rec) == expected


def test_sync_job_admits_no_ingress() -> None:
    np = by_name(rec_of("gb300"), "k3-sync-network-policy").inputs["spec"]
    assert np == {"podSelector": {"matchLabels": {"app.kubernetes.io/component": "weight-sync",
                                                  "app.kubernetes.io/instance": "k3-sync"}},
                  "policyTypes": ["Ingress"]}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_one_replica_gets_no_disruption_budget_that_would_block_every_eviction(shape: str) -> None:
    """EKS managed-node-update-behavior: an "aggressive PDB" fails node updates with PodEvictionFailure; a budget
    on one replica either blocks every eviction or protects nothing."""
    assert not rec_of(shape).by_type("kubernetes:policy/v1:PodDisruptionBudget")


def test_several_replicas_go_down_one_pod_at_a_time_and_broken_groups_can_drain() -> None:
    for base in ("p6-b300", "gb300"):
        nodes = SHAPES[base].pool["node_count"]
        rec = record(variant(base, config={"k3infra:replicas": 2}, pool={"node_count": 2 * nodes})).recording
        pdb = by_name(rec, "k3-server-pdb").inputs["spec"]
        assert pdb == {"maxUnavailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow",
                       "selector": {"matchLabels": SELECTOR}}


def test_a_pool_whose_capacity_has_not_started_is_not_awaited() -> None:
    for base in ("p6-b300", "gb300"):
        rec = record(variant(base, pool={"capacity_pending": "the block starts later"})).recording
        annotations = offline.unwrap(workload(rec).inputs)["metadata"]["annotations"]
        assert annotations["pulumi.com/skipAwait"] == "true"
        assert "pulumi.com/timeoutSeconds" not in annotations and "pulumi.com/waitFor" not in annotations


def test_gateway_pool_route_and_endpoint_picker() -> None:
    rec = rec_of("a4xmax-gateway")
    assert not rec.by_type("kubernetes:inference.networking.k8s.io/v1:InferencePool"), "the chart creates the pool"
    gw = by_name(rec, "k3-gateway-gateway").inputs["spec"]
    assert gw["gatewayClassName"] == "gke-l7-rilb"
    route = by_name(rec, "k3-gateway-route").inputs["spec"]
    assert route["rules"][0]["backendRefs"] == [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                                 "name": "k3-gateway"}]
    epp = offline.plain(by_name(rec, "k3-gateway-epp").inputs)
    assert epp["chart"] == "oci://ghcr.io/llm-d/charts/llm-d-router-gateway" and epp["version"] == "v0.10.0"
    assert epp["name"] == "k3-gateway" and epp["namespace"] == "kimi-k3"  # the pool's name and namespace
    assert epp["values"]["router"]["inferencePool"] == {"create": True, "failureMode": "FailOpen"}
    assert epp["values"]["router"]["modelServers"] == {
        "type": "vllm", "protocol": "http", "targetPorts": [{"number": 8000}],
        "matchLabels": {**SELECTOR, "k3infra.dev/role": "leader"}}
    assert epp["values"]["router"]["epp"]["image"]["tag"] == "v0.10.0"
    assert not [r for r in rec.resources if r.name in ("k3-server-internal", "k3-server-public")]
    assert rec.outputs["endpoint"].startswith("http://10.128.1.")
    assert rec.outputs["inferencePool"] == "k3-gateway"
    assert "k3-sync-job" not in names(rec, by_name(rec, "k3-gateway-gateway").dependencies)


# ---------------------------------------------------------------------------------------------------------
# Secrets


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_tokens_reach_pods_only_through_secrets(shape: str) -> None:
    rec = rec_of(shape)
    secret = by_name(rec, "k3-hf-token").inputs["stringData"]
    assert isinstance(secret, Secret), "the Secret's data must be registered as a Pulumi secret"
    assert offline.unwrap(secret) == {"HF_TOKEN": HF_TOKEN}
    text = json.dumps([offline.plain(r.inputs) for r in rec.resources]) + json.dumps(offline.plain(rec.outputs))
    assert HF_TOKEN not in text and API_KEY not in text
    job = by_name(rec, "k3-sync-job").inputs["spec"]["template"]["spec"]
    for c in job["containers"]:
        assert env_of(c)["HF_TOKEN"] == {"secretKeyRef": {"name": "k3-hf-token", "key": "HF_TOKEN"}}
    for tmpl in templates(rec).values():
        assert "HF_TOKEN" not in env_of(engine(tmpl)), "the server reads the bucket, never Hugging Face"


def test_api_key_secret() -> None:
    secret = by_name(rec_of("p6-b300"), "k3-api-key").inputs["stringData"]
    assert isinstance(secret, Secret) and offline.unwrap(secret) == {"api-key": API_KEY}


def test_sglang_api_key_flag_reads_the_secret_env() -> None:
    shape = variant("a4-sglang", config={"k3infra:endpoint": {"exposure": "public", "allowedCidrs": ["198.51.100.0/24"]},
                                         "k3infra:apiKey": API_KEY})
    rec = record(shape).recording
    c = engine(templates(rec)["shared"])
    assert env_of(c)["K3_API_KEY"] == {"secretKeyRef": {"name": "k3-api-key", "key": "api-key"}}
    assert '--api-key "${K3_API_KEY}"' in c["args"][0]
    assert API_KEY not in json.dumps([offline.plain(r.inputs) for r in rec.resources])


# ---------------------------------------------------------------------------------------------------------
# The weight sync Job


def test_sync_job_streams_a_pinned_revision_and_the_draft_model_as_the_writer() -> None:
    """An Indexed Job of the copier, one worker per CPU node, no volume: nothing the size of the model."""
    rec = rec_of("a4-sglang")
    s = shape_config("a4-sglang").sizing
    assert s.sync is not None
    job = offline.unwrap(by_name(rec, "k3-sync-job").inputs)
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 2, 2)
    assert spec["backoffLimitPerIndex"] == 6
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "k3-weight-sync"
    assert pod["restartPolicy"] == "Never"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "NotIn",
                               "values": ["nvidia-b200"]}]}]
    # one worker per node of its own pool, required: the autoscaler adds a node for the second (a spread would not)
    assert pod["affinity"]["podAntiAffinity"] == {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname",
         "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "k3-sync",
                                           "app.kubernetes.io/component": "weight-sync"}}}]}
    assert "topologySpreadConstraints" not in pod
    # on the sync's own pool, which waits for nothing but the cluster
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux", "k3infra.dev/pool": "sync"}
    assert pod["tolerations"] == [{"key": "k3infra.dev/sync", "operator": "Exists", "effect": "NoSchedule"}]
    assert s.sync.streams == 40 and s.sync.pool
    assert "initContainers" not in pod
    (copy,) = pod["containers"]
    assert copy["command"][:2] == ["/bin/sh", "-c"] and "--require-hashes" in copy["command"][2]
    # Pulled once per node (Docker Hub is not asked again by every retried worker).
    assert copy["imagePullPolicy"] == "IfNotPresent"
    assert copy["args"] == [
        # 40 streams: a c3-highcpu-44's 32 Gbps at the Hub's pessimistic 0.8 Gbps a stream
        "sync", "--workers", "2", "--streams", "40", "--part-size", "64MiB", "--queue-parts", "2",
        # The store states no propagation figure: the longest any cloud states (Azure's 10 minutes).
        "--auth-window", "600",
        "--repo", "moonshotai/Kimi-K3@0123456789abcdef0123456789abcdef01234567="
                  "gs://my-project-kimi-k3-weights/models/moonshotai/Kimi-K3",
        "--repo", "RadixArk/Kimi-K3-DSpark@fedcba9876543210fedcba9876543210fedcba98="  # weights.draftRevision
                  "gs://my-project-kimi-k3-weights/models/RadixArk/Kimi-K3-DSpark"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes == {"copier": {"name": "copier", "configMap": {"name": "k3-sync-copier"}},
                       "copier-tmp": {"name": "copier-tmp", "emptyDir": {"sizeLimit": "2Gi"}}}
    assert not [r for r in rec.resources if r.type.endswith("PersistentVolumeClaim")]
    cm = offline.unwrap(by_name(rec, "k3-sync-copier").inputs)
    package = ROOT / "k3infra/weightcopy/copier"
    assert cm["data"] == {**{p.name: p.read_text() for p in package.glob("*.py")},
                          "requirements.txt": (ROOT / "k3infra/weightcopy/requirements/gs.txt").read_text()}
    # The ConfigMap is mounted as the package's directory, which the command puts first on the path.
    assert copy["volumeMounts"][0] == {"name": "copier", "mountPath": "/opt/k3copy/copier", "readOnly": True}
    assert "PYTHONPATH=/opt/k3copy:/tmp/k3copy-packages exec python -m copier" in copy["command"][2]
    assert "-r /opt/k3copy/copier/requirements.txt" in copy["command"][2]


def test_a_server_that_mounts_the_bucket_waits_for_the_markers_through_the_mount_with_its_engine_image() -> None:
    """Loader fuse: no copier image, no PyPI, nothing downloaded at start; the marker paths are the copier's keys
    under the mount of the bucket's root."""
    rec = rec_of("a4-sglang")
    s = shape_config("a4-sglang").sizing
    assert s.sync is not None
    for tmpl in templates(rec).values():
        first = offline.unwrap(tmpl["spec"]["initContainers"][0])
        engine = next(c for c in offline.unwrap(tmpl["spec"]["containers"]) if c["name"] == "engine")
        assert first["name"] == "wait-for-weights"
        assert (first["image"], first["imagePullPolicy"]) == (engine["image"], "IfNotPresent")
        assert first["command"][:2] == ["/bin/sh", "-c"] and "args" not in first
        # the node copy's choice (issue 40): the agent's copy of the model's marker beside the bucket's
        assert {e["name"]: e["value"] for e in first["env"]} == {
            "K3_NODE_MARKER": "/var/lib/k3infra-node/weights/models/moonshotai/Kimi-K3/.k3infra/complete-"
                              "0123456789abcdef0123456789abcdef01234567.json",
            "K3_BUCKET_MARKER": first["command"][6], "K3_CHOICE": "/var/run/k3infra/weights"}
        assert first["command"][3:] == [
            "wait-for-weights", str(s.sync.timeout_seconds), "15",
            "/mnt/models/models/moonshotai/Kimi-K3/.k3infra/complete-0123456789abcdef0123456789abcdef01234567.json",
            "/mnt/models/models/RadixArk/Kimi-K3-DSpark/.k3infra/complete-fedcba9876543210fedcba9876543210fedcba98.json"]
        assert first["volumeMounts"] == [{"name": "weights", "mountPath": "/mnt/models", "readOnly": True},
                                         {"name": "node-weights", "mountPath": "/var/lib/k3infra-node", "readOnly": True},
                                         {"name": "k3infra-run", "mountPath": "/var/run/k3infra"}]
        assert first["securityContext"]["readOnlyRootFilesystem"] is True
        # The engine reads the model at the same place under the same mount.
        env = {e["name"]: e.get("value") for e in engine["env"]}
        assert first["command"][6].startswith(env["K3_MODEL"] + "/.k3infra/")
        assert not [v for v in offline.unwrap(tmpl["spec"]["volumes"]) if v["name"].startswith("copier")]
    assert not [w for w in record_shape("a4-sglang").serving.warnings if "PyPI" in w]


def test_the_mount_wait_script_waits_for_every_marker_then_passes_or_times_out(tmp_path: Any) -> None:
    import subprocess

    from k3infra.serving.marker_wait import MOUNT_WAIT_SCRIPT

    markers = [tmp_path / "m" / ".k3infra" / "complete-a.json", tmp_path / "d" / ".k3infra" / "complete-b.json"]

    def run(timeout: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["/bin/sh", "-c", MOUNT_WAIT_SCRIPT, "wait-for-weights", str(timeout), "0.1",
                               *map(str, markers)], capture_output=True, text=True, timeout=30)

    markers[0].parent.mkdir(parents=True)
    markers[0].write_text('{"commit": "a"}')
    late = run(1)
    assert late.returncode == 1 and f"timed out after 1 s waiting for {markers[1]}" in late.stderr
    markers[1].parent.mkdir(parents=True)
    markers[1].write_text('{"commit": "b"}')
    done = run(1)
    assert done.returncode == 0 and 'weights complete: {"commit": "b"}' in done.stderr, done.stderr


def test_a_server_that_streams_waits_with_the_copier_as_the_reader_and_the_plan_says_what_it_downloads() -> None:
    rec = rec_of("gb300")
    s = shape_config("gb300").sizing
    assert s.sync is not None
    for tmpl in templates(rec).values():
        first = offline.unwrap(tmpl["spec"]["initContainers"][0])
        assert first["name"] == "wait-for-weights"
        assert (first["image"], first["imagePullPolicy"]) == ("docker.io/library/python:3.12.11-slim-bookworm",
                                                              "IfNotPresent")
        assert first["args"] == [
            "wait", "--timeout", str(s.sync.timeout_seconds), "--interval", "15", "--auth-window", "600",
            "--repo", "moonshotai/Kimi-K3@0123456789abcdef0123456789abcdef01234567="
                      "az://kimi-k3-weights/models/moonshotai/Kimi-K3"]
        assert tmpl["spec"]["serviceAccountName"] == "k3-server"
        assert {"name": "copier", "configMap": {"name": "k3-sync-copier"}} in offline.unwrap(tmpl["spec"]["volumes"])
    (egress,) = [w for w in record_shape("gb300").serving.warnings if "PyPI" in w]
    assert egress.startswith("the server pods' wait-for-weights init container (loader streamer) runs the weight "
                             "copier: it pulls docker.io/library/python:3.12.11-slim-bookworm once per node")
    assert "pypi.org" in egress


def test_a_stack_without_sync_starts_its_server_without_waiting() -> None:
    shape = variant("p6-b300", config={"k3infra:weights": {"bucket": "my-org-kimi-k3-weights", "sync": False,
                                                            "loader": "fuse"}})
    rec = record(shape).recording
    assert not [r for r in rec.resources if r.type == WS]
    assert "initContainers" not in offline.unwrap(templates(rec)["single"]["spec"])


# ---------------------------------------------------------------------------------------------------------
# Bad hand-overs fail early, naming the property


def _error(shape: Any) -> pulumi.InputPropertyError:
    with pytest.raises(pulumi.InputPropertyError) as e:
        record(shape)
    return e.value


def test_fuse_loader_without_a_csi_mount() -> None:
    store = {k: v for k, v in SHAPES["a4-sglang"].store.items() if k != "fuse"}
    shape = variant("a4-sglang")
    shape = type(shape)(name=shape.name, config=shape.config, pool=shape.pool, store=store, lb=shape.lb)  # type: ignore[arg-type]
    assert _error(shape).property_path == "store.fuse"


def test_gateway_without_a_gateway_class() -> None:
    shape = variant("a4xmax-gateway", lb={"internal_gateway_class": ""})
    assert _error(shape).property_path == "load_balancer.internal_gateway_class"


def test_pool_must_hold_every_replica() -> None:
    shape = variant("gb300", pool={"node_count": 1})
    assert _error(shape).property_path == "pool.node_count"


def test_layout_must_match_the_pool() -> None:
    shape = variant("gb300", pool={"gpus_per_node": 8})
    assert _error(shape).property_path == "tensor_parallel"

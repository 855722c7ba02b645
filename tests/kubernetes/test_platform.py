"""The existing-cluster platform (cloud kubernetes): exact inventories of both stacks, what reaches the pods, the
validation of bad combinations (each seen to fail on a planted mistake), and the preview-time presence check."""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from k3infra import offline, planning
from k3infra.config import ConfigError, parse_config
from k3infra.kubernetes import deployment, presence
from k3infra.kubernetes.kubeconfig import KubeconfigError, client
from tests.support import INSTALLED_GATEWAY, ROOT, installed_gateway_spec, inventory, plan

KEYS = ("s3AccessKeyId=SENTINEL0key0id", "s3SecretAccessKey=SENTINEL0secret")
GOLDEN = ROOT / "tests" / "golden"
STACKS = ("kubernetes-b300", "kubernetes-gb300-nvl72", "kubernetes-gb300-nvl72-pd")

SERVING_CORE = [
    ("k3infra:index:VerifyJob", "k3-verify", None),
    ("kubernetes:batch/v1:Job", "k3-verify-job", "k3infra:index:VerifyJob"),
    ("kubernetes:core/v1:ConfigMap", "k3-verify-code", "k3infra:index:VerifyJob"),
    ("kubernetes:core/v1:ServiceAccount", "k3-verify-account", "k3infra:index:VerifyJob"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-verify-network-policy", "k3infra:index:VerifyJob"),
    ("kubernetes:rbac.authorization.k8s.io/v1:Role", "k3-verify-role", "k3infra:index:VerifyJob"),
    ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "k3-verify-binding", "k3infra:index:VerifyJob"),
    ("k3infra:index:WeightSync", "k3-sync", None),
    ("kubernetes:batch/v1:Job", "k3-sync-job", "k3infra:index:WeightSync"),
    ("kubernetes:core/v1:ConfigMap", "k3-sync-copier", "k3infra:index:WeightSync"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-sync-network-policy", "k3infra:index:WeightSync"),
    ("kubernetes:core/v1:Namespace", "k3-namespace", None),
    ("kubernetes:core/v1:Secret", "k3-store-credentials", None),
    ("kubernetes:core/v1:ServiceAccount", "k3-reader", None),
    ("kubernetes:core/v1:ServiceAccount", "k3-writer", None),
    ("pulumi:providers:kubernetes", "k3-cluster", None),
]


def test_the_b300_stack_is_exactly_the_serving_layer_on_the_given_cluster() -> None:
    """One node, one Deployment; no cloud resource, no chart (LWS is not needed, the device plugin is present)."""
    assert inventory(plan("kubernetes-b300", *KEYS).recording) == [
        ("k3infra:index:ImagePrePull", "k3-pre-pull", None),
        ("kubernetes:apps/v1:DaemonSet", "k3-pre-pull-daemon-set", "k3infra:index:ImagePrePull"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-pre-pull-network-policy", "k3infra:index:ImagePrePull"),
        *INSTALLED_GATEWAY,
        ("k3infra:index:ModelServer", "k3-server", None),
        ("kubernetes:apps/v1:Deployment", "k3-server-workload", "k3infra:index:ModelServer"),
        ("kubernetes:core/v1:Service", "k3-server-service", "k3infra:index:ModelServer"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy", "k3infra:index:ModelServer"),
        *SERVING_CORE,
    ]


def test_the_gb300_stack_spans_two_trays_of_one_nvlink_domain() -> None:
    """LWS installed, the DRA driver present (a ComputeDomain, no chart), the placement and fabric checks before the
    server."""
    fabric = "k3infra:index:FabricCheck"
    assert inventory(plan("kubernetes-gb300-nvl72", *KEYS).recording) == [
        (fabric, "k3-fabric", None),
        ("kubernetes:batch/v1:Job", "k3-fabric-0-job", fabric),
        ("kubernetes:core/v1:ConfigMap", "k3-fabric-code", fabric),
        ("kubernetes:core/v1:Service", "k3-fabric-0-leader", fabric),
        ("kubernetes:core/v1:ServiceAccount", "k3-fabric-account", fabric),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-fabric-network-policy", fabric),
        ("kubernetes:rbac.authorization.k8s.io/v1:Role", "k3-fabric-role", fabric),
        ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "k3-fabric-binding", fabric),
        ("kubernetes:resource.nvidia.com/v1beta1:ComputeDomain", "k3-fabric-nvlink-0", fabric),
        ("k3infra:index:ImagePrePull", "k3-pre-pull", None),
        ("kubernetes:apps/v1:DaemonSet", "k3-pre-pull-daemon-set", "k3infra:index:ImagePrePull"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-pre-pull-network-policy", "k3infra:index:ImagePrePull"),
        *INSTALLED_GATEWAY,
        ("k3infra:index:ModelServer", "k3-server", None),
        ("kubernetes:core/v1:Namespace", "k3-server-lws-namespace", "k3infra:index:ModelServer"),
        ("kubernetes:core/v1:Service", "k3-server-service", "k3infra:index:ModelServer"),
        ("kubernetes:helm.sh/v4:Chart", "k3-server-lws", "k3infra:index:ModelServer"),
        ("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "k3-server-workload", "k3infra:index:ModelServer"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy", "k3infra:index:ModelServer"),
        ("kubernetes:resource.nvidia.com/v1beta1:ComputeDomain", "k3-server-nvlink-0", "k3infra:index:ModelServer"),
        ("k3infra:index:PlacementCheck", "k3-placement", None),
        ("kubernetes:batch/v1:Job", "k3-placement-job", "k3infra:index:PlacementCheck"),
        ("kubernetes:core/v1:ConfigMap", "k3-placement-code", "k3infra:index:PlacementCheck"),
        ("kubernetes:core/v1:ServiceAccount", "k3-placement-account", "k3infra:index:PlacementCheck"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-placement-network-policy", "k3infra:index:PlacementCheck"),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "k3-placement-role", "k3infra:index:PlacementCheck"),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "k3-placement-binding",
         "k3infra:index:PlacementCheck"),
        *SERVING_CORE,
    ]
    p = plan("kubernetes-gb300-nvl72", *KEYS)
    s = p.config.sizing.layout
    assert (s.tensor_parallel, s.pipeline_parallel, str(s.mode)) == (8, 1, "multi-node-nvlink")


def _unwrap(p: Any, type_: str, name: str) -> dict[str, Any]:
    return offline.unwrap(p.recording.one(type_, name).inputs)


def test_the_gb300_pods_claim_the_imex_channel_and_share_a_clique() -> None:
    p = plan("kubernetes-gb300-nvl72", *KEYS)
    lws = _unwrap(p, "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "k3-server-workload")
    for role in ("leaderTemplate", "workerTemplate"):
        pod = lws["spec"]["leaderWorkerTemplate"][role]["spec"]
        assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "nvidia.com/gpu.clique"
        assert pod["resourceClaims"] == [{"name": "nvlink-channel", "resourceClaimTemplateName": "k3-server-nvlink-0-channel"}]
        assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    placement = _unwrap(p, "kubernetes:batch/v1:Job", "k3-placement-job")
    assert "nvidia.com/gpu.clique" in json.dumps(placement)


def test_the_streamer_reads_the_s3_compatible_store_with_keys_from_one_secret() -> None:
    """vLLM 0.33.0 runai_streamer_loader copies AWS_ENDPOINT_URL into RUNAI_STREAMER_S3_ENDPOINT; path-style needs
    RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0 (runai-model-streamer docs/src/env-vars.md)."""
    p = plan("kubernetes-b300", *KEYS)
    dep = _unwrap(p, "kubernetes:apps/v1:Deployment", "k3-server-workload")
    pod = dep["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["containers"][0]["env"]}
    assert env["K3_MODEL"] == "s3://kimi-k3-weights/models/moonshotai/Kimi-K3"
    assert env["AWS_ENDPOINT_URL"] == "http://minio.minio.svc.cluster.local:9000"
    assert env["RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING"] == "0"
    ref = {"secretKeyRef": {"name": "k3-store-credentials", "key": "AWS_SECRET_ACCESS_KEY"}}
    assert env["AWS_SECRET_ACCESS_KEY"] == ref
    secret = p.recording.one("kubernetes:core/v1:Secret", "k3-store-credentials")
    assert "SENTINEL0secret" in json.dumps(offline.unwrap(secret.inputs))
    assert "SENTINEL0secret" not in json.dumps(offline.plain(secret.inputs))
    sync = _unwrap(p, "kubernetes:batch/v1:Job", "k3-sync-job")
    (copy,) = sync["spec"]["template"]["spec"]["containers"]
    cenv = {e["name"]: e.get("value", e.get("valueFrom")) for e in copy["env"]}
    assert json.loads(cenv["K3_COPY_STORAGE_OPTIONS"]) == {
        "client_kwargs": {"region_name": "us-east-1"}, "config_kwargs": {"s3": {"addressing_style": "path"}},
        "endpoint_url": "http://minio.minio.svc.cluster.local:9000"}
    assert cenv["AWS_ACCESS_KEY_ID"] == {"secretKeyRef": {"name": "k3-store-credentials", "key": "AWS_ACCESS_KEY_ID"}}
    # The sync writes exactly where the clouds' syncs write: the same copier, the same destination layout.
    assert "kimi-k3-weights/models/moonshotai/Kimi-K3" in json.dumps(copy["args"])
    assert pod["serviceAccountName"] == "k3-server"


def test_a_persistent_volume_is_claimed_read_only_and_a_node_path_needs_privileged() -> None:
    pv = plan("kubernetes-b300", "kubernetes.storage={type: pvc, volume: kimi-k3-weights}", "weights.bucket=null",
              "weights.sync=false")
    claim = _unwrap(pv, "kubernetes:core/v1:PersistentVolumeClaim", "k3-server-weights-claim")
    assert claim["spec"]["volumeName"] == "kimi-k3-weights" and claim["spec"]["accessModes"] == ["ReadOnlyMany"]
    pod = _unwrap(pv, "kubernetes:apps/v1:Deployment", "k3-server-workload")["spec"]["template"]["spec"]
    assert {"name": "weights", "persistentVolumeClaim": {"claimName": "k3-server-weights", "readOnly": True}} in pod["volumes"]
    assert pod["containers"][0]["env"][0] == {"name": "K3_MODEL", "value": "/mnt/models/models/moonshotai/Kimi-K3"}
    assert not pv.recording.by_type("kubernetes:core/v1:Secret")
    host = plan("kubernetes-b300", "kubernetes.storage={type: hostPath, path: /data/models}", "weights.bucket=null",
                "weights.sync=false")
    pod = _unwrap(host, "kubernetes:apps/v1:Deployment", "k3-server-workload")["spec"]["template"]["spec"]
    assert {"name": "weights", "hostPath": {"path": "/data/models", "type": "Directory"}} in pod["volumes"]
    ns = _unwrap(host, "kubernetes:core/v1:Namespace", "k3-namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_the_stack_states_its_own_nodes_and_sizing_and_requests_follow() -> None:
    """A 4-GPU H200 server described by the hgx-h200 shape and the stack's own figures."""
    p = plan("kubernetes-b300", *KEYS, "accelerator=hgx-h200", "kubernetes.gpuNodes={gpusPerNode: 4, vcpus: 64, "
             "hostMemoryGib: 1024, nodeSelector: {gpu: h200-nvl}, tolerations: [], gpuResource: nvidia.com/gpu}")
    a, s = p.config.accelerator, p.config.sizing
    assert (a.gpus_per_node, a.nvlink_domain_gpus, a.vcpus, a.gpu_architecture) == (4, 4, 64, "hopper")
    assert a.sources["gpus_per_node"] == "stated in the stack (kubernetes.gpuNodes.gpusPerNode)"
    assert (s.nodes, s.layout.tensor_parallel, s.layout.pipeline_parallel) == (4, 4, 4)
    lws = _unwrap(p, "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "k3-server-workload")
    pod = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    assert pod["nodeSelector"] == {"gpu": "h200-nvl"}
    assert "tolerations" not in pod
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": "54", "memory": "870Gi", "nvidia.com/gpu": "4"}


def test_install_installs_and_prometheus_operator_present_adds_a_pod_monitor() -> None:
    p = plan("kubernetes-gb300-nvl72", *KEYS, "kubernetes.devicePlugin=install", "kubernetes.draDriver=install",
             "kubernetes.prometheusOperator=present", "kubernetes.podMonitorLabels={release: kps}")
    names = {(r.type, r.name) for r in p.recording.resources}
    assert {("kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-device-plugin"),
            ("kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-dra")} <= names
    monitor = _unwrap(p, "kubernetes:monitoring.coreos.com/v1:PodMonitor", "k3-monitoring-server-pod-monitor")
    assert monitor["metadata"]["labels"]["release"] == "kps" and monitor["metadata"]["namespace"] == "kimi-k3"
    policy = _unwrap(p, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy")
    assert "monitoring" in json.dumps(policy)
    dra = _unwrap(p, "kubernetes:helm.sh/v4:Chart", "k3-gpu-nvidia-dra")
    assert dra["values"]["nvidiaDriverRoot"] == "/" and dra["values"]["resources"]["computeDomains"]["enabled"]


def test_behind_the_cluster_s_gateway_the_picker_is_scraped_too() -> None:
    """issue 38: the existing cluster's own Gateway API class, and its prometheus-operator scraping the picker."""
    p = plan("kubernetes-gb300-nvl72", *KEYS, "kubernetes.prometheusOperator=present",
             "kubernetes.podMonitorLabels={release: kps}", "endpoint.gateway=true", "kubernetes.gatewayClass=istio")
    monitor = _unwrap(p, "kubernetes:monitoring.coreos.com/v1:PodMonitor", "k3-monitoring-picker-pod-monitor")
    assert monitor["metadata"]["labels"]["release"] == "kps"
    assert monitor["spec"] == {"selector": {"matchLabels": {"llm-d-router-gateway": "k3-gateway-epp"}},
                               "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}]}
    gateway = _unwrap(p, "kubernetes:gateway.networking.k8s.io/v1:Gateway", "k3-gateway-gateway")
    assert gateway["spec"] == {"gatewayClassName": "istio", "listeners": [
        {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "Same"}}}]}
    installed = {r.name for r in p.recording.resources if "agentgateway" in r.name or r.name.endswith("-crds")}
    assert installed == set(), "a declared class is the cluster's own: nothing is installed"


def test_without_a_class_the_stack_installs_agentgateway_unless_the_cluster_has_gateway_api() -> None:
    """The installed gateway's class; preview refuses to install Gateway API where something else already did."""
    p = plan("kubernetes-b300", *KEYS)
    ref = {"group": "agentgateway.dev", "kind": "AgentgatewayParameters", "name": "k3-gateway-proxy"}
    assert installed_gateway_spec(p.recording)["infrastructure"] == {"parametersRef": ref}
    params = _unwrap(p, "kubernetes:agentgateway.dev/v1alpha1:AgentgatewayParameters", "k3-gateway-proxy")
    assert params["spec"] == {"service": {"spec": {"type": "ClusterIP"}}}, "internal, and no client ranges: ClusterIP"
    public = plan("kubernetes-b300", *KEYS, "endpoint.exposure=public", "endpoint.allowedCidrs=[203.0.113.0/24]",
                  "apiKey=sk-test")
    assert installed_gateway_spec(public.recording)["infrastructure"] == {"parametersRef": ref}
    assert _unwrap(public, "kubernetes:agentgateway.dev/v1alpha1:AgentgatewayParameters", "k3-gateway-proxy")[
        "spec"] == {"service": {"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                                         "loadBalancerSourceRanges": ["203.0.113.0/24"]}}}, "public: the allowed CIDRs"
    proxies = _unwrap(public, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-gateway-proxy-network-policy")
    assert proxies["spec"]["podSelector"] == {"matchLabels": {"gateway.networking.k8s.io/gateway-name": "k3-gateway"}}
    assert [[p.get("ipBlock", {}).get("cidr") for p in r["from"]] for r in proxies["spec"]["ingress"]] == [
        [None], ["203.0.113.0/24"]]
    controller = _unwrap(p, "kubernetes:helm.sh/v4:Chart", "k3-gateway-agentgateway")
    assert (controller["chart"], controller["version"], controller["namespace"], controller["values"]) == (
        "oci://cr.agentgateway.dev/charts/agentgateway", "v1.0.0", "agentgateway-system",
        {"inferenceExtension": {"enabled": True}})
    theirs = {**{k: v for k, v in GB300_CRDS.items() if v},
              "gateways.gateway.networking.k8s.io": crd("gateways.gateway.networking.k8s.io", "v1")}
    found = _found(FakeCluster(theirs, TWO_TRAYS))
    assert [f.split(": ")[0] for f in found] == ["k3infra:kubernetes.gatewayClass"]
    assert "installed by something other than Pulumi" in found[0]


def test_the_plan_says_the_presence_check_is_skipped_offline_and_nothing_is_deleted() -> None:
    p = plan("kubernetes-gb300-nvl72", *KEYS)
    said = " ".join(p.warnings)
    assert "offline plan: the cluster is not read" in said
    assert "computedomains.resource.nvidia.com (present)" in said and "leaderworkersets" in said
    assert p.recording.outputs["clusterComponents"]["presence"] == {"checked": False}
    notes = " ".join(p.recording.outputs["billingAfterDestroy"])
    assert "stay in s3://kimi-k3-weights/models/moonshotai/Kimi-K3" in notes


# --------------------------------------------------------------------------------------- bad combinations

BAD = [
    ("no kubeconfig", ("kubernetes.kubeconfigPath=null",), {"k3infra:kubeconfig"}),
    ("two kubeconfigs", ("kubeconfig='kind: Config'",), {"k3infra:kubernetes.kubeconfigPath"}),
    ("s3 without endpoint", ("kubernetes.storage={type: s3}",), {"k3infra:kubernetes.storage.endpoint"}),
    ("pvc without volume, synced", ("kubernetes.storage={type: pvc}", "weights.bucket=null"),
     {"k3infra:kubernetes.storage.volume", "k3infra:weights.sync"}),
    ("bucket with a node path", ("kubernetes.storage={type: hostPath, path: /data}", "weights.sync=false"),
     {"k3infra:weights.bucket"}),
    ("endpoint with a pvc", ("kubernetes.storage={type: pvc, volume: w, endpoint: 'http://x:9000'}",
                             "weights.bucket=null", "weights.sync=false"), {"k3infra:kubernetes.storage.endpoint"}),
    ("a cloud machine type", ("accelerator=p6-b300.48xlarge",), {"k3infra:accelerator"}),
    ("a cloud capacity", ("capacity={type: on-demand}",), {"k3infra:capacity.type"}),
    ("fuse loader", ("weights.loader=fuse",), {"k3infra:weights.loader"}),
    ("prometheus-operator install", ("kubernetes.prometheusOperator=install",),
     {"k3infra:kubernetes.prometheusOperator"}),
    ("lws absent", ("kubernetes.lws=absent",), {"k3infra:kubernetes.lws"}),
    ("cluster version", ("cluster.kubernetesVersion=1.34",), {"k3infra:cluster.kubernetesVersion"}),
    ("retention off", ("weights.retainOnDestroy=false",), {"k3infra:weights.retainOnDestroy"}),
    ("equal toleration without value", ("kubernetes.gpuNodes.tolerations=[{key: gpu, operator: Equal}]",),
     {"k3infra:kubernetes.gpuNodes.tolerations[0].value"}),
    ("a number label", ("kubernetes.gpuNodes.nodeSelector={gpu: 1}",), {"k3infra:kubernetes.gpuNodes.nodeSelector"}),
    ("gcp settings", ("gcp.releaseChannel=RAPID",), {"k3infra:gcp"}),
    ("an NVLink domain of part nodes", ("kubernetes.gpuNodes.nvlinkDomainGpus=12",),
     {"k3infra:kubernetes.gpuNodes.nvlinkDomainGpus"}),
    ("too few stated nodes", ("kubernetes.gpuNodes.gpusPerNode=4", "nodes=1"), {"k3infra:nodes"}),
]


@pytest.mark.parametrize("why, sets, keys", BAD, ids=[b[0] for b in BAD])
def test_each_bad_combination_is_one_problem_with_its_key(why: str, sets: tuple[str, ...], keys: set[str]) -> None:
    with pytest.raises(ConfigError) as e:
        plan("kubernetes-b300", *sets)
    assert {p.key for p in e.value.problems} == keys, e.value.render()


def test_every_problem_at_once() -> None:
    with pytest.raises(ConfigError) as e:
        plan("kubernetes-b300", "kubernetes.kubeconfigPath=null", "kubernetes.storage={type: s3}",
             "kubernetes.prometheusOperator=install", "weights.loader=volume")
    assert {p.key for p in e.value.problems} == {"k3infra:kubeconfig", "k3infra:kubernetes.storage.endpoint",
                                                  "k3infra:kubernetes.prometheusOperator", "k3infra:weights.loader"}


def test_existing_cluster_keys_are_refused_on_a_cloud_and_the_volume_loader_too() -> None:
    with pytest.raises(ConfigError) as e:
        plan("aws-eks", "s3AccessKeyId=x", "weights.loader=volume")
    assert {p.key for p in e.value.problems} == {"k3infra:s3AccessKeyId", "k3infra:weights.loader"}


def test_a_real_run_stops_without_the_s3_keys_and_the_plan_says_so() -> None:
    def raw(*sets: str) -> dict[str, Any]:
        return {k: getattr(v, "value", v) for k, v in planning.load("kubernetes-b300", sets, root=ROOT).config.items()}

    with pytest.raises(ConfigError) as e:
        parse_config(raw(), stack="kubernetes-b300", real_run=True)
    assert {p.key for p in e.value.problems} == {"k3infra:s3AccessKeyId", "k3infra:s3SecretAccessKey"}
    parse_config(raw(*KEYS), stack="kubernetes-b300", real_run=True)  # both set: nothing to say
    assert [w for w in plan("kubernetes-b300").warnings if "`pulumi up` stops until it is set" in w] == [
        f"k3infra:{n} is not set: the copier and the server read the store with it: `pulumi up` stops until it is set "
        f"(a secret set with `pulumi config set --secret {n} ...`)" for n in ("s3AccessKeyId", "s3SecretAccessKey")]


# ---------------------------------------------------------------------------------------- presence at preview


def crd(plural: str, *versions: str) -> dict[str, Any]:
    return {"metadata": {"name": plural}, "spec": {"versions": [{"name": v, "served": True} for v in versions]}}


def gpu_node(name: str, gpus: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"nvidia.com/gpu": gpus}}}


class FakeCluster:
    """What the API server answers: CRDs by name, and the GPU nodes."""

    def __init__(self, crds: dict[str, dict[str, Any]], nodes: list[dict[str, Any]]) -> None:
        self.crds, self.nodes, self.asked = crds, nodes, []

    def get(self, path: str, query: Any = None) -> Any:
        self.asked.append((path, query))
        if path == "/api/v1/nodes":
            return {"items": self.nodes}
        return self.crds.get(path.rsplit("/", 1)[-1])


GB300_CRDS = {"leaderworkersets.leaderworkerset.x-k8s.io": None,
              "computedomains.resource.nvidia.com": crd("computedomains.resource.nvidia.com", "v1beta1")}
TWO_TRAYS = [gpu_node("tray-1", "4"), gpu_node("tray-2", "4")]


def _found(cluster: FakeCluster, *sets: str) -> list[str]:
    try:
        presence.check(plan("kubernetes-gb300-nvl72", *KEYS, *sets).config, cluster)
    except ConfigError as e:
        return [f"{p.key}: {p.reason}" for p in e.problems]
    return []


def test_present_components_that_are_there_pass_and_are_reported() -> None:
    cluster = FakeCluster({k: v for k, v in GB300_CRDS.items() if v}, TWO_TRAYS)
    cfg = plan("kubernetes-gb300-nvl72", *KEYS).config
    assert presence.check(cfg, cluster) == {
        "checked": True, "gpuNodesAdvertising": 2,
        "apis": ["computedomains.resource.nvidia.com resource.nvidia.com/v1beta1: present",
                 "gateways.gateway.networking.k8s.io gateway.networking.k8s.io/v1: install",
                 "inferencepools.inference.networking.k8s.io inference.networking.k8s.io/v1: install",
                 "leaderworkersets.leaderworkerset.x-k8s.io leaderworkerset.x-k8s.io/v1: install"]}
    assert ("/api/v1/nodes", {"labelSelector": "nvidia.com/gpu.present=true"}) in cluster.asked


def test_a_present_component_that_is_missing_or_serves_another_version_stops_preview() -> None:
    missing = FakeCluster({}, TWO_TRAYS)
    assert _found(missing) == ["k3infra:kubernetes.draDriver: the cluster does not serve resource.nvidia.com/v1beta1 "
                               "computedomains.resource.nvidia.com: the NVIDIA DRA driver (ComputeDomains) is not there"]
    old = FakeCluster({"computedomains.resource.nvidia.com": crd("computedomains.resource.nvidia.com", "v1alpha1")},
                      TWO_TRAYS)
    assert _found(old) == ["k3infra:kubernetes.draDriver: the cluster's computedomains.resource.nvidia.com CRD does "
                           "not serve v1beta1: the NVIDIA DRA driver (ComputeDomains) is not there"]


def test_installing_what_something_else_installed_stops_preview_and_a_second_run_passes() -> None:
    lws = crd("leaderworkersets.leaderworkerset.x-k8s.io", "v1")
    crds = {k: v for k, v in GB300_CRDS.items() if v}
    cluster = FakeCluster({**crds, "leaderworkersets.leaderworkerset.x-k8s.io": lws}, TWO_TRAYS)
    assert [f.split(":")[1] for f in _found(cluster)] == ["kubernetes.lws"]
    assert _found(cluster, "kubernetes.lws=present") == []
    # The CRD this stack's own chart applied on the first `pulumi up` (server-side apply's field manager).
    ours = {**lws, "metadata": {**lws["metadata"], "managedFields": [{"manager": "pulumi-kubernetes-5f2c8a1b"}]}}
    assert _found(FakeCluster({**crds, "leaderworkersets.leaderworkerset.x-k8s.io": ours}, TWO_TRAYS)) == []
    # The device plugin this stack installs advertises the GPUs on the second run: not a conflict.
    assert _found(FakeCluster({**crds}, TWO_TRAYS), "kubernetes.devicePlugin=install") == []


def test_the_device_plugin_present_needs_enough_nodes_advertising_the_gpus() -> None:
    crds = {k: v for k, v in GB300_CRDS.items() if v}
    one = FakeCluster(crds, [gpu_node("tray-1", "4"), gpu_node("tray-2", "0")])
    assert _found(one) == ["k3infra:kubernetes.devicePlugin: 2 node(s) match kubernetes.gpuNodes.nodeSelector "
                           "nvidia.com/gpu.present=true and 1 advertise 4 nvidia.com/gpu; the stack needs 2"]
    x86 = {**gpu_node("tray-2", "4"), "status": {"allocatable": {"nvidia.com/gpu": "4"},
                                                "nodeInfo": {"architecture": "amd64"}}}
    assert _found(FakeCluster(crds, [gpu_node("tray-1", "4"), x86])) == [
        "k3infra:accelerator: gb300-nvl72 nodes are arm64, and selected node(s) tray-2 are not "
        "(status.nodeInfo.architecture)"]


def test_prometheus_operator_and_the_gateway_are_checked_when_the_stack_relies_on_them() -> None:
    cluster = FakeCluster({k: v for k, v in GB300_CRDS.items() if v}, TWO_TRAYS)
    found = _found(cluster, "kubernetes.prometheusOperator=present", "endpoint.gateway=true",
                   "kubernetes.gatewayClass=istio")
    assert [f.split(":")[1] for f in found] == ["kubernetes.gatewayClass", "kubernetes.gatewayClass",
                                               "kubernetes.prometheusOperator"]


class _Api(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.headers.get("Authorization") != "Bearer t0ken":
            self.send_response(401)
            self.end_headers()
            return
        body = {"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/computedomains.resource.nvidia.com":
                crd("computedomains.resource.nvidia.com", "v1beta1")}.get(self.path.split("?")[0])
        if self.path.startswith("/api/v1/nodes?labelSelector=nvidia.com%2Fgpu.present%3Dtrue"):
            body = {"items": TWO_TRAYS}
        self.send_response(200 if body else 404)
        self.end_headers()
        if body:
            self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args: Any) -> None:
        pass


def test_the_check_reads_a_real_http_api_through_a_kubeconfig(tmp_path: Any) -> None:
    """The kubeconfig client against a loopback server: its token, its paths, a 404 read as absent."""
    server = HTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "lab",
            "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u"}}],
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
            "users": [{"name": "u", "user": {"token": "t0ken"}}]}))
        api = client(str(kubeconfig), is_path=True)
        cfg = plan("kubernetes-gb300-nvl72", *KEYS, "kubernetes.lws=install").config
        assert presence.check(cfg, api)["gpuNodesAdvertising"] == 2
        with pytest.raises(KubeconfigError, match="has no context 'other'"):
            client(str(kubeconfig), is_path=True, context="other")
        wrong = client(json.dumps({**json.loads(kubeconfig.read_text()),
                                   "users": [{"name": "u", "user": {"token": "nope"}}]}), is_path=False)
        with pytest.raises(ConfigError, match="HTTP 401"):
            presence.check(cfg, wrong)
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------------------------------ goldens


@pytest.mark.parametrize("stack", STACKS)
def test_plan_matches_its_golden_file(stack: str) -> None:
    path = GOLDEN / f"{stack}.json"
    text = json.dumps(plan(stack).to_json(), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("K3INFRA_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.is_file() and text == path.read_text(), f"the {stack} plan changed: review, then regenerate"


def test_a_stack_file_the_pulumi_cli_rewrote_plans_as_before(tmp_path) -> None:
    # `pulumi config set` writes every top-level scalar back quoted (the first real run of this stack turned
    # `k3infra:nodes: 2` into "2"); the engine hands the program strings either way, and so must the plan.
    text = (ROOT / "stacks" / "Pulumi.kubernetes-gb300-nvl72.yaml").read_text()
    assert "  k3infra:nodes: 2\n" in text
    rewritten = tmp_path / "Pulumi.kubernetes-gb300-nvl72.yaml"
    rewritten.write_text(text.replace("  k3infra:nodes: 2\n", '  k3infra:nodes: "2"\n')
                         .replace("  k3infra:engineVersion: 0.33.0\n", '  k3infra:engineVersion: "0.33.0"\n'))
    quoted = planning.plan(str(rewritten))
    assert quoted.config.nodes == 2
    assert quoted.recording.outputs == plan("kubernetes-gb300-nvl72").recording.outputs

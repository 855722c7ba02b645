"""Existing-cluster rules (``cloud: kubernetes``) beyond the cloud-neutral ones.

k3infra creates no cluster, node pool or bucket here: it needs a way to reach the cluster (a kubeconfig secret or
path), a store that holds or receives the weights (an S3-compatible bucket with its endpoint and access keys, a
PVC, or a node path), and to know what the cluster already runs. Every rule below reports its key, the value given
and what is allowed; the preview-time checks of what is ``present`` are in ``k3infra.kubernetes.presence``.
"""

from typing import Any, Mapping

from ...catalog import Accelerator, AddonState, WeightSource
from ...sizing import Sizing
from ..keys import CLIQUE_LABEL, GPU_PRESENT_SELECTOR, GPU_TAINT_TOLERATION
from ..model import KubernetesConfig
from ..problems import Problems
from .common import CheckContext, given

K = "k3infra:"
KK = K + "kubernetes."

CLUSTER_KEYS = ("kubernetesVersion", "deletionProtection", "systemNodeType")
"""``cluster.*`` keys that describe a cluster k3infra creates, which an existing cluster is not."""


def check(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    """Report existing-cluster problems in ``ctx``."""
    v = ctx.values
    k = v.get("kubernetes")
    if not isinstance(k, dict):
        return
    _kubeconfig(ctx, k, p)
    _storage(ctx, k, p, warnings)
    _addons(ctx, k, p, warnings)
    for name in CLUSTER_KEYS:
        if given(ctx, "cluster", name):
            p.add(f"{K}cluster.{name}", "describes a cluster k3infra creates; an existing cluster is the "
                  "kubeconfig's", (v.get("cluster") or {}).get(name), "unset")
    nodes = k.get("gpuNodes")
    if isinstance(nodes, dict):
        for i, t in enumerate(nodes.get("tolerations") or ()):
            if isinstance(t, dict) and t.get("operator") == "Equal" and not t.get("value"):
                p.add(f"{KK}gpuNodes.tolerations[{i}].value", "is required with operator Equal", None,
                      "the taint's value")
        label = nodes.get("topologyLabel")
        spans = ctx.sizing is not None and ctx.sizing.layout.tp_spans_nodes
        if isinstance(label, str) and ctx.sizing is not None and not spans:
            warnings.append(f"kubernetes.gpuNodes.topologyLabel {label} is not used: every replica's tensor "
                            "parallelism stays inside one node")


def _kubeconfig(ctx: CheckContext, k: dict[str, Any], p: Problems) -> None:
    secret, path = ctx.values.get("kubeconfig"), k.get("kubeconfigPath")
    if secret is None and path is None:
        p.add(K + "kubeconfig", "is required on cloud kubernetes (or kubernetes.kubeconfigPath): it names the cluster",
              None, "`pulumi config set --secret kubeconfig < ~/.kube/config`, or kubernetes.kubeconfigPath")
    elif isinstance(secret, str) and isinstance(path, str):
        p.add(KK + "kubeconfigPath", "and k3infra:kubeconfig both name a cluster; give one", path,
              "unset (the kubeconfig secret is used), or unset k3infra:kubeconfig")


def _storage(ctx: CheckContext, k: dict[str, Any], p: Problems, warnings: list[str]) -> None:
    s = k.get("storage")
    if not isinstance(s, dict) or not isinstance(s.get("type"), WeightSource):
        return
    kind: WeightSource = s["type"]
    key = KK + "storage."
    fields = {WeightSource.S3: ("endpoint", "region", "virtualAddressing"), WeightSource.PVC: ("volume",),
              WeightSource.HOST_PATH: ("path",)}
    for name in ("endpoint", "volume", "path"):
        if name not in fields[kind] and s.get(name) is not None:
            users = [str(t) for t, f in fields.items() if name in f]
            p.add(key + name, f"applies with storage type {' or '.join(users)}, not {kind}", s[name], "unset")
    required = {WeightSource.S3: "endpoint", WeightSource.PVC: "volume", WeightSource.HOST_PATH: "path"}[kind]
    if s.get(required) is None:
        p.add(key + required, f"is required with storage type {kind}", None,
              {"endpoint": "the store's URL such as http://minio.minio.svc.cluster.local:9000",
               "volume": "a PersistentVolume that holds the model",
               "path": "an absolute directory on every GPU node"}[required])
    v = ctx.values
    keys = ("s3AccessKeyId", "s3SecretAccessKey")
    if kind == WeightSource.S3:
        for name in keys:
            if v.get(name) is None:  # stack files carry no secrets: a real run needs them, the plan warns
                p.add_before_up(K + name, "is not set: the copier and the server read the store with it", None,
                                f"a secret set with `pulumi config set --secret {name} ...`")
    else:
        for name in keys:
            if v.get(name) is not None:
                p.add(K + name, f"applies with storage type s3, not {kind}", "[secret]", "unset")
        if ctx.weights is not None and ctx.weights.sync:
            p.add(K + "weights.sync", f"copies into an S3-compatible bucket; storage type {kind} must hold the "
                  "model already", True, "false, or kubernetes.storage.type s3")
    w = v.get("weights")
    if isinstance(w, dict) and w.get("retainOnDestroy") is False:
        p.add(K + "weights.retainOnDestroy", "k3infra creates no bucket or volume on an existing cluster, so "
              "`pulumi destroy` deletes no weights either way", False, "true (the default)")
    endpoint = s.get("endpoint")
    if isinstance(endpoint, str) and endpoint.startswith("http://"):
        warnings.append(f"kubernetes.storage.endpoint {endpoint} is plain HTTP: the access keys sign each request "
                        "but the weights cross the network unencrypted; use https:// outside a trusted cluster "
                        "network")


def _addons(ctx: CheckContext, k: dict[str, Any], p: Problems, warnings: list[str]) -> None:
    for name, allowed in (("lws", (AddonState.INSTALL, AddonState.PRESENT)),
                          ("devicePlugin", (AddonState.INSTALL, AddonState.PRESENT)),
                          ("draDriver", (AddonState.INSTALL, AddonState.PRESENT)),
                          ("prometheusOperator", (AddonState.PRESENT, AddonState.ABSENT))):
        value = k.get(name)
        if isinstance(value, AddonState) and value not in allowed:
            why = ("k3infra does not install prometheus-operator (a cluster's monitoring stack is its own)"
                   if name == "prometheusOperator" else f"the server cannot run without {name}")
            p.add(KK + name, why, str(value), " or ".join(allowed))
    mnnvl = ctx.sizing is not None and ctx.sizing.layout.multi_node_nvlink
    if k.get("draDriver") is not None and ctx.sizing is not None and not mnnvl:
        warnings.append(f"kubernetes.draDriver {k['draDriver']} is not used: no replica's tensor parallelism spans "
                        "nodes over NVLink, so no ComputeDomain is needed")
    endpoint = ctx.endpoint
    gateway = endpoint is not None and endpoint.gateway
    if k.get("gatewayClass") is not None and endpoint is not None and not gateway:
        warnings.append("kubernetes.gatewayClass is ignored: endpoint.gateway is false")
    o = ctx.values.get("observability")
    if isinstance(o, dict) and o.get("enabled") and k.get("prometheusOperator") == AddonState.ABSENT:
        warnings.append("kubernetes.prometheusOperator is absent: k3infra creates no scrape objects and no alert "
                        "rules; the server still serves /metrics on its port (set prometheusOperator: present where "
                        "the cluster runs prometheus-operator)")


def default_topology_label(spans_nvlink_domain: bool) -> str | None:
    """The NVLink-domain label of GPU feature discovery where NVLink spans nodes, else none."""
    return CLIQUE_LABEL if spans_nvlink_domain else None


def kubernetes_storage(v: Mapping[str, Any]) -> dict[str, Any]:
    """``kubernetes.storage`` after its type checks (empty where they failed)."""
    k = v.get("kubernetes")
    storage = k.get("storage") if isinstance(k, dict) else None
    return storage if isinstance(storage, dict) else {}


def settings(v: dict[str, Any], accel: Accelerator | None, sizing: Sizing) -> KubernetesConfig:
    """The typed ``k3infra:kubernetes`` section and the existing cluster's secrets (the DRA driver only where a
    replica spans nodes over NVLink)."""
    k = v["kubernetes"]
    nodes, s = k["gpuNodes"], k["storage"]
    spans = accel is not None and accel.nvlink_spans_nodes
    tolerations = nodes.get("tolerations")
    return KubernetesConfig(
        kubeconfig=v.get("kubeconfig"), kubeconfig_path=k.get("kubeconfigPath"), context=k.get("context"),
        node_selector=dict(nodes.get("nodeSelector") or GPU_PRESENT_SELECTOR),
        tolerations=tuple({kk: vv for kk, vv in t.items() if vv is not None} for t in tolerations)
        if tolerations is not None else (dict(GPU_TAINT_TOLERATION),),
        gpu_resource=nodes["gpuResource"], topology_label=nodes.get("topologyLabel") or default_topology_label(spans),
        cpu_request=nodes.get("cpuRequest"), memory_request=nodes.get("memoryRequest"), driver_root=nodes["driverRoot"],
        storage=s["type"], s3_endpoint=s.get("endpoint"), s3_region=s["region"],
        virtual_addressing=bool(s["virtualAddressing"]), volume=s.get("volume"), host_path=s.get("path"),
        s3_access_key_id=v.get("s3AccessKeyId"), s3_secret_access_key=v.get("s3SecretAccessKey"),
        lws=k["lws"], device_plugin=k["devicePlugin"],
        dra_driver=(k.get("draDriver") or AddonState.INSTALL) if sizing.layout.multi_node_nvlink else None,
        prometheus_operator=k["prometheusOperator"], prometheus_namespace=k["prometheusNamespace"],
        pod_monitor_labels=dict(k.get("podMonitorLabels") or {}), gateway_class=k.get("gatewayClass"),
    )

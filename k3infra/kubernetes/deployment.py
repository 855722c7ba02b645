"""Existing cluster (``cloud: kubernetes``): the serving layer on a cluster given by a kubeconfig, no cloud provider.

In order: the stack's secrets are checked (the S3 keys), the cluster is read at preview to check what the stack says
it runs (``presence``; skipped offline, and said), the Kubernetes provider is built from the kubeconfig, what the
stack says to install is installed (the NVIDIA device plugin with GPU feature discovery, the NVIDIA DRA driver;
the LeaderWorkerSet controller through ``serve``), and ``serve`` deploys the namespace, identities, the store's
credentials Secret, the weight sync, the placement check, ``ModelServer``, the gateway and the verify Job. Where
prometheus-operator is present, a PodMonitor scrapes the server.

Nothing here creates a cluster, a node or a bucket, so ``pulumi destroy`` removes only what the stack added to the
cluster; the weights stay where they are.
"""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .. import names, offline
from ..catalog import AddonState, WeightSource
from ..config import ConfigError, Problem, StackConfig
from ..result import DeploymentResult
from ..serving import gpu_addons
from ..serving.pods import node_requests
from ..serving.contract import GpuPool, LoadBalancerSettings, MetricsAccess, Toleration
from ..observability.verify_job import with_checklist
from ..serving.status_access import with_status_access
from ..serving.stack import serve
from . import presence
from .autoscaling import scaler
from .kubeconfig import client
from .monitoring import observe
from .store import weight_store


def read_cluster(cfg: StackConfig) -> tuple[dict[str, Any], list[str]]:
    """The preview-time check of what the cluster runs (``presence``); offline, what it would check."""
    k = cfg.kubernetes
    assert k is not None
    if offline.active():
        return {"checked": False}, [presence.skipped(cfg)]
    source = k.kubeconfig or k.kubeconfig_path or ""
    try:
        reader = client(source, is_path=k.kubeconfig is None, context=k.context)
    except Exception as e:  # noqa: BLE001 (any unreadable kubeconfig is the user's to fix, said with its key)
        raise ConfigError([Problem(key=presence.kubeconfig_key(cfg), reason=f"cannot be used: {e}",
                                   given="[secret]" if k.kubeconfig else str(k.kubeconfig_path),
                                   allowed="a kubeconfig whose context reaches the cluster's API server")],
                          f"stack {cfg.stack}") from e
    return presence.check(cfg, reader), []


def provider(cfg: StackConfig) -> k8s.Provider:
    """The Kubernetes provider of the cluster: the kubeconfig secret's contents, or the file's path as given (the
    provider expands a leading ``~/`` itself, pulumi-kubernetes provider/pkg/provider/util.go
    ``parseKubeconfigString``, so the plan does not depend on who runs it)."""
    k = cfg.kubernetes
    assert k is not None
    kubeconfig: pulumi.Input[str] = pulumi.Output.secret(k.kubeconfig) if k.kubeconfig else k.kubeconfig_path or ""
    return k8s.Provider(f"{names.PREFIX}-cluster", kubeconfig=kubeconfig, context=k.context)


def gpu_pool(cfg: StackConfig) -> GpuPool:
    """The GPU nodes as serving sees them."""
    k = cfg.kubernetes
    assert k is not None
    pool = GpuPool(
        node_selector=dict(k.node_selector),
        tolerations=[Toleration(**t) for t in k.tolerations],  # type: ignore[typeddict-item]
        gpus_per_node=cfg.accelerator.gpus_per_node,
        node_count=cfg.total_nodes,
        gpu_resource=k.gpu_resource,
    )
    # From the node as the stack states it (kubernetes.gpuNodes.vcpus...), not the catalog shape's.
    cpu, memory = node_requests(cfg.accelerator)
    pool["cpu_request"] = k.cpu_request or cpu
    pool["memory_request"] = k.memory_request or memory
    if k.dra_driver is not None:
        pool["compute_domains"] = True
    if k.topology_label and cfg.sizing.layout.tp_spans_nodes:
        pool["group_topology_label"] = k.topology_label
        pool["placement_advice"] = (f"label the nodes of one NVLink domain alike ({k.topology_label}: GPU feature "
                                    "discovery sets nvidia.com/gpu.clique from the fabric), or set "
                                    "kubernetes.gpuNodes.nodeSelector to nodes of one rack")
    return pool


def install_addons(cfg: StackConfig, pool: GpuPool, opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """What the stack says to install on the GPU nodes: the device plugin, the DRA driver."""
    k = cfg.kubernetes
    assert k is not None
    out: list[pulumi.Resource] = []
    if k.device_plugin == AddonState.INSTALL:
        # GPU feature discovery labels each node with nvidia.com/gpu.clique, which multi-node replicas are placed by.
        out.append(gpu_addons.nvidia_device_plugin(f"{names.GPU}-nvidia-device-plugin", tolerations=pool["tolerations"],
                                                   feature_discovery=True, opts=opts))
    if k.dra_driver == AddonState.INSTALL:
        out += gpu_addons.nvidia_dra_driver(f"{names.GPU}-nvidia-dra", driver_root=k.driver_root,
                                            node_selector=pool["node_selector"], tolerations=pool["tolerations"],
                                            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                                                depends_on=list(out))))
    return out


def load_balancer(cfg: StackConfig) -> LoadBalancerSettings:
    """An existing cluster's load balancers and gateways: internal is a ClusterIP Service; a public endpoint is a
    LoadBalancer Service restricted to endpoint.allowedCidrs (kube-proxy enforces loadBalancerSourceRanges); the
    gateway is the cluster's own class (``kubernetes.gatewayClass``) or, without one, agentgateway, which serving
    installs."""
    k = cfg.kubernetes
    assert k is not None
    lb = LoadBalancerSettings(internal_annotations={})
    if k.gateway_class:
        lb["internal_gateway_class"] = k.gateway_class
        lb["public_gateway_class"] = k.gateway_class
    else:
        lb["install_gateway"] = True
    return lb


def metrics_access(cfg: StackConfig) -> MetricsAccess | None:
    """Where prometheus-operator's Prometheus scrapes the server from."""
    k = cfg.kubernetes
    assert k is not None
    if k.prometheus_operator != AddonState.PRESENT or not cfg.observability.enabled:
        return None
    return MetricsAccess(namespaces=[k.prometheus_namespace])


def deploy(cfg: StackConfig) -> DeploymentResult:
    """Register the stack's resources on the existing cluster and say what they produce."""
    k = cfg.kubernetes
    assert k is not None, "a kubernetes stack has existing-cluster settings"
    found, warnings = read_cluster(cfg)
    cluster = provider(cfg)
    opts = pulumi.ResourceOptions(provider=cluster)
    pool = gpu_pool(cfg)
    addons = install_addons(cfg, pool, opts)
    store = weight_store(cfg)
    serving = with_checklist(cfg, serve(
        cfg, name=names.PREFIX, provider=cluster, pool=pool, store=store, lb=load_balancer(cfg), pool_resources=addons,
        identity_resources=[], install_lws=k.lws == AddonState.INSTALL, metrics=metrics_access(cfg)))
    serving = with_status_access(cfg, serving)
    scaler(cfg, serving, cluster)
    outputs: dict[str, pulumi.Input[object]] = {
        **serving.outputs(),
        **observe(cfg, names.PREFIX, serving, cluster),
        "modelUri": store["uri"],
        "gpuNodes": {"accelerator": cfg.accelerator.sku, "nodes": cfg.total_nodes,
                     "gpusPerNode": cfg.accelerator.gpus_per_node, "nodeSelector": dict(k.node_selector),
                     "gpuResource": k.gpu_resource, "topologyLabel": pool.get("group_topology_label")},
        "clusterComponents": {"lws": str(k.lws), "devicePlugin": str(k.device_plugin),
                              "draDriver": str(k.dra_driver) if k.dra_driver else None,
                              "prometheusOperator": str(k.prometheus_operator), "presence": found},
    }
    if k.storage == WeightSource.S3:
        outputs["bucketUri"] = f"s3://{cfg.weights.bucket}"
    # How `k3infra status` reaches the cluster (k3infra/status/outputs.py): the kubeconfig secret as given, or the
    # file's path (on the machine that runs `pulumi up`) and the context.
    if k.kubeconfig:
        outputs["kubeconfig"] = pulumi.Output.secret(k.kubeconfig)
    else:
        outputs["kubeconfigPath"] = k.kubeconfig_path or ""
    if k.context:
        outputs["kubeContext"] = k.context
    return DeploymentResult(outputs=outputs, warnings=tuple([*warnings, *serving.warnings]),
                            billing_after_destroy=tuple(billing_after_destroy(cfg)))


def billing_after_destroy(cfg: StackConfig) -> list[str]:
    """What stays after ``pulumi destroy``: the weights (k3infra created no store) and the cluster's own nodes."""
    k = cfg.kubernetes
    assert k is not None
    tb = cfg.model.weight_bytes / 1e12
    where = {WeightSource.S3: f"s3://{cfg.weights.bucket}/{cfg.weights.model_path(cfg.model.hf_id)} at "
                              f"{k.s3_endpoint}",
             WeightSource.PVC: f"PersistentVolume {k.volume}",
             WeightSource.HOST_PATH: f"{k.host_path} on the GPU nodes"}[k.storage]
    out = [f"the weights (~{tb:.2f} TB) stay in {where}: k3infra created no store there and `pulumi destroy` deletes "
           "nothing in it"]
    if k.storage == WeightSource.PVC:
        out[0] += (" (destroy deletes the server's claim; the volume is then Released and keeps the weights with "
                   "reclaim policy Retain; clear its claimRef to let the next `pulumi up` claim it again)")
    out.append(f"the cluster and its {cfg.total_nodes} GPU node(s) are yours: destroy removes only what the stack "
               "added (namespace, workloads, Secrets, the charts it installed)")
    return out

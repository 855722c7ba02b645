"""What the stack says the cluster already runs, checked at preview through the kubeconfig.

Each component is ``install`` or ``present`` in the stack (``kubernetes.lws``, ``devicePlugin``, ``draDriver``,
``prometheusOperator``; the Gateway API and the Inference Extension with ``endpoint.gateway``). ``present`` is
checked, not assumed: its API must be served (the CRD exists and serves the version k3infra writes), or, for the
device plugin, enough nodes matching ``gpuNodes.nodeSelector`` must advertise ``gpuNodes.gpuResource``. ``install``
is checked too: a CRD the cluster already serves that no Pulumi program manages (no ``pulumi-kubernetes`` field
manager in its ``managedFields``, the name pulumi-kubernetes gives itself: provider.go ``fieldManagerName``) was
installed by something else, and a second install would collide with it. A CRD this stack installed on an
earlier ``pulumi up`` has that manager, so the second run passes. Every finding is a configuration problem naming its key, raised before any resource
is registered. The offline plan (``k3infra plan``) reads nothing: the check is skipped and the plan says so.
"""

from dataclasses import dataclass
from typing import Any, Protocol

from ..catalog import AddonState
from ..catalog.autoscaling import KEDA_API_VERSION
from ..config import ConfigError, Problem, StackConfig
from ..config.problems import show
from ..serving.gateway import INFERENCE_API
from ..serving.lws import LWS_API_VERSION
from ..serving.dra import COMPUTE_DOMAIN_API_VERSION
from .kubeconfig import KubeconfigError

PODMONITOR_API = "monitoring.coreos.com/v1"
GATEWAY_API = "gateway.networking.k8s.io/v1"


class Reader(Protocol):
    """Something that GETs API objects (``kubeconfig.ApiClient``; a fake in the tests)."""

    def get(self, path: str, query: Any = None) -> Any:
        """The object at ``path``, or None when it does not exist."""
        ...


@dataclass(frozen=True)
class Api:
    """A custom resource API one component brings."""

    key: str
    """The stack key that says whether it is there (``kubernetes.lws``)."""
    plural: str
    """``<plural>.<group>``: the CRD's name."""
    api_version: str
    """What k3infra writes (``group/version``)."""
    component: str


LWS = Api("kubernetes.lws", "leaderworkersets.leaderworkerset.x-k8s.io", LWS_API_VERSION, "the LeaderWorkerSet controller")
DRA = Api("kubernetes.draDriver", "computedomains.resource.nvidia.com", COMPUTE_DOMAIN_API_VERSION,
          "the NVIDIA DRA driver (ComputeDomains)")
PROMETHEUS = Api("kubernetes.prometheusOperator", "podmonitors.monitoring.coreos.com", PODMONITOR_API,
                 "prometheus-operator")
KEDA = Api("autoscaling.enabled", "scaledobjects.keda.sh", KEDA_API_VERSION, "KEDA")
KEDA_INSTALL = ("install KEDA v2.20 (its chart: helm install keda kedacore/keda --version 2.20.2 --namespace keda "
                "--create-namespace), or autoscaling.enabled: false")

GATEWAYS = Api("kubernetes.gatewayClass", "gateways.gateway.networking.k8s.io", GATEWAY_API, "the Gateway API")
INFERENCE_POOLS = Api("kubernetes.gatewayClass", "inferencepools.inference.networking.k8s.io", INFERENCE_API,
                      "the Gateway API Inference Extension")


def apis(cfg: StackConfig) -> list[tuple[Api, AddonState]]:
    """The APIs the stack relies on, each with what the stack says of it."""
    k = cfg.kubernetes
    assert k is not None
    out: list[tuple[Api, AddonState]] = []
    if cfg.nodes > 1:
        out.append((LWS, k.lws))
    if k.dra_driver is not None:
        out.append((DRA, k.dra_driver))
    if k.prometheus_operator == AddonState.PRESENT and cfg.observability.enabled:
        out.append((PROMETHEUS, AddonState.PRESENT))
    if cfg.endpoint.gateway:
        # A declared class is the cluster's own; without one the stack installs agentgateway and these CRDs.
        state = AddonState.PRESENT if k.gateway_class else AddonState.INSTALL
        out += [(GATEWAYS, state), (INFERENCE_POOLS, state)]
    if cfg.autoscaling is not None and cfg.autoscaling.enabled:
        out.append((KEDA, AddonState.PRESENT))
    return out


PULUMI_FIELD_MANAGER = "pulumi-kubernetes"
"""The prefix of every field manager pulumi-kubernetes applies with (``pulumi-kubernetes`` with client-side apply,
``pulumi-kubernetes-<random>`` with server-side apply; provider/pkg/provider/provider.go ``fieldManagerName``)."""


def managed_by_pulumi(obj: Any) -> bool:
    """Whether a Pulumi program (this stack, on an earlier run) manages the object."""
    return any(str(m.get("manager", "")).startswith(PULUMI_FIELD_MANAGER)
               for m in (obj.get("metadata") or {}).get("managedFields") or [])


def _served(crd: Any, api_version: str) -> bool:
    version = api_version.split("/", 1)[1]
    return any(v.get("name") == version and v.get("served") for v in (crd.get("spec") or {}).get("versions") or [])


def api_problems(cfg: StackConfig, reader: Reader) -> list[Problem]:
    """Each API the stack says is present and is not served, or says to install and is already there."""
    out = []
    for api, state in apis(cfg):
        crd = reader.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{api.plural}")
        served = crd is not None and _served(crd, api.api_version)
        key = f"k3infra:{api.key}"
        if state == AddonState.PRESENT and not served:
            why = (f"the cluster does not serve {api.api_version} {api.plural}" if crd is None else
                   f"the cluster's {api.plural} CRD does not serve {api.api_version.split('/', 1)[1]}")
            given = (cfg.kubernetes.gateway_class if api.key == "kubernetes.gatewayClass"  # type: ignore[union-attr]
                     else True if api is KEDA else str(state))
            allowed = ("install the Gateway API and Inference Extension CRDs, or endpoint.gateway: false"
                       if api.key == "kubernetes.gatewayClass" else KEDA_INSTALL if api is KEDA
                       else f"install (k3infra installs {api.component})")
            out.append(Problem(key=key, reason=f"{why}: {api.component} is not there", given=show(given),
                               allowed=allowed))
        elif state == AddonState.INSTALL and crd is not None and not managed_by_pulumi(crd):
            out.append(Problem(key=key, reason=f"the cluster already serves {api.plural}, installed by something "
                               f"other than Pulumi: {api.component} runs there, and a second install would collide "
                               "with it", given=show(str(state)),
                               allowed=("kubernetes.gatewayClass: the cluster's class"
                                        if api.key == "kubernetes.gatewayClass" else "present")))
    if cfg.endpoint.gateway and cfg.kubernetes.gateway_class:  # type: ignore[union-attr]
        name = cfg.kubernetes.gateway_class  # type: ignore[union-attr]
        if reader.get(f"/apis/gateway.networking.k8s.io/v1/gatewayclasses/{name}") is None and not any(
                p.key == "k3infra:kubernetes.gatewayClass" for p in out):
            out.append(Problem(key="k3infra:kubernetes.gatewayClass", reason="the cluster has no GatewayClass of "
                               "that name", given=show(name), allowed="a GatewayClass of the cluster "
                               "(`kubectl get gatewayclasses`)"))
    return out


def _quantity(text: Any) -> int:
    try:
        return int(str(text))
    except ValueError:
        return 0


def gpu_node_problems(cfg: StackConfig, reader: Reader) -> tuple[list[Problem], int]:
    """With the device plugin present: whether enough selected nodes advertise all of a node's GPUs. Returns the
    problems and how many selected nodes advertise the GPUs. (With it installed nothing is checked: after the first
    ``pulumi up`` the nodes advertise the GPUs through the plugin this stack installed.)"""
    k = cfg.kubernetes
    assert k is not None
    selector = ",".join(f"{a}={b}" for a, b in sorted(k.node_selector.items()))
    listing = reader.get("/api/v1/nodes", {"labelSelector": selector}) or {}
    nodes = listing.get("items") or []
    need = cfg.accelerator.gpus_per_node
    ready = [n for n in nodes if _quantity(((n.get("status") or {}).get("allocatable") or {}).get(k.gpu_resource)) >= need]
    key = "k3infra:kubernetes.devicePlugin"
    arch = str(cfg.accelerator.cpu_arch)
    other = sorted({n["metadata"]["name"] for n in nodes
                    if ((n.get("status") or {}).get("nodeInfo") or {}).get("architecture") not in (None, arch)})
    if other:
        # The image is checked against the shape's CPU (config: imagePlatforms), so the nodes must be of it.
        return [Problem(key="k3infra:accelerator", reason=f"{cfg.accelerator.sku} nodes are {arch}, and selected "
                        f"node(s) {', '.join(other)} are not (status.nodeInfo.architecture)", given=show(cfg.accelerator.sku),
                        allowed=f"a shape of the nodes' CPU, or a kubernetes.gpuNodes.nodeSelector that selects "
                                f"{arch} nodes only")], len(ready)
    if k.device_plugin == AddonState.PRESENT and len(ready) < cfg.total_nodes:
        return [Problem(key=key, reason=(
            f"{len(nodes)} node(s) match kubernetes.gpuNodes.nodeSelector {selector} and {len(ready)} advertise "
            f"{need} {k.gpu_resource}; the stack needs {cfg.total_nodes}"), given=show(str(k.device_plugin)),
            allowed="GPU nodes that match the selector and advertise their GPUs (the GPU Operator or the device "
                    "plugin running), a corrected kubernetes.gpuNodes.nodeSelector / gpuResource, or install")], len(ready)
    return [], len(ready)


def check(cfg: StackConfig, reader: Reader) -> dict[str, Any]:
    """Raise ConfigError with every finding; otherwise return what was read, for the stack outputs."""
    try:
        problems = api_problems(cfg, reader)
        node_problems, advertising = gpu_node_problems(cfg, reader)
    except KubeconfigError as e:
        raise ConfigError([Problem(key=kubeconfig_key(cfg), reason=f"preview cannot read the cluster: {e}",
                                   given="[secret]" if cfg.kubernetes and cfg.kubernetes.kubeconfig else
                                   show(cfg.kubernetes.kubeconfig_path if cfg.kubernetes else None),
                                   allowed="a kubeconfig whose context reaches the cluster's API server")],
                          f"stack {cfg.stack}") from e
    problems += node_problems
    if problems:
        raise ConfigError(problems, f"stack {cfg.stack} (checked through the kubeconfig)")
    return {"checked": True, "apis": sorted({f"{a.plural} {a.api_version}: {s}" for a, s in apis(cfg)}),
            "gpuNodesAdvertising": advertising}


def kubeconfig_key(cfg: StackConfig) -> str:
    """The key that gives the kubeconfig."""
    return "k3infra:kubeconfig" if cfg.kubernetes and cfg.kubernetes.kubeconfig else "k3infra:kubernetes.kubeconfigPath"


def skipped(cfg: StackConfig) -> str:
    """What the offline plan says instead of reading the cluster."""
    said = [f"{a.plural} ({s})" for a, s in apis(cfg)]
    k = cfg.kubernetes
    assert k is not None
    said.append(f"{cfg.total_nodes} node(s) advertising {cfg.accelerator.gpus_per_node} {k.gpu_resource} "
                f"(devicePlugin {k.device_plugin})")
    return ("offline plan: the cluster is not read, so what the stack says it runs is unchecked here: "
            + "; ".join(said) + ". `pulumi preview` checks each through the kubeconfig and stops on a mismatch")


__all__ = ["Api", "Reader", "api_problems", "apis", "check", "gpu_node_problems", "skipped"]

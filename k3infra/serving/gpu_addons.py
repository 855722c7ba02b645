"""The Helm-installed node software that gets a GPU pool's devices into pods, each chart pinned.

- the NVIDIA device plugin: advertises ``nvidia.com/gpu`` where the platform does not (EKS's AL2023 NVIDIA AMI,
  AKS's driver-only GPU profile);
- the NVIDIA DRA driver for GPUs with ComputeDomains only: multi-node NVLink (IMEX channels) for replicas
  whose tensor parallelism spans nodes; GPUs stay with the device plugin;
- DRANET: RDMA NICs as DRA devices, where the platform does not manage it (GKE A4X Max does);
- NVIDIA's DCGM exporter: GPU metrics where the platform runs none (EKS, AKS; k3infra.observability scrapes it).

A cloud's GPU pool installs the ones it needs with its own values (driver root, node selection) and hands
serving what pods must claim (``GpuPool.device_claims``, ``GpuPool.compute_domains``).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .contract import Toleration
from .pods import PART_OF

core = k8s.core.v1
meta = k8s.meta.v1


class HelmChart(NamedTuple):
    """A chart pinned to one version: ``repo`` is empty for an ``oci://`` chart."""

    repo: str
    chart: str
    version: str


NVIDIA_DEVICE_PLUGIN_CHART = HelmChart("https://nvidia.github.io/k8s-device-plugin", "nvidia-device-plugin", "0.17.4")
"""Required on the EKS AL2023 NVIDIA AMI (EKS User Guide ml-eks-k8s-device-plugin; docs/catalog-research.md §3.5) and
on AKS GPU pools without the managed GPU experience (MicrosoftDocs/azure-aks-docs aks-managed-gpu-nodes.md: "No
nvidia.com/gpu resource is advertised until you deploy a device plugin"). Which plugin AKS's frozen GB image
bakes is UNCONFIRMED: Azure/AgentBaker vhdbuilder/packer/gb-mai-bom.json (0.17.3) postdates that image."""

NVIDIA_DRA_DRIVER_CHART = HelmChart("https://helm.ngc.nvidia.com/nvidia", "nvidia-dra-driver-gpu", "25.12.0")
"""NVIDIA DRA driver for GPUs, latest release (NVIDIA/k8s-dra-driver-gpu v25.12.0, commit
0882da8720c28763137e0987778ec476ec4cf8df). cluster-toolkit's gke-a4x-max-bm pins v25.8.0; 25.12.0 adds the
``resourceApiVersion`` override set below. Its ComputeDomain CRD is schemas/crds/nvidia-dra-computedomains.yaml."""

NVIDIA_DRA_NAMESPACE = "nvidia-dra-driver-gpu"
"""The driver's namespace (cluster-toolkit kubectl-apply ``install_nvidia_dra_driver``); the chart refuses
``default``."""

DRANET_CHART = HelmChart("", "oci://registry.k8s.io/networking/charts/dranet", "1.4.0")
"""DRANET (kubernetes-sigs/dranet v1.4.0, commit ca195e297179deff1f58e3fc468babd5394e4174; README: ``helm install
-n kube-system dranet oci://registry.k8s.io/networking/charts/dranet``; the Makefile publishes the chart as the tag
without ``v``)."""

DCGM_EXPORTER_CHART = HelmChart("https://nvidia.github.io/dcgm-exporter/helm-charts", "dcgm-exporter", "4.8.2")
"""NVIDIA/dcgm-exporter chart 4.8.2 (tag 4.5.3-4.8.2, commit 691c92762eb551313c825f6efe4ceeee20982801, image
4.5.3-4.8.2-distroless): its default counters are schemas/engine-metrics/dcgm-exporter-4.5.3-4.8.2-default-counters.csv,
what the dashboard and the GPU alerts query."""

DCGM_EXPORTER_NAMESPACE = "k3-dcgm"

CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
"""The chart runs its controller and kubelet plugins at system-node-critical. GKE admits pods of these priority
classes outside kube-system only where a ResourceQuota scopes them (cluster-toolkit
examples/gke-a4x-max-bm/nvidia-dra-driver.yaml): the driver's namespace gets one."""


def _tolerations(tolerations: Sequence[Toleration]) -> list[dict[str, str]]:
    out = []
    for t in tolerations:
        op = t.get("operator") or "Exists"
        entry = {"key": t["key"], "operator": op, "effect": t.get("effect") or "NoSchedule"}
        if op == "Equal":
            entry["value"] = t.get("value") or ""
        out.append(entry)
    return out


def _required_nodes(expressions: list[dict[str, Any]]) -> dict[str, Any]:
    """Helm values of a node affinity that requires ``expressions`` (a list: it replaces the chart's terms)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}


def _absent(labels: Sequence[str]) -> list[dict[str, Any]]:
    """Node selector expressions that keep a pod off nodes carrying any of ``labels``."""
    return [{"key": label, "operator": "DoesNotExist"} for label in labels]


def on_nodes(node_selector: Mapping[str, str]) -> dict[str, Any]:
    """Affinity values selecting the GPU pool's nodes by every label of its selector."""
    return _required_nodes([{"key": k, "operator": "In", "values": [v]} for k, v in sorted(node_selector.items())])


def nvidia_dra_driver_values(*, driver_root: str, node_selector: Mapping[str, str],
                             tolerations: Sequence[Toleration]) -> dict[str, Any]:
    """Values of the DRA driver: ComputeDomains only, kubelet plugins on the GPU pool, the controller off it.

    From cluster-toolkit ``modules/management/kubectl-apply`` (``nvidia_dra_driver``): ``nvidiaDriverRoot``, GPU
    allocation left to the device plugin (``resources.gpus.enabled: false``; the chart refuses ``true`` next to
    the device plugin), the kubelet plugin on the GPU nodes with their tolerations, the controller moved off the
    control-plane nodes it defaults to (managed clusters have none). ``resourceApiVersion`` is stated because the
    chart otherwise detects it from the cluster, which a preview of a new cluster cannot ask.
    """
    return {
        "nvidiaDriverRoot": driver_root,
        "resourceApiVersion": "resource.k8s.io/v1",
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "controller": {"affinity": _required_nodes([{"key": "kubernetes.io/os", "operator": "In",
                                                     "values": ["linux"]}])},
        "kubeletPlugin": {"affinity": on_nodes(node_selector), "tolerations": _tolerations(tolerations)},
    }


def nvidia_dra_driver(name: str, *, driver_root: str, node_selector: Mapping[str, str],
                      tolerations: Sequence[Toleration], opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """The driver's namespace, the quota that admits its critical pods, and the chart (in that order)."""
    ns = core.Namespace(f"{name}-namespace", metadata=meta.ObjectMetaArgs(
        name=NVIDIA_DRA_NAMESPACE, labels={"app.kubernetes.io/part-of": "k3infra",
                                           # The kubelet plugins and IMEX daemons are privileged host agents.
                                           "pod-security.kubernetes.io/enforce": "privileged"}), opts=opts)
    in_ns = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ns]))
    quota = core.ResourceQuota(
        f"{name}-critical-pods",
        metadata=meta.ObjectMetaArgs(name=f"{NVIDIA_DRA_NAMESPACE}-quota", namespace=NVIDIA_DRA_NAMESPACE),
        spec=core.ResourceQuotaSpecArgs(
            hard={"pods": "100"},
            scope_selector=core.ScopeSelectorArgs(match_expressions=[core.ScopedResourceSelectorRequirementArgs(
                scope_name="PriorityClass", operator="In", values=list(CRITICAL_PRIORITY_CLASSES))])),
        opts=in_ns)
    repo, chart, version = NVIDIA_DRA_DRIVER_CHART
    release = k8s.helm.v4.Chart(
        name, chart=chart, version=version, repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=repo),
        namespace=NVIDIA_DRA_NAMESPACE, name="nvidia-dra-driver-gpu",
        values=nvidia_dra_driver_values(driver_root=driver_root, node_selector=node_selector, tolerations=tolerations),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ns, quota])))
    return [ns, quota, release]


GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
"""The node label (``"true"``) by which the device plugin chart's default affinity accepts a node without Node
Feature Discovery's PCI labels (NVIDIA/k8s-device-plugin v0.17.4 ``deployments/helm/nvidia-device-plugin/values.yaml``)."""


def nvidia_device_plugin(name: str, *, tolerations: Sequence[Toleration], feature_discovery: bool,
                         opts: pulumi.ResourceOptions, avoid_node_labels: Sequence[str] = ()) -> k8s.helm.v4.Chart:
    """The device plugin on nodes labelled ``nvidia.com/gpu.present=true`` (the chart's default affinity).

    ``feature_discovery`` adds GPU feature discovery and its Node Feature Discovery: they label each node with
    ``nvidia.com/gpu.clique``, its NVLink partition, which multi-node replicas are placed by. ``avoid_node_labels``:
    nodes carrying any of these labels run a device plugin of their own, so the chart's pods stay off them (the
    affinity then requires ``nvidia.com/gpu.present=true``, the label the pool sets, and none of those labels).
    """
    repo, chart, version = NVIDIA_DEVICE_PLUGIN_CHART
    values: dict[str, Any] = {"tolerations": _tolerations(tolerations)}
    if avoid_node_labels:
        values["affinity"] = _required_nodes([{"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]},
                                              *_absent(avoid_node_labels)])
    if feature_discovery:
        values.update({"gfd": {"enabled": True}, "nfd": {"enabled": True}})
    return k8s.helm.v4.Chart(name, chart=chart, version=version, repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=repo),
                             namespace="kube-system", values=values, opts=opts)


def dcgm_hostengine_env(port: int) -> list[dict[str, Any]]:
    """Environment that points dcgm-exporter at the DCGM host engine already running on its node, at
    ``<node IP>:<port>``, instead of starting an engine of its own: ``DCGM_REMOTE_HOSTENGINE_INFO`` is its ``-r``
    flag (NVIDIA/dcgm-exporter ``pkg/cmd/app.go``; the GPU Operator sets it the same way for a standalone engine),
    the node's address comes from the downward API and Kubernetes expands ``$(NODE_IP)`` in the later variable.
    One engine per node is the only supported layout (NVIDIA/DCGM#108: several "may lead to deadlocks in the
    driver"; dcgm-exporter#61: an embedded engine "would fail to initialize some modules if there is another
    nv-hostengine process on the same physical machine")."""
    return [{"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": f"$(NODE_IP):{port}"}]


def dcgm_exporter(name: str, *, node_selector: Mapping[str, str], tolerations: Sequence[Toleration],
                  opts: pulumi.ResourceOptions, hostengine_port: int | None = None,
                  avoid_node_labels: Sequence[str] = ()) -> k8s.helm.v4.Chart:
    """NVIDIA's DCGM exporter on the GPU pool's nodes, in a namespace of its own.

    By default it runs DCGM's engine embedded, which needs ``SYS_ADMIN`` for the profiling fields (the chart's
    default), so the namespace enforces the privileged Pod Security level. Where the node already runs a host
    engine (``hostengine_port``, e.g. EKS's node monitoring agent) it connects to that one instead
    (``dcgm_hostengine_env``). ``avoid_node_labels``: nodes carrying any of these labels run an exporter of their
    own, so this one stays off them. The chart's ServiceMonitor is off: it is prometheus-operator's kind, which
    these clusters do not have; the cloud's own scrape object selects the pods instead.
    """
    ns = core.Namespace(f"{name}-namespace", metadata=meta.ObjectMetaArgs(name=DCGM_EXPORTER_NAMESPACE, labels={
        "app.kubernetes.io/part-of": PART_OF, "pod-security.kubernetes.io/enforce": "privileged"}), opts=opts)
    repo, chart, version = DCGM_EXPORTER_CHART
    values: dict[str, Any] = {"serviceMonitor": {"enabled": False}, "nodeSelector": dict(node_selector),
                              "tolerations": _tolerations(tolerations)}
    if hostengine_port is not None:
        values["extraEnv"] = dcgm_hostengine_env(hostengine_port)
    if avoid_node_labels:
        values["affinity"] = _required_nodes(_absent(avoid_node_labels))
    return k8s.helm.v4.Chart(
        name, chart=chart, version=version, namespace=DCGM_EXPORTER_NAMESPACE, name=chart,
        repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=repo), values=values,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ns])))


def dranet(name: str, *, node_selector: Mapping[str, str], move_ib_interfaces: bool,
           opts: pulumi.ResourceOptions) -> k8s.helm.v4.Chart:
    """DRANET on the GPU pool's nodes (its default tolerations take every NoSchedule taint).

    ``move_ib_interfaces=False`` where the NICs are InfiniBand-only virtual functions: DRANET then publishes their
    ``rdmaDevice`` and injects ``/dev/infiniband/uverbsN`` instead of moving IPoIB netdevs (kubernetes-sigs/dranet
    examples/azure_aks_examples/README.md)."""
    _, chart, version = DRANET_CHART
    return k8s.helm.v4.Chart(name, chart=chart, version=version, namespace="kube-system", values={
        "nodeSelector": dict(node_selector), "args": {"moveIBInterfaces": move_ib_interfaces}}, opts=opts)


def rdma_device_class(name: str, *, class_name: str, opts: pulumi.ResourceOptions) -> k8s.resource.v1.DeviceClass:
    """A DeviceClass of DRANET's RDMA devices (kubernetes-sigs/dranet examples: ``device.driver == "dra.net"``
    and the ``rdma`` attribute)."""
    return k8s.resource.v1.DeviceClass(
        name,
        metadata=meta.ObjectMetaArgs(name=class_name, labels={"app.kubernetes.io/part-of": "k3infra"}),
        spec=k8s.resource.v1.DeviceClassSpecArgs(selectors=[
            k8s.resource.v1.DeviceSelectorArgs(cel=k8s.resource.v1.CELDeviceSelectorArgs(
                expression='device.driver == "dra.net" && device.attributes["dra.net"].rdma == true'))]),
        opts=opts)


__all__ = ["DCGM_EXPORTER_CHART", "DCGM_EXPORTER_NAMESPACE", "DRANET_CHART", "GPU_PRESENT_LABEL",
           "NVIDIA_DEVICE_PLUGIN_CHART", "NVIDIA_DRA_DRIVER_CHART", "NVIDIA_DRA_NAMESPACE", "HelmChart",
           "dcgm_exporter", "dcgm_hostengine_env", "dranet",
           "nvidia_device_plugin", "nvidia_dra_driver", "nvidia_dra_driver_values", "on_nodes", "rdma_device_class"]

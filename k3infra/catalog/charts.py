"""The pods of every Helm chart k3infra installs, at the pinned version: what each requests and where it runs.

A chart's pods are not rendered offline (Pulumi's Helm v4 Chart renders them while it runs), so what they ask of
the nodes is recorded here from each chart's default values at its pinned version; k3infra's own values override
the requests where ``ChartPod.resources_value`` says. The system-pool fit test checks every chart and workload a
stack renders for the CPU system nodes against ``catalog.system_nodes.ALLOCATABLE``.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class ChartPod:
    """One workload of a chart, as its default values make it."""

    component: str
    kind: str
    """Deployment or DaemonSet (one pod on each node it selects)."""
    replicas: int
    """Pods of a Deployment (1 for a DaemonSet)."""
    cpu_millis: int
    """CPU request of the pod's containers by default (0: the chart sets none)."""
    memory_mib: int
    """Memory request of the pod's containers by default (0: the chart sets none)."""
    resources_value: str
    """The values path of the component's ``resources`` (``""``: not settable)."""
    gpu_nodes_only: str = ""
    """Why the pods never run on the CPU system nodes (``""``: they may)."""
    placed_by_value: str = ""
    """The values path k3infra sets to keep the pods on the GPU nodes (``""``: the chart's own default does)."""
    enabled_by: tuple[str, ...] = ()
    """Values paths of which one must be true for the chart to run it (empty: always)."""


@dataclass(frozen=True)
class ChartFacts:
    """A pinned chart and its pods."""

    chart: str
    version: str
    """The version k3infra pins (``""``: a local chart pinned by a commit)."""
    source: str
    pods: tuple[ChartPod, ...]


_CHARTS = (
    ChartFacts("oci://registry.k8s.io/lws/charts/lws", "0.10.0",
               "kubernetes-sigs/lws v0.10.0 charts/lws/values.yaml: replicaCount 1, resources.requests cpu 1, "
               "memory 1Gi", (ChartPod("controller-manager", "Deployment", 1, 1000, 1024, "resources"),)),
    ChartFacts("oci://ghcr.io/llm-d/charts/llm-d-router-gateway", "v0.10.0",
               "llm-d/llm-d-router v0.10.0 config/charts/routerlib/values.yaml (the gateway chart's ``router``): "
               "epp.replicas 1, epp.resources.requests cpu 8, memory 8Gi (L59-65); proxy and tokenizer off",
               (ChartPod("epp", "Deployment", 1, 8000, 8192, "router.epp.resources"),)),
    ChartFacts("nvidia-dra-driver-gpu", "25.12.0",
               "NVIDIA/k8s-dra-driver-gpu v25.12.0 deployments/helm/nvidia-dra-driver-gpu: templates/controller.yaml "
               "replicas 1; values.yaml controller and kubeletPlugin containers resources {}; webhook.enabled false",
               (ChartPod("controller", "Deployment", 1, 0, 0, "controller.containers.computeDomain.resources"),
                ChartPod("kubelet-plugin", "DaemonSet", 1, 0, 0, "kubeletPlugin.containers.computeDomains.resources",
                         gpu_nodes_only="node affinity on the GPU pool's labels",
                         placed_by_value="kubeletPlugin.affinity"))),
    ChartFacts("nvidia-device-plugin", "0.17.4",
               "NVIDIA/k8s-device-plugin v0.17.4 deployments/helm/nvidia-device-plugin/values.yaml (resources {}, "
               "affinity on NVIDIA PCI devices or nvidia.com/gpu.present) and its node-feature-discovery 0.15.3 "
               "subchart (master and gc replicaCount 1, worker a DaemonSet, every resources {})",
               (ChartPod("device-plugin", "DaemonSet", 1, 0, 0, "resources",
                         gpu_nodes_only="the chart's node affinity selects nodes with NVIDIA GPUs"),
                ChartPod("gpu-feature-discovery", "DaemonSet", 1, 0, 0, "resources", enabled_by=("gfd.enabled",),
                         gpu_nodes_only="the chart's node affinity selects nodes with NVIDIA GPUs"),
                ChartPod("nfd-master", "Deployment", 1, 0, 0, "nfd.master.resources",
                         enabled_by=("nfd.enabled", "gfd.enabled")),
                ChartPod("nfd-gc", "Deployment", 1, 0, 0, "nfd.gc.resources",
                         enabled_by=("nfd.enabled", "gfd.enabled")),
                ChartPod("nfd-worker", "DaemonSet", 1, 0, 0, "nfd.worker.resources",
                         enabled_by=("nfd.enabled", "gfd.enabled")))),
    ChartFacts("dcgm-exporter", "4.8.2",
               "NVIDIA/dcgm-exporter 4.5.3-4.8.2 (commit 691c927) deployment/values.yaml: resources.requests cpu 100m, "
               "memory 128Mi",
               (ChartPod("exporter", "DaemonSet", 1, 100, 128, "resources",
                         gpu_nodes_only="k3infra's node selector of the GPU pool", placed_by_value="nodeSelector"),)),
    ChartFacts("oci://registry.k8s.io/networking/charts/dranet", "1.4.0",
               "kubernetes-sigs/dranet v1.4.0 (commit ca195e2) deployments/helm/dranet/values.yaml: resources.requests "
               "cpu 100m, memory 50Mi; tolerates every NoSchedule taint",
               (ChartPod("dranet", "DaemonSet", 1, 100, 50, "resources",
                         gpu_nodes_only="k3infra's node selector of the GPU pool", placed_by_value="nodeSelector"),)),
    ChartFacts("aws-efa-k8s-device-plugin", "0.5.29",
               "aws/eks-charts (commit 2a58b2d) stable/aws-efa-k8s-device-plugin/values.yaml: resources {}, node "
               "affinity on EFA instance types",
               (ChartPod("device-plugin", "DaemonSet", 1, 0, 0, "resources",
                         gpu_nodes_only="k3infra's node selector of the GPU node group",
                         placed_by_value="nodeSelector"),)),
    ChartFacts("sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart", "",
               "aws/sagemaker-hyperpod-cli 011ca92 helm_chart/HyperPodHelmChart: values.yaml enables training "
               "operators, mpi-operator, the NVIDIA, EFA and Neuron device plugins and the health monitoring agent; "
               "charts/training-operators Deployment (replicas 1, no resources), charts/mpi-operator (replicas 1, "
               "resources {}); the DaemonSets select ml.* (HyperPod) or Neuron instance types by node affinity",
               (ChartPod("training-operator", "Deployment", 1, 0, 0, ""),
                ChartPod("mpi-operator", "Deployment", 1, 0, 0, ""),
                ChartPod("nvidia-device-plugin", "DaemonSet", 1, 0, 0, "",
                         gpu_nodes_only="node affinity on HyperPod GPU instance types (values.yaml)"),
                ChartPod("aws-efa-k8s-device-plugin", "DaemonSet", 1, 0, 0, "",
                         gpu_nodes_only="node affinity on EFA instance types (supportedInstanceLabels)"),
                ChartPod("neuron-device-plugin", "DaemonSet", 1, 0, 0, "",
                         gpu_nodes_only="node affinity on Inferentia and Trainium instance types"),
                ChartPod("health-monitoring-agent", "DaemonSet", 1, 500, 512, "",
                         gpu_nodes_only="node affinity on HyperPod instance types"))),
)

CHARTS: Mapping[tuple[str, str], ChartFacts] = MappingProxyType({(c.chart, c.version): c for c in _CHARTS})
"""Every chart k3infra installs, by (chart, pinned version)."""

__all__ = ["CHARTS", "ChartFacts", "ChartPod"]

"""What the clouds' scrape objects select, and the DCGM exporter for the clouds that run none.

Every cloud scrapes the same two things: the server's leader pods on the serving port at the engine's metrics
path (the leader runs the API server; vLLM's Ray workers and SGLang's other ranks serve no HTTP), and the DCGM
exporter on the GPU nodes. Where the cloud runs no DCGM exporter (EKS, AKS without NVIDIA's GPU Operator),
``install_dcgm_exporter`` installs NVIDIA's chart on the GPU pool.
"""

from dataclasses import dataclass
from typing import Any, Mapping

import pulumi
import pulumi_kubernetes as k8s

from ..config import StackConfig
from ..serving import pods
from ..serving.contract import GpuPool

SCRAPE_INTERVAL = "30s"
"""How often the engines and the GPUs are scraped (GMP and ARMS default to 60 s; 30 s resolves a 5-minute rate)."""

DCGM_CHART = "dcgm-exporter"
DCGM_CHART_REPO = "https://nvidia.github.io/dcgm-exporter/helm-charts"
DCGM_CHART_VERSION = "4.8.2"
"""NVIDIA/dcgm-exporter chart 4.8.2 (tag 4.5.3-4.8.2, image 4.5.3-4.8.2-distroless): its default counters are
schemas/engine-metrics/dcgm-exporter-4.5.3-4.8.2-default-counters.csv."""
DCGM_NAMESPACE = "k3-dcgm"
DCGM_RELEASE = "dcgm-exporter"
DCGM_PORT = "metrics"
"""Container port name of the chart's DaemonSet (9400)."""


@dataclass(frozen=True)
class ScrapeTarget:
    """Pods to scrape: where, which, and on what port and path."""

    namespace: str
    selector: Mapping[str, str]
    port: str
    """Container port name."""
    path: str = "/metrics"

    def pod_monitor_spec(self, interval: str = SCRAPE_INTERVAL) -> dict[str, Any]:
        """The ``spec`` of a prometheus-operator PodMonitor (and of AKS's ``azmonitoring.coreos.com`` copy)."""
        return {"selector": {"matchLabels": dict(self.selector)},
                "podMetricsEndpoints": [{"port": self.port, "path": self.path, "interval": interval}]}

    def pod_monitoring_spec(self, interval: str = SCRAPE_INTERVAL) -> dict[str, Any]:
        """The ``spec`` of a GKE Managed Service for Prometheus PodMonitoring."""
        return {"selector": {"matchLabels": dict(self.selector)},
                "endpoints": [{"port": self.port, "path": self.path, "interval": interval}]}


def server_target(cfg: StackConfig, leader_selector: Mapping[str, str]) -> ScrapeTarget:
    """The server's leader pods, on the serving port (named ``http`` in every pod template)."""
    return ScrapeTarget(namespace=cfg.namespace, selector=dict(leader_selector), port="http",
                        path=cfg.engine.metrics_path)


DCGM_TARGET = ScrapeTarget(namespace=DCGM_NAMESPACE, port=DCGM_PORT, selector={
    "app.kubernetes.io/name": DCGM_CHART, "app.kubernetes.io/instance": DCGM_RELEASE})
"""The pods of the DCGM exporter ``install_dcgm_exporter`` installs."""


def install_dcgm_exporter(name: str, pool: GpuPool, opts: pulumi.ResourceOptions) -> k8s.helm.v4.Chart:
    """NVIDIA's dcgm-exporter chart on the GPU pool's nodes, in a namespace of its own.

    The exporter needs ``SYS_ADMIN`` for the profiling fields (chart default), so its namespace enforces the
    privileged Pod Security level. The chart's ServiceMonitor is off: it is prometheus-operator's kind, which these
    clusters do not have; the cloud's own scrape object selects the pods instead (``DCGM_TARGET``).
    """
    ns = k8s.core.v1.Namespace(f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=DCGM_NAMESPACE, labels={
        "app.kubernetes.io/part-of": pods.PART_OF, "pod-security.kubernetes.io/enforce": "privileged"}), opts=opts)
    tolerations = [{"key": t["key"], "operator": t.get("operator", "Exists"), "effect": t.get("effect", "NoSchedule"),
                    **({"value": t["value"]} if "value" in t else {})} for t in pool["tolerations"]]
    return k8s.helm.v4.Chart(
        name, chart=DCGM_CHART, version=DCGM_CHART_VERSION, namespace=DCGM_NAMESPACE, name=DCGM_RELEASE,
        repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=DCGM_CHART_REPO),
        values={"serviceMonitor": {"enabled": False}, "nodeSelector": dict(pool["node_selector"]),
                "tolerations": tolerations},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ns])))

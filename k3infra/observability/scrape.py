"""What the clouds' scrape objects select, and the DCGM exporter for the clouds that run none.

Every cloud scrapes the same two things: the server's leader pods on the serving port at the engine's metrics
path (the leader runs the API server; vLLM's headless workers and SGLang's other ranks serve no HTTP), and the DCGM
exporter on the GPU nodes. Where the cloud runs no DCGM exporter (EKS, AKS without NVIDIA's GPU Operator),
``install_dcgm_exporter`` installs NVIDIA's chart on the GPU pool.
"""

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..config import StackConfig
from ..serving import gpu_addons
from ..serving.contract import GpuPool

SCRAPE_INTERVAL = "30s"
"""How often the engines and the GPUs are scraped (GMP and ARMS default to 60 s; 30 s resolves a 5-minute rate)."""


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


def picker_target(cfg: StackConfig, picker_selector: Mapping[str, str]) -> ScrapeTarget:
    """The inference gateway's endpoint picker (llm-d-router v0.10.0 routerlib ``_deployment.yaml``: container port
    ``metrics``, 9090, at ``/metrics``)."""
    return ScrapeTarget(namespace=cfg.namespace, selector=dict(picker_selector), port="metrics")


DCGM_TARGET = ScrapeTarget(namespace=gpu_addons.DCGM_EXPORTER_NAMESPACE, port="metrics", selector={
    "app.kubernetes.io/name": gpu_addons.DCGM_EXPORTER_CHART.chart,
    "app.kubernetes.io/instance": gpu_addons.DCGM_EXPORTER_CHART.chart})
"""The pods of the DCGM exporter ``install_dcgm_exporter`` installs (the chart's selector labels; its DaemonSet's
port ``metrics``, 9400)."""


def install_dcgm_exporter(name: str, pool: GpuPool, opts: pulumi.ResourceOptions, *,
                          hostengine_port: int | None = None, avoid_node_labels: Sequence[str] = ()
                          ) -> k8s.helm.v4.Chart:
    """NVIDIA's dcgm-exporter chart (``serving.gpu_addons.dcgm_exporter``, which explains the two options) on the GPU
    pool's nodes."""
    return gpu_addons.dcgm_exporter(name, node_selector=pool["node_selector"], tolerations=pool["tolerations"],
                                    opts=opts, hostengine_port=hostengine_port, avoid_node_labels=avoid_node_labels)

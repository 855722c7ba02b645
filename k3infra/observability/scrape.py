"""What the clouds' scrape objects select, and the DCGM exporter for the clouds that run none.

Every cloud scrapes the same two things: the server's leader pods on the serving port at the engine's metrics
path (the leader runs the API server; vLLM's headless workers and SGLang's other ranks serve no HTTP), and the DCGM
exporter on the GPU nodes. Where the cloud runs no DCGM exporter (EKS, AKS without NVIDIA's GPU Operator),
``install_dcgm_exporter`` installs NVIDIA's chart on the GPU pool.
"""

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.topologies import ROLE_LABEL, ROLE_SERIES_LABEL
from ..config import StackConfig
from ..serving import gpu_addons
from ..serving.contract import GpuPool
from ..serving.stack import Serving

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
    pod_labels: tuple[str, ...] = ()
    """Pod labels copied onto every series scraped, under ``series_label``'s name (a disaggregated topology's
    ``llm-d.ai/role``: what the per-role alerts select a role by)."""

    def pod_monitor_spec(self, interval: str = SCRAPE_INTERVAL) -> dict[str, Any]:
        """The ``spec`` of a prometheus-operator PodMonitor (and of AKS's ``azmonitoring.coreos.com`` copy):
        ``podTargetLabels`` names the pod labels, which prometheus-operator sanitises as ``series_label`` does."""
        spec: dict[str, Any] = {"selector": {"matchLabels": dict(self.selector)},
                                "podMetricsEndpoints": [{"port": self.port, "path": self.path, "interval": interval}]}
        if self.pod_labels:
            spec["podTargetLabels"] = list(self.pod_labels)
        return spec

    def pod_monitoring_spec(self, interval: str = SCRAPE_INTERVAL) -> dict[str, Any]:
        """The ``spec`` of a GKE Managed Service for Prometheus PodMonitoring (``targetLabels.fromPod`` maps each pod
        label ``to`` its ``series_label``: GMP keeps the name as given otherwise)."""
        spec: dict[str, Any] = {"selector": {"matchLabels": dict(self.selector)},
                                "endpoints": [{"port": self.port, "path": self.path, "interval": interval}]}
        if self.pod_labels:
            spec["targetLabels"] = {"fromPod": [{"from": k, "to": series_label(k)} for k in self.pod_labels]}
        return spec


def series_label(pod_label: str) -> str:
    """The series label a pod label becomes: every character Prometheus does not allow in a label name replaced by
    ``_``, as its Kubernetes discovery does for ``__meta_kubernetes_pod_label_*`` and prometheus-operator for
    ``podTargetLabels`` (``llm-d.ai/role`` -> ``llm_d_ai_role``)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", pod_label)




def server_target(cfg: StackConfig, leader_selector: Mapping[str, str]) -> ScrapeTarget:
    """The server's leader pods, on the serving port (named ``http`` in every pod template)."""
    return ScrapeTarget(namespace=cfg.namespace, selector=dict(leader_selector), port="http",
                        path=cfg.engine.metrics_path)


def server_targets(cfg: StackConfig, serving: Serving) -> dict[str, ScrapeTarget]:
    """What to scrape of the server, by name: ``server`` (the server's leaders, ``server_target``) and, in a
    disaggregated topology, each other role's leaders under the role's name (``prefill``), every one carrying the
    pods' ``llm-d.ai/role`` as ``ROLE_SERIES_LABEL``: ``server`` is then the decode role (``Serving.server``), which
    is scraped through its routing sidecar on the serving port, since the sidecar passes every path it does not route
    (``/metrics`` included) to its engine (llm-d/llm-d-router v0.10.0 pkg/sidecar/proxy/proxy.go ``createRoutes``:
    ``mux.Handle("/", s.decoderProxy)``; catalog.topologies ``ROUTER_SIDECAR``)."""
    if not cfg.topology.disaggregated or not serving.roles:
        return {"server": server_target(cfg, serving.server.leader_selector)}
    return {("server" if server is serving.server else role):
            replace(server_target(cfg, server.leader_selector), pod_labels=(ROLE_LABEL,))
            for role, server in serving.roles.items()}


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

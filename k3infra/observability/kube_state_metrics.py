"""kube-state-metrics for the scaler's alerts and the dashboard's replica panels, where no managed kube-state-metrics
exports the HorizontalPodAutoscaler series (EKS: AMP's managed collector scrapes only what its configuration
lists): prometheus-community's chart (catalog.charts.KUBE_STATE_METRICS_CHART) in the serving namespace, its one
collector the HPAs of that namespace.

In the serving namespace so that a scrape job's ``namespace`` target label (the pod's) is the HPA's own: the
series keep ``namespace`` whichever of the two labels Prometheus keeps on a clash.
"""

from typing import Mapping

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.charts import KUBE_STATE_METRICS_CHART
from .scrape import ScrapeTarget

KSM_REPOSITORY = "https://prometheus-community.github.io/helm-charts"
KSM_RELEASE = "kube-state-metrics"
KSM_REQUESTS = {"cpu": "10m", "memory": "64Mi"}
"""ESTIMATE: what one collector watching one namespace's HPAs needs (the chart requests nothing by default)."""


def ksm_target(namespace: str) -> ScrapeTarget:
    """The chart's pod (its selector labels, container port ``http``)."""
    return ScrapeTarget(namespace=namespace, port="http", selector={
        "app.kubernetes.io/name": KUBE_STATE_METRICS_CHART[0], "app.kubernetes.io/instance": KSM_RELEASE})


def install_kube_state_metrics(name: str, namespace: str, node_selector: Mapping[str, str],
                               opts: pulumi.ResourceOptions) -> k8s.helm.v4.Chart:
    """The chart in ``namespace``, collecting only that namespace's HorizontalPodAutoscalers (values
    ``collectors`` and ``releaseNamespace``), on the nodes ``node_selector`` picks."""
    chart, version = KUBE_STATE_METRICS_CHART
    return k8s.helm.v4.Chart(
        name, chart=chart, version=version, namespace=namespace, name=KSM_RELEASE,
        repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=KSM_REPOSITORY),
        values={"collectors": ["horizontalpodautoscalers"], "releaseNamespace": True,
                "nodeSelector": dict(node_selector), "resources": {"requests": dict(KSM_REQUESTS)}},
        opts=opts)

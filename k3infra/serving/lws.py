"""The LeaderWorkerSet: its API, its controller's pinned chart, and the names of a server's sets."""

import pulumi
import pulumi_kubernetes as k8s

from ..catalog.charts import LWS_CHART as PINNED_LWS_CHART
from . import pods
from .chart_source import chart_location

core = k8s.core.v1
meta = k8s.meta.v1


LWS_CHART, LWS_CHART_VERSION = PINNED_LWS_CHART
"""The LeaderWorkerSet controller's pinned chart (catalog.charts ``LWS_CHART``)."""
LWS_NAMESPACE = "lws-system"
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"

def lws_object_name(name: str, index: int = 0) -> str:
    """The name of a LeaderWorkerSet of the server ``name`` (``index`` > 0: a further group's own set).

    Never ``name`` itself: the LWS controller gives every LeaderWorkerSet a headless Service of its own name
    (lws v0.10.0 ``pkg/controllers/leaderworkerset_controller.go`` ``reconcileHeadlessServices``) and adopts an
    existing Service of that name instead of creating one (``CreateHeadlessServiceIfNotExists``), so a set named
    like the server's ClusterIP Service would leave ``$(LWS_LEADER_ADDRESS)`` (``<leader>.<lws>.<ns>``) without
    a DNS record, and no worker would find its leader.
    """
    base = f"{name}-lws"
    return f"{base}-{index}" if index else base


def lws_controller(name: str, parent: pulumi.Resource, repository: str | None = None) -> k8s.helm.v4.Chart:
    """The LWS controller's chart in its own namespace, from ``repository`` where the stack mirrors it
    (serving.chart_source). It waits for nothing of the server's (GPU pool, weight sync): it installs while they are
    created."""
    namespace = core.Namespace(f"{name}-lws-namespace", metadata=meta.ObjectMetaArgs(
        name=LWS_NAMESPACE, labels={"app.kubernetes.io/part-of": pods.PART_OF}),
        opts=pulumi.ResourceOptions(parent=parent))
    return k8s.helm.v4.Chart(
        f"{name}-lws", **chart_location(PINNED_LWS_CHART, repository), namespace=LWS_NAMESPACE, name="lws",
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[namespace]))

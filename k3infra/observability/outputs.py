"""The stack output ``monitoring``: where the metrics go, where the dashboard is, which alerts exist."""

from typing import Any, Sequence

import pulumi

from ..catalog import EngineName
from . import dashboard
from .rules import Alert


def monitoring_output(*, service: str, engine: EngineName, disaggregated: bool, alerts: Sequence[Alert],
                      gpu_metrics: str, dashboard_at: pulumi.Input[str] | None = None, import_into: str | None = None,
                      **extra: pulumi.Input[Any]) -> dict[str, Any]:
    """``service``: the managed Prometheus; ``disaggregated``: the stack's topology (a disaggregated vLLM stack's
    dashboard is ``kimi-k3-vllm-pd``, ``dashboard.stack_board``); ``dashboard_at``: where the dashboard was
    provisioned, or ``import_into``: how to import the committed file where the cloud has no managed Grafana k3infra
    provisions."""
    pd = dashboard.stack_board(engine, disaggregated)
    board: dict[str, Any] = {"file": dashboard.repo_path(engine, disaggregated=pd),
                             "uid": dashboard.uid(engine, disaggregated=pd)}
    if dashboard_at is not None:
        board["provisioned"] = dashboard_at
    if import_into is not None:
        board["import"] = import_into
    return {"metrics": service, "gpuMetrics": gpu_metrics, "dashboard": board,
            "alerts": [a.name for a in alerts], **extra}


class Monitoring(pulumi.ComponentResource):
    """The parent of one stack's monitoring resources (workspace, collector, scrape objects, rules, dashboard)."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("k3infra:index:Monitoring", name, None, opts)

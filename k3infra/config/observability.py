"""Reading a deployment: the observability section (the managed Prometheus workspace, the alerts' windows) and the
group ``k3infra status``'s read-only roles are bound to."""

import re
from typing import Any

from ..catalog import KUBERNETES_PLATFORMS, Cloud, Platform
from .model import ObservabilityConfig, StatusConfig
from .problems import Problems
from .schema import K


#: What ``observability.workspace`` names per cloud, and its shape.
WORKSPACE_PATTERNS: dict[Cloud, tuple[str, str]] = {
    Cloud.AWS: (r"arn:aws[a-z-]*:aps:[a-z0-9-]+:\d{12}:workspace/ws-[0-9a-f-]+",
                "an Amazon Managed Service for Prometheus workspace ARN (arn:aws:aps:REGION:ACCOUNT:workspace/ws-...)"),
    Cloud.AZURE: (r"/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[^/]+/providers/Microsoft\.Monitor/accounts/[^/]+",
                  "an Azure Monitor workspace id (/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Monitor/"
                  "accounts/NAME)"),
}


def read_status(v: dict[str, Any], platform: Platform | None, p: Problems) -> StatusConfig:
    """``status.group``: only where the stack creates the Kubernetes workload (the roles name its Jobs and
    Services); HyperPod's and PAI-EAS's servers are the platform's."""
    s = v.get("status")
    group = s.get("group") if isinstance(s, dict) else None
    if not isinstance(group, str):
        return StatusConfig()
    if platform is not None and platform not in KUBERNETES_PLATFORMS:
        p.add(K + "status.group", f"binds the roles of the Kubernetes workload the stack creates, and on {platform} "
              "the platform runs the server" + ("; apply `k3infra status --print-role` to the EKS cluster by hand"
                                                if platform == Platform.HYPERPOD else ""),
              group, "unset, or a Kubernetes platform (" + ", ".join(sorted(KUBERNETES_PLATFORMS)) + ")")
        return StatusConfig()
    return StatusConfig(group=group)


def read_observability(v: dict[str, Any], cloud: Cloud | None, platform: Platform | None, p: Problems,
                       warnings: list[str]) -> ObservabilityConfig | None:
    """The ``observability`` section: a workspace of the shape the cloud names (none where the cloud has no
    workspace to name)."""
    o = v["observability"]
    if not isinstance(o, dict):
        return None
    key = K + "observability."
    workspace = o.get("workspace")
    if isinstance(workspace, str) and cloud is not None:
        shape = WORKSPACE_PATTERNS.get(cloud)
        if shape is None:
            p.add(key + "workspace", f"{cloud} has no workspace to name: its managed Prometheus is the project's "
                  "(Google Cloud) or the cluster's own ARMS instance (Alibaba Cloud)", workspace, "unset")
        elif not re.fullmatch(shape[0], workspace):
            p.add(key + "workspace", "is not well formed", workspace, shape[1])
    scaled_hyperpod = platform == Platform.HYPERPOD and isinstance(v.get("autoscaling"), dict) and \
        v["autoscaling"].get("enabled") is True
    if platform is not None and platform not in KUBERNETES_PLATFORMS and o.get("enabled") and o.get("workspace") \
            and not scaled_hyperpod:
        warnings.append(f"observability.workspace is ignored on {platform}: the platform keeps its own metrics "
                        "(docs/serving.md#metrics-dashboard-and-alerts)")
    if p.keys() & {key + f for f in o}:
        return None
    return ObservabilityConfig(enabled=bool(o["enabled"]), workspace=workspace if isinstance(workspace, str) else None,
                               stall_minutes=int(o["stallMinutes"]),
                               capacity_margin_hours=int(o["capacityMarginHours"]))

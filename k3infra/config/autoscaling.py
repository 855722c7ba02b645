"""The ``k3infra:autoscaling`` block: validated against the platform's scaler (k3infra.catalog.autoscaling) and the
reserved capacity, every problem with its key, the value given and what is allowed."""

import math
from typing import Any

from ..catalog import AddonState, Platform, Workload
from ..catalog.autoscaling import (DEFAULT_TARGETS, SCALE_DOWN_DELAY_FACTOR, SCALERS, TARGET_RANGES, Scaler,
                                   ScalingSignal)
from ..catalog.topologies import TopologyMode
from ..sizing import ReplicaStart, Sizing, TopologySizing, replica_start
from .model import AutoscalingConfig
from .problems import Problems
from .role_autoscaling import role_scalings, roles_placed
from .schema import MISSING, NAMESPACE
from .topology import mode_of

KEY = NAMESPACE + ":autoscaling."

SCALE_TO_ZERO_WARNING = ("autoscaling.scaleToZero: the first request after idle waits for a whole cold start, which "
                         "reloads the 1.56 TB of weights; apply scale-to-zero only after measuring your real traffic "
                         "patterns (002 §6.2)")


def _section(v: dict[str, Any], name: str) -> dict[str, Any]:
    value = v.get(name)
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def capacity_replicas(v: dict[str, Any], platform: Platform | None, nodes: int) -> int | None:
    """Replicas the reserved capacity holds: the GPU pool is ``replicas`` replicas' nodes; a PAI-EAS quota or
    resource group holds ``alicloud.paiResourceMachines`` machines where the stack states it."""
    replicas = _int(v.get("replicas"))
    held = _int(_section(v, "alicloud").get("paiResourceMachines"))
    if platform == Platform.PAI_EAS and held is not None and nodes:
        return held // nodes
    return replicas


def default_scale_down_delay(start_seconds: int) -> int:
    """SCALE_DOWN_DELAY_FACTOR new-replica starts, in whole minutes."""
    return math.ceil(SCALE_DOWN_DELAY_FACTOR * start_seconds / 60) * 60


def autoscaling(v: dict[str, Any], platform: Platform | None, workload: Workload | None, sizing: Sizing | None,
                p: Problems, warnings: list[str]) -> AutoscalingConfig | None:
    """The stack's AutoscalingConfig, or None where a problem (or an earlier one) leaves it undecided."""
    a = v.get("autoscaling")
    if not isinstance(a, dict) or platform is None or sizing is None:
        return None
    scaler = SCALERS[platform]
    capacity = capacity_replicas(v, platform, sizing.nodes)
    if capacity is None:
        return None
    start = replica_start(sizing, scaler.reaction_seconds)
    enabled = a.get("enabled") is True
    given = {k for k in ("minReplicas", "maxReplicas", "signal", "target", "scaleDownDelaySeconds") if a.get(k) is not None}
    disaggregated = sizing.topology is not None and mode_of(v) == TopologyMode.DISAGGREGATED
    given |= roles_placed(a, disaggregated, p)
    if not enabled:
        if given or a.get("scaleToZero"):
            warnings.append(f"autoscaling.{', autoscaling.'.join(sorted(given or {'scaleToZero'}))} ignored: "
                            "autoscaling.enabled is false")
        fixed = _int(v.get("replicas")) or capacity
        return AutoscalingConfig(enabled=False, min_replicas=fixed, max_replicas=fixed,
                                 capacity_replicas=capacity, signal=scaler.signals[0],
                                 target=DEFAULT_TARGETS[scaler.signals[0]],
                                 scale_down_delay_seconds=default_scale_down_delay(start.total_seconds),
                                 scale_to_zero=False, scaler=scaler, start=start,
                                 why_none=_why_none(platform, workload, sizing))
    if disaggregated and sizing.topology is not None:
        return _per_role(v, a, platform, capacity, start, sizing.topology, scaler, p, warnings)
    before = len(p.items)
    if workload == Workload.STATEFUL_SET:
        p.add(KEY + "enabled", ONE_REPLICA_PATTERN, True, "false, or k3infra:workload leaderworkerset")
    zero = a.get("scaleToZero") is True
    if zero and scaler.scale_to_zero:
        p.add(KEY + "scaleToZero", f"{platform} cannot scale to zero: {scaler.scale_to_zero}", True,
              "false (minReplicas 1 or more); scale-to-zero is PAI-EAS's (its gateway wakes the service)")
    given_signal = a.get("signal")
    signal: ScalingSignal = given_signal if isinstance(given_signal, ScalingSignal) else scaler.signals[0]
    if signal not in scaler.signals:
        p.add(KEY + "signal", f"{platform}'s scaler ({scaler.mechanism}) does not read it", str(signal),
              ", ".join(scaler.signals))
    given_target = a.get("target")
    target = float(given_target) if isinstance(given_target, float) else float(DEFAULT_TARGETS[signal])
    lo, hi = TARGET_RANGES[signal]
    if not lo <= target <= hi:
        p.add(KEY + "target", f"is out of range for signal {signal}", target, f"{lo:g} to {hi:g}")
    low = _int(a.get("minReplicas"))
    if low is None:
        low = 0 if zero else 1
    elif low == 0 and not zero:
        p.add(KEY + "minReplicas", "0 replicas is scale-to-zero", 0, "1 or more, or scaleToZero: true (PAI-EAS)")
    elif low > 0 and zero:
        p.add(KEY + "minReplicas", "scaleToZero takes the replicas to 0", low, "0 or unset with scaleToZero")
    high = _int(a.get("maxReplicas"))
    high = capacity if high is None else high
    if high > capacity:
        what = ("alicloud.paiResourceMachines" if platform == Platform.PAI_EAS and
                _int(_section(v, "alicloud").get("paiResourceMachines")) is not None else "k3infra:replicas")
        p.add(KEY + "maxReplicas", f"{high} replica(s) of {sizing.nodes} node(s) need {high * sizing.nodes} nodes, and "
              f"the reserved capacity holds {capacity} replica(s) ({capacity * sizing.nodes} nodes, {what})", high,
              f"at most {capacity}, or more reserved capacity ({what})")
    if low > high:
        p.add(KEY + "minReplicas", f"is more than maxReplicas ({high})", low, f"0 to {high}")
    delay = _int(a.get("scaleDownDelaySeconds"))
    delay = default_scale_down_delay(start.total_seconds) if delay is None else delay
    _platform_needs(v, platform, p)
    if len(p.items) > before:
        return None
    if delay < start.total_seconds:
        warnings.append(f"autoscaling.scaleDownDelaySeconds {delay} is shorter than a new replica's start "
                        f"({start.total_seconds} s): a lull that short gives up a replica that takes longer to return")
    if low == high:
        warnings.append(f"autoscaling: minReplicas and maxReplicas are both {low}: the scaler has nothing to scale")
    if zero:
        warnings.append(SCALE_TO_ZERO_WARNING)
    return AutoscalingConfig(enabled=True, min_replicas=low, max_replicas=high, capacity_replicas=capacity,
                             signal=signal, target=target, scale_down_delay_seconds=delay, scale_to_zero=zero,
                             scaler=scaler, start=start)


def _per_role(v: dict[str, Any], a: dict[str, Any], platform: Platform, capacity: int, start: ReplicaStart,
              top: TopologySizing, scaler: Scaler, p: Problems, warnings: list[str]) -> AutoscalingConfig | None:
    """A disaggregated topology's scalers (config.role_autoscaling), one per role, with the stack's scale-down delay
    (default: twice one group's start, ``start``: the prefill group's, as the stack's sizing is)."""
    before = len(p.items)
    roles = role_scalings(a, top, p)
    _platform_needs(v, platform, p)
    if roles is None or len(p.items) > before:
        return None
    delay = _int(a.get("scaleDownDelaySeconds"))
    delay = default_scale_down_delay(start.total_seconds) if delay is None else delay
    for r in roles:
        if r.min_groups == r.max_groups:
            warnings.append(f"autoscaling.roles.{r.role}: minGroups and maxGroups are both {r.min_groups}: the "
                            f"{r.role} scaler has nothing to scale (raise topology.{r.role}.groups)")
    return AutoscalingConfig(enabled=True, min_replicas=capacity, max_replicas=capacity, capacity_replicas=capacity,
                             signal=roles[0].signal, target=roles[0].target, scale_down_delay_seconds=delay,
                             scale_to_zero=False, scaler=scaler, start=start, roles=roles)


ONE_REPLICA_PATTERN = "the StatefulSet pattern (000) runs exactly one replica"


def _why_none(platform: Platform, workload: Workload | None, sizing: Sizing) -> str:
    """Why enabling autoscaling on this stack would be refused (``""``: it would not)."""
    if workload == Workload.STATEFUL_SET:
        return ONE_REPLICA_PATTERN
    return ""


def _platform_needs(v: dict[str, Any], platform: Platform, p: Problems) -> None:
    """What the scaler reads its signal from: HyperPod's trigger and EKS's KEDA an AMP workspace, an existing
    cluster's KEDA the cluster's own Prometheus."""
    if platform == Platform.HYPERPOD:
        if _section(v, "observability").get("workspace") in (None, MISSING):
            p.add(NAMESPACE + ":observability.workspace", "is required with autoscaling on HyperPod: the operator's "
                  "Prometheus trigger queries an Amazon Managed Service for Prometheus workspace (the CRD's "
                  "prometheusTrigger.serverAddress is an aps-workspaces URL) that receives the engine's metrics",
                  None, "the workspace's ARN, arn:aws:aps:REGION:ACCOUNT:workspace/ws-...")
    managed = {Platform.EKS: "Amazon Managed Service for Prometheus workspace",
               Platform.GKE: "Managed Service for Prometheus collection",
               Platform.AKS: "Azure Monitor workspace (managed Prometheus)",
               Platform.ACK: "ARMS Prometheus instance (the arms-prometheus add-on)"}
    if platform in managed and _section(v, "observability").get("enabled") is not True:
        p.add(NAMESPACE + ":observability.enabled", f"autoscaling on {platform} reads the engine's metrics from the "
              f"stack's {managed[platform]}, which observability sets up", False, "true")
    if platform == Platform.EXISTING_CLUSTER:
        k = _section(v, "kubernetes")
        if k.get("prometheusOperator") != AddonState.PRESENT:
            p.add(NAMESPACE + ":kubernetes.prometheusOperator", "autoscaling needs the cluster's Prometheus: KEDA's "
                  "Prometheus trigger queries the prometheus-operated Service that scrapes the server",
                  str(k.get("prometheusOperator")), "present")

"""The alert rules, cloud-neutral: PromQL, a ``for`` duration, a severity and a summary. Each cloud's monitoring
module turns them into its own rule objects (GKE Rules/ClusterRules, Azure prometheusRuleGroups, an AMP rule
groups namespace, ARMS alert rules)."""

import dataclasses
import math
from dataclasses import dataclass
from datetime import datetime, timezone

from ..catalog import PROBE_SAFETY_FACTOR, EngineName, Workload
from ..catalog.metrics import DCGM_EXPORTER_FIELDS, ENGINE_METRICS, GPU, KEDA_HPA_PREFIX, PICKER, SCALER
from ..catalog.topologies import ROLE_SERIES_LABEL
from ..config.model import AutoscalingConfig, RoleScaling
from ..serving.autoscaling import SCALER_NAME, role_scaler_name, workload_target

STALL_MINUTES = 10
"""Default window of the no-tokens alert: requests present for this long and not one token generated."""
KV_CACHE_SATURATED = 0.95
"""KV cache share above which new requests queue or get preempted."""
KV_CACHE_SATURATED_MINUTES = 15
PREFIX_HITS_COLLAPSED = 0.1
"""ESTIMATE: share of prompt tokens served from the prefix cache below which Kimi K3's prefix-heavy traffic is
recomputing its prefixes (a router that stopped routing by prefix, a picker failing open, a thrashing cache)."""
PREFIX_HITS_COLLAPSED_MINUTES = 30
CAPACITY_MARGIN_HOURS = 24
"""Default warning ahead of the end of a capacity window."""


@dataclass(frozen=True)
class Alert:
    """One alerting rule."""

    name: str
    """Alert name (CamelCase, unique in the stack)."""
    expr: str
    """PromQL; the alert fires for each series it returns."""
    for_seconds: int
    """How long the expression must hold before the alert fires."""
    severity: str
    """``critical`` or ``warning``."""
    summary: str
    """What it means and what to do, for the notification."""
    cluster_wide: bool
    """True for GPU and capacity alerts (metrics outside the serving namespace); False for engine alerts."""

    @property
    def for_duration(self) -> str:
        """``for`` in Prometheus duration syntax (``90m``)."""
        minutes = math.ceil(self.for_seconds / 60)
        return f"{minutes}m"

    @property
    def for_iso8601(self) -> str:
        """``for`` as an ISO 8601 duration (Azure: ``PT90M``)."""
        return f"PT{math.ceil(self.for_seconds / 60)}M"


def _epoch(when: str) -> int:
    """Seconds since the epoch of an ISO 8601 time (``2026-12-15T11:30:00Z``, or a date)."""
    t = datetime.fromisoformat(when.replace("Z", "+00:00"))
    return int((t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp())


def engine_alerts(engine: EngineName, namespace: str, *, ready_budget_seconds: int,
                  stall_minutes: int = STALL_MINUTES) -> list[Alert]:
    """The serving alerts: server not ready, stalled, KV cache saturated.

    ``ready_budget_seconds`` is how long a start may legitimately take (the sizing's start-up probe budget): the
    server exports no metrics while it loads 1.56 TB, and a cold start must not page anyone.
    """
    m = ENGINE_METRICS[engine]
    sel = f'{{namespace="{namespace}"}}'
    window = f"{stall_minutes}m"
    return [
        Alert(
            name="KimiK3ServerNotReady",
            # The engine exports its metrics only once the API server is up (after the load): no series at all
            # from the namespace means no server answers.
            expr=f"absent({m.running}{sel})",
            for_seconds=ready_budget_seconds,
            severity="critical",
            summary=f"No {engine} server in namespace {namespace} has exported metrics for longer than the "
                    "start-up budget: the server is down or still not ready (kubectl get pods, engine logs).",
            cluster_wide=False,
        ),
        Alert(
            name="KimiK3NoTokensServed",
            expr=(f"sum(increase({m.generation_tokens}{sel}[{window}])) == 0 and "
                  f"(sum(min_over_time({m.running}{sel}[{window}])) + "
                  f"sum(min_over_time({m.waiting}{sel}[{window}]))) > 0"),
            for_seconds=60,
            severity="critical",
            summary=f"Requests have been running or queued for {stall_minutes} minutes in {namespace} and the "
                    "engine generated no token: it is hung (NCCL, a lost worker); restart the server group.",
            cluster_wide=False,
        ),
        Alert(
            name="KimiK3KvCacheSaturated",
            expr=f"max({m.kv_cache_usage}{sel}) > {KV_CACHE_SATURATED}",
            for_seconds=KV_CACHE_SATURATED_MINUTES * 60,
            severity="warning",
            summary=f"The KV cache of the {engine} server in {namespace} has been over "
                    f"{KV_CACHE_SATURATED:.0%} full for {KV_CACHE_SATURATED_MINUTES} minutes: requests queue "
                    "and get preempted; add a replica or lower the context length.",
            cluster_wide=False,
        ),
        _prefix_hits_collapsed(engine, namespace),
    ]


def _prefix_hits_collapsed(engine: EngineName, namespace: str) -> Alert:
    """The share of prompt tokens served from the prefix cache, while prompts flow, under
    ``PREFIX_HITS_COLLAPSED`` for ``PREFIX_HITS_COLLAPSED_MINUTES`` (issue 38)."""
    m = ENGINE_METRICS[engine]
    sel, window = f'{{namespace="{namespace}"}}', f"{PREFIX_HITS_COLLAPSED_MINUTES}m"
    return Alert(
        name="KimiK3PrefixCacheHitsCollapsed",
        expr=(f"sum(rate({m.prefix_cache_hits}{sel}[{window}])) / sum(rate({m.prefix_cache_queries}{sel}[{window}]))"
              f" < {PREFIX_HITS_COLLAPSED} and sum(rate({m.prefix_cache_queries}{sel}[{window}])) > 0"),
        for_seconds=PREFIX_HITS_COLLAPSED_MINUTES * 60,
        severity="warning",
        summary=f"Under {PREFIX_HITS_COLLAPSED:.0%} of the prompt tokens in {namespace} came from the prefix cache for "
                f"{PREFIX_HITS_COLLAPSED_MINUTES} minutes: prefixes are recomputed. Behind the inference gateway, check "
                "the picker (its pod, its logs, k3infra verify --replica-metrics); else the cache thrashes.",
        cluster_wide=False,
    )


PICKER_DOWN_MINUTES = 10
"""How long the gateway may run without its picker's metrics before it is said to fail open (a picker restart takes
a minute or two: its datastore syncs the pool)."""


def picker_alerts(namespace: str) -> list[Alert]:
    """The inference gateway's picker (issue 38): gone (the gateway fails open: every request load-balanced
    without its prefix), or finding no endpoint for requests."""
    sel = f'{{namespace="{namespace}"}}'
    return [
        Alert(
            name="KimiK3PickerFailingOpen",
            expr=f"absent({PICKER.ready_endpoints}{sel})",
            for_seconds=PICKER_DOWN_MINUTES * 60,
            severity="warning",
            summary=f"The inference gateway's endpoint picker in {namespace} has exported no metrics for "
                    f"{PICKER_DOWN_MINUTES} minutes: the InferencePool fails open, requests are load-balanced without "
                    "regard to their prefix (kubectl get pods -l llm-d-router-gateway, the EPP's logs).",
            cluster_wide=False,
        ),
        Alert(
            name="KimiK3PickerNoEndpoint",
            expr=f'sum(rate({PICKER.scheduler_attempts}{{namespace="{namespace}",status="failure"}}[5m])) > 0',
            for_seconds=5 * 60,
            severity="warning",
            summary=f"The endpoint picker in {namespace} has found no endpoint for requests for 5 minutes: no "
                    "replica is ready, or the pool selects none (its matchLabels, the role filters).",
            cluster_wide=False,
        ),
    ]


AT_MAXIMUM_MINUTES = 30
"""How long the scaler may want its maximum before the stack is told the reserved capacity is too small."""
SCALE_EVENTS_PER_HOUR = 4
"""More changes of the wanted replica count than this in an hour is thrash: each scale-out reloads the weights."""


def serving_replicas(engine: EngineName, namespace: str) -> str:
    """Replicas that serve: the engine exports its metrics only once loaded, and only a replica's leader is
    scraped, so each series of its running-requests gauge is one serving replica (0 when there is none)."""
    return f'(count({ENGINE_METRICS[engine].running}{{namespace="{namespace}"}}) or vector(0))'


def serving_groups(engine: EngineName, namespace: str, role: RoleScaling) -> str:
    """Groups of a disaggregated topology's role that serve: the scraped pods (``instance``) of the role's series,
    over the pods a group has scraped (every pod of a DEP group takes requests and is scraped, a TEP group's leader
    only; serving.model_server ``leader_selector``), 0 when none."""
    sel = f'{{namespace="{namespace}",{ROLE_SERIES_LABEL}="{role.role}"}}'
    count = f"(count(count by (instance) ({ENGINE_METRICS[engine].running}{sel})) or vector(0))"
    return f"{count} / {role.nodes}" if role.data_parallel and role.nodes > 1 else count


def autoscaling_alerts(engine: EngineName, namespace: str, hpa: str, *, start_seconds: int,
                       role: RoleScaling | None = None) -> list[Alert]:
    """The scaler's alerts: replicas wanted and not serving for longer than a new replica's start (with the
    probes' 1.5 margin), the maximum wanted for AT_MAXIMUM_MINUTES, and more than SCALE_EVENTS_PER_HOUR scale
    events in an hour. ``hpa`` is the HorizontalPodAutoscaler the scaler runs (kube-state-metrics' series);
    ``role``: a disaggregated topology's role it scales (the alerts then name it and count its groups)."""
    sel = f'{{namespace="{namespace}",horizontalpodautoscaler="{hpa}"}}'
    if role is not None:
        return [dataclasses.replace(a, name=f"KimiK3{role.role.capitalize()}{a.name.removeprefix('KimiK3')}",
                                    expr=a.expr.replace(serving_replicas(engine, namespace),
                                                        serving_groups(engine, namespace, role)),
                                    summary=a.summary.replace(f"The scaler in {namespace}",
                                                              f"The {role.role} role's scaler in {namespace}")
                                    .replace("(k3infra:replicas)", f"(topology.{role.role}.groups)")
                                    .replace("autoscaling.target", f"autoscaling.roles.{role.role}.target"))
                for a in autoscaling_alerts(engine, namespace, hpa, start_seconds=start_seconds)]
    return [
        Alert(
            name="KimiK3ReplicasWantedNotServing",
            expr=f"max({SCALER.desired}{sel}) > {serving_replicas(engine, namespace)}",
            for_seconds=math.ceil(PROBE_SAFETY_FACTOR * start_seconds),
            severity="warning",
            summary=f"The scaler in {namespace} wants more replicas than serve, for longer than a new replica "
                    "takes to start: pods pending (no free node in the reserved pool), an image pull or a weight "
                    "load failing (kubectl get pods, events).",
            cluster_wide=False,
        ),
        Alert(
            name="KimiK3ReplicasAtMaximum",
            expr=f"max({SCALER.desired}{sel}) >= max({SCALER.maximum}{sel})",
            for_seconds=AT_MAXIMUM_MINUTES * 60,
            severity="warning",
            summary=f"The scaler in {namespace} has wanted its maximum for {AT_MAXIMUM_MINUTES} minutes: the "
                    "traffic exceeds what the reserved capacity serves at the target; requests queue. Reserve "
                    "more capacity (k3infra:replicas) or accept the queue.",
            cluster_wide=False,
        ),
        Alert(
            name="KimiK3ScalingThrash",
            expr=f"max(changes({SCALER.desired}{sel}[1h])) > {SCALE_EVENTS_PER_HOUR}",
            for_seconds=0,
            severity="warning",
            summary=f"The scaler in {namespace} changed its replica count more than {SCALE_EVENTS_PER_HOUR} "
                    "times in an hour, and every scale-out reloads the weights: raise "
                    "autoscaling.scaleDownDelaySeconds or autoscaling.target.",
            cluster_wide=False,
        ),
    ]


def scaler_alerts(engine: EngineName, namespace: str, scaling: AutoscalingConfig | None,
                  workload: Workload | None) -> list[Alert]:
    """The alerts of the stack's ScaledObject (``autoscaling_alerts`` on KEDA's HPA for it,
    ``serving.autoscaling.SCALER_NAME``), or none where no ScaledObject scales the workload."""
    if scaling is None or not scaling.enabled or workload_target(workload) is None:
        return []
    if scaling.roles:  # a disaggregated topology: each role's ScaledObject (serving.keda.scaler_targets)
        return [alert for r in scaling.roles for alert in autoscaling_alerts(
            engine, namespace, KEDA_HPA_PREFIX + role_scaler_name(r.role), start_seconds=scaling.start.total_seconds,
            role=r)]
    return autoscaling_alerts(engine, namespace, KEDA_HPA_PREFIX + SCALER_NAME,
                              start_seconds=scaling.start.total_seconds)


GPU_MISSING_MINUTES = 15
"""How long fewer GPUs may report than the pool holds before the lost-GPU alert fires: room for a node that is
restarting or joining (ESTIMATE)."""


def gpu_alerts(exported: frozenset[str] = DCGM_EXPORTER_FIELDS, *, expected_gpus: int | None = None) -> list[Alert]:
    """GPU health from DCGM, from the fields the cluster's exporter exports (``exported``): XID errors and
    uncorrectable memory (ECC) errors where it exports them, and with ``expected_gpus`` (the GPU pool's nodes x GPUs
    per node) a GPU that stopped reporting (a node gone, or a GPU DCGM no longer reads: XID 79, fallen off the bus).
    An alert whose fields the exporter lacks is left out: it would never fire."""
    by = "max by (Hostname, gpu, UUID)"
    candidates = [
        (Alert(
            name="KimiK3GpuXidError",
            expr=f"{by} ({GPU.xid}) > 0",
            for_seconds=0,
            severity="critical",
            summary="A GPU reported an XID error (the value is the XID code; 48, 63, 64, 74, 79, 92-95 and 119 "
                    "mean the GPU or NVLink needs attention): check the node and drain it if the engine stalls.",
            cluster_wide=True,
        ), {GPU.xid}),
        (Alert(
            name="KimiK3GpuEccError",
            expr=(f"{by} (increase({GPU.uncorrectable_remapped_rows}[1h])) > 0 or "
                  f"{by} ({GPU.row_remap_failure}) > 0"),
            for_seconds=0,
            severity="critical",
            summary="A GPU had an uncorrectable ECC (HBM) error: a row was remapped or remapping failed. The GPU "
                    "needs a reset (a pending remap applies at reset) or replacement.",
            cluster_wide=True,
        ), {GPU.uncorrectable_remapped_rows, GPU.row_remap_failure}),
    ]
    if expected_gpus:
        candidates.append((Alert(
            name="KimiK3GpuMissing",
            # count() of no series is empty, not 0: a pool that has not come up (a capacity window not yet open)
            # does not fire, one that lost part of its GPUs does.
            expr=f"count({GPU.utilization}) < {expected_gpus}",
            for_seconds=GPU_MISSING_MINUTES * 60,
            severity="critical",
            summary=f"Fewer than the GPU pool's {expected_gpus} GPUs have reported utilisation for "
                    f"{GPU_MISSING_MINUTES} minutes: a GPU node is gone or DCGM no longer reads a GPU (XID 79, fallen "
                    "off the bus); the replica on it is down. Check the nodes (kubectl get nodes) and the node's "
                    "kernel log for NVRM Xid lines.",
            cluster_wide=True,
        ), {GPU.utilization}))
    return [alert for alert, fields in candidates if fields <= exported]


def capacity_alert(end: str, margin_hours: int = CAPACITY_MARGIN_HOURS) -> Alert:
    """Fires once the capacity window (e.g. an EC2 Capacity Block) ends within ``margin_hours``."""
    threshold = _epoch(end) - margin_hours * 3600
    return Alert(
        name="KimiK3CapacityWindowEnding",
        expr=f"vector(time()) > {threshold}",
        for_seconds=0,
        severity="warning",
        summary=f"The GPU capacity window ends at {end} (less than {margin_hours} h from now): its instances are "
                "reclaimed then. Extend or buy the next window, or plan the shutdown.",
        cluster_wide=True,
    )


def alerts(engine: EngineName, namespace: str, *, ready_budget_seconds: int, stall_minutes: int = STALL_MINUTES,
           capacity_end: str | None = None, margin_hours: int = CAPACITY_MARGIN_HOURS) -> list[Alert]:
    """Every alert of a stack: the engine's, the GPUs', and the capacity window's when it has an end."""
    out = engine_alerts(engine, namespace, ready_budget_seconds=ready_budget_seconds, stall_minutes=stall_minutes)
    out += gpu_alerts()
    if capacity_end:
        out.append(capacity_alert(capacity_end, margin_hours))
    return out


def prometheus_rule_groups(rules: list[Alert], group: str) -> dict[str, object]:
    """Rules in Prometheus' rule-file shape (``groups: [{name, rules: [{alert, expr, for, labels, annotations}]}]``),
    which GKE's Rules, AMP's rule groups namespace and every Prometheus read."""
    return {"groups": [{"name": group, "rules": [prometheus_rule(r) for r in rules]}]}


def prometheus_rule(r: Alert) -> dict[str, object]:
    """One alert as a Prometheus alerting rule."""
    out: dict[str, object] = {"alert": r.name, "expr": r.expr}
    if r.for_seconds:
        out["for"] = r.for_duration
    out["labels"] = {"severity": r.severity}
    out["annotations"] = {"summary": r.summary}
    return out

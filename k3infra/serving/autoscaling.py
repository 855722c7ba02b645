"""The scaler objects of the Kubernetes platforms: the PromQL of each signal over the engine's own metrics (the names
the dashboards use, checked against the pinned wheels: k3infra.catalog.metrics), and KEDA's ScaledObject on
the serving workload (k3infra.catalog.autoscaling cites KEDA and LWS). The scaler's alerts are observability's
(``k3infra.observability.rules.scaler_alerts``)."""

from dataclasses import dataclass
from typing import Any, Mapping

from .. import names
from ..catalog import EngineName, Workload
from ..catalog.autoscaling import KEDA_API_VERSION, ScalingSignal
from ..catalog.metrics import ENGINE_METRICS
from ..catalog.topologies import ROLE_SERIES_LABEL
from ..config.model import AutoscalingConfig
from .lws import LWS_API_VERSION

SCALER_NAME = f"{names.PREFIX}-scaler"
"""The ScaledObject's name (KEDA's HPA is ``keda-hpa-`` and this)."""

TARGETS: Mapping[Workload, tuple[str, str]] = {
    Workload.DEPLOYMENT: ("apps/v1", "Deployment"),
    Workload.LEADER_WORKER_SET: (LWS_API_VERSION, "LeaderWorkerSet"),
}
"""What a ScaledObject scales for each workload: a Deployment's pods, a LeaderWorkerSet's groups (the StatefulSet
pattern runs one replica and is not scaled)."""


def workload_target(workload: Workload | None) -> tuple[str, str] | None:
    """(apiVersion, kind) of the workload a scaler scales, or None for one it cannot."""
    return TARGETS.get(workload) if workload is not None else None


def role_scaler_name(role: str) -> str:
    """The ScaledObject of one role of a disaggregated topology (``k3-scaler-prefill``; KEDA's HPA is ``keda-hpa-``
    and this)."""
    return f"{SCALER_NAME}-{role}"


def role_series(labels: Mapping[str, str], role: str) -> dict[str, str]:
    """The label matchers of one role's series: the stack's and the role's (``llm_d_ai_role``, the pods'
    ``llm-d.ai/role`` as the scrape copies it, catalog.topologies.ROLE_SERIES_LABEL)."""
    return {**labels, ROLE_SERIES_LABEL: role}

RATE_WINDOW = "2m"
"""The rate window of the requests-per-second query: four scrapes at the 30 s interval (observability.scrape)."""


@dataclass(frozen=True)
class SignalQuery:
    """A PromQL query and how the scaler reads it."""

    query: str
    per_replica: bool
    """True: the query sums over the replicas and the scaler divides by them (KEDA/HPA ``AverageValue``); False: it
    is an average already (``Value``: desired = ceil(current x value / target))."""


def signal_query(engine: EngineName, signal: ScalingSignal, selector: Mapping[str, str]) -> SignalQuery:
    """The query of ``signal`` over the serving pods ``selector`` picks (Prometheus label matchers, sorted)."""
    m = ENGINE_METRICS[engine]
    labels = ",".join(f'{k}="{v}"' for k, v in sorted(selector.items()))
    if signal == ScalingSignal.QUEUE:
        return SignalQuery(f"sum({m.waiting}{{{labels}}})", per_replica=True)
    if signal == ScalingSignal.KV_CACHE:
        return SignalQuery(f"avg({m.kv_cache_usage}{{{labels}}})", per_replica=False)
    if signal == ScalingSignal.RPS:
        return SignalQuery(f"sum(rate({m.requests}{{{labels}}}[{RATE_WINDOW}]))", per_replica=True)
    if signal == ScalingSignal.PROMPT_TOKENS:
        return SignalQuery(f"sum(rate({m.prompt_tokens}{{{labels}}}[{RATE_WINDOW}]))", per_replica=True)
    if signal == ScalingSignal.RUNNING:
        return SignalQuery(f"sum({m.running}{{{labels}}})", per_replica=True)
    raise ValueError(f"no engine query for signal {signal}: the Kubernetes scalers read the engine's own metrics")


def scaled_object(*, name: str, namespace: str, target_api_version: str, target_kind: str, target_name: str,
                  server_address: str, query: SignalQuery, scaling: AutoscalingConfig,
                  authentication: str | None = None, extra_metadata: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A KEDA ScaledObject (keda.sh/v1alpha1) holding ``query`` at ``scaling.target`` per replica on the workload.

    A LeaderWorkerSet scales by whole groups (its scale subresource is ``spec.replicas``, one group per replica), a
    Deployment by pods; scale-out is immediate and scale-in waits the stack's scale-down delay (the HPA's
    scaleDown stabilization window); the floor is at least one replica (KEDA's Prometheus trigger reads the
    engine's metrics, which vanish with the last pod). ``authentication`` names a TriggerAuthentication in the
    namespace; ``extra_metadata`` adds trigger metadata (AMP's ``awsRegion``)."""
    trigger: dict[str, Any] = {
        "type": "prometheus",
        "name": f"engine-{scaling.signal.lower()}",
        "metricType": "AverageValue" if query.per_replica else "Value",
        "metadata": {"serverAddress": server_address, "query": query.query, "threshold": f"{scaling.target:g}",
                     **(extra_metadata or {})},
    }
    if authentication:
        trigger["authenticationRef"] = {"name": authentication}
    return {
        "apiVersion": KEDA_API_VERSION,
        "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": target_api_version, "kind": target_kind, "name": target_name},
            "minReplicaCount": scaling.min_replicas,
            "maxReplicaCount": scaling.max_replicas,
            "pollingInterval": scaling.scaler.reaction_seconds,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0},
                "scaleDown": {"stabilizationWindowSeconds": scaling.scale_down_delay_seconds,
                              "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
            }}},
            "triggers": [trigger],
        },
    }


def amp_query_url(workspace_arn: str) -> str:
    """The Prometheus-compatible query base of an Amazon Managed Service for Prometheus workspace, from its ARN
    (AMP user guide: ``https://aps-workspaces.REGION.amazonaws.com/workspaces/WORKSPACE_ID``)."""
    parts = workspace_arn.split(":")
    region, workspace = parts[3], parts[5].removeprefix("workspace/")
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace}"


def hyperpod_autoscaling_spec(scaling: AutoscalingConfig, engine: EngineName, namespace: str,
                              workspace_arn: str) -> dict[str, Any]:
    """The InferenceEndpointConfig's ``autoScalingSpec`` (the operator's KEDA): a Prometheus trigger on the AMP
    workspace the engine's metrics reach, scale-out at once, scale-in after the stack's delay."""
    q = signal_query(engine, scaling.signal, {"namespace": namespace})
    return {
        "minReplicaCount": scaling.min_replicas,
        "maxReplicaCount": scaling.max_replicas,
        "pollingInterval": scaling.scaler.reaction_seconds,
        "scaleUpStabilizationTime": 0,
        "scaleDownStabilizationTime": scaling.scale_down_delay_seconds,
        "prometheusTrigger": {
            "name": f"engine-{scaling.signal.lower()}",
            "serverAddress": amp_query_url(workspace_arn),
            "query": q.query,
            "targetValue": scaling.target,
            "metricType": "Average" if q.per_replica else "Value",
        },
    }

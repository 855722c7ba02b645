"""How each platform scales the model's replicas with traffic: its own mechanism, the signals it can read, whether
it can scale to zero, and where that is documented.

Facts only (no Pulumi, no configuration): ``k3infra.config.autoscaling`` validates a stack's ``k3infra:autoscaling``
block against them and the platforms' deployment modules render the scaler.
"""

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Mapping

from .types import Platform


class ScalingSignal(StrEnum):
    """What the scaler follows."""

    QUEUE = "queue"
    """Requests waiting in the engine's queue, per replica (vLLM ``num_requests_waiting``, SGLang ``num_queue_reqs``)."""
    KV_CACHE = "kvCache"
    """The share of the KV cache in use, averaged over the replicas (0 to 1)."""
    RPS = "rps"
    """Requests per second, per replica."""
    GPU = "gpu"
    """GPU utilization, percent: only where the platform reads nothing closer to the engine's load."""


@dataclass(frozen=True)
class Scaler:
    """One platform's scaling mechanism."""

    mechanism: str
    """What k3infra renders, in a few words (shown by ``k3infra plan``)."""
    signals: tuple[ScalingSignal, ...]
    """Signals it can follow, the default first."""
    scale_to_zero: str
    """Why it cannot scale to zero (``""``: it can)."""
    reaction_seconds: int
    """How long after the load changes the scaler acts: its polling or metric interval."""
    source: str


KEDA_SOURCE = ("KEDA v2.20 ScaledObject (keda.sh/v1alpha1, schemas/crds/keda-scaledobjects.yaml) with the Prometheus "
               "scaler (keda.sh/docs/2.20/scalers/prometheus: serverAddress, query, threshold); pollingInterval "
               "default 30 s; scaleTargetRef on a Deployment or a LeaderWorkerSet (its scale subresource, "
               "kubernetes-sigs/lws config/crd: subresources.scale on spec.replicas, one replica = one group)")

NO_REQUEST_HOLDER = ("nothing holds a request while no replica runs: the Service has no endpoint, so the first "
                     "request after idle fails instead of waiting, and the engine's metrics that would wake the "
                     "scaler vanish with its last pod")

KUBERNETES_SCALER = Scaler(
    mechanism="KEDA ScaledObject (Prometheus scaler on the engine's metrics)",
    signals=(ScalingSignal.QUEUE, ScalingSignal.KV_CACHE, ScalingSignal.RPS),
    scale_to_zero=NO_REQUEST_HOLDER,
    reaction_seconds=30,
    source=KEDA_SOURCE,
)

SCALERS: Mapping[Platform, Scaler] = MappingProxyType({
    Platform.PAI_EAS: Scaler(
        mechanism="EAS horizontal auto scaling (the service's autoscaler: min, max, scaleStrategies, behavior)",
        signals=(ScalingSignal.RPS, ScalingSignal.GPU),
        scale_to_zero="",
        reaction_seconds=30,
        source="PAI docs \"Horizontal auto scaling\" (desiredReplicas = ceil(current x metric / threshold), 10% "
               "tolerance; minimum instances down to 0; metrics QPS per instance, CPU, GPU utilization) and the EAS "
               "API CreateServiceAutoScaler/UpdateServiceAutoScaler (body min, max, scaleStrategies[].metricName "
               "qps|cpu and threshold, behavior.scaleUp/scaleDown.stabilizationWindowSeconds, "
               "behavior.onZero.scaleDownGracePeriodSeconds default 600); reaction ESTIMATE 30 s. The engine's "
               "queue and KV-cache metrics are not EAS scaling metrics, so QPS is the default and GPU "
               "utilization the fallback"),
    Platform.HYPERPOD: Scaler(
        mechanism="InferenceEndpointConfig autoScalingSpec (the operator's KEDA, Prometheus trigger on Amazon "
                  "Managed Service for Prometheus)",
        signals=(ScalingSignal.QUEUE, ScalingSignal.KV_CACHE, ScalingSignal.RPS),
        scale_to_zero=NO_REQUEST_HOLDER.replace("the Service has no endpoint", "the operator's load balancer has "
                                                "no target"),
        reaction_seconds=30,
        source="aws/sagemaker-hyperpod-cli 011ca92 inference-operator CRD (schemas/crds/"
               "hyperpod-inferenceendpointconfigs.yaml) spec.autoScalingSpec: minReplicaCount, maxReplicaCount, "
               "pollingInterval default 30, scaleDownStabilizationTime, prometheusTrigger.serverAddress (an "
               "aps-workspaces URL), query, targetValue; SageMaker docs \"Autoscaling policies for your HyperPod "
               "inference model deployment\""),
    Platform.EKS: Scaler(
        mechanism="KEDA ScaledObject (Prometheus scaler on Amazon Managed Service for Prometheus, SigV4 with EKS "
                  "Pod Identity)",
        signals=KUBERNETES_SCALER.signals, scale_to_zero=NO_REQUEST_HOLDER, reaction_seconds=30,
        source=KEDA_SOURCE + "; kedacore/keda v2.20.2 pkg/scalers/aws (podIdentity provider aws, awsRegion); AMP "
               "user guide (aps:QueryMetrics)"),
    Platform.GKE: Scaler(
        mechanism="KEDA ScaledObject (Prometheus scaler on Managed Service for Prometheus, Workload Identity)",
        signals=KUBERNETES_SCALER.signals, scale_to_zero=NO_REQUEST_HOLDER, reaction_seconds=30,
        source=KEDA_SOURCE + "; GKE docs \"Scale to zero using KEDA\" and \"Query using the Prometheus API\" "
               "(monitoring.googleapis.com/v1/projects/PROJECT/location/global/prometheus); chosen over GKE's HPA on "
               "custom metrics, which needs the Custom Metrics Stackdriver Adapter besides"),
    Platform.AKS: Scaler(
        mechanism="AKS KEDA add-on ScaledObject (Prometheus scaler on the Azure Monitor workspace, Microsoft Entra "
                  "Workload ID)",
        signals=KUBERNETES_SCALER.signals, scale_to_zero=NO_REQUEST_HOLDER, reaction_seconds=30,
        source=KEDA_SOURCE + "; AKS docs \"Install the KEDA add-on\" (ManagedCluster workloadAutoScalerProfile.keda."
               "enabled) and \"Securely scale your applications using the KEDA add-on and workload identity\" "
               "(operator kube-system/keda-operator, podIdentity.provider azure-workload); Azure Monitor docs "
               "\"Integrate KEDA with your Azure Kubernetes Service cluster\" (Monitoring Data Reader on the workspace, "
               "serverAddress its Prometheus query endpoint); kedacore/keda v2.20.2 pkg/scalers/azure/"
               "azure_managed_prometheus_http_round_tripper.go (token scope https://prometheus.monitor.azure.com). "
               "The add-on's KEDA version follows the cluster's Kubernetes version (AKS component version table), "
               "not the pinned 2.20.2: k3infra's ScaledObject uses fields KEDA has served since 2.10, the first "
               "release that queries Azure Monitor's Prometheus"),
    Platform.ACK: KUBERNETES_SCALER,
    Platform.EXISTING_CLUSTER: KUBERNETES_SCALER,
})
"""The scaler of every platform."""

NOT_WIRED: Mapping[Platform, str] = MappingProxyType({
    Platform.ACK: "ARMS Prometheus (its HTTP API address and token)",
})
"""Platforms whose KEDA scaler k3infra does not build yet, and what its Prometheus trigger would have to reach: the
managed Prometheus each stack writes to answers queries only with a cloud identity k3infra does not wire for KEDA."""

DEFAULT_TARGETS: Mapping[ScalingSignal, float] = MappingProxyType({
    ScalingSignal.QUEUE: 4,
    ScalingSignal.KV_CACHE: 0.8,
    ScalingSignal.RPS: 1,
    ScalingSignal.GPU: 80,
})
"""ESTIMATE: the default target of each signal, per replica: 4 requests waiting (a replica that queues more than
a few is saturated; vllm-project/production-stack's KEDA tutorial scales on vllm:num_requests_waiting), KV cache
80 % used (above it the engine preempts), 1 request per second (a 2.8T-parameter replica's long generations), GPU
utilization 80 %. Measure your traffic and set ``autoscaling.target``."""

TARGET_RANGES: Mapping[ScalingSignal, tuple[float, float]] = MappingProxyType({
    ScalingSignal.QUEUE: (0.1, 10_000),
    ScalingSignal.KV_CACHE: (0.05, 1),
    ScalingSignal.RPS: (0.01, 100_000),
    ScalingSignal.GPU: (1, 100),
})
"""What a target of each signal can be: a share for the KV cache, a percentage for GPU utilization."""

SCALE_DOWN_DELAY_FACTOR = 2
"""ESTIMATE: the default scale-down delay is this many times a new replica's start (scale-out to serving): a
replica that costs half an hour to bring back is not given up after a five-minute lull."""

KEDA_API_VERSION = "keda.sh/v1alpha1"
"""The API of KEDA's ScaledObject and TriggerAuthentication (v2.20.2, schemas/crds/keda-*.yaml)."""

PROMETHEUS_OPERATED_PORT = 9090
"""prometheus-operator's governing Service ``prometheus-operated`` in each Prometheus's namespace serves the web
port 9090 (prometheus-operator Documentation/platform/exposing-prometheus-alertmanager-grafana-ingress)."""

__all__ = ["DEFAULT_TARGETS", "TARGET_RANGES", "KEDA_API_VERSION", "KEDA_SOURCE", "NOT_WIRED", "PROMETHEUS_OPERATED_PORT", "SCALERS", "SCALE_DOWN_DELAY_FACTOR",
           "Scaler", "ScalingSignal"]

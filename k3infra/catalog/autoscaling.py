"""How each platform scales the model's replicas with traffic: its own mechanism, the signals it can read, whether
it can scale to zero, and where that is documented.

Facts only (no Pulumi, no configuration): ``k3infra.config.autoscaling`` validates a stack's ``k3infra:autoscaling``
block against them and the platforms' deployment modules render the scaler.
"""

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Mapping

from .topologies import RoleName
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
    PROMPT_TOKENS = "promptTokens"
    """Prompt tokens prefilled per second, per group (vLLM ``prompt_tokens_total``): a disaggregated topology's
    prefill role only (``ROLE_SIGNALS``)."""
    RUNNING = "running"
    """Requests being decoded, per group (vLLM ``num_requests_running``): a disaggregated topology's decode role
    only (``ROLE_SIGNALS``)."""


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
    Platform.ACK: Scaler(
        mechanism="KEDA ScaledObject (Prometheus scaler on ARMS Prometheus's HTTP API, basic auth with a read-only "
                  "RAM user's AccessKey)",
        signals=KUBERNETES_SCALER.signals, scale_to_zero=NO_REQUEST_HOLDER, reaction_seconds=30,
        source=KEDA_SOURCE + "; Managed Service for Prometheus docs \"Access Prometheus data through HTTP API URLs\" "
               "(the instance's public and internal HTTP API URLs; V2 instances: HTTP basic auth with an AccessKey "
               "pair whose RAM user holds AliyunPrometheusMetricReadAccess, V1: an optional console-generated token) "
               "and \"How can I integrate Prometheus with third-party systems\" (the HTTP API URL for HPA); "
               "pulumi_alicloud arms.get_prometheus (enable_details: http_api_intra_url, auth_token). KEDA's chart "
               "rather than ACK's ack-keda: ack-keda is Alibaba's extended KEDA from the ACK marketplace whose KEDA "
               "version and CRD no source pins, while the chart is the KEDA 2.20.2 the vendored CRD validates (as on "
               "EKS and GKE), and the query needs no ACK identity integration, only a Secret"),
    Platform.EXISTING_CLUSTER: KUBERNETES_SCALER,
})
"""The scaler of every platform."""

DEFAULT_TARGETS: Mapping[ScalingSignal, float] = MappingProxyType({
    ScalingSignal.QUEUE: 4,
    ScalingSignal.KV_CACHE: 0.8,
    ScalingSignal.RPS: 1,
    ScalingSignal.GPU: 80,
    ScalingSignal.PROMPT_TOKENS: 20_000,
    ScalingSignal.RUNNING: 64,
})
"""ESTIMATE: the default target of each signal, per replica: 4 requests waiting (a replica that queues more than
a few is saturated; vllm-project/production-stack's KEDA tutorial scales on vllm:num_requests_waiting), KV cache
80 % used (above it the engine preempts), 1 request per second (a 2.8T-parameter replica's long generations), GPU
utilization 80 %, 20,000 prompt tokens per second per prefill group (a TEP group of 8 Blackwell GPUs prefilling
a 1T-class MoE at a few thousand tokens per second per GPU) and 64 requests decoding per decode group (a DEP group's
batch per rank times a few ranks before the inter-token latency climbs). Measure your traffic and set
``autoscaling.target`` (``autoscaling.roles.<role>.target``)."""

TARGET_RANGES: Mapping[ScalingSignal, tuple[float, float]] = MappingProxyType({
    ScalingSignal.QUEUE: (0.1, 10_000),
    ScalingSignal.KV_CACHE: (0.05, 1),
    ScalingSignal.RPS: (0.01, 100_000),
    ScalingSignal.GPU: (1, 100),
    ScalingSignal.PROMPT_TOKENS: (1, 10_000_000),
    ScalingSignal.RUNNING: (1, 100_000),
})
"""What a target of each signal can be: a share for the KV cache, a percentage for GPU utilization."""

ROLE_SIGNALS: Mapping[RoleName, tuple[ScalingSignal, ...]] = MappingProxyType({
    RoleName.PREFILL: (ScalingSignal.QUEUE, ScalingSignal.PROMPT_TOKENS, ScalingSignal.RPS),
    RoleName.DECODE: (ScalingSignal.KV_CACHE, ScalingSignal.RUNNING, ScalingSignal.QUEUE),
})
"""What each role of a disaggregated topology can scale on, its default first (``autoscaling.roles.<role>.signal``),
each read on the role's own pods only. Prefill is compute-bound and scales with the prompts waiting for it and their
length: the requests queued on the prefill pods (vLLM ``num_requests_waiting``; llm-d's decode sidecar sends every
prompt there first) or the prompt tokens it prefills per second. Decode is bound by the KV cache it holds and the
sequences it runs: the KV cache in use (``kv_cache_usage_perc``, the signal llm-d's workload-variant-autoscaler
reads, with the queue) or the requests being decoded. Sources: llm-d docs "Workload Autoscaling" (llm-d.ai/docs/0.9/
well-lit-paths/foundations/workload-autoscaling: KEDA's Prometheus scaler on queue depth and running requests; WVA on
KV cache utilization and model server queue depth, with disaggregated roles scaled on their own), llm-d/llm-d
docs/proposals/autoscaler.md@f458af2 ("it must independently scale the prefill and decode instances"), NVIDIA Dynamo
docs "Planner" (prefill compute-bound with input length, decode memory-bound with concurrent sequences and KV cache
usage; separate prefill and decode replica counts) and ACK's "Configure an elastic scaling policy for a PD-decoupled
inference service" (KEDA on the prefill backlog, a separate policy for decode). GPU utilization is left out: it is
pegged near 100 % while batching (the llm-d page)."""

SCALE_DOWN_DELAY_FACTOR = 2
"""ESTIMATE: the default scale-down delay is this many times a new replica's start (scale-out to serving): a
replica that costs half an hour to bring back is not given up after a five-minute lull."""

KEDA_API_VERSION = "keda.sh/v1alpha1"
"""The API of KEDA's ScaledObject and TriggerAuthentication (v2.20.2, schemas/crds/keda-*.yaml)."""

ARMS_METRICS_READ_POLICY = "AliyunPrometheusMetricReadAccess"
"""The system policy that lets a RAM user read an ARMS Prometheus V2 instance's metrics over its HTTP API (Managed
Service for Prometheus docs, "Access Prometheus data through HTTP API URLs")."""

ARMS_INSTANCE_IS_CLUSTER_ID = ("UNCONFIRMED: the ARMS Prometheus instance the arms-prometheus add-on creates for an "
                               "ACK cluster has the cluster's id as its instance id (ARMS' alert-rule and Prometheus "
                               "APIs take the ACK cluster id as ClusterId, as k3infra's alert rules do); confirm with "
                               "`aliyun arms GetPrometheusInstance --RegionId REGION --ClusterId CLUSTER_ID` after the "
                               "first `pulumi up`, or the instance list of the ARMS console")
ARMS_INSTANCE_VERSION = ("UNCONFIRMED: the arms-prometheus add-on creates a V2 instance for a new cluster, which "
                         "answers its HTTP API with basic auth only; a V1 instance with a generated token wants that "
                         "token in an Authorization header instead (KEDA authModes custom). Confirm the version on "
                         "the instance's Settings tab in the ARMS console")
"""What the ACK scaler assumes of ARMS Prometheus and what would confirm it."""

PROMETHEUS_OPERATED_PORT = 9090
"""prometheus-operator's governing Service ``prometheus-operated`` in each Prometheus's namespace serves the web
port 9090 (prometheus-operator Documentation/platform/exposing-prometheus-alertmanager-grafana-ingress)."""

__all__ = ["ARMS_INSTANCE_IS_CLUSTER_ID", "ARMS_INSTANCE_VERSION", "ARMS_METRICS_READ_POLICY", "DEFAULT_TARGETS",
           "TARGET_RANGES", "KEDA_API_VERSION", "KEDA_SOURCE", "PROMETHEUS_OPERATED_PORT", "ROLE_SIGNALS", "SCALERS",
           "SCALE_DOWN_DELAY_FACTOR", "Scaler", "ScalingSignal"]

"""The metric names the dashboard and the alert rules query: one place per engine, and DCGM's.

Engine names are those the pinned releases define (vLLM 0.33.0 ``vllm/v1/metrics/loggers.py``, SGLang 0.5.23
``sglang/srt/observability/metrics_collector.py``), as extracted from the published wheels by
``scripts/engine-metrics`` into ``schemas/engine-metrics/``; tests/test_observability.py fails on any name a
release does not define. Counters are named as Prometheus exposes them (``_total``); histograms by their base
name (queries add ``_bucket``). GPU names are DCGM fields as dcgm-exporter 4.8.2 exports them by default
(``etc/default-counters.csv``), the same names GKE's managed DCGM, the GPU Operator and ACK's GPU exporter use.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .engines import ENGINES
from .types import EngineName

_RELEASES = {EngineName.VLLM: "0.33.0", EngineName.SGLANG: "0.5.23"}
"""The releases issue 13 pins, for as long as the catalog's ``Engine`` carries no ``release`` of its own."""

ENGINE_METRICS_RELEASE: Mapping[EngineName, str] = MappingProxyType({
    e: str(getattr(ENGINES[e], "release", None) or v) for e, v in _RELEASES.items()})
"""The engine release whose metric names the queries use: the catalog's pin when it has one (a new pin without
``schemas/engine-metrics/<engine>-<release>.json`` fails the metric-name test), else issue 13's."""


@dataclass(frozen=True)
class EngineMetrics:
    """What one engine calls each quantity the dashboard and the alerts need."""

    running: str
    """Gauge: requests being decoded."""
    waiting: str
    """Gauge: requests queued (the queue length)."""
    kv_cache_usage: str
    """Gauge, 0 to 1: the share of the KV cache in use."""
    prompt_tokens: str
    """Counter: prompt tokens processed."""
    generation_tokens: str
    """Counter: tokens generated."""
    requests: str
    """Counter: requests finished."""
    time_to_first_token: str
    """Histogram (seconds): time to first token."""
    time_per_output_token: str
    """Histogram (seconds): time between output tokens (inter-token latency)."""
    request_latency: str
    """Histogram (seconds): end-to-end request latency."""
    prefix_cache_hits: str = ""
    """Counter: prompt tokens served from the prefix cache (issue 38: the hit rate the gateway's routing moves)."""
    prefix_cache_queries: str = ""
    """Counter: prompt tokens looked up in the prefix cache (the hit rate's denominator)."""


ENGINE_METRICS: Mapping[EngineName, EngineMetrics] = MappingProxyType({
    EngineName.VLLM: EngineMetrics(
        running="vllm:num_requests_running",
        waiting="vllm:num_requests_waiting",
        kv_cache_usage="vllm:kv_cache_usage_perc",
        prompt_tokens="vllm:prompt_tokens_total",
        generation_tokens="vllm:generation_tokens_total",
        requests="vllm:request_success_total",
        time_to_first_token="vllm:time_to_first_token_seconds",
        time_per_output_token="vllm:inter_token_latency_seconds",
        request_latency="vllm:e2e_request_latency_seconds",
        prefix_cache_hits="vllm:prefix_cache_hits_total",
        prefix_cache_queries="vllm:prefix_cache_queries_total",
    ),
    EngineName.SGLANG: EngineMetrics(
        running="sglang:num_running_reqs",
        waiting="sglang:num_queue_reqs",
        kv_cache_usage="sglang:token_usage",
        prompt_tokens="sglang:prompt_tokens_total",
        generation_tokens="sglang:generation_tokens_total",
        requests="sglang:num_requests_total",
        time_to_first_token="sglang:time_to_first_token_seconds",
        time_per_output_token="sglang:inter_token_latency_seconds",
        request_latency="sglang:e2e_request_latency_seconds",
        prefix_cache_hits="sglang:cached_tokens_total",
        prefix_cache_queries="sglang:prompt_tokens_total",
    ),
})
"""Engine metric names by engine."""


@dataclass(frozen=True)
class GpuMetrics:
    """DCGM fields (dcgm-exporter default counters)."""

    utilization: str = "DCGM_FI_DEV_GPU_UTIL"
    """GPU utilisation, percent."""
    memory_used: str = "DCGM_FI_DEV_FB_USED"
    """Framebuffer memory used, MiB."""
    memory_free: str = "DCGM_FI_DEV_FB_FREE"
    """Framebuffer memory free, MiB."""
    xid: str = "DCGM_FI_DEV_XID_ERRORS"
    """The last XID error's code (0: none)."""
    uncorrectable_remapped_rows: str = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
    """Counter: HBM rows remapped after uncorrectable (double-bit) ECC errors; how Ampere and later GPUs report
    them (the ``DCGM_FI_DEV_ECC_DBE_*`` fields are not in the default counters)."""
    row_remap_failure: str = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
    """1 when a row could not be remapped: the GPU needs replacing."""


GPU = GpuMetrics()
"""The DCGM fields the dashboard and the alerts read; which of them a cluster has depends on its exporter
(``DCGM_EXPORTER_FIELDS``, ``GKE_MANAGED_DCGM_FIELDS``)."""

DCGM_EXPORTER_FIELDS: frozenset[str] = frozenset({
    GPU.utilization, GPU.memory_used, GPU.memory_free, GPU.xid, GPU.uncorrectable_remapped_rows,
    GPU.row_remap_failure})
"""The fields of ``GPU`` that NVIDIA's dcgm-exporter exports by default, and so the exporters that keep its default
counters: the chart k3infra installs on AKS and EKS, the GPU Operator's on an existing cluster, ACK's GPU exporter
(DCGM exporter metric names). tests/observability/test_metrics.py holds them to dcgm-exporter 4.8.2's
``etc/default-counters.csv`` (vendored under schemas/engine-metrics)."""

GKE_MANAGED_DCGM_FIELDS: frozenset[str] = frozenset({
    "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_NVLINK_RX_BYTES",
    "DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY",
})
"""What GKE's managed DCGM metrics package exports (monitoring component ``DCGM``: GKE installs its own
DCGM-Exporter and ClusterPodMonitoring), from the list on GKE's "Collect and view DCGM metrics"
(cloud.google.com/kubernetes-engine/docs/how-to/dcgm-metrics, section "DCGM metrics"): utilisation, framebuffer,
temperature, power, clocks, energy, NVLink and PCIe traffic and the profiling ratios. No XID and no ECC or row-remap
field: alerts on them would never fire on GKE. UNCONFIRMED in part: the list as recalled from that page, whose
table could not be read here; on a cluster, ``gcloud monitoring metric-descriptors list
--filter='metric.type=starts_with("prometheus.googleapis.com/DCGM_FI")'`` shows what it exports."""


@dataclass(frozen=True)
class ScalerMetrics:
    """kube-state-metrics' HorizontalPodAutoscaler series, all three STABLE and labelled ``namespace`` and
    ``horizontalpodautoscaler`` (kubernetes/kube-state-metrics 04b7f64
    docs/metrics/workload/horizontalpodautoscaler-metrics.md; kube-state-metrics publishes no Go module or wheel to
    read them from, so they are stated here); KEDA runs each ScaledObject through an HPA named ``keda-hpa-<ScaledObject>``
    (KEDA docs, "Scaling Deployments, StatefulSets & Custom Resources")."""

    desired: str = "kube_horizontalpodautoscaler_status_desired_replicas"
    """Replicas the scaler wants."""
    current: str = "kube_horizontalpodautoscaler_status_current_replicas"
    """Replicas the workload has (created, not necessarily serving)."""
    maximum: str = "kube_horizontalpodautoscaler_spec_max_replicas"
    """The scaler's ceiling."""


SCALER = ScalerMetrics()
"""The scaler metrics the autoscaling alerts and the dashboard's replica panels query."""

KEDA_HPA_PREFIX = "keda-hpa-"
"""The name KEDA gives the HPA of a ScaledObject, before the ScaledObject's name."""


@dataclass(frozen=True)
class PickerMetrics:
    """The inference gateway's endpoint picker (llm-d-router v0.10.0, commit 71f4f0999f95): ``pkg/epp/metrics/
    llm_d_router_metrics.go`` (subsystem ``llm_d_epp``) and ``pkg/kvcache/metrics/collector.go`` (subsystem
    ``llm_d_router_epp``). Scraped where the stack installs the gateway, by a scrape object of its own
(``observability.scrape.picker_target``), in the serving namespace."""

    scheduler_attempts: str = "llm_d_epp_scheduler_attempts_total"
    """Counter, labels ``status`` (success, failure), ``target_model_name`` and the picked ``pod_name``: the routing
    decisions, per replica."""
    average_queue_size: str = "llm_d_epp_average_queue_size"
    """Gauge: the pool's mean queue length as the picker scrapes it."""
    average_kv_cache_utilization: str = "llm_d_epp_average_kv_cache_utilization"
    """Gauge: the pool's mean KV-cache use."""
    ready_endpoints: str = "llm_d_epp_ready_endpoints"
    """Gauge: endpoints the picker can route to."""
    index_lookup_hits: str = "llm_d_router_epp_kv_cache_index_lookup_hits_total"
    """Counter: block keys found in the precise index on lookup (``LookupHits``)."""
    index_lookup_requests: str = "llm_d_router_epp_kv_cache_index_lookup_requests_total"
    """Counter: lookups of the precise index (``LookupRequests``)."""
    event_subscribers: str = "llm_d_router_epp_kv_cache_events_active_subscribers"
    """Gauge: engine KV-event streams the picker is subscribed to (one per publishing replica)."""
    disagg_decisions: str = "llm_d_epp_disagg_decision_total"
    """Counter, labels ``plugin_name``, ``plugin_type``, ``model_name``, ``decision_type``: one per request the
    ``disagg-profile-handler`` routed (``pkg/epp/framework/plugins/scheduling/profilehandler/disagg/metrics.go``
    ``LlmdDisaggDecisionCount``@v0.10.0, recorded in ``disagg_profile_handler.go`` ``pickDecodeFirst``).
    ``decode-only`` (``DISAGG_DECODE_ONLY``) is a request the decode prefills itself: the P/D decider chose not to
    disaggregate it, or the prefill profile picked no prefill endpoint (``pkg/epp/scheduling/scheduler.go``: "if
    profile failed to run, the run result is nil", which ``DisaggDecisionType`` reads as no prefill)."""


PICKER = PickerMetrics()
"""The picker's metric names the dashboard and the alerts may query."""

DISAGG_DECODE_ONLY = "decode-only"
"""``llm_d_epp_disagg_decision_total``'s ``decision_type`` of a request prefilled on its decode
(``DecisionTypeDecodeOnly``, disagg/metrics.go@v0.10.0); ``prefill-decode`` (``DISAGG_PREFILL_DECODE``) went through a
prefill server. llm-d's routing sidecar (v0.3.0, ``internal/proxy/chat_completions.go``) passes a request without a
prefill header straight to its decode ("skip disaggregated prefill") and fails one whose prefill fails
(``connector_nixlv2.go``: the prefill's status returned): it exports no metrics, so the picker's decision is where a
local prefill is counted."""
DISAGG_PREFILL_DECODE = "prefill-decode"
"""``decision_type`` of a request prefilled on a prefill server (``DecisionTypePrefillDecode``)."""


NIXL_SOURCE = "vllm 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py NixlPromMetrics"
"""Where the NIXL connector's metrics are defined: ``NixlPromMetrics.__init__`` (stats.py lines 187-285), built by
``NixlConnector.build_prom_metrics`` (nixl/connector.py line 288) through ``KVConnectorProm`` (kv_connector/v1/
metrics.py line 142), which vLLM's ``PrometheusStatLogger`` creates with ``labelnames = ["model_name", "engine"]``
(v1/metrics/loggers.py lines 499 and 514) and feeds from the scheduler's ``kv_connector_stats`` (loggers.py line 1197):
the API server's ``/metrics`` serves them, only where ``--kv-transfer-config`` names a connector. An observation is one
NIXL transfer handle that finished (``base_worker.py`` line 3424, ``record_transfer`` of ``get_xfer_telemetry``): the
reader's, so the decode's under NixlConnector's pull."""


@dataclass(frozen=True)
class NixlMetrics:
    """vLLM's NixlConnector metrics (``NIXL_SOURCE``), all labelled ``model_name`` and ``engine``. Counters as
    Prometheus exposes them (``_total``, as ``schemas/engine-metrics/vllm-0.33.0.json`` lists the samples);
    histograms by their base name."""

    xfer_time: str = "vllm:nixl_xfer_time_seconds"
    """Histogram (seconds): one transfer's duration (NIXL telemetry ``xferDuration``, microseconds / 1e6); buckets
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0 (stats.py line 187, ``buckets[1:]``)."""
    post_time: str = "vllm:nixl_post_time_seconds"
    """Histogram (seconds): the time to post a transfer (``postDuration``)."""
    bytes_transferred: str = "vllm:nixl_bytes_transferred"
    """Histogram (bytes): bytes per transfer, buckets 2 KiB to 8 GiB."""
    num_descriptors: str = "vllm:nixl_num_descriptors"
    """Histogram: descriptors per transfer."""
    failed_transfers: str = "vllm:nixl_num_failed_transfers_total"
    """Counter: failed transfers, handshake failures and failed notifications together (stats.py lines 243 and 316:
    "all are sporadic lower-transport-layer events")."""
    failed_notifications: str = "vllm:nixl_num_failed_notifications_total"
    """Counter: failed notifications only (also counted in ``failed_transfers``)."""
    kv_expired_requests: str = "vllm:nixl_num_kv_expired_reqs_total"
    """Counter: requests whose prefilled KV expired before the decode read it ("tracked on the P instance")."""
    notifications_after_expiry: str = "vllm:nixl_num_notifications_after_expiry_total"
    """Counter: completion notifications for requests no longer tracked (their KV lease expired)."""

    @property
    def names(self) -> frozenset[str]:
        """Every metric above (what tests/observability holds to the installed vLLM's source)."""
        return frozenset({self.xfer_time, self.post_time, self.bytes_transferred, self.num_descriptors,
                          self.failed_transfers, self.failed_notifications, self.kv_expired_requests,
                          self.notifications_after_expiry})


NIXL = NixlMetrics()
"""The NIXL connector's metric names the disaggregated stacks' KV-transfer alerts query (vLLM only)."""


@dataclass(frozen=True)
class PdMetrics:
    """vLLM's own metrics that tell a disaggregated topology's roles apart beyond NIXL's (vllm 0.33.0; labelled
    ``model_name`` and ``engine`` like every engine metric, plus their own label): what the disaggregated dashboard
    shows of a decode that prefilled itself and of the KV it waits for."""

    prompt_tokens_by_source: str = "vllm:prompt_tokens_by_source_total"
    """Counter, label ``source``: a server's prompt tokens by where their KV came from (v1/metrics/loggers.py line 758,
    ``PromptTokenStats.ALL_SOURCES`` in v1/metrics/stats.py line 441): ``local_compute`` (prefilled on this server),
    ``local_cache_hit`` (its prefix cache), ``external_kv_transfer`` (read from the prefill through the connector). On
    the decode role, ``local_compute`` is the prefill it did itself instead of the prefill role (``PROMPT_SOURCES``)."""
    kv_fetch_by_stage: str = "vllm:num_requests_kv_fetch_by_stage"
    """Gauge, label ``stage``: waiting requests by their asynchronous KV load's stage (``waiting_to_start``,
    ``in_progress``, ``completed_waiting``; loggers.py line 573, ``KV_FETCH_STAGES`` in stats.py line 215), only on a
    KV consumer (``is_kv_consumer``: the decode role)."""

    @property
    def names(self) -> frozenset[str]:
        """Every metric above (tests/observability holds them to the installed vLLM's source)."""
        return frozenset({self.prompt_tokens_by_source, self.kv_fetch_by_stage})


PD = PdMetrics()
"""vLLM's per-role metric names the disaggregated dashboard queries besides ``NIXL``'s."""

NIXL_XFER_TIME_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0)
"""``vllm:nixl_xfer_time_seconds``'s finite bucket bounds (stats.py lines 172-190): a quantile between two of them is
interpolated, one beyond the last is reported as the last."""

PROMPT_SOURCES: tuple[str, ...] = ("local_compute", "local_cache_hit", "external_kv_transfer")
"""``vllm:prompt_tokens_by_source_total``'s ``source`` values (vllm 0.33.0 v1/metrics/stats.py
``PromptTokenStats.ALL_SOURCES``)."""

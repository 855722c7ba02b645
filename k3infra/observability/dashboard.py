"""The Kimi K3 Grafana dashboard, one per engine: built here, committed under ``dashboards/`` (a test keeps the
files equal to what this module builds; ``K3INFRA_UPDATE_GOLDEN=1`` rewrites them).

Panels: requests (running, queued, finished per second), time to first token and time per output token
(p50/p90/p99 from the engine's histograms), KV cache use, queue length, token throughput, GPU utilisation, GPU
memory, XID / ECC errors from DCGM, and replicas (serving against what the scaler wants and its maximum) with the
scaler's events. Two variables: the Prometheus data source (every managed Prometheus
offers one: GMP's frontend, Azure Monitor workspace, AMP, ARMS) and the serving namespace.

A disaggregated vLLM stack's dashboard (``kimi-k3-vllm-pd``, ``stack_board``) has the same panels, then a row per role
(series told apart by ``scrape.ROLE_SERIES_LABEL``) and one for the NIXL KV transfer and the requests the decode
prefills itself (``pd_rows``; docs/topologies.md, "The prefill/decode dashboard"). Aggregated stacks keep theirs.
"""

import json
from pathlib import Path
from typing import Any

from ..catalog import EngineName
from ..catalog.metrics import (DISAGG_DECODE_ONLY, ENGINE_METRICS, GPU, NIXL, PD, PICKER, SCALER, EngineMetrics)
from ..catalog.topologies import RoleName
from .scrape import ROLE_SERIES_LABEL

DASHBOARDS = Path(__file__).resolve().parent / "dashboards"
SCHEMA_VERSION = 39
"""Grafana dashboard schema (Grafana 10.x/11.x, what Azure Managed Grafana and Amazon Managed Grafana run)."""
NS = '{namespace="$namespace"}'
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def has_pd_board(engine: EngineName) -> bool:
    """Whether ``engine`` has a disaggregated dashboard: vLLM, whose NixlConnector exports the KV transfer's metrics
    (``catalog.metrics.NIXL``); a disaggregated SGLang stack keeps SGLang's own."""
    return engine == EngineName.VLLM


def stack_board(engine: EngineName, disaggregated: bool) -> bool:
    """Whether a stack of ``engine`` (``disaggregated``: its topology) gets the disaggregated dashboard."""
    return disaggregated and has_pd_board(engine)


def uid(engine: EngineName, *, disaggregated: bool = False) -> str:
    """The dashboard's uid, also its file's stem."""
    return f"kimi-k3-{engine}" + ("-pd" if disaggregated else "")


def path(engine: EngineName, *, disaggregated: bool = False) -> Path:
    """The committed dashboard file of an engine (``kimi-k3-vllm-pd.json``: the disaggregated one)."""
    return DASHBOARDS / f"{uid(engine, disaggregated=disaggregated)}.json"


def repo_path(engine: EngineName, *, disaggregated: bool = False) -> str:
    """The file's path in the repository (what the stack output names for import)."""
    return f"k3infra/observability/dashboards/{path(engine, disaggregated=disaggregated).name}"


Spec = tuple[str, str, list[tuple[str, str]], str]
"""One panel: title, unit, (PromQL, legend) per series, description."""


def _quantiles(histogram: str, sel: str = NS) -> list[tuple[str, str]]:
    return [(f"histogram_quantile({q}, sum by (le) (rate({histogram}_bucket{sel}[5m])))", f"p{int(q * 100)}")
            for q in (0.5, 0.9, 0.99)]


def _panel(pid: int, title: str, unit: str, targets: list[tuple[str, str]], x: int, y: int,
           description: str) -> dict[str, Any]:
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "none"}},
        "targets": [{"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
                    for i, (expr, legend) in enumerate(targets)],
    }


def _panels(engine: EngineName) -> list[Spec]:
    """The panels every stack's dashboard has: the pool as a whole, its GPUs and its scaler."""
    m = ENGINE_METRICS[engine]
    gpu_by = "by (Hostname, gpu)"
    panels: list[Spec] = [
        ("Requests", "short", [(f"sum({m.running}{NS})", "running"), (f"sum({m.waiting}{NS})", "queued"),
                               (f"sum(rate({m.requests}{NS}[5m]))", "finished / s")],
         "Requests being decoded, queued, and finished per second."),
        ("Time to first token", "s", _quantiles(m.time_to_first_token), "Prefill latency: queueing plus prefill."),
        ("Time per output token", "s", _quantiles(m.time_per_output_token), "Decode latency between tokens."),
        ("KV cache use", "percentunit", [(f"max({m.kv_cache_usage}{NS})", "KV cache used")],
         "Share of the KV cache in use; above 95 % requests queue and get preempted."),
        ("Queue length", "short", [(f"sum({m.waiting}{NS})", "queued")], "Requests waiting for the scheduler."),
        ("Tokens per second", "short", [(f"sum(rate({m.prompt_tokens}{NS}[5m]))", "prompt"),
                                        (f"sum(rate({m.generation_tokens}{NS}[5m]))", "generated")],
         "Prompt tokens processed and tokens generated per second."),
        ("GPU utilisation", "percent", [(f"avg {gpu_by} ({GPU.utilization})", "{{Hostname}} GPU {{gpu}}")],
         "DCGM GPU utilisation per GPU."),
        ("GPU memory used", "percentunit",
         [(f"sum {gpu_by} ({GPU.memory_used}) / (sum {gpu_by} ({GPU.memory_used}) + sum {gpu_by} ({GPU.memory_free}))",
           "{{Hostname}} GPU {{gpu}}")],
         "DCGM framebuffer memory used per GPU (the engine claims its memory fraction at start)."),
        ("XID and ECC errors", "short",
         [(f"max {gpu_by} ({GPU.xid})", "XID {{Hostname}} GPU {{gpu}}"),
          (f"sum {gpu_by} ({GPU.uncorrectable_remapped_rows})", "uncorrectable remapped rows {{Hostname}} GPU {{gpu}}"),
          (f"max {gpu_by} ({GPU.row_remap_failure})", "row remap failure {{Hostname}} GPU {{gpu}}")],
         "Last XID code per GPU (0: none) and uncorrectable ECC errors (HBM row remaps)."),
        ("Replicas", "short", [(f"count({m.running}{NS}) or vector(0)", "serving"),
                               (f"max({SCALER.desired}{NS})", "wanted by the scaler"),
                               (f"max({SCALER.maximum}{NS})", "scaler maximum")],
         "Replicas serving (each loaded replica's leader exports the engine's metrics) against what the scaler "
         "wants and its maximum (kube-state-metrics' HPA series; none without autoscaling). Wanted above serving "
         "for longer than a new replica's start means a stuck scale-out; wanted at the maximum, too little capacity."),
        ("Prefix-cache hit rate", "percentunit",
         [(f"sum(rate({m.prefix_cache_hits}{NS}[5m])) / sum(rate({m.prefix_cache_queries}{NS}[5m]))", "all replicas"),
          (f"sum by (pod) (rate({m.prefix_cache_hits}{NS}[5m])) / sum by (pod) (rate({m.prefix_cache_queries}{NS}[5m]))",
           "{{pod}}")],
         "Share of prompt tokens served from the prefix cache, overall and per replica (issue 38): behind the "
         "inference gateway it stays high while requests sharing a prefix land where it is cached."),
        ("Routing: prompt tokens per replica", "short",
         [(f"sum by (pod) (rate({m.prompt_tokens}{NS}[5m]))", "{{pod}}")],
         "Where the router sends the work: prompt tokens per second each replica's leader processes."),
        ("Queue per replica", "short", [(f"sum by (pod) ({m.waiting}{NS})", "{{pod}}")],
         "Requests waiting per replica: the picker's queue scorer keeps them even unless a prefix outweighs it."),
        ("Scale events", "short", [(f"sum(changes({SCALER.desired}{NS}[15m]))", "changes of the wanted count")],
         "How often the scaler changed its mind: every scale-out reloads the weights, so more than a few an hour "
         "is thrash (raise autoscaling.scaleDownDelaySeconds)."),
    ]
    return panels


def _role(role: RoleName, extra: str = "") -> str:
    """The selector of one role's series: the namespace and the role label each cloud's scrape copies from the pod."""
    return f'{{namespace="$namespace",{ROLE_SERIES_LABEL}="{role}"{extra}}}'


def _role_panels(m: EngineMetrics) -> tuple[list[Spec], list[Spec]]:
    """Each role's own panels, grouped by the role label: the prefill's queue, latency and throughput, the decode's
    KV cache, inter-token latency and running requests."""
    p, d = _role(RoleName.PREFILL), _role(RoleName.DECODE)
    prefill: list[Spec] = [
        ("Prefill: queue", "short",
         [(f"sum({m.waiting}{p})", "all prefill"), (f"sum by (pod) ({m.waiting}{p})", "{{pod}}")],
         "Requests waiting on the prefill servers, in all and per server (each prefill group's leader): a queue that "
         "keeps growing means too few prefill groups (KimiK3PrefillQueueGrowing)."),
        ("Prefill: time to first token", "s", _quantiles(m.time_to_first_token, p),
         "The prefill servers' own time to first token: their queue plus the prompt's prefill (the routing sidecar "
         "asks them for one token). What a client waits for first adds the KV transfer and the decode's first step "
         "(Decode: time to first token)."),
        ("Prefill: prompt tokens per second", "short",
         [(f"sum(rate({m.prompt_tokens}{p}[5m]))", "all prefill"),
          (f"sum by (pod) (rate({m.prompt_tokens}{p}[5m]))", "{{pod}}")],
         "Prompt tokens the prefill servers process per second, in all and per server."),
        ("Prefill: KV cache use", "percentunit", [(f"max by (pod) ({m.kv_cache_usage}{p})", "{{pod}}")],
         "A prefill server holds each request's KV until the decode has read it (or its lease expires): full here "
         "with an idle queue means the decode reads slowly or not at all."),
    ]
    decode: list[Spec] = [
        ("Decode: KV cache use", "percentunit", [(f"max by (pod) ({m.kv_cache_usage}{d})", "{{pod}}")],
         "Share of each decode server's KV cache in use: above 95 % requests queue and get preempted."),
        ("Decode: time per output token", "s", _quantiles(m.time_per_output_token, d),
         "Inter-token latency on the decode servers: what a streaming client sees between tokens."),
        ("Decode: requests running", "short",
         [(f"sum({m.running}{d})", "all decode"), (f"sum by (pod) ({m.running}{d})", "{{pod}}")],
         "Requests the decode servers are generating for, in all and per server."),
        ("Decode: time to first token", "s", _quantiles(m.time_to_first_token, d),
         "The decode servers' time to first token, from the request reaching them (after the sidecar's prefill call): "
         "their queue, the KV read from the prefill, the first decode step; or the whole prefill where they prefill "
         "locally."),
    ]
    return prefill, decode


_LOCAL = ',source="local_compute"'
"""The prompt tokens a server prefilled itself (``catalog.metrics.PROMPT_SOURCES``)."""
_UNCACHED = ',source=~"local_compute|external_kv_transfer"'
"""The prompt-token sources that were not the server's own prefix cache (``catalog.metrics.PROMPT_SOURCES``)."""


def _transfer_panels(m: EngineMetrics) -> list[Spec]:
    """The KV transfer between the roles (vLLM NixlConnector's metrics, recorded by the reader, the decode) and the
    requests the decode prefills itself."""
    d = _role(RoleName.DECODE)
    pick = f"rate({PICKER.disagg_decisions}{NS}[5m])"
    local = f"rate({PD.prompt_tokens_by_source}{_role(RoleName.DECODE, _LOCAL)}[5m])"
    uncached = f"rate({PD.prompt_tokens_by_source}{_role(RoleName.DECODE, _UNCACHED)}[5m])"
    decode_only = f'rate({PICKER.disagg_decisions}{{namespace="$namespace",decision_type="{DISAGG_DECODE_ONLY}"}}[5m])'
    return [
        ("KV transfer time", "s", _quantiles(NIXL.xfer_time),
         "One NIXL transfer's duration (a request's KV read by a decode rank): KimiK3KvTransferSlow fires on its p99."),
        ("KV bytes moved per second", "Bps",
         [(f"sum(rate({NIXL.bytes_transferred}_sum{NS}[5m]))", "all decode"),
          (f"sum by (pod) (rate({NIXL.bytes_transferred}_sum{NS}[5m]))", "{{pod}}")],
         "Bytes the decode servers read from the prefill servers per second, in all and per decode server."),
        ("KV transfers and failures per second", "short",
         [(f"sum(rate({NIXL.xfer_time}_count{NS}[5m]))", "transfers done"),
          (f"sum(rate({NIXL.failed_transfers}{NS}[5m]))", "failed (transfers, handshakes, notifications)"),
          (f"sum(rate({NIXL.failed_notifications}{NS}[5m]))", "failed notifications")],
         "NIXL transfers finished and failed per second: a failed read fails its request (kv_load_failure_policy "
         "fail); KimiK3KvTransferFailing fires after 5 minutes of failures."),
        ("Prefilled KV expired", "short",
         [(f"sum(rate({NIXL.kv_expired_requests}{NS}[5m]))", "expired before the decode read it (prefill)"),
          (f"sum(rate({NIXL.notifications_after_expiry}{NS}[5m]))", "read notified after expiry (prefill)")],
         "Requests whose prefilled KV outlived its lease (kv_lease_duration, 30 s) on the prefill server, per second: "
         "the prefill's work is lost (KimiK3KvTransferExpired)."),
        ("Requests failed or aborted per role", "short",
         [(f'sum by ({ROLE_SERIES_LABEL}) (rate({m.requests}{{namespace="$namespace",finished_reason="error"}}[5m]))',
           "{{" + ROLE_SERIES_LABEL + "}} failed"),
          (f'sum by ({ROLE_SERIES_LABEL}) (rate({m.requests}{{namespace="$namespace",finished_reason="abort"}}[5m]))',
           "{{" + ROLE_SERIES_LABEL + "}} aborted")],
         "Requests the engine ended in error or aborted, per role and second: on the decode, a KV load that failed "
         "ends its request in error (kv_load_failure_policy fail). A request the client cancelled is not counted."),
        ("Decode: requests waiting for their KV", "short",
         [(f"sum by (stage) ({PD.kv_fetch_by_stage}{d})", "{{stage}}")],
         "Decode requests waiting on their KV read, by stage: waiting_to_start, in_progress, completed_waiting "
         "(read, not yet running). in_progress that only grows is a stalled transfer."),
        ("P/D routing decisions per second", "short",
         [(f"sum by (decision_type) ({pick})", "{{decision_type}}")],
         "The endpoint picker's choice per request: prefill-decode (prefilled on a prefill server) or decode-only "
         "(the decode prefills it itself: the P/D decider found too few uncached tokens, or no prefill server could "
         "be picked)."),
        ("Decode: prompt tokens by source", "short",
         [(f"sum by (source) (rate({PD.prompt_tokens_by_source}{d}[5m]))", "{{source}}")],
         "Where the decode servers' prompt KV came from, tokens per second: external_kv_transfer (read from the "
         "prefill), local_cache_hit (their prefix cache), local_compute (prefilled on the decode)."),
        ("Fallbacks to local prefill", "percentunit",
         [(f"sum({decode_only}) / sum({pick})", "requests routed decode-only (picker)"),
          (f"sum({local}) / sum({uncached})", "uncached prompt tokens prefilled on the decode")],
         "Share of the work prefilled on the decode instead of the prefill role: by the picker's decisions, and by "
         "the decode's uncached prompt tokens it computed itself rather than read (a few per request even when the "
         "transfer works: the last prompt token, recomputed to sample the next, and any NixlConnector leaves to the "
         "decode)."),
    ]


def pd_rows(engine: EngineName, *, first_id: int, y: int) -> list[dict[str, Any]]:
    """The disaggregated dashboard's rows below the common panels: the prefill role, the decode role, the KV
    transfer between them; each a Grafana row panel and its panels two to a line."""
    prefill, decode = _role_panels(ENGINE_METRICS[engine])
    out: list[dict[str, Any]] = []
    pid = first_id
    for title, specs in (("Prefill role", prefill), ("Decode role", decode),
                         ("KV transfer (NIXL) and local prefill", _transfer_panels(ENGINE_METRICS[engine]))):
        out.append({"id": pid, "type": "row", "title": title, "collapsed": False, "panels": [],
                    "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
        pid, y = pid + 1, y + 1
        for i, (t, unit, targets, desc) in enumerate(specs):
            out.append(_panel(pid + i, t, unit, targets, x=12 * (i % 2), y=y + 8 * (i // 2), description=desc))
        pid, y = pid + len(specs), y + 8 * ((len(specs) + 1) // 2)
    return out


def build(engine: EngineName, *, disaggregated: bool = False) -> dict[str, Any]:
    """The dashboard of ``engine`` as Grafana JSON; ``disaggregated``: the prefill/decode one (``pd_rows`` below the
    common panels, vLLM only: ``has_pd_board``)."""
    panels = [_panel(i + 1, title, unit, targets, x=12 * (i % 2), y=8 * (i // 2), description=desc)
              for i, (title, unit, targets, desc) in enumerate(_panels(engine))]
    if disaggregated:
        if not has_pd_board(engine):
            raise ValueError(f"no disaggregated dashboard for {engine}")
        panels += pd_rows(engine, first_id=len(panels) + 1, y=8 * ((len(panels) + 1) // 2))
    return {
        "uid": uid(engine, disaggregated=disaggregated),
        "title": f"Kimi K3 ({engine}{', prefill/decode' if disaggregated else ''})",
        "description": "Kimi K3 serving and its GPUs: k3infra (k3infra/observability/dashboard.py)." + (
            " Disaggregated: each role's panels and the KV transfer between them." if disaggregated else ""),
        "tags": ["k3infra", "kimi-k3", str(engine)] + (["prefill-decode"] if disaggregated else []),
        "schemaVersion": SCHEMA_VERSION,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"},
            {"name": "namespace", "label": "Serving namespace", "type": "textbox", "query": "kimi-k3",
             "current": {"text": "kimi-k3", "value": "kimi-k3"}},
        ]},
        "panels": panels,
    }


def render(engine: EngineName, *, disaggregated: bool = False) -> str:
    """The committed file's text."""
    return json.dumps(build(engine, disaggregated=disaggregated), indent=2, sort_keys=True) + "\n"


def queries(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard (row panels have none)."""
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]

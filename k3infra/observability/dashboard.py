"""The Kimi K3 Grafana dashboard, one per engine: built here, committed under ``dashboards/`` (a test keeps the
files equal to what this module builds; ``K3INFRA_UPDATE_GOLDEN=1`` rewrites them).

Panels: requests (running, queued, finished per second), time to first token and time per output token
(p50/p90/p99 from the engine's histograms), KV cache use, queue length, token throughput, GPU utilisation, GPU
memory, XID / ECC errors from DCGM, and replicas (serving against what the scaler wants and its maximum) with the
scaler's events. Two variables: the Prometheus data source (every managed Prometheus
offers one: GMP's frontend, Azure Monitor workspace, AMP, ARMS) and the serving namespace.
"""

import json
from pathlib import Path
from typing import Any

from ..catalog import EngineName
from ..catalog.metrics import ENGINE_METRICS, GPU, SCALER

DASHBOARDS = Path(__file__).resolve().parent / "dashboards"
SCHEMA_VERSION = 39
"""Grafana dashboard schema (Grafana 10.x/11.x, what Azure Managed Grafana and Amazon Managed Grafana run)."""
NS = '{namespace="$namespace"}'
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def path(engine: EngineName) -> Path:
    """The committed dashboard file of an engine."""
    return DASHBOARDS / f"kimi-k3-{engine}.json"


def repo_path(engine: EngineName) -> str:
    """The file's path in the repository (what the stack output names for import)."""
    return f"k3infra/observability/dashboards/{path(engine).name}"


def _quantiles(histogram: str) -> list[tuple[str, str]]:
    return [(f"histogram_quantile({q}, sum by (le) (rate({histogram}_bucket{NS}[5m])))", f"p{int(q * 100)}")
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


def build(engine: EngineName) -> dict[str, Any]:
    """The dashboard of ``engine`` as Grafana JSON."""
    m = ENGINE_METRICS[engine]
    gpu_by = "by (Hostname, gpu)"
    panels = [
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
    return {
        "uid": f"kimi-k3-{engine}",
        "title": f"Kimi K3 ({engine})",
        "description": "Kimi K3 serving and its GPUs: k3infra (k3infra/observability/dashboard.py).",
        "tags": ["k3infra", "kimi-k3", str(engine)],
        "schemaVersion": SCHEMA_VERSION,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"},
            {"name": "namespace", "label": "Serving namespace", "type": "textbox", "query": "kimi-k3",
             "current": {"text": "kimi-k3", "value": "kimi-k3"}},
        ]},
        "panels": [_panel(i + 1, title, unit, targets, x=12 * (i % 2), y=8 * (i // 2), description=desc)
                   for i, (title, unit, targets, desc) in enumerate(panels)],
    }


def render(engine: EngineName) -> str:
    """The committed file's text."""
    return json.dumps(build(engine), indent=2, sort_keys=True) + "\n"


def queries(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard."""
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]

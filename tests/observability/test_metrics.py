"""Every dashboard and alert query names only metrics the pinned releases define (extracted from the engines'
wheels by scripts/engine-metrics; DCGM from dcgm-exporter's default counters), and the committed dashboards are
the ones the code builds."""

import csv
import dataclasses
import io
import json
import os
import re
import zipfile
from pathlib import Path

import pytest

from k3infra.catalog import EngineName
from k3infra.catalog.topologies import KvTransport
from k3infra.observability import dashboard, role_rules, rules
from k3infra.sizing import KvTransfer
from k3infra.catalog.metrics import (DCGM_EXPORTER_FIELDS, ENGINE_METRICS, ENGINE_METRICS_RELEASE, GKE_MANAGED_DCGM_FIELDS,
                                    GPU, PICKER, SCALER)
from tests.support import ROOT, load_script

METRICS_DIR = ROOT / "schemas" / "engine-metrics"
PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                "offset", "le"}


def engine_samples(engine: EngineName) -> set[str]:
    data = json.loads((METRICS_DIR / f"{engine}-{ENGINE_METRICS_RELEASE[engine]}.json").read_text())
    assert data["package"] == str(engine) and data["version"] == ENGINE_METRICS_RELEASE[engine]
    return set(data["samples"])


def dcgm_fields() -> set[str]:
    text = next(METRICS_DIR.glob("dcgm-exporter-*-default-counters.csv")).read_text()
    rows = csv.reader(line for line in io.StringIO(text) if line.strip() and not line.startswith("#"))
    return {row[0].strip() for row in rows}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: label matchers, ranges, grouping clauses, function calls and
    keywords removed."""
    e = re.sub(r'"[^"]*"', "", expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        rest = e[m.end():].lstrip()
        if rest.startswith("(") or m.group() in PROMQL_WORDS:
            continue
        names.add(m.group())
    return names


def queries(engine: EngineName) -> list[str]:
    alerts = rules.alerts(engine, "kimi-k3", ready_budget_seconds=3600, capacity_end="2026-12-15T11:30:00Z")
    alerts += rules.autoscaling_alerts(engine, "kimi-k3", "keda-hpa-k3-scaler", start_seconds=1500)
    # a disaggregated stack's (issue 37): each role's, and with vLLM the NIXL transfer's
    alerts += [a for role in ("prefill", "decode") for a in role_rules.role_health_alerts(
        engine, "kimi-k3", role, ready_budget_seconds=1500)]
    if engine == EngineName.VLLM:
        alerts += role_rules.kv_transfer_alerts("kimi-k3", KvTransfer(
            input_tokens=8192, element_bytes=1, bytes_per_token=68_000, state_bytes=0, transport=KvTransport.UCX_RDMA,
            gbps=3200.0), gpus_per_node=4)
    alerts += rules.picker_alerts("kimi-k3")
    boards = [dashboard.build(engine)] + ([dashboard.build(engine, disaggregated=True)]
                                          if dashboard.has_pd_board(engine) else [])
    return [q for b in boards for q in dashboard.queries(b)] + [a.expr for a in alerts]


SCALER_SERIES = {SCALER.desired, SCALER.current, SCALER.maximum}
"""kube-state-metrics' HPA series (stated in k3infra.catalog.metrics with their source)."""
PICKER_SERIES = set(dataclasses.asdict(PICKER).values())
"""The endpoint picker's (stated in k3infra.catalog.metrics with their source, llm-d-router v0.10.0)."""


def test_the_extractor_sees_through_promql() -> None:
    expr = ('histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{namespace="x"}[5m]))) '
            'and on (pod) max without (gpu) (DCGM_FI_DEV_XID_ERRORS) > 0 or vector(time()) > 17')
    assert metric_names(expr) == {"vllm:time_to_first_token_seconds_bucket", "DCGM_FI_DEV_XID_ERRORS"}


@pytest.mark.parametrize("engine", list(EngineName))
def test_every_query_names_a_metric_the_pinned_release_defines(engine: EngineName) -> None:
    defined = engine_samples(engine) | dcgm_fields() | SCALER_SERIES | PICKER_SERIES
    used = set().union(*(metric_names(q) for q in queries(engine)))
    assert used - defined == set(), f"{engine} {ENGINE_METRICS_RELEASE[engine]} does not define {used - defined}"
    other = {e for e in EngineName if e != engine}
    assert not any(n.startswith(f"{o}:") for n in used for o in other)
    # every quantity the dashboard must show is there
    m = ENGINE_METRICS[engine]
    needed = {m.running, m.waiting, m.requests, f"{m.time_to_first_token}_bucket", f"{m.time_per_output_token}_bucket",
              m.kv_cache_usage, GPU.utilization, GPU.memory_used, GPU.xid}
    dash = set().union(*(metric_names(q) for q in dashboard.queries(dashboard.build(engine))))
    assert needed <= dash


def test_the_dcgm_exporter_fields_are_its_default_counters() -> None:
    """The exporter k3infra installs (and the GPU Operator's, ACK's) exports every field it is said to."""
    assert DCGM_EXPORTER_FIELDS <= dcgm_fields()
    assert {GPU.xid, GPU.uncorrectable_remapped_rows} <= DCGM_EXPORTER_FIELDS - GKE_MANAGED_DCGM_FIELDS


def test_an_exporter_without_a_field_gets_no_alert_on_it() -> None:
    assert [a.name for a in rules.gpu_alerts()] == ["KimiK3GpuXidError", "KimiK3GpuEccError"]
    assert [a.name for a in rules.gpu_alerts(GKE_MANAGED_DCGM_FIELDS, expected_gpus=8)] == ["KimiK3GpuMissing"]
    assert [a.name for a in rules.gpu_alerts(frozenset({GPU.xid}))] == ["KimiK3GpuXidError"]


def test_a_name_the_release_lacks_is_caught() -> None:
    """The check can fail: vLLM 0.33.0 no longer defines V0's cache gauge, nor SGLang the vLLM name."""
    assert "vllm:gpu_cache_usage_perc" not in engine_samples(EngineName.VLLM)
    assert "vllm:kv_cache_usage_perc" in engine_samples(EngineName.VLLM)
    assert "sglang:kv_cache_usage_perc" not in engine_samples(EngineName.SGLANG)


@pytest.mark.parametrize("engine", list(EngineName))
def test_the_committed_dashboard_is_the_built_one(engine: EngineName) -> None:
    path = dashboard.path(engine)
    if os.environ.get("K3INFRA_UPDATE_GOLDEN"):
        path.write_text(dashboard.render(engine))
    assert path.read_text() == dashboard.render(engine), "regenerate with K3INFRA_UPDATE_GOLDEN=1"
    board = json.loads(path.read_text())
    assert [p["title"] for p in board["panels"]] == [
        "Requests", "Time to first token", "Time per output token", "KV cache use", "Queue length",
        "Tokens per second", "GPU utilisation", "GPU memory used", "XID and ECC errors", "Replicas",
        # issue 38: the cache hit rate, the routing decisions and the queue, per replica
        "Prefix-cache hit rate", "Routing: prompt tokens per replica", "Queue per replica", "Scale events"]
    assert {v["name"] for v in board["templating"]["list"]} == {"datasource", "namespace"}
    assert all(t["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
               for p in board["panels"] for t in p["targets"])


def test_the_extraction_script_reads_metric_definitions_from_a_wheel(tmp_path: Path) -> None:
    script = load_script("engine-metrics")
    wheel = tmp_path / "vllm-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("vllm/metrics.py", "from prometheus_client import Counter, Gauge, Histogram\n"
                   "class L:\n    _gauge_cls = Gauge\n    def __init__(self):\n"
                   "        self._gauge_cls(name='vllm:num_requests_running', documentation='')\n"
                   "        Counter('vllm:generation_tokens', 'doc')\n"
                   "        Histogram(name='vllm:time_to_first_token_seconds', documentation='')\n"
                   "        Gauge(name=f'vllm:{x}', documentation='')\n")
        z.writestr("vllm/tests/test_x.py", "Gauge(name='vllm:only_in_tests')\n")
    found = script.extract(wheel, "vllm")
    assert found == {"vllm:generation_tokens": {"type": "counter", "module": "vllm/metrics.py"},
                     "vllm:num_requests_running": {"type": "gauge", "module": "vllm/metrics.py"},
                     "vllm:time_to_first_token_seconds": {"type": "histogram", "module": "vllm/metrics.py"}}
    assert script.samples("vllm:generation_tokens", "counter") == ["vllm:generation_tokens_total"]
    assert script.samples("sglang:prompt_tokens_total", "counter") == ["sglang:prompt_tokens_total"]
    assert script.samples("x", "histogram") == ["x_bucket", "x_sum", "x_count"]

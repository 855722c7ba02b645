"""The disaggregated dashboard (issue 37 section 6, observability.dashboard ``pd_rows``): committed as built, its exact
rows and panels, each role's panels selecting that role by the label the scrape objects write, every vLLM name read
from the installed vLLM 0.33.0's source, every query (of every dashboard and alert) parsed by a PromQL parser, and
every disaggregated stack naming or provisioning it while the aggregated stacks keep theirs."""

import json
import os
import re
from typing import Any

import promql_parser
import pytest

from k3infra.catalog import EngineName
from k3infra.catalog.metrics import DISAGG_DECODE_ONLY, DISAGG_PREFILL_DECODE, NIXL, PD, PICKER, PROMPT_SOURCES
from k3infra.observability import dashboard
from k3infra.observability.scrape import ROLE_SERIES_LABEL
from tests.observability.test_metrics import metric_names, queries
from tests.observability.test_role_rules import PD_STACKS, installed_vllm, pd_plan, undefined

VLLM = EngineName.VLLM
ROWS = {
    "Prefill role": ["Prefill: queue", "Prefill: time to first token", "Prefill: prompt tokens per second",
                     "Prefill: KV cache use"],
    "Decode role": ["Decode: KV cache use", "Decode: time per output token", "Decode: requests running",
                    "Decode: time to first token"],
    "KV transfer (NIXL) and local prefill": [
        "KV transfer time", "KV bytes moved per second", "KV transfers and failures per second", "Prefilled KV expired",
        "Requests failed or aborted per role", "Decode: requests waiting for their KV",
        "P/D routing decisions per second", "Decode: prompt tokens by source", "Fallbacks to local prefill"],
}
"""Every row of the disaggregated dashboard below the common panels, and its panels, in order: exactly these."""


def pd_board() -> dict[str, Any]:
    return dashboard.build(VLLM, disaggregated=True)


def parse_error(expr: str) -> str | None:
    """What the PromQL parser (GreptimeTeam promql-parser, Prometheus' grammar and its type checks) says of ``expr``;
    None when it parses."""
    try:
        promql_parser.parse(expr)
    except Exception as e:  # the binding raises ValueError-like errors with the parser's message
        return str(e)
    return None


def test_the_committed_pd_dashboard_is_the_built_one() -> None:
    path = dashboard.path(VLLM, disaggregated=True)
    assert path.name == "kimi-k3-vllm-pd.json"
    if os.environ.get("K3INFRA_UPDATE_GOLDEN"):
        path.write_text(dashboard.render(VLLM, disaggregated=True))
    assert path.read_text() == dashboard.render(VLLM, disaggregated=True), "regenerate with K3INFRA_UPDATE_GOLDEN=1"


def test_the_pd_dashboard_is_the_common_panels_then_its_rows() -> None:
    board, common = pd_board(), dashboard.build(VLLM)
    assert (board["uid"], board["title"]) == ("kimi-k3-vllm-pd", "Kimi K3 (vllm, prefill/decode)")
    n = len(common["panels"])
    assert board["panels"][:n] == common["panels"], "the aggregated stacks' panels, unchanged, come first"
    rows: dict[str, list[str]] = {}
    for p in board["panels"][n:]:
        if p["type"] == "row":
            rows[p["title"]] = []
        else:
            rows[list(rows)[-1]].append(p["title"])
    assert rows == ROWS
    assert [p["id"] for p in board["panels"]] == list(range(1, len(board["panels"]) + 1))
    # no two panels overlap on Grafana's 24-column grid, and nothing is left above the previous line
    cells = [(p["gridPos"]["x"] + dx, p["gridPos"]["y"] + dy) for p in board["panels"]
             for dx in range(p["gridPos"]["w"]) for dy in range(p["gridPos"]["h"])]
    assert len(cells) == len(set(cells))
    assert board["templating"] == common["templating"]


def _panel_queries(title: str) -> list[str]:
    return [t["expr"] for p in pd_board()["panels"] if p["title"] == title for t in p["targets"]]


def test_each_role_s_panels_select_that_role_by_the_scraped_label() -> None:
    for title in ROWS["Prefill role"] + ROWS["Decode role"] + ["Decode: requests waiting for their KV",
                                                                 "Decode: prompt tokens by source"]:
        role = title.split(":")[0].lower()
        for q in _panel_queries(title):
            assert re.findall(ROLE_SERIES_LABEL + r'="(\w+)"', q) and set(
                re.findall(ROLE_SERIES_LABEL + r'="(\w+)"', q)) == {role}, (title, q)
            assert 'namespace="$namespace"' in q
    # the transfer's own series are the reader's (decode) and the lease's (prefill): selected by namespace alone
    for q in _panel_queries("KV transfer time") + _panel_queries("Prefilled KV expired"):
        assert ROLE_SERIES_LABEL not in q
    assert _panel_queries("Requests failed or aborted per role") == [
        f'sum by ({ROLE_SERIES_LABEL}) (rate(vllm:request_success_total{{namespace="$namespace",'
        f'finished_reason="{r}"}}[5m]))' for r in ("error", "abort")]


def test_the_fallbacks_to_local_prefill_are_the_picker_s_decisions_and_the_decode_s_own_prefill() -> None:
    assert (DISAGG_DECODE_ONLY, DISAGG_PREFILL_DECODE) == ("decode-only", "prefill-decode")
    assert _panel_queries("Fallbacks to local prefill") == [
        'sum(rate(llm_d_epp_disagg_decision_total{namespace="$namespace",decision_type="decode-only"}[5m])) / '
        'sum(rate(llm_d_epp_disagg_decision_total{namespace="$namespace"}[5m]))',
        'sum(rate(vllm:prompt_tokens_by_source_total{namespace="$namespace",llm_d_ai_role="decode",'
        'source="local_compute"}[5m])) / sum(rate(vllm:prompt_tokens_by_source_total{namespace="$namespace",'
        'llm_d_ai_role="decode",source=~"local_compute|external_kv_transfer"}[5m]))']


def test_every_vllm_name_of_the_pd_dashboard_is_the_installed_vllm_s_own() -> None:
    used = set().union(*(metric_names(q) for q in dashboard.queries(pd_board())))
    vllm_used = {n for n in used if n.startswith("vllm:")}
    assert undefined(sorted(vllm_used)) == set()
    # the KV transfer's and the roles' own metrics are all shown
    assert {NIXL.xfer_time + "_bucket", NIXL.xfer_time + "_count", NIXL.bytes_transferred + "_sum",
            NIXL.failed_transfers, NIXL.failed_notifications, NIXL.kv_expired_requests,
            NIXL.notifications_after_expiry} | PD.names <= vllm_used
    assert used - vllm_used - set(metric_names(" ".join(dashboard.queries(dashboard.build(VLLM))))) == {
        PICKER.disagg_decisions}
    # the label values the panels select on are the installed vLLM's
    vllm = installed_vllm()
    stats = (vllm / "v1/metrics/stats.py").read_text()
    assert re.search(r"ALL_SOURCES: tuple\[str, \.\.\.\] = \(\s*" + r",\s*".join(f'"{s}"' for s in PROMPT_SOURCES),
                     stats)
    assert all(f'KV_FETCH_{k} = "{v}"' in stats for k, v in (
        ("WAITING_TO_START", "waiting_to_start"), ("IN_PROGRESS", "in_progress"),
        ("COMPLETED_WAITING", "completed_waiting")))
    assert 'FINISH_REASON_STRINGS = ("stop", "length", "abort", "error", "repetition")' in (
        vllm / "v1/engine/__init__.py").read_text()


def test_a_wrong_name_in_the_pd_dashboard_is_caught() -> None:
    """Planted: the by-source counter without ``_total``, a gauge vLLM never had."""
    assert undefined(["sum by (source) (rate(vllm:prompt_tokens_by_source[5m]))",
                      'sum(vllm:num_requests_kv_fetch{llm_d_ai_role="decode"})']) == {
        "vllm:prompt_tokens_by_source", "vllm:num_requests_kv_fetch"}


@pytest.mark.parametrize("engine", list(EngineName))
def test_every_dashboard_and_alert_query_parses(engine: EngineName) -> None:
    errors = {q: e for q in queries(engine) if (e := parse_error(q)) is not None}
    assert errors == {}


def test_the_parser_catches_a_malformed_query() -> None:
    """Planted: an unclosed call, a rate of an instant vector, a quantile without its histogram."""
    assert "unclosed left parenthesis" in (parse_error("sum(rate(vllm:prompt_tokens_total[5m])") or "")
    assert "expected type matrix" in (parse_error('sum(rate(vllm:prompt_tokens_total{namespace="x"}))') or "")
    assert parse_error("histogram_quantile(0.99)") is not None


@pytest.mark.parametrize("stack", PD_STACKS)
def test_every_pd_stack_deploys_the_pd_dashboard(stack: str) -> None:
    rec = pd_plan(stack).recording
    out = rec.outputs["monitoring"]["dashboard"]
    assert (out["file"], out["uid"]) == ("k3infra/observability/dashboards/kimi-k3-vllm-pd.json", "kimi-k3-vllm-pd")
    if stack.startswith("azure"):  # Azure Monitor dashboards with Grafana: provisioned, the PD board's JSON
        definition = rec.one("azure-native:dashboard:DashboardDefinition").inputs
        assert json.loads(definition["properties"]["serializedData"]) == pd_board()
    else:  # GMP, AMP, existing clusters: the file to import into their Grafana
        assert "import" in out and "provisioned" not in out


def test_an_aggregated_or_sglang_stack_keeps_its_dashboard() -> None:
    assert not dashboard.stack_board(VLLM, False) and not dashboard.stack_board(EngineName.SGLANG, True)
    assert dashboard.stack_board(VLLM, True)
    with pytest.raises(ValueError, match="no disaggregated dashboard for sglang"):
        dashboard.build(EngineName.SGLANG, disaggregated=True)

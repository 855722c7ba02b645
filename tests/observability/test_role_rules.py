"""A disaggregated stack's alerts (issue 37, observability.role_rules): the exact inventory of every PD stack, each rule
a valid Prometheus rule naming only metrics the installed vLLM 0.33.0 defines (read from its source, not from the
catalog), the role label the rules select by written by each cloud's scrape object onto the role's own pods, and
the slow-transfer bound derived from the plan's KV transfer figure. Aggregated and wide-EP stacks get none."""

import ast
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from k3infra.catalog import EngineName
from k3infra.catalog.metrics import ENGINE_METRICS, ENGINE_METRICS_RELEASE, NIXL, NIXL_XFER_TIME_BUCKETS
from k3infra.catalog.topologies import ROLE_LABEL, KvTransport
from k3infra.observability.role_rules import KV_TRANSFER_SLOW_MULTIPLE, kv_transfer_bound, role_alerts
from k3infra.observability.scrape import ROLE_SERIES_LABEL, series_label
from k3infra.offline import unwrap
from k3infra.planning import Plan
from k3infra.sizing import KvTransfer
from tests.observability.test_metrics import engine_samples, metric_names
from tests.observability.test_stacks import ENGINE_ALERTS, GKE_GPU_ALERTS, GPU_ALERTS, PICKER_ALERTS, ROLE_ALERTS, RULES
from tests.support import ROOT, plan

PD_STACKS = ["gcp-a4xmax-pd", "azure-gb300-pd", "aws-eks-pd", "kubernetes-gb300-nvl72-pd"]
OPERATOR = ("kubernetes.prometheusOperator=present",)
"""The existing-cluster PD stack writes scrape objects and its roles' rules only where prometheus-operator runs."""
VLLM_SITE = ROOT / ".engines-venv" / "lib"


def pd_plan(stack: str) -> Plan:
    return plan(stack, *OPERATOR) if stack.startswith("kubernetes") else plan(stack)


def rule_groups(stack: str) -> dict[str, list[dict[str, Any]]]:
    """Each rule object of the stack's monitoring, by object name, as Prometheus rules (``alert``, ``expr``...)."""
    rec = pd_plan(stack).recording
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rec.resources:
        if r.parent_type != "k3infra:index:Monitoring":
            continue
        if r.type.endswith(":Rules") or r.type.endswith(":ClusterRules") or r.type.endswith(":PrometheusRule"):
            spec = unwrap(r.inputs["spec"])
            jsonschema.validate(spec, RULES)
            out[r.name] = spec["groups"][0]["rules"]
        elif r.type == "aws:amp/ruleGroupNamespace:RuleGroupNamespace":
            data = yaml.safe_load(unwrap(r.inputs["data"]))
            jsonschema.validate(data, RULES)
            out[r.name] = data["groups"][0]["rules"]
        elif r.type == "azure-native:alertsmanagement:PrometheusRuleGroup":
            rules = [{"alert": x["alert"], "expr": x["expression"], "labels": x["labels"],
                      "annotations": x["annotations"]} for x in r.inputs["rules"]]
            jsonschema.validate({"groups": [{"name": r.inputs["ruleGroupName"], "rules": rules}]}, RULES)
            out[r.name] = rules
    return out


INVENTORY = {
    "gcp-a4xmax-pd": {"k3-monitoring-rules": ENGINE_ALERTS + ROLE_ALERTS + PICKER_ALERTS,
                      "k3-monitoring-cluster-rules": GKE_GPU_ALERTS},
    "azure-gb300-pd": {"k3-monitoring-alerts": ENGINE_ALERTS + ROLE_ALERTS + PICKER_ALERTS + GPU_ALERTS},
    "aws-eks-pd": {"k3-monitoring-alerts": ENGINE_ALERTS + ROLE_ALERTS + PICKER_ALERTS + GPU_ALERTS +
                   ["KimiK3CapacityWindowEnding"]},
    "kubernetes-gb300-nvl72-pd": {"k3-monitoring-roles-rules": ROLE_ALERTS},
}
"""Every rule object of each PD stack and its alerts, in order: exactly these."""


@pytest.mark.parametrize("stack", PD_STACKS)
def test_every_pd_stack_has_exactly_its_alerts(stack: str) -> None:
    groups = rule_groups(stack)
    assert {name: [r["alert"] for r in rules] for name, rules in groups.items()} == INVENTORY[stack]


def installed_vllm() -> Path:
    """The vLLM package the engines' parsers run (.engines-venv), at the release the metric names are pinned to."""
    found = sorted(VLLM_SITE.glob("python3*/site-packages/vllm"))
    if not found:
        pytest.fail("vLLM is not installed in .engines-venv: run ./scripts/test (it creates it)")
    dist = sorted(found[0].parent.glob("vllm-*.dist-info"))
    assert dist and dist[0].name == f"vllm-{ENGINE_METRICS_RELEASE[EngineName.VLLM]}.dist-info"
    return found[0]


DEFINITION = re.compile(r"(?:_(counter|gauge|histogram)_cls|\b(Counter|Gauge|Histogram))\(\s*name=\"(vllm:[a-z_:]+)\"")


def defined_in(*files: Path) -> set[str]:
    """The sample names the ``files`` define, as Prometheus exposes them: a counter's ``_total``, a histogram's
    ``_bucket``, ``_sum``, ``_count``, a gauge's own."""
    out: set[str] = set()
    for f in files:
        for m in DEFINITION.finditer(f.read_text()):
            kind, name = (m.group(1) or m.group(2)).lower(), m.group(3)
            out |= ({name + "_total"} if kind == "counter" else
                    {name + s for s in ("_bucket", "_sum", "_count")} if kind == "histogram" else {name})
    return out


def vllm_samples() -> set[str]:
    """What the installed vLLM's NIXL connector and its stat logger define (the source, not the catalog)."""
    vllm = installed_vllm()
    return defined_in(vllm / "distributed/kv_transfer/kv_connector/v1/nixl/stats.py", vllm / "v1/metrics/loggers.py")


def undefined(exprs: list[str]) -> set[str]:
    """Metric names the expressions select that the installed vLLM does not define."""
    return set().union(*(metric_names(e) for e in exprs)) - vllm_samples()


def test_the_nixl_catalog_is_the_installed_vllm_s_own() -> None:
    vllm = installed_vllm()
    stats = (vllm / "distributed/kv_transfer/kv_connector/v1/nixl/stats.py").read_text()
    nixl = defined_in(vllm / "distributed/kv_transfer/kv_connector/v1/nixl/stats.py")
    histograms = {n for n in NIXL.names if not n.endswith("_total")}
    assert {n for n in nixl if not n.endswith(("_sum", "_count"))} == (
        (NIXL.names - histograms) | {h + "_bucket" for h in histograms})
    assert nixl <= engine_samples(EngineName.VLLM), "schemas/engine-metrics agrees with the installed package"
    # labelled like every engine metric (loggers.py), and the bucket bounds the slow-transfer bound rounds to
    assert 'labelnames = ["model_name", "engine"]' in (vllm / "v1/metrics/loggers.py").read_text()
    tree = ast.parse(stats)
    first = next(n for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.List)
                 and getattr(n.targets[0], "id", None) == "buckets")
    assert re.search(r'name="vllm:nixl_xfer_time_seconds",[^)]*buckets=buckets\[1:\]', stats)
    assert tuple(ast.literal_eval(first.value)[1:]) == NIXL_XFER_TIME_BUCKETS


@pytest.mark.parametrize("stack", PD_STACKS)
def test_every_role_rule_names_a_metric_the_installed_vllm_defines(stack: str) -> None:
    rules = [r for rules in rule_groups(stack).values() for r in rules if r["alert"] in ROLE_ALERTS]
    assert undefined([r["expr"] for r in rules]) == set()
    used = set().union(*(metric_names(r["expr"]) for r in rules))
    m = ENGINE_METRICS[EngineName.VLLM]
    assert used == {NIXL.failed_transfers, NIXL.xfer_time + "_bucket", NIXL.kv_expired_requests, m.running, m.waiting}


def test_a_name_the_installed_vllm_lacks_is_caught() -> None:
    """Planted: the counter without ``_total``, a histogram read as a counter, a name vLLM never had."""
    planted = ["sum(rate(vllm:nixl_num_failed_transfers[5m])) > 0", "rate(vllm:nixl_xfer_time_seconds_total[5m])",
               'absent(vllm:nixl_transfer_failures_total{namespace="x"})']
    assert undefined(planted) == {"vllm:nixl_num_failed_transfers", "vllm:nixl_xfer_time_seconds_total",
                                  "vllm:nixl_transfer_failures_total"}


def _scrape_label_rules(stack: str) -> dict[str, Any]:
    """What each scrape object of the stack's server does with the pods' role label, by object (or scrape job)."""
    rec = pd_plan(stack).recording
    out: dict[str, Any] = {}
    for r in rec.resources:
        if r.parent_type != "k3infra:index:Monitoring":
            continue
        if r.type.endswith(":PodMonitoring") and "picker" not in r.name:
            out[r.name] = unwrap(r.inputs["spec"]).get("targetLabels")
        elif r.type.endswith(":PodMonitor") and r.name.split("-")[2] in ("server", "prefill"):
            out[r.name] = unwrap(r.inputs["spec"]).get("podTargetLabels")
        elif r.type == "aws:amp/scraper:Scraper":
            for job in yaml.safe_load(r.inputs["scrapeConfiguration"])["scrape_configs"]:
                if job["job_name"].startswith("kimi-k3-"):
                    out[job["job_name"]] = [x for x in job["relabel_configs"]
                                            if x.get("target_label") == ROLE_SERIES_LABEL]
    return out


@pytest.mark.parametrize("stack", PD_STACKS)
def test_each_role_s_series_carry_the_label_its_rules_select(stack: str) -> None:
    assert ROLE_SERIES_LABEL == series_label(ROLE_LABEL) == "llm_d_ai_role"  # prometheus-operator's sanitising
    got = _scrape_label_rules(stack)
    gmp = {"fromPod": [{"from": ROLE_LABEL, "to": ROLE_SERIES_LABEL}]}
    aws = [{"source_labels": ["__meta_kubernetes_pod_label_llm_d_ai_role"], "target_label": ROLE_SERIES_LABEL}]
    expected = {
        "gcp-a4xmax-pd": {"k3-monitoring-pod-monitoring": gmp, "k3-monitoring-prefill-pod-monitoring": gmp},
        "azure-gb300-pd": {"k3-monitoring-server-pod-monitor": [ROLE_LABEL],
                           "k3-monitoring-prefill-pod-monitor": [ROLE_LABEL]},
        "aws-eks-pd": {"kimi-k3-server": aws, "kimi-k3-prefill": aws, "kimi-k3-picker": []},  # the picker: no role
        "kubernetes-gb300-nvl72-pd": {"k3-monitoring-server-pod-monitor": [ROLE_LABEL],
                                      "k3-monitoring-prefill-pod-monitor": [ROLE_LABEL]},
    }[stack]
    assert got == expected
    for alert in role_alerts(pd_plan(stack).config):
        role = re.match(r"KimiK3(Prefill|Decode)", alert.name)
        if role:
            assert f'{ROLE_SERIES_LABEL}="{role.group(1).lower()}"' in alert.expr, alert.name


def _pod_template_labels(value: Any) -> list[dict[str, str]]:
    """The labels of every pod template inside a workload's inputs."""
    out = []
    if isinstance(value, dict):
        if isinstance(value.get("metadata"), dict) and "spec" in value and "containers" in (value.get("spec") or {}):
            out.append(value["metadata"].get("labels") or {})
        for v in value.values():
            out += _pod_template_labels(v)
    elif isinstance(value, list):
        for v in value:
            out += _pod_template_labels(v)
    return out


@pytest.mark.parametrize("stack", ["gcp-a4xmax-pd", "azure-gb300-pd"])
def test_each_role_s_scrape_selects_only_pods_of_that_role(stack: str) -> None:
    rec = pd_plan(stack).recording
    templates = [labels for r in rec.resources if r.parent_type == "k3infra:index:ModelServer"
                 and r.name.endswith("-workload") for labels in _pod_template_labels(unwrap(r.inputs))]
    assert templates
    for r in rec.resources:
        if r.parent_type == "k3infra:index:Monitoring" and r.type.endswith((":PodMonitoring", ":PodMonitor")) \
                and "picker" not in r.name and "dcgm" not in r.name:
            selector = unwrap(r.inputs["spec"])["selector"]["matchLabels"]
            picked = {t.get(ROLE_LABEL) for t in templates if selector.items() <= t.items()}
            assert picked == {"prefill" if "prefill" in r.name else "decode"}, r.name


BOUNDS = {"gcp-a4xmax-pd": 0.025, "azure-gb300-pd": 0.025, "aws-eks-pd": 0.025, "kubernetes-gb300-nvl72-pd": 0.75}
"""4 x (the plan's line-rate seconds x GPUs per node), up to the next histogram bound: 4 x 1.4 ms x 4 = 22.4 ms (UCX
over 3,200 Gbps), 4 x 0.7 ms x 8 = 22.4 ms (libfabric over 6,400 Gbps), 4 x 45 ms x 4 = 720 ms (TCP over 100 Gbps)."""


@pytest.mark.parametrize("stack", PD_STACKS)
def test_the_slow_transfer_bound_is_the_plan_s_figure_at_its_multiple(stack: str) -> None:
    cfg = pd_plan(stack).config
    transfer = cfg.sizing.topology.transfer
    bound, op = kv_transfer_bound(transfer, cfg.accelerator.gpus_per_node)
    assert (bound, op) == (BOUNDS[stack], ">")
    wanted = KV_TRANSFER_SLOW_MULTIPLE * transfer.seconds * cfg.accelerator.gpus_per_node
    below = [b for b in NIXL_XFER_TIME_BUCKETS if b < bound]
    assert bound >= wanted and (not below or below[-1] < wanted)
    slow = next(a for a in role_alerts(cfg) if a.name == "KimiK3KvTransferSlow")
    assert slow.expr.endswith(f"[5m]))) > {bound:g}") and slow.for_duration == "10m"
    assert f"{transfer.seconds * 1e3:.1f} ms" in slow.summary


def test_a_bound_beyond_the_histogram_fires_at_its_last_bucket() -> None:
    """histogram_quantile reports the last finite bound for a quantile in +Inf: ``>`` it would never fire."""
    slow = KvTransfer(input_tokens=1_000_000, element_bytes=1, bytes_per_token=70_000, state_bytes=0,
                      transport=KvTransport.TCP, gbps=100.0)
    assert kv_transfer_bound(slow, 8) == (5.0, ">=")



@pytest.mark.parametrize("stack", PD_STACKS)
def test_each_runbook_names_the_side_channel_the_transport_and_the_peer_rule(stack: str) -> None:
    cfg = pd_plan(stack).config
    transport = str(cfg.topology.transport)
    for a in role_alerts(cfg):
        if a.name.startswith("KimiK3KvTransfer"):
            assert "port 5600" in a.summary and "VLLM_NIXL_SIDE_CHANNEL_PORT" in a.summary, a.name
            assert "serving/server_network_policy.py" in a.summary, a.name
            assert {"ucx": "UCX_TLS=rc,cuda_copy", "libfabric": "FI_PROVIDER=efa",
                    "tcp": "UCX_TLS=tcp,cuda_copy"}[transport] in a.summary, a.name
    ready = {a.name: a.for_seconds for a in role_alerts(cfg) if a.name.endswith("NotReady")}
    assert ready == {f"KimiK3{r.name.capitalize()}NotReady": r.probe_budget_seconds for r in cfg.sizing.topology.roles}


@pytest.mark.parametrize("stack, sets", [
    ("gcp-a4xmax", ()), ("aws-eks", ()), ("azure-gb300", ()), ("kubernetes-gb300-nvl72", OPERATOR),
    ("aws-eks", ("nodes=2", "topology={mode: wide-ep}"))])
def test_aggregated_and_wide_ep_stacks_get_no_role_alert(stack: str, sets: tuple[str, ...]) -> None:
    p = plan(stack, *sets)
    assert role_alerts(p.config) == []
    names = json.dumps(p.recording.outputs.get("monitoring", {}))
    assert not any(a in names for a in ROLE_ALERTS) and ROLE_SERIES_LABEL not in json.dumps(
        [unwrap(r.inputs) for r in p.recording.resources if r.parent_type == "k3infra:index:Monitoring"], default=str)

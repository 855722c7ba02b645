"""Issue 37 §6: a disaggregated topology's roles scale on their own signals. One KEDA ScaledObject per role on its own
workload, its query on the role's own series (``llm_d_ai_role``), validated against the vendored KEDA CRD; the roles'
scalers refused before any resource where the signal, the target or the shared pool cannot hold them (each planted
mistake seen to fail here); the aggregated scaler unchanged."""

import json
from typing import Any

import pytest

from k3infra import planning
from k3infra.catalog.autoscaling import ROLE_SIGNALS
from k3infra.catalog.topologies import ROLE_LABEL, ROLE_SERIES_LABEL, RoleName
from k3infra.config import ConfigError
from k3infra.observability.rules import scaler_alerts
from k3infra.observability.scrape import series_label
from tests.support import ROOT, plan
from tests.validation import crd_errors

ON = "autoscaling.enabled=true"
VARIANTS: dict[str, tuple[str, ...]] = {
    "gcp-a4xmax-pd": (ON, "observability.enabled=true", "topology.decode.groups=2", "gcp.checkReservation=false"),
    "aws-eks-pd": (ON, "observability.enabled=true", "topology.decode.groups=2"),
    "azure-gb300-pd": (ON, "observability.enabled=true", "topology.prefill.groups=2", "azure.quotaVcpus=2000",
                       "autoscaling.roles.prefill.signal=promptTokens"),
    "kubernetes-gb300-nvl72-pd": (ON, "kubernetes.prometheusOperator=present", "topology.decode.groups=2",
                                  "autoscaling.roles.decode.signal=running", "autoscaling.roles.decode.target=48"),
}
"""Each PD stack with its scalers on and one role given a second group to scale into (the pool grows with it)."""

Q_WAITING = 'sum(vllm:num_requests_waiting{{{}llm_d_ai_role="prefill",namespace="kimi-k3"}})'
Q_KV = 'avg(vllm:kv_cache_usage_perc{{{}llm_d_ai_role="decode",namespace="kimi-k3"}})'
GKE = 'cluster="k3-gcp-a4xmax-pd",'
INVENTORIES = {
    "gcp-a4xmax-pd": [
        ("k3-scaler-decode", "LeaderWorkerSet", "k3-decode-lws", 1, 2, "Value", Q_KV.format(GKE), "0.8"),
        ("k3-scaler-prefill", "LeaderWorkerSet", "k3-prefill-lws", 1, 1, "AverageValue", Q_WAITING.format(GKE), "4")],
    "aws-eks-pd": [
        ("k3-scaler-decode", "LeaderWorkerSet", "k3-decode-lws", 1, 2, "Value", Q_KV.format(""), "0.8"),
        ("k3-scaler-prefill", "Deployment", "k3-prefill", 1, 1, "AverageValue", Q_WAITING.format(""), "4")],
    "azure-gb300-pd": [
        ("k3-scaler-decode", "LeaderWorkerSet", "k3-decode-lws", 1, 1, "Value", Q_KV.format(""), "0.8"),
        ("k3-scaler-prefill", "LeaderWorkerSet", "k3-prefill-lws", 1, 2, "AverageValue",
         'sum(rate(vllm:prompt_tokens_total{llm_d_ai_role="prefill",namespace="kimi-k3"}[2m]))', "20000")],
    "kubernetes-gb300-nvl72-pd": [
        ("k3-scaler-decode", "LeaderWorkerSet", "k3-decode-lws", 1, 2, "AverageValue",
         'sum(vllm:num_requests_running{llm_d_ai_role="decode",namespace="kimi-k3"})', "48"),
        ("k3-scaler-prefill", "LeaderWorkerSet", "k3-prefill-lws", 1, 1, "AverageValue", Q_WAITING.format(""), "4")],
}
"""Which ScaledObjects each PD stack renders: name, the kind and name of the workload it scales, its floor and
ceiling, how KEDA reads the query, the query and its threshold."""


def _of(p: planning.Plan, suffix: str) -> list[dict[str, Any]]:
    return [r for r in p.to_json()["resources"] if r["type"].endswith(suffix)]


def _problems(stack: str, *sets: str) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as e:
        planning.validate(planning.load(stack, sets, root=ROOT))
    return [(x.key, x.given, x.allowed) for x in e.value.problems]


@pytest.mark.parametrize("stack", VARIANTS)
def test_one_scaled_object_per_role_on_its_own_workload_and_series(stack: str) -> None:
    p = plan(stack, *VARIANTS[stack])
    scalers = _of(p, "keda.sh/v1alpha1:ScaledObject")
    got = sorted((s["name"], (t := s["inputs"]["spec"])["scaleTargetRef"]["kind"], t["scaleTargetRef"]["name"],
                  t["minReplicaCount"], t["maxReplicaCount"], t["triggers"][0]["metricType"],
                  t["triggers"][0]["metadata"]["query"], t["triggers"][0]["metadata"]["threshold"]) for s in scalers)
    assert got == INVENTORIES[stack]
    workloads = {r["inputs"]["metadata"]["name"]: r for r in _of(p, ":LeaderWorkerSet") + _of(p, "apps/v1:Deployment")}
    for s in scalers:
        spec = s["inputs"]["spec"]
        assert crd_errors({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
                           "metadata": s["inputs"]["metadata"], "spec": spec}) == []
        target = workloads[spec["scaleTargetRef"]["name"]]  # the role's own workload, created at its floor
        role = s["name"].removeprefix("k3-scaler-")
        assert target["inputs"]["spec"]["template" if target["type"].endswith("Deployment") else "leaderWorkerTemplate"]
        assert target["inputs"]["spec"]["replicas"] == spec["minReplicaCount"]
        assert target["options"]["ignoreChanges"] == ["spec.replicas"]
        assert f'{ROLE_SERIES_LABEL}="{role}"' in spec["triggers"][0]["metadata"]["query"]
    # one TriggerAuthentication (the cloud identity) shared by both, none on an existing cluster's own Prometheus
    assert len(_of(p, "keda.sh/v1alpha1:TriggerAuthentication")) == (0 if stack.startswith("kubernetes") else 1)
    assert _of(p, "keda.sh/v1alpha1:ScaledObject") and not [s for s in scalers if s["name"] == "k3-scaler"]
    # each role's scaler alerts reach the cloud's rule objects, on KEDA's HPA of that role's ScaledObject
    rendered = json.dumps(p.to_json()["resources"])
    assert all(f"KimiK3{role}{alert}" in rendered for role in ("Prefill", "Decode")
               for alert in ("ReplicasWantedNotServing", "ReplicasAtMaximum", "ScalingThrash"))
    assert "keda-hpa-k3-scaler-prefill" in rendered and "keda-hpa-k3-scaler-decode" in rendered
    assert "KimiK3ReplicasAtMaximum" not in rendered


def test_the_scaler_selects_the_label_the_scrape_copies() -> None:
    assert ROLE_SERIES_LABEL == series_label(ROLE_LABEL) == "llm_d_ai_role"


def test_each_role_has_its_own_alerts_and_plan_entry() -> None:
    p = plan("gcp-a4xmax-pd", *VARIANTS["gcp-a4xmax-pd"])
    cfg = p.config
    alerts = scaler_alerts(cfg.engine.name, cfg.namespace, cfg.autoscaling, cfg.workload)
    assert [a.name for a in alerts] == [
        "KimiK3PrefillReplicasWantedNotServing", "KimiK3PrefillReplicasAtMaximum", "KimiK3PrefillScalingThrash",
        "KimiK3DecodeReplicasWantedNotServing", "KimiK3DecodeReplicasAtMaximum", "KimiK3DecodeScalingThrash"]
    assert alerts[3].expr == (
        'max(kube_horizontalpodautoscaler_status_desired_replicas{namespace="kimi-k3",'
        'horizontalpodautoscaler="keda-hpa-k3-scaler-decode"}) > (count(count by (instance) '
        '(vllm:num_requests_running{namespace="kimi-k3",llm_d_ai_role="decode"})) or vector(0)) / 4')
    assert "(count(count by (instance) (vllm:num_requests_running{namespace=\"kimi-k3\",llm_d_ai_role=\"prefill\"}))" \
           " or vector(0))" in alerts[0].expr and not alerts[0].expr.endswith("/ 2")  # TEP: the leader only
    assert "topology.decode.groups" in alerts[4].summary and "autoscaling.roles.decode.target" in alerts[5].summary
    summary = p.to_json()["autoscaling"]
    assert [(r["role"], r["minGroups"], r["maxGroups"], r["signal"], r["target"]) for r in summary["roles"]] == [
        ("prefill", 1, 1, "queue", 4.0), ("decode", 1, 2, "kvCache", 0.8)]
    assert "minReplicas" not in summary
    assert ("autoscaling.roles.prefill: minGroups and maxGroups are both 1: the prefill scaler has nothing to scale "
            "(raise topology.prefill.groups)") in cfg.warnings


def test_plan_prints_each_roles_scaler() -> None:
    from typer.testing import CliRunner

    from k3infra.cli import app

    args = [a for s in VARIANTS["gcp-a4xmax-pd"] for a in ("--set", s)]
    out = CliRunner().invoke(app, ["plan", "gcp-a4xmax-pd", *args]).output
    flat = " ".join(out.replace("│", " ").split())
    assert "one per role: prefill 1-1 group(s) of 2 node(s) on queue at 4 per group (its own ScaledObject); decode " \
           "1-2 group(s) of 4 node(s) on kvCache at 0.8 per group (its own ScaledObject)" in flat


def test_each_role_surges_only_beyond_both_maxima() -> None:
    """The pool holds every planned group: with the decode scaled to its maximum of 2 the prefill has no spare group
    (maxSurge 0); capping the decode at 1 leaves one decode group's 4 nodes free, where the prefill's 2-node group
    surges."""
    def surge(*sets: str) -> dict[str, int]:
        p = plan("gcp-a4xmax-pd", *VARIANTS["gcp-a4xmax-pd"], *sets)
        return {r["inputs"]["metadata"]["name"]: int(r["inputs"]["spec"]["rolloutStrategy"]
                                                     ["rollingUpdateConfiguration"]["maxSurge"])
                for r in _of(p, ":LeaderWorkerSet")}
    assert surge() == {"k3-prefill-lws": 0, "k3-decode-lws": 0}
    assert surge("autoscaling.roles.decode.maxGroups=1") == {"k3-prefill-lws": 1, "k3-decode-lws": 0}


@pytest.mark.parametrize("sets, expected", [
    (("autoscaling.roles.decode.maxGroups=3",),
     [("k3infra:autoscaling.roles.decode.maxGroups", "3", "at most 2, or more topology.decode.groups (the pool grows "
       "with them)")]),
    (("autoscaling.roles.prefill.signal=kvCache", "autoscaling.roles.decode.signal=promptTokens"),
     [("k3infra:autoscaling.roles.decode.signal", "'promptTokens'", "kvCache, running, queue"),
      ("k3infra:autoscaling.roles.prefill.signal", "'kvCache'", "queue, promptTokens, rps")]),
    (("autoscaling.roles.decode.target=80",),
     [("k3infra:autoscaling.roles.decode.target", "80.0", "0.05 to 1")]),
    (("autoscaling.roles.decode.minGroups=2", "autoscaling.roles.decode.maxGroups=1"),
     [("k3infra:autoscaling.roles.decode.minGroups", "2", "1 to 1")]),
    (("autoscaling.maxReplicas=2", "autoscaling.signal=kvCache", "autoscaling.scaleToZero=true"),
     [("k3infra:autoscaling.maxReplicas", "2", "unset"), ("k3infra:autoscaling.scaleToZero", "true", "false"),
      ("k3infra:autoscaling.signal", "'kvCache'", "unset")]),
    (("observability.enabled=false",), [("k3infra:observability.enabled", "false", "true")]),
])
def test_bad_role_scalers_are_refused_with_key_value_and_allowed(sets, expected) -> None:
    assert _problems("gcp-a4xmax-pd", *VARIANTS["gcp-a4xmax-pd"], *sets) == expected


def test_the_aggregated_and_wide_ep_scalers_are_unchanged() -> None:
    assert _problems("gcp-a4xmax", ON, "observability.enabled=true", "gcp.checkReservation=false",
                     "autoscaling.roles.decode.signal=running") == [
        ("k3infra:autoscaling.roles", "{'decode': {'signal': 'running'}}",
         "unset, or autoscaling.minReplicas, maxReplicas, signal and target")]
    wide = _problems("gcp-a4xmax", ON, "observability.enabled=true", "topology.mode=wide-ep", "nodes=4")
    assert [k for k, _, _ in wide] == ["k3infra:autoscaling.enabled"]
    assert ROLE_SIGNALS[RoleName.PREFILL][0] != ROLE_SIGNALS[RoleName.DECODE][0]
    off = plan("gcp-a4xmax-pd")  # off by default: the PD plans (and their goldens) as before
    assert off.config.autoscaling is not None and not off.config.autoscaling.enabled
    assert not _of(off, "ScaledObject") and "autoscaling" not in off.to_json()


def test_status_reads_each_scaled_roles_live_group_count() -> None:
    """Each role's workload starts at its scaler's floor; status expects that floor and the read-only role may get
    each role's ``/scale``, where it reads the count the scaler set (k3infra.status.report ``_server_pods``)."""
    from k3infra.status import access
    from k3infra.status.expected import expected

    exp = expected(plan("aws-eks-pd", *VARIANTS["aws-eks-pd"]))
    assert [(r.role, r.server_kind, r.server_name, r.groups, r.group_size) for r in exp.roles] == [
        ("prefill", "Deployment", "k3-prefill", 1, 1), ("decode", "LeaderWorkerSet", "k3-decode-lws", 1, 2)]
    _, role = access.roles(exp)
    scale_rules = [(r["resources"], r["resourceNames"]) for r in role["rules"] if r["resources"][0].endswith("/scale")]
    assert sorted(scale_rules) == [(["deployments/scale"], ["k3-prefill"]),
                                   (["leaderworkersets/scale"], ["k3-decode-lws"])]

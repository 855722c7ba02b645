"""Every admission webhook a stack's charts serve is reachable from its cloud's control plane (issue 23 item 1).

The facts are catalog.charts (each chart's webhooks, read from its templates at the pinned version) and
catalog.control_planes (what each cloud's control plane reaches on the nodes); k3infra.webhook_reach holds the
plan's charts and rules against them. The planted cases show the guard failing: a GKE plan without the firewall
rule (what gcp-a4xmax was before it), a webhook port no rule admits, nodes outside EKS's cluster security group,
a chart without webhook facts."""

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from k3infra import webhook_reach
from k3infra.catalog import Cloud
from k3infra.catalog import charts
from k3infra.catalog.charts import CHARTS
from tests.support import STACKS, plan

LWS = [("k3-server-lws", name, 9443) for name in
       ("mleaderworkerset.kb.io", "mpod.kb.io", "vleaderworkerset.kb.io", "vpod.kb.io")]
ALB = [("k3-endpoint-inference-operator", f"{name}.elbv2.k8s.aws", 9443) for name in
       ("mpod", "mservice", "mtargetgroupbinding", "vingress", "vingressclassparams", "vtargetgroupbinding")]
SERVED = {"gcp-a4xmax": LWS, "gcp-a4-sglang": LWS, "gcp-a4x-sglang": LWS, "azure-gb300": LWS, "alicloud-ack": LWS, "alicloud-pai": [],
          "aws-eks": [], "aws-hyperpod": ALB, "kubernetes-b300": [], "kubernetes-gb300-nvl72": LWS}
# The disaggregated stacks install the LWS controller once, with the first role that runs a LeaderWorkerSet (issue 37
# review B2): the prefill's, or aws-eks-pd's decode (its prefill is one node, a Deployment).
SERVED.update({s: [(f"k3-{role}-lws", name, port) for _, name, port in LWS] for s, role in (
    ("gcp-a4xmax-pd", "prefill"), ("azure-gb300-pd", "prefill"), ("aws-eks-pd", "decode"),
    ("kubernetes-gb300-nvl72-pd", "prefill"))})
FIREWALL = "gcp:compute/firewall:Firewall"


def resources(stack: str) -> list[Any]:
    return list(plan(stack).recording.resources)


def test_every_stack_is_listed() -> None:
    assert sorted(SERVED) == sorted(STACKS)


@pytest.mark.parametrize("stack", sorted(SERVED))
def test_every_webhook_the_stack_serves_is_reachable(stack: str) -> None:
    p = plan(stack)
    assert webhook_reach.inventory(p.recording.resources) == SERVED[stack]
    assert webhook_reach.unreachable(p.config.cloud, p.recording.resources) == []


def test_gke_admits_lws_through_the_stack_s_firewall_rule_and_the_lws_waits_for_it() -> None:
    rec = plan("gcp-a4xmax").recording
    rule = rec.one(FIREWALL, "k3-control-plane-webhooks")
    cluster = rec.one("gcp:container/cluster:Cluster").inputs
    assert rule.inputs["sourceRanges"] == [cluster["privateClusterConfig"]["masterIpv4CidrBlock"]]
    assert rule.inputs["network"] == cluster["network"] and rule.inputs["direction"] == "INGRESS"
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["9443"]}]
    accounts = {r.inputs["nodeConfig"]["serviceAccount"] for r in rec.by_type("gcp:container/nodePool:NodePool")}
    assert rule.inputs["targetServiceAccounts"] == sorted(accounts)
    assert webhook_reach.reach(Cloud.GCP, rec.resources) == {443, 9443, 10250}
    for lws in rec.by_type("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"):
        assert rule.urn in lws.dependencies, "every user of the webhook is created after the rule"
    assert "k3-control-plane-webhooks" in [r.name for r in plan("gcp-a4-sglang").recording.by_type(FIREWALL)], \
        "multi-node SGLang runs under LWS too: the same rule"


def test_without_the_firewall_rule_the_lws_webhooks_are_unreachable() -> None:
    planted = [r for r in resources("gcp-a4xmax") if r.name != "k3-control-plane-webhooks"]
    findings = webhook_reach.unreachable(Cloud.GCP, planted)
    assert [f.split(" (")[0] for f in findings] == [f"k3-server-lws: webhook {n}" for _, n, _ in LWS]
    assert "listens on 9443, which the gcp control plane cannot reach (it reaches [443, 10250]" in findings[0]


def test_a_rule_for_other_nodes_or_another_source_admits_nothing() -> None:
    for change in ({"targetServiceAccounts": ["other@my-project.iam.gserviceaccount.com"]},
                   {"sourceRanges": ["10.0.0.0/20"]}, {"allows": [{"protocol": "udp", "ports": ["9443"]}]}):
        planted = [SimpleNamespace(type=r.type, name=r.name, inputs={**r.inputs, **change}, outputs=r.outputs)
                   if r.type == FIREWALL else r for r in resources("gcp-a4xmax")]
        assert len(webhook_reach.unreachable(Cloud.GCP, planted)) == 4, change


def test_a_webhook_port_no_rule_admits_fails_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    key = ("oci://registry.k8s.io/lws/charts/lws", "0.10.0")
    lws = CHARTS[key]
    planted = dataclasses.replace(lws, webhooks=tuple(dataclasses.replace(w, target_port=8443) for w in lws.webhooks))
    monkeypatch.setattr(charts, "CHARTS", {**CHARTS, key: planted})
    findings = webhook_reach.unreachable(Cloud.GCP, resources("gcp-a4xmax"))
    assert len(findings) == 4 and all("listens on 8443" in f for f in findings)
    # AKS's konnectivity tunnel and ACK's default security group reach every port
    assert webhook_reach.unreachable(Cloud.AZURE, resources("azure-gb300")) == []
    assert webhook_reach.unreachable(Cloud.ALICLOUD, resources("alicloud-ack")) == []


def test_eks_nodes_outside_the_cluster_security_group_fail_the_guard() -> None:
    planted = [SimpleNamespace(type=r.type, name=r.name, inputs={**r.inputs, "vpcConfig": {
        **r.inputs["vpcConfig"], "securityGroupIds": ["sg-0123456789abcdef0"]}}, outputs=r.outputs)
        if r.type == "aws-native:sagemaker:Cluster" else r for r in resources("aws-hyperpod")]
    findings = webhook_reach.unreachable(Cloud.AWS, planted)
    assert sorted(f.split(" (")[0] for f in findings) == [f"{by}: webhook {n}" for by, n, _ in ALB]


def test_a_chart_without_webhook_facts_is_a_finding() -> None:
    planted = [*resources("gcp-a4-sglang"), SimpleNamespace(
        type="kubernetes:helm.sh/v4:Chart", name="k3-cert-manager", outputs={},
        inputs={"chart": "cert-manager", "version": "v1.19.0", "values": {}})]
    assert webhook_reach.unreachable(Cloud.GCP, planted) == [
        "k3-cert-manager: chart cert-manager v1.19.0 has no webhook facts in k3infra.catalog.charts: record the "
        "webhooks its templates serve at that version"]


def test_every_catalogued_chart_states_where_its_webhooks_were_read() -> None:
    for chart in CHARTS.values():
        assert chart.webhook_source, chart.chart
        for w in chart.webhooks:
            assert w.failure_policy in ("Fail", "Ignore") and 0 < w.target_port < 65536, w

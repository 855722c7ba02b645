"""The inference gateway's endpoint line (``k3infra:endpoint.gateway``): after the server's Services, the Gateway's
address, serving only once the servers are ready and the Gateway is ``Programmed`` (Gateway API v1
``GatewayConditionProgrammed``); and the one read it takes, a get on that Gateway, in the read-only role."""

from datetime import datetime, timezone

import pytest

from k3infra.status import access
from k3infra.status.expected import GatewayRef, expected
from k3infra.status.lines import FAILED, OK, PROGRESS
from k3infra.status.report import Snapshot, evaluate
from tests.support import plan

NOW = datetime(2026, 12, 1, 0, 10, tzinfo=timezone.utc)
LOOK = "kubectl describe gateway -n kimi-k3 k3-gateway"
GATEWAY_RULE = {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["gateways"], "verbs": ["get"],
                "resourceNames": ["k3-gateway"]}


@pytest.fixture(scope="module")
def eks():
    return expected(plan("aws-eks"))


def test_the_gateway_is_read_from_the_plans_gateway(eks) -> None:
    """EKS installs agentgateway (its proxy Service is named after the Gateway); GKE's managed class has none."""
    assert eks.gateway == GatewayRef("gateway.networking.k8s.io/v1", "k3-gateway", "agentgateway", 80,
                                     "k3-gateway.kimi-k3.svc")
    assert expected(plan("gcp-a4xmax")).gateway == GatewayRef("gateway.networking.k8s.io/v1", "k3-gateway",
                                                               "gke-l7-rilb", 80, None)
    assert access.gateway_path("kimi-k3", eks.gateway) == \
        "/apis/gateway.networking.k8s.io/v1/namespaces/kimi-k3/gateways/k3-gateway"


def test_the_role_gets_the_gateway_by_name_and_nothing_else(eks) -> None:
    assert access.role(eks)["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get"], "resourceNames": ["k3-server"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"], "resourceNames": ["k3-sync", "k3-verify"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get"], "resourceNames": ["k3-server"]},
        GATEWAY_RULE]


def _server_pod(ready: bool) -> dict:
    return {"metadata": {"name": "k3-server-abc", "labels": {}}, "spec": {"nodeName": "gpu-0"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready),
                                                           "lastTransitionTime": "2026-12-01T00:05:00Z"}],
                       "initContainerStatuses": [{"name": "wait-for-weights", "restartCount": 0, "state": {
                           "terminated": {"exitCode": 0, "reason": "Completed"}}}],
                       "containerStatuses": [{"name": "engine", "ready": ready, "restartCount": 0, "state": {
                           "running": {"startedAt": "2026-12-01T00:00:00Z"}}}]}}


def _gateway(programmed: str | None, *addresses: str, reason: str = "", message: str = "") -> dict:
    conditions = [{"type": "Accepted", "status": "True", "reason": "Accepted"}]
    if programmed:
        conditions.append({"type": "Programmed", "status": programmed, "reason": reason, "message": message})
    return {"metadata": {"name": "k3-gateway", "namespace": "kimi-k3"},
            "status": {"addresses": [{"type": "IPAddress", "value": a} for a in addresses],
                       "conditions": conditions}}


def _serving_but_the_gateway(exp, gateway: dict | None) -> Snapshot:
    """Every other line of the report done: nodes ready, Jobs complete, the server ready."""
    def node(name: str) -> dict:
        return {"metadata": {"name": name, "labels": dict(exp.gpu_node_selector) if name.startswith("gpu") else {}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}}

    gpu = [node(f"gpu-{i}") for i in range(exp.gpu_nodes)]
    done = {"status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}}
    return Snapshot(nodes=gpu + [node(f"system-{i}") for i in range(exp.system_nodes)], gpu_nodes=gpu,
                    server_pods=[_server_pod(True)], job_pods={}, jobs={j.name: done for j in (exp.sync, exp.verify)},
                    services={"k3-server": {"spec": {}, "status": {}}}, gateway=gateway)


def _endpoints(exp, ready: bool, gateway: dict | None) -> list[tuple]:
    svc = {"spec": {"type": "ClusterIP"}, "status": {}}
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[_server_pod(ready)], job_pods={}, jobs={},
                    services={"k3-server": svc}, gateway=gateway)
    return [(ln.name, ln.state, ln.phase, ln.detail, ln.look) for ln in evaluate(exp, snap, NOW).lines
            if ln.section == "endpoint"]


SERVER_READY = ("k3-server", OK, "serving", "http://k3-server.kimi-k3.svc:8000/v1 (ClusterIP)", "")
SERVER_LOADING = ("k3-server", PROGRESS, "not ready", "http://k3-server.kimi-k3.svc:8000/v1 (ClusterIP)", "")


def test_the_gateway_line_through_its_phases(eks) -> None:
    assert _endpoints(eks, False, None) == [
        SERVER_LOADING, ("k3-gateway", PROGRESS, "not created yet", "(Gateway, class agentgateway)", LOOK)]
    # Created, no controller yet: the CRD's default condition; the proxy Service's in-cluster name stands in.
    assert _endpoints(eks, True, _gateway("Unknown", reason="Pending", message="Waiting for controller")) == [
        SERVER_READY, ("k3-gateway", PROGRESS, "not programmed",
                       "http://k3-gateway.kimi-k3.svc/v1 (Gateway, class agentgateway, its address not assigned "
                       "yet: in-cluster name; Programmed Unknown: Pending: Waiting for controller)", LOOK)]
    assert _endpoints(eks, False, _gateway("True", "10.0.3.4", reason="Programmed"))[1] == (
        "k3-gateway", PROGRESS, "not ready", "http://10.0.3.4/v1 (Gateway, class agentgateway)", LOOK)
    assert _endpoints(eks, True, _gateway("True", "10.0.3.4", "10.0.3.5", reason="Programmed")) == [
        SERVER_READY, ("k3-gateway", OK, "serving", "http://10.0.3.4/v1 (Gateway, class agentgateway)", "")]


def test_a_gateway_not_programmed_keeps_the_stack_in_progress(eks) -> None:
    """The planted mistake: the servers ready and the Gateway given an address, but its controller says the data
    plane is not programmed (or says nothing): not serving, exit 3, the summary names the gateway."""
    serving = evaluate(eks, _serving_but_the_gateway(eks, _gateway("True", "10.0.3.4")), NOW)
    assert (serving.state, serving.exit_code, serving.summary) == (OK, 0, "serving")
    for gateway in (_gateway("False", "10.0.3.4", reason="AddressNotAssigned", message="no IP left"),
                    _gateway(None, "10.0.3.4"), None):
        rep = evaluate(eks, _serving_but_the_gateway(eks, gateway), NOW)
        assert [ln.name for ln in rep.lines if ln.state != OK] == ["k3-gateway"]
        assert (rep.state, rep.exit_code) == (PROGRESS, 3)
        assert rep.summary == "in progress: endpoint k3-gateway " + ("not created yet" if gateway is None
                                                                      else "not programmed")
    line = evaluate(eks, _serving_but_the_gateway(eks, _gateway(None, "10.0.3.4")), NOW).lines[-1]
    assert line.detail == "http://10.0.3.4/v1 (Gateway, class agentgateway; Programmed not reported)"
    assert line.extra == {"url": "http://10.0.3.4", "gatewayClass": "agentgateway", "programmed": ""}


def test_a_managed_gateway_has_no_address_until_it_reports_one() -> None:
    """GKE's managed gateway: no proxy Service in the namespace, so no in-cluster name to offer."""
    gcp = expected(plan("gcp-a4xmax"))
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[], job_pods={}, jobs={}, services={},
                    gateway=_gateway("False", reason="AddressNotAssigned"))
    line = evaluate(gcp, snap, NOW).lines[-1]
    assert (line.name, line.phase, line.detail) == (
        "k3-gateway", "not programmed",
        "(Gateway, class gke-l7-rilb, its address not assigned yet; Programmed False: AddressNotAssigned)")


def test_a_stack_without_a_gateway_has_no_gateway_line() -> None:
    exp = expected(plan("aws-eks", "endpoint.gateway=false"))
    assert exp.gateway is None
    assert all(r["resources"] != ["gateways"] for r in access.role(exp)["rules"])


def test_a_refused_gateway_fails_the_report_at_once(eks) -> None:
    """Accepted False, or Programmed False for an Invalid configuration, is no wait: the report fails (exit 1) and
    names the condition; a Programmed True of an earlier generation of the Gateway does not make it serving."""
    refused = _gateway("False", reason="Invalid", message="listener port 80 conflicts")
    rep = evaluate(eks, _serving_but_the_gateway(eks, refused), NOW)
    line = rep.lines[-1]
    assert (line.state, line.phase, line.detail, line.look) == (
        FAILED, "refused", "(Gateway, class agentgateway; Programmed False: Invalid: listener port 80 conflicts)", LOOK)
    assert rep.exit_code == 1
    not_accepted = _gateway("Unknown")
    not_accepted["status"]["conditions"][0].update(status="False", reason="InvalidParameters")
    assert evaluate(eks, _serving_but_the_gateway(eks, not_accepted), NOW).lines[-1].phase == "refused"
    stale = _gateway("True", "10.0.3.4", reason="Programmed")
    stale["metadata"]["generation"] = 3
    stale["status"]["conditions"][1]["observedGeneration"] = 2
    assert evaluate(eks, _serving_but_the_gateway(eks, stale), NOW).lines[-1].phase == "not programmed"
    stale["status"]["conditions"][1]["observedGeneration"] = 3
    assert evaluate(eks, _serving_but_the_gateway(eks, stale), NOW).lines[-1].phase == "serving"

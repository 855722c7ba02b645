"""The managed gateway's policies on GKE: without them GKE health-checks ``/`` (every backend unhealthy) and
cuts responses at 30 s. Rendered objects are validated against GKE's vendored CRDs, strictly, and against the
CRDs' CEL rules (``x-kubernetes-validations``), which the JSON-schema validator does not run."""

from typing import Any

import pulumi
import pytest

from k3infra import offline
from k3infra.catalog import GATEWAY_REQUEST_TIMEOUT_SECONDS
from k3infra.offline import Recording
from k3infra.serving import pods
from tests.serving.shapes import record, record_shape, variant
from tests.validation import crd_errors, crd_schemas

POOL_TARGET = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "k3-gateway"}
EPP = ("kubernetes:helm.sh/v4:Chart", "k3-gateway-epp")


def epp_chart(rec: Recording) -> dict[str, Any]:
    return offline.plain(rec.one(*EPP).inputs)


def chart_pool(chart: dict[str, Any]) -> dict[str, Any]:
    """The InferencePool llm-d-router v0.10.0's chart renders from these values and release (routerlib
    ``templates/_inferencepool.yaml``: name = release, the model servers' targetPorts, appProtocol from the
    protocol, matchLabels, endpointPickerRef = ``{release[:40]}-epp`` on ``router.epp.extProcPort`` (9002),
    failureMode from ``router.inferencePool.failureMode``)."""
    release, router = chart["name"], chart["values"]["router"]
    servers = router["modelServers"]
    return {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
            "metadata": {"name": release, "namespace": chart["namespace"]},
            "spec": {"targetPorts": [{"number": p["number"]} for p in servers["targetPorts"]],
                     "appProtocol": {"http": "http", "grpc": "kubernetes.io/h2c"}[servers["protocol"]],
                     "selector": {"matchLabels": dict(servers["matchLabels"])},
                     "endpointPickerRef": {"name": f"{release[:40]}-epp", "port": {"number": 9002},
                                           "failureMode": router["inferencePool"].get("failureMode", "FailOpen")}}}


def test_the_endpoint_picker_reads_the_one_pool_the_route_sends_to() -> None:
    """llm-d-router v0.10.0 routerlib ``_deployment.yaml``: with ``router.inferencePool.create: false`` the EPP runs
    standalone (``--endpoint-selector``) and never reads an InferencePool; with the chart's pool it runs
    ``--pool-name <release>``. So the chart creates the pool, and nothing else does."""
    rec = record_shape("a4xmax-gateway").recording
    chart = epp_chart(rec)
    assert chart["values"]["router"]["inferencePool"] == {"create": True, "failureMode": "FailOpen"}
    assert not rec.by_type("kubernetes:inference.networking.k8s.io/v1:InferencePool"), "one pool: the chart's"
    route = offline.plain(rec.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute").inputs)
    assert route["spec"]["rules"][0]["backendRefs"] == [{**POOL_TARGET, "name": chart["name"]}]
    assert rec.one(*EPP).urn in rec.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute").dependencies
    pool = chart_pool(chart)
    assert crd_errors(pool) == []
    assert pool["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/component": "model-server",
                                                       "app.kubernetes.io/instance": "k3-server", "k3infra.dev/role": "leader"}
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]


def policy(rec: Recording, kind: str) -> dict[str, Any]:
    return offline.plain(rec.one(f"kubernetes:networking.gke.io/v1:{kind}").inputs)


def test_health_check_is_the_engine_s_health_path_at_the_readiness_probe_s_pace() -> None:
    rec = record_shape("a4xmax-gateway").recording
    hc = policy(rec, "HealthCheckPolicy")
    assert hc["metadata"]["name"] == "k3-gateway" and hc["metadata"]["namespace"] == "kimi-k3"
    assert hc["spec"] == {"targetRef": POOL_TARGET, "default": {
        "checkIntervalSec": pods.READINESS_PERIOD_SECONDS, "timeoutSec": pods.PROBE_TIMEOUT_SECONDS,
        "healthyThreshold": 1, "unhealthyThreshold": pods.READINESS_FAILURES,
        "config": {"type": "HTTP", "httpHealthCheck": {"portSpecification": "USE_FIXED_PORT", "port": 8000,
                                                        "requestPath": "/health"}}}}
    pool = chart_pool(epp_chart(rec))
    assert pool["spec"]["targetPorts"] == [{"number": 8000}], "the health check probes the pool's serving port"


def test_backend_timeout_outlasts_a_long_generation() -> None:
    rec = record_shape("a4xmax-gateway").recording
    bp = policy(rec, "GCPBackendPolicy")
    assert bp["spec"] == {"targetRef": POOL_TARGET,
                          "default": {"timeoutSec": GATEWAY_REQUEST_TIMEOUT_SECONDS, "logging": {"enabled": True}}}
    assert GATEWAY_REQUEST_TIMEOUT_SECONDS > 300, "longer than llm-d's 300 s and GKE's 30 s default"


def test_policies_wait_for_the_pool_they_target() -> None:
    rec = record_shape("a4xmax-gateway").recording
    chart = rec.one(*EPP)  # the chart that creates the pool
    for kind in ("HealthCheckPolicy", "GCPBackendPolicy"):
        assert chart.urn in rec.one(f"kubernetes:networking.gke.io/v1:{kind}").dependencies


def test_endpoint_picker_chart_renders_no_provider_policies_of_its_own() -> None:
    epp = offline.plain(record_shape("a4xmax-gateway").recording.one("kubernetes:helm.sh/v4:Chart",
                                                                     "k3-gateway-epp").inputs)
    assert epp["values"]["provider"] == {"name": "none"}, "two GCPBackendPolicies on one pool would conflict"


def test_policies_validate_against_gke_s_crds_strictly() -> None:
    rec = record_shape("a4xmax-gateway").recording
    for kind in ("HealthCheckPolicy", "GCPBackendPolicy"):
        doc = policy(rec, kind)
        assert ("networking.gke.io/v1", kind) in crd_schemas()
        assert crd_errors(doc) == []
        misspelt = {**doc, "spec": {**doc["spec"], "default": {**doc["spec"]["default"], "timeoutSecs": 5}}}
        assert crd_errors(misspelt), "an unknown field fails"


def test_health_check_meets_the_crd_s_cel_rules() -> None:
    """schemas/crds/gke-healthcheckpolicies.yaml, x-kubernetes-validations: timeoutSec <= checkIntervalSec; with
    USE_FIXED_PORT a port and no portName; config holds its type and exactly one check (min/maxProperties 2)."""
    d = policy(record_shape("a4xmax-gateway").recording, "HealthCheckPolicy")["spec"]["default"]
    assert d["timeoutSec"] <= d["checkIntervalSec"]
    check = d["config"]["httpHealthCheck"]
    assert check["portSpecification"] == "USE_FIXED_PORT" and "port" in check and "portName" not in check
    assert len(d["config"]) == 2
    rules = str(crd_schemas()[("networking.gke.io/v1", "HealthCheckPolicy")])  # the rules checked above are the CRD's
    assert "self.checkIntervalSec >= self.timeoutSec" in rules
    assert "self.portSpecification == 'USE_FIXED_PORT' ? has(self.port) && !has(self.portName)" in rules


def test_request_timeout_can_be_set() -> None:
    from k3infra.serving.gateway import InferenceGateway

    def program() -> None:
        InferenceGateway("k3-gateway", {"namespace": "kimi-k3", "selector": {"app": "k3"}, "target_port": 8000,
                                        "engine": "vllm", "load_balancer": {"internal_annotations": {},
                                                                            "internal_gateway_class": "gke-l7-rilb",
                                                                            "gateway_provider": "gke"},
                                        "request_timeout_seconds": 7200})  # type: ignore[typeddict-item]
    from tests.support import record as record_program
    rec = record_program(program)
    assert policy(rec, "GCPBackendPolicy")["spec"]["default"]["timeoutSec"] == 7200
    assert policy(rec, "HealthCheckPolicy")["spec"]["default"]["config"]["httpHealthCheck"]["requestPath"] == "/health"


def test_no_provider_no_policies() -> None:
    shape = variant("a4xmax-gateway")
    shape.lb.pop("gateway_provider")  # type: ignore[misc]
    rec = record(shape).recording
    assert epp_chart(rec)["values"]["router"]["inferencePool"]["create"] is True
    assert not [r for r in rec.resources if r.type.startswith("kubernetes:networking.gke.io/")]


def test_unknown_provider_is_refused() -> None:
    shape = variant("a4xmax-gateway", lb={"internal_annotations": {}, "internal_gateway_class": "x",
                                          "gateway_provider": "envoy"})
    with pytest.raises(pulumi.InputPropertyError, match="'envoy' is not a gateway provider"):
        record(shape)


# ------------------------------------------------------------------ the independent review of issue 38 (M1-M3, m2)


def _epp_values(stack: str, *sets: str) -> dict[str, Any]:
    from tests.support import plan
    return offline.plain(plan(stack, *sets).recording.one(*EPP).inputs)["values"]


def test_a_changed_picker_configuration_restarts_the_picker() -> None:
    """The picker reads its file once, at start: the pods carry the file's SHA-256, so a second `pulumi up` that
    changes it (here the API key, which turns precise prefix scoring off) rolls them (review M2)."""
    import hashlib
    from k3infra.catalog.picker import EPP_CONFIG_FILE
    from k3infra.serving.gateway import PICKER_CONFIG_ANNOTATION
    digests = []
    for sets in ((), ("apiKey=sk-test",)):
        epp = _epp_values("kubernetes-b300", "s3AccessKeyId=k", "s3SecretAccessKey=s", *sets)["router"]["epp"]
        document = epp["pluginsCustomConfig"][EPP_CONFIG_FILE]
        assert epp["podAnnotations"] == {PICKER_CONFIG_ANNOTATION: hashlib.sha256(document.encode()).hexdigest()}
        digests.append(epp["podAnnotations"][PICKER_CONFIG_ANNOTATION])
    assert digests[0] != digests[1]


def test_the_pd_decider_matches_the_whole_context_beside_the_precise_index() -> None:
    """The P/D decider reads the approximate producer's key; with precise scoring the picker would add one with nil
    parameters (131,072 tokens): k3infra declares it with the model's context (review M3)."""
    import json
    from k3infra.catalog import KIMI_K3
    from k3infra.catalog.picker import EPP_CONFIG_FILE
    document = json.loads(_epp_values("gcp-a4xmax-pd")["router"]["epp"]["pluginsCustomConfig"][EPP_CONFIG_FILE])
    types = [p["type"] for p in document["plugins"]]
    assert "precise-prefix-cache-producer" in types and "disagg-profile-handler" in types
    (approx,) = [p for p in document["plugins"] if p["type"] == "approx-prefix-cache-producer"]
    assert approx["parameters"]["maxPrefixTokensToMatch"] == KIMI_K3.context_tokens


def test_a_declared_istio_class_gets_its_destination_rule_a_cluster_ip_and_the_proxy_policy() -> None:
    """kubernetes-gb300-nvl72-pd declares Istio: the chart's istio provider (the DestinationRule Istio needs for the
    picker's TLS), the Gateway annotated ClusterIP (no internal client ranges), its in-namespace proxies restricted
    (review M1); the installed agentgateway's Gateway waits for its parameters (review m2)."""
    from tests.support import plan
    assert _epp_values("kubernetes-gb300-nvl72-pd", "s3AccessKeyId=k", "s3SecretAccessKey=s")["provider"] == {
        "name": "istio"}
    rec = plan("kubernetes-gb300-nvl72-pd", "s3AccessKeyId=k", "s3SecretAccessKey=s").recording
    gateway = rec.one("kubernetes:gateway.networking.k8s.io/v1:Gateway", "k3-gateway-gateway")
    assert offline.plain(gateway.inputs)["metadata"]["annotations"] == {"networking.istio.io/service-type": "ClusterIP"}
    policy = offline.plain(rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy",
                                   "k3-gateway-proxy-network-policy").inputs)
    assert policy["spec"]["podSelector"] == {"matchLabels": {"gateway.networking.k8s.io/gateway-name": "k3-gateway"}}
    assert _epp_values("gcp-a4xmax")["provider"] == {"name": "none"}
    eks = plan("aws-eks").recording
    params = eks.one("kubernetes:agentgateway.dev/v1alpha1:AgentgatewayParameters", "k3-gateway-proxy")
    assert params.urn in eks.one("kubernetes:gateway.networking.k8s.io/v1:Gateway", "k3-gateway-gateway").dependencies


def _picker_policy(stack: str, *sets: str) -> dict[str, Any] | None:
    from tests.support import plan
    found = [r for r in plan(stack, *sets).recording.by_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
             if r.name == "k3-gateway-picker-network-policy"]
    return offline.plain(found[0].inputs)["spec"] if found else None


def test_the_picker_admits_its_callers_and_its_scrapers_only() -> None:
    """Review m1: the picker's pods took connections from anywhere on its ext-proc, health and unauthenticated metrics
    ports. Now: every port from the namespace; GKE's proxy-only subnet and health checks on ext-proc and health; the
    cloud's collectors on metrics. A declared class other than Istio may call it from elsewhere: no policy."""
    def blocks(rule: dict[str, Any]) -> list[str]:
        return [p["ipBlock"]["cidr"] if "ipBlock" in p else p.get("namespaceSelector", {}).get(
            "matchLabels", {}).get("kubernetes.io/metadata.name", "namespace") for p in rule["from"]]

    gke = _picker_policy("gcp-a4xmax")
    assert gke is not None and gke["podSelector"] == {"matchLabels": {"llm-d-router-gateway": "k3-gateway-epp"}}
    assert [(blocks(r), [p["port"] for p in r["ports"]]) for r in gke["ingress"]] == [
        (["namespace"], ["grpc", "grpc-health", "metrics"]),
        (["10.129.0.0/23", "35.191.0.0/16", "130.211.0.0/22"], ["grpc", "grpc-health"]),
        (["gke-gmp-system", "gmp-system"], ["metrics"])]
    eks = _picker_policy("aws-eks")
    assert eks is not None and [(blocks(r), [p["port"] for p in r["ports"]]) for r in eks["ingress"]] == [
        (["namespace"], ["grpc", "grpc-health", "metrics"]), (["10.0.0.0/18", "10.0.64.0/18"], ["metrics"])]
    assert _picker_policy("kubernetes-b300", "s3AccessKeyId=k", "s3SecretAccessKey=s") is not None
    assert _picker_policy("kubernetes-b300", "s3AccessKeyId=k", "s3SecretAccessKey=s",
                          "kubernetes.gatewayClass=kgateway") is None

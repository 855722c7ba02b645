"""The endpoint picker's K3 profile (issue 38): rendered from typed settings, every plugin type one llm-d-router
v0.10.0 registers, the chart's values keys its own, the engines' KV-event flags and ports where the picker scores
prefixes from them, and the P/D handler when the pool holds a prefill and a decode role."""

import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar, Mapping

import pulumi
import pytest
import yaml

from k3infra import offline
from k3infra.catalog import EngineName
from k3infra.catalog.picker import (DEPRECATED_PLUGIN_TYPES, EPP_CONFIG_FILE, KV_EVENTS_PORT, PICKER_PLUGIN_TYPES,
                                    ROLE_LABEL)
from k3infra.serving.engine import EngineSpec, Role, vllm_command
from k3infra.serving.gateway import InferenceGateway
from k3infra.serving.picker import PickerConfig, Plugin, Profile, Weighted, k3_picker, picker_problems
from tests.serving.shapes import record_shape
from tests.support import record as record_program

ROOT = Path(__file__).resolve().parents[2]
EPP = ("kubernetes:helm.sh/v4:Chart", "k3-gateway-epp")
LB = {"internal_annotations": {}, "internal_gateway_class": "gke-l7-rilb"}
RENDER = "http://k3-server.kimi-k3.svc.cluster.local:8000"


def picker_document(chart: Mapping[str, Any]) -> dict[str, Any]:
    epp = chart["values"]["router"]["epp"]
    assert epp["pluginsConfigFile"] == EPP_CONFIG_FILE
    return json.loads(epp["pluginsCustomConfig"][EPP_CONFIG_FILE])


def gateway_chart(**extra: Any) -> dict[str, Any]:
    """The EPP chart of an InferenceGateway with ``extra`` arguments."""
    args = {"namespace": "kimi-k3", "selector": {"app": "k3"}, "target_port": 8000, "engine": "vllm",
            "load_balancer": LB, **extra}
    rec = record_program(lambda: InferenceGateway("k3-gateway", args))  # type: ignore[arg-type]
    return offline.plain(rec.one(*EPP).inputs)


def types_of(doc: Mapping[str, Any]) -> list[str]:
    return [p["type"] for p in doc["plugins"]]


def profiles_of(doc: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]]:
    return {p["name"]: [(s["pluginRef"], s.get("weight", 0)) for s in p["plugins"]] for p in doc["schedulingProfiles"]}


SCORING = [("prefix-cache-scorer", 3), ("queue-scorer", 1), ("kv-cache-utilization-scorer", 1),
           ("max-score-picker", 0)]


def test_gke_vllm_stack_scores_prefixes_from_the_engines_kv_events() -> None:
    rec = record_shape("a4xmax-gateway").recording
    doc = picker_document(offline.plain(rec.one(*EPP).inputs))
    assert doc["apiVersion"] == "llm-d.ai/v1alpha1" and doc["kind"] == "EndpointPickerConfig"
    assert types_of(doc) == ["metrics-data-source", "core-metrics-extractor", "endpoint-notification-source",
                             "token-producer", "precise-prefix-cache-producer", "prefix-cache-scorer", "queue-scorer",
                             "kv-cache-utilization-scorer", "max-score-picker", "single-profile-handler"]
    plugins = {p["type"]: p.get("parameters") for p in doc["plugins"]}
    assert plugins["token-producer"] == {"modelName": "Kimi-K3", "vllm": {"url": RENDER}}
    events = plugins["precise-prefix-cache-producer"]["kvEventsConfig"]
    assert events == {"topicFilter": "kv@", "concurrency": 4, "engineType": "vllm", "discoverPods": True,
                      "podDiscoveryConfig": {"socketPort": KV_EVENTS_PORT, "podNamespace": "kimi-k3"}}
    assert plugins["prefix-cache-scorer"] == {"prefixMatchInfoProducerName": "precise-prefix-cache-producer"}
    assert doc["dataLayer"]["sources"] == [
        {"pluginRef": "metrics-data-source", "extractors": [{"pluginRef": "core-metrics-extractor"}]},
        {"pluginRef": "endpoint-notification-source", "extractors": [{"pluginRef": "precise-prefix-cache-producer"}]}]
    assert profiles_of(doc) == {"default": SCORING}


def test_an_api_key_or_sglang_makes_the_picker_approximate_and_the_plan_says_why() -> None:
    for extra, why in (({"api_key": True, "render_url": RENDER}, "API key guards the engine's render endpoint"),
                       ({"engine": "sglang", "render_url": RENDER}, "sglang serves no render endpoint"),
                       ({}, "no render endpoint was given")):
        doc = picker_document(gateway_chart(**extra))
        assert "precise-prefix-cache-producer" not in types_of(doc) and "token-producer" not in types_of(doc)
        approx = next(p for p in doc["plugins"] if p["type"] == "approx-prefix-cache-producer")
        assert approx["parameters"] == {"autoTune": True, "maxPrefixTokensToMatch": 1_000_000}, "K3's whole context"
        prefix = next(p for p in doc["plugins"] if p["type"] == "prefix-cache-scorer")
        assert prefix["parameters"] == {"prefixMatchInfoProducerName": "approx-prefix-cache-producer"}
        assert profiles_of(doc) == {"default": SCORING}
        args = {"namespace": "kimi-k3", "selector": {"app": "k3"}, "target_port": 8000, "engine": "vllm",
                "load_balancer": LB, **extra}
        notes: list[tuple[str, ...]] = []
        record_program(lambda: notes.append(InferenceGateway("k3-gateway", args).picker_notes))  # type: ignore[arg-type]
        assert len(notes[0]) == 1 and why in notes[0][0]
    sglang = picker_document(gateway_chart(engine="sglang"))
    assert next(p for p in sglang["plugins"] if p["type"] == "core-metrics-extractor")["parameters"] == {
        "defaultEngine": "sglang"}, "routerlib _config.yaml: the extractor reads SGLang's names only when told"


def pd_roles() -> list[dict[str, Any]]:
    return [{"name": "prefill", "serves": "prefill", "selector": {"app": "k3", ROLE_LABEL: "prefill"}},
            {"name": "decode", "serves": "decode", "selector": {"app": "k3", ROLE_LABEL: "decode"}}]


def test_a_prefill_and_a_decode_role_get_the_disaggregation_handler_over_one_pool() -> None:
    chart = gateway_chart(roles=pd_roles(), render_url=RENDER)
    assert chart["values"]["router"]["modelServers"]["matchLabels"] == {"app": "k3"}, "one pool over both roles"
    doc = picker_document(chart)
    plugins = {p["type"]: p.get("parameters") for p in doc["plugins"]}
    assert "single-profile-handler" not in plugins
    assert plugins["disagg-profile-handler"] == {"profiles": {"prefill": "prefill", "decode": "decode"},
                                                 "deciders": {"prefill": "prefix-based-pd-decider"}}
    assert plugins["prefix-based-pd-decider"] == {"nonCachedTokens": 2048}
    assert profiles_of(doc) == {"prefill": [("prefill-filter", 0), *SCORING], "decode": [("decode-filter", 0), *SCORING]}
    assert picker_document(gateway_chart(roles=pd_roles()[:1]))["schedulingProfiles"][0]["name"] == "default"


def test_roles_the_picker_cannot_tell_apart_are_refused() -> None:
    unlabelled = pd_roles()
    unlabelled[1] = {**unlabelled[1], "selector": {"app": "k3"}}
    with pytest.raises(pulumi.InputPropertyError, match=f"role 'decode' must select {ROLE_LABEL}=decode"):
        gateway_chart(roles=unlabelled)
    outside = [{"name": "x", "serves": "prefil", "selector": {"app": "other"}}]
    with pytest.raises(pulumi.InputPropertyError, match="serves 'prefil'.*selects pods outside the pool"):
        gateway_chart(roles=outside)


@dataclasses.dataclass(frozen=True)
class _Misspelt(Plugin):
    TYPE: ClassVar[str] = "prefix-cache-scorr"


@dataclasses.dataclass(frozen=True)
class _Deprecated(Plugin):
    TYPE: ClassVar[str] = "precise-prefix-cache-scorer"


def test_the_checker_refuses_what_the_picker_would() -> None:
    """A misspelt type, a deprecated one, a reference to nothing and a duplicate are each refused; the K3 profile
    in each of its forms passes, every type in it is in the catalog."""
    good = k3_picker_forms()
    for config in good:
        assert picker_problems(config) == []
        assert {p.TYPE for p in config.plugins} <= set(PICKER_PLUGIN_TYPES)
    base = good[0]
    misspelt = dataclasses.replace(base, plugins=(*base.plugins, _Misspelt()))
    assert picker_problems(misspelt) == [
        f"plugin type 'prefix-cache-scorr' is not one the picker registers at llm-d/llm-d-router v0.10.0 (commit "
        f"71f4f0999f95) (known: {', '.join(sorted(PICKER_PLUGIN_TYPES))})"]
    deprecated = dataclasses.replace(base, plugins=(*base.plugins, _Deprecated()))
    assert picker_problems(deprecated) == [
        "plugin type 'precise-prefix-cache-scorer' is deprecated at llm-d/llm-d-router v0.10.0 (commit 71f4f0999f95): "
        + DEPRECATED_PLUGIN_TYPES["precise-prefix-cache-scorer"]]
    dangling = dataclasses.replace(base, profiles=(*base.profiles, Profile("x", (Weighted(_Misspelt(name="y")),))))
    assert picker_problems(dangling) == ["profile 'x' refers to 'y', which no plugin declares"]
    twice = dataclasses.replace(base, plugins=(*base.plugins, base.plugins[-1]), profiles=(*base.profiles,) * 2)
    assert picker_problems(twice) == ["plugin name 'single-profile-handler' is declared twice",
                                      "profile 'default' is declared twice"]


def k3_picker_forms() -> list[PickerConfig]:
    from k3infra.serving.picker import PickerInputs
    base = PickerInputs(engine=EngineName.VLLM, model_name="Kimi-K3", namespace="n", render_url=RENDER,
                        context_tokens=1_000_000, precise_blocker="")
    return [k3_picker(base), k3_picker(dataclasses.replace(base, precise_blocker="x")),
            k3_picker(dataclasses.replace(base, roles=("prefill", "decode"))),
            k3_picker(dataclasses.replace(base, engine=EngineName.SGLANG, precise_blocker="x"))]


FREE_MAPS = {
    "router.modelServers.matchLabels": "routerlib values.yaml: '# matchLabels: # REQUIRED in parent charts'",
    "router.epp.pluginsCustomConfig": "routerlib values.yaml: {} of file name to file",
    "router.epp.resources.requests": "a container's resource requests",
    "router.epp.podAnnotations": "routerlib values.yaml: podAnnotations: {} (the pod template's annotations)",
}


def _unknown_keys(values: Mapping[str, Any], defaults: Mapping[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if path in FREE_MAPS:
            continue
        if key not in defaults:
            out.append(path)
        elif isinstance(value, dict) and isinstance(defaults[key], dict):
            out += _unknown_keys(value, defaults[key], path + ".")
    return out


def chart_defaults() -> dict[str, Any]:
    """llm-d-router-gateway v0.10.0's values: its own and routerlib's under the ``router`` alias (Chart.yaml)."""
    charts = ROOT / "schemas" / "charts"
    gateway = yaml.safe_load((charts / "llm-d-router-gateway-v0.10.0-values.yaml").read_text())
    router = yaml.safe_load((charts / "llm-d-router-routerlib-v0.10.0-values.yaml").read_text())
    return {**gateway, "router": {**router, **(gateway.get("router") or {})}}


def test_chart_values_are_keys_the_chart_defines() -> None:
    """The chart has no values.schema.json at v0.10.0; Helm ignores an unknown key, so a misspelt one would leave
    the picker on the chart's default profile. Every key k3infra sets is one of the vendored defaults'."""
    values = offline.plain(record_shape("a4xmax-gateway").recording.one(*EPP).inputs)["values"]
    defaults = chart_defaults()
    assert _unknown_keys(values, defaults) == []
    planted = {**values, "router": {**values["router"], "epp": {**values["router"]["epp"], "pluginConfigFile": "x"}}}
    assert _unknown_keys(planted, defaults) == ["router.epp.pluginConfigFile"]


def test_vllm_publishes_kv_events_on_the_http_rank_only_when_the_picker_reads_them() -> None:
    spec = EngineSpec.named("moonshotai/Kimi-K3", EngineName.VLLM, nodes=2, tensor_parallel=16)
    on = dataclasses.replace(spec, kv_events=True)
    leader = vllm_command(on, model="/m", role=Role.LEADER)
    config = json.loads(leader.args[leader.args.index("--kv-events-config") + 1])
    assert config == {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": f"tcp://*:{KV_EVENTS_PORT}",
                      "topic": "kv@${HOSTNAME}@Kimi-K3"}
    assert "--enable-scale-out" in leader.args
    assert leader.extra_ports == {"dist": 29501, "kv-events": KV_EVENTS_PORT}
    worker = vllm_command(on, model="/m", role=Role.WORKER, node_rank="1")
    assert "--kv-events-config" not in worker.args and "kv-events" not in worker.extra_ports
    off = vllm_command(spec, model="/m", role=Role.LEADER)
    assert "--kv-events-config" not in off.args and "--enable-scale-out" not in off.args


def test_the_stack_s_leader_declares_the_port_and_its_policy_admits_the_namespace_to_it() -> None:
    rec = record_shape("a4xmax-gateway").recording
    lws = offline.plain(rec.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet").inputs)
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert leader["ports"] == [{"containerPort": 8000, "name": "http", "protocol": "TCP"},
                               {"containerPort": 29501, "name": "dist", "protocol": "TCP"},
                               {"containerPort": KV_EVENTS_PORT, "name": "kv-events", "protocol": "TCP"}]
    assert '--kv-events-config "{\\"enable_kv_cache_events\\":true,' in leader["args"][0]
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert "kv-events" not in worker["args"][0] and worker.get("ports") is None
    policy = offline.plain(rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", "k3-server-network-policy").inputs)
    first = policy["spec"]["ingress"][0]
    assert first["from"] == [{"podSelector": {}}]
    assert first["ports"] == [{"protocol": "TCP", "port": 8000}, {"protocol": "TCP", "port": "kv-events"}]


def test_agentgateway_values_are_keys_the_chart_defines() -> None:
    """agentgateway v1.0.0 ships no values.schema.json: its values k3infra sets (serving.gateway_install) are keys
    of the vendored defaults, and a misspelt one is caught."""
    from k3infra.serving.gateway_install import AGENTGATEWAY_VALUES

    defaults = yaml.safe_load((ROOT / "schemas" / "charts" / "agentgateway-v1.0.0-values.yaml").read_text())
    assert _unknown_keys(AGENTGATEWAY_VALUES, defaults) == []
    assert defaults["inferenceExtension"] == {"enabled": False}, "the chart's default, which k3infra turns on"
    assert _unknown_keys({"inferenceExtensions": {"enabled": True}}, defaults) == ["inferenceExtensions"]
    assert _unknown_keys({"inferenceExtension": {"enable": True}}, defaults) == ["inferenceExtension.enable"]

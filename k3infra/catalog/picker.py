"""The llm-d router's endpoint picker (EPP) at the release k3infra pins: the plugin types its configuration may
name, the role label its P/D filters read, and where it subscribes to the engines' KV-cache events.

Every plugin type below is the string the picker registers in ``cmd/epp/runner/runner.go``
(``registerInTreePlugins``) at llm-d/llm-d-router v0.10.0 (commit 71f4f0999f95, the release's backport merge of
2026-08-17, the one ``catalog.charts`` pins the chart at), with the Go file that defines the constant. The picker
refuses a configuration naming an unregistered type at start, and the gateway's EPP Deployment would then never
become ready; ``serving.picker.picker_problems`` refuses it before any resource is registered instead.
"""

from types import MappingProxyType
from typing import Mapping

from .types import EngineName

ROUTER_RELEASE = "v0.10.0"
"""llm-d/llm-d-router release: the chart (``catalog.charts``) and the EPP image tag."""

ROUTER_SOURCE = "llm-d/llm-d-router v0.10.0 (commit 71f4f0999f95)"
"""Where the facts of this module were read."""

_P = "pkg/epp/framework/plugins/"

PICKER_PLUGIN_TYPES: Mapping[str, str] = MappingProxyType({
    # data layer: scrape the engines' /metrics, watch the pool's endpoints
    "metrics-data-source": _P + "datalayer/source/metrics/datasource.go (MetricsDataSourceType)",
    "core-metrics-extractor": _P + "datalayer/extractor/metrics/factories.go (MetricsExtractorType)",
    "endpoint-notification-source": _P + "datalayer/source/notifications/endpoint_datasource.go "
                                         "(EndpointNotificationSourceType)",
    # request data producers
    "token-producer": _P + "requestcontrol/dataproducer/tokenizer/tokenizer.go (PluginType)",
    "precise-prefix-cache-producer": _P + "requestcontrol/dataproducer/preciseprefixcache/producer.go (PluginType)",
    "approx-prefix-cache-producer": _P + "requestcontrol/dataproducer/approximateprefix/constants/constants.go "
                                         "(ApproxPrefixCachePluginType)",
    # scorers
    "prefix-cache-scorer": _P + "scheduling/scorer/prefix/plugin.go (PrefixCacheScorerPluginType)",
    "kv-cache-utilization-scorer": _P + "scheduling/scorer/kvcacheutilization/kvcache_utilization.go "
                                        "(KvCacheUtilizationScorerType)",
    "queue-scorer": _P + "scheduling/scorer/queuedepth/queue.go (QueueScorerType)",
    "active-request-scorer": _P + "scheduling/scorer/activerequest/active_request.go (ActiveRequestType)",
    # filters, picker, profile handlers, P/D deciders
    "decode-filter": _P + "scheduling/filter/bylabel/roles.go (DecodeRoleType)",
    "prefill-filter": _P + "scheduling/filter/bylabel/roles.go (PrefillRoleType)",
    "max-score-picker": _P + "scheduling/picker/maxscore/picker.go (MaxScorePickerType)",
    "single-profile-handler": _P + "scheduling/profilehandler/single/single_profile_handler.go "
                                   "(SingleProfileHandlerType)",
    "disagg-profile-handler": _P + "scheduling/profilehandler/disagg/disagg_profile_handler.go "
                                   "(DisaggProfileHandlerType)",
    "prefix-based-pd-decider": _P + "scheduling/profilehandler/disagg/prefix_based_pd_decider.go "
                                    "(PrefixBasedPDDeciderPluginType)",
    # request parsing
    "openai-parser": _P + "requesthandling/parsers/openai/openai.go (OpenAIParserType)",
})
"""Plugin types k3infra's picker configuration may name, each with the file defining it at ``ROUTER_SOURCE``. A
subset of the 96 the release registers: the ones the K3 profile uses."""

DEPRECATED_PLUGIN_TYPES: Mapping[str, str] = MappingProxyType({
    "precise-prefix-cache-scorer": "deprecated for precise-prefix-cache-producer + prefix-cache-scorer with "
                                   "prefixMatchInfoProducerName (scheduling/scorer/preciseprefixcache/"
                                   "precise_prefix_cache.go, PluginFactory's DEPRECATION log)",
    "tokenizer": "renamed token-producer; RegisterDeprecated v0.9.0, removed in v0.11.0 (runner.go)",
    "pd-profile-handler": "replaced by disagg-profile-handler; RegisterDeprecatedWithPluginDependencies v0.7.0 "
                          "(runner.go)",
    "prefill-header-handler": "replaced by disagg-profile-handler; RegisterDeprecated v0.9.0 (runner.go)",
    "by-label": "replaced by label-selector-filter; RegisterDeprecated v0.9.0 (runner.go)",
})
"""Types the release still registers but says to stop using: refused, with why (the guides of llm-d/llm-d still
name ``precise-prefix-cache-scorer`` and ``tokenizer``, written for v0.8.0)."""

PICKER_CONFIG_API = ("llm-d.ai/v1alpha1", "EndpointPickerConfig")
"""apiVersion and kind of the picker's configuration file (routerlib ``templates/_config.yaml``
default-plugins.yaml)."""

ROLE_LABEL = "llm-d.ai/role"
"""The pod label the picker's prefill-filter and decode-filter read (``scheduling/filter/bylabel/roles.go``
RoleLabel). decode-filter also admits pods without the label (``NewByLabel(..., true, ...)``), so an aggregated
server needs none; prefill-filter admits only ``prefill`` (and the combined roles)."""

ROLE_VALUES = ("prefill", "decode", "prefill-decode")
"""Values of ``ROLE_LABEL`` a k3infra role carries (``bylabel/roles.go`` RolePrefill, RoleDecode,
RolePrefillDecode)."""

KV_EVENTS_PORT = 5557
"""Port each engine pod publishes its KV-cache events on and the picker dials: the picker's pod-discovery default
(``pkg/kvevents/pool.go`` DefaultPodReconcilerConfig ``SocketPort: 5557``; it dials ``tcp://<pod IP>:<port +
rank>``, ``dataproducer/preciseprefixcache/extractor.go`` ensureSubscriber) and vLLM's own default publisher
endpoint (``vllm/config/kv_events.py`` ``endpoint = "tcp://*:5557"``)."""

KV_EVENTS_PORT_NAME = "kv-events"
"""The engine container's name for ``KV_EVENTS_PORT`` (the server's NetworkPolicy admits the picker to it)."""

KV_EVENTS_TOPIC_FILTER = "kv@"
"""ZMQ subscription prefix the picker subscribes with (``pkg/kvevents/pool.go`` DefaultConfig ``TopicFilter``); the
engine's topic starts with it."""

KV_EVENTS_WORKERS = 4
"""Workers applying events to the picker's block index (``pkg/kvevents/pool.go`` DefaultConfig
``Concurrency: 4``)."""

EPP_CONFIG_FILE = "k3infra-plugins.yaml"
"""The key of ``router.epp.pluginsCustomConfig`` holding k3infra's configuration, selected by
``router.epp.pluginsConfigFile`` (routerlib ``values.yaml``; the chart mounts the ConfigMap and runs the EPP
with ``--config-file /config/<pluginsConfigFile>``, ``templates/_deployment.yaml``)."""

PD_NON_CACHED_TOKENS = 2048
"""ESTIMATE: the uncached prompt tokens above which the P/D decider sends a request to a prefill role
(``prefix-based-pd-decider`` ``nonCachedTokens``; llm-d-router's sample ``deploy/config/pd-epp-config.yaml`` uses 16).
Below it the decode role prefills the short uncached suffix itself rather than wait for a KV transfer; no K3
measurement backs the figure."""

PREFIX_WEIGHT, QUEUE_WEIGHT, KV_UTILIZATION_WEIGHT = 3, 1, 1
"""The K3 profile's scorer weights (ASSUMPTION, docs/serving.md "The picker"): the prefix scorer outweighs the two
load scorers together, so a replica holding a request's prefix wins unless it is far busier. The chart's default
profile weighs them 3/2/2 (routerlib ``templates/_config.yaml``) and llm-d's precise-prefix-cache-aware guide
2/1/1; with Kimi K3's 1M-token contexts a missed prefix costs a prefill of up to a million tokens, so prefix
weighs more than in either."""

RENDER_ENGINES: Mapping[EngineName, str] = MappingProxyType({
    EngineName.VLLM: "vllm 0.33.0 vllm/entrypoints/scale_out/factories.py register_scale_out_api_routers: "
                     "/v1/completions/render and /v1/chat/completions/render on `vllm serve` with "
                     "--enable-scale-out (403 without it); vllm/config/kv_events.py KVEventsConfig (ZMQ publisher)",
})
"""Engines whose server both publishes KV-cache events and answers the render endpoints the picker's
token-producer calls (``dataproducer/tokenizer/README.md``: ``POST {url}/v1/completions/render``). SGLang 0.5.23
publishes KV events (``--kv-events-config``) but serves no render endpoint, and the picker's precise index needs
the engine's own tokens (the ``estimate`` tokenizer "silently degrades precise cache correlation", same README)."""


def precise_prefix_blocker(engine: EngineName, api_key: bool) -> str:
    """Why the picker cannot score prefixes from the engine's KV events ("" when it can): the engine serves no
    render endpoint, or the endpoint checks an API key, which guards ``/v1`` (vllm 0.33.0
    ``entrypoints/serve/middleware/authenticate.py`` GUARDED_PREFIX) while the token-producer sends no credentials
    (``tokenizer/vllm_http.go`` vllmConfig: url and timeouts only)."""
    if engine not in RENDER_ENGINES:
        return (f"{engine} serves no render endpoint for the picker's tokenizer, so the picker approximates "
                "prefixes from the request text (approx-prefix-cache-producer)")
    if api_key:
        return ("the API key guards the engine's render endpoint and the picker's tokenizer sends no credentials, "
                "so the picker approximates prefixes from the request text (approx-prefix-cache-producer)")
    return ""


def publishes_kv_events(gateway: bool, engine: EngineName, api_key: bool) -> bool:
    """Whether the engine's HTTP rank publishes KV-cache events for the picker: behind a gateway whose picker
    scores prefixes from them (``precise_prefix_blocker``)."""
    return gateway and not precise_prefix_blocker(engine, api_key)


__all__ = ["publishes_kv_events", "PD_NON_CACHED_TOKENS", "PREFIX_WEIGHT", "QUEUE_WEIGHT", "KV_UTILIZATION_WEIGHT", "RENDER_ENGINES",
           "precise_prefix_blocker", "DEPRECATED_PLUGIN_TYPES", "EPP_CONFIG_FILE", "KV_EVENTS_PORT", "KV_EVENTS_PORT_NAME", "KV_EVENTS_TOPIC_FILTER",
           "KV_EVENTS_WORKERS", "PICKER_CONFIG_API", "PICKER_PLUGIN_TYPES", "ROLE_LABEL", "ROLE_VALUES",
           "ROUTER_RELEASE", "ROUTER_SOURCE"]

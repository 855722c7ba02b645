"""The endpoint picker's configuration (llm-d-router's ``EndpointPickerConfig``), rendered from typed settings.

Each plugin k3infra configures is a frozen dataclass whose ``TYPE`` is the type the picker registers
(``catalog.picker.PICKER_PLUGIN_TYPES``) and whose fields are the parameters the picker's Go structs read (the
JSON names in ``parameters()``); a profile lists references to them with weights. ``PickerConfig.document()`` is the
file the chart mounts, ``picker_problems`` what the picker would refuse at start (an unknown or deprecated type, a
reference to an undeclared plugin, a name used twice), checked before any resource is registered.

``k3_picker`` is the profile for Kimi K3's long, prefix-heavy requests (docs/serving.md "The picker"): the prefix
scorer fed by the engines' own KV-cache events where the engine allows it (``catalog.picker.
precise_prefix_blocker``), else by the picker's approximation from the request text, and the queue and
KV-utilization scorers; one profile for an aggregated server, a prefill and a decode profile under the
disaggregation handler when the targets hold both roles.
"""

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

from ..catalog import EngineName
from ..catalog.picker import (
    DEPRECATED_PLUGIN_TYPES,
    KV_EVENTS_PORT,
    KV_EVENTS_TOPIC_FILTER,
    KV_EVENTS_WORKERS,
    KV_UTILIZATION_WEIGHT,
    PD_NON_CACHED_TOKENS,
    PICKER_CONFIG_API,
    PICKER_PLUGIN_TYPES,
    PREFIX_WEIGHT,
    QUEUE_WEIGHT,
    ROUTER_SOURCE,
)


@dataclass(frozen=True)
class Plugin:
    """A plugin instance: its registered type, the name profiles refer to it by, and its parameters."""

    TYPE: ClassVar[str] = ""

    name: str = ""
    """The instance's name (default: its type, as the picker names an unnamed plugin)."""

    @property
    def ref(self) -> str:
        """The name a profile or the data layer refers to this instance by."""
        return self.name or self.TYPE

    def parameters(self) -> dict[str, Any] | None:
        """The plugin's ``parameters`` (None: the picker's defaults)."""
        return None

    def entry(self) -> dict[str, Any]:
        """The plugin's entry in ``plugins``."""
        out: dict[str, Any] = {"type": self.TYPE}
        if self.name and self.name != self.TYPE:
            out["name"] = self.name
        params = self.parameters()
        if params is not None:
            out["parameters"] = params
        return out


@dataclass(frozen=True)
class MetricsDataSource(Plugin):
    """Scrapes every endpoint's Prometheus metrics (queue length, KV-cache use)."""

    TYPE: ClassVar[str] = "metrics-data-source"
    path: str = "/metrics"
    """The engine's metrics path."""

    def parameters(self) -> dict[str, Any] | None:
        return {"scheme": "http", "path": self.path}


@dataclass(frozen=True)
class CoreMetricsExtractor(Plugin):
    """Reads the engine's queue and KV-cache gauges from the scrape, by the engine's metric names."""

    TYPE: ClassVar[str] = "core-metrics-extractor"
    engine: EngineName = EngineName.VLLM
    """The engine whose names apply (the extractor's default is vLLM's; routerlib ``_config.yaml`` sets
    ``defaultEngine`` for any other)."""

    def parameters(self) -> dict[str, Any] | None:
        return None if self.engine == EngineName.VLLM else {"defaultEngine": str(self.engine)}


@dataclass(frozen=True)
class EndpointNotificationSource(Plugin):
    """Tells the precise producer when an endpoint joins or leaves the pool (it dials or drops its publisher)."""

    TYPE: ClassVar[str] = "endpoint-notification-source"


@dataclass(frozen=True)
class TokenProducer(Plugin):
    """Tokenizes each request with the engine's own tokenizer (its render endpoint)."""

    TYPE: ClassVar[str] = "token-producer"
    model_name: str = ""
    """The served model name render requests carry."""
    url: str = ""
    """Base URL of the render endpoint (the server's Service)."""

    def parameters(self) -> dict[str, Any] | None:
        return {"modelName": self.model_name, "vllm": {"url": self.url}}


@dataclass(frozen=True)
class PrecisePrefixProducer(Plugin):
    """Keeps an index of the blocks each endpoint holds, fed by the engines' KV-cache events, and tells the prefix
    scorer how much of a request's prefix each endpoint already holds."""

    TYPE: ClassVar[str] = "precise-prefix-cache-producer"
    socket_port: int = KV_EVENTS_PORT
    """The port every endpoint publishes its events on (the picker dials ``tcp://<pod IP>:<port>``)."""
    namespace: str = ""
    """The namespace of the pool's pods."""
    engine: EngineName = EngineName.VLLM
    """Whose event format to decode."""

    def parameters(self) -> dict[str, Any] | None:
        events: dict[str, Any] = {"topicFilter": KV_EVENTS_TOPIC_FILTER, "concurrency": KV_EVENTS_WORKERS,
                                  "engineType": str(self.engine), "discoverPods": True,
                                  "podDiscoveryConfig": {"socketPort": self.socket_port,
                                                         "podNamespace": self.namespace}}
        return {"indexerConfig": {"kvBlockIndexConfig": {"enableMetrics": True}}, "kvEventsConfig": events}


@dataclass(frozen=True)
class ApproxPrefixProducer(Plugin):
    """Estimates what each endpoint holds from the requests the picker sent it (no engine events)."""

    TYPE: ClassVar[str] = "approx-prefix-cache-producer"
    max_prefix_tokens: int = 0
    """How much of a prompt to match (the producer's default stops at 131,072 tokens; two longer prompts that
    share that much would look alike)."""

    def parameters(self) -> dict[str, Any] | None:
        return {"autoTune": True, "maxPrefixTokensToMatch": self.max_prefix_tokens}


@dataclass(frozen=True)
class PrefixCacheScorer(Plugin):
    """Scores an endpoint by the share of the request's prefix it holds, as its producer reports."""

    TYPE: ClassVar[str] = "prefix-cache-scorer"
    producer: str = ""
    """The producer whose match information it reads (``""``: the approximate producer the picker adds itself)."""

    def parameters(self) -> dict[str, Any] | None:
        return {"prefixMatchInfoProducerName": self.producer} if self.producer else None


@dataclass(frozen=True)
class QueueScorer(Plugin):
    """Prefers endpoints with fewer queued requests."""

    TYPE: ClassVar[str] = "queue-scorer"


@dataclass(frozen=True)
class KvCacheUtilizationScorer(Plugin):
    """Prefers endpoints whose KV cache is emptier."""

    TYPE: ClassVar[str] = "kv-cache-utilization-scorer"


@dataclass(frozen=True)
class MaxScorePicker(Plugin):
    """Picks the endpoint with the highest weighted score."""

    TYPE: ClassVar[str] = "max-score-picker"


@dataclass(frozen=True)
class SingleProfileHandler(Plugin):
    """Runs the one profile (an aggregated server)."""

    TYPE: ClassVar[str] = "single-profile-handler"


@dataclass(frozen=True)
class PrefillFilter(Plugin):
    """Keeps the endpoints whose ``llm-d.ai/role`` is prefill."""

    TYPE: ClassVar[str] = "prefill-filter"


@dataclass(frozen=True)
class DecodeFilter(Plugin):
    """Keeps the endpoints whose ``llm-d.ai/role`` is decode (or unset)."""

    TYPE: ClassVar[str] = "decode-filter"


@dataclass(frozen=True)
class PrefixBasedPdDecider(Plugin):
    """Sends a request to a prefill endpoint when more than ``non_cached_tokens`` of it are not cached."""

    TYPE: ClassVar[str] = "prefix-based-pd-decider"
    non_cached_tokens: int = PD_NON_CACHED_TOKENS
    """The uncached-token threshold."""

    def parameters(self) -> dict[str, Any] | None:
        return {"nonCachedTokens": self.non_cached_tokens}


@dataclass(frozen=True)
class DisaggProfileHandler(Plugin):
    """Runs the decode profile, then the prefill profile when its decider says so (P/D)."""

    TYPE: ClassVar[str] = "disagg-profile-handler"
    decider: str = PrefixBasedPdDecider.TYPE
    """The decider plugin's name."""

    def parameters(self) -> dict[str, Any] | None:
        return {"profiles": {"prefill": "prefill", "decode": "decode"}, "deciders": {"prefill": self.decider}}


@dataclass(frozen=True)
class Weighted:
    """A plugin's place in a profile, with its weight where it scores."""

    plugin: Plugin
    weight: int = 0
    """The scorer's weight (0: not a scorer)."""

    def entry(self) -> dict[str, Any]:
        """The profile's reference."""
        out: dict[str, Any] = {"pluginRef": self.plugin.ref}
        if self.weight:
            out["weight"] = self.weight
        return out


@dataclass(frozen=True)
class Profile:
    """A scheduling profile: filters, weighted scorers and the picker, in order."""

    name: str
    steps: tuple[Weighted, ...]


@dataclass(frozen=True)
class PickerConfig:
    """An ``EndpointPickerConfig``: the plugins, the data layer's sources and extractors, the profiles."""

    plugins: tuple[Plugin, ...]
    profiles: tuple[Profile, ...]
    sources: tuple[tuple[Plugin, tuple[Plugin, ...]], ...] = ()
    """Each data source with the extractors it feeds."""
    precise: bool = False
    """The prefix scorer reads the engines' KV-cache events (else the picker's approximation)."""
    notes: tuple[str, ...] = field(default=())
    """What the plan should say about the profile (why prefix scoring is approximate)."""

    def document(self) -> dict[str, Any]:
        """The configuration file as the picker reads it."""
        api, kind = PICKER_CONFIG_API
        out: dict[str, Any] = {"apiVersion": api, "kind": kind, "plugins": [p.entry() for p in self.plugins]}
        if self.sources:
            out["dataLayer"] = {"sources": [{"pluginRef": s.ref, "extractors": [{"pluginRef": e.ref} for e in ex]}
                                            for s, ex in self.sources]}
        out["schedulingProfiles"] = [{"name": p.name, "plugins": [w.entry() for w in p.steps]}
                                     for p in self.profiles]
        return out


def picker_problems(config: PickerConfig) -> list[str]:
    """What the picker (``ROUTER_SOURCE``) would refuse: an unregistered or deprecated type, a name declared twice,
    a profile or source naming an undeclared plugin, two profiles of one name."""
    out: list[str] = []
    names: dict[str, str] = {}
    for p in config.plugins:
        if p.TYPE in DEPRECATED_PLUGIN_TYPES:
            out.append(f"plugin type {p.TYPE!r} is deprecated at {ROUTER_SOURCE}: {DEPRECATED_PLUGIN_TYPES[p.TYPE]}")
        elif p.TYPE not in PICKER_PLUGIN_TYPES:
            out.append(f"plugin type {p.TYPE!r} is not one the picker registers at {ROUTER_SOURCE} (known: "
                       f"{', '.join(sorted(PICKER_PLUGIN_TYPES))})")
        if p.ref in names:
            out.append(f"plugin name {p.ref!r} is declared twice")
        names[p.ref] = p.TYPE
    refs = [(f"profile {pr.name!r}", w.plugin.ref) for pr in config.profiles for w in pr.steps]
    refs += [("dataLayer", x.ref) for s, ex in config.sources for x in (s, *ex)]
    out += [f"{where} refers to {ref!r}, which no plugin declares" for where, ref in refs if ref not in names]
    profiles = [p.name for p in config.profiles]
    out += [f"profile {n!r} is declared twice" for n in sorted({n for n in profiles if profiles.count(n) > 1})]
    return out


@dataclass(frozen=True)
class PickerInputs:
    """What the K3 profile depends on."""

    engine: EngineName
    model_name: str
    """The served model name."""
    namespace: str
    render_url: str
    """Base URL of the server's render endpoint (its Service)."""
    context_tokens: int
    """The model's context: how much of a prompt the approximate producer matches."""
    precise_blocker: str
    """Why the engines' KV events cannot feed the prefix scorer ("" when they can)."""
    roles: Sequence[str] = ("decode",)
    """The P/D roles of the pool's targets (``catalog.picker.ROLE_VALUES``): both prefill and decode make the
    profile disaggregated."""
    metrics_path: str = "/metrics"


def k3_picker(i: PickerInputs) -> PickerConfig:
    """The K3 profile (module docstring): prefix, queue and KV-utilization scorers over the max-score picker."""
    metrics, extractor = MetricsDataSource(path=i.metrics_path), CoreMetricsExtractor(engine=i.engine)
    plugins: list[Plugin] = [metrics, extractor]
    sources: list[tuple[Plugin, tuple[Plugin, ...]]] = [(metrics, (extractor,))]
    if i.precise_blocker:
        producer: Plugin = ApproxPrefixProducer(max_prefix_tokens=i.context_tokens)
        plugins.append(producer)
    else:
        notifications = EndpointNotificationSource()
        producer = PrecisePrefixProducer(namespace=i.namespace, engine=i.engine)
        plugins += [notifications, TokenProducer(model_name=i.model_name, url=i.render_url), producer]
        sources.append((notifications, (producer,)))
    prefix, queue, kv, pick = (PrefixCacheScorer(producer=producer.ref), QueueScorer(), KvCacheUtilizationScorer(),
                               MaxScorePicker())
    plugins += [prefix, queue, kv, pick]
    scoring = (Weighted(prefix, PREFIX_WEIGHT), Weighted(queue, QUEUE_WEIGHT), Weighted(kv, KV_UTILIZATION_WEIGHT),
               Weighted(pick))
    if {"prefill", "decode"} <= set(i.roles):
        prefill, decode, decider = PrefillFilter(), DecodeFilter(), PrefixBasedPdDecider()
        if not i.precise_blocker:
            # The P/D handler and its decider read the default producer's match information (llm-d-router v0.10.0
            # disagg_profile_handler.go Consumes: attribute/prefix PrefixCacheMatchInfoDataKey, the approximate
            # producer's), which the precise producer publishes under its own name (preciseprefixcache/producer.go
            # WithNonEmptyProducerName): the picker would add an approximate producer with nil parameters
            # (datalayer/data_graph.go CreateMissingDataProducers), matching at most 131,072 tokens. Declared here,
            # it matches the model's whole context (the independent review of issue 38, M3).
            plugins.append(ApproxPrefixProducer(max_prefix_tokens=i.context_tokens))
        plugins += [prefill, decode, decider, DisaggProfileHandler(decider=decider.ref)]
        profiles = (Profile("prefill", (Weighted(prefill), *scoring)), Profile("decode", (Weighted(decode), *scoring)))
    else:
        plugins.append(SingleProfileHandler())
        profiles = (Profile("default", scoring),)
    notes = (f"inference gateway: {i.precise_blocker}",) if i.precise_blocker else ()
    return PickerConfig(plugins=tuple(plugins), profiles=profiles, sources=tuple(sources),
                        precise=not i.precise_blocker, notes=notes)


__all__ = ["PickerConfig", "PickerInputs", "Plugin", "Profile", "Weighted", "k3_picker", "picker_problems"]

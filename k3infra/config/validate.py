"""Turn raw configuration into a StackConfig, or raise ConfigError listing every problem at once.

``parse_config`` reads the keys against the schema, then each section in turn, each in a module of its own: where
the stack runs (``target``), what it serves and how the weights reach it (``engine``, ``weights``), its sizing and
workload (``layout``), how the GPUs are obtained (``capacity``), how it is reached, read and scaled (``endpoint``,
``observability``, ``autoscaling``), then the rules and typed settings of its cloud (``clouds``). Every section
reports into one list of problems; none stops at the first.
"""

from dataclasses import dataclass, replace
from typing import Any, Mapping

from .. import sizing as sz
from ..catalog import ENGINES, KUBERNETES_PLATFORMS, MODELS, Cloud, CpuArch, Engine, Loader, Model, Platform, Workload
from . import clouds
from .autoscaling import autoscaling as read_autoscaling
from .capacity import read_capacity
from .clouds.common import CheckContext
from .charts import read_charts
from .endpoint import read_endpoint
from .engine import (check_engine_cache_platform, check_node_weights_platform, privileged_warning, read_engine_version,
                     read_image, read_load_format, read_speculative)
from .keys import ROOT
from .layout import read_fabric_check, read_workload, size_group, size_stack
from .model import (
    AutoscalingConfig,
    CapacityConfig,
    ClusterConfig,
    EndpointConfig,
    ObservabilityConfig,
    StackConfig,
    StatusConfig,
    WeightsConfig,
)
from .naming import zone_problem
from .observability import read_observability, read_status
from .problems import ConfigError, Problems, before_up_warning
from .schema import K, NAMESPACE, did_you_mean, is_given, read_object
from .target import Target, read_cluster, read_target
from .topology import TopologyConfig, TopologyContext, base_values, read_topology
from .weights import read_loader, read_weights


@dataclass(frozen=True)
class _Serving:
    """What the stack serves and how (None or empty where a problem was reported)."""

    model: Model | None
    engine: Engine | None
    image: str
    image_platforms: frozenset[CpuArch]
    engine_version: str
    loader: Loader | None
    load_format: str
    speculative: bool


@dataclass(frozen=True)
class _Sections:
    """The sections read after the sizing (None where a problem was reported)."""

    workload: Workload | None
    capacity: CapacityConfig | None
    weights: WeightsConfig | None
    endpoint: EndpointConfig | None
    cluster: ClusterConfig | None
    observability: ObservabilityConfig | None
    autoscaling: AutoscalingConfig | None
    status: StatusConfig


def parse_config(
    raw: Mapping[str, Any],
    *,
    stack: str,
    project: str = "k3infra",
    source: str | None = None,
    from_strings: bool = False,
    real_run: bool = False,
) -> StackConfig:
    """Validate ``raw`` (``namespace:key`` to value) and size the stack.

    ``from_strings`` reads values the way the Pulumi runtime hands them over (all strings, objects as
    JSON). ``real_run``: the engine runs the program (``pulumi preview``/``up``), so what a stack file may leave to
    the deployer (``Problems.before_up``) is a problem too; otherwise it is a warning. Raises ConfigError with every
    problem found; nothing is registered before this returns.
    """
    p = Problems()
    warnings: list[str] = []
    ns = {k[len(K):]: v for k, v in raw.items() if k.startswith(K)}
    v = read_object(ROOT, ns, NAMESPACE, p, from_strings)
    t = read_target(v, raw, ns, p)
    s = _read_serving(v, t, p, warnings)
    v = base_values(v, t.platform, p)
    sizing, memory_fraction = size_stack(v, t.accelerator, s.model, s.engine, s.loader, s.speculative, t.platform,
                                         t.region, s.load_format, p, warnings)
    topology, sizing = _read_topology(v, t, s, sizing, memory_fraction, p, warnings)
    sections = _read_sections(v, stack, t, s, sizing, p, warnings)
    charts = read_charts(v, p)
    if t.cloud is not None:
        ctx = CheckContext(values=v, raw=raw, cloud=t.cloud, platform=t.platform, region=t.region,
                           zone=v["zone"] if isinstance(v["zone"], str) else None, accelerator=t.accelerator,
                           model=s.model, engine=s.engine, sizing=sizing, capacity=sections.capacity,
                           weights=sections.weights, endpoint=sections.endpoint, cluster=sections.cluster)
        clouds.CHECKS[t.cloud](ctx, p, warnings)

    if real_run:
        p.items.extend(p.before_up)
    else:
        warnings.extend(before_up_warning(b) for b in p.before_up)
    if p:
        raise ConfigError(p.items, source or f"stack {stack}")
    return replace(_stack_config(v, raw, stack, project, t, s, sizing, memory_fraction, sections, warnings, topology),
                   charts=charts)


def _read_topology(v: dict[str, Any], t: Target, s: _Serving, sizing: sz.Sizing | None, fraction: float, p: Problems,
                   warnings: list[str]) -> tuple[TopologyConfig, sz.Sizing | None]:
    """``k3infra:topology`` and the sizing with its roles (the sizing as it is where something it needs was refused)."""
    if t.accelerator is None or s.model is None or s.engine is None or s.loader is None:
        return TopologyConfig(), sizing
    accel, model, engine, loader = t.accelerator, s.model, s.engine, s.loader

    def group(over: dict[str, Any], problems: Problems, readers: int) -> sz.Sizing | None:
        return size_group({**v, **over}, accel, model, engine, loader, fraction, s.speculative, t.platform, problems,
                          t.region, s.load_format, readers)

    ctx = TopologyContext(accelerator=accel, model=model, engine=engine, engine_version=s.engine_version,
                          platform=t.platform, memory_fraction=fraction, size_group=group)
    return read_topology(v, ctx, sizing, p, warnings)


def _read_serving(v: dict[str, Any], t: Target, p: Problems, warnings: list[str]) -> _Serving:
    """The model, the engine and its image and release, the loader, the load format and speculative decoding."""
    model = MODELS.get(v["model"]) if isinstance(v["model"], str) else None
    if isinstance(v["model"], str) and model is None:
        p.add(K + "model", "is not a model the catalog knows" + did_you_mean(v["model"], list(MODELS)), v["model"],
              ", ".join(MODELS))
    engine = ENGINES[v["engine"]] if is_given(v["engine"]) else None
    image, platforms = read_image(v, engine, t.accelerator, p, warnings)
    engine_version = read_engine_version(v, engine, image, p, warnings)
    loader = read_loader(v, t.cloud, t.platform, p)
    load_format = read_load_format(v, engine, loader, p)
    speculative = read_speculative(v, engine, model, t.platform, p)
    return _Serving(model, engine, image, platforms, engine_version, loader, load_format, speculative)


def _read_sections(v: dict[str, Any], stack: str, t: Target, s: _Serving, sizing: sz.Sizing | None, p: Problems,
                   warnings: list[str]) -> _Sections:
    """The workload, capacity, weights, endpoint, cluster, observability, autoscaling and status sections, and the
    keys that apply to some platforms only (registryAuth, the zone, engineCache, nodeWeights)."""
    platform = t.platform
    workload = read_workload(v, platform, sizing.nodes if sizing else 0, p, warnings)
    capacity = read_capacity(v, t.accelerator, t.region, platform, p, warnings)
    weights = read_weights(v, t.cloud, p, warnings, s.loader, s.speculative)
    endpoint = read_endpoint(v, platform, p, warnings)
    if v["registryAuth"] is not None and platform is not None and platform != Platform.PAI_EAS:
        p.add(K + "registryAuth", f"is the PAI-EAS service's dockerAuth; on {platform} the nodes pull with the "
              "cluster's own registry credentials (ACK: the aliyun-acr-credential-helper add-on)", "[secret]", "unset")
    if t.cloud is not None and t.region is not None and isinstance(v["zone"], str):
        why = zone_problem(t.cloud, t.region, v["zone"])
        if why:
            p.add(K + "zone", f"is not a zone of {t.region}: {why}", v["zone"], f"a zone of {t.region}")
    cluster = read_cluster(v, stack, p)
    observability = read_observability(v, t.cloud, platform, p, warnings)
    scaling = read_autoscaling(v, platform, workload, sizing, p, warnings)
    status = read_status(v, platform, p)
    check_engine_cache_platform(v, platform, p)
    check_node_weights_platform(v, platform, p)
    if sizing is not None:
        warned = privileged_warning(platform, sizing.node_start is not None and sizing.node_start.local,
                                    sizing.cold_start.engine_cache)
        warnings.extend([warned] if warned else [])
        if sizing.node_start is not None and sizing.node_start.warm_caches and "@sha256:" not in s.image:
            warnings.append(f"k3infra:image {s.image!r} is not pinned by digest (@sha256:...): the engine's caches "
                            "carried through the bucket are keyed by the reference as given, so a tag moved to another "
                            "build shares their key (the engines' own keys make a stale entry a miss, not a fault)")
    return _Sections(workload, capacity, weights, endpoint, cluster, observability, scaling, status)


def _stack_config(v: dict[str, Any], raw: Mapping[str, Any], stack: str, project: str, t: Target, s: _Serving,
                  sizing: sz.Sizing | None, memory_fraction: float, sections: _Sections,
                  warnings: list[str], topology: TopologyConfig) -> StackConfig:
    """The StackConfig of a stack without problems."""
    cloud, platform, region, accel = t.cloud, t.platform, t.region, t.accelerator
    model, engine, loader = s.model, s.engine, s.loader
    capacity, weights, endpoint = sections.capacity, sections.weights, sections.endpoint
    cluster, observability, scaling = sections.cluster, sections.observability, sections.autoscaling
    assert cloud and platform and accel and model and engine and sizing and capacity and weights and endpoint
    assert region is not None and loader is not None and cluster is not None
    assert observability is not None and scaling is not None
    return StackConfig(
        stack=stack,
        project=project,
        cloud=cloud,
        platform=platform,
        region=region,
        zone=v["zone"],
        accelerator=accel,
        model=model,
        engine=engine,
        image=s.image,
        image_platforms=s.image_platforms,
        engine_version=s.engine_version,
        load_format=s.load_format,
        memory_fraction=memory_fraction,
        speculative_decoding=s.speculative,
        workload=sections.workload,
        namespace=v["namespace"],
        nodes=sizing.nodes,
        replicas=v["replicas"],
        capacity=capacity,
        weights=weights,
        endpoint=endpoint,
        cluster=cluster,
        observability=observability,
        verify_after_deploy=bool(v["verifyAfterDeploy"]) and platform in KUBERNETES_PLATFORMS,
        hf_token=v["hfToken"],
        api_key=v["apiKey"],
        registry_auth=v["registryAuth"],
        gcp=clouds.gcp.settings(v, raw, region) if cloud == Cloud.GCP else None,
        aws=clouds.aws.settings(v, region) if cloud == Cloud.AWS else None,
        azure=clouds.azure.settings(v, raw, region, stack) if cloud == Cloud.AZURE else None,
        alicloud=clouds.alicloud.settings(v, region) if cloud == Cloud.ALICLOUD else None,
        kubernetes=clouds.kubernetes.settings(v, accel, sizing) if cloud == Cloud.KUBERNETES else None,
        autoscaling=scaling,
        status=sections.status,
        fabric_check=read_fabric_check(v, sizing if platform in KUBERNETES_PLATFORMS else None, warnings),
        sizing=sizing,
        warnings=tuple(warnings),
        topology=topology,
    )

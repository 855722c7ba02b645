"""Turn raw configuration into a StackConfig, or raise ConfigError listing every problem at once."""

import dataclasses
import re
from datetime import date, datetime
from typing import Any, Mapping

from .. import sizing as sz
from ..catalog import (
    ACCELERATORS,
    AddonState,
    ENGINE_CACHE_BY_DEFAULT,
    ENGINES,
    IMAGES,
    KUBERNETES_PLATFORMS,
    SYNC_POOL_PLATFORMS,
    MODELS,
    PLATFORMS_BY_CLOUD,
    Accelerator,
    CapacityType,
    Cloud,
    CpuArch,
    EngineName,
    Exposure,
    Loader,
    Platform,
    WeightSource,
    Workload,
    accelerators_of,
)
from ..catalog.recipes import VLLM_DSPARK_WITH_PIPELINE, default_memory_fraction, vllm_world_size_problems
from ..catalog.transfer import CPU_NODES, DEFAULT_CPU_NODE, SYNC_POOLS
from .autoscaling import autoscaling as _autoscaling
from .clouds import CHECKS
from .clouds.common import CheckContext
from .clouds.kubernetes import default_topology_label
from .keys import (CAPACITY, CAPACITY_FIELDS, CLOUD_SECTIONS, END_MARGIN_HOURS, GPU_PRESENT_SELECTOR, GPU_TAINT_TOLERATION,
                   PROVIDER_KEYS, ROOT)
from .model import (
    AlicloudConfig,
    AwsConfig,
    AzureConfig,
    CapacityConfig,
    ClusterConfig,
    EndpointConfig,
    GcpConfig,
    KubernetesConfig,
    MaintenanceWindow,
    ObservabilityConfig,
    StackConfig,
    StatusConfig,
    WeightsConfig,
)
from .naming import bucket_name_problem, cidr_problem, storage_account_problem, zone_problem
from .problems import ConfigError, Problems, before_up_warning
from .schema import MISSING, NAMESPACE, did_you_mean, read_object

K = NAMESPACE + ":"

#: Schemes the RunAI Model Streamer reads directly (002 §4.3 az://, §5.3 gs://; s3:// is its native one).
STREAMER_CLOUDS = frozenset({Cloud.GCP, Cloud.AWS, Cloud.AZURE, Cloud.KUBERNETES})

#: Default loader per platform (fuse elsewhere): managed serving has its own way to bring weights in.
DEFAULT_LOADER: dict[Platform | None, Loader] = {Platform.HYPERPOD: Loader.BUCKET_COPY, Platform.PAI_EAS: Loader.FUSE}

#: Loaders each managed platform can use (HyperPod's operator copies from S3; PAI-EAS mounts OSS).
PLATFORM_LOADERS = {Platform.HYPERPOD: (Loader.BUCKET_COPY,), Platform.PAI_EAS: (Loader.FUSE,)}

SHA = re.compile(r"[0-9a-f]{40}")

EXISTING_CLUSTER_KEYS = ("kubeconfig", "s3AccessKeyId", "s3SecretAccessKey")
"""Root keys only an existing cluster (cloud kubernetes) reads."""


def _given(v: Any) -> bool:
    return v is not None and v is not MISSING


def _engine_cache(v: Mapping[str, Any], platform: Platform | None) -> bool:
    """engineCache as given, else the platform's default (catalog.ENGINE_CACHE_BY_DEFAULT); never off Kubernetes."""
    if platform not in KUBERNETES_PLATFORMS:
        return False
    given = v.get("engineCache")
    return bool(given) if _given(given) else platform in ENGINE_CACHE_BY_DEFAULT


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

    cloud: Cloud | None = v["cloud"] if _given(v["cloud"]) else None
    region = _provider_keys(raw, cloud, p)
    if cloud == Cloud.KUBERNETES:
        region = _storage(v).get("region") or "us-east-1"  # the S3-compatible store's signing region
    platform = _platform(v, cloud, p)
    _cloud_sections(ns, cloud, p)
    if cloud is not None and cloud != Cloud.KUBERNETES:
        for name in EXISTING_CLUSTER_KEYS:
            if v.get(name) is not None:
                p.add(K + name, f"applies to cloud kubernetes (an existing cluster); {cloud} stacks make their own "
                      "cluster and bucket", "[secret]", "unset")
    accel = _accelerator(v, cloud, platform, p)

    model = MODELS.get(v["model"]) if isinstance(v["model"], str) else None
    if isinstance(v["model"], str) and model is None:
        p.add(K + "model", "is not a model the catalog knows" + did_you_mean(v["model"], list(MODELS)), v["model"],
              ", ".join(MODELS))
    engine = ENGINES[v["engine"]] if _given(v["engine"]) else None

    image, platforms = _image(v, engine, accel, p, warnings)
    engine_version = _engine_version(v, engine, image, p, warnings)
    loader = _loader(v, cloud, platform, p)
    load_format = _load_format(v, engine, loader, p)
    speculative = _speculative(v, engine, model, platform, p)
    fraction_given = _given(v["memoryFraction"])
    pp_given = v["pipelineParallel"] if _given(v["pipelineParallel"]) else 1
    memory_fraction = v["memoryFraction"] if fraction_given else (
        default_memory_fraction(engine, accel, pp_given) if engine else 0.0)

    sizing = None
    if accel is not None and model is not None and engine is not None and loader is not None:
        mark = len(warnings)
        sizing = _sizing(v, accel, model, engine, loader, memory_fraction, speculative, platform, p, warnings, region,
                         load_format)
        # The recipe's fraction depends on the layout the sizing chose (catalog/recipes.py): size again with it.
        chosen = default_memory_fraction(engine, accel, sizing.layout.pipeline_parallel) if sizing else memory_fraction
        if sizing is not None and not fraction_given and chosen != memory_fraction:
            memory_fraction = chosen
            del warnings[mark:]
            sizing = _sizing(v, accel, model, engine, loader, memory_fraction, speculative, platform, p, warnings, region,
                         load_format)
        if sizing is not None and engine.name == EngineName.VLLM and speculative and sizing.layout.pipeline_parallel > 1:
            p.add(K + "speculativeDecoding", VLLM_DSPARK_WITH_PIPELINE + f"; this layout is pipeline-parallel "
                  f"({sizing.layout.pipeline_parallel} stages)", "dspark", "none, or a layout without pipeline parallelism")
        if sizing is not None and engine.name == EngineName.VLLM:
            for why in vllm_world_size_problems(sizing.layout.tensor_parallel * sizing.layout.pipeline_parallel,
                                                sizing.nodes, accel.gpus_per_node):
                p.add(K + "tensorParallel", why, sizing.layout.tensor_parallel,
                      f"tensorParallel x pipelineParallel = {sizing.nodes} x {accel.gpus_per_node}")

    nodes = sizing.nodes if sizing else 0
    workload = _workload(v, platform, nodes, p, warnings)
    capacity = _capacity(v, accel, region, platform, p, warnings)
    weights = _weights(v, cloud, p, warnings, loader, speculative)
    endpoint = _endpoint(v, platform, p, warnings)
    if v["registryAuth"] is not None and platform is not None and platform != Platform.PAI_EAS:
        p.add(K + "registryAuth", f"is the PAI-EAS service's dockerAuth; on {platform} the nodes pull with the "
              "cluster's own registry credentials (ACK: the aliyun-acr-credential-helper add-on)", "[secret]", "unset")
    if cloud is not None and region is not None and isinstance(v["zone"], str):
        why = zone_problem(cloud, region, v["zone"])
        if why:
            p.add(K + "zone", f"is not a zone of {region}: {why}", v["zone"], f"a zone of {region}")
    cluster = _cluster(v, stack, p)
    observability = _observability(v, cloud, platform, p, warnings)
    scaling = _autoscaling(v, platform, workload, sizing, p, warnings)
    status = _status(v, platform, p)
    _engine_cache_platform(v, platform, p)
    if cloud is not None:
        ctx = CheckContext(values=v, raw=raw, cloud=cloud, platform=platform, region=region,
                           zone=v["zone"] if isinstance(v["zone"], str) else None, accelerator=accel, model=model,
                           engine=engine, sizing=sizing, capacity=capacity, weights=weights, endpoint=endpoint,
                           cluster=cluster)
        CHECKS[cloud](ctx, p, warnings)

    if real_run:
        p.items.extend(p.before_up)
    else:
        warnings.extend(before_up_warning(b) for b in p.before_up)
    if p:
        raise ConfigError(p.items, source or f"stack {stack}")
    assert cloud and platform and accel and model and engine and sizing and capacity and weights and endpoint
    assert region is not None and loader is not None and cluster is not None and observability is not None and scaling is not None
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
        image=image,
        image_platforms=platforms,
        engine_version=engine_version,
        load_format=load_format,
        memory_fraction=memory_fraction,
        speculative_decoding=speculative,
        workload=workload,
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
        gcp=_gcp(v, raw, region) if cloud == Cloud.GCP else None,
        aws=AwsConfig(region=region, vpc_cidr=v["aws"]["vpcCidr"], hyperpod_helm_chart=v["aws"]["hyperpodHelmChart"],
                      public_access_cidrs=tuple(v["aws"].get("publicAccessCidrs") or ()),
                      private_endpoint=bool(v["aws"].get("privateEndpoint")))
        if cloud == Cloud.AWS else None,
        azure=_azure(v, raw, region, stack) if cloud == Cloud.AZURE else None,
        alicloud=_alicloud(v, region) if cloud == Cloud.ALICLOUD else None,
        kubernetes=_kubernetes(v, accel, sizing) if cloud == Cloud.KUBERNETES else None,
        autoscaling=scaling,
        status=status,
        sizing=sizing,
        warnings=tuple(warnings),
    )


def _provider_keys(raw: Mapping[str, Any], cloud: Cloud | None, p: Problems) -> str | None:
    """Check the provider keys k3infra needs; return the region."""
    if cloud is None:
        return None
    region = None
    for key, required, what in PROVIDER_KEYS[cloud]:
        value = raw.get(key)
        if value is None:
            if required:
                p.add(key, f"is required on {cloud} stacks ({what})", None, "a string")
            continue
        if not isinstance(value, str) or not value:
            p.add(key, "must be a non-empty string", value, "a string")
            continue
        if key.endswith((":region", ":location")):
            region = value
    return region


def _platform(v: dict[str, Any], cloud: Cloud | None, p: Problems) -> Platform | None:
    if cloud is None:
        return v["platform"] if _given(v["platform"]) else None
    allowed = PLATFORMS_BY_CLOUD[cloud]
    if not _given(v["platform"]):
        return allowed[0] if v["platform"] is None else None
    if v["platform"] not in allowed:
        p.add(K + "platform", f"is not a platform of {cloud}", str(v["platform"]), ", ".join(allowed))
        return None
    return v["platform"]


def _cloud_sections(ns: Mapping[str, Any], cloud: Cloud | None, p: Problems) -> None:
    if cloud is None:
        return
    for other, section in CLOUD_SECTIONS.items():
        if other != cloud and ns.get(section) not in (None, {}):
            p.add(K + section, f"holds {other} settings, but this stack deploys to {cloud}", ns[section],
                  f"k3infra:{CLOUD_SECTIONS[cloud]} settings only")


def _accelerator(v: dict[str, Any], cloud: Cloud | None, platform: Platform | None, p: Problems) -> Accelerator | None:
    sku = v["accelerator"]
    if not isinstance(sku, str):
        return None
    own = [a.sku for a in accelerators_of(cloud)] if cloud else list(ACCELERATORS)
    accel = ACCELERATORS.get(sku)
    if accel is None:
        p.add(K + "accelerator", "is not a machine type the catalog knows" + did_you_mean(sku, own), sku, ", ".join(own))
        return None
    if cloud is not None and accel.cloud != cloud:
        p.add(K + "accelerator", f"is a {accel.cloud} machine type, and this stack deploys to {cloud}", sku,
              ", ".join(own))
        return None
    if cloud == Cloud.KUBERNETES:
        return _stated_shape(v, accel, p)
    managed_sku = sku.startswith("ml.")
    if platform == Platform.HYPERPOD and not managed_sku:
        p.add(K + "accelerator", "HyperPod instance groups take SageMaker instance types (ml.*)", sku,
              ", ".join(s for s in own if s.startswith("ml.")))
        return None
    if managed_sku and platform is not None and platform != Platform.HYPERPOD:
        p.add(K + "accelerator", f"is a SageMaker instance type; platform {platform} takes EC2 instance types", sku,
              ", ".join(s for s in own if not s.startswith("ml.")))
        return None
    return accel


def _image(v: dict[str, Any], engine: Any, accel: Accelerator | None, p: Problems,
           warnings: list[str]) -> tuple[str, frozenset[CpuArch]]:
    if engine is None:
        return "", frozenset()
    image = v["image"] if isinstance(v["image"], str) else engine.default_image
    known = IMAGES.get(image)
    if known is not None and known.engine != engine.name:
        p.add(K + "image", f"is a {known.engine} image, and the engine is {engine.name}", image,
              ", ".join(i for i, x in IMAGES.items() if x.engine == engine.name) or "an image of the engine")
    declared = v["imagePlatforms"]
    if isinstance(declared, list) and declared:
        platforms = frozenset(declared)
        if known is not None and not platforms <= known.platforms:
            extra = ", ".join(sorted(platforms - known.platforms))
            warnings.append(f"imagePlatforms declares {extra} for {image}, which no source in the catalog confirms: "
                            "check it with docker manifest inspect before deploying (002 caveat 2)")
    elif known is not None:
        platforms = known.platforms
    else:
        if declared is None:
            p.add(K + "imagePlatforms", f"is required for {image}, which the catalog does not know", None,
                  "a list of amd64, arm64 (as docker manifest inspect shows them)")
        return image, frozenset()
    if accel is not None and accel.cpu_arch not in platforms:
        have = ", ".join(sorted(platforms)) or "none"
        p.add(K + "image",
              f"has no known {accel.cpu_arch} build (known: {have}), and {accel.sku} nodes are {accel.cpu_arch}"
              + (" (Grace); build the engine for arm64 (002 appendix item 1)" if accel.cpu_arch == CpuArch.ARM64 else ""),
              image, f"an image with a linux/{accel.cpu_arch} build, declared in k3infra:imagePlatforms")
    return image, platforms


def _release(version: str) -> tuple[int, ...]:
    """The numeric part of a release number (0.5.10.post1 -> (0, 5, 10))."""
    return tuple(int(x) for x in re.match(r"[0-9]+(\.[0-9]+)*", version).group(0).split("."))  # type: ignore[union-attr]


def _engine_version(v: dict[str, Any], engine: Any, image: str, p: Problems, warnings: list[str]) -> str:
    """The engine release of the image: a catalog image's is known and cannot be restated otherwise; a user
    image's is ``engineVersion``, at least the first release that serves the model. Command lines are validated
    against ``Engine.release`` (tests/engines); another release is warned about."""
    if engine is None:
        return ""
    known = IMAGES.get(image)
    given = v["engineVersion"] if isinstance(v["engineVersion"], str) else None
    if known is not None:
        if given is not None and given != known.engine_version:
            p.add(K + "engineVersion", f"{image} is a catalog image with {engine.name} {known.engine_version}", given,
                  known.engine_version)
        return known.engine_version
    version = given or engine.release
    if _release(version) < _release(engine.min_release):
        p.add(K + "engineVersion", f"is older than the first {engine.name} release that serves the catalog's model "
              f"({engine.sources.get('min_release', '')})", version, f"{engine.min_release} or later")
    elif version != engine.release:
        warnings.append(f"engineVersion {version}: k3infra validates its {engine.name} command lines against "
                        f"{engine.release} (the release's own parser, tests/engines); check them against {version}")
    elif given is None:
        warnings.append(f"{image} states no engineVersion: k3infra assumes {engine.name} {engine.release}, the "
                        "release it validates its command lines against; set engineVersion to what the image holds")
    return version



def _loader(v: dict[str, Any], cloud: Cloud | None, platform: Platform | None, p: Problems) -> Loader | None:
    weights = v["weights"]
    if not isinstance(weights, dict) or weights.get("loader") is MISSING:
        return None
    if cloud == Cloud.KUBERNETES:
        return _kubernetes_loader(weights.get("loader"), _storage(v).get("type"), p)
    loader: Loader = weights.get("loader") or DEFAULT_LOADER.get(platform, Loader.FUSE)
    if loader == Loader.VOLUME:
        p.add(K + "weights.loader", "mounts a PVC or node path of an existing cluster (cloud kubernetes)", str(loader),
              ", ".join(x for x in Loader if x != Loader.VOLUME))
        return None
    allowed = PLATFORM_LOADERS.get(platform) if platform is not None else None
    if allowed is not None and loader not in allowed:
        p.add(K + "weights.loader", f"platform {platform} cannot load that way", str(loader), ", ".join(allowed))
        return None
    if loader == Loader.STREAMER and cloud is not None and cloud not in STREAMER_CLOUDS:
        p.add(K + "weights.loader", f"the RunAI streamer reads gs://, s3:// and az:// URIs, not {cloud} buckets",
              str(loader), "fuse (the bucket's CSI mount), bucket-copy or huggingface")
        return None
    return loader


#: The loaders each existing-cluster storage type can feed (cloud kubernetes).
STORAGE_LOADERS: dict[WeightSource, tuple[Loader, ...]] = {
    WeightSource.S3: (Loader.STREAMER, Loader.BUCKET_COPY, Loader.HUGGINGFACE),
    WeightSource.PVC: (Loader.VOLUME, Loader.HUGGINGFACE),
    WeightSource.HOST_PATH: (Loader.VOLUME, Loader.HUGGINGFACE),
}


def _storage(v: dict[str, Any]) -> dict[str, Any]:
    """``kubernetes.storage`` after its type checks (empty where they failed)."""
    k = v.get("kubernetes")
    storage = k.get("storage") if isinstance(k, dict) else None
    return storage if isinstance(storage, dict) else {}


def _kubernetes_loader(given: Any, storage: Any, p: Problems) -> Loader | None:
    """An existing cluster streams an S3-compatible bucket and mounts a PVC or node path (no CSI driver for S3)."""
    if not isinstance(storage, WeightSource):
        return None
    allowed = STORAGE_LOADERS[storage]
    loader: Loader = given or allowed[0]
    if loader not in allowed:
        p.add(K + "weights.loader", f"kubernetes.storage.type {storage} cannot feed that loader", str(loader),
              ", ".join(allowed))
        return None
    return loader


def _load_format(v: dict[str, Any], engine: Any, loader: Loader | None, p: Problems) -> str:
    if engine is None:
        return ""
    given = v["loadFormat"]
    default = "runai_streamer" if loader == Loader.STREAMER else engine.default_load_format
    if not isinstance(given, str):
        return default
    allowed = ", ".join(engine.load_formats)
    if given.strip().lower() == "mxfp4":
        p.add(K + "loadFormat", "MXFP4 is how the weights are stored, not how they are loaded (002 caveat 1: the "
              "seed's prose says MXFP4, its YAML says fastsafetensors)", given, allowed)
    elif given not in engine.load_formats:
        p.add(K + "loadFormat", f"is not a load format k3infra runs on {engine.name}", given, allowed)
    elif loader == Loader.STREAMER and given != "runai_streamer":
        p.add(K + "loadFormat", "the streamer loader reads the bucket URI through the RunAI streamer; "
              f"{given} cannot read object storage directly (002 appendix item 4)", given, "runai_streamer")
    return given


def _speculative(v: dict[str, Any], engine: Any, model: Any, platform: Platform | None, p: Problems) -> bool:
    if v["speculativeDecoding"] != "dspark":
        return False
    if engine is not None and model is not None and model.draft_model_for(engine.name) is None:
        p.add(K + "speculativeDecoding", f"{model.hf_id} has no {engine.name} draft model in the catalog", "dspark",
              "none")
    if platform is not None and platform not in KUBERNETES_PLATFORMS:
        p.add(K + "speculativeDecoding", f"platform {platform} mounts the model alone; the DSPARK draft model is "
              "synced next to it and mounted only on the Kubernetes platforms", "dspark",
              "none, or a Kubernetes platform (eks, aks, gke, ack)")
    return True


#: Load formats that read a file per rank (catalog.loaders.files_in_flight).
STREAMING_FORMATS = frozenset({"fastsafetensors", "runai_streamer"})


def _sizing(v: dict[str, Any], accel: Accelerator, model: Any, engine: Any, loader: Loader, fraction: float,
            speculative: bool, platform: Platform | None, p: Problems, warnings: list[str],
            region: str | None = None, load_format: str = "") -> sz.Sizing | None:
    nodes = v["nodes"] if _given(v["nodes"]) else None
    replicas = v["replicas"] if _given(v["replicas"]) else None
    if v["nodes"] is MISSING or replicas is None:
        return None
    minimum = sz.min_nodes(model, accel, fraction)
    limit = sz.node_limit(accel)
    if minimum is None:
        p.add(K + "accelerator", f"no pool of up to {limit} {accel.sku} nodes holds {model.display_name} "
              f"({model.gpu_memory_needed_gb:,.0f} GB needed, 002 §2.1)", accel.sku,
              ", ".join(a.sku for a in ACCELERATORS.values() if a.cloud == accel.cloud
                        and sz.min_nodes(model, a, fraction) is not None))
        return None
    if nodes is not None:
        f = sz.fit(model, nodes * accel.gpus_per_node, accel.gpu_memory_gb, fraction)
        if not f.fits:
            p.add(K + "nodes",
                  f"{nodes} x {accel.sku} gives {f.usable_gb:,.0f} GB usable ({f.gpus} x {accel.gpu_memory_gb:g} GB at "
                  f"memory fraction {fraction:g}); {model.display_name} needs {f.required_gb:,.0f} GB "
                  f"({f.weights_gb:,.0f} weights + {f.overhead_gb:,.0f} runtime + {f.min_kv_cache_gb:g} KV cache): "
                  f"{minimum} nodes fit", nodes, f"{minimum} to {limit}")
            return None
    choice = sz.default_nodes(model, accel, fraction)
    n = nodes or (choice.nodes if choice else minimum)
    if accel.max_nodes_per_pool is not None and n * replicas > accel.max_nodes_per_pool:
        key = K + ("replicas" if replicas > 1 else "nodes")
        p.add(key, f"{n} nodes x {replicas} replica(s) = {n * replicas} nodes, more than one {accel.sku} pool holds "
              f"(one NVL72 rack, 002 §2.3 and §5.2)", replicas if replicas > 1 else n,
              f"at most {accel.max_nodes_per_pool} nodes in all")
        return None
    if platform == Platform.HYPERPOD and n > 1:
        p.add(K + "nodes", "the HyperPod Inference Operator runs one replica on one instance (no leader/worker "
              "field in InferenceEndpointConfig)", n, "1")
        return None
    weights = v["weights"] if isinstance(v["weights"], dict) else {}
    cluster = v["cluster"] if isinstance(v["cluster"], dict) else {}
    given_nodes = cluster.get("systemNodes")
    cpu_nodes: int = given_nodes if isinstance(given_nodes, int) else 2
    node_type = cluster.get("systemNodeType") if isinstance(cluster.get("systemNodeType"), str) else None
    sync_pool = SYNC_POOLS.get(accel.cloud) if platform in SYNC_POOL_PLATFORMS else None
    sync_node = sync_pool.node if sync_pool else CPU_NODES.get(node_type or DEFAULT_CPU_NODE[accel.cloud])
    if weights.get("sync") and sync_node is None:
        p.add(K + "cluster.systemNodeType", "runs the weight sync, whose time and timeout come from the node's "
              "network bandwidth, and the catalog states none for it (k3infra/catalog/transfer.py)", node_type,
              ", ".join(sorted(n for n, c in CPU_NODES.items() if c.cloud == accel.cloud)))
        return None
    workers = weights.get("syncWorkers") if _given(weights.get("syncWorkers")) else None
    if sync_pool is not None:
        cpu_nodes = workers or sync_pool.nodes  # the pool grows to one node per worker
    tp = v["tensorParallel"] if _given(v["tensorParallel"]) else None
    pp = v["pipelineParallel"] if _given(v["pipelineParallel"]) else None
    if v["tensorParallel"] is MISSING or v["pipelineParallel"] is MISSING:
        return None
    try:
        result = sz.size(
            model, accel, engine,
            nodes=n, replicas=replicas, tensor_parallel=tp, pipeline_parallel=pp,
            expert_parallel=bool(v["expertParallel"]), memory_fraction=fraction, loader=loader,
            bandwidth_gbps=weights.get("bandwidthGbps") if _given(weights.get("bandwidthGbps")) else None,
            with_draft_model=speculative, sync=bool(weights.get("sync")), sync_node=sync_node,
            sync_nodes=cpu_nodes, sync_workers=workers, sync_pool=sync_pool is not None, region=region,
            existing_cluster=accel.cloud == Cloud.KUBERNETES, image_pre_pull=platform in KUBERNETES_PLATFORMS,
            streaming_format=load_format in STREAMING_FORMATS, engine_cache=_engine_cache(v, platform),
            bucket_ingress_gbps=_stated(weights, "bucketIngressGbps"), bucket_egress_gbps=_stated(weights, "bucketEgressGbps"),
        )
    except sz.LayoutError as e:
        gpus = n * accel.gpus_per_node
        options = [t for t in (1, 2, 4, 8, 16, 32, 64, 128) if t <= gpus and gpus % t == 0 and _layout_ok(accel, n, t)]
        key = K + ("tensorParallel" if tp is not None else "pipelineParallel")
        p.add(key, str(e), tp if tp is not None else pp,
              "tensorParallel in " + ", ".join(map(str, options)) + f" with tensorParallel x pipelineParallel = {gpus}")
        return None
    warnings.extend(result.warnings)
    return result


def _bucket_figures(w: Mapping[str, Any], key: str, cloud: Cloud | None, loader: Loader | None, p: Problems) -> None:
    """A stated bucket figure that no estimate would use is a mistake, not a setting."""
    if (ingress := w.get("bucketIngressGbps")) is not None and not w.get("sync"):
        p.add(key + "bucketIngressGbps", "is what the bucket takes in from the weight sync, which this stack does not "
              "run", ingress, "unset, or weights.sync: true")
    egress = w.get("bucketEgressGbps")
    if egress is None or loader is None or cloud is None:
        return
    if not sz.reads_the_bucket(loader, cloud):
        p.add(key + "bucketEgressGbps", f"is what the bucket serves to the loaders that read it (the RunAI streamer, "
              f"the cloud's FUSE client); loader {loader} runs at its stated range", egress, "unset")
    elif w.get("bandwidthGbps") is not None:
        p.add(key + "bucketEgressGbps", "has no effect beside weights.bandwidthGbps, which sets the load's rate "
              "itself", egress, "one of the two")


def _stated(weights: Mapping[str, Any], key: str) -> float | None:
    value = weights.get(key)
    return float(value) if _given(value) and value is not None else None


def _layout_ok(accel: Accelerator, nodes: int, tensor_parallel: int) -> bool:
    """Whether the sizing accepts this tensor-parallel size on ``nodes`` nodes (pipeline parallelism derived)."""
    try:
        sz.layout(accel, nodes, tensor_parallel=tensor_parallel)
    except sz.LayoutError:
        return False
    return True


STATEFUL_SET_RESTART_WARNING = (
    "workload statefulset (000's pattern): a rank that restarts comes back alone, and its peers stay in the broken "
    "NCCL group until the engine's watchdog or timeout ends them (SGLang --watchdog-timeout 3600); leaderworkerset "
    "recreates the whole group instead (RecreateGroupOnPodRestart)")


def _workload(v: dict[str, Any], platform: Platform | None, nodes: int, p: Problems,
              warnings: list[str]) -> Workload | None:
    given = v["workload"]
    if platform is not None and platform not in KUBERNETES_PLATFORMS:
        if _given(given):
            p.add(K + "workload", f"applies to Kubernetes platforms; {platform} runs the server itself", str(given),
                  "unset")
        return None
    if not _given(given):
        return Workload.DEPLOYMENT if nodes <= 1 else Workload.LEADER_WORKER_SET
    if given == Workload.DEPLOYMENT and nodes > 1:
        p.add(K + "workload", f"a Deployment runs one pod per replica, and a replica spans {nodes} nodes", str(given),
              "leaderworkerset or statefulset")
    if given in (Workload.LEADER_WORKER_SET, Workload.STATEFUL_SET) and 0 < nodes <= 1:
        p.add(K + "workload", f"{given} groups the pods of a replica that spans nodes, and a replica fits on one node",
              str(given), "deployment")
    replicas = v["replicas"]
    if given == Workload.STATEFUL_SET and isinstance(replicas, int) and replicas > 1:
        p.add(K + "workload", f"the StatefulSet pattern (000) runs one replica, and the stack asks for {replicas}",
              str(given), "leaderworkerset (one group per replica)")
    if given == Workload.STATEFUL_SET and nodes > 1:
        warnings.append(STATEFUL_SET_RESTART_WARNING)
    return given


def _capacity(v: dict[str, Any], accel: Accelerator | None, region: str | None, platform: Platform | None,
              p: Problems, warnings: list[str]) -> CapacityConfig | None:
    c = v["capacity"]
    if not isinstance(c, dict) or not _given(c.get("type")):
        return None
    ctype: CapacityType = c["type"]
    key = K + "capacity."
    if accel is not None and ctype not in accel.capacity_types:
        p.add(key + "type", f"{accel.sku} capacity cannot be obtained that way", str(ctype),
              ", ".join(accel.capacity_types))
    own = CAPACITY_FIELDS[ctype]
    defaults = {f.name: f.default for f in CAPACITY.fields if f.default is not None}
    for name, value in c.items():
        if name == "type" or not _given(value) or defaults.get(name) == value or name in own:
            continue
        users = [str(t) for t, fields in CAPACITY_FIELDS.items() if name in fields]
        p.add(key + name, f"applies to capacity type {' or '.join(users)}, not {ctype}", value,
              "fields " + (", ".join(sorted(own)) or "none") + f" with type {ctype}")

    def need(name: str, why: str) -> None:
        # A value that failed its own check is MISSING and already reported: one problem per mistake.
        if c.get(name) is None:
            p.add(key + name, f"is required: {why}", None, "a string")

    if ctype == CapacityType.RESERVATION:
        need("reservation", "the pool consumes a specific reservation")
        if accel is not None and accel.nvlink_spans_nodes:
            need("block", f"{accel.sku} pools pin a reservation block and sub-block (002 §5.2)")
            need("subBlock", f"{accel.sku} pools pin a sub-block: multi-node NVLink spans one sub-block (002 §5.2)")
        elif _given(c.get("subBlock")) != _given(c.get("block")):
            missing = "block" if _given(c.get("subBlock")) else "subBlock"
            need(missing, "a reservation path names both the block and its sub-block")
    elif ctype == CapacityType.CAPACITY_BLOCK:
        if c.get("purchase"):
            if _given(c.get("reservationId")):
                p.add(key + "reservationId", "a stack either consumes a Capacity Block or buys one", c["reservationId"],
                      "reservationId, or purchase: true with an offering window")
            for name in ("durationHours", "startAfter", "endBefore"):
                need(name, "buying a Capacity Block needs the offering window (start, end, duration)")
            _window(c, key, p)
            warnings.append("capacity.purchase is true: `pulumi up` buys a Capacity Block, which is immediate and "
                            "non-refundable; `pulumi destroy` does not refund it")
        else:
            need("reservationId", "a Capacity Block is consumed by id (cr-...); set purchase: true to buy one")
    elif ctype == CapacityType.TRAINING_PLAN:
        need("trainingPlanArn", "HyperPod instance groups consume a Flexible Training Plan (002 §3.1)")
        arn = c.get("trainingPlanArn")
        if isinstance(arn, str) and region and arn.split(":")[3] != region:
            p.add(key + "trainingPlanArn", f"the training plan is in {arn.split(':')[3]}, the cluster in {region}", arn,
                  f"a training plan in {region}")
    elif ctype == CapacityType.CAPACITY_RESERVATION_GROUP:
        if c.get("create"):
            if _given(c.get("groupId")):
                p.add(key + "groupId", "a stack either references a group or creates one", c["groupId"],
                      "groupId, or create: true")
            warnings.append("capacity.create is true: the Capacity Reservation Group and its reservation bill from "
                            "creation until they are deleted (002 §4.6)")
        else:
            need("groupId", "the pool joins an existing Capacity Reservation Group; set create: true to make one")
    elif ctype == CapacityType.PRIVATE_POOL:
        need("privatePoolId", "the pool draws on an ECS private pool")
    elif ctype == CapacityType.LINGJUN and platform != Platform.PAI_EAS:
        # PAI-EAS draws on a Lingjun resource quota instead (clouds/alicloud.py checks it).
        need("lingjunClusterId", "a Lingjun node pool joins an EFLO cluster")
        need("lingjunNodeGroupId", "a Lingjun node pool joins an EFLO node group")
    elif ctype == CapacityType.ON_DEMAND:
        warnings.append(f"capacity type on-demand: nothing holds {accel.sku if accel else 'the GPUs'} for this stack; "
                        "scale-up can fail when the zone has none free")
    if p.keys() & {key + f for f in c}:
        return None
    return CapacityConfig(
        type=ctype,
        reservation=c.get("reservation"),
        block=c.get("block"),
        sub_block=c.get("subBlock"),
        project=c.get("project"),
        reservation_id=c.get("reservationId"),
        purchase=bool(c.get("purchase")),
        duration_hours=c.get("durationHours"),
        start_after=c.get("startAfter"),
        end_before=c.get("endBefore"),
        training_plan_arn=c.get("trainingPlanArn"),
        group_id=c.get("groupId"),
        create=bool(c.get("create")),
        private_pool_id=c.get("privatePoolId"),
        lingjun_cluster_id=c.get("lingjunClusterId"),
        lingjun_node_group_id=c.get("lingjunNodeGroupId"),
        end_margin_hours=int(c.get("endMarginHours") or END_MARGIN_HOURS),
    )


def _parse_when(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00")) if "T" in s else datetime.combine(date.fromisoformat(s), datetime.min.time())


def _window(c: dict[str, Any], key: str, p: Problems) -> None:
    start, end, hours = c.get("startAfter"), c.get("endBefore"), c.get("durationHours")
    if not (isinstance(start, str) and isinstance(end, str)):
        return
    try:
        s, e = _parse_when(start), _parse_when(end)
    except ValueError as err:
        p.add(key + "startAfter", f"is not a date: {err}", start, "an ISO date such as 2026-12-01")
        return
    if e.replace(tzinfo=None) <= s.replace(tzinfo=None):
        p.add(key + "endBefore", f"ends before the window starts ({start})", end, f"a date after {start}")
    elif isinstance(hours, int) and (e.replace(tzinfo=None) - s.replace(tzinfo=None)).total_seconds() < hours * 3600:
        p.add(key + "durationHours", f"a {hours}-hour block does not fit between {start} and {end}", hours,
              "a duration within the window")


def _weights(v: dict[str, Any], cloud: Cloud | None, p: Problems, warnings: list[str],
             loader: Loader | None, speculative: bool) -> WeightsConfig | None:
    w = v["weights"]
    if not isinstance(w, dict):
        return None
    key = K + "weights."
    bucket, account = w.get("bucket"), w.get("account")
    if bucket is None:
        if cloud != Cloud.KUBERNETES or _storage(v).get("type") == WeightSource.S3:
            p.add(key + "bucket", "is required" + (" with kubernetes.storage.type s3" if cloud == Cloud.KUBERNETES
                                                    else ""), None, "a string")
        elif cloud == Cloud.KUBERNETES:
            bucket = ""  # the weights are a PVC or a node path
    elif cloud == Cloud.KUBERNETES and _storage(v).get("type") not in (WeightSource.S3, None):
        p.add(key + "bucket", f"applies with kubernetes.storage.type s3; type {_storage(v).get('type')} holds the "
              "weights itself", bucket, "unset")
    if isinstance(bucket, str) and bucket and cloud is not None:
        why = bucket_name_problem(cloud, bucket)
        if why:
            p.add(key + "bucket", f"{cloud} would reject this bucket name", bucket, why)
    if cloud == Cloud.AZURE:
        if account is None:
            p.add(key + "account", "is required on Azure: the container lives in a storage account", None,
                  "3-24 lowercase letters and digits")
        elif isinstance(account, str) and (why := storage_account_problem(account)):
            p.add(key + "account", "Azure would reject this storage account name", account, why)
    elif account is not None and cloud is not None:
        p.add(key + "account", f"applies to Azure storage accounts; {cloud} buckets have none", account, "unset")
    if w.get("sync"):
        rev = w.get("revision")
        if rev is None:
            p.add(key + "revision", "is required when sync is true: the Job copies one pinned revision", None,
                  "a 40-character commit SHA (or a tag)")
        elif isinstance(rev, str) and not SHA.fullmatch(rev):
            warnings.append(f"weights.revision {rev!r} is not a commit SHA: a moving branch or tag makes the copy "
                            "unreproducible")
        draft = w.get("draftRevision")
        if speculative and draft is None and K + "speculativeDecoding" not in p.keys():
            p.add(key + "draftRevision", "is required when sync is true and speculativeDecoding is dspark: the Job "
                  "copies one pinned revision of the draft model too", None, "a 40-character commit SHA (or a tag)")
        elif isinstance(draft, str) and not SHA.fullmatch(draft):
            warnings.append(f"weights.draftRevision {draft!r} is not a commit SHA: a moving branch or tag makes the "
                            "copy unreproducible")
        if v["hfToken"] is None:
            warnings.append("weights.sync is true and k3infra:hfToken is not set: the sync Job downloads anonymously "
                            "(rate limits; fails if the repository is gated)")
    _bucket_figures(w, key, cloud, loader, p)
    if w.get("draftRevision") is not None and not speculative:
        p.add(key + "draftRevision", "applies with speculativeDecoding dspark, which this stack does not use",
              w["draftRevision"], "unset, or speculativeDecoding: dspark")
    if w.get("retainOnDestroy") is False:
        warnings.append("weights.retainOnDestroy is false: `pulumi destroy` deletes the bucket and the weights in it")
    if p.keys() & {key + f for f in w} or not isinstance(bucket, str) or loader is None:
        return None
    return WeightsConfig(
        bucket=bucket,
        account=account,
        prefix=w["prefix"],
        sync=bool(w["sync"]),
        revision=w.get("revision"),
        draft_revision=w.get("draftRevision"),
        loader=loader,
        bandwidth_gbps=w.get("bandwidthGbps"),
        retain_on_destroy=bool(w["retainOnDestroy"]),
    )


def _endpoint(v: dict[str, Any], platform: Platform | None, p: Problems, warnings: list[str]) -> EndpointConfig | None:
    e = v["endpoint"]
    if not isinstance(e, dict) or not _given(e.get("exposure")):
        return None
    key = K + "endpoint."
    given_cidrs = e.get("allowedCidrs")
    cidrs: list[str] = given_cidrs if isinstance(given_cidrs, list) else []
    for i, cidr in enumerate(cidrs):
        why = cidr_problem(cidr)
        if why:
            p.add(f"{key}allowedCidrs[{i}]", f"is not a network address: {why}", cidr, "an IPv4 network such as 81.2.69.0/24")
    if e["exposure"] == Exposure.PUBLIC:
        if not cidrs and given_cidrs is not MISSING:
            p.add(key + "allowedCidrs", "is required when exposure is public: name who may reach the endpoint", None,
                  "a non-empty list of IPv4 CIDRs")
        if v["apiKey"] is None:
            p.add(K + "apiKey", "is required when exposure is public: the endpoint checks an API key", None,
                  "a secret set with `pulumi config set --secret apiKey`")
        if "0.0.0.0/0" in cidrs:
            warnings.append("endpoint.allowedCidrs contains 0.0.0.0/0: the endpoint is open to the internet, "
                            "guarded only by the API key")
    elif cidrs:
        warnings.append("endpoint.allowedCidrs is ignored: the endpoint is internal")
    if e.get("gateway") and platform is not None and platform not in KUBERNETES_PLATFORMS:
        p.add(key + "gateway", f"the InferenceGateway runs on Kubernetes platforms; {platform} routes itself", True,
              "false")
    if p.keys() & {key + f for f in e} or any(k.startswith(key + "allowedCidrs") for k in p.keys()):
        return None
    return EndpointConfig(exposure=e["exposure"], allowed_cidrs=tuple(cidrs), gateway=bool(e.get("gateway")))


def _cluster(v: dict[str, Any], stack: str, p: Problems) -> ClusterConfig | None:
    c = v["cluster"]
    if not isinstance(c, dict):
        return None
    default_name = re.sub(r"[^a-z0-9-]+", "-", f"k3-{stack}".lower()).strip("-")[:40]
    name, version, node_type, nodes = c.get("name"), c.get("kubernetesVersion"), c.get("systemNodeType"), c.get("systemNodes")
    return ClusterConfig(
        name=name if isinstance(name, str) else default_name,
        kubernetes_version=version if isinstance(version, str) else None,
        deletion_protection=c.get("deletionProtection") is not False,
        system_node_type=node_type if isinstance(node_type, str) else None,
        system_nodes=nodes if isinstance(nodes, int) else 2,
    )


#: What ``observability.workspace`` names per cloud, and its shape.
WORKSPACE_PATTERNS: dict[Cloud, tuple[str, str]] = {
    Cloud.AWS: (r"arn:aws[a-z-]*:aps:[a-z0-9-]+:\d{12}:workspace/ws-[0-9a-f-]+",
                "an Amazon Managed Service for Prometheus workspace ARN (arn:aws:aps:REGION:ACCOUNT:workspace/ws-...)"),
    Cloud.AZURE: (r"/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[^/]+/providers/Microsoft\.Monitor/accounts/[^/]+",
                  "an Azure Monitor workspace id (/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Monitor/"
                  "accounts/NAME)"),
}


def _engine_cache_platform(v: dict[str, Any], platform: Platform | None, p: Problems) -> None:
    """``engineCache: true`` needs a node directory the stack's own server pods mount: Kubernetes platforms only."""
    if v.get("engineCache") is True and platform is not None and platform not in KUBERNETES_PLATFORMS:
        p.add(K + "engineCache", f"keeps the engine's caches in a node directory of the server pods the stack "
              f"creates; on {platform} the platform runs the server", True,
              "unset or false, or a Kubernetes platform (" + ", ".join(sorted(KUBERNETES_PLATFORMS)) + ")")


def _status(v: dict[str, Any], platform: Platform | None, p: Problems) -> StatusConfig:
    """``status.group``: only where the stack creates the Kubernetes workload (the roles name its Jobs and
    Services); HyperPod's and PAI-EAS's servers are the platform's."""
    s = v.get("status")
    group = s.get("group") if isinstance(s, dict) else None
    if not isinstance(group, str):
        return StatusConfig()
    if platform is not None and platform not in KUBERNETES_PLATFORMS:
        p.add(K + "status.group", f"binds the roles of the Kubernetes workload the stack creates, and on {platform} "
              "the platform runs the server" + ("; apply `k3infra status --print-role` to the EKS cluster by hand"
                                                if platform == Platform.HYPERPOD else ""),
              group, "unset, or a Kubernetes platform (" + ", ".join(sorted(KUBERNETES_PLATFORMS)) + ")")
        return StatusConfig()
    return StatusConfig(group=group)


def _observability(v: dict[str, Any], cloud: Cloud | None, platform: Platform | None, p: Problems,
                   warnings: list[str]) -> ObservabilityConfig | None:
    o = v["observability"]
    if not isinstance(o, dict):
        return None
    key = K + "observability."
    workspace = o.get("workspace")
    if isinstance(workspace, str) and cloud is not None:
        shape = WORKSPACE_PATTERNS.get(cloud)
        if shape is None:
            p.add(key + "workspace", f"{cloud} has no workspace to name: its managed Prometheus is the project's "
                  "(Google Cloud) or the cluster's own ARMS instance (Alibaba Cloud)", workspace, "unset")
        elif not re.fullmatch(shape[0], workspace):
            p.add(key + "workspace", "is not well formed", workspace, shape[1])
    scaled_hyperpod = platform == Platform.HYPERPOD and isinstance(v.get("autoscaling"), dict) and \
        v["autoscaling"].get("enabled") is True
    if platform is not None and platform not in KUBERNETES_PLATFORMS and o.get("enabled") and o.get("workspace") \
            and not scaled_hyperpod:
        warnings.append(f"observability.workspace is ignored on {platform}: the platform keeps its own metrics "
                        "(docs/serving.md#metrics-dashboard-and-alerts)")
    if p.keys() & {key + f for f in o}:
        return None
    return ObservabilityConfig(enabled=bool(o["enabled"]), workspace=workspace if isinstance(workspace, str) else None,
                               stall_minutes=int(o["stallMinutes"]), capacity_margin_hours=int(o["capacityMarginHours"]))


def _gcp(v: dict[str, Any], raw: Mapping[str, Any], region: str) -> GcpConfig:
    g = v["gcp"]
    exclusion = g["upgradeExclusion"]
    return GcpConfig(project=raw["gcp:project"], region=region, release_channel=g["releaseChannel"],
                     gpu_driver_version=g["gpuDriverVersion"], check_reservation=bool(g["checkReservation"]),
                     maintenance_window_start=g["maintenanceWindowStart"],
                     upgrade_exclusion=None if exclusion == "none" else exclusion,
                     upgrade_exclusion_start=g["upgradeExclusionStart"],
                     authorized_networks=tuple(g.get("authorizedNetworks") or ()),
                     private_endpoint=bool(g["privateEndpoint"]))


def _azure(v: dict[str, Any], raw: Mapping[str, Any], region: str, stack: str) -> AzureConfig:
    a = v["azure"]
    return AzureConfig(location=region, subscription_id=raw.get("azure-native:subscriptionId"),
                       resource_group=a.get("resourceGroup") or f"rg-k3-{stack}", quota_vcpus=a.get("quotaVcpus"),
                       gpu_driver=a["gpuDriver"], role_propagation_minutes=a["rolePropagationMinutes"],
                       upgrade_channel=a["upgradeChannel"], node_os_upgrade_channel=a["nodeOsUpgradeChannel"],
                       maintenance_window=_maintenance_window(a["maintenanceWindow"]),
                       authorized_ip_ranges=tuple(a.get("authorizedIpRanges") or ()),
                       private_cluster=bool(a["privateCluster"]), container_registry=a.get("containerRegistry"),
                       interconnect_subgroup_id=a.get("interconnectSubgroupId"))


def _maintenance_window(w: dict[str, Any]) -> MaintenanceWindow:
    return MaintenanceWindow(day=w["day"], start_time=w["startTime"], duration_hours=w["durationHours"])


def _alicloud(v: dict[str, Any], region: str) -> AlicloudConfig:
    a = v["alicloud"]
    return AlicloudConfig(region=region, pai_resource_group=a.get("paiResourceGroup"),
                          pai_workspace_id=a.get("paiWorkspaceId"), pai_resource_machines=a.get("paiResourceMachines"),
                          acr_instance_id=a.get("acrInstanceId"),
                          gpu_driver_version=a.get("gpuDriverVersion"),
                          vpc_cidr=a["vpcCidr"], upgrade_channel=a["upgradeChannel"],
                          node_auto_upgrade=bool(a["nodeAutoUpgrade"]),
                          maintenance_window=_maintenance_window(a["maintenanceWindow"]),
                          public_api_server=bool(a["publicApiServer"]))


def _kubernetes(v: dict[str, Any], accel: Accelerator | None, sizing: sz.Sizing) -> KubernetesConfig:
    k = v["kubernetes"]
    nodes, s = k["gpuNodes"], k["storage"]
    spans = accel is not None and accel.nvlink_spans_nodes
    tolerations = nodes.get("tolerations")
    return KubernetesConfig(
        kubeconfig=v.get("kubeconfig"), kubeconfig_path=k.get("kubeconfigPath"), context=k.get("context"),
        node_selector=dict(nodes.get("nodeSelector") or GPU_PRESENT_SELECTOR),
        tolerations=tuple({kk: vv for kk, vv in t.items() if vv is not None} for t in tolerations)
        if tolerations is not None else (dict(GPU_TAINT_TOLERATION),),
        gpu_resource=nodes["gpuResource"], topology_label=nodes.get("topologyLabel") or default_topology_label(spans),
        cpu_request=nodes.get("cpuRequest"), memory_request=nodes.get("memoryRequest"), driver_root=nodes["driverRoot"],
        storage=s["type"], s3_endpoint=s.get("endpoint"), s3_region=s["region"],
        virtual_addressing=bool(s["virtualAddressing"]), volume=s.get("volume"), host_path=s.get("path"),
        s3_access_key_id=v.get("s3AccessKeyId"), s3_secret_access_key=v.get("s3SecretAccessKey"),
        lws=k["lws"], device_plugin=k["devicePlugin"],
        dra_driver=(k.get("draDriver") or AddonState.INSTALL) if sizing.layout.multi_node_nvlink else None,
        prometheus_operator=k["prometheusOperator"], prometheus_namespace=k["prometheusNamespace"],
        pod_monitor_labels=dict(k.get("podMonitorLabels") or {}), gateway_class=k.get("gatewayClass"),
    )


#: ``kubernetes.gpuNodes`` keys that restate a fact of the node shape, and the Accelerator field each sets.
STATED_SHAPE = {"gpusPerNode": "gpus_per_node", "gpuMemoryGb": "gpu_memory_gb", "nvlinkDomainGpus": "nvlink_domain_gpus",
                "vcpus": "vcpus", "hostMemoryGib": "host_memory_gib"}


def _stated_shape(v: dict[str, Any], accel: Accelerator, p: Problems) -> Accelerator | None:
    """An existing cluster's node shape with the facts the stack states about its own nodes (its GPU generation
    and CPU architecture stay the shape's: they pick the engine recipe and the image's build)."""
    k = v.get("kubernetes")
    nodes = k.get("gpuNodes") if isinstance(k, dict) else None
    if not isinstance(nodes, dict):
        return accel
    stated = {field: nodes[key] for key, field in STATED_SHAPE.items() if isinstance(nodes.get(key), (int, float))}
    if not stated:
        return accel
    gpus = stated.get("gpus_per_node", accel.gpus_per_node)
    domain = stated.get("nvlink_domain_gpus", accel.nvlink_domain_gpus if "gpus_per_node" not in stated else gpus)
    if domain < gpus or domain % gpus:
        p.add(K + "kubernetes.gpuNodes.nvlinkDomainGpus", f"an NVLink domain holds whole nodes of {gpus} GPUs", domain,
              f"a multiple of {gpus}")
        return None
    sources = dict(accel.sources)
    for key, field in STATED_SHAPE.items():
        if field in stated:
            sources[field] = f"stated in the stack (kubernetes.gpuNodes.{key})"
    return dataclasses.replace(accel, **{**stated, "nvlink_domain_gpus": domain}, sources=sources,
                               max_nodes_per_pool=domain // gpus if domain > gpus else accel.max_nodes_per_pool)

"""What a ModelServer is given (``ModelServerArgs``), the check that rejects what cannot run, and the arguments of a
validated stack (``model_server_args``)."""

from typing import NotRequired, Sequence, TypedDict

import pulumi

from ..catalog import ACCELERATORS, MODELS, EngineName, Exposure, Loader, Workload
from ..catalog.node_local import NODE_DIRECTORIES
from ..catalog.picker import publishes_kv_events
from ..config import StackConfig
from ..weightcopy.copier.caches import cache_key
from .contract import GpuPool, LoadBalancerSettings, MetricsAccess, ServingRole, WeightsMarker, WeightStore

API_KEY_SECRET_KEY = "api-key"
"""The key of ``api_key_secret`` that holds the API key."""
HF_TOKEN_SECRET_KEY = "HF_TOKEN"
"""The key of ``hf_token_secret`` (and of the weight sync's token Secret) that holds the Hugging Face token."""


ENGINE_CACHE_HOST_PATH = "/var/lib/k3infra/engine-cache"
"""Where a stack's server pods keep the engine's caches on their node (``ModelServerArgs.engine_cache``) where the
platform gives no directory on the node's local NVMe: the OS disk. GKE's and EKS's node scripts bind only the
kubelet's, the container runtime's and the pods' log directories into the NVMe array (cloud-provider-gcp
configure-helper.sh ensure-local-ssds-ephemeral-storage; amazon-eks-ami setup-local-disks), so /var/lib/k3infra is
on the boot disk there (200 GB hyperdisk-balanced, a 512 GB gp3 root volume at its baseline throughput)."""
ENGINE_CACHE_SUBDIR = "engine-cache"
"""The engine's caches under the node's directory on its local NVMe (catalog.node_local NODE_DIRECTORIES, or the
stated ``kubernetes.nodeLocalPath``), beside the weights' copy."""


def engine_cache_path(cfg: StackConfig, key: str) -> str:
    """The host directory of the engine's caches: one per cache ``key`` (copier.caches ``cache_key`` of
    ``warm_cache_parts``), so a node that served an earlier image or layout neither keeps this key's caches out of
    its restore nor packs its own into this key's archives (independent review of issue 40, MINOR 4), under the
    node's local-NVMe directory where the platform has one or the stack states one, else ``ENGINE_CACHE_HOST_PATH``.
    An earlier key's directory stays on the node until the node is replaced."""
    ns = cfg.sizing.node_start
    base = ns.node_dir if ns is not None and ns.local else NODE_DIRECTORIES[cfg.platform].path
    root = f"{base}/{ENGINE_CACHE_SUBDIR}" if base else ENGINE_CACHE_HOST_PATH
    return f"{root}/{key}"


class ModelServerArgs(TypedDict):
    """Arguments of ModelServer. ``model_server_args`` builds them from a validated stack."""

    namespace: str
    """Namespace of every object (it must exist; ``serve`` creates it)."""
    model: str
    """Hugging Face id of a catalog model (its parsers, environment and draft model come from the catalog)."""
    engine: EngineName
    """vllm or sglang."""
    image: pulumi.Input[str]
    """Engine image; it must have a build for the pool's CPU architecture."""
    workload: Workload
    """deployment (one node), leaderworkerset or statefulset (several nodes)."""
    nodes: int
    """Nodes per replica; each pod takes one node's GPUs."""
    replicas: int
    """Model replicas (a statefulset runs one); under a scaler, the count the workload is created with."""
    scaler_owns_replicas: NotRequired[bool]
    """A scaler (KEDA's HPA) moves the replica count: Pulumi sets it at creation and leaves it alone after.
    Default: false."""
    max_replicas: NotRequired[int]
    """The most replicas a scaler runs (its maximum): an update walks every one of them, and surges a group only
    where the pool holds one more (serving.rollout). Default: ``replicas``."""
    tensor_parallel: int
    """Tensor-parallel size; tensor x pipeline parallel must equal nodes x GPUs per node."""
    pipeline_parallel: NotRequired[int]
    """Pipeline-parallel size. Default: 1."""
    expert_parallel: NotRequired[bool]
    """Expert parallelism over the tensor-parallel group. Default: false."""
    load_format: NotRequired[str]
    """Engine ``--load-format``. Default: runai_streamer with the streamer loader, else the engine's default."""
    memory_fraction: NotRequired[float]
    """GPU memory fraction the engine claims. Default: the recipe's (vLLM 0.95, 0.97 on Hopper, 0.90
    pipeline-parallel on Blackwell), SGLang 0.85."""
    speculative_decoding: NotRequired[bool]
    """DSPARK with the engine's draft model (SGLang: 000; vLLM: the recipe's, without pipeline parallelism).
    Default: false."""
    loader: Loader
    """How the weights reach GPU memory: fuse (the store's CSI mount), streamer (the URI), bucket-copy
    (an init container copies the bucket to local disk) or huggingface (the engine downloads)."""
    pool: GpuPool
    """The GPU pool the pods run on."""
    accelerator: NotRequired[str]
    """The pool's machine type (a catalog SKU): it picks the engine recipe's settings for its GPU generation
    and gives the pods CPU and memory requests from its vCPUs and host memory where the pool states none.
    Default: the canonical engine flags, and CPU/memory only where the pool states them."""
    store: WeightStore
    """The bucket holding the weights; the pods run as its read-only identity."""
    probe_budget_seconds: int
    """Start-up budget the start-up probe must cover: 1.5 x (load + warm-up) from the sizing."""
    await_timeout_seconds: int
    """How long ``pulumi up`` waits for one group to start: the probe budget plus image pull and scheduling. A create
    starts every group at once; an update waits this long for each group it replaces (serving.rollout)."""
    exposure: NotRequired[Exposure]
    """internal (default) or public."""
    allowed_cidrs: NotRequired[Sequence[str]]
    """Client CIDRs of a public endpoint. Required when exposure is public and there is no gateway."""
    load_balancer: NotRequired[LoadBalancerSettings]
    """How the cluster makes load balancers internal or public. Default: no load balancer (ClusterIP only)."""
    behind_gateway: NotRequired[bool]
    """An InferenceGateway fronts the server: no load balancer Service, and the NetworkPolicy admits the
    gateway's source ranges. Default: false."""
    api_key_secret: NotRequired[str]
    """Kubernetes Secret (key ``api-key``) with the API key the engine requires. Default: no API key."""
    kv_offload_gib: NotRequired[int]
    """The host-memory KV tier of each node in GiB (the sizing's ``KvOffload``). Default: none."""
    kv_events: NotRequired[bool]
    """The HTTP rank publishes its KV-cache events and serves the render endpoint for the gateway's picker
    (``EngineSpec.kv_events``, catalog.picker ``publishes_kv_events``). Default: false."""
    hf_token_secret: NotRequired[str]
    """Kubernetes Secret (key ``HF_TOKEN``) for the huggingface loader. Default: anonymous download."""
    pool_nodes_reserved: NotRequired[int]
    """Nodes of the shared GPU pool another role of the topology holds (its groups, and the surge group of a role
    updated before this one): an update surges only into what is left (serving.rollout). Default: 0."""
    install_lws_controller: NotRequired[bool]
    """Install the LeaderWorkerSet controller chart when the workload is a LeaderWorkerSet. Default: true."""
    lws_chart_repository: NotRequired[str]
    """Where the LeaderWorkerSet controller's chart comes from instead of registry.k8s.io (an air-gapped cluster's
    mirror): an oci:// registry path or an https chart repository holding ``lws``, or a local directory holding it
    under that name (serving.chart_source). Default: ``oci://registry.k8s.io/lws/charts``."""
    metrics_access: NotRequired[MetricsAccess]
    """Where the cloud's managed Prometheus scrapes ``/metrics`` from; admitted on the serving port. Default: none."""
    streamer_concurrency: NotRequired[int]
    """RunAI streamer reader threads per rank (``RUNAI_STREAMER_CONCURRENCY``, vLLM's ``concurrency``). Default: 000's
    16; the stacks pass the sizing's (catalog.loaders: the node's NIC and the bucket's egress)."""
    streamer_memory_limit: NotRequired[int]
    """RunAI streamer CPU buffer of all the node's ranks together, in bytes (``RUNAI_STREAMER_MEMORY_LIMIT``, a node
    total in runai-model-streamer 0.17.1: each rank takes its part). Default: 000's 32 GiB; the stacks pass the
    sizing's (an eighth of the node's memory, at most 32 GiB per rank)."""
    engine_cache: NotRequired[str]
    """A node directory the engine's compile, kernel and CUDA-graph-related caches persist in (a hostPath, created if
    missing), so a pod rescheduled onto a node that served before skips their build (catalog.engines
    ``cache_env``); the namespace then needs the privileged Pod Security level. Default: none (the caches live in
    the container and go with it)."""
    node_weights: NotRequired[str]
    """A host directory on the node's local NVMe where the node agent (serving.node_agent) keeps the weights: the
    marker wait chooses the node copy when its marker equals the bucket's, and the engine then loads from it, else from
    the bucket as before (needs ``weights_marker``; the namespace then needs the privileged Pod Security level).
    Default: none (every start reads the bucket)."""
    warm_key: NotRequired[str]
    """The cache key (copier.caches ``cache_key`` of ``warm_cache_parts``) the engine container writes, with its rank
    in the group, into its node's cache directory (``engine_cache``) once its group's leader answers ``/health``, so
    the node agent saves the caches of that rank's warm-up to the bucket. Default: none (nothing marked, nothing
    saved)."""
    role: NotRequired[ServingRole]
    """The server's role in a disaggregated or wide-EP topology (its parallelism, KV transport, routing sidecar); its
    ``tensor_parallel`` is then the group's GPUs. Default: none (an aggregated replica)."""
    weights_marker: NotRequired[WeightsMarker]
    """Wait, in a first init container running as the reader identity, for the weight sync's completion markers, so
    an engine never starts on partial weights. Default: no wait (the bucket was filled beforehand)."""


def warm_cache_parts(cfg: StackConfig) -> dict[str, str]:
    """What makes the engine's caches valid (copier.caches): the engine release, the image, the GPU model and the
    layout."""
    ly = cfg.sizing.layout
    return {"engine": f"{cfg.engine.name}-{cfg.engine_version}", "image": cfg.image, "gpu": cfg.accelerator.gpu_model,
            "layout": f"tp{ly.tensor_parallel}-pp{ly.pipeline_parallel}-ep{ly.expert_parallel}-nodes{cfg.nodes}"}


def check_args(args: ModelServerArgs) -> None:
    """Reject arguments that cannot run, naming the property (from any language)."""
    workload, nodes = Workload(args["workload"]), int(args["nodes"])
    if args["model"] not in MODELS:
        raise pulumi.InputPropertyError("model", f"{args['model']!r} is not a catalog model ({', '.join(MODELS)})")
    if args.get("accelerator") and args.get("accelerator") not in ACCELERATORS:
        raise pulumi.InputPropertyError("accelerator", f"{args.get('accelerator')!r} is not a catalog machine type "
                                        f"({', '.join(ACCELERATORS)})")
    if workload == Workload.DEPLOYMENT and nodes != 1:
        raise pulumi.InputPropertyError("workload", f"a Deployment runs a replica on one node; this one spans {nodes}")
    if workload != Workload.DEPLOYMENT and nodes < 2:
        raise pulumi.InputPropertyError("workload", f"{workload} is for a replica on several nodes; use deployment")
    if workload == Workload.STATEFUL_SET and int(args["replicas"]) != 1:
        raise pulumi.InputPropertyError("replicas", "the StatefulSet pattern (000) runs one replica; use leaderworkerset")
    if int(args["pool"]["node_count"]) < nodes * int(args["replicas"]):
        raise pulumi.InputPropertyError("pool.node_count", f"{args['replicas']} replica(s) of {nodes} node(s) need "
                                        f"{nodes * int(args['replicas'])} nodes; the pool has {args['pool']['node_count']}")
    peak = args.get("max_replicas")
    if peak is not None and not int(args["replicas"]) <= int(peak) <= int(args["pool"]["node_count"]) // nodes:
        raise pulumi.InputPropertyError("max_replicas", f"{peak}: from replicas ({args['replicas']}) to the replicas of "
                                        f"{nodes} node(s) the pool holds ({int(args['pool']['node_count']) // nodes})")
    gpus = nodes * int(args["pool"]["gpus_per_node"])
    layout = int(args["tensor_parallel"]) * int(args.get("pipeline_parallel") or 1)
    if layout != gpus:
        raise pulumi.InputPropertyError("tensor_parallel", f"tensor x pipeline parallel = {layout}, but {nodes} node(s) "
                                        f"x {args['pool']['gpus_per_node']} GPUs = {gpus}")
    if args.get("speculative_decoding") and MODELS[args["model"]].draft_model_for(EngineName(args["engine"])) is None:
        raise pulumi.InputPropertyError("speculative_decoding", f"{args['model']} has no {args['engine']} draft model")
    if args.get("exposure") == Exposure.PUBLIC and not args.get("behind_gateway"):
        if not args.get("allowed_cidrs"):
            raise pulumi.InputPropertyError("allowed_cidrs", "a public endpoint names the client CIDRs it admits")
        if not args.get("api_key_secret"):
            raise pulumi.InputPropertyError("api_key_secret", "a public endpoint requires an API key")


def model_server_args(cfg: StackConfig, *, pool: GpuPool, store: WeightStore, lb: LoadBalancerSettings,
                      api_key_secret: str | None = None, hf_token_secret: str | None = None,
                      install_lws_controller: bool = True, metrics_access: MetricsAccess | None = None
                      ) -> ModelServerArgs:
    """ModelServerArgs of a validated stack: its engine, layout, loader, probe budget and exposure."""
    assert cfg.workload is not None, "managed serving platforms do not run a ModelServer"
    s = cfg.sizing
    args = ModelServerArgs(
        namespace=cfg.namespace,
        model=cfg.model.hf_id,
        engine=cfg.engine.name,
        image=cfg.image,
        workload=cfg.workload,
        nodes=cfg.nodes,
        replicas=cfg.autoscaling.initial_replicas if cfg.autoscaling else cfg.replicas,
        tensor_parallel=s.layout.tensor_parallel,
        pipeline_parallel=s.layout.pipeline_parallel,
        expert_parallel=s.layout.expert_parallel > 1,
        load_format=cfg.load_format,
        memory_fraction=cfg.memory_fraction,
        speculative_decoding=cfg.speculative_decoding,
        loader=cfg.weights.loader,
        pool=pool,
        accelerator=cfg.accelerator.sku,
        store=store,
        probe_budget_seconds=s.probe_budget_seconds,
        await_timeout_seconds=s.await_timeout_seconds,
        exposure=cfg.endpoint.exposure,
        allowed_cidrs=list(cfg.endpoint.allowed_cidrs),
        load_balancer=lb,
        behind_gateway=cfg.endpoint.gateway,
        install_lws_controller=install_lws_controller,
    )
    if cfg.charts.get("lws"):
        args["lws_chart_repository"] = cfg.charts["lws"]
    if s.load.streamer_concurrency:
        args["streamer_concurrency"] = s.load.streamer_concurrency
    if s.load.streamer_memory_limit:
        args["streamer_memory_limit"] = s.load.streamer_memory_limit
    key = cache_key(warm_cache_parts(cfg))
    if s.cold_start.engine_cache:
        args["engine_cache"] = engine_cache_path(cfg, key)
    if s.node_start is not None and s.node_start.local:
        args["node_weights"] = s.node_start.node_dir
    if s.node_start is not None and s.node_start.warm_caches:
        args["warm_key"] = key
    if api_key_secret:
        args["api_key_secret"] = api_key_secret
    if publishes_kv_events(cfg.endpoint.gateway, cfg.engine.name, bool(cfg.api_key)):
        args["kv_events"] = True
    if s.offload is not None and s.offload.enabled:
        args["kv_offload_gib"] = s.offload.per_node_gib
    if hf_token_secret:
        args["hf_token_secret"] = hf_token_secret
    if metrics_access:
        args["metrics_access"] = metrics_access
    if cfg.autoscaling is not None and cfg.autoscaling.enabled:
        args["scaler_owns_replicas"] = True
        args["max_replicas"] = cfg.autoscaling.max_replicas
    return args

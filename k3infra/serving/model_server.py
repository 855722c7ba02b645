"""ModelServer: one model served on a GPU pool, as a LeaderWorkerSet, a StatefulSet or a Deployment.

Per replica of ``nodes`` nodes:

- a LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``, group size = nodes, ``RecreateGroupOnPodRestart``,
  002 §4.4) whose leader is rank 0 and serves HTTP, its workers the other ranks (vLLM ``--headless``, SGLang
  ``--node-rank``); the LWS controller is installed with
  its pinned Helm chart (docs/catalog-research.md §3.1) unless the cluster has one;
- or seed 000's pattern: a headless Service for the rank-0 rendezvous plus a StatefulSet with
  ``podManagementPolicy: Parallel`` (one replica);
- or a Deployment on one node.

Each pod requests all of its node's GPUs, lands on the pool by its selector and tolerations, gets
``/dev/shm`` as a memory volume, reads the weights from the bucket (CSI mount, the RunAI streamer reading the
URI, or a copy to local disk), and is probed so that a terabyte-scale load is never killed: a start-up probe
whose failure budget covers the sizing's 1.5 x (load + warm-up), readiness on ``/health``, a lenient liveness.
Around it: a ClusterIP Service for the leaders, an internal or public load balancer per the exposure, a
PodDisruptionBudget when there are several replicas (never one that blocks every eviction), a NetworkPolicy, and
Pulumi await settings long enough for the load.
"""

from typing import Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import ACCELERATORS, ENGINES, MODELS, EngineName, Exposure, Loader, Workload
from ..config import StackConfig
from . import dra, pods, scan
from .options import child_options, parent_depends_on
from .contract import GpuPool, LoadBalancerSettings, MetricsAccess, WeightsMarker, WeightStore
from ..weightcopy import delivery
from .copier_pods import auth_window_args, copier_container, credential_env
from .engine import (
    LWS_WORKER_INDEX,
    SGLANG_DIST_PORT,
    VLLM_MASTER_PORT,
    EngineCommand,
    EngineSpec,
    Role,
    by_pod_index,
    default_memory_fraction,
    left_off_statement,
    max_model_len,
    sglang_command,
    vllm_command,
    vllm_launch_problems,
)
from ..component_args import reject_unknown

core = k8s.core.v1
meta = k8s.meta.v1

LWS_CHART = "oci://registry.k8s.io/lws/charts/lws"
"""The LeaderWorkerSet controller's chart (docs/catalog-research.md §3.1)."""
LWS_CHART_VERSION = "0.10.0"
"""Pinned LWS chart; its CRDs (``crds/``) match schemas/crds/lws-leaderworkersets.yaml (v0.10.0)."""
LWS_NAMESPACE = "lws-system"
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"

def lws_object_name(name: str, index: int = 0) -> str:
    """The name of a LeaderWorkerSet of the server ``name`` (``index`` > 0: a further group's own set).

    Never ``name`` itself: the LWS controller gives every LeaderWorkerSet a headless Service of its own name
    (lws v0.10.0 ``pkg/controllers/leaderworkerset_controller.go`` ``reconcileHeadlessServices``) and adopts an
    existing Service of that name instead of creating one (``CreateHeadlessServiceIfNotExists``), so a set named
    like the server's ClusterIP Service would leave ``$(LWS_LEADER_ADDRESS)`` (``<leader>.<lws>.<ns>``) without
    a DNS record, and no worker would find its leader.
    """
    base = f"{name}-lws"
    return f"{base}-{index}" if index else base


WEIGHTS_MOUNT = "/mnt/models"
"""Where the weights appear in the engine container (CSI mount, local copy or Hugging Face cache)."""
DRAFT_MOUNT = "/mnt/draft"
"""Where a copied draft model appears when the weights are streamed (DSPARK, 000)."""
ROLE_LABEL = "k3infra.dev/role"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
API_KEY_ENV = "K3_API_KEY"
VLLM_API_KEY_ENV = "VLLM_API_KEY"
"""vLLM reads its ``--api-key`` from this variable when the flag is absent."""
API_KEY_SECRET_KEY = "api-key"
HF_TOKEN_SECRET_KEY = "HF_TOKEN"
TERMINATION_GRACE_SECONDS = 120

COPY_TOOL_RESOURCES = ("2", "8Gi", "8", "32Gi")
"""Requests and limits (cpu, memory, cpu limit, memory limit) of the bucket-copy init containers."""


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
    """How long ``pulumi up`` waits for the workload: the probe budget plus image pull and scheduling."""
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
    hf_token_secret: NotRequired[str]
    """Kubernetes Secret (key ``HF_TOKEN``) for the huggingface loader. Default: anonymous download."""
    install_lws_controller: NotRequired[bool]
    """Install the LeaderWorkerSet controller chart when the workload is a LeaderWorkerSet. Default: true."""
    metrics_access: NotRequired[MetricsAccess]
    """Where the cloud's managed Prometheus scrapes ``/metrics`` from; admitted on the serving port. Default: none."""
    weights_marker: NotRequired[WeightsMarker]
    """Wait, in a first init container running as the reader identity, for the weight sync's completion markers, so
    an engine never starts on partial weights. Default: no wait (the bucket was filled beforehand)."""


def sibling(path: str, model_id: str, other_id: str) -> str:
    """The path of ``other_id`` next to ``model_id``: PREFIX/<model id> becomes PREFIX/<other id>."""
    if not path.endswith(model_id):
        raise ValueError(f"{path!r} does not end with the model id {model_id!r}")
    return path[: len(path) - len(model_id)] + other_id


def sibling_uri(uri: pulumi.Input[str], model_id: str, other_id: str) -> pulumi.Output[str]:
    """The bucket URI of ``other_id`` next to the model's URI."""
    return pulumi.Output.from_input(uri).apply(lambda u: sibling(u.rstrip("/"), model_id, other_id))


class _Weights:
    """How the weights (and the draft model) reach the engine container, per loader."""

    def __init__(self, name: str, args: ModelServerArgs, opts: pulumi.ResourceOptions):
        store, loader = args["store"], args["loader"]
        model = MODELS[args["model"]]
        subpath = store["model_subpath"].strip("/")
        draft = model.draft_model_for(EngineName(args["engine"])) if args.get("speculative_decoding") else None
        self.volumes: list[core.VolumeArgs] = []
        self.mounts: list[core.VolumeMountArgs] = []
        self.init_containers: list[core.ContainerArgs] = []
        self.env: dict[str, pulumi.Input[str]] = {}
        self.secret_env: list[core.EnvVarArgs] = []
        self.pod_annotations: dict[str, str] = {}
        self.model_path: pulumi.Input[str]
        self.draft_path: pulumi.Input[str] | None = None

        if loader == Loader.FUSE:
            fuse = store.get("fuse")
            if not fuse:
                raise pulumi.InputPropertyError("store.fuse", "loader fuse mounts the bucket through the cloud's CSI "
                                                "driver, and the weight store has no CSI mount")
            if fuse["inline"]:
                attributes = dict(fuse["volume_attributes"])
                if fuse.get("mount_options"):
                    attributes["mountOptions"] = ",".join(fuse.get("mount_options") or ())
                source = core.VolumeArgs(name="weights", csi=core.CSIVolumeSourceArgs(
                    driver=fuse["driver"], read_only=True, volume_attributes=attributes))
            else:
                claim = self._static_volume(name, args, opts)
                source = core.VolumeArgs(name="weights", persistent_volume_claim=core.PersistentVolumeClaimVolumeSourceArgs(
                    claim_name=claim, read_only=True))
            self.volumes.append(source)
            self.mounts.append(core.VolumeMountArgs(name="weights", mount_path=WEIGHTS_MOUNT, read_only=True))
            self.pod_annotations.update(fuse.get("pod_annotations") or {})
            self.model_path = f"{WEIGHTS_MOUNT}/{subpath}"
            if draft:
                self.draft_path = f"{WEIGHTS_MOUNT}/{sibling(subpath, model.hf_id, draft.hf_id)}"
        elif loader == Loader.VOLUME:
            volume = store.get("volume")
            if not volume:
                raise pulumi.InputPropertyError("store.volume", "loader volume mounts the store's volume, and the "
                                                "weight store has none")
            if volume.get("persistent_volume"):
                claim = self._claim(name, args, volume.get("persistent_volume") or "", opts)
                source = core.VolumeArgs(name="weights", persistent_volume_claim=core.PersistentVolumeClaimVolumeSourceArgs(
                    claim_name=claim, read_only=True))
            else:
                source = core.VolumeArgs(name="weights", host_path=core.HostPathVolumeSourceArgs(
                    path=volume.get("host_path") or "", type="Directory"))
            self.volumes.append(source)
            self.mounts.append(core.VolumeMountArgs(name="weights", mount_path=WEIGHTS_MOUNT, read_only=True))
            self.model_path = f"{WEIGHTS_MOUNT}/{subpath}"
            if draft:
                self.draft_path = f"{WEIGHTS_MOUNT}/{sibling(subpath, model.hf_id, draft.hf_id)}"
        elif loader == Loader.STREAMER:
            self.model_path = store["uri"]
            self.env.update(store.get("streamer_env") or {})
            self.secret_env += credential_env(store)
            if draft:
                self._copy(name, store, "draft", DRAFT_MOUNT, sibling_uri(store["uri"], model.hf_id, draft.hf_id),
                           draft.weight_bytes)
                self.draft_path = DRAFT_MOUNT
        elif loader == Loader.BUCKET_COPY:
            self._copy(name, store, "weights", WEIGHTS_MOUNT, store["uri"], model.weight_bytes
                       + (draft.weight_bytes if draft else 0), dest=f"{WEIGHTS_MOUNT}/{subpath}")
            self.model_path = f"{WEIGHTS_MOUNT}/{subpath}"
            if draft:
                draft_sub = sibling(subpath, model.hf_id, draft.hf_id)
                self.init_containers.append(self._copy_container(
                    store, "copy-draft", sibling_uri(store["uri"], model.hf_id, draft.hf_id),
                    f"{WEIGHTS_MOUNT}/{draft_sub}", "weights", WEIGHTS_MOUNT))
                self.draft_path = f"{WEIGHTS_MOUNT}/{draft_sub}"
        else:  # Loader.HUGGINGFACE: the engine downloads on every start (002 §2.1 advises against it)
            self.volumes.append(core.VolumeArgs(name="weights", empty_dir=core.EmptyDirVolumeSourceArgs(
                size_limit=pods.gib(model.weight_bytes * 1.1))))
            self.mounts.append(core.VolumeMountArgs(name="weights", mount_path=WEIGHTS_MOUNT))
            self.env["HF_HOME"] = WEIGHTS_MOUNT
            self.model_path = model.hf_id
            if draft:
                self.draft_path = draft.hf_id
            if args.get("hf_token_secret"):
                self.secret_env.append(pods.secret_env("HF_TOKEN", args["hf_token_secret"],  # pyright: ignore[reportTypedDictNotRequiredAccess]
                                                       HF_TOKEN_SECRET_KEY))

    def _copy(self, name: str, store: WeightStore, volume: str, mount: str, source: pulumi.Input[str], nbytes: int,
              dest: str | None = None) -> None:
        self.volumes.append(core.VolumeArgs(name=volume, empty_dir=core.EmptyDirVolumeSourceArgs(
            size_limit=pods.gib(nbytes * 1.1))))
        self.mounts.append(core.VolumeMountArgs(name=volume, mount_path=mount, read_only=True))
        self.init_containers.append(self._copy_container(store, f"copy-{volume}", source, dest or mount, volume, mount))

    @staticmethod
    def _copy_container(store: WeightStore, cname: str, source: pulumi.Input[str], dest: str, volume: str,
                        mount: str) -> core.ContainerArgs:
        tool = store["download"]
        env: dict[str, pulumi.Input[str]] = {"SOURCE": source, "DEST": dest, "HOME": "/tmp"}
        env.update(tool.get("env") or {})
        cpu, mem, cpu_limit, mem_limit = COPY_TOOL_RESOURCES
        return core.ContainerArgs(
            name=cname, image=tool["image"], image_pull_policy="IfNotPresent", command=list(tool["command"]),
            env=[*pods.env_list(env), *credential_env(store)], resources=pods.small_resources(cpu, mem, cpu_limit, mem_limit),
            security_context=pods.container_security(),
            volume_mounts=[core.VolumeMountArgs(name=volume, mount_path=mount)],
        )

    @staticmethod
    def _claim(name: str, args: ModelServerArgs, volume: str, opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
        """A claim of an existing PersistentVolume by name, read-only. It asks for 1Gi: a claim binds to a named
        volume of at least its request and the access modes it asks for (Kubernetes "Persistent Volumes",
        reserving a PersistentVolume)."""
        pvc = core.PersistentVolumeClaim(
            f"{name}-weights-claim",
            metadata=meta.ObjectMetaArgs(name=f"{name}-weights", namespace=args["namespace"],
                                         labels=pods.labels(name, "weights")),
            spec=core.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadOnlyMany"], storage_class_name="", volume_name=volume,
                resources=core.VolumeResourceRequirementsArgs(requests={"storage": "1Gi"})),
            opts=opts)
        return pvc.metadata.apply(lambda m: m.name or f"{name}-weights")

    @staticmethod
    def _static_volume(name: str, args: ModelServerArgs, opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
        """A read-only PersistentVolume bound to one claim (Mountpoint for S3, BlobFuse, ossfs)."""
        fuse = args["store"].get("fuse")
        assert fuse is not None
        if not fuse.get("volume_handle"):
            raise pulumi.InputPropertyError("store.fuse.volume_handle", "a static CSI volume needs a volume handle")
        ns = args["namespace"]
        capacity = fuse.get("capacity") or pods.gib(MODELS[args["model"]].weight_bytes * 2)
        pv_name = f"{ns}-{name}-weights"
        pv = core.PersistentVolume(
            f"{name}-weights",
            metadata=meta.ObjectMetaArgs(name=pv_name, labels=pods.labels(name, "weights")),
            spec=core.PersistentVolumeSpecArgs(
                capacity={"storage": capacity},
                access_modes=["ReadOnlyMany"],
                persistent_volume_reclaim_policy="Retain",
                storage_class_name="",
                mount_options=list(fuse.get("mount_options") or ()) or None,
                claim_ref=core.ObjectReferenceArgs(namespace=ns, name=f"{name}-weights"),
                csi=core.CSIPersistentVolumeSourceArgs(driver=fuse["driver"], volume_handle=fuse["volume_handle"],  # pyright: ignore[reportTypedDictNotRequiredAccess]
                                                       read_only=True, volume_attributes=dict(fuse["volume_attributes"])),
            ),
            opts=opts,
        )
        pvc = core.PersistentVolumeClaim(
            f"{name}-weights-claim",
            metadata=meta.ObjectMetaArgs(name=f"{name}-weights", namespace=ns, labels=pods.labels(name, "weights")),
            spec=core.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadOnlyMany"], storage_class_name="", volume_name=pv_name,
                resources=core.VolumeResourceRequirementsArgs(requests={"storage": capacity}),
            ),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[pv])),
        )
        return pvc.metadata.apply(lambda m: m.name or f"{name}-weights")


class ModelServer(pulumi.ComponentResource):
    """Kimi K3 (or another catalog model) served on a GPU pool: workload, Services, PDB, NetworkPolicy."""

    service_name: pulumi.Output[str]
    """ClusterIP Service in front of the leaders (the engine's port)."""
    endpoint: pulumi.Output[str]
    """Base URL of the server (``http://HOST:PORT``; OpenAI routes under ``/v1``): the load balancer when
    there is one, else the cluster-internal Service name."""
    workload_name: pulumi.Output[str]
    """Name of the LeaderWorkerSet, StatefulSet or Deployment."""
    port: pulumi.Output[int]
    """The engine's HTTP port."""

    def __init__(self, name: str, args: ModelServerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:ModelServer", name, None, opts)
        reject_unknown(args, ModelServerArgs)
        _check(args)
        ns = args["namespace"]
        engine = ENGINES[EngineName(args["engine"])]
        workload = Workload(args["workload"])
        nodes, replicas = int(args["nodes"]), int(args["replicas"])
        port = engine.port
        inherited = parent_depends_on(opts)
        child = child_options(self, inherited)
        accelerator = ACCELERATORS.get(args.get("accelerator") or "")
        pp = int(args.get("pipeline_parallel") or 1)
        budget, await_s = int(args["probe_budget_seconds"]), int(args["await_timeout_seconds"])
        spec = EngineSpec(
            model=MODELS[args["model"]], engine=engine,
            load_format=args.get("load_format") or ("runai_streamer" if args["loader"] == Loader.STREAMER
                                                    else engine.default_load_format),
            memory_fraction=float(args.get("memory_fraction") or default_memory_fraction(engine, accelerator, pp)),
            nodes=nodes, tensor_parallel=int(args["tensor_parallel"]), pipeline_parallel=pp,
            expert_parallel=int(args["tensor_parallel"]) if args.get("expert_parallel") else 1,
            speculative_decoding=bool(args.get("speculative_decoding")),
            gpus_per_node=int(args["pool"]["gpus_per_node"]), accelerator=accelerator,
            startup_budget_seconds=budget, model_source=Loader(args["loader"]).model_source,
        )
        if engine.name == EngineName.VLLM and vllm_launch_problems(spec):
            raise pulumi.InputPropertyError("tensor_parallel", "; ".join(vllm_launch_problems(spec)))
        weights = _Weights(name, args, child)
        selector = pods.selector(name, "model-server")
        leader_selector = {**selector, **({POD_INDEX_LABEL: "0"} if workload == Workload.STATEFUL_SET
                                          else {ROLE_LABEL: "leader"})}
        # A pool whose capacity has not started cannot run the server: do not make `pulumi up` wait for it.
        skip_await = bool(args["pool"].get("capacity_pending"))
        await_annotations = {"pulumi.com/skipAwait": "true"} if skip_await else {"pulumi.com/timeoutSeconds": str(await_s)}
        timeouts = pulumi.CustomTimeouts(create=f"{await_s}s", update=f"{await_s}s")
        # Every Service that selects the server's pods waits as long as the workload does. pulumi-kubernetes
        # awaits a Service on create and on update until no endpoint is not-ready (provider/pkg/await/service.go:
        # `success := serviceReady && endpointsSettled && !endpointsPending`, `endpointsPending` from any
        # NotReadyAddresses), 10 minutes by default (DefaultServiceTimeoutMins); the leaders are NotReady for the
        # whole load (tens of minutes), so a default Service await fails the first `pulumi up`, and any later one
        # that updates a Service while the model reloads. Ordering the Services after the workload would fix only
        # the create, and would start the load balancer's provisioning only after the load. Pods that have no node
        # yet (capacity not started) have no address, so no not-ready endpoint: the Services then need no skipAwait.
        # Headless Services are not awaited on endpoints at all (shouldWaitForPods).
        service_opts = child_options(self, inherited, custom_timeouts=timeouts)

        pool = pods.with_node_resources(args["pool"], accelerator)
        args = ModelServerArgs(**{**args, "pool": pool})
        skips = dict(scan.SERVER_SKIPS)
        if not (pool.get("cpu_request") and pool.get("memory_request")):
            skips.update(scan.SERVER_NO_CPU_MEMORY)
        if pool.get("capabilities"):
            skips[scan.ADDED_CAPABILITIES] = scan.capabilities_reason(list(pool.get("capabilities") or ()))
        api_secret = args.get("api_key_secret")
        if api_secret or weights.secret_env:
            skips[scan.SECRET_ENV] = scan.SECRET_ENV_REASON

        builder = _PodBuilder(name, args, spec, weights, budget)
        # DRA: the pool's device claims and, when tensor parallelism spans nodes, a ComputeDomain per group.
        claims = dra.server_claims(name, namespace=ns, pool=pool, tensor_parallel=spec.tensor_parallel,
                                   groups=replicas if workload == Workload.LEADER_WORKER_SET else 1, opts=child)
        workload_opts = child_options(self, inherited, *claims.resources, custom_timeouts=timeouts)
        if args.get("scaler_owns_replicas"):
            workload_opts = pulumi.ResourceOptions.merge(workload_opts, pulumi.ResourceOptions(
                ignore_changes=["spec.replicas"]))
        self.lws_controller: k8s.helm.v4.Chart | None = None
        self.dist_service: core.Service | None = None
        if workload == Workload.LEADER_WORKER_SET:
            depends: list[pulumi.Resource] = []
            if args.get("install_lws_controller", True):
                # The controller waits for nothing of the server's (GPU pool, weight sync): it installs
                # while they are created.
                lws_ns = core.Namespace(f"{name}-lws-namespace", metadata=meta.ObjectMetaArgs(
                    name=LWS_NAMESPACE, labels={"app.kubernetes.io/part-of": pods.PART_OF}),
                    opts=pulumi.ResourceOptions(parent=self))
                self.lws_controller = k8s.helm.v4.Chart(
                    f"{name}-lws", chart=LWS_CHART, version=LWS_CHART_VERSION, namespace=LWS_NAMESPACE, name="lws",
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[lws_ns]))
                depends.append(self.lws_controller)
            # checkov scans the pod templates inside the LeaderWorkerSet (tests run it over them): the same
            # written reasons as a Deployment's, on each template; workers serve no HTTP to probe.
            leader_scan = scan.skip_annotations(skips)
            worker_scan = scan.skip_annotations({**skips, **scan.WORKER_SKIPS})
            # One LeaderWorkerSet, or one per group when each group claims a ComputeDomain of its own (the
            # templates are shared by all groups of one LWS); each waits for the one before it, so an update
            # replaces one group at a time.
            sets: list[pulumi.Resource] = []
            for i, group_claims in enumerate(claims.groups if claims.per_group else claims.groups[:1]):
                lws_name = lws_object_name(name, i)
                sets.append(k8s.apiextensions.CustomResource(
                    f"{name}-workload-{i}" if i else f"{name}-workload",
                    api_version=LWS_API_VERSION,
                    kind="LeaderWorkerSet",
                    metadata=meta.ObjectMetaArgs(
                        name=lws_name, namespace=ns, labels=pods.labels(name, "model-server"),
                        # Custom resources are not awaited unless told (docs/catalog-research.md §5); LWS sets
                        # Available once every group is ready.
                        annotations={**({} if skip_await else {"pulumi.com/waitFor": "condition=Available"}),
                                     **await_annotations},
                    ),
                    spec={
                        "replicas": 1 if claims.per_group else replicas,
                        "startupPolicy": "LeaderCreated",
                        "leaderWorkerTemplate": {
                            "size": nodes,
                            "restartPolicy": "RecreateGroupOnPodRestart",
                            "leaderTemplate": builder.template(Role.LEADER, workload, {ROLE_LABEL: "leader"},
                                                               group_claims, claims.env, leader_scan),
                            "workerTemplate": builder.template(Role.WORKER, workload, {ROLE_LABEL: "worker"},
                                                               group_claims, claims.env, worker_scan),
                        },
                    },
                    opts=pulumi.ResourceOptions.merge(workload_opts, pulumi.ResourceOptions(depends_on=depends)),
                ))
                depends = [*depends, sets[-1]]
            resource = sets[-1]
            workload_name = pulumi.Output.from_input(lws_object_name(name, 0))
        elif workload == Workload.STATEFUL_SET:
            sglang = spec.engine.name == EngineName.SGLANG
            dist_name, dist_port = "dist", (SGLANG_DIST_PORT if sglang else VLLM_MASTER_PORT)
            self.dist_service = core.Service(
                f"{name}-dist",
                metadata=meta.ObjectMetaArgs(name=f"{name}-dist", namespace=ns, labels=pods.labels(name, "model-server")),
                spec=core.ServiceSpecArgs(
                    cluster_ip="None", selector=leader_selector,
                    # Rank 0 is not Ready until the whole group has loaded, and the other ranks must find it
                    # before that: publish its address while it is not ready.
                    publish_not_ready_addresses=True,
                    ports=[core.ServicePortArgs(name=dist_name, port=dist_port, target_port=dist_port)],
                ),
                # Headless: pulumi-kubernetes does not wait for its endpoints (service.go shouldWaitForPods).
                opts=child,
            )
            tmpl = builder.template(Role.LEADER, workload, {}, claims.groups[0], claims.env)
            resource = k8s.apps.v1.StatefulSet(
                f"{name}-workload",
                metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=pods.labels(name, "model-server"),
                                             annotations={**await_annotations, **scan.skip_annotations(skips)}),
                spec=k8s.apps.v1.StatefulSetSpecArgs(
                    service_name=f"{name}-dist", replicas=nodes, pod_management_policy="Parallel",
                    selector=meta.LabelSelectorArgs(match_labels=selector), template=tmpl,
                ),
                opts=pulumi.ResourceOptions.merge(workload_opts, pulumi.ResourceOptions(depends_on=[self.dist_service])),
            )
            workload_name = resource.metadata.apply(lambda m: m.name or name)
        else:
            tmpl = builder.template(Role.SINGLE, workload, {ROLE_LABEL: "leader"}, claims.groups[0], claims.env)
            resource = k8s.apps.v1.Deployment(
                f"{name}-workload",
                metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=pods.labels(name, "model-server"),
                                             annotations={**await_annotations, **scan.skip_annotations(skips)}),
                spec=k8s.apps.v1.DeploymentSpecArgs(
                    replicas=replicas,
                    selector=meta.LabelSelectorArgs(match_labels=selector),
                    # Each pod takes a whole GPU node: never surge (no spare node), replace one at a time.
                    strategy=k8s.apps.v1.DeploymentStrategyArgs(
                        type="RollingUpdate",
                        rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(max_surge=0, max_unavailable=1)),
                    progress_deadline_seconds=await_s,
                    template=tmpl,
                ),
                opts=workload_opts,
            )
            workload_name = resource.metadata.apply(lambda m: m.name or name)
        self.workload = resource

        svc_labels = pods.labels(name, "model-server")
        service = core.Service(
            f"{name}-service",
            metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=svc_labels),
            spec=core.ServiceSpecArgs(type="ClusterIP", selector=leader_selector, ports=[
                core.ServicePortArgs(name="http", port=port, target_port="http", protocol="TCP")]),
            opts=service_opts,
        )
        self.service = service
        lb_service, client_ranges = self._load_balancer(name, args, leader_selector, port, svc_labels, service_opts)
        self.load_balancer_service = lb_service

        self.pdb = _disruption_budget(name, ns, replicas, selector, svc_labels, child)
        self.network_policy = self._network_policy(name, args, selector, port, client_ranges, svc_labels, child)

        self.port = pulumi.Output.from_input(port)
        self.service_name = service.metadata.apply(lambda m: m.name or name)
        self.workload_name = workload_name
        if lb_service is not None:
            self.endpoint = lb_service.status.apply(lambda s: f"http://{_lb_host(s)}:{port}")
        else:
            self.endpoint = pulumi.Output.from_input(f"http://{name}.{ns}.svc.cluster.local:{port}")
        self.leader_selector = leader_selector
        self.warnings: list[str] = [w for w in (marker_wait_egress(args),
                                                left_off_statement(engine.name, sorted(builder.left_off), spec)) if w]
        """What the plan should say about this server (its pods' egress needs)."""
        self.max_model_len = max_model_len(spec)
        """The longest request (prompt plus output tokens) the engine accepts."""
        self.register_outputs({"service_name": self.service_name, "endpoint": self.endpoint,
                               "workload_name": self.workload_name, "port": self.port})

    @staticmethod
    def _load_balancer(name: str, args: ModelServerArgs, leader_selector: Mapping[str, str], port: int,
                       svc_labels: Mapping[str, str], child: pulumi.ResourceOptions
                       ) -> tuple[core.Service | None, list[str]]:
        """The load balancer the exposure asks for, and the client ranges it admits."""
        if args.get("behind_gateway"):
            return None, []
        lb = args.get("load_balancer") or LoadBalancerSettings(internal_annotations={})
        public = args.get("exposure") == Exposure.PUBLIC
        if public:
            ranges = list(args.get("allowed_cidrs") or ())
            annotations = dict(lb.get("public_annotations") or {})
            role = "public"
        else:
            ranges = list(lb.get("internal_source_ranges") or ())
            if not ranges:
                return None, []
            annotations = dict(lb["internal_annotations"])
            role = "internal"
        svc = core.Service(
            f"{name}-{role}",
            metadata=meta.ObjectMetaArgs(name=f"{name}-{role}", namespace=args["namespace"], labels=dict(svc_labels),
                                         annotations=annotations or None),
            spec=core.ServiceSpecArgs(
                type="LoadBalancer", selector=dict(leader_selector), load_balancer_source_ranges=ranges,
                # Keep client addresses so the NetworkPolicy can match them.
                external_traffic_policy="Local",
                ports=[core.ServicePortArgs(name="http", port=port, target_port="http", protocol="TCP")],
            ),
            opts=child,
        )
        return svc, ranges

    @staticmethod
    def _network_policy(name: str, args: ModelServerArgs, selector: Mapping[str, str], port: int,
                        client_ranges: Sequence[str], svc_labels: Mapping[str, str],
                        child: pulumi.ResourceOptions) -> k8s.networking.v1.NetworkPolicy:
        """Ingress to the servers: the serving port from the namespace (and the load balancer's clients or the
        gateway's proxies); every port between the pods of the server (NCCL bootstrap, the rendezvous)."""
        net = k8s.networking.v1
        http = [net.NetworkPolicyPortArgs(protocol="TCP", port="http")]
        ranges = list(client_ranges)
        lb = args.get("load_balancer") or LoadBalancerSettings(internal_annotations={})
        if args.get("behind_gateway"):
            ranges += list(lb.get("gateway_source_ranges") or ())
        if ranges or args.get("behind_gateway"):
            ranges += list(lb.get("health_check_ranges") or ())
        rules = [
            net.NetworkPolicyIngressRuleArgs(from_=[net.NetworkPolicyPeerArgs(pod_selector=meta.LabelSelectorArgs())],
                                             ports=http),
            net.NetworkPolicyIngressRuleArgs(from_=[net.NetworkPolicyPeerArgs(
                pod_selector=meta.LabelSelectorArgs(match_labels=dict(selector)))]),
        ]
        if ranges:
            rules.append(net.NetworkPolicyIngressRuleArgs(
                from_=[net.NetworkPolicyPeerArgs(ip_block=net.IPBlockArgs(cidr=c)) for c in dict.fromkeys(ranges)],
                ports=http))
        scrapers = args.get("metrics_access") or MetricsAccess()
        peers = [net.NetworkPolicyPeerArgs(namespace_selector=meta.LabelSelectorArgs(
            match_labels={"kubernetes.io/metadata.name": n})) for n in scrapers.get("namespaces") or ()]
        # Ranges the load balancer rule already admits on the serving port are not repeated.
        peers += [net.NetworkPolicyPeerArgs(ip_block=net.IPBlockArgs(cidr=c)) for c in scrapers.get("cidrs") or ()
                  if c not in ranges]
        if peers:
            rules.append(net.NetworkPolicyIngressRuleArgs(from_=peers, ports=http))
        return net.NetworkPolicy(
            f"{name}-network-policy",
            metadata=meta.ObjectMetaArgs(name=name, namespace=args["namespace"], labels=dict(svc_labels)),
            spec=net.NetworkPolicySpecArgs(pod_selector=meta.LabelSelectorArgs(match_labels=dict(selector)),
                                           policy_types=["Ingress"], ingress=rules),
            opts=child,
        )


def _disruption_budget(name: str, namespace: str, replicas: int, selector: Mapping[str, str],
                       labels: Mapping[str, str], child: pulumi.ResourceOptions
                       ) -> k8s.policy.v1.PodDisruptionBudget | None:
    """One replica: no budget. A budget on a single replica either allows its eviction (and protects nothing) or
    blocks every eviction, so node drains, managed node group updates and capacity-window scale-downs fail
    (EKS managed-node-update-behavior: "Aggressive PDB" -> PodEvictionFailure). Several replicas: one pod (so
    one replica's group) down at a time, and pods of a group that is already down may always be evicted."""
    if replicas <= 1:
        return None
    return k8s.policy.v1.PodDisruptionBudget(
        f"{name}-pdb",
        metadata=meta.ObjectMetaArgs(name=name, namespace=namespace, labels=dict(labels)),
        spec=k8s.policy.v1.PodDisruptionBudgetSpecArgs(
            max_unavailable=1, unhealthy_pod_eviction_policy="AlwaysAllow",
            selector=meta.LabelSelectorArgs(match_labels=dict(selector))),
        opts=child,
    )


def _lb_host(status: object) -> str:
    """The first ingress address of a load balancer Service's status ("pending" before it has one)."""
    lb = getattr(status, "load_balancer", None) if not isinstance(status, dict) else status.get("load_balancer")
    ingress = (getattr(lb, "ingress", None) if not isinstance(lb, dict) else lb.get("ingress")) or []
    for i in ingress:
        host = (i.get("ip") or i.get("hostname")) if isinstance(i, dict) else (i.ip or i.hostname)
        if host:
            return host
    return "pending"


def _check(args: ModelServerArgs) -> None:
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


class _PodBuilder:
    """Pod templates of one ModelServer."""

    def __init__(self, name: str, args: ModelServerArgs, spec: EngineSpec, weights: _Weights, budget: int):
        self.name, self.args, self.spec, self.weights, self.budget = name, args, spec, weights, budget
        self.left_off: set[str] = set()
        """The recipe variables some command left off (``EngineCommand.left_off``)."""

    def _commands(self, role: Role, workload: Workload) -> tuple[str, EngineCommand]:
        """(the container's bash script, the command of the role whose ports and probes apply)."""
        spec, w, pool = self.spec, self.weights, self.args["pool"]
        setup = list(pool.get("setup_commands") or ())
        model = "${K3_MODEL}"
        api = bool(self.args.get("api_key_secret"))
        draft = "${K3_DRAFT_MODEL}" if w.draft_path is not None else None
        if spec.engine.name == EngineName.VLLM:
            vllm_key = VLLM_API_KEY_ENV if api else None
            if workload == Workload.STATEFUL_SET:
                host = f"{self.name}-dist.{self.args['namespace']}.svc.cluster.local"
                leader = vllm_command(spec, model=model, role=Role.LEADER, leader_address=host,
                                      api_key_env=vllm_key, draft_model=draft)
                worker = vllm_command(spec, model=model, role=Role.WORKER, node_rank="${POD_INDEX}",
                                      leader_address=host, draft_model=draft)
                return by_pod_index(leader, worker, setup), leader
            cmd = vllm_command(spec, model=model, role=role, api_key_env=vllm_key if role != Role.WORKER else None,
                               draft_model=draft)
            return cmd.script(setup), cmd
        key_env = API_KEY_ENV if api else None
        if spec.nodes == 1:
            cmd = sglang_command(spec, model=model, draft_model=draft, api_key_env=key_env)
        elif workload == Workload.STATEFUL_SET:
            cmd = sglang_command(spec, model=model, node_rank="${POD_INDEX}", draft_model=draft, api_key_env=key_env,
                                 dist_init_addr=f"{self.name}-dist.{self.args['namespace']}.svc.cluster.local:"
                                                f"{SGLANG_DIST_PORT}")
        else:
            rank = "0" if role == Role.LEADER else LWS_WORKER_INDEX
            cmd = sglang_command(spec, model=model, node_rank=rank, draft_model=draft, api_key_env=key_env,
                                 dist_init_addr=f"$(LWS_LEADER_ADDRESS):{SGLANG_DIST_PORT}")
        return cmd.script(setup), cmd

    def template(self, role: Role, workload: Workload, role_labels: Mapping[str, str],
                 claims: Sequence[dra.PodClaim] = (), claim_env: Mapping[str, str] | None = None,
                 scan_annotations: Mapping[str, str] | None = None) -> core.PodTemplateSpecArgs:
        """The pod template of ``role`` (LEADER doubles as the StatefulSet's shared template), claiming ``claims``.
        ``scan_annotations`` go on the template where the workload's own metadata is not scanned (LWS)."""
        args, spec, w = self.args, self.spec, self.weights
        pool, store = args["pool"], args["store"]
        script, cmd = self._commands(role, workload)
        self.left_off.update(cmd.left_off)
        shared = workload == Workload.STATEFUL_SET
        env: list[core.EnvVarArgs] = []
        if shared:
            env.append(pods.field_env("POD_INDEX", f"metadata.labels['{POD_INDEX_LABEL}']"))
        env.append(core.EnvVarArgs(name="K3_MODEL", value=w.model_path))
        if w.draft_path is not None:
            env.append(core.EnvVarArgs(name="K3_DRAFT_MODEL", value=w.draft_path))
        values: dict[str, pulumi.Input[str]] = {}
        values.update(pool.get("env") or {})
        values.update(w.env)
        values.update(claim_env or {})
        values.update(cmd.env)
        env += pods.env_list(values)
        env += w.secret_env
        if args.get("api_key_secret"):
            key_env = VLLM_API_KEY_ENV if spec.engine.name == EngineName.VLLM else API_KEY_ENV
            env.append(pods.secret_env(key_env, args["api_key_secret"], API_KEY_SECRET_KEY))  # pyright: ignore[reportTypedDictNotRequiredAccess]

        ports = []
        serves = cmd.serves_http or shared
        if serves:
            ports.append(core.ContainerPortArgs(name="http", container_port=spec.engine.port, protocol="TCP"))
        for pname, number in sorted(cmd.extra_ports.items()):
            ports.append(core.ContainerPortArgs(name=pname, container_port=number, protocol="TCP"))
        startup = readiness = liveness = None
        if shared:
            startup, readiness, liveness = pods.leader_only_probes(spec.engine.port, spec.engine.health_path, self.budget)
        elif cmd.serves_http:
            startup, readiness, liveness = pods.http_probes("http", spec.engine.health_path, self.budget)

        host_vols, host_mounts = pods.host_volumes(pool)
        wait, wait_volumes = _marker_wait(args)
        mounts = [core.VolumeMountArgs(name="dshm", mount_path="/dev/shm"), *w.mounts, *host_mounts]
        container = core.ContainerArgs(
            name="engine",
            image=args["image"],
            image_pull_policy="IfNotPresent",
            command=["/bin/bash", "-c"],
            args=[script],
            env=env,
            ports=ports or None,
            resources=pods.gpu_resources(pool, dra.container_claims(claims)),
            startup_probe=startup,
            readiness_probe=readiness,
            liveness_probe=liveness,
            security_context=pods.container_security(pool.get("capabilities") or ()),
            volume_mounts=mounts,
        )
        pod_labels = {**pods.labels(self.name, "model-server"), **role_labels,
                      **(store["reader"].get("pod_labels") or {}), **(pool.get("pod_labels") or {})}
        annotations = {**(pool.get("pod_annotations") or {}), **w.pod_annotations, **(scan_annotations or {})}
        return core.PodTemplateSpecArgs(
            metadata=meta.ObjectMetaArgs(labels=pod_labels, annotations=annotations or None),
            spec=core.PodSpecArgs(
                service_account_name=store["reader"]["name"],
                automount_service_account_token=False,
                enable_service_links=False,
                node_selector=dict(pool["node_selector"]),
                affinity=dra.group_affinity(pool.get("group_topology_label"), pods.selector(self.name, "model-server"))
                if spec.nodes > 1 else None,
                tolerations=pods.tolerations(pool) or None,
                security_context=pods.pod_security(),
                termination_grace_period_seconds=TERMINATION_GRACE_SECONDS,
                init_containers=[*wait, *w.init_containers] or None,
                containers=[container],
                resource_claims=dra.pod_resource_claims(claims),
                volumes=[pods.shm_volume(pool), *w.volumes, *host_vols, *wait_volumes],
            ),
        )


MARKER_WAIT_RESOURCES = ("100m", "256Mi", "1", "1Gi")
MARKER_POLL_SECONDS = 15
"""How often the marker wait looks again."""

MOUNT_WAIT_SCRIPT = """set -u
timeout=$1 interval=$2
shift 2
deadline=$(( $(date +%s) + timeout ))
for marker in "$@"; do
  until [ -f "$marker" ]; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "timed out after $timeout s waiting for $marker (the weight sync's completion marker, through the bucket mount)" >&2
      exit 1
    fi
    echo "waiting for $marker" >&2
    sleep "$interval"
  done
  echo "weights complete: $(cat "$marker")" >&2
done
"""
"""Wait for each marker file under the bucket mount, until the deadline. ``[ -f ]`` looks the path up (never lists a
directory: GCS FUSE's kernel list cache here never expires), so each poll reaches the store once its negative
lookup cache, where the driver keeps one, has expired: GCS FUSE ``metadata-cache:negative-ttl-secs`` (5 s by
default), ossfs 2.0 ``oss_negative_cache_timeout``, blobfuse2's attribute cache (``--attr-cache-timeout``, 120 s by
default); Mountpoint for S3 caches no negative lookup without ``--cache``/``--negative-metadata-ttl``. A marker is
therefore seen within one poll plus that TTL of its writing."""


def _marker_wait(args: ModelServerArgs) -> tuple[list[core.ContainerArgs], list[core.VolumeArgs]]:
    """The init container that waits for the weight sync's markers (none without ``weights_marker``): through the
    bucket mount with the engine image when the loader mounts the bucket, else the copier reading the bucket as the
    server's identity."""
    marker = args.get("weights_marker")
    if not marker:
        return [], []
    timeout = str(int(marker["timeout_seconds"]))
    resources = pods.small_resources(*MARKER_WAIT_RESOURCES)
    keys = list(marker.get("marker_keys") or ())
    if args["loader"] == Loader.FUSE and keys:
        # The engine image is on the node for the engine container anyway; the CSI volume is mounted before any
        # container starts (GCS FUSE: its sidecar is a native sidecar, started before the other init containers).
        return [core.ContainerArgs(
            name="wait-for-weights", image=args["image"], image_pull_policy="IfNotPresent",
            command=["/bin/sh", "-c", MOUNT_WAIT_SCRIPT, "wait-for-weights", timeout, str(MARKER_POLL_SECONDS),
                     *(f"{WEIGHTS_MOUNT}/{k}" for k in keys)],
            resources=resources, security_context=pods.container_security(read_only_root=True),
            volume_mounts=[core.VolumeMountArgs(name="weights", mount_path=WEIGHTS_MOUNT, read_only=True)],
        )], []
    wait_args: list[pulumi.Input[str]] = ["wait", "--timeout", timeout, "--interval", str(MARKER_POLL_SECONDS),
                                          *auth_window_args(args["store"])]
    for repo in marker["repos"]:
        wait_args += ["--repo", repo]
    container, volumes = copier_container("wait-for-weights", wait_args, args["store"], marker["config_map"],
                                          resources)
    return [container], volumes


def marker_wait_egress(args: ModelServerArgs) -> str | None:
    """What the server's marker wait downloads at every start (the copier's image and packages), or None."""
    marker = args.get("weights_marker")
    if not marker or (args["loader"] == Loader.FUSE and marker.get("marker_keys")):
        return None
    return (f"the server pods' wait-for-weights init container (loader {args['loader']}) runs the weight copier: it "
            f"pulls {delivery.IMAGE} once per node and installs the copier's pinned packages from PyPI at every "
            "start, so the GPU nodes need egress to that registry and to pypi.org (loader fuse waits through the "
            "bucket mount with the engine image instead)")


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
    if api_key_secret:
        args["api_key_secret"] = api_key_secret
    if hf_token_secret:
        args["hf_token_secret"] = hf_token_secret
    if metrics_access:
        args["metrics_access"] = metrics_access
    if cfg.autoscaling is not None and cfg.autoscaling.enabled:
        args["scaler_owns_replicas"] = True
    return args


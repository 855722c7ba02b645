"""WeightSync: the one-time copy of a pinned model revision from Hugging Face into the weight bucket.

002 §2.1 and every cloud section: sync the weights to object storage once and load from there. 000 does it by
hand (``huggingface-cli download`` of the model and the DSPARK draft model to disk, then ``gcloud storage cp``):
download, then upload, both through one disk. awslabs/ai-on-eks copies Kimi K3 to S3 with one Job on one node.
Here an Indexed Job of ``workers`` pods (spread one per node) runs k3infra.weightcopy.copier, one code path
for every cloud, on the sync's own pool of network-optimized nodes where the cloud builds one (catalog.transfer
SYNC_POOLS: empty until the Job's pods ask, empty again once they are gone), else on the CPU system nodes; each
worker keeps the files in flight its node's NIC needs (catalog.transfer.streams_for):

- each file streams from the Hub into the bucket as it arrives (64 MiB parts through a bounded in-memory queue,
  four files in flight per worker): no volume, nothing the size of the model anywhere;
- files are assigned to workers deterministically, balanced by size; every object is checked against the Hub's
  size and sha256 before it counts and carries that hash as metadata, so a retried pod or a rerun skips what
  is in and copies only the rest;
- when every file is in, the last worker writes the manifest and the completion marker the server waits for.

The copier and its locked, hashed requirements ship as a ConfigMap (nothing unpinned is downloaded at start).
The pods run as the bucket's writer identity (the only one that can write) with the Hugging Face token from a
Kubernetes Secret. The Job depends only on the identities, so it runs while the GPU pool is created; the
server waits for both. Pulumi waits for it the sizing's sync budget (``Sizing.sync.timeout_seconds``).
"""

from typing import Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import MODELS, DraftModel, EngineName, Model
from ..config import StackConfig
from ..component_args import reject_unknown
from . import pods, scan
from ..catalog.transfer import MAX_SYNC_STREAMS_PER_WORKER, SYNC_STREAM_MEMORY_MIB, SYNC_STREAMS_PER_WORKER
from .contract import SyncNodes, WeightsMarker, WeightStore
from ..weightcopy.copier.marker import marker_key
from .copier_pods import auth_window_args, copier_config_map, copier_container
from .server_args import HF_TOKEN_SECRET_KEY
from .weight_loading import sibling, sibling_uri
from .options import child_options, parent_depends_on

core = k8s.core.v1
meta = k8s.meta.v1

RUN_AS = 10001
"""The Job's pods run as this non-root user and group, above the host's UID range."""
BACKOFF_LIMIT_PER_INDEX = 6
"""Retries of each worker (``backoffLimitPerIndex``): a retried worker skips what it already copied."""
PART_SIZE = "64MiB"
QUEUE_PARTS = 2
RUNTIME_MEMORY_MIB = 2048
"""A worker's memory beside its parts: the Python runtime, TLS and the Hub client."""
STREAMS_PER_CPU = 8
"""ESTIMATE: streams one CPU keeps fed (sha256 and TLS of ~0.8 Gbps each; one core hashes about 1.5 GB/s)."""


def worker_resources(streams: int) -> core.ResourceRequirementsArgs:
    """Requests and limits of a worker keeping ``streams`` files in flight: each stream holds
    SYNC_STREAM_MEMORY_MIB of parts (2 queued + 2 in hand x 64 MiB), plus the runtime; a CPU per STREAMS_PER_CPU
    streams requested, twice that the limit. Four streams: 1 CPU and 3 GiB (the copier's default)."""
    memory = f"{streams * SYNC_STREAM_MEMORY_MIB + RUNTIME_MEMORY_MIB}Mi"
    cpu = max(1, -(-streams // STREAMS_PER_CPU))
    return pods.small_resources(str(cpu), memory, str(max(4, 2 * cpu)), memory)
DEFAULT_TIMEOUT_SECONDS = 4 * 3600
"""Pulumi's wait for the Job when the caller states no budget (the stacks pass the sizing's)."""


class WeightSyncArgs(TypedDict):
    """Arguments of WeightSync."""

    namespace: str
    """Namespace of the Job (it must exist, with the writer service account in it)."""
    model: str
    """Hugging Face id of a catalog model."""
    revision: str
    """Revision of the model to copy: a commit SHA pins it (a branch or tag moves)."""
    store: WeightStore
    """The bucket: its URI is the destination, its writer the Job's identity, its ``copy_env`` the copier's."""
    draft_model: NotRequired[bool]
    """Also copy the model's draft model (DSPARK) next to it: the one ``engine`` serves with. Default: false."""
    engine: NotRequired[EngineName]
    """The engine whose draft model is copied (the engines' recipes name different checkpoints). Default:
    sglang (000)."""
    draft_revision: NotRequired[str]
    """Revision of the draft model. Default: main."""
    hf_token_secret: NotRequired[str]
    """Kubernetes Secret (key ``HF_TOKEN``) holding the Hugging Face token. Default: anonymous download
    (fails for gated repositories)."""
    workers: NotRequired[int]
    """Workers of the Indexed Job, spread over the CPU nodes. Default: 2 (the clusters' system nodes)."""
    streams: NotRequired[int]
    """Files in flight per worker (``copier.py sync --streams``); memory and CPU follow. Default: 4."""
    nodes: NotRequired[SyncNodes]
    """The sync's own pool (catalog.transfer.SYNC_POOLS): the workers select and tolerate it. Default: the
    cluster's CPU nodes."""
    avoid_node_labels: NotRequired[Mapping[str, str]]
    """Node labels the Job must not run on (the GPU pool's selector): the copy belongs on CPU nodes.
    Default: none."""
    timeout_seconds: NotRequired[int]
    """How long ``pulumi up`` waits for the Job. Default: four hours; the stacks pass the sizing's sync budget
    (1.5 x the pessimistic estimate)."""
    image: NotRequired[str]
    """Image the copier runs in (CPython 3.12: its requirements are locked for it). Default: python 3.12 slim."""


def repo_specs(model_id: str, revision: str, uri: pulumi.Input[str], draft: Optional[tuple[str, str]] = None
               ) -> list[pulumi.Output[str]]:
    """The copier's ``REPO@REVISION=DEST`` arguments: the model, and its draft model next to it."""
    specs = [pulumi.Output.from_input(uri).apply(lambda u: f"{model_id}@{revision}={u.rstrip('/')}")]
    if draft is not None:
        draft_id, draft_revision = draft
        specs.append(sibling_uri(uri, model_id, draft_id).apply(lambda u: f"{draft_id}@{draft_revision}={u}"))
    return specs


def _checked(args: WeightSyncArgs) -> tuple[Model, Optional[DraftModel], int, int]:
    """The catalog model and its draft model, the workers and their streams, once each is checked."""
    if args["model"] not in MODELS:
        raise pulumi.InputPropertyError("model", f"{args['model']!r} is not a catalog model ({', '.join(MODELS)})")
    if not args.get("revision"):
        raise pulumi.InputPropertyError("revision", "the sync copies one pinned revision; give a commit SHA")
    model = MODELS[args["model"]]
    engine = EngineName(args.get("engine") or EngineName.SGLANG)
    draft = model.draft_model_for(engine) if args.get("draft_model") else None
    if args.get("draft_model") and draft is None:
        raise pulumi.InputPropertyError("draft_model", f"{model.hf_id} has no draft model in the catalog")
    workers = int(args.get("workers") or 2)
    if not 1 <= workers <= 64:
        raise pulumi.InputPropertyError("workers", f"{workers}: between 1 and 64 workers")
    streams = int(args.get("streams") or SYNC_STREAMS_PER_WORKER)
    if not 1 <= streams <= MAX_SYNC_STREAMS_PER_WORKER:
        raise pulumi.InputPropertyError("streams", f"{streams}: between 1 and {MAX_SYNC_STREAMS_PER_WORKER}")
    return model, draft, workers, streams


def _copier(name: str, args: WeightSyncArgs, model: Model, draft: Optional[DraftModel], workers: int,
            streams: int) -> tuple[list[pulumi.Output[str]], list[str], core.ContainerArgs, list[core.VolumeArgs]]:
    """The copier's repositories, the completion markers it writes (relative to the bucket root), its container and
    volumes."""
    store = args["store"]
    draft_revision = args.get("draft_revision") or "main"
    specs = repo_specs(model.hf_id, args["revision"], store["uri"], (draft.hf_id, draft_revision) if draft else None)
    # The same markers relative to the bucket root: a server that mounts the bucket looks for them there.
    subpath = store["model_subpath"].strip("/")
    marker_keys = [f"{subpath}/{marker_key(args['revision'])}"]
    if draft:
        marker_keys.append(f"{sibling(subpath, model.hf_id, draft.hf_id)}/{marker_key(draft_revision)}")
    copier_args: list[pulumi.Input[str]] = ["sync", "--workers", str(workers), "--streams", str(streams),
                                            "--part-size", PART_SIZE, "--queue-parts", str(QUEUE_PARTS),
                                            *auth_window_args(store)]
    for spec in specs:
        copier_args += ["--repo", spec]
    token = args.get("hf_token_secret")
    secret_env = [pods.secret_env("HF_TOKEN", token, HF_TOKEN_SECRET_KEY)] if token else []
    container, volumes = copier_container("copy", copier_args, store, f"{name}-copier",
                                          worker_resources(streams), args.get("image"), secret_env)
    return specs, marker_keys, container, volumes


def _pod_template(name: str, args: WeightSyncArgs, container: core.ContainerArgs,
                  volumes: list[core.VolumeArgs]) -> core.PodTemplateSpecArgs:
    """A worker's pod: the writer's identity, on the sync's own pool or spread over the system nodes, off the GPU
    pool."""
    writer, placed = args["store"]["writer"], args.get("nodes")
    selector = pods.selector(name, "weight-sync")
    pod_labels = {**pods.labels(name, "weight-sync"), **(writer.get("pod_labels") or {})}
    return core.PodTemplateSpecArgs(
        metadata=meta.ObjectMetaArgs(labels=pod_labels),
        spec=core.PodSpecArgs(
            service_account_name=writer["name"],
            automount_service_account_token=False,
            enable_service_links=False,
            # backoffLimitPerIndex needs Never: a failed worker is replaced by a new pod, which skips
            # the files already verified in the bucket.
            restart_policy="Never",
            node_selector={"kubernetes.io/os": "linux", **(placed["node_selector"] if placed else {})},
            tolerations=pods.tolerations(placed) if placed else None,
            affinity=_affinity(args.get("avoid_node_labels") or {}, selector, own_pool=bool(placed)),
            # On shared system nodes, one worker per node where there are enough (each NIC carries one
            # share) but never a worker left waiting for a busy node: a soft spread.
            topology_spread_constraints=None if placed else [core.TopologySpreadConstraintArgs(
                max_skew=1, topology_key="kubernetes.io/hostname", when_unsatisfiable="ScheduleAnyway",
                label_selector=meta.LabelSelectorArgs(match_labels=selector))],
            security_context=pods.pod_security(RUN_AS),
            containers=[container],
            volumes=volumes,
        ),
    )


class WeightSync(pulumi.ComponentResource):
    """An Indexed Job that streams one pinned model revision (and its draft model) into the bucket, verified."""

    job_name: pulumi.Output[str]
    """Name of the Job."""
    destination: pulumi.Output[str]
    """Bucket URI the model lands at."""
    config_map_name: pulumi.Output[str]
    """The ConfigMap holding the copier (the server's marker wait runs it too)."""

    def __init__(self, name: str, args: WeightSyncArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:WeightSync", name, None, opts)
        reject_unknown(args, WeightSyncArgs)
        model, draft, workers, streams = _checked(args)
        ns, store = args["namespace"], args["store"]
        inherited = parent_depends_on(opts)
        child = child_options(self, inherited)
        config_map = copier_config_map(f"{name}-copier", ns, store, child)
        specs, marker_keys, container, volumes = _copier(name, args, model, draft, workers, streams)
        skips = dict(scan.SYNC_SKIPS)
        if args.get("hf_token_secret"):
            skips[scan.SECRET_ENV] = scan.SECRET_ENV_REASON
        timeout = int(args.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS)
        job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=meta.ObjectMetaArgs(
                name=name, namespace=ns, labels=pods.labels(name, "weight-sync"),
                annotations={"pulumi.com/timeoutSeconds": str(timeout), **scan.skip_annotations(skips)}),
            spec=k8s.batch.v1.JobSpecArgs(
                completion_mode="Indexed", completions=workers, parallelism=workers,
                backoff_limit_per_index=BACKOFF_LIMIT_PER_INDEX,
                template=_pod_template(name, args, container, volumes),
            ),
            opts=child_options(
                self, inherited, config_map,
                # A Job's template cannot change in place, and its name is fixed: replace it by deleting first.
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create=f"{timeout}s", update=f"{timeout}s")),
        )
        pods.deny_all_ingress(name, ns, "weight-sync", child)  # the pods listen on nothing
        self.specs = specs
        self.marker_keys = marker_keys
        self.config_map_literal = f"{name}-copier"
        self.job = job
        self.config_map = config_map
        self.job_name = job.metadata.apply(lambda m: m.name or name)
        self.config_map_name = config_map.metadata.apply(lambda m: m.name or f"{name}-copier")
        self.destination = pulumi.Output.from_input(store["uri"])
        self.timeout_seconds = timeout
        self.register_outputs({"job_name": self.job_name, "destination": self.destination,
                               "config_map_name": self.config_map_name})

    def marker(self) -> WeightsMarker:
        """What a server waits for: this sync's completion markers, for as long as the sync may take."""
        return WeightsMarker(config_map=self.config_map_literal, repos=list(self.specs),
                             timeout_seconds=self.timeout_seconds, marker_keys=list(self.marker_keys))


def _affinity(avoid: Mapping[str, str], selector: Mapping[str, str], own_pool: bool) -> core.AffinityArgs | None:
    """Off the nodes ``avoid`` selects; on a pool of the sync's own, one worker per node, required.

    The sizing counts one NIC per worker. A spread does not keep two workers apart while the pool has one node
    (the skew of one domain is 0), and the cluster autoscaler adds one node that fits both pending pods
    (kubernetes/autoscaler#4518: it does not weigh scheduling preferences): required anti-affinity on the
    hostname leaves the second worker pending, so the autoscaler adds a node for it (its scale-up simulation runs
    the scheduler's filters, inter-pod anti-affinity included: kubernetes/autoscaler cluster-autoscaler/simulator).
    The pool grows to one node per worker: its maximum is the sizing's sync nodes."""
    avoided = pods.avoid_nodes(avoid)
    if not own_pool:
        return avoided
    apart = core.PodAntiAffinityArgs(required_during_scheduling_ignored_during_execution=[core.PodAffinityTermArgs(
        topology_key="kubernetes.io/hostname", label_selector=meta.LabelSelectorArgs(match_labels=dict(selector)))])
    return core.AffinityArgs(node_affinity=avoided.node_affinity if avoided else None, pod_anti_affinity=apart)


def sync_args_of(cfg: StackConfig, store: WeightStore, hf_token_secret: Optional[str],
                 avoid: Mapping[str, str], nodes: Optional[SyncNodes] = None) -> WeightSyncArgs:
    """WeightSyncArgs of a validated stack: its revisions, workers, streams, the sync pool's placement and the
    sizing's sync budget."""
    assert cfg.weights.revision is not None, "config validation requires weights.revision with sync"
    assert cfg.sizing.sync is not None, "a stack that syncs has a sync estimate"
    args = WeightSyncArgs(namespace=cfg.namespace, model=cfg.model.hf_id, revision=cfg.weights.revision,
                          store=store, draft_model=cfg.speculative_decoding, engine=cfg.engine.name,
                          avoid_node_labels=dict(avoid), workers=cfg.sizing.sync.workers,
                          streams=cfg.sizing.sync.streams, timeout_seconds=cfg.sizing.sync.timeout_seconds)
    if nodes is not None:
        args["nodes"] = nodes
    if cfg.speculative_decoding and cfg.weights.draft_revision:
        args["draft_revision"] = cfg.weights.draft_revision
    if hf_token_secret:
        args["hf_token_secret"] = hf_token_secret
    return args


__all__ = ["WeightSync", "WeightSyncArgs", "repo_specs", "sync_args_of"]

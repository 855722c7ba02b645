"""How many nodes and replicas, split how: the sizing of the stack (with the engine recipe's memory fraction for the
layout it chooses) and the workload that runs a replica."""

from typing import Any, Mapping, NamedTuple

from .. import sizing as sz
from ..catalog import (
    ACCELERATORS,
    IMAGE_PRE_PULL_PLATFORMS,
    KUBERNETES_PLATFORMS,
    NOTHING_TO_CREATE,
    SYNC_POOL_PLATFORMS,
    Accelerator,
    Cloud,
    EngineName,
    Loader,
    Platform,
    Workload,
)
from ..catalog.fabric import DEFAULT_MIN_BUSBW_FRACTION
from ..catalog.recipes import VLLM_DSPARK_WITH_PIPELINE, default_memory_fraction, vllm_world_size_problems
from ..catalog.transfer import CPU_NODES, DEFAULT_CPU_NODE, SYNC_POOLS, CpuNode
from .clouds.aws import deep_health_check_seconds
from .clouds.azure import kubernetes_wait_seconds as azure_kubernetes_wait
from .clouds.azure import pool_wait_seconds as azure_pool_wait
from .engine import read_engine_cache, read_node_weights
from .model import FabricCheckConfig
from .problems import Problems
from .schema import K, MISSING, is_given


def _size(v: dict[str, Any], accel: Accelerator, model: Any, engine: Any, loader: Loader, fraction: float,
          speculative: bool, platform: Platform | None, p: Problems, warnings: list[str],
          region: str | None = None, load_format: str = "", readers: int | None = None) -> sz.Sizing | None:
    nodes, replicas = (v[k] if is_given(v[k]) else None for k in ("nodes", "replicas"))
    if v["nodes"] is MISSING or replicas is None:
        return None
    minimum, limit = sz.min_nodes(model, accel, fraction), sz.node_limit(accel)
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
    placed = _sync_placement(v, weights, accel, platform, p)
    if placed is None:
        return None
    sync_node, cpu_nodes, workers, sync_pool = placed
    tp = v["tensorParallel"] if is_given(v["tensorParallel"]) else None
    pp = v["pipelineParallel"] if is_given(v["pipelineParallel"]) else None
    if v["tensorParallel"] is MISSING or v["pipelineParallel"] is MISSING:
        return None
    try:
        result = sz.size(
            model, accel, engine,
            nodes=n, replicas=replicas, tensor_parallel=tp, pipeline_parallel=pp,
            expert_parallel=bool(v["expertParallel"]), memory_fraction=fraction, loader=loader,
            bandwidth_gbps=weights.get("bandwidthGbps") if is_given(weights.get("bandwidthGbps")) else None,
            with_draft_model=speculative, sync=bool(weights.get("sync")), sync_node=sync_node,
            sync_nodes=cpu_nodes, sync_workers=workers, sync_pool=sync_pool, region=region,
            load_format=load_format or None, readers=readers,
            bucket_ingress_gbps=_stated(weights, "bucketIngressGbps"),
            bucket_egress_gbps=_stated(weights, "bucketEgressGbps"),
            platform=sz.PlatformTerms(
                nothing_to_create=NOTHING_TO_CREATE.get(platform, "") if platform else "",
                pool_wait_seconds=azure_pool_wait(v) if accel.cloud == Cloud.AZURE else 0,
                kubernetes_wait_seconds=azure_kubernetes_wait(v) if accel.cloud == Cloud.AZURE else 0,
                image_pre_pull=platform in IMAGE_PRE_PULL_PLATFORMS,
                engine_cache=read_engine_cache(v, platform),
                node=read_node_weights(v, platform, accel, loader),
                deep_health_check_seconds=deep_health_check_seconds(v, platform),
                host_kv_offload=platform in KUBERNETES_PLATFORMS,
                fabric_check=read_fabric_check(v).enabled and platform in KUBERNETES_PLATFORMS,
            ),
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


class _SyncPlacement(NamedTuple):
    """Where the weight sync runs, as the sizing takes it."""

    node: CpuNode | None
    """The CPU node type the copy runs on (None: the catalog states none, and the stack does not sync)."""
    nodes: int
    """Nodes the copy may use: the system pool's, or the sync pool's most (one per worker)."""
    workers: int | None
    """``weights.syncWorkers`` as given (None: one per node)."""
    pool: bool
    """The copy runs on a pool of its own (catalog.transfer.SYNC_POOLS)."""


def _sync_placement(v: dict[str, Any], weights: Mapping[str, Any], accel: Accelerator, platform: Platform | None,
                    p: Problems) -> _SyncPlacement | None:
    """The sync's nodes: the platform's sync pool, else the system pool's node type; None (with the problem
    reported) when the stack syncs on a node type the catalog states no bandwidth for."""
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
    workers = weights.get("syncWorkers") if is_given(weights.get("syncWorkers")) else None
    if sync_pool is not None:
        cpu_nodes = workers or sync_pool.nodes  # the pool grows to one node per worker
    return _SyncPlacement(node=sync_node, nodes=cpu_nodes, workers=workers, pool=sync_pool is not None)


def size_group(v: dict[str, Any], accel: Accelerator, model: Any, engine: Any, loader: Loader, fraction: float,
               speculative: bool, platform: Platform | None, p: Problems, region: str | None,
               load_format: str, readers: int) -> sz.Sizing | None:
    """An aggregated replica of ``v``'s nodes, as a topology's role sizes one of its groups (its load, probe budget and
    restart); the layout left to the sizing, its warnings dropped (the topology states its own). ``readers``: every
    node of every role, which load from the bucket at once."""
    values = {**v, "tensorParallel": None, "pipelineParallel": None, "expertParallel": False}
    return _size(values, accel, model, engine, loader, fraction, speculative, platform, p, [], region, load_format,
                 readers)


def _stated(weights: Mapping[str, Any], key: str) -> float | None:
    value = weights.get(key)
    return float(value) if is_given(value) and value is not None else None


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


def read_workload(v: dict[str, Any], platform: Platform | None, nodes: int, p: Problems,
                  warnings: list[str]) -> Workload | None:
    """The workload that runs a replica: a Deployment on one node, a LeaderWorkerSet (or seed 000's StatefulSet)
    across nodes; none off Kubernetes."""
    given = v["workload"]
    if platform is not None and platform not in KUBERNETES_PLATFORMS:
        if is_given(given):
            p.add(K + "workload", f"applies to Kubernetes platforms; {platform} runs the server itself", str(given),
                  "unset")
        return None
    if not is_given(given):
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


def size_stack(v: dict[str, Any], accel: Accelerator | None, model: Any, engine: Any, loader: Loader | None,
               speculative: bool, platform: Platform | None, region: str | None, load_format: str, p: Problems,
               warnings: list[str]) -> tuple[sz.Sizing | None, float]:
    """The stack's sizing and the memory fraction it runs at: the stated fraction, else the engine recipe's for the
    layout the sizing chooses (sized again with it when the layout changes it); then vLLM's limits on that layout.
    No sizing where a value it needs was refused."""
    fraction_given = is_given(v["memoryFraction"])
    pp_given = v["pipelineParallel"] if is_given(v["pipelineParallel"]) else 1
    memory_fraction = v["memoryFraction"] if fraction_given else (
        default_memory_fraction(engine, accel, pp_given) if engine else 0.0)
    if accel is None or model is None or engine is None or loader is None:
        return None, memory_fraction
    mark = len(warnings)
    sizing = _size(v, accel, model, engine, loader, memory_fraction, speculative, platform, p, warnings, region,
                         load_format)
    # The recipe's fraction depends on the layout the sizing chose (catalog/recipes.py): size again with it.
    chosen = default_memory_fraction(engine, accel, sizing.layout.pipeline_parallel) if sizing else memory_fraction
    if sizing is not None and not fraction_given and chosen != memory_fraction:
        memory_fraction = chosen
        del warnings[mark:]
        sizing = _size(v, accel, model, engine, loader, memory_fraction, speculative, platform, p, warnings,
                             region, load_format)
    if sizing is not None and engine.name == EngineName.VLLM and speculative and sizing.layout.pipeline_parallel > 1:
        p.add(K + "speculativeDecoding", VLLM_DSPARK_WITH_PIPELINE + f"; this layout is pipeline-parallel "
              f"({sizing.layout.pipeline_parallel} stages)", "dspark", "none, or a layout without pipeline parallelism")
    if sizing is not None and engine.name == EngineName.VLLM:
        for why in vllm_world_size_problems(sizing.layout.tensor_parallel * sizing.layout.pipeline_parallel,
                                            sizing.nodes, accel.gpus_per_node):
            p.add(K + "tensorParallel", why, sizing.layout.tensor_parallel,
                  f"tensorParallel x pipelineParallel = {sizing.nodes} x {accel.gpus_per_node}")
    return sizing, memory_fraction


FABRIC_CHECK_OFF_WARNING = (
    "fabricCheck.enabled is false: nothing proves the fabric between the replica's {nodes} nodes before the weights "
    "load; a group whose NCCL falls back to sockets (a missing RDMA claim or IMEX channel, a wrong interface) loads, "
    "passes its probes and serves at a fraction of the planned speed (docs/serving.md#the-fabric-check)")


def read_fabric_check(v: dict[str, Any], sizing: sz.Sizing | None = None,
                      warnings: list[str] | None = None) -> FabricCheckConfig:
    """The ``fabricCheck`` section (its bounds are the schema's); with ``sizing``, a warning where it is turned off
    on a group that spans nodes of a Kubernetes platform."""
    f = v.get("fabricCheck")
    f = f if isinstance(f, dict) else {}
    fraction = f.get("minBusbwFraction")
    out = FabricCheckConfig(enabled=f.get("enabled") is not False,
                            min_busbw_fraction=float(fraction) if isinstance(fraction, (int, float))
                            else DEFAULT_MIN_BUSBW_FRACTION)
    if warnings is not None and sizing is not None and not out.enabled and sizing.nodes > 1:
        warnings.append(FABRIC_CHECK_OFF_WARNING.format(nodes=sizing.nodes))
    return out

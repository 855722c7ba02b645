"""The vLLM command line of one pod: 002 §3.1's canonical set, the recipe's settings, vLLM's own multi-node mode."""

import json
from typing import Sequence

from ...catalog import DraftModel, EngineName
from ...catalog.picker import KV_EVENTS_PORT, KV_EVENTS_PORT_NAME
from ...catalog.topologies import VLLM_DP_RPC_PORT
from ...catalog.recipes import (
    ENGINE_READY_TIMEOUT_ENV,
    ENGINE_READY_TIMEOUT_MIN_SECONDS,
    VLLM_DSPARK_CONFIG,
    VLLM_DSPARK_WITH_PIPELINE,
    EngineSettings,
    Flag,
    vllm_settings,
    vllm_world_size_problems,
)
from .arguments import flatten, kv_events_flags, kv_offload_flags, model_source_problems, scoped, streamer_extra_config
from .command import EngineCommand
from .cuda import cuda_driver_check
from .disaggregation import (dp_start_rank_line, side_channel_port, vllm_data_parallel_flags, vllm_role_env,
                             vllm_role_flags)
from .spec import LWS_LEADER_ADDRESS, LWS_WORKER_INDEX, STREAMER_LOAD_FORMAT, EngineSpec, Role, Source, spec_of

VLLM_MASTER_PORT = 29501
"""Port of the torch.distributed rendezvous node rank 0 opens for the other nodes (vLLM ``--master-port``,
default 29501 in vllm/config/parallel.py)."""

def vllm_launch_problems(spec: EngineSpec) -> list[str]:
    """Why vLLM (the pinned release) would refuse this replica's launch, or [] when it starts
    (catalog/recipes.py ``vllm_world_size_problems``; DSpark without pipeline parallelism)."""
    if spec.role is not None and spec.role.data_parallel:
        out = [] if spec.tensor_parallel == spec.pipeline_parallel == 1 else [
            "a data-parallel (DEP) group runs tensor and pipeline parallel 1 on every rank (recipe multi_node_dep)"]
    else:
        out = vllm_world_size_problems(spec.world_size, spec.nodes, spec.local_gpus)
    if spec.speculative_decoding and spec.pipeline_parallel > 1:
        out.append(VLLM_DSPARK_WITH_PIPELINE)
    return out + listener_problems(spec)


def pod_listeners(spec: EngineSpec) -> dict[str, tuple[int, int]]:
    """Every port range a pod of ``spec`` listens on, first and last port, across all the group's data-parallel ranks
    (a rank binds a per-rank listener's base plus its DP rank: NIXL's side channel, vllm 0.33.0
    ``nixl/base_scheduler.py`` ``side_channel_port``; the KV-events publisher, ``distributed/kv_events.py``
    ``offset_endpoint_port``). A worker's ranks start at ``--data-parallel-start-rank``, inside the group's range."""
    last = spec.data_parallel_size - 1
    out = {"http": (spec.http_port, spec.http_port)}
    if spec.http_port != spec.engine.port:
        out["sidecar"] = (spec.engine.port, spec.engine.port)
    if spec.nodes > 1:
        port = VLLM_DP_RPC_PORT if spec.role is not None and spec.role.data_parallel else VLLM_MASTER_PORT
        out["dist"] = (port, port)
    side = side_channel_port(spec)
    if side is not None:
        out["nixl"] = (side, side + last)
    if kv_events_flags(spec):
        out["kv-events"] = (KV_EVENTS_PORT, KV_EVENTS_PORT + last)
    return out


def listener_problems(spec: EngineSpec) -> list[str]:
    """Two listeners of one pod whose ranges overlap across the group's ranks (one of them would fail to bind)."""
    items = sorted(pod_listeners(spec).items(), key=lambda kv: kv[1])
    return [f"listeners {a!r} {ra[0]}..{ra[1]} and {b!r} {rb[0]}..{rb[1]} of one pod overlap across "
            f"{spec.data_parallel_size} data-parallel ranks"
            for i, (a, ra) in enumerate(items) for b, rb in items[i + 1:] if rb[0] <= ra[1]]

def vllm_command(
    cfg: Source,
    *,
    model: str,
    role: Role = Role.SINGLE,
    node_rank: str = LWS_WORKER_INDEX,
    leader_address: str = LWS_LEADER_ADDRESS,
    api_key_env: str | None = None,
    draft_model: str | None = None,
) -> EngineCommand:
    """The vLLM command of one pod.

    ``model`` is what ``vllm serve`` loads: a local path (CSI mount, bucket copy), a bucket URI (RunAI
    streamer) or the Hugging Face id. ``role`` is SINGLE on one node, else LEADER or WORKER of vLLM's own
    multi-node mode (vllm docs/serving/parallelism_scaling.md): every node runs the same ``vllm serve`` with
    ``--nnodes N --node-rank R --master-addr LEADER --master-port 29501``; the leader (rank 0) serves HTTP,
    a worker adds ``--headless``. ``node_rank`` is a worker's rank (default the LeaderWorkerSet's
    ``$(LWS_WORKER_INDEX)``) and ``leader_address`` rank 0's host (default ``$(LWS_LEADER_ADDRESS)``).
    ``api_key_env`` names an environment variable holding the API key: ``--api-key "${VAR}"`` is added, so
    the key comes from a Kubernetes Secret at start and never appears in the manifest (use ``VLLM_API_KEY``,
    which vLLM also reads on its own when the flag is absent). ``draft_model`` is the DSpark draft's path,
    required when the spec enables speculative decoding.

    The flags are 002 §3.1's canonical set in its order: ``--trust-remote-code``, ``--load-format``,
    ``--enable-prefix-caching``, ``--enable-auto-tool-choice``, ``--tool-call-parser`` and
    ``--reasoning-parser`` (the model's, ``kimi_k3``), ``--served-model-name``, ``--moe-backend auto``,
    ``--tensor-parallel-size``, ``--no-enable-flashinfer-autotune``, ``--port``; then what the sizing adds
    (``--pipeline-parallel-size``, ``--enable-expert-parallel``), the memory fraction the sizing assumed
    (``--gpu-memory-utilization``), the streamer's extra config, DSpark's ``--speculative-config``, and the
    recipe's settings for the layout and the GPU generation (catalog/recipes.py; a flag they set again
    replaces the canonical value in place). Raises ValueError when vLLM would refuse the launch
    (``vllm_launch_problems``).
    """
    spec = spec_of(cfg)
    draft = _checked(spec, model, role, draft_model)
    settings = vllm_settings(spec.accelerator, spec.pipeline_parallel)
    flags = _canonical_flags(spec) + _sized_flags(spec, draft, draft_model)
    for s in settings:
        flags += [f for f in s.flags if f[0] != "--gpu-memory-utilization"]
    flags += vllm_role_flags(spec)
    data_parallel = spec.role is not None and spec.role.data_parallel
    flags += (vllm_data_parallel_flags(spec, role, leader_address) if data_parallel
              else _multi_node_flags(spec, role, node_rank, leader_address))
    if spec.role is not None:
        flags = _negated(flags)
    serves = role != Role.WORKER or data_parallel
    if api_key_env and serves:
        flags.append(("--api-key", f"${{{api_key_env}}}"))
    # issue 38, the gateway's picker: KV events and the render endpoint on the HTTP ranks (arguments.kv_events_flags)
    events = kv_events_flags(spec) if serves else []
    flags += events + kv_offload_flags(spec)
    env, left_off = scoped(spec, {**_vllm_env(spec, settings), **vllm_role_env(spec)})
    ports = _ports(spec, role)
    ports.update({KV_EVENTS_PORT_NAME: KV_EVENTS_PORT} if events else {})
    return EngineCommand(engine=EngineName.VLLM, role=role, program=["vllm", "serve"],
                         args=[model, *flatten(flags)], env=env,
                         before=[*cuda_driver_check(spec.engine), *dp_start_rank_line(spec, role)],
                         port=spec.http_port if serves else 0, extra_ports=ports, left_off=left_off)


def _negated(flags: list[Flag]) -> list[Flag]:
    """The flags without those a later ``--no-...`` turns off (a role's ``--no-enable-prefix-caching`` replaces the
    canonical ``--enable-prefix-caching`` rather than following it)."""
    off = {"--" + f[0][len("--no-"):] for f in flags if f[0].startswith("--no-")}
    return [f for f in flags if f[0] not in off]


def _ports(spec: EngineSpec, role: Role) -> dict[str, int]:
    """The ports other pods reach on this one: the rendezvous (or the DP RPC) on a group's leader, NIXL's side
    channel on every pod of a disaggregated role."""
    out: dict[str, int] = {}
    if role == Role.LEADER:
        data_parallel = spec.role is not None and spec.role.data_parallel
        out["dist"] = VLLM_DP_RPC_PORT if data_parallel else VLLM_MASTER_PORT
    side = side_channel_port(spec)
    if side is not None:
        out["nixl"] = side
    return out


def _checked(spec: EngineSpec, model: str, role: Role, draft_model: str | None) -> DraftModel | None:
    """The model's vLLM draft model where the spec decodes speculatively; ValueError, every problem at once, where
    the engine, the role or the launch is wrong (``vllm_launch_problems``, the model source, a missing draft)."""
    if spec.engine.name != EngineName.VLLM:
        raise ValueError(f"vllm_command needs engine vllm, got {spec.engine.name}")
    multi = spec.nodes > 1
    if multi and role == Role.SINGLE:
        raise ValueError(f"a replica on {spec.nodes} nodes runs a leader and workers, not a single pod")
    if not multi and role != Role.SINGLE:
        raise ValueError(f"a replica on one node runs role single, not {role}")
    problems = vllm_launch_problems(spec) + model_source_problems(spec, model)
    draft = spec.model.draft_model_for(EngineName.VLLM)
    if spec.speculative_decoding and (draft is None or not draft_model):
        problems.append("speculative decoding (DSpark) needs the model's vLLM draft model and its path")
    if problems:
        raise ValueError("; ".join(problems))
    return draft if spec.speculative_decoding else None


def _canonical_flags(spec: EngineSpec) -> list[Flag]:
    """002 §3.1's canonical set, in its order."""
    m = spec.model
    return [
        ("--trust-remote-code",),
        ("--load-format", spec.load_format),
        ("--enable-prefix-caching",),
        ("--enable-auto-tool-choice",),
        ("--tool-call-parser", m.tool_call_parser),
        ("--reasoning-parser", m.reasoning_parser),
        ("--served-model-name", m.served_model_name),
        ("--moe-backend", "auto"),
        ("--tensor-parallel-size", str(spec.tensor_parallel)),
        ("--no-enable-flashinfer-autotune",),
        ("--port", str(spec.engine.port)),
    ]


def _sized_flags(spec: EngineSpec, draft: DraftModel | None, draft_model: str | None) -> list[Flag]:
    """What the sizing adds (pipeline and expert parallelism, the memory fraction it assumed), the streamer's extra
    config, and DSpark's ``--speculative-config`` with ``draft`` at ``draft_model`` (``draft`` None: no speculative
    decoding)."""
    flags: list[Flag] = []
    if spec.pipeline_parallel > 1:
        flags.append(("--pipeline-parallel-size", str(spec.pipeline_parallel)))
    if spec.expert_parallel > 1:
        flags.append(("--enable-expert-parallel",))
    flags.append(("--gpu-memory-utilization", f"{spec.memory_fraction:g}"))
    if spec.load_format == STREAMER_LOAD_FORMAT:
        flags.append(("--model-loader-extra-config", streamer_extra_config(spec)))
    if draft is not None:
        assert draft_model is not None
        config = {"model": draft_model, "method": draft.algorithm, "num_speculative_tokens": draft.block_size,
                  **VLLM_DSPARK_CONFIG}
        flags.append(("--speculative-config", json.dumps(config, separators=(",", ":"))))
    return flags


def _multi_node_flags(spec: EngineSpec, role: Role, node_rank: str, leader_address: str) -> list[Flag]:
    """vLLM's own multi-node mode for a replica on several nodes: the leader is rank 0, a worker runs headless."""
    if spec.nodes <= 1:
        return []
    rank = "0" if role == Role.LEADER else node_rank
    flags: list[Flag] = [("--nnodes", str(spec.nodes)), ("--node-rank", rank), ("--master-addr", leader_address),
                         ("--master-port", str(VLLM_MASTER_PORT))]
    if role == Role.WORKER:
        flags.append(("--headless",))
    return flags


def _vllm_env(spec: EngineSpec, settings: Sequence[EngineSettings]) -> dict[str, str]:
    """The model's variables, the recipe's for the layout and hardware, and the engine's readiness timeout
    covering the start-up budget (NCCL's multi-node NVLink variables come with the channel claim, serving/dra.py)."""
    env = dict(spec.model.vllm_env)
    for s in settings:
        env.update(s.env)
    env[ENGINE_READY_TIMEOUT_ENV] = str(max(ENGINE_READY_TIMEOUT_MIN_SECONDS, spec.startup_budget_seconds))
    env.update(spec.streamer_env)
    return env

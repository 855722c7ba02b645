"""Engine command lines: pure functions from the stack configuration (and its sizing) to argv and environment.

Two engines, each with the argument set its seed gives, nothing K3-specific left to the caller:

- vLLM: the canonical set of 002 §3.1 (reused in §4.4, §5.4, §6.2, §6.3), then the Kimi K3 recipe's settings
  for the GPU generation and layout (k3infra/catalog/recipes.py), pipeline/expert parallelism where the
  sizing says so, the RunAI streamer's extra config where the weights are streamed (docs/catalog-research.md
  §2.3), and, for a replica that spans nodes, vLLM's own multi-node mode (``--nnodes``/``--node-rank``/
  ``--master-addr``, workers ``--headless``; vllm docs/serving/parallelism_scaling.md "Running vLLM with
  MultiProcessing"). 002 §4.4's Ray pattern no longer starts: since vLLM 0.12 (vllm-project/vllm#25775) a
  world size above the node's GPUs needs ``--distributed-executor-backend ray`` or ``--nnodes``
  (vllm/config/parallel.py L1066-1076 in 0.33.0), and the 0.33.0 wheel does not depend on Ray, so nothing
  proves an image ships it; the multiprocessing mode needs nothing beyond vLLM itself.
- SGLang: the full argument set and environment of seed 000's manifest (TP over nodes with
  ``--dist-init-addr``/``--nnodes``/``--node-rank``, DSPARK speculative decoding with its draft model, the
  RunAI streamer with its memory limit, the watchdog, the Mamba memory ratio, CUDA graph batch size...).

Managed serving (HyperPod, PAI-EAS) builds its command line here too (``EngineCommand.api_server_args``),
so the K3 parsers and the recipe's settings cannot be dropped on any platform. Every command line is run
through the pinned release's own parser by tests/engines.

Nothing here imports Pulumi: the functions are tested argument by argument (tests/serving/test_engine.py).
"""

import json
import re
import shlex
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Sequence, Union

from ..catalog import ENGINES, MODELS, Accelerator, Engine, EngineName, Model, ModelSource
from ..catalog import distribution
from ..catalog.recipes import (
    ENGINE_READY_TIMEOUT_ENV,
    ENGINE_READY_TIMEOUT_MIN_SECONDS,
    VLLM_DSPARK_CONFIG,
    VLLM_DSPARK_WITH_PIPELINE,
    EngineSettings,
    Flag,
    default_memory_fraction,
    env_applies,
    sglang_settings,
    vllm_settings,
    vllm_world_size_problems,
)
from ..catalog.cuda import CUDA_MAJOR_MIN_DRIVER, driver_cuda_major, needs_forward_compatibility
from ..config import StackConfig

VLLM_MASTER_PORT = 29501
"""Port of the torch.distributed rendezvous node rank 0 opens for the other nodes (vLLM ``--master-port``,
default 29501 in vllm/config/parallel.py)."""

LWS_LEADER_ADDRESS = "$(LWS_LEADER_ADDRESS)"
"""Address of the group's leader the LeaderWorkerSet injects into every container (002 §4.4)."""

LWS_WORKER_INDEX = "$(LWS_WORKER_INDEX)"
"""Index of the pod in its group (0 = leader) the LeaderWorkerSet injects into every container."""

SGLANG_DIST_PORT = 20000
"""Port of SGLang's multi-node rendezvous (000: ``--dist-init-addr sglang-master-pod-k3:20000``)."""

STREAMER_CONCURRENCY = 16
"""RunAI streamer reader threads (000: ``RUNAI_STREAMER_CONCURRENCY=16``): the spec's default; a stack's come from its
sizing (catalog.loaders.streamer_concurrency: the node's NIC and the bucket's egress)."""

STREAMER_MEMORY_LIMIT = 34_359_738_368
"""RunAI streamer CPU buffer in bytes, 32 GiB (000: ``RUNAI_STREAMER_MEMORY_LIMIT`` and
``--model-loader-extra-config '{"memory_limit": 34359738368}'``): the spec's default, which runai-model-streamer
0.17.1 reads as the node's total (catalog.loaders.STREAMER_MEMORY_LIMIT_SOURCE); a stack's comes from its sizing
(catalog.loaders.streamer_memory_limit: an eighth of the node's memory, at most 32 GiB a rank)."""

SGLANG_WATCHDOG_TIMEOUT = 3600
"""000: ``--watchdog-timeout 3600`` (a forward pass of a 2.8T MoE over two nodes can be slow at start)."""

SGLANG_MAMBA_FULL_MEMORY_RATIO = 0.43
"""000: ``--mamba-full-memory-ratio 0.43`` (Kimi Delta Attention keeps recurrent state)."""

SGLANG_MAX_RUNNING_REQUESTS = 512
"""000: ``--max-running-requests 512``."""

SGLANG_CUDA_GRAPH_MAX_BS = 512
"""000: ``--cuda-graph-max-bs 512``, the decode batch it captures. SGLang 0.5.23 splits the option into
``--cuda-graph-max-bs-decode`` and ``--cuda-graph-max-bs-prefill`` (sglang/srt/arg_groups/fields/exec_.py),
so 000's prefix is ambiguous there (argparse exits 2): k3infra passes the decode one."""

SGLANG_ENV: dict[str, str] = {  # catalog/recipes.py IGNORED_ENV: SAFETENSORS_FAST_GPU is kept for the day-0 image
    "SGLANG_REQUEST_STATE_WAIT_TIMEOUT": "18000",
    "OMP_NUM_THREADS": "24",
    "SGLANG_SET_CPU_AFFINITY": "1",
    "SAFETENSORS_FAST_GPU": "1",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
}
"""The environment of 000's container that does not depend on the load format."""

SGLANG_STREAMER_ENV: dict[str, str] = {
    "RUNAI_STREAMER_MEMORY_LIMIT": str(STREAMER_MEMORY_LIMIT),
    "RUNAI_STREAMER_CONCURRENCY": str(STREAMER_CONCURRENCY),
    "SGLANG_USE_RUNAI_MODEL_STREAMER": "true",  # kept for the day-0 image (catalog/recipes.py IGNORED_ENV)
}
"""000's environment for ``--load-format runai_streamer`` (the spec's streamer settings replace the first two)."""


def sglang_streamer_env(spec: "EngineSpec") -> dict[str, str]:
    """SGLANG_STREAMER_ENV with the spec's streamer concurrency and memory limit, and its distribution settings."""
    return {**SGLANG_STREAMER_ENV, "RUNAI_STREAMER_MEMORY_LIMIT": str(spec.streamer_memory_limit),
            "RUNAI_STREAMER_CONCURRENCY": str(spec.streamer_concurrency), **spec.streamer_env}

STREAMER_LOAD_FORMAT = distribution.STREAMER_FORMAT


class Role(StrEnum):
    """What one pod of a replica runs."""

    SINGLE = "single"
    """The whole replica on one node: the engine alone."""
    LEADER = "leader"
    """Node 0 of a multi-node replica: rank 0 of the engine's distributed group, and the HTTP server."""
    WORKER = "worker"
    """Any other node: a rank > 0 (vLLM ``--headless``, SGLang ``--node-rank``); no HTTP server."""


@dataclass(frozen=True)
class EngineSpec:
    """What the command lines depend on: the model, the engine, the hardware and the layout the sizing chose.

    Built from a StackConfig (``EngineSpec.of``) or directly, for components used outside a k3infra stack.
    """

    model: Model
    engine: Engine
    load_format: str
    memory_fraction: float
    nodes: int
    tensor_parallel: int
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    """Expert-parallel group size; 1 when expert parallelism is off (sizing.Layout)."""
    speculative_decoding: bool = False
    """DSPARK with the engine's draft model (SGLang: 000; vLLM: the recipe's ``--speculative-config``)."""
    gpus_per_node: int = 0
    """GPUs of one node (each pod takes them all). 0: tensor x pipeline parallel / nodes."""
    accelerator: Accelerator | None = None
    """The machine type, where known: its GPU generation picks the recipe's settings. None: the canonical
    flags alone."""
    startup_budget_seconds: int = 0
    """The sizing's start-up budget; the engine's own readiness timeout is raised to it where it is longer."""
    model_source: ModelSource = ModelSource.LOCAL
    """What the model argument names (the loader's ``Loader.model_source``): the recipe's variables that do not
    work with it are left off (catalog/recipes.py ``ENV_SCOPE``)."""
    streamer_concurrency: int = STREAMER_CONCURRENCY
    """RunAI streamer reader threads per rank (the sizing's, ``LoadEstimate.streamer_concurrency``)."""
    streamer_memory_limit: int = STREAMER_MEMORY_LIMIT
    """RunAI streamer CPU buffer of the node's ranks together, in bytes (the sizing's,
    ``LoadEstimate.streamer_memory_limit``)."""

    @property
    def world_size(self) -> int:
        """Ranks of one replica: tensor x pipeline parallel."""
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def streamer_env(self) -> dict[str, str]:
        """The RunAI streamer's distribution settings (catalog.distribution.streamer_env): every rank of a replica on
        several nodes splits one copy of the checkpoint, by whole files where the model is a mounted path. Empty off
        the streamer or on one node."""
        if self.load_format != STREAMER_LOAD_FORMAT or not distribution.streamer_distributed(self.world_size):
            return {}
        return distribution.streamer_env(self.nodes, self.model_source == ModelSource.LOCAL)

    @property
    def local_gpus(self) -> int:
        """GPUs one node contributes."""
        return self.gpus_per_node or max(1, self.world_size // max(1, self.nodes))

    @staticmethod
    def of(cfg: StackConfig) -> "EngineSpec":
        """The spec of a validated stack: its model, engine, machine, load format and the sizing's layout."""
        ly = cfg.sizing.layout
        return EngineSpec(
            model=cfg.model,
            engine=cfg.engine,
            load_format=cfg.load_format,
            memory_fraction=cfg.memory_fraction,
            nodes=cfg.nodes,
            tensor_parallel=ly.tensor_parallel,
            pipeline_parallel=ly.pipeline_parallel,
            expert_parallel=ly.expert_parallel,
            speculative_decoding=cfg.speculative_decoding,
            gpus_per_node=cfg.accelerator.gpus_per_node,
            accelerator=cfg.accelerator,
            startup_budget_seconds=cfg.sizing.probe_budget_seconds,
            model_source=cfg.weights.loader.model_source,
            streamer_concurrency=cfg.sizing.load.streamer_concurrency or STREAMER_CONCURRENCY,
            streamer_memory_limit=cfg.sizing.load.streamer_memory_limit or STREAMER_MEMORY_LIMIT,
        )

    @staticmethod
    def named(model_id: str, engine: EngineName, *, nodes: int, tensor_parallel: int, pipeline_parallel: int = 1,
              expert_parallel: int = 1, load_format: str | None = None, memory_fraction: float | None = None,
              speculative_decoding: bool = False, accelerator: Accelerator | None = None,
              startup_budget_seconds: int = 0, model_source: ModelSource = ModelSource.LOCAL) -> "EngineSpec":
        """A spec from catalog names (the Hugging Face id and the engine name); the engine's defaults fill in
        the load format and memory fraction (the recipe's for the accelerator's GPU generation)."""
        e = ENGINES[engine]
        return EngineSpec(model=MODELS[model_id], engine=e, load_format=load_format or e.default_load_format,
                          memory_fraction=memory_fraction or default_memory_fraction(e, accelerator, pipeline_parallel),
                          nodes=nodes, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
                          expert_parallel=expert_parallel, speculative_decoding=speculative_decoding,
                          gpus_per_node=accelerator.gpus_per_node if accelerator else 0, accelerator=accelerator,
                          startup_budget_seconds=startup_budget_seconds, model_source=model_source)


def vllm_launch_problems(spec: EngineSpec) -> list[str]:
    """Why vLLM (the pinned release) would refuse this replica's launch, or [] when it starts
    (catalog/recipes.py ``vllm_world_size_problems``; DSpark without pipeline parallelism)."""
    out = vllm_world_size_problems(spec.world_size, spec.nodes, spec.local_gpus)
    if spec.speculative_decoding and spec.pipeline_parallel > 1:
        out.append(VLLM_DSPARK_WITH_PIPELINE)
    return out


Source = Union[StackConfig, EngineSpec]


def _spec(source: Source) -> EngineSpec:
    return source if isinstance(source, EngineSpec) else EngineSpec.of(source)


_SAFE = re.compile(r"[A-Za-z0-9_./:=,+@%-]+")


def shell_word(token: str) -> str:
    """Quote one argument for bash, keeping ``$VAR``/``${VAR}`` (shell) and ``$(VAR)`` (kubelet) references live.

    The kubelet expands ``$(VAR)`` in container args before bash runs (002 §4.4 relies on it for the
    LeaderWorkerSet's ``$(LWS_LEADER_ADDRESS)``); a token with ``$`` is double-quoted so bash still expands ``${POD_INDEX}``.
    """
    if _SAFE.fullmatch(token):
        return token
    if "$" in token:
        return '"' + token.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'
    return shlex.quote(token)


@dataclass(frozen=True)
class EngineCommand:
    """One container's engine invocation: the program, its arguments, its environment, what runs first."""

    engine: EngineName
    role: Role
    program: list[str]
    """``["vllm", "serve"]`` or ``["sglang", "serve"]``."""
    args: list[str]
    """Arguments after the program: for vLLM the model first (positional), then the flags; for SGLang the
    flags, ``--model-path`` among them."""
    env: dict[str, str]
    """Environment of the engine: the recipe's and the seeds' (catalog/recipes.py ``IGNORED_ENV`` lists the
    seeds' variables the pinned release no longer reads, kept for the day-0 images)."""
    before: list[str] = field(default_factory=list)
    """Shell lines run before the engine."""
    port: int = 0
    """The HTTP port the engine serves on (0 when this role serves no HTTP)."""
    extra_ports: dict[str, int] = field(default_factory=dict)
    """Other ports the group's pods reach on this one (the distributed rendezvous), by name."""
    left_off: tuple[str, ...] = ()
    """The recipe's variables not set because they do not work with the spec's model source or load format
    (catalog/recipes.py ``ENV_SCOPE``)."""

    @property
    def serves_http(self) -> bool:
        """True for the pod that answers ``/health`` and ``/v1/...``."""
        return self.port != 0

    @property
    def argv(self) -> list[str]:
        """The full command: program and arguments."""
        return [*self.program, *self.args]

    @property
    def flags(self) -> list[str]:
        """The arguments without vLLM's positional model."""
        if self.engine == EngineName.VLLM and self.args and not self.args[0].startswith("-"):
            return self.args[1:]
        return list(self.args)

    def api_server_args(self) -> list[str]:
        """Arguments for an image whose entrypoint is the OpenAI server itself (HyperPod's ``worker.args``,
        002 §3.1): ``--model MODEL`` followed by the flags."""
        if self.engine != EngineName.VLLM or not self.program:
            raise ValueError("api_server_args applies to a vLLM engine command")
        return ["--model", self.args[0], *self.flags]

    def script(self, setup: Sequence[str] = ()) -> str:
        """The bash script a container runs (``command: [/bin/bash, -c]``): ``setup`` lines (the pool's
        driver and NCCL preparation, 000), the lines to run first, then ``exec`` the engine.

        No ``set -x``: it would print the API key the engine reads from its environment.
        """
        lines = ["set -eo pipefail", *setup, *self.before]
        if self.program:
            lines.append("exec " + " ".join(shell_word(t) for t in self.argv))
        return "\n".join(lines) + "\n"


def by_pod_index(leader: EngineCommand, worker: EngineCommand, setup: Sequence[str] = (),
                 index_env: str = "POD_INDEX") -> str:
    """One script for every pod of a StatefulSet (000's pattern), choosing the role by the pod's index."""
    lead = leader.script().splitlines()[1:]
    work = worker.script().splitlines()[1:]
    body = [
        "set -eo pipefail",
        *setup,
        f'if [ "${{{index_env}}}" = "0" ]; then',
        *("  " + x for x in lead),
        "else",
        *("  " + x for x in work),
        "fi",
    ]
    return "\n".join(body) + "\n"


def streamer_extra_config(spec: EngineSpec) -> str:
    """``--model-loader-extra-config`` for the RunAI streamer, vLLM's and SGLang's alike: only the keys both
    accept (``concurrency``, ``memory_limit``, ``distributed``; anything else raises "Unexpected extra config keys
    for runai_streamer", docs/catalog-research.md §2.3; sglang 0.5.23 srt/model_loader/loader.py
    RunaiModelStreamerLoader ``allowed_keys``), with the spec's concurrency and memory limit (000's 16 and
    32 GiB unless the sizing derived others);
    ``distributed`` streams each rank's shard when the replica spans several GPUs. It is set, not left to the
    engine: SGLang turns it on by itself only for object-store URLs (loader.py, ``self._is_distributed =
    is_object_storage_path``), so over a FUSE path every rank would read the whole checkpoint, four times what
    the sizing's per-node share assumes on A4X (the independent review of gcp-a4x-sglang, M1). The streamer itself
    distributes local files as well (runai-model-streamer 0.17.1 distributed_streamer.py ``set_is_distributed``:
    conditions on torch.distributed, NCCL and device memory, none on the path). ``distributed`` alone splits the reads
    among ONE node's ranks; across the nodes of a replica it takes ``RUNAI_STREAMER_DIST_GLOBAL=1`` in the
    environment (``EngineSpec.streamer_env``, catalog.distribution)."""
    config: dict[str, object] = {"concurrency": spec.streamer_concurrency, "memory_limit": spec.streamer_memory_limit}
    if distribution.streamer_distributed(spec.world_size):
        config["distributed"] = True
    return json.dumps(config, separators=(",", ":"))


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
    spec = _spec(cfg)
    if spec.engine.name != EngineName.VLLM:
        raise ValueError(f"vllm_command needs engine vllm, got {spec.engine.name}")
    multi = spec.nodes > 1
    if multi and role == Role.SINGLE:
        raise ValueError(f"a replica on {spec.nodes} nodes runs a leader and workers, not a single pod")
    if not multi and role != Role.SINGLE:
        raise ValueError(f"a replica on one node runs role single, not {role}")
    problems = vllm_launch_problems(spec) + _model_source_problems(spec, model)
    draft = spec.model.draft_model_for(EngineName.VLLM)
    if spec.speculative_decoding and (draft is None or not draft_model):
        problems.append("speculative decoding (DSpark) needs the model's vLLM draft model and its path")
    if problems:
        raise ValueError("; ".join(problems))
    m = spec.model
    settings = vllm_settings(spec.accelerator, spec.pipeline_parallel)
    flags: list[Flag] = [
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
    if spec.pipeline_parallel > 1:
        flags.append(("--pipeline-parallel-size", str(spec.pipeline_parallel)))
    if spec.expert_parallel > 1:
        flags.append(("--enable-expert-parallel",))
    flags.append(("--gpu-memory-utilization", f"{spec.memory_fraction:g}"))
    if spec.load_format == STREAMER_LOAD_FORMAT:
        flags.append(("--model-loader-extra-config", streamer_extra_config(spec)))
    if spec.speculative_decoding:
        assert draft is not None and draft_model is not None
        config = {"model": draft_model, "method": draft.algorithm, "num_speculative_tokens": draft.block_size,
                  **VLLM_DSPARK_CONFIG}
        flags.append(("--speculative-config", json.dumps(config, separators=(",", ":"))))
    for s in settings:
        flags += [f for f in s.flags if f[0] != "--gpu-memory-utilization"]
    if multi:
        rank = "0" if role == Role.LEADER else node_rank
        flags += [("--nnodes", str(spec.nodes)), ("--node-rank", rank), ("--master-addr", leader_address),
                  ("--master-port", str(VLLM_MASTER_PORT))]
        if role == Role.WORKER:
            flags.append(("--headless",))
    if api_key_env and role != Role.WORKER:
        flags.append(("--api-key", f"${{{api_key_env}}}"))
    env, left_off = _scoped(spec, _vllm_env(spec, settings))
    serves = role != Role.WORKER
    return EngineCommand(engine=EngineName.VLLM, role=role, program=["vllm", "serve"],
                         args=[model, *_flatten(flags)], env=env, before=cuda_driver_check(spec.engine),
                         port=spec.engine.port if serves else 0,
                         extra_ports={"dist": VLLM_MASTER_PORT} if role == Role.LEADER else {}, left_off=left_off)


def _model_source_problems(spec: EngineSpec, model: str) -> list[str]:
    """A concrete model argument (not a ``${VAR}`` the pod fills in) is an object-store URI exactly when the spec
    says so: the engine's variables are chosen for the spec's source (``ENV_SCOPE``), and only an object store
    narrows them."""
    store = ModelSource.OBJECT_STORE
    if "$" in model or (ModelSource.of(model) == store) == (spec.model_source == store):
        return []
    return [f"model {model!r} is given as {ModelSource.of(model)}, but the spec's model source is {spec.model_source}"]


def _scoped(spec: EngineSpec, env: dict[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The variables that work with the spec's model source and load format, and the names of those left off
    (catalog/recipes.py ``ENV_SCOPE``; every variable an engine command sets is listed there)."""
    name = spec.engine.name
    kept = {k: v for k, v in env.items() if env_applies(name, k, spec.model_source, spec.load_format)}
    return kept, tuple(k for k in env if k not in kept)


def _flatten(flags: Sequence[Flag]) -> list[str]:
    """Flags in order of first appearance, each with the value it was given last (the recipe's last-wins)."""
    merged: dict[str, Flag] = {}
    for f in flags:
        merged[f[0]] = f
    return [token for f in merged.values() for token in f]


def _flags(args: Sequence[str]) -> list[Flag]:
    """``args`` as flags, each with the value that follows it (a token not starting with ``--`` is a value)."""
    out: list[Flag] = []
    for a in args:
        if a.startswith("--") or not out:
            out.append((a,))
        else:
            out[-1] = (*out[-1], a)
    return out


def _multi_node_nvlink(spec: EngineSpec) -> bool:
    """True when the replica's tensor parallelism spans nodes of one NVLink domain (sizing: multi-node NVLink)."""
    acc = spec.accelerator
    return bool(acc and acc.nvlink_spans_nodes and spec.nodes > 1 and spec.tensor_parallel > acc.gpus_per_node)


def _vllm_env(spec: EngineSpec, settings: Sequence[EngineSettings]) -> dict[str, str]:
    """The model's variables, the recipe's for the layout and hardware, and the engine's readiness timeout
    covering the start-up budget (NCCL's multi-node NVLink variables come with the channel claim, serving/dra.py)."""
    env = dict(spec.model.vllm_env)
    for s in settings:
        env.update(s.env)
    env[ENGINE_READY_TIMEOUT_ENV] = str(max(ENGINE_READY_TIMEOUT_MIN_SECONDS, spec.startup_budget_seconds))
    env.update(spec.streamer_env)
    return env


def sglang_command(
    cfg: Source,
    *,
    model: str,
    node_rank: str = "0",
    dist_init_addr: str | None = None,
    draft_model: str | None = None,
    api_key_env: str | None = None,
) -> EngineCommand:
    """The SGLang command of one pod: 000's argument set and environment.

    ``model`` is the ``--model-path`` (000: ``/bucket/Kimi-K3`` on the GCS FUSE mount). For a replica on
    several nodes ``dist_init_addr`` is HOST:PORT of rank 0 (000: the headless Service
    ``sglang-master-pod-k3:20000``) and ``node_rank`` this pod's rank (000: ``$POD_INDEX``; a
    LeaderWorkerSet gives ``$(LWS_WORKER_INDEX)``). ``draft_model`` is the DSPARK draft model's path, required
    when the stack enables speculative decoding. ``api_key_env`` names an environment variable holding the
    API key (the flag reads it at start, so the key never appears in the manifest).

    Flags, in 000's order: ``--trust-remote-code``, ``--model-path``, ``--served-model-name``,
    ``--load-format``, ``--enable-metrics``, ``--tp-size``, [``--nnodes``, ``--node-rank``,
    ``--dist-init-addr``], ``--mem-fraction-static``, ``--disable-flashinfer-autotune``,
    ``--watchdog-timeout 3600``, ``--reasoning-parser`` and ``--tool-call-parser`` (``kimi_k3``),
    [``--model-loader-extra-config '{"memory_limit": 34359738368}'``], ``--mamba-full-memory-ratio 0.43``,
    ``--host 0.0.0.0``, ``--port``, [``--speculative-algorithm DSPARK``, ``--speculative-draft-model-path``,
    ``--speculative-dspark-block-size 7``, ``--enable-linear-replayssm-spec``], ``--max-running-requests
    512``, ``--cuda-graph-max-bs-decode 512`` (000's ``--cuda-graph-max-bs``, split in 0.5.23). Bracketed groups apply to several nodes, the streamer load format
    and speculative decoding respectively; ``--pp-size``/``--ep-size`` are added where the sizing asks. Where the
    tensor parallelism spans an NVLink domain's nodes, the recipe for that GPU model and size replaces or adds its
    flags (catalog/recipes.py ``SGLANG_MNNVL_RECIPES``: GB200 at TP=16, ``--dcp-size 16``,
    ``--mamba-full-memory-ratio 7.21``, ``--dist-timeout 3600``).

    Environment (000): ``SGLANG_REQUEST_STATE_WAIT_TIMEOUT=18000``, ``OMP_NUM_THREADS=24``,
    ``SGLANG_SET_CPU_AFFINITY=1``, ``SAFETENSORS_FAST_GPU=1``,
    ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` and, with the streamer,
    ``RUNAI_STREAMER_MEMORY_LIMIT``, ``RUNAI_STREAMER_CONCURRENCY=16``, ``SGLANG_USE_RUNAI_MODEL_STREAMER=true``.

    Deviation from 000: ``--served-model-name`` is the catalog's name (``Kimi-K3``, as 002 §3.1 serves it)
    rather than 000's ``moonshotai/Kimi-K3``, so clients use one name whatever the engine.
    """
    spec = _spec(cfg)
    if spec.engine.name != EngineName.SGLANG:
        raise ValueError(f"sglang_command needs engine sglang, got {spec.engine.name}")
    m = spec.model
    multi = spec.nodes > 1
    if multi and not dist_init_addr:
        raise ValueError(f"a replica on {spec.nodes} nodes needs dist_init_addr (rank 0's HOST:PORT, 000)")
    sglang_draft = m.draft_model_for(EngineName.SGLANG)
    if spec.speculative_decoding and (sglang_draft is None or not draft_model):
        raise ValueError("speculative decoding (DSPARK, 000) needs the draft model's path")
    if _model_source_problems(spec, model):
        raise ValueError("; ".join(_model_source_problems(spec, model)))
    args = [
        "--trust-remote-code",
        "--model-path", model,
        "--served-model-name", m.served_model_name,
        "--load-format", spec.load_format,
        "--enable-metrics",
        "--tp-size", str(spec.tensor_parallel),
    ]
    if spec.pipeline_parallel > 1:
        args += ["--pp-size", str(spec.pipeline_parallel)]
    if spec.expert_parallel > 1:
        args += ["--ep-size", str(spec.expert_parallel)]
    if multi:
        assert dist_init_addr is not None
        args += ["--nnodes", str(spec.nodes), "--node-rank", node_rank, "--dist-init-addr", dist_init_addr]
    args += [
        "--mem-fraction-static", f"{spec.memory_fraction:g}",
        "--disable-flashinfer-autotune",
        "--watchdog-timeout", str(SGLANG_WATCHDOG_TIMEOUT),
        "--reasoning-parser", m.reasoning_parser,
        "--tool-call-parser", m.tool_call_parser,
    ]
    streamer = spec.load_format == STREAMER_LOAD_FORMAT
    if streamer:
        args += ["--model-loader-extra-config", streamer_extra_config(spec)]
    args += [
        "--mamba-full-memory-ratio", f"{SGLANG_MAMBA_FULL_MEMORY_RATIO:g}",
        "--host", "0.0.0.0",
        "--port", str(spec.engine.port),
    ]
    if spec.speculative_decoding:
        assert sglang_draft is not None and draft_model is not None
        args += [
            "--speculative-algorithm", sglang_draft.algorithm,
            "--speculative-draft-model-path", draft_model,
            "--speculative-dspark-block-size", str(sglang_draft.block_size),
            "--enable-linear-replayssm-spec",
        ]
    args += [
        "--max-running-requests", str(SGLANG_MAX_RUNNING_REQUESTS),
        "--cuda-graph-max-bs-decode", str(SGLANG_CUDA_GRAPH_MAX_BS),
    ]
    for s in sglang_settings(spec.accelerator, spec.tensor_parallel, _multi_node_nvlink(spec)):
        args = _flatten([*_flags(args), *s.flags])
    if api_key_env:
        args += ["--api-key", f"${{{api_key_env}}}"]
    env = dict(SGLANG_ENV)
    if streamer:
        env.update(sglang_streamer_env(spec))
    env, left_off = _scoped(spec, env)
    # Only rank 0 answers HTTP. A rank chosen at run time (000's $POD_INDEX) counts as a worker here: the
    # same command runs on every pod of a StatefulSet, whose probes tell the roles apart by pod index.
    role = Role.SINGLE if not multi else (Role.LEADER if node_rank == "0" else Role.WORKER)
    return EngineCommand(engine=EngineName.SGLANG, role=role, program=["sglang", "serve"], args=args, env=env,
                         before=cuda_driver_check(spec.engine), port=0 if role == Role.WORKER else spec.engine.port,
                         extra_ports={"dist": SGLANG_DIST_PORT} if multi else {},
                         left_off=left_off)


MAX_MODEL_LEN_FLAGS = {EngineName.VLLM: "--max-model-len", EngineName.SGLANG: "--context-length"}
"""The flag that caps a request's prompt plus output tokens, per engine. Without it both engines take the model's
own context from its config (vLLM ``ModelConfig.max_model_len``; SGLang ``ModelConfig.context_len``)."""


def max_model_len(spec: EngineSpec) -> int:
    """The longest request (prompt plus output tokens) the engine accepts: the flag the recipe's settings set last
    (the Hopper recipe's ``--max-model-len 32768``), else the model's own context. vLLM 0.33.0 rejects a longer
    prompt with "This model's maximum context length is ..." (vllm/renderers/params.py L532-544)."""
    if spec.engine.name == EngineName.VLLM:  # k3infra passes SGLang no --context-length
        flag = MAX_MODEL_LEN_FLAGS[EngineName.VLLM]
        stated = [f[1] for s in vllm_settings(spec.accelerator, spec.pipeline_parallel) for f in s.flags
                  if f[0] == flag]
        if stated:
            return int(stated[-1])
    return spec.model.context_tokens


CUDA_COMPAT_DIR = "/usr/local/cuda/compat"
"""Where NVIDIA's CUDA base images install the forward compatibility package (``cuda-compat-X-Y``; ``/usr/local/cuda``
links the image's toolkit)."""

NVIDIA_DRIVER_VERSION_FILE = "/proc/driver/nvidia/version"
"""The loaded kernel module's version (``NVRM version: ... Kernel Module  570.169  ...``), readable in any container."""


def cuda_driver_check(engine: Engine) -> list[str]:
    """Shell lines that turn CUDA forward compatibility on when, and only when, the node's driver is older than the
    engine's CUDA major needs (catalog/cuda.py).

    Decided on the node, not in the plan: a Lingjun or PAI-EAS node's driver is unpublished, and a cloud's default
    driver moves; loading the compat libraries under a newer driver fails too ("unsupported display driver / cuda
    driver combination", vllm-project/vllm PR #33116). The library path is exported before ``exec``, so every
    process the engine starts, forked or spawned, loads them; vLLM is also told through its own switch
    (vllm 0.33.0 ``vllm/env_override.py``: ``VLLM_ENABLE_CUDA_COMPATIBILITY``, ``VLLM_CUDA_COMPATIBILITY_PATH``).
    """
    floor = CUDA_MAJOR_MIN_DRIVER[engine.cuda_major]
    exports = f'export LD_LIBRARY_PATH="{CUDA_COMPAT_DIR}:${{LD_LIBRARY_PATH:-}}"'
    if engine.name == EngineName.VLLM:
        exports += f" VLLM_ENABLE_CUDA_COMPATIBILITY=1 VLLM_CUDA_COMPATIBILITY_PATH={CUDA_COMPAT_DIR}"
    return [
        f"driver=$(grep -oE '[0-9]{{3,}}\\.[0-9]+(\\.[0-9]+)?' "
        f'"${{K3_NVIDIA_VERSION_FILE:-{NVIDIA_DRIVER_VERSION_FILE}}}" 2>/dev/null | head -n 1) || driver=""',
        f'if [ -n "$driver" ] && [ "${{driver%%.*}}" -lt {floor} ]; then',
        f'  echo "k3infra: NVIDIA driver $driver predates CUDA {engine.cuda_major} (driver {floor} or later):'
        f' using the image\'s CUDA forward compatibility libraries" >&2',
        f"  {exports}",
        "fi",
    ]


def forward_compatibility_statement(engine: Engine, driver_version: str | None) -> str | None:
    """What the plan says when a pool's known driver is older than the engine's CUDA major needs; None otherwise."""
    if not driver_version or not needs_forward_compatibility(driver_version, engine.cuda_major):
        return None
    return (f"the nodes' NVIDIA driver {driver_version} runs CUDA {driver_cuda_major(driver_version)}.x and "
            f"{engine.name} {engine.release} is built for CUDA {engine.cuda_major}: the engine script turns on the "
            f"image's CUDA forward compatibility libraries ({CUDA_COMPAT_DIR}; data-center GPUs only). An image "
            f"without them stops at CUDA initialisation (\"CUDA driver version is insufficient for CUDA runtime "
            f"version\"); use a {CUDA_MAJOR_MIN_DRIVER[engine.cuda_major]}-branch driver as soon as the cloud offers one")


def left_off_statement(engine: EngineName, names: Sequence[str], spec: EngineSpec) -> str | None:
    """What the plan says when recipe variables were left off for the model source (None when none was)."""
    if not names:
        return None
    return (f"{engine} runs without {', '.join(sorted(names))} of its recipe: with the model given as "
            f"{spec.model_source} and --load-format {spec.load_format} it does not work (catalog/recipes.py ENV_SCOPE "
            "says why for each variable)")


def option(args: Sequence[str], flag: str) -> str | None:
    """The value after ``flag`` in ``args`` (None when the flag is absent or has no value)."""
    for i, a in enumerate(args):
        if a == flag:
            return args[i + 1] if i + 1 < len(args) else None
    return None


__all__ = [
    "cuda_driver_check", "forward_compatibility_statement",
    "EngineCommand", "EngineSpec", "MAX_MODEL_LEN_FLAGS", "Role", "by_pod_index", "default_memory_fraction",
    "left_off_statement", "max_model_len", "option", "sglang_command",
    "shell_word", "streamer_extra_config", "vllm_command", "vllm_launch_problems", "vllm_settings",
]

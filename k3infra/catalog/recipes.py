"""Engine settings per GPU generation and layout, from the engines' own Kimi K3 recipes.

Every flag and variable cites the recipe line it comes from. ``RECIPE`` is vllm-project/recipes
``models/moonshotai/Kimi-K3.yaml`` (commit 8959cf6); the SGLang settings are seed 000's launch (the DSpark
model card's command), which this module does not repeat: they live with the SGLang command in
k3infra/serving/engine.py.

The real-parser test (tests/engines) runs every command line built from these settings through the pinned
release's own argument parser.
"""

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .accelerators import Accelerator
from .engines import Engine
from .types import EngineName, GpuArchitecture

RECIPE = "vllm-project/recipes models/moonshotai/Kimi-K3.yaml"

Flag = tuple[str, ...]
"""One command-line option: the flag, then its value if it takes one."""


@dataclass(frozen=True)
class EngineSettings:
    """Flags and environment the engine adds for one kind of hardware or layout."""

    flags: tuple[Flag, ...]
    """Appended after the canonical flags; a flag given again replaces the earlier value (the recipe's
    last-wins rule)."""
    env: Mapping[str, str]
    memory_fraction: float | None
    """``--gpu-memory-utilization`` the recipe sets, where it sets one (the sizing assumes it)."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Recipe line of each flag and variable, by name."""


VLLM_BY_ARCHITECTURE: Mapping[GpuArchitecture, EngineSettings] = MappingProxyType({
    GpuArchitecture.HOPPER: EngineSettings(
        flags=(
            ("--moe-backend", "marlin"),
            ("--max-num-seqs", "5"),
            ("--max-model-len", "32768"),
            ("--disable-custom-all-reduce",),
            ("--no-enable-flashinfer-autotune",),
            ("--max-num-batched-tokens", "4096"),
            ("--attention-backend", "FLASHMLA"),
        ),
        env=MappingProxyType({
            "VLLM_USE_V2_MODEL_RUNNER": "1",
            "VLLM_USE_RUST_FRONTEND": "1",
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        }),
        memory_fraction=0.97,
        sources=MappingProxyType({
            "flags": f"{RECIPE} hardware_overrides.hopper.extra_args (L161-176): MXFP4 experts run on Marlin on "
                     "Hopper, and 96-141 GB GPUs hold a short context only",
            "env": f"{RECIPE} hardware_overrides.hopper.extra_env (L177-181)",
            "memory_fraction": f"{RECIPE} hardware_overrides.hopper (--gpu-memory-utilization 0.97, L163-164)",
        }),
    ),
    GpuArchitecture.BLACKWELL: EngineSettings(
        flags=(
            ("--no-enable-flashinfer-autotune",),
            ("--max-model-len", "1048576"),
            ("--kv-cache-dtype", "fp8"),
            ("--attention-config", '{"use_prefill_query_quantization":true,"mla_prefill_backend":"flashinfer"}'),
            ("--enable-prefix-caching",),
        ),
        env=MappingProxyType({
            "VLLM_ALLREDUCE_USE_FLASHINFER": "1",
            "VLLM_USE_V2_MODEL_RUNNER": "1",
            "VLLM_USE_RUST_FRONTEND": "1",
        }),
        memory_fraction=None,
        sources=MappingProxyType({
            "flags": f"{RECIPE} hardware_overrides.blackwell.extra_args (L183-194): the 1M context with an FP8 KV "
                     "cache and FlashInfer MLA prefill (notes: FP8 KV, L378); --load-format follows the loader",
            "env": f"{RECIPE} hardware_overrides.blackwell.extra_env (L195-199)",
            "memory_fraction": "none: the base args' 0.95 (Engine.memory_fraction) or the layout's applies",
        }),
    ),
})
"""vLLM settings by GPU generation (the recipe's ``hardware_overrides``)."""

VLLM_PIPELINE_PARALLEL = EngineSettings(
    flags=(("--max-num-batched-tokens", "8192"),),
    env=MappingProxyType({"NCCL_CUMEM_ENABLE": "1", "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1800"}),
    memory_fraction=0.90,
    sources=MappingProxyType({
        "flags": f"{RECIPE} strategy_overrides.multi_node_tp_pp.extra_args (L253-263): cap prefill chunks so one "
                 "long request cannot OOM a pipeline stage",
        "env": f"{RECIPE} strategy_overrides.multi_node_tp_pp.extra_env (L264-269)",
        "memory_fraction": f"{RECIPE} strategy_overrides.multi_node_tp_pp (0.90: FlashInfer's MXFP4 MoE workspace "
                           "lives outside vLLM's pool, L255-260); the hardware override still wins (last-wins, L249-252)",
    }),
)
"""vLLM settings when the replica is pipeline-parallel (the recipe's ``multi_node_tp_pp`` strategy). They apply
before the hardware settings, which win where both set a flag (the recipe's order)."""

# The recipe's MNNVL variables (guide notes, L376: NCCL_MNNVL_ENABLE, NCCL_CUMEM_ENABLE, NCCL_NVLS_ENABLE) are
# not set here: k3infra/serving/dra.py sets NCCL's multi-node NVLink variables on the pods that claim a
# ComputeDomain channel, and only there (a pipeline layout without the channel must not require MNNVL).

VLLM_DSPARK_CONFIG: Mapping[str, object] = MappingProxyType({
    "draft_sample_method": "probabilistic",
    "rejection_sample_method": "block",
})
"""``--speculative-config`` keys of the recipe's DSpark feature besides the draft model, the method and the token
count (which the catalog's vLLM DraftModel holds): {RECIPE} features.spec_decoding (L69-70)."""

VLLM_DSPARK_WITH_PIPELINE = ("DSpark does not compose with pipeline parallelism yet (vllm-project/vllm#50098; "
                             f"{RECIPE} features.spec_decoding, L58-60)")

ENGINE_READY_TIMEOUT_ENV = "VLLM_ENGINE_READY_TIMEOUT_S"
ENGINE_READY_TIMEOUT_MIN_SECONDS = 3600
"""The recipe sets ``VLLM_ENGINE_READY_TIMEOUT_S=3600`` on every profile (L178, L197, L268) for 1.68 TB off
shared storage; k3infra raises it to the sizing's start-up budget where that is longer."""

IGNORED_ENV: Mapping[EngineName, Mapping[str, str]] = MappingProxyType({
    EngineName.VLLM: MappingProxyType({
        "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION": "002 §3.1 sets it for the day-0 image; vLLM 0.33.0 reads no such "
                                                 "variable (not in vllm/envs.py nor anywhere in the wheel)",
    }),
    EngineName.SGLANG: MappingProxyType({
        "SAFETENSORS_FAST_GPU": "000 sets it for the day-0 image; SGLang 0.5.23 never reads it",
        "SGLANG_USE_RUNAI_MODEL_STREAMER": "000 sets it for the day-0 image; in SGLang 0.5.23 only the diffusion "
                                           "runtime (sglang/multimodal_gen) reads it, --load-format runai_streamer "
                                           "selects the streamer for the LLM server",
    }),
})
"""Environment the seeds set that the pinned releases ignore, by engine: kept so the day-0 images (which may
predate the release) behave as the seeds tested them; harmless on the pinned release. tests/engines checks
that every other variable k3infra sets is read by the pinned release or is a library's own (NCCL, PyTorch,
RunAI)."""


def vllm_settings(accelerator: Accelerator | None, pipeline_parallel: int) -> list[EngineSettings]:
    """The recipe's vLLM settings that apply, in the recipe's order: the layout's, then the hardware's
    (which win where both set a flag)."""
    out: list[EngineSettings] = []
    if pipeline_parallel > 1:
        out.append(VLLM_PIPELINE_PARALLEL)
    if accelerator is not None:
        out.append(VLLM_BY_ARCHITECTURE[accelerator.gpu_architecture])
    return out


def default_memory_fraction(engine: Engine, accelerator: Accelerator | None, pipeline_parallel: int = 1) -> float:
    """The GPU memory fraction the engine claims unless the stack says otherwise: the last recipe setting
    that states one (vLLM), else the engine's default."""
    if engine.name != EngineName.VLLM:
        return engine.memory_fraction
    stated = [s.memory_fraction for s in vllm_settings(accelerator, pipeline_parallel) if s.memory_fraction]
    return stated[-1] if stated else engine.memory_fraction  # the recipe's base args (0.95)


def vllm_world_size_problems(world_size: int, nodes: int, gpus_per_node: int) -> list[str]:
    """Why vLLM (the pinned release) would refuse to launch a replica of ``world_size`` ranks (tensor x
    pipeline parallel) on ``nodes`` nodes of ``gpus_per_node`` GPUs in k3infra's launch, or [] when it starts.

    The rules vLLM checks only at run time, on the GPU node, encoded here so a stack that breaks them never
    reaches the cloud (lines of vLLM 0.33.0):

    - a world size above one node's GPUs needs ``--nnodes`` (or Ray): vllm/config/parallel.py L1066-1076
      raises "World size (8) is larger than the number of available GPUs (4) in this node";
    - ``--nnodes`` must divide the world size: vllm/engine/arg_utils.py L2406-2412;
    - each node runs world size / nnodes ranks on its own GPUs (vllm/engine/arg_utils.py L2421,
      vllm/v1/executor/multiproc_executor.py L305-310), so that must be the GPUs a pod gets.

    k3infra never combines ``--nnodes`` with ``--distributed-executor-backend ray``, which
    vllm/config/parallel.py L1103-1114 rejects.
    """
    out = []
    ws, local = world_size, gpus_per_node
    if nodes == 1 and ws > local:
        out.append(f"tensor x pipeline parallel = {ws} is larger than the {local} GPUs of one node: vLLM needs "
                   "--nnodes for that (vllm/config/parallel.py L1066-1076)")
    elif ws % nodes:
        out.append(f"--nnodes {nodes} must divide the world size {ws} (vllm/engine/arg_utils.py L2406-2412)")
    elif ws // nodes != local:
        out.append(f"each of the {nodes} node(s) would run {ws // nodes} ranks, but has {local} GPUs "
                   "(vllm/engine/arg_utils.py L2421: local world size = world size / nnodes)")
    return out

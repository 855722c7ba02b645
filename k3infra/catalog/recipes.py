"""Engine settings per GPU generation and layout, from the engines' own Kimi K3 recipes.

Every flag and variable cites the recipe line it comes from. ``RECIPE`` is vllm-project/recipes
``models/moonshotai/Kimi-K3.yaml`` (commit 8959cf6); the SGLang settings are seed 000's launch (the DSpark
model card's command), which this module does not repeat: they live with the SGLang command in
k3infra/serving/engine/sglang.py.

The real-parser test (tests/engines) runs every command line built from these settings through the pinned
release's own argument parser.
"""

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping

from .accelerators import Accelerator
from .distribution import STREAMER_GLOBAL_ENV, STREAMER_PARTITION_ENV
from .engines import Engine
from .types import EngineName, GpuArchitecture, ModelSource

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

GPU_RECIPES_A4X = ("AI-Hypercomputer/gpu-recipes inference/a4x/multi-host-serving/sglang/values_kimi_k3.yaml at "
                   "2e1fd5e (Kimi K3 on 4 x a4x-highgpu-4g, TP=16 over MNNVL)")


@dataclass(frozen=True)
class LayoutRecipe:
    """Engine settings a recipe states for one GPU model at one tensor-parallel size across an NVLink domain."""

    gpu_model: str
    tensor_parallel: int
    settings: EngineSettings


SGLANG_MNNVL_RECIPES: tuple[LayoutRecipe, ...] = (
    LayoutRecipe("GB200", 16, EngineSettings(
        flags=(
            ("--dcp-size", "16"),
            ("--mamba-full-memory-ratio", "7.21"),
            ("--dist-timeout", "3600"),
        ),
        env=MappingProxyType({}),
        memory_fraction=0.85,
        sources=MappingProxyType({
            "--dcp-size": f"{GPU_RECIPES_A4X} extraArgs (--dcp-size 16): decode context parallelism over all 16 ranks "
                          "shards the MLA KV cache (sglang 0.5.23 srt/arg_groups/model_overrides/kimi_k3.py: with "
                          "dcp_size > 1 Kimi-K3 keeps cutedsl_mla decode, trtllm_mla prefill, DSPARK verify on the "
                          "decode backend)",
            "--mamba-full-memory-ratio": f"{GPU_RECIPES_A4X} extraArgs (--mamba-full-memory-ratio 7.21, in place of "
                                         "000's 0.43: each rank holds 1/16 of the full-attention KV under DCP=16, so "
                                         "the recurrent state's share of it grows)",
            "--dist-timeout": f"{GPU_RECIPES_A4X} extraArgs (--dist-timeout 3600; TORCH_DISTRIBUTED_TIMEOUT 3600): "
                              "torch.distributed initialisation across 4 nodes that load 1.56 TB first",
            "memory_fraction": f"{GPU_RECIPES_A4X} extraArgs (--mem-fraction-static 0.85, as 000)",
        }),
    )),
)
"""SGLang settings by GPU model and tensor-parallel size where a replica's tensor parallelism spans nodes of one
NVLink domain (multi-node NVLink). They replace the value of a flag the command already has (000's); a layout no
recipe states keeps 000's settings alone."""


def sglang_settings(accelerator: Accelerator | None, tensor_parallel: int, multi_node_nvlink: bool) -> list[EngineSettings]:
    """The recipe's SGLang settings for this GPU model and layout ([] where no recipe states one)."""
    if accelerator is None or not multi_node_nvlink:
        return []
    return [r.settings for r in SGLANG_MNNVL_RECIPES
            if r.gpu_model == accelerator.gpu_model and r.tensor_parallel == tensor_parallel]


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


ANY_SOURCE = frozenset(ModelSource)


@dataclass(frozen=True)
class EnvScope:
    """Where an engine variable k3infra sets works: with which model sources and ``--load-format``s."""

    sources: frozenset[ModelSource]
    load_formats: frozenset[str] | None
    """None: any load format."""
    source: str
    """Why, from the pinned release's wheel."""


_ANYWHERE = "read at start-up whatever the model and loader are"
_STREAMER_ONLY = frozenset({"runai_streamer"})
_STREAMED = frozenset({ModelSource.LOCAL, ModelSource.OBJECT_STORE})
_DISTRIBUTION_SCOPE: Mapping[str, EnvScope] = MappingProxyType({
    STREAMER_GLOBAL_ENV: EnvScope(
        _STREAMED, _STREAMER_ONLY,
        "runai_model_streamer's own setting (distributed_streamer.py create_distribution_group, 0.15.7 and 0.17.1): "
        "read by a distributed --load-format runai_streamer, from a directory or a bucket URI (catalog.distribution)"),
    STREAMER_PARTITION_ENV: EnvScope(
        frozenset({ModelSource.LOCAL}), _STREAMER_ONLY,
        "runai_model_streamer's own setting (partition.py get_partition_policy): whole files per rank, for a mounted "
        "path whose FUSE client may fetch whole objects (catalog.distribution)"),
})
"""The streamer's distribution settings k3infra sets on both engines (catalog.distribution.streamer_env)."""

ENV_SCOPE: Mapping[EngineName, Mapping[str, EnvScope]] = MappingProxyType({
    EngineName.VLLM: MappingProxyType({
        "VLLM_USE_RUST_FRONTEND": EnvScope(
            frozenset({ModelSource.LOCAL, ModelSource.HUB}), None,
            "vllm 0.33.0 entrypoints/cli/serve.py L354 starts v1/utils.py RustFrontendProcessManager (L280) with the "
            "raw CLI namespace: its --args-json carries model_tag as given (L352), while only the engine's "
            "config/model.py ModelConfig.maybe_pull_model_tokenizer_for_runai (L1204-1250, called at L632) pulls "
            "the config and tokenizer of an s3://, gs:// or az:// model (transformers_utils/runai_utils.py "
            "SUPPORTED_SCHEMES). The vllm-rs binary has no object-store client: it resolves a model that is not a "
            "directory as a Hugging Face repository (HF_HOME, HF_TOKEN), and so fails on az://... ('no snapshot "
            "in cache') even with --tokenizer and --hf-config-path naming a local copy"),
        "VLLM_USE_V2_MODEL_RUNNER": EnvScope(ANY_SOURCE, None, f"vllm/envs.py L312; {_ANYWHERE}: the V2 runner "
                                             "loads through the same model_loader (v1/worker/gpu/model_runner.py)"),
        "VLLM_ALLREDUCE_USE_FLASHINFER": EnvScope(ANY_SOURCE, None, f"vllm/envs.py L278; the all-reduce, {_ANYWHERE}"),
        "PYTORCH_CUDA_ALLOC_CONF": EnvScope(ANY_SOURCE, None, f"PyTorch's CUDA caching allocator, {_ANYWHERE}"),
        "NCCL_CUMEM_ENABLE": EnvScope(ANY_SOURCE, None, f"NCCL, {_ANYWHERE}"),
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": EnvScope(ANY_SOURCE, None, f"vllm/envs.py L252; {_ANYWHERE}"),
        ENGINE_READY_TIMEOUT_ENV: EnvScope(ANY_SOURCE, None, f"vllm/envs.py L813; {_ANYWHERE}"),
        "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION": EnvScope(ANY_SOURCE, None, "read by no file of vllm 0.33.0 "
                                                          "(IGNORED_ENV): harmless with any model and loader"),
        # A disaggregated role's (catalog/topologies.py VLLM_ROLE_RECIPES, UCX_TLS): the KV transfer, not the load.
        "VLLM_NIXL_SIDE_CHANNEL_PORT": EnvScope(ANY_SOURCE, None, f"vllm/envs.py; NIXL's handshake, {_ANYWHERE}"),
        "VLLM_SSM_CONV_STATE_LAYOUT": EnvScope(ANY_SOURCE, None, f"the recipe's pd_cluster env; {_ANYWHERE}"),
        "UCX_TLS": EnvScope(ANY_SOURCE, None, f"UCX's own (NIXL's UCX backend), {_ANYWHERE}"),
        **_DISTRIBUTION_SCOPE,
    }),
    EngineName.SGLANG: MappingProxyType({
        "SGLANG_REQUEST_STATE_WAIT_TIMEOUT": EnvScope(ANY_SOURCE, None, f"sglang/srt/environ.py L1679; {_ANYWHERE}"),
        "SGLANG_SET_CPU_AFFINITY": EnvScope(ANY_SOURCE, None, f"sglang/srt/environ.py L1720; {_ANYWHERE}"),
        "OMP_NUM_THREADS": EnvScope(ANY_SOURCE, None, f"OpenMP, {_ANYWHERE}"),
        "PYTORCH_CUDA_ALLOC_CONF": EnvScope(ANY_SOURCE, None, f"PyTorch's CUDA caching allocator, {_ANYWHERE}"),
        "SAFETENSORS_FAST_GPU": EnvScope(ANY_SOURCE, None, "read by no file of sglang 0.5.23 (IGNORED_ENV)"),
        "RUNAI_STREAMER_MEMORY_LIMIT": EnvScope(
            frozenset({ModelSource.LOCAL, ModelSource.OBJECT_STORE}), _STREAMER_ONLY,
            "runai_model_streamer's own setting: only --load-format runai_streamer streams (sglang 0.5.23 "
            "srt/model_loader/loader.py RunaiModelStreamerLoader, L3913), from a directory or a bucket URI"),
        "RUNAI_STREAMER_CONCURRENCY": EnvScope(
            frozenset({ModelSource.LOCAL, ModelSource.OBJECT_STORE}), _STREAMER_ONLY,
            "runai_model_streamer's own setting (as RUNAI_STREAMER_MEMORY_LIMIT)"),
        "SGLANG_USE_RUNAI_MODEL_STREAMER": EnvScope(
            frozenset({ModelSource.LOCAL, ModelSource.OBJECT_STORE}), _STREAMER_ONLY,
            "000 sets it with the streamer; sglang 0.5.23 reads it only in multimodal_gen (IGNORED_ENV)"),
        **_DISTRIBUTION_SCOPE,
    }),
})
"""Every variable k3infra's engine commands set (the recipe's, the seeds', the readiness timeout), by engine, with
the model sources and load formats it works with. A variable a combination does not allow is left off that
command (``env_applies``), and ``env_scope_problems`` finds any that is set anyway."""


def env_applies(engine: EngineName, name: str, source: ModelSource, load_format: str) -> bool:
    """True when the variable works with this model source and load format (KeyError: not in ``ENV_SCOPE``)."""
    scope = ENV_SCOPE[engine][name]
    return source in scope.sources and (scope.load_formats is None or load_format in scope.load_formats)


def env_scope_problems(engine: EngineName, names: Iterable[str], source: ModelSource, load_format: str) -> list[str]:
    """Why the engine variables among ``names`` that ``ENV_SCOPE`` lists cannot work with this model source and load
    format, or [] when they all can."""
    out = []
    for name in sorted(set(names) & set(ENV_SCOPE[engine])):
        if not env_applies(engine, name, source, load_format):
            out.append(f"{name} does not work with the model given as {source} and --load-format {load_format}: "
                       f"{ENV_SCOPE[engine][name].source}")
    return out


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

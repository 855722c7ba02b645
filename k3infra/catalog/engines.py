"""Serving engines and the container images known for them."""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .types import CpuArch, EngineName


@dataclass(frozen=True)
class EngineImage:
    """A container image and the CPU platforms it is known to ship a build for."""

    reference: str
    engine: EngineName
    engine_version: str
    """The engine release the image contains, as k3infra validates its command lines (``Engine.release``)."""
    platforms: frozenset[CpuArch]
    """Platforms a source confirms. A platform not listed here is not assumed to exist."""
    sources: Mapping[str, str]


@dataclass(frozen=True)
class Engine:
    """A serving engine's defaults and its command-line facts."""

    name: EngineName
    package: str
    """The engine's PyPI distribution (the test suite installs it to run its argument parser)."""
    release: str
    """The release every command line k3infra renders is validated against (tests/engines run its parser)."""
    min_release: str
    """The oldest release a user image (``engineVersion``) may contain: the first that serves Kimi K3."""
    cuda_major: int
    """The CUDA major release ``release`` is built for: the driver branch the nodes need (catalog/cuda.py)."""
    default_image: str
    port: int
    health_path: str
    metrics_path: str
    memory_fraction: float
    """Fraction of GPU memory the engine claims for weights, activations and KV cache."""
    default_load_format: str
    load_formats: tuple[str, ...]
    """Load formats k3infra accepts for this engine (``--load-format``)."""
    warmup_seconds: int
    """Start-up after the weights are in GPU memory: CUDA graph capture, compilation, NCCL set-up."""
    cache_env: Mapping[str, str]
    """The variables that put the engine's compile and kernel caches under one directory: variable -> its path
    under that directory (``""``: the directory itself)."""
    cached_warmup_seconds: int
    """The warm-up when ``cache_env``'s directory holds what an earlier start on the same node built."""
    sources: Mapping[str, str]


ENGINES: Mapping[EngineName, Engine] = MappingProxyType(
    {
        EngineName.VLLM: Engine(
            name=EngineName.VLLM,
            package="vllm",
            release="0.33.0",
            min_release="0.27.1",
            cuda_major=13,
            default_image="vllm/vllm-openai:kimi-k3",
            port=8000,
            health_path="/health",
            metrics_path="/metrics",
            memory_fraction=0.95,
            default_load_format="fastsafetensors",
            load_formats=("fastsafetensors", "safetensors", "runai_streamer", "auto"),
            warmup_seconds=600,
            cache_env=MappingProxyType({"VLLM_CACHE_ROOT": "vllm", "FLASHINFER_WORKSPACE_BASE": "",
                                        "CUDA_CACHE_PATH": "nv", "TRITON_CACHE_DIR": "triton",
                                        "CUTE_DSL_CACHE_DIR": "cute_dsl"}),
            cached_warmup_seconds=240,
            sources=MappingProxyType(
                {
                    "release": "the newest vLLM on PyPI when pinned (0.33.0); it ships vllm/models/kimi_k3 and the "
                               "K3 DSpark draft (K3DSparkModel). The day-0 tag kimi-k3 names no release: its "
                               "command lines are validated against this one",
                    "min_release": "vllm-project/recipes models/moonshotai/Kimi-K3.yaml (min_vllm_version: 0.27.1)",
                    "cuda_major": "vllm 0.33.0 wheel METADATA: Requires-Dist torch==2.14.0 (PyPI's torch 2.14 is the "
                                  "CUDA 13.0 build) and nvidia-cutlass-dsl[cu13]",
                    "default_image": "002 §2.1 (vLLM day-0 container vllm/vllm-openai:kimi-k3)",
                    "port": "002 §3.1 (containerPort 8000)",
                    "health_path": "002 §4.4 readinessProbe, §7 checklist item 2",
                    "metrics_path": "vLLM serves Prometheus metrics on /metrics",
                    "memory_fraction": "vllm-project/recipes models/moonshotai/Kimi-K3.yaml model.base_args "
                                       "(--gpu-memory-utilization 0.95, L41-42); catalog/recipes.py adjusts it "
                                       "per GPU generation and layout",
                    "default_load_format": "002 §3.1 (--load-format fastsafetensors)",
                    "load_formats": "002 caveat 1; §4.3 (RunAI streamer)",
                    "warmup_seconds": "ASSUMPTION: CUDA graph capture and compilation of a 2.8T MoE take ~10 min",
                    "cache_env": "vllm 0.33.0 envs.py VLLM_CACHE_ROOT (default ~/.cache/vllm): the torch.compile "
                                 "cache (compilation/backends.py VLLM_CACHE_ROOT/torch_compile_cache, with Inductor's "
                                 "and Triton's caches inside it, compilation/compiler_interface.py "
                                 "initialize_inductor_cache) and DeepGEMM's JIT cache (utils/deep_gemm.py "
                                 "DG_JIT_CACHE_DIR = VLLM_CACHE_ROOT/deep_gemm); FlashInfer's JIT cache, which "
                                 "flashinfer-python 0.7.2.post1 (pinned by vllm 0.33.0's Requires-Dist) keeps under "
                                 "FLASHINFER_WORKSPACE_BASE/.cache/flashinfer (flashinfer/jit/env.py), the directory "
                                 "itself as sglang 0.5.23 srt/environ.py third_party_cache_defaults sets it; the CUDA "
                                 "driver's PTX JIT cache, CUDA_CACHE_PATH (CUDA C++ Programming Guide, CUDA "
                                 "Environment Variables; default ~/.nv/ComputeCache), under nv as SGLang puts it; "
                                 "TRITON_CACHE_DIR for the Triton kernels built outside torch.compile (the fused MoE "
                                 "kernels): vllm 0.33.0 snapshot/runtime.py \"vLLM redirects Inductor and Triton "
                                 "under VLLM_CACHE_ROOT when it compiles, but a process can still hold their upstream "
                                 "defaults open\" (~/.triton/cache), and compilation/compiler_interface.py "
                                 "initialize_inductor_cache keeps a TRITON_CACHE_DIR the caller set (Triton keys its "
                                 "entries by the kernel's source hash, so one directory serves every compile); "
                                 "CUTE_DSL_CACHE_DIR for FlashInfer's CuTe DSL kernels (flashinfer-python 0.7.2.post1, "
                                 "pinned by vllm 0.33.0: prims_ts/utils.py and its vendored CuTeDSL base_dsl/"
                                 "cache_helpers.py, else TMPDIR/USER/cutlass_python_cache, inside the container)",
                    "cached_warmup_seconds": "ESTIMATE: with the caches warm, Inductor's compilation and DeepGEMM's "
                                             "JIT kernels are read, not built; Dynamo's tracing, CUDA graph capture "
                                             "(vLLM keeps no graphs across processes) and NCCL set-up still run: "
                                             "4 of the 10 minutes",
                }
            ),
        ),
        EngineName.SGLANG: Engine(
            name=EngineName.SGLANG,
            package="sglang",
            release="0.5.23",
            min_release="0.5.23",
            cuda_major=13,
            default_image="docker.io/lmsysorg/sglang:kimi-k3",
            port=30000,
            health_path="/health",
            metrics_path="/metrics",
            memory_fraction=0.85,
            default_load_format="runai_streamer",
            load_formats=("runai_streamer", "safetensors", "auto"),
            warmup_seconds=600,
            cache_env=MappingProxyType({"SGLANG_CACHE_DIR": "sglang", "TRITON_CACHE_DIR": "sglang/triton",
                                        "TORCHINDUCTOR_CACHE_DIR": "sglang/inductor", "CUDA_CACHE_PATH": "sglang/nv",
                                        "TILELANG_CACHE_DIR": "sglang/tilelang",
                                        "FLASHINFER_WORKSPACE_BASE": "sglang"}),
            cached_warmup_seconds=300,
            sources=MappingProxyType(
                {
                    "release": "the newest SGLang on PyPI when pinned (0.5.23); the day-0 tag kimi-k3 names no "
                               "release: its command lines are validated against this one",
                    "min_release": "ASSUMPTION: no older release was validated (000 names only the day-0 tag)",
                    "cuda_major": "sglang 0.5.23 wheel METADATA: Requires-Dist cuda-python>=13.0, torch==2.14.1",
                    "default_image": "000 (image: docker.io/lmsysorg/sglang:kimi-k3)",
                    "port": "000 (--port 30000)",
                    "health_path": "SGLang serves /health",
                    "metrics_path": "000 (--enable-metrics)",
                    "memory_fraction": "000 (--mem-fraction-static 0.85)",
                    "default_load_format": "000 (--load-format runai_streamer)",
                    "load_formats": "000",
                    "warmup_seconds": "ASSUMPTION: CUDA graph capture up to --cuda-graph-max-bs 512 (000)",
                    "cache_env": "sglang 0.5.23 srt/environ.py: SGLANG_CACHE_DIR (default ~/.cache/sglang) holds "
                                 "DeepGEMM's JIT cache (SGLANG_DG_CACHE_DIR) and, through "
                                 "third_party_cache_defaults/redirect_third_party_caches, Triton's, Inductor's, CUDA's "
                                 "(CUDA_CACHE_PATH), TileLang's and FlashInfer's; that redirect is os.environ."
                                 "setdefault and \"silently does nothing\" once FlashInfer was imported or Inductor "
                                 "asked for its cache_dir, so k3infra sets each of its variables to the same "
                                 "directories itself",
                    "cached_warmup_seconds": "ESTIMATE: with the caches warm, the DeepGEMM, FlashInfer and Triton "
                                             "kernels are read, not compiled; CUDA graph capture up to batch 512 "
                                             "still runs: half of the 10 minutes",
                }
            ),
        ),
    }
)
"""Every engine k3infra can run, by name."""

IMAGES: Mapping[str, EngineImage] = MappingProxyType(
    {
        i.reference: i
        for i in (
            EngineImage(
                reference="vllm/vllm-openai:kimi-k3",
                engine=EngineName.VLLM,
                engine_version="0.33.0",
                platforms=frozenset({CpuArch.AMD64}),
                sources=MappingProxyType(
                    {
                        "engine_version": "ASSUMPTION: the day-0 tag is unpublished; k3infra validates against "
                                          "vLLM 0.33.0, the newest PyPI release, which ships Kimi K3 and its DSpark draft",
                        "amd64": "002 §3.1 (runs on x86_64 p6-b300 in the AWS original)",
                        "arm64": "not confirmed: 002 caveat 2 and appendix item 1 ask to check docker manifest inspect",
                    }
                ),
            ),
            EngineImage(
                reference="docker.io/lmsysorg/sglang:kimi-k3",
                engine=EngineName.SGLANG,
                engine_version="0.5.23",
                platforms=frozenset({CpuArch.AMD64, CpuArch.ARM64}),
                sources=MappingProxyType(
                    {
                        "engine_version": "ASSUMPTION: the day-0 tag is unpublished; k3infra validates against "
                                          "SGLang 0.5.23 (PyPI)",
                        "amd64": "000 (verified manifest on A4, x86_64 B200 nodes)",
                        "arm64": "the GB200 recipe 000 points to: AI-Hypercomputer/gpu-recipes 2e1fd5e "
                                 "inference/a4x/multi-host-serving/sglang (README Test Environment: 4 x a4x-highgpu-4g, "
                                 "serving engine lmsysorg/sglang:kimi-k3; values_kimi_k3.yaml image "
                                 "lmsysorg/sglang:kimi-k3) runs the same tag on Grace nodes with no platform override, "
                                 "which a kubelet pulls only from a manifest list with linux/arm64 (002 appendix item 1: "
                                 "confirm with docker manifest inspect before the first deployment)",
                    }
                ),
            ),
        )
    }
)
"""Images whose platforms a source confirms, by reference."""

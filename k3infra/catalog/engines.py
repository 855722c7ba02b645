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
    platforms: frozenset[CpuArch]
    """Platforms a source confirms. A platform not listed here is not assumed to exist."""
    sources: Mapping[str, str]


@dataclass(frozen=True)
class Engine:
    """A serving engine's defaults and its command-line facts."""

    name: EngineName
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
    sources: Mapping[str, str]


ENGINES: Mapping[EngineName, Engine] = MappingProxyType(
    {
        EngineName.VLLM: Engine(
            name=EngineName.VLLM,
            default_image="vllm/vllm-openai:kimi-k3",
            port=8000,
            health_path="/health",
            metrics_path="/metrics",
            memory_fraction=0.90,
            default_load_format="fastsafetensors",
            load_formats=("fastsafetensors", "safetensors", "runai_streamer", "auto"),
            warmup_seconds=600,
            sources=MappingProxyType(
                {
                    "default_image": "002 §2.1 (vLLM day-0 container vllm/vllm-openai:kimi-k3)",
                    "port": "002 §3.1 (containerPort 8000)",
                    "health_path": "002 §4.4 readinessProbe, §7 checklist item 2",
                    "metrics_path": "vLLM serves Prometheus metrics on /metrics",
                    "memory_fraction": "vLLM --gpu-memory-utilization default 0.9",
                    "default_load_format": "002 §3.1 (--load-format fastsafetensors)",
                    "load_formats": "002 caveat 1; §4.3 (RunAI streamer)",
                    "warmup_seconds": "ASSUMPTION: CUDA graph capture and compilation of a 2.8T MoE take ~10 min",
                }
            ),
        ),
        EngineName.SGLANG: Engine(
            name=EngineName.SGLANG,
            default_image="docker.io/lmsysorg/sglang:kimi-k3",
            port=30000,
            health_path="/health",
            metrics_path="/metrics",
            memory_fraction=0.85,
            default_load_format="runai_streamer",
            load_formats=("runai_streamer", "safetensors", "auto"),
            warmup_seconds=600,
            sources=MappingProxyType(
                {
                    "default_image": "000 (image: docker.io/lmsysorg/sglang:kimi-k3)",
                    "port": "000 (--port 30000)",
                    "health_path": "SGLang serves /health",
                    "metrics_path": "000 (--enable-metrics)",
                    "memory_fraction": "000 (--mem-fraction-static 0.85)",
                    "default_load_format": "000 (--load-format runai_streamer)",
                    "load_formats": "000",
                    "warmup_seconds": "ASSUMPTION: CUDA graph capture up to --cuda-graph-max-bs 512 (000)",
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
                platforms=frozenset({CpuArch.AMD64}),
                sources=MappingProxyType(
                    {
                        "amd64": "002 §3.1 (runs on x86_64 p6-b300 in the AWS original)",
                        "arm64": "not confirmed: 002 caveat 2 and appendix item 1 ask to check docker manifest inspect",
                    }
                ),
            ),
            EngineImage(
                reference="docker.io/lmsysorg/sglang:kimi-k3",
                engine=EngineName.SGLANG,
                platforms=frozenset({CpuArch.AMD64}),
                sources=MappingProxyType(
                    {
                        "amd64": "000 (verified manifest on A4, x86_64 B200 nodes)",
                        "arm64": "not confirmed: 000 points GB200 users to a separate recipe",
                    }
                ),
            ),
        )
    }
)
"""Images whose platforms a source confirms, by reference."""

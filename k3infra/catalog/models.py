"""Models as data: the next very large MoE model is an entry here, not a fork."""

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .types import EngineName

GB = 10**9
"""Decimal gigabyte. Every size in the catalog is in decimal units, as the seeds and vendors state them."""


@dataclass(frozen=True)
class DraftModel:
    """A draft model for speculative decoding."""

    hf_id: str
    algorithm: str
    """The engine's name for the speculative algorithm (SGLang ``--speculative-algorithm``, vLLM
    ``--speculative-config`` ``method``)."""
    block_size: int
    """Tokens the draft proposes per step (SGLang ``--speculative-dspark-block-size``, vLLM
    ``num_speculative_tokens``)."""
    weight_bytes: int
    sources: Mapping[str, str]


@dataclass(frozen=True)
class Model:
    """An open-weights model and the facts that decide how it is served."""

    hf_id: str
    """Hugging Face repository id."""
    display_name: str
    served_model_name: str
    """The name clients put in ``"model"`` (vLLM ``--served-model-name``)."""
    total_params: int
    active_params: int
    experts: int
    active_experts: int
    context_tokens: int
    weight_format: str
    """How the weights are stored. Not a load format (002 caveat 1)."""
    weight_bytes: int
    """Checkpoint size on disk, in bytes."""
    gpu_memory_needed_gb: float
    """Total GPU memory the seed says one replica needs (weights + KV cache + overhead)."""
    min_kv_cache_gb: float
    """KV cache one replica must keep free beyond weights and runtime overhead to count as fitting."""
    runtime_overhead_gb_per_gpu: float
    """Activations, CUDA graphs and communication buffers per GPU."""
    tool_call_parser: str
    reasoning_parser: str
    vllm_env: Mapping[str, str]
    """Environment the seeds set for the model under vLLM (002 §3.1). Kept for the day-0 image; the pinned
    release ignores what catalog/recipes.py ``IGNORED_ENV`` lists, so dropping it there changes nothing."""
    license_url: str
    draft_models: Mapping[EngineName, DraftModel]
    """The draft model each engine runs speculative decoding with (DSPARK); the engines' own recipes name
    different checkpoints."""
    sources: Mapping[str, str] = field(default_factory=dict)

    def draft_model_for(self, engine: EngineName) -> DraftModel | None:
        """The draft model ``engine`` serves this model with, or None."""
        return self.draft_models.get(engine)

    @property
    def draft_model(self) -> DraftModel | None:
        """The largest of the engines' draft models: what an engine-neutral size estimate counts (sizing)."""
        return max(self.draft_models.values(), key=lambda d: d.weight_bytes, default=None)


KIMI_K3 = Model(
    hf_id="moonshotai/Kimi-K3",
    display_name="Kimi K3",
    served_model_name="Kimi-K3",
    total_params=2_800_000_000_000,
    active_params=104_000_000_000,
    experts=896,
    active_experts=16,
    context_tokens=1_000_000,
    weight_format="MXFP4",
    weight_bytes=1_560 * GB,
    gpu_memory_needed_gb=1_680,
    # 1,680 GB needed = 1,560 GB weights + 120 GB; with 8 GPUs (the seed's reference node) that is
    # 8 x 5 GB runtime overhead + 80 GB KV cache.
    min_kv_cache_gb=80,
    runtime_overhead_gb_per_gpu=5,
    tool_call_parser="kimi_k3",
    reasoning_parser="kimi_k3",
    vllm_env=MappingProxyType({"VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION": "1"}),
    license_url="https://huggingface.co/moonshotai/Kimi-K3/blob/main/LICENSE",
    draft_models=MappingProxyType({
        EngineName.SGLANG: DraftModel(
            hf_id="RadixArk/Kimi-K3-DSpark",
            algorithm="DSPARK",
            block_size=7,
            # ESTIMATE: the seed does not size the draft model; a few transformer layers of a 2.8T model.
            weight_bytes=40 * GB,
            sources=MappingProxyType(
                {
                    "hf_id": "000 (huggingface-cli download RadixArk/Kimi-K3-DSpark)",
                    "algorithm": "000 (--speculative-algorithm DSPARK)",
                    "block_size": "000 (--speculative-dspark-block-size 7)",
                    "weight_bytes": "ESTIMATE: not stated in the seeds",
                }
            ),
        ),
        EngineName.VLLM: DraftModel(
            hf_id="RedHatAI/Kimi-K3-speculator.dspark",
            algorithm="dspark",
            block_size=8,
            # ESTIMATE: as SGLang's draft; the recipe does not size it.
            weight_bytes=40 * GB,
            sources=MappingProxyType(
                {
                    "hf_id": "vllm-project/recipes models/moonshotai/Kimi-K3.yaml features.spec_decoding (L70)",
                    "algorithm": "same line (method dspark); vLLM 0.33.0 vllm/config/speculative.py DSparkModelTypes",
                    "block_size": "same line (num_speculative_tokens 8)",
                    "weight_bytes": "ESTIMATE: not stated in the recipe",
                }
            ),
        ),
    }),
    sources=MappingProxyType(
        {
            "hf_id": "002 §1 (Hugging Face ID)",
            "served_model_name": "002 §3.1 (--served-model-name Kimi-K3)",
            "total_params": "002 §1 (2.8 trillion)",
            "active_params": "002 §1 (104 billion)",
            "experts": "002 §1; 000 (896 experts)",
            "active_experts": "002 §1; 000 (16 activated per token)",
            "context_tokens": "002 §1 (1 million tokens)",
            "weight_format": "002 §1 and caveat 1 (MXFP4 is a storage format)",
            "weight_bytes": "002 §2.1 (weight file size approx. 1.56 TB)",
            "gpu_memory_needed_gb": "002 §2.1 (GPU memory total approx. 1,680 GB)",
            "min_kv_cache_gb": "ASSUMPTION: splits 002 §2.1's 120 GB above the weights at 8 GPUs",
            "runtime_overhead_gb_per_gpu": "ASSUMPTION: splits 002 §2.1's 120 GB above the weights at 8 GPUs",
            "tool_call_parser": "002 §3.1 (--tool-call-parser kimi_k3); 000",
            "reasoning_parser": "002 §3.1 (--reasoning-parser kimi_k3); 000",
            "vllm_env": "002 §3.1 (VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1); ignored by vLLM 0.33.0 "
                        "(catalog/recipes.py IGNORED_ENV)",
            "license_url": "000 (license terms)",
        }
    ),
)

MODELS: Mapping[str, Model] = MappingProxyType({KIMI_K3.hf_id: KIMI_K3})
"""Every model k3infra knows, by Hugging Face id."""

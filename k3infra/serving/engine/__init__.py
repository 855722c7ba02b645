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

One module per concern, each importing only those listed before it: ``spec`` (``EngineSpec``, ``Role``, the
streamer's defaults), ``command`` (``EngineCommand`` and its bash), ``cuda`` (forward compatibility on the node),
``arguments`` (what both engines' lines share and what the plan reads back), ``vllm`` and ``sglang`` (one engine
line each). Callers import from ``k3infra.serving.engine``.
"""

from ...catalog.recipes import default_memory_fraction, vllm_settings
from .arguments import MAX_MODEL_LEN_FLAGS, left_off_statement, max_model_len, option, streamer_extra_config
from .command import EngineCommand, by_pod_index, shell_word
from .cuda import CUDA_COMPAT_DIR, NVIDIA_DRIVER_VERSION_FILE, cuda_driver_check, forward_compatibility_statement
from .sglang import (
    SGLANG_CUDA_GRAPH_MAX_BS,
    SGLANG_DIST_PORT,
    SGLANG_ENV,
    SGLANG_MAMBA_FULL_MEMORY_RATIO,
    SGLANG_MAX_RUNNING_REQUESTS,
    SGLANG_STREAMER_ENV,
    SGLANG_WATCHDOG_TIMEOUT,
    sglang_command,
    sglang_streamer_env,
)
from .spec import (
    LWS_LEADER_ADDRESS,
    LWS_WORKER_INDEX,
    STREAMER_CONCURRENCY,
    STREAMER_LOAD_FORMAT,
    STREAMER_MEMORY_LIMIT,
    ENGINE_BEHIND_SIDECAR_PORT,
    EngineSpec,
    Role,
    RoleSpec,
    Source,
)
from .vllm import VLLM_MASTER_PORT, vllm_command, vllm_launch_problems

__all__ = [
    "cuda_driver_check", "forward_compatibility_statement",
    "EngineCommand", "EngineSpec", "ENGINE_BEHIND_SIDECAR_PORT", "RoleSpec", "MAX_MODEL_LEN_FLAGS", "Role", "by_pod_index", "default_memory_fraction",
    "left_off_statement", "max_model_len", "option", "sglang_command",
    "shell_word", "streamer_extra_config", "vllm_command", "vllm_launch_problems", "vllm_settings",
    "CUDA_COMPAT_DIR", "LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX", "NVIDIA_DRIVER_VERSION_FILE", "SGLANG_CUDA_GRAPH_MAX_BS",
    "SGLANG_DIST_PORT", "SGLANG_ENV", "SGLANG_MAMBA_FULL_MEMORY_RATIO", "SGLANG_MAX_RUNNING_REQUESTS",
    "SGLANG_STREAMER_ENV", "SGLANG_WATCHDOG_TIMEOUT", "STREAMER_CONCURRENCY", "STREAMER_LOAD_FORMAT",
    "STREAMER_MEMORY_LIMIT", "Source", "VLLM_MASTER_PORT", "sglang_streamer_env",
]

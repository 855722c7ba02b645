"""Host-memory KV-cache offload (the tiered KV cache, issue 38): each engine's own mechanism at the pinned release,
and what the sizing keeps back from a node's memory before it gives the rest to the cache."""

from types import MappingProxyType
from typing import Mapping

from .types import EngineName

OFFLOAD_FLAGS: Mapping[EngineName, str] = MappingProxyType({
    EngineName.VLLM: "vllm 0.33.0 vllm/config/cache.py CacheConfig.kv_offloading_size (GiB, \"the total buffer size "
                     "summed across all TP ranks\") and kv_offloading_backend (\"native\": vLLM native CPU offloading); "
                     "vllm/config/vllm.py _post_init_kv_transfer_config turns them into the OffloadingConnector with "
                     "cpu_bytes_to_use = size x 2^30, kv_role kv_both; vllm/v1/kv_offload/cpu/spec.py divides the "
                     "bytes over parallel.world_size (every rank of the replica, on every node)",
    EngineName.SGLANG: "sglang 0.5.23 sglang/srt/arg_groups/fields/memory.py: --enable-hierarchical-cache, "
                       "--hicache-size (\"size of host KV cache memory pool in gigabytes\", per rank: "
                       "mem_cache/pool_host/base.py sizes each rank's pool as hicache_size x 1e9 bytes)",
})
"""The flags that turn on each engine's own host-memory KV tier, with where they are defined."""

SERVER_POD_MEMORY_SHARE = 0.85
"""Share of a node's memory the serving pod requests (and is limited to) where the pool states no figure
(serving.pods ``NODE_SHARE``, the same share k3infra/aws/nodegroup.py applies on EKS): the rest is the OS's,
the kubelet's reservation and the DaemonSets'."""

ENGINE_HOST_GIB_PER_RANK = 32
"""ESTIMATE: host memory one engine rank keeps besides the KV tier (the Python process, torch and the CUDA
context, pinned staging buffers, the tokenizer and detokenizer processes on the HTTP rank spread over the ranks).
No K3 measurement backs it."""

SHM_DEFAULT_GIB = 64
"""/dev/shm of a serving pod where the pool states none (serving.pods ``DEFAULT_SHM``, 002 §4.4): a memory-backed
volume, charged to the pod's memory."""

MIN_OFFLOAD_GIB_PER_NODE = 64
"""ESTIMATE: the smallest host tier per node worth turning on. Below it the tier holds less than a few of Kimi
K3's long prefixes and costs PCIe transfers for little; the sizing leaves the tier off and says so."""

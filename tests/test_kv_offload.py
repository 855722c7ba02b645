"""The tiered KV cache (issue 38): the host tier each node gets, the figures it follows from, off where it does
not fit, and the engine's own flags for it."""

import dataclasses

from k3infra.catalog import ACCELERATORS, ENGINES, EngineName
from k3infra.catalog.kv_offload import ENGINE_HOST_GIB_PER_RANK, MIN_OFFLOAD_GIB_PER_NODE
from k3infra.serving.engine import EngineSpec, Role, option, sglang_command, vllm_command
from k3infra.sizing.offload import kv_offload

VLLM, SGLANG = ENGINES[EngineName.VLLM], ENGINES[EngineName.SGLANG]


def test_the_tier_is_the_pod_s_memory_less_loader_engine_and_shm() -> None:
    """p6-b300.48xlarge: 4,096 GiB, the pod 85 % (3,481), 8 ranks x 32 GiB, 64 GiB /dev/shm, no streamer buffer."""
    o = kv_offload(ACCELERATORS["p6-b300.48xlarge"], VLLM, local_ranks=8, streamer_memory_limit=0)
    assert (o.host_gib, o.pod_gib, o.loader_gib, o.engine_gib, o.shm_gib) == (4096, 3481, 0, 256, 64)
    assert o.per_node_gib == 3481 - 256 - 64 == 3161 and o.enabled and o.reason == ""
    # a4-highgpu-8g: the seed's pod (1,500 Gi) and /dev/shm (100 Gi) where it states them (catalog.gke), the
    # streamer's 256 GiB buffer
    a4 = kv_offload(ACCELERATORS["a4-highgpu-8g"], SGLANG, local_ranks=8, streamer_memory_limit=256 * 2**30)
    assert (a4.pod_gib, a4.shm_gib, a4.loader_gib, a4.per_node_gib) == (1500, 100, 256, 1500 - 256 - 256 - 100)


def test_the_tier_is_off_where_it_does_not_fit_and_for_a_vllm_p_d_role() -> None:
    small = dataclasses.replace(ACCELERATORS["p6-b300.48xlarge"], host_memory_gib=400)
    o = kv_offload(small, VLLM, local_ranks=8, streamer_memory_limit=0)
    left = 340 - 8 * ENGINE_HOST_GIB_PER_RANK - 64
    assert not o.enabled and o.per_node_gib == 0
    assert o.reason == (f"the host KV tier does not fit: 340 GiB for the pod less 0 GiB loader, 256 GiB engine and "
                        f"64 GiB /dev/shm leaves {left} GiB, under {MIN_OFFLOAD_GIB_PER_NODE} GiB")
    pd = kv_offload(ACCELERATORS["p6-b300.48xlarge"], VLLM, local_ranks=8, streamer_memory_limit=0, disaggregated=True)
    assert not pd.enabled and "would replace the NixlConnector" in pd.reason


def test_engine_flags_count_the_tier_as_each_engine_does() -> None:
    """vLLM: GiB over every rank of the replica (node tier x nodes); SGLang: decimal GB per rank."""
    spec = EngineSpec.named("moonshotai/Kimi-K3", EngineName.VLLM, nodes=2, tensor_parallel=16,
                            accelerator=ACCELERATORS["p6-b300.48xlarge"])
    on = dataclasses.replace(spec, kv_offload_gib=1000)
    for role in (Role.LEADER, Role.WORKER):
        args = vllm_command(on, model="/m", role=role, node_rank="1").args
        assert option(args, "--kv-offloading-size") == "2000" and option(args, "--kv-offloading-backend") == "native"
    assert "--kv-offloading-size" not in vllm_command(spec, model="/m", role=Role.LEADER).args
    s = EngineSpec.named("moonshotai/Kimi-K3", EngineName.SGLANG, nodes=1, tensor_parallel=8, load_format="safetensors")
    args = sglang_command(dataclasses.replace(s, kv_offload_gib=1000), model="/m").args
    assert "--enable-hierarchical-cache" in args and option(args, "--hicache-size") == str(1000 * 2**30 // 8 // 10**9)
    assert "--enable-hierarchical-cache" not in sglang_command(s, model="/m").args

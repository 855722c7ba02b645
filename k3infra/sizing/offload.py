"""The host-memory KV tier of one node (issue 38): the node's memory less what the OS, the loader, the engine and
/dev/shm need, given to the engine's own offload (catalog.kv_offload), or left off where too little is left."""

from dataclasses import dataclass, replace

from ..catalog import Accelerator, Engine, EngineName
from ..catalog.gke import GKE_MACHINES
from ..catalog.kv_offload import (
    ENGINE_HOST_GIB_PER_RANK,
    MIN_OFFLOAD_GIB_PER_NODE,
    SERVER_POD_MEMORY_SHARE,
    SHM_DEFAULT_GIB,
)


@dataclass(frozen=True)
class KvOffload:
    """The host tier of one node, and the figures it follows from (GiB)."""

    host_gib: int
    """The node's memory (catalog)."""
    pod_gib: int
    """What the serving pod may use: its memory limit."""
    loader_gib: int
    """The streamer's CPU buffer on the node (0 for other loaders)."""
    engine_gib: int
    """The engine's ranks on the node (``ENGINE_HOST_GIB_PER_RANK`` each)."""
    shm_gib: int
    """/dev/shm, charged to the pod's memory."""
    per_node_gib: int
    """The tier on each node: 0 when it is off."""
    reason: str = ""
    """Why the tier is off ("" when on)."""

    @property
    def enabled(self) -> bool:
        """The engine offloads KV blocks to host memory."""
        return self.per_node_gib > 0


def _pod_limits(accelerator: Accelerator) -> tuple[int, int]:
    """(pod memory, /dev/shm) in GiB: a seed's figures for the machine where it states them (catalog.gke
    ``pod_resources``), else ``SERVER_POD_MEMORY_SHARE`` of the node and the default /dev/shm."""
    stated = GKE_MACHINES[accelerator.sku].pod_resources if accelerator.sku in GKE_MACHINES else {}
    pod = int(stated["memory_request"].removesuffix("Gi")) if "memory_request" in stated else \
        int(accelerator.host_memory_gib * SERVER_POD_MEMORY_SHARE)
    shm = int(stated["shm_size"].removesuffix("Gi")) if "shm_size" in stated else SHM_DEFAULT_GIB
    return pod, shm


def kv_offload(accelerator: Accelerator, engine: Engine, *, local_ranks: int, streamer_memory_limit: int,
               disaggregated: bool = False) -> KvOffload:
    """The host tier of one node of ``accelerator`` whose pod runs ``local_ranks`` engine ranks, beside the
    streamer's ``streamer_memory_limit`` bytes (0 without the streamer). Off where less than
    ``MIN_OFFLOAD_GIB_PER_NODE`` is left, and for a disaggregated role (vLLM's offload takes the one KV connector a
    replica has, which P/D needs for the transfer)."""
    pod, shm = _pod_limits(accelerator)
    loader = -(-streamer_memory_limit // 2**30)
    ranks = ENGINE_HOST_GIB_PER_RANK * local_ranks
    left = pod - loader - ranks - shm
    off = KvOffload(host_gib=accelerator.host_memory_gib, pod_gib=pod, loader_gib=loader, engine_gib=ranks,
                    shm_gib=shm, per_node_gib=0)
    if disaggregated:
        return disaggregated_offload(off, engine)
    if left < MIN_OFFLOAD_GIB_PER_NODE:
        return replace(off, reason=f"the host KV tier does not fit: {pod} GiB for the pod less {loader} GiB loader, "
                                   f"{ranks} GiB engine and {shm} GiB /dev/shm leaves {left} GiB, under "
                                   f"{MIN_OFFLOAD_GIB_PER_NODE} GiB")
    return replace(off, per_node_gib=left)


def disaggregated_offload(off: KvOffload, engine: Engine) -> KvOffload:
    """``off`` for a disaggregated role: none with vLLM, whose ``--kv-offloading-size`` replaces the NixlConnector
    the prefill/decode transfer needs by its OffloadingConnector (vllm 0.33.0 ``config/vllm.py``
    ``_post_init_kv_transfer_config`` sets ``kv_connector`` and ``kv_role = "kv_both"`` over what was given): the
    prefill would return no ``kv_transfer_params`` and the decode recompute every prompt (independent review of
    issue 37, M1)."""
    if engine.name != EngineName.VLLM:
        return off
    return replace(off, per_node_gib=0, reason="vLLM's host offload would replace the NixlConnector the "
                                               "prefill/decode transfer uses (vllm/config/vllm.py "
                                               "_post_init_kv_transfer_config)")


__all__ = ["KvOffload", "disaggregated_offload", "kv_offload"]

"""Security-scanner exceptions, written on the objects themselves.

checkov reads ``checkov.io/skipN: CKV_ID=reason`` annotations from an object's metadata. Every check k3infra
does not satisfy is listed here with the reason it cannot (tests/serving/test_render_scan.py runs checkov
over the rendered manifests and fails on any failed check that is not skipped this way).
"""

from typing import Mapping

ROOT_ENGINE = (
    "the engine images (vllm/vllm-openai, lmsysorg/sglang) run as root and write compile and kernel caches "
    "under /root; every capability is dropped and privilege escalation is off instead"
)

SERVER_SKIPS: Mapping[str, str] = {
    "CKV_K8S_22": "the engine writes torch.compile, Triton and CUDA graph caches to its root file system",
    "CKV_K8S_23": ROOT_ENGINE,
    "CKV_K8S_40": ROOT_ENGINE,
    "CKV_K8S_43": "the image is the stack's k3infra:image; pin it by digest there (the catalog's day-0 tags "
                  "have no published digest)",
    "CKV_K8S_15": "a 20 GB engine image is pulled once per node (IfNotPresent); a moving tag is pinned by "
                  "digest in k3infra:image, not by re-pulling",
}
"""Checks the model server workloads do not satisfy, with the reason."""

SERVER_NO_CPU_MEMORY: Mapping[str, str] = {
    "CKV_K8S_10": "the server owns its whole GPU node; the pool sets no CPU figure (GpuPool.cpu_request)",
    "CKV_K8S_11": "the server owns its whole GPU node; the pool sets no CPU figure (GpuPool.cpu_request)",
    "CKV_K8S_12": "the server owns its whole GPU node; the pool sets no memory figure (GpuPool.memory_request)",
    "CKV_K8S_13": "the server owns its whole GPU node; the pool sets no memory figure (GpuPool.memory_request)",
}
"""Extra checks skipped when the GPU pool states no CPU and memory request (the pod gets the node)."""

ADDED_CAPABILITIES = "CKV_K8S_25"


def capabilities_reason(capabilities: "list[str] | tuple[str, ...]") -> str:
    """Why the engine container adds capabilities: the GPU pool's fabric asks for them."""
    return (f"the GPU pool's fabric needs {', '.join(capabilities)} (GpuPool.capabilities; RDMA registers pinned "
            "memory); every other capability is dropped")


SECRET_ENV = "CKV_K8S_35"
SECRET_ENV_REASON = ("the engine reads its API key (vLLM VLLM_API_KEY, SGLang --api-key) and the Hugging Face "
                     "client its token (HF_TOKEN) only from the environment")

SYNC_SKIPS: Mapping[str, str] = {
    "CKV_K8S_43": "the copier's python image is pinned by version tag (its registry publishes no digest the stack "
                  "could pin offline); every package it installs is pinned with its hashes (pip --require-hashes)",
}
"""Checks the weight sync Job does not satisfy, with the reason."""


def skip_annotations(skips: Mapping[str, str]) -> dict[str, str]:
    """``checkov.io/skipN`` annotations, one per check, numbered in check-id order."""
    return {f"checkov.io/skip{i}": f"{cid}={reason}" for i, (cid, reason) in enumerate(sorted(skips.items()), 1)}

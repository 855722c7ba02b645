"""Security-scanner exceptions, written on the objects themselves.

checkov reads ``checkov.io/skipN: CKV_ID=reason`` annotations from an object's metadata. Every check k3infra
does not satisfy is listed here with the reason it cannot (tests/serving/test_render.py and
tests/test_every_stack.py run checkov over the rendered manifests, and over the pod templates inside every
custom workload as Pods, and fail on any failed check that is not skipped this way). A LeaderWorkerSet's
templates carry the annotations themselves: checkov knows no LeaderWorkerSet kind.
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
                  "digest in k3infra:image, not by re-pulling; the marker wait's copier image (python, pinned by "
                  "its patch release) likewise",
}
"""Checks the model server workloads do not satisfy, with the reason."""

WORKER_SKIPS: Mapping[str, str] = {
    "CKV_K8S_8": "a worker rank serves no HTTP and has no health endpoint to probe; the LeaderWorkerSet "
                 "(RecreateGroupOnPodRestart) restarts the whole group when the leader's liveness probe fails",
    "CKV_K8S_9": "a worker rank receives no traffic (only the leader is behind the Service), so it has no "
                 "readiness to report; the leader is ready only once every rank has joined",
}
"""Extra checks a multi-node replica's worker pods do not satisfy."""

SERVER_NO_CPU_MEMORY: Mapping[str, str] = {
    "CKV_K8S_10": "the server owns its whole GPU node; neither the pool (GpuPool.cpu_request) nor a catalog "
                  "machine type (ModelServerArgs.accelerator) gives a CPU figure",
    "CKV_K8S_11": "the server owns its whole GPU node; neither the pool (GpuPool.cpu_request) nor a catalog "
                  "machine type (ModelServerArgs.accelerator) gives a CPU figure",
    "CKV_K8S_12": "the server owns its whole GPU node; neither the pool (GpuPool.memory_request) nor a catalog "
                  "machine type (ModelServerArgs.accelerator) gives a memory figure",
    "CKV_K8S_13": "the server owns its whole GPU node; neither the pool (GpuPool.memory_request) nor a catalog "
                  "machine type (ModelServerArgs.accelerator) gives a memory figure",
}
"""Extra checks skipped when neither the GPU pool nor its machine type gives CPU and memory figures (a
ModelServer used outside a k3infra stack); every k3infra stack names its machine type."""

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
    "CKV_K8S_15": "the copier's python image is pulled once per node (IfNotPresent): its tag names one CPython "
                  "patch release, and Always would make every retried worker depend on Docker Hub again",
}
"""Checks the weight sync Job does not satisfy, with the reason."""

NODE_AGENT_SKIPS: Mapping[str, str] = {
    **SYNC_SKIPS,
    "CKV_K8S_8": "the agent copies files and sleeps between rounds: it serves nothing to probe",
    "CKV_K8S_9": "the agent receives no traffic",
    "CKV_K8S_23": "the agent writes the node's directories, which the kubelet creates owned by root (hostPath "
                  "DirectoryOrCreate, mode 0755) and the engine, running as root, writes its caches into",
    "CKV_K8S_40": "the agent writes the node's directories, which the kubelet creates owned by root (hostPath "
                  "DirectoryOrCreate, mode 0755) and the engine, running as root, writes its caches into",
}
"""The checks the agent's DaemonSet skips, with why."""


def skip_annotations(skips: Mapping[str, str]) -> dict[str, str]:
    """``checkov.io/skipN`` annotations, one per check, numbered in check-id order."""
    return {f"checkov.io/skip{i}": f"{cid}={reason}" for i, (cid, reason) in enumerate(sorted(skips.items()), 1)}

PREPULL_SKIPS: Mapping[str, str] = {
    "CKV_K8S_43": SERVER_SKIPS["CKV_K8S_43"],
    "CKV_K8S_15": "the pre-pull exists to leave the engine image on the node for the server (IfNotPresent); "
                  "Always would pull the 20 GB image again",
    "CKV_K8S_8": "the pre-pull container only sleeps once its image is on the node: it serves nothing to probe",
    "CKV_K8S_9": "the pre-pull container only sleeps once its image is on the node: it receives no traffic",
}
"""Checks the image pre-pull DaemonSet does not satisfy, with the reason."""

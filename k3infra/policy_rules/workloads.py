"""What the Kubernetes rules read of a workload: its pod templates, containers, engine and model."""

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..catalog import MODELS, EngineName, Model
from .base import Resource, as_int, as_list, get


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of a workload (a LeaderWorkerSet has a leader's and a workers')."""

    workload: Resource
    role: str
    spec: Mapping[str, Any]
    labels: Mapping[str, Any]
    nodes: int
    """Nodes one model instance spans (LeaderWorkerSet size, SGLang --nnodes), for the load estimate."""


def kind_of(r: Resource) -> str:
    return r.type.rsplit(":", 1)[-1] if r.type.startswith("kubernetes:") else ""


def pod_templates(r: Resource) -> list[PodTemplate]:
    """The pod templates of a Kubernetes workload resource (none for anything else)."""
    kind = kind_of(r)
    if kind in ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet"):
        t = get(r.props, "spec.template", {})
        return [PodTemplate(r, kind, get(t, "spec", {}), get(t, "metadata.labels", {}), 1)]
    if kind == "Pod":
        return [PodTemplate(r, kind, get(r.props, "spec", {}), get(r.props, "metadata.labels", {}), 1)]
    if kind == "LeaderWorkerSet":
        lwt = get(r.props, "spec.leaderWorkerTemplate", {})
        size = as_int(get(lwt, "size"), 1)
        out = [PodTemplate(r, "worker", get(lwt, "workerTemplate.spec", {}),
                           get(lwt, "workerTemplate.metadata.labels", {}), size)]
        if get(lwt, "leaderTemplate"):
            out.insert(0, PodTemplate(r, "leader", get(lwt, "leaderTemplate.spec", {}),
                                      get(lwt, "leaderTemplate.metadata.labels", {}), size))
        return out
    return []


def container_argv(container: Mapping[str, Any]) -> list[str]:
    """Command and args (or a PAI-EAS ``script``) as words (shell scripts split on whitespace)."""
    words: list[str] = []
    for part in as_list(container.get("command")) + as_list(container.get("args")) + [container.get("script") or ""]:
        words += str(part).split()
    return words


def flag_value(argv: Sequence[str], name: str) -> str | None:
    for i, w in enumerate(argv):
        if w == name and i + 1 < len(argv):
            return argv[i + 1]
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
    return None


def engine_of(container: Mapping[str, Any]) -> EngineName | None:
    """The inference engine a container runs: from its command line, or, when it runs the image's own
    entrypoint with engine flags (SageMaker HyperPod), from the image name."""
    text = " ".join(container_argv(container))
    if re.search(r"\bvllm\b.*\bserve\b|vllm\.entrypoints", text):
        return EngineName.VLLM
    if "sglang.launch_server" in text or re.search(r"\bsglang\b.*\bserve\b", text):
        return EngineName.SGLANG
    if not as_list(container.get("command")) and "--served-model-name" in text:
        image = str(container.get("image") or "")
        for engine in EngineName:
            if str(engine) in image:
                return engine
    return None


def model_of(container: Mapping[str, Any]) -> Model | None:
    """The catalog model a server container serves (by served name, Hugging Face id or its last segment)."""
    words = container_argv(container)
    for m in MODELS.values():
        base = m.hf_id.rsplit("/", 1)[-1]
        if any(w == m.served_model_name or m.hf_id in w or w.rstrip("/").endswith("/" + base) or w == base
               for w in words):
            return m
    return None

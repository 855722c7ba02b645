"""What both engines' command lines share: the streamer's extra config, the recipe's flags merged last-wins, the
environment scoped to the model source, and what the plan reads back from a command line."""

import json
from typing import Sequence

from ...catalog import EngineName, ModelSource
from ...catalog import distribution
from ...catalog.picker import KV_EVENTS_PORT, KV_EVENTS_TOPIC_FILTER
from ...catalog.recipes import Flag, env_applies, vllm_settings
from ...catalog.topologies import RoleName
from .spec import EngineSpec

def streamer_extra_config(spec: EngineSpec) -> str:
    """``--model-loader-extra-config`` for the RunAI streamer, vLLM's and SGLang's alike: only the keys both
    accept (``concurrency``, ``memory_limit``, ``distributed``; anything else raises "Unexpected extra config keys
    for runai_streamer", docs/catalog-research.md §2.3; sglang 0.5.23 srt/model_loader/loader.py
    RunaiModelStreamerLoader ``allowed_keys``), with the spec's concurrency and memory limit (000's 16 and
    32 GiB unless the sizing derived others);
    ``distributed`` streams each rank's shard when the replica (or a DEP group, ``EngineSpec.process_group_size``)
    spans several GPUs: without it each of a DEP group's single-GPU engines would stream the whole checkpoint. It is set, not left to the
    engine: SGLang turns it on by itself only for object-store URLs (loader.py, ``self._is_distributed =
    is_object_storage_path``), so over a FUSE path every rank would read the whole checkpoint, four times what
    the sizing's per-node share assumes on A4X (the independent review of gcp-a4x-sglang, M1). The streamer itself
    distributes local files as well (runai-model-streamer 0.17.1 distributed_streamer.py ``set_is_distributed``:
    conditions on torch.distributed, NCCL and device memory, none on the path). ``distributed`` alone splits the reads
    among ONE node's ranks; across the nodes of a replica it takes ``RUNAI_STREAMER_DIST_GLOBAL=1`` in the
    environment (``EngineSpec.streamer_env``, catalog.distribution)."""
    config: dict[str, object] = {"concurrency": spec.streamer_concurrency, "memory_limit": spec.streamer_memory_limit}
    if distribution.streamer_distributed(spec.process_group_size):
        config["distributed"] = True
    return json.dumps(config, separators=(",", ":"))

def kv_events_flags(spec: EngineSpec) -> list[Flag]:
    """What the inference gateway's picker needs of a vLLM HTTP rank when it scores prefixes from KV events
    (``EngineSpec.kv_events``): ``--kv-events-config`` publishing every stored and evicted block over ZMQ on
    ``tcp://*:5557``, which the picker dials on the pod's address (vllm 0.33.0 ``vllm/config/kv_events.py``
    KVEventsConfig: enable_kv_cache_events, publisher zmq, endpoint, topic), the topic ``kv@<pod>@<served model>``
    the picker's vLLM adapter splits (llm-d-router v0.10.0 ``pkg/kvevents/engineadapter/common.go`` parseTopic;
    the pod part, bash's ``${HOSTNAME}``, only shards its workers, the address it dialled names the pod), and
    ``--enable-scale-out``, without which ``vllm serve`` answers the render endpoints the picker's tokenizer calls
    with 403 (vllm 0.33.0 ``entrypoints/scale_out/factories.py``). Empty otherwise, and on a decode role, which runs
    without prefix caching (the independent review of the PD stacks, m2)."""
    if not spec.kv_events or spec.engine.name != EngineName.VLLM:
        return []
    if spec.role is not None and spec.role.name == RoleName.DECODE:
        return []  # decode runs --no-enable-prefix-caching (recipe pd_cluster): no cached blocks to publish
    config = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": f"tcp://*:{KV_EVENTS_PORT}",
              "topic": f"{KV_EVENTS_TOPIC_FILTER}${{HOSTNAME}}@{spec.model.served_model_name}"}
    return [("--enable-scale-out",), ("--kv-events-config", json.dumps(config, separators=(",", ":")))]


def kv_offload_flags(spec: EngineSpec) -> list[Flag]:
    """The engine's own host-memory KV tier of ``spec.kv_offload_gib`` GiB per node (catalog.kv_offload
    ``OFFLOAD_FLAGS``): vLLM's ``--kv-offloading-size`` counts GiB over every rank of the replica (each node holds its
    share), so it is the node's tier times the nodes, with the native backend; SGLang's ``--hicache-size`` counts
    decimal GB per rank, so it is the node's tier over its ranks. Empty when the tier is off."""
    if spec.kv_offload_gib <= 0:
        return []
    if spec.engine.name == EngineName.VLLM:
        return [("--kv-offloading-size", str(spec.kv_offload_gib * spec.nodes)), ("--kv-offloading-backend", "native")]
    per_rank_gb = spec.kv_offload_gib * 2**30 // spec.local_gpus // 10**9
    return [("--enable-hierarchical-cache",), ("--hicache-size", str(per_rank_gb))]


def model_source_problems(spec: EngineSpec, model: str) -> list[str]:
    """A concrete model argument (not a ``${VAR}`` the pod fills in) is an object-store URI exactly when the spec
    says so: the engine's variables are chosen for the spec's source (``ENV_SCOPE``), and only an object store
    narrows them."""
    store = ModelSource.OBJECT_STORE
    if "$" in model or (ModelSource.of(model) == store) == (spec.model_source == store):
        return []
    return [f"model {model!r} is given as {ModelSource.of(model)}, but the spec's model source is {spec.model_source}"]


def scoped(spec: EngineSpec, env: dict[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The variables that work with the spec's model source and load format, and the names of those left off
    (catalog/recipes.py ``ENV_SCOPE``; every variable an engine command sets is listed there)."""
    name = spec.engine.name
    kept = {k: v for k, v in env.items() if env_applies(name, k, spec.model_source, spec.load_format)}
    return kept, tuple(k for k in env if k not in kept)


def flatten(flags: Sequence[Flag]) -> list[str]:
    """Flags in order of first appearance, each with the value it was given last (the recipe's last-wins)."""
    merged: dict[str, Flag] = {}
    for f in flags:
        merged[f[0]] = f
    return [token for f in merged.values() for token in f]


def as_flags(args: Sequence[str]) -> list[Flag]:
    """``args`` as flags, each with the value that follows it (a token not starting with ``--`` is a value)."""
    out: list[Flag] = []
    for a in args:
        if a.startswith("--") or not out:
            out.append((a,))
        else:
            out[-1] = (*out[-1], a)
    return out


def multi_node_nvlink(spec: EngineSpec) -> bool:
    """True when the replica's tensor parallelism spans nodes of one NVLink domain (sizing: multi-node NVLink)."""
    acc = spec.accelerator
    return bool(acc and acc.nvlink_spans_nodes and spec.nodes > 1 and spec.tensor_parallel > acc.gpus_per_node)


MAX_MODEL_LEN_FLAGS = {EngineName.VLLM: "--max-model-len", EngineName.SGLANG: "--context-length"}
"""The flag that caps a request's prompt plus output tokens, per engine. Without it both engines take the model's
own context from its config (vLLM ``ModelConfig.max_model_len``; SGLang ``ModelConfig.context_len``)."""


def max_model_len(spec: EngineSpec) -> int:
    """The longest request (prompt plus output tokens) the engine accepts: the flag the recipe's settings set last
    (the Hopper recipe's ``--max-model-len 32768``), else the model's own context. vLLM 0.33.0 rejects a longer
    prompt with "This model's maximum context length is ..." (vllm/renderers/params.py L532-544)."""
    if spec.engine.name == EngineName.VLLM:  # k3infra passes SGLang no --context-length
        flag = MAX_MODEL_LEN_FLAGS[EngineName.VLLM]
        stated = [f[1] for s in vllm_settings(spec.accelerator, spec.pipeline_parallel) for f in s.flags
                  if f[0] == flag]
        if stated:
            return int(stated[-1])
    return spec.model.context_tokens

def left_off_statement(engine: EngineName, names: Sequence[str], spec: EngineSpec) -> str | None:
    """What the plan says when recipe variables were left off for the model source (None when none was)."""
    if not names:
        return None
    return (f"{engine} runs without {', '.join(sorted(names))} of its recipe: with the model given as "
            f"{spec.model_source} and --load-format {spec.load_format} it does not work (catalog/recipes.py ENV_SCOPE "
            "says why for each variable)")


def option(args: Sequence[str], flag: str) -> str | None:
    """The value after ``flag`` in ``args`` (None when the flag is absent or has no value)."""
    for i, a in enumerate(args):
        if a == flag:
            return args[i + 1] if i + 1 < len(args) else None
    return None

"""What an engine's command lines depend on (``EngineSpec``), the role of a pod in its replica, and the defaults of
the RunAI streamer's settings."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Union

from ...catalog import ENGINES, MODELS, Accelerator, Engine, EngineName, Model, ModelSource
from ...catalog import distribution
from ...catalog.picker import publishes_kv_events
from ...catalog.topologies import All2AllBackend, KvTransport, Parallelism, RoleName
from ...catalog.recipes import default_memory_fraction
from ...config import StackConfig

LWS_LEADER_ADDRESS = "$(LWS_LEADER_ADDRESS)"
"""Address of the group's leader the LeaderWorkerSet injects into every container (002 §4.4)."""

LWS_WORKER_INDEX = "$(LWS_WORKER_INDEX)"
"""Index of the pod in its group (0 = leader) the LeaderWorkerSet injects into every container."""

STREAMER_CONCURRENCY = 16
"""RunAI streamer reader threads (000: ``RUNAI_STREAMER_CONCURRENCY=16``): the spec's default; a stack's come from its
sizing (catalog.loaders.streamer_concurrency: the node's NIC and the bucket's egress)."""

STREAMER_MEMORY_LIMIT = 34_359_738_368
"""RunAI streamer CPU buffer in bytes, 32 GiB (000: ``RUNAI_STREAMER_MEMORY_LIMIT`` and
``--model-loader-extra-config '{"memory_limit": 34359738368}'``): the spec's default, which runai-model-streamer
0.17.1 reads as the node's total (catalog.loaders.STREAMER_MEMORY_LIMIT_SOURCE); a stack's comes from its sizing
(catalog.loaders.streamer_memory_limit: an eighth of the node's memory, at most 32 GiB a rank)."""

STREAMER_LOAD_FORMAT = distribution.STREAMER_FORMAT


class Role(StrEnum):
    """What one pod of a replica runs."""

    SINGLE = "single"
    """The whole replica on one node: the engine alone."""
    LEADER = "leader"
    """Node 0 of a multi-node replica: rank 0 of the engine's distributed group, and the HTTP server."""
    WORKER = "worker"
    """Any other node: a rank > 0 (vLLM ``--headless``, SGLang ``--node-rank``); no HTTP server."""


@dataclass(frozen=True)
class RoleSpec:
    """A group's part in a topology other than aggregated: its role, how it splits the model, what carries its
    all-to-all and its KV transfer (catalog/topologies.py)."""

    name: RoleName | None
    """prefill or decode; None for a wide-EP group, which does both."""
    parallelism: Parallelism
    all2all: All2AllBackend | None = None
    """``--all2all-backend`` of a DEP group; None for TEP (expert parallelism inside the tensor-parallel group)."""
    transport: KvTransport | None = None
    """How NIXL moves the KV cache to or from the other role; None for a wide-EP group."""
    sidecar: bool = False
    """A routing sidecar fronts the engine on this pod (llm-d's, on decode pods): the engine serves HTTP on
    ``ENGINE_BEHIND_SIDECAR_PORT`` and the sidecar on the engine's usual port."""

    @property
    def data_parallel(self) -> bool:
        """True for a DEP group: one API server per node (``--data-parallel-hybrid-lb``), every pod serving HTTP."""
        return self.parallelism == Parallelism.DEP


ENGINE_BEHIND_SIDECAR_PORT = 8200
"""The engine's port on a pod whose routing sidecar takes the usual one (llm-d guides/wide-ep-lws decode.yaml:
``--port 8200`` behind the sidecar's ``--port=8000 --vllm-port=8200``)."""


@dataclass(frozen=True)
class EngineSpec:
    """What the command lines depend on: the model, the engine, the hardware and the layout the sizing chose.

    Built from a StackConfig (``EngineSpec.of``) or directly, for components used outside a k3infra stack.
    """

    model: Model
    engine: Engine
    load_format: str
    memory_fraction: float
    nodes: int
    tensor_parallel: int
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    """Expert-parallel group size; 1 when expert parallelism is off (sizing.Layout)."""
    speculative_decoding: bool = False
    """DSPARK with the engine's draft model (SGLang: 000; vLLM: the recipe's ``--speculative-config``)."""
    gpus_per_node: int = 0
    """GPUs of one node (each pod takes them all). 0: tensor x pipeline parallel / nodes."""
    accelerator: Accelerator | None = None
    """The machine type, where known: its GPU generation picks the recipe's settings. None: the canonical
    flags alone."""
    startup_budget_seconds: int = 0
    """The sizing's start-up budget; the engine's own readiness timeout is raised to it where it is longer."""
    model_source: ModelSource = ModelSource.LOCAL
    """What the model argument names (the loader's ``Loader.model_source``): the recipe's variables that do not
    work with it are left off (catalog/recipes.py ``ENV_SCOPE``)."""
    streamer_concurrency: int = STREAMER_CONCURRENCY
    """RunAI streamer reader threads per rank (the sizing's, ``LoadEstimate.streamer_concurrency``)."""
    streamer_memory_limit: int = STREAMER_MEMORY_LIMIT
    """RunAI streamer CPU buffer of the node's ranks together, in bytes (the sizing's,
    ``LoadEstimate.streamer_memory_limit``)."""
    kv_offload_gib: int = 0
    """The host-memory KV tier of each node in GiB (sizing ``KvOffload.per_node_gib``; 0: off): the engine's own
    offload (``arguments.kv_offload_flags``)."""
    kv_events: bool = False
    """The HTTP rank publishes its KV-cache events and serves the render endpoint for the inference gateway's
    picker (``catalog.picker.precise_prefix_blocker``; the flags in ``arguments.kv_events_flags``)."""
    role: RoleSpec | None = None
    """The group's role in a disaggregated or wide-EP topology; None in the aggregated one."""

    @property
    def http_port(self) -> int:
        """The port the engine itself serves HTTP on (behind a routing sidecar: ``ENGINE_BEHIND_SIDECAR_PORT``)."""
        return ENGINE_BEHIND_SIDECAR_PORT if self.role is not None and self.role.sidecar else self.engine.port

    @property
    def data_parallel_size(self) -> int:
        """Data-parallel ranks of a DEP group (every GPU of it); 1 otherwise."""
        return self.nodes * self.local_gpus if self.role is not None and self.role.data_parallel else 1

    @property
    def world_size(self) -> int:
        """Ranks of one replica: tensor x pipeline parallel."""
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def process_group_size(self) -> int:
        """Ranks of the process group the loaders split reads over (torch's WORLD group): the replica's, or a DEP
        group's across its data-parallel ranks, which vLLM puts in one WORLD (vllm 0.33.0
        ``distributed/parallel_state.py`` ``init_distributed_environment``: with data parallelism the rank is offset
        by the DP rank and ``world_size = parallel_config.world_size_across_dp``)."""
        return self.world_size * self.data_parallel_size

    @property
    def streamer_env(self) -> dict[str, str]:
        """The RunAI streamer's distribution settings (catalog.distribution.streamer_env): every rank of a replica on
        several nodes splits one copy of the checkpoint, by whole files where the model is a mounted path. Empty off
        the streamer or on one node."""
        if self.load_format != STREAMER_LOAD_FORMAT or not distribution.streamer_distributed(self.process_group_size):
            return {}
        return distribution.streamer_env(self.nodes, self.model_source == ModelSource.LOCAL)

    @property
    def local_gpus(self) -> int:
        """GPUs one node contributes."""
        return self.gpus_per_node or max(1, self.world_size // max(1, self.nodes))

    @staticmethod
    def of(cfg: StackConfig) -> "EngineSpec":
        """The spec of a validated stack: its model, engine, machine, load format and the sizing's layout."""
        ly = cfg.sizing.layout
        return EngineSpec(
            model=cfg.model,
            engine=cfg.engine,
            load_format=cfg.load_format,
            memory_fraction=cfg.memory_fraction,
            nodes=cfg.nodes,
            tensor_parallel=ly.tensor_parallel,
            pipeline_parallel=ly.pipeline_parallel,
            expert_parallel=ly.expert_parallel,
            speculative_decoding=cfg.speculative_decoding,
            gpus_per_node=cfg.accelerator.gpus_per_node,
            accelerator=cfg.accelerator,
            startup_budget_seconds=cfg.sizing.probe_budget_seconds,
            model_source=cfg.weights.loader.model_source,
            streamer_concurrency=cfg.sizing.load.streamer_concurrency or STREAMER_CONCURRENCY,
            streamer_memory_limit=cfg.sizing.load.streamer_memory_limit or STREAMER_MEMORY_LIMIT,
            kv_offload_gib=cfg.sizing.offload.per_node_gib if cfg.sizing.offload and cfg.workload else 0,
            kv_events=publishes_kv_events(cfg.endpoint.gateway, cfg.engine.name, bool(cfg.api_key)),
        )

    @staticmethod
    def named(model_id: str, engine: EngineName, *, nodes: int, tensor_parallel: int, pipeline_parallel: int = 1,
              expert_parallel: int = 1, load_format: str | None = None, memory_fraction: float | None = None,
              speculative_decoding: bool = False, accelerator: Accelerator | None = None,
              startup_budget_seconds: int = 0, model_source: ModelSource = ModelSource.LOCAL) -> "EngineSpec":
        """A spec from catalog names (the Hugging Face id and the engine name); the engine's defaults fill in
        the load format and memory fraction (the recipe's for the accelerator's GPU generation)."""
        e = ENGINES[engine]
        return EngineSpec(model=MODELS[model_id], engine=e, load_format=load_format or e.default_load_format,
                          memory_fraction=memory_fraction or default_memory_fraction(e, accelerator, pipeline_parallel),
                          nodes=nodes, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
                          expert_parallel=expert_parallel, speculative_decoding=speculative_decoding,
                          gpus_per_node=accelerator.gpus_per_node if accelerator else 0, accelerator=accelerator,
                          startup_budget_seconds=startup_budget_seconds, model_source=model_source)


Source = Union[StackConfig, EngineSpec]


def spec_of(source: Source) -> EngineSpec:
    """The spec itself, or a validated stack's (``EngineSpec.of``)."""
    return source if isinstance(source, EngineSpec) else EngineSpec.of(source)

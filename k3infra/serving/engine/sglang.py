"""The SGLang command line of one pod: seed 000's argument set and environment, and the recipe's settings."""

from ...catalog import DraftModel, EngineName
from ...catalog.recipes import sglang_settings
from .arguments import as_flags, flatten, kv_offload_flags, model_source_problems, multi_node_nvlink, scoped, streamer_extra_config
from .command import EngineCommand
from .cuda import cuda_driver_check
from .disaggregation import sglang_role_args
from .spec import STREAMER_CONCURRENCY, STREAMER_LOAD_FORMAT, STREAMER_MEMORY_LIMIT, EngineSpec, Role, Source, spec_of

SGLANG_DIST_PORT = 20000
"""Port of SGLang's multi-node rendezvous (000: ``--dist-init-addr sglang-master-pod-k3:20000``)."""

SGLANG_WATCHDOG_TIMEOUT = 3600
"""000: ``--watchdog-timeout 3600`` (a forward pass of a 2.8T MoE over two nodes can be slow at start)."""

SGLANG_MAMBA_FULL_MEMORY_RATIO = 0.43
"""000: ``--mamba-full-memory-ratio 0.43`` (Kimi Delta Attention keeps recurrent state)."""

SGLANG_MAX_RUNNING_REQUESTS = 512
"""000: ``--max-running-requests 512``."""

SGLANG_CUDA_GRAPH_MAX_BS = 512
"""000: ``--cuda-graph-max-bs 512``, the decode batch it captures. SGLang 0.5.23 splits the option into
``--cuda-graph-max-bs-decode`` and ``--cuda-graph-max-bs-prefill`` (sglang/srt/arg_groups/fields/exec_.py),
so 000's prefix is ambiguous there (argparse exits 2): k3infra passes the decode one."""

SGLANG_ENV: dict[str, str] = {  # catalog/recipes.py IGNORED_ENV: SAFETENSORS_FAST_GPU is kept for the day-0 image
    "SGLANG_REQUEST_STATE_WAIT_TIMEOUT": "18000",
    "OMP_NUM_THREADS": "24",
    "SGLANG_SET_CPU_AFFINITY": "1",
    "SAFETENSORS_FAST_GPU": "1",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
}
"""The environment of 000's container that does not depend on the load format."""

SGLANG_STREAMER_ENV: dict[str, str] = {
    "RUNAI_STREAMER_MEMORY_LIMIT": str(STREAMER_MEMORY_LIMIT),
    "RUNAI_STREAMER_CONCURRENCY": str(STREAMER_CONCURRENCY),
    "SGLANG_USE_RUNAI_MODEL_STREAMER": "true",  # kept for the day-0 image (catalog/recipes.py IGNORED_ENV)
}
"""000's environment for ``--load-format runai_streamer`` (the spec's streamer settings replace the first two)."""


def sglang_streamer_env(spec: EngineSpec) -> dict[str, str]:
    """SGLANG_STREAMER_ENV with the spec's streamer concurrency and memory limit, and its distribution settings."""
    return {**SGLANG_STREAMER_ENV, "RUNAI_STREAMER_MEMORY_LIMIT": str(spec.streamer_memory_limit),
            "RUNAI_STREAMER_CONCURRENCY": str(spec.streamer_concurrency), **spec.streamer_env}

def sglang_command(
    cfg: Source,
    *,
    model: str,
    node_rank: str = "0",
    dist_init_addr: str | None = None,
    draft_model: str | None = None,
    api_key_env: str | None = None,
) -> EngineCommand:
    """The SGLang command of one pod: 000's argument set and environment.

    ``model`` is the ``--model-path`` (000: ``/bucket/Kimi-K3`` on the GCS FUSE mount). For a replica on
    several nodes ``dist_init_addr`` is HOST:PORT of rank 0 (000: the headless Service
    ``sglang-master-pod-k3:20000``) and ``node_rank`` this pod's rank (000: ``$POD_INDEX``; a
    LeaderWorkerSet gives ``$(LWS_WORKER_INDEX)``). ``draft_model`` is the DSPARK draft model's path, required
    when the stack enables speculative decoding. ``api_key_env`` names an environment variable holding the
    API key (the flag reads it at start, so the key never appears in the manifest).

    Flags, in 000's order: ``--trust-remote-code``, ``--model-path``, ``--served-model-name``,
    ``--load-format``, ``--enable-metrics``, ``--tp-size``, [``--nnodes``, ``--node-rank``,
    ``--dist-init-addr``], ``--mem-fraction-static``, ``--disable-flashinfer-autotune``,
    ``--watchdog-timeout 3600``, ``--reasoning-parser`` and ``--tool-call-parser`` (``kimi_k3``),
    [``--model-loader-extra-config '{"memory_limit": 34359738368}'``], ``--mamba-full-memory-ratio 0.43``,
    ``--host 0.0.0.0``, ``--port``, [``--speculative-algorithm DSPARK``, ``--speculative-draft-model-path``,
    ``--speculative-dspark-block-size 7``, ``--enable-linear-replayssm-spec``], ``--max-running-requests
    512``, ``--cuda-graph-max-bs-decode 512`` (000's ``--cuda-graph-max-bs``, split in 0.5.23). Bracketed groups apply to several nodes, the streamer load format
    and speculative decoding respectively; ``--pp-size``/``--ep-size`` are added where the sizing asks. Where the
    tensor parallelism spans an NVLink domain's nodes, the recipe for that GPU model and size replaces or adds its
    flags (catalog/recipes.py ``SGLANG_MNNVL_RECIPES``: GB200 at TP=16, ``--dcp-size 16``,
    ``--mamba-full-memory-ratio 7.21``, ``--dist-timeout 3600``).

    Environment (000): ``SGLANG_REQUEST_STATE_WAIT_TIMEOUT=18000``, ``OMP_NUM_THREADS=24``,
    ``SGLANG_SET_CPU_AFFINITY=1``, ``SAFETENSORS_FAST_GPU=1``,
    ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` and, with the streamer,
    ``RUNAI_STREAMER_MEMORY_LIMIT``, ``RUNAI_STREAMER_CONCURRENCY=16``, ``SGLANG_USE_RUNAI_MODEL_STREAMER=true``.

    Deviation from 000: ``--served-model-name`` is the catalog's name (``Kimi-K3``, as 002 §3.1 serves it)
    rather than 000's ``moonshotai/Kimi-K3``, so clients use one name whatever the engine.
    """
    spec = spec_of(cfg)
    draft = _checked(spec, model, dist_init_addr, draft_model)
    multi = spec.nodes > 1
    args = _sglang_args(spec, model, node_rank, dist_init_addr, draft, draft_model) + sglang_role_args(spec)
    for s in sglang_settings(spec.accelerator, spec.tensor_parallel, multi_node_nvlink(spec)):
        args = flatten([*as_flags(args), *s.flags])
    args += flatten(kv_offload_flags(spec))  # issue 38: the host-memory KV tier (arguments.kv_offload_flags)
    if api_key_env:
        args += ["--api-key", f"${{{api_key_env}}}"]
    env = dict(SGLANG_ENV)
    if spec.load_format == STREAMER_LOAD_FORMAT:
        env.update(sglang_streamer_env(spec))
    env, left_off = scoped(spec, env)
    # Only rank 0 answers HTTP. A rank chosen at run time (000's $POD_INDEX) counts as a worker here: the
    # same command runs on every pod of a StatefulSet, whose probes tell the roles apart by pod index.
    role = Role.SINGLE if not multi else (Role.LEADER if node_rank == "0" else Role.WORKER)
    return EngineCommand(engine=EngineName.SGLANG, role=role, program=["sglang", "serve"], args=args, env=env,
                         before=cuda_driver_check(spec.engine), port=0 if role == Role.WORKER else spec.http_port,
                         extra_ports={"dist": SGLANG_DIST_PORT} if multi else {},
                         left_off=left_off)


def _checked(spec: EngineSpec, model: str, dist_init_addr: str | None, draft_model: str | None) -> DraftModel | None:
    """The model's SGLang draft model where the spec decodes speculatively; ValueError where the engine is not
    SGLang, a multi-node replica has no rendezvous, the draft is missing or the model argument's source is wrong."""
    if spec.engine.name != EngineName.SGLANG:
        raise ValueError(f"sglang_command needs engine sglang, got {spec.engine.name}")
    if spec.nodes > 1 and not dist_init_addr:
        raise ValueError(f"a replica on {spec.nodes} nodes needs dist_init_addr (rank 0's HOST:PORT, 000)")
    sglang_draft = spec.model.draft_model_for(EngineName.SGLANG)
    if spec.speculative_decoding and (sglang_draft is None or not draft_model):
        raise ValueError("speculative decoding (DSPARK, 000) needs the draft model's path")
    if model_source_problems(spec, model):
        raise ValueError("; ".join(model_source_problems(spec, model)))
    return sglang_draft if spec.speculative_decoding else None


def _sglang_args(spec: EngineSpec, model: str, node_rank: str, dist_init_addr: str | None, draft: DraftModel | None,
                 draft_model: str | None) -> list[str]:
    """000's argument set in its order, with what the sizing adds; ``draft`` None: no speculative decoding."""
    m = spec.model
    args = [
        "--trust-remote-code",
        "--model-path", model,
        "--served-model-name", m.served_model_name,
        "--load-format", spec.load_format,
        "--enable-metrics",
        "--tp-size", str(spec.tensor_parallel),
    ]
    if spec.pipeline_parallel > 1:
        args += ["--pp-size", str(spec.pipeline_parallel)]
    if spec.expert_parallel > 1:
        args += ["--ep-size", str(spec.expert_parallel)]
    if spec.nodes > 1:
        assert dist_init_addr is not None
        args += ["--nnodes", str(spec.nodes), "--node-rank", node_rank, "--dist-init-addr", dist_init_addr]
    args += [
        "--mem-fraction-static", f"{spec.memory_fraction:g}",
        "--disable-flashinfer-autotune",
        "--watchdog-timeout", str(SGLANG_WATCHDOG_TIMEOUT),
        "--reasoning-parser", m.reasoning_parser,
        "--tool-call-parser", m.tool_call_parser,
    ]
    if spec.load_format == STREAMER_LOAD_FORMAT:
        args += ["--model-loader-extra-config", streamer_extra_config(spec)]
    args += [
        "--mamba-full-memory-ratio", f"{SGLANG_MAMBA_FULL_MEMORY_RATIO:g}",
        "--host", "0.0.0.0",
        "--port", str(spec.http_port),  # behind a decode pod's routing sidecar, ENGINE_BEHIND_SIDECAR_PORT
    ]
    if draft is not None:
        assert draft_model is not None
        args += [
            "--speculative-algorithm", draft.algorithm,
            "--speculative-draft-model-path", draft_model,
            "--speculative-dspark-block-size", str(draft.block_size),
            "--enable-linear-replayssm-spec",
        ]
    return args + [
        "--max-running-requests", str(SGLANG_MAX_RUNNING_REQUESTS),
        "--cuda-graph-max-bs-decode", str(SGLANG_CUDA_GRAPH_MAX_BS),
    ]

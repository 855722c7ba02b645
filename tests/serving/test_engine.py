"""Engine command lines, flag by flag, against seed 002 §3.1/§4.4 (vLLM) and seed 000 (SGLang)."""

import functools
import json
import shlex

import pytest

from k3infra import planning
from k3infra.catalog import EngineName
from k3infra.config import StackConfig
from k3infra.serving.engine import (
    cuda_driver_check,
    EngineSpec,
    Role,
    by_pod_index,
    option,
    sglang_command,
    shell_word,
    streamer_extra_config,
    vllm_command,
    vllm_launch_problems,
)
from tests.support import ROOT

FUSION = "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"


@functools.lru_cache(maxsize=None)
def config(stack: str, *sets: str) -> StackConfig:
    """A validated stack (no program run: the engine functions are pure)."""
    return planning.validate(planning.load(stack, sets, root=ROOT))


# ---------------------------------------------------------------------------------------------------------
# vLLM


def cmd_engine(cmd):
    """The catalog engine of a command (its driver check depends on the engine's CUDA major)."""
    from k3infra.catalog import ENGINES

    return ENGINES[cmd.engine]


def test_vllm_single_node_is_002_canonical_argument_set_in_order() -> None:
    """aws-eks (1 x p6-b300, TP=8): 002 §3.1's args exactly, in its order, then the memory fraction."""
    cmd = vllm_command(config("aws-eks"), model="/mnt/models/models/moonshotai/Kimi-K3")
    assert cmd.program == ["vllm", "serve"]
    assert cmd.role == Role.SINGLE
    assert cmd.args == [
        "/mnt/models/models/moonshotai/Kimi-K3",
        "--trust-remote-code",
        "--load-format", "fastsafetensors",
        "--enable-prefix-caching",
        "--enable-auto-tool-choice",
        "--tool-call-parser", "kimi_k3",
        "--reasoning-parser", "kimi_k3",
        "--served-model-name", "Kimi-K3",
        "--moe-backend", "auto",
        "--tensor-parallel-size", "8",
        "--no-enable-flashinfer-autotune",
        "--port", "8000",
        "--gpu-memory-utilization", "0.95",
        # the recipe's Blackwell settings (catalog/recipes.py)
        "--max-model-len", "1048576",
        "--kv-cache-dtype", "fp8",
        "--attention-config", '{"use_prefill_query_quantization":true,"mla_prefill_backend":"flashinfer"}',
        # issue 38: the gateway's picker reads the engine's KV events and renders prompts on its endpoint
        # (aws-eks installs its gateway, without an API key: arguments.kv_events_flags)
        "--enable-scale-out",
        "--kv-events-config",
        '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","topic":"kv@${HOSTNAME}@Kimi-K3"}',
        # issue 38: the host-memory KV tier the sizing gives the node (sizing.offload)
        "--kv-offloading-size", "3161", "--kv-offloading-backend", "native",
    ]
    assert cmd.env == {FUSION: "1", "VLLM_ALLREDUCE_USE_FLASHINFER": "1", "VLLM_USE_V2_MODEL_RUNNER": "1",
                       "VLLM_USE_RUST_FRONTEND": "1", "VLLM_ENGINE_READY_TIMEOUT_S": "3600"}
    assert cmd.before == cuda_driver_check(cmd_engine(cmd))  # nothing but the node's driver check
    assert cmd.port == 8000


@pytest.mark.parametrize("stack", ["aws-eks", "azure-gb300", "gcp-a4xmax", "alicloud-ack"])
def test_vllm_k3_specific_flags_and_env_cannot_go_missing(stack: str) -> None:
    """002 §3.1: without the kimi_k3 parsers tool calling and thinking break; the fusion variable is kept for
    the day-0 image (vLLM 0.33.0 ignores it, catalog/recipes.py IGNORED_ENV)."""
    cfg = config(stack)
    role = Role.SINGLE if cfg.nodes == 1 else Role.LEADER
    model = "${K3_MODEL}"  # what ModelServer passes (the pod's K3_MODEL holds the path or URI)
    cmd = vllm_command(cfg, model=model, role=role)
    assert option(cmd.args, "--tool-call-parser") == "kimi_k3"
    assert option(cmd.args, "--reasoning-parser") == "kimi_k3"
    assert "--enable-auto-tool-choice" in cmd.args
    assert "--trust-remote-code" in cmd.args
    assert option(cmd.args, "--served-model-name") == "Kimi-K3"
    assert option(cmd.args, "--moe-backend") == ("marlin" if cfg.accelerator.gpu_architecture == "hopper" else "auto")
    assert "--no-enable-flashinfer-autotune" in cmd.args
    assert "--enable-prefix-caching" in cmd.args
    assert cmd.env[FUSION] == "1"
    if cfg.nodes > 1:
        worker = vllm_command(cfg, model=model, role=Role.WORKER)
        assert worker.env[FUSION] == "1", "002 §5.4 sets the fusion variable on the worker too"


def test_vllm_multi_node_uses_vllms_own_multi_node_mode() -> None:
    """azure-gb300: 2 x 4 GPUs, TP=8 across the nodes: every node runs vllm serve with --nnodes/--node-rank/
    --master-addr; the worker is --headless (vllm docs/serving/parallelism_scaling.md)."""
    cfg = config("azure-gb300")
    uri = "az://kimi-k3-weights/models/moonshotai/Kimi-K3"
    leader = vllm_command(cfg, model=uri, role=Role.LEADER)
    worker = vllm_command(cfg, model=uri, role=Role.WORKER)
    assert leader.before == worker.before == cuda_driver_check(cmd_engine(leader))
    assert leader.argv[:3] == worker.argv[:3] == ["vllm", "serve", uri]
    assert option(leader.args, "--tensor-parallel-size") == "8"
    assert "--pipeline-parallel-size" not in leader.args
    assert "--distributed-executor-backend" not in leader.args
    assert option(leader.args, "--load-format") == "runai_streamer"
    assert [option(c.args, f) for c in (leader, worker) for f in ("--nnodes", "--node-rank", "--master-addr")] == [
        "2", "0", "$(LWS_LEADER_ADDRESS)", "2", "$(LWS_WORKER_INDEX)", "$(LWS_LEADER_ADDRESS)"]
    assert "--headless" in worker.args and "--headless" not in leader.args
    # the rendezvous, and the KV events the gateway's picker subscribes to (azure-gb300 installs its gateway)
    assert leader.extra_ports == {"dist": 29501, "kv-events": 5557} and leader.port == 8000
    assert worker.port == 0 and worker.extra_ports == {}
    # NCCL's multi-node NVLink variables come with the ComputeDomain channel claim (serving/dra.py), not here
    assert "NCCL_MNNVL_ENABLE" not in leader.env
    script = leader.script(["ldconfig || true"]).splitlines()
    check = cuda_driver_check(cmd_engine(leader))
    assert script[:2 + len(check)] == ["set -eo pipefail", "ldconfig || true", *check]
    assert script[2 + len(check)].startswith("exec vllm serve az://")
    assert not any("set -x" in line for line in script), "set -x would print the API key"


def test_vllm_tp8_pp3_over_three_hopper_nodes_meets_the_parallel_rules() -> None:
    """alicloud-ack: 3 x 8 x 96 GB, TP=8 x PP=3: world size 24 = 3 nodes x 8 GPUs, --nnodes 3 divides it, the
    recipe's Hopper settings (Marlin MoE, 0.97, 32k context) win over the TP x PP profile."""
    cfg = config("alicloud-ack")
    leader = vllm_command(cfg, model="m", role=Role.LEADER)
    assert [option(leader.args, f) for f in ("--tensor-parallel-size", "--pipeline-parallel-size", "--nnodes")] == [
        "8", "3", "3"]
    assert vllm_launch_problems(EngineSpec.of(cfg)) == []
    assert option(leader.args, "--moe-backend") == "marlin"
    assert leader.args.count("--moe-backend") == 1
    assert option(leader.args, "--gpu-memory-utilization") == "0.97"
    assert option(leader.args, "--max-model-len") == "32768"
    assert option(leader.args, "--max-num-batched-tokens") == "4096"
    assert leader.env["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == "1800"


@pytest.mark.parametrize("nodes, tp, pp, gpus, problem", [
    (1, 8, 1, 4, "larger than the 4 GPUs of one node"),
    (3, 8, 1, 8, "--nnodes 3 must divide the world size 8"),
    (2, 8, 2, 4, "would run 8 ranks, but has 4 GPUs"),
])
def test_vllm_world_size_rules_reject_what_vllm_would(nodes: int, tp: int, pp: int, gpus: int, problem: str) -> None:
    from k3infra.catalog.recipes import vllm_world_size_problems

    assert vllm_world_size_problems(tp * pp, nodes, gpus) and problem in vllm_world_size_problems(tp * pp, nodes, gpus)[0]
    assert vllm_world_size_problems(8, 2, 4) == [] and vllm_world_size_problems(24, 3, 8) == []
    spec = EngineSpec.named("moonshotai/Kimi-K3", EngineName.VLLM, nodes=nodes, tensor_parallel=tp,
                            pipeline_parallel=pp)
    spec = EngineSpec(**{**spec.__dict__, "gpus_per_node": gpus})
    with pytest.raises(ValueError, match=problem.split(" ")[0]):
        vllm_command(spec, model="m", role=Role.LEADER if nodes > 1 else Role.SINGLE)


def test_vllm_streamer_extra_config_has_only_the_keys_vllm_accepts() -> None:
    """docs/catalog-research.md §2.3: concurrency, memory_limit, distributed; any other key is a ValueError."""
    cmd = vllm_command(config("azure-gb300"), model="az://x", role=Role.LEADER)
    extra = json.loads(option(cmd.args, "--model-loader-extra-config") or "{}")
    # the sizing's: 23 readers x 4 ranks x 0.68 Gbps fill the node's 60 Gbps share of the account's 120 Gbps egress;
    # an eighth of the node's 804 GiB over its 4 ranks is 25 GiB a rank, 100 GiB for the node: the streamer (0.17.1)
    # reads the limit as the node's total (catalog.loaders)
    assert extra == {"concurrency": 23, "memory_limit": 100 * 2**30, "distributed": True}
    assert cmd.env["RUNAI_STREAMER_DIST_GLOBAL"] == "1"  # the two nodes split one copy (catalog.distribution)
    assert set(extra) <= {"concurrency", "memory_limit", "distributed"}
    single = EngineSpec.named("moonshotai/Kimi-K3", EngineName.VLLM, nodes=1, tensor_parallel=1,
                              load_format="runai_streamer")
    assert json.loads(streamer_extra_config(single)) == {"concurrency": 16, "memory_limit": 34359738368}
    # no extra config without the streamer
    assert "--model-loader-extra-config" not in vllm_command(config("aws-eks"), model="m").args


def test_vllm_pipeline_parallel_where_the_sizing_says_so() -> None:
    """alicloud-ack: 3 x 8 x 96 GB, TP=8 per node and PP=3 across nodes."""
    cfg = config("alicloud-ack")
    assert (cfg.sizing.layout.tensor_parallel, cfg.sizing.layout.pipeline_parallel) == (8, 3)
    cmd = vllm_command(cfg, model="m", role=Role.LEADER)
    assert option(cmd.args, "--tensor-parallel-size") == "8"
    assert option(cmd.args, "--pipeline-parallel-size") == "3"
    assert "--enable-expert-parallel" not in cmd.args


def test_vllm_expert_parallel_when_the_stack_enables_it() -> None:
    cfg = config("aws-eks", "expertParallel=true")
    assert "--enable-expert-parallel" in vllm_command(cfg, model="m").args


def test_vllm_memory_fraction_follows_the_stack() -> None:
    assert option(vllm_command(config("aws-eks"), model="m").args, "--gpu-memory-utilization") == "0.95"
    cfg = config("aws-eks", "memoryFraction=0.92")
    assert option(vllm_command(cfg, model="m").args, "--gpu-memory-utilization") == "0.92"


def test_vllm_roles_must_match_the_node_count() -> None:
    with pytest.raises(ValueError, match="leader and workers"):
        vllm_command(config("azure-gb300"), model="m")
    with pytest.raises(ValueError, match="role single"):
        vllm_command(config("aws-eks"), model="m", role=Role.LEADER)
    with pytest.raises(ValueError, match="engine vllm"):
        vllm_command(config("gcp-a4-sglang"), model="m", role=Role.LEADER)


def test_vllm_api_key_is_read_from_the_environment_at_start() -> None:
    cmd = vllm_command(config("aws-eks"), model="m", api_key_env="VLLM_API_KEY")
    assert option(cmd.args, "--api-key") == "${VLLM_API_KEY}"
    assert '--api-key "${VLLM_API_KEY}"' in cmd.script()
    assert "--api-key" not in vllm_command(config("aws-eks"), model="m").args


def test_vllm_api_server_args_for_managed_serving() -> None:
    """HyperPod's InferenceEndpointConfig worker.args: ``--model MODEL`` then the same flags (002 §3.1)."""
    cmd = vllm_command(config("aws-hyperpod"), model="/opt/ml/model")
    args = cmd.api_server_args()
    assert args[:2] == ["--model", "/opt/ml/model"]
    assert args[2:] == cmd.args[1:]
    assert option(args, "--tool-call-parser") == "kimi_k3"


# ---------------------------------------------------------------------------------------------------------
# SGLang


SEED_000_FLAGS = [
    ("--trust-remote-code", None),
    ("--model-path", "/mnt/models/models/moonshotai/Kimi-K3"),
    ("--served-model-name", "Kimi-K3"),
    ("--load-format", "runai_streamer"),
    ("--enable-metrics", None),
    ("--tp-size", "16"),
    ("--nnodes", "2"),
    ("--node-rank", "${POD_INDEX}"),
    ("--dist-init-addr", "kimi-k3-dist:20000"),
    ("--mem-fraction-static", "0.85"),
    ("--disable-flashinfer-autotune", None),
    ("--watchdog-timeout", "3600"),
    ("--reasoning-parser", "kimi_k3"),
    ("--tool-call-parser", "kimi_k3"),
    # 000 passes {"memory_limit": ...} alone; distributed is set because SGLang enables it only for object-store
    # URLs and this path is a mount (engine.streamer_extra_config); 000's 32 GiB a rank is 256 GiB for the node's 8
    # ranks, the streamer (0.17.1) reading the limit as the node's total (catalog.loaders)
    ("--model-loader-extra-config", '{"concurrency":16,"memory_limit":274877906944,"distributed":true}'),
    ("--mamba-full-memory-ratio", "0.43"),
    ("--host", "0.0.0.0"),
    ("--port", "30000"),
    ("--speculative-algorithm", "DSPARK"),
    ("--speculative-draft-model-path", "/mnt/models/models/RadixArk/Kimi-K3-DSpark"),
    ("--speculative-dspark-block-size", "7"),
    ("--enable-linear-replayssm-spec", None),
    ("--max-running-requests", "512"),
    ("--cuda-graph-max-bs-decode", "512"),
]

SEED_000_ENV = {
    "SGLANG_REQUEST_STATE_WAIT_TIMEOUT": "18000",
    "OMP_NUM_THREADS": "24",
    "SGLANG_SET_CPU_AFFINITY": "1",
    "SAFETENSORS_FAST_GPU": "1",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    "RUNAI_STREAMER_MEMORY_LIMIT": "274877906944",  # 000's 32 GiB a rank, as the node's total (8 ranks)
    "RUNAI_STREAMER_CONCURRENCY": "16",
    "SGLANG_USE_RUNAI_MODEL_STREAMER": "true",
}
"""000's environment, with its per-rank memory limit as the node's total."""

BEYOND_000_ENV = {"RUNAI_STREAMER_DIST_GLOBAL": "1", "RUNAI_STREAMER_PARTITION_POLICY": "files"}
"""What k3infra adds to 000's environment: the two nodes split one copy of the checkpoint (000 leaves the streamer's
group one node, so each node read it whole), by whole files through gcsfuse's whole-object cache
(catalog.distribution)."""


def _seed_command() -> list[str]:
    cmd = sglang_command(config("gcp-a4-sglang"), model="/mnt/models/models/moonshotai/Kimi-K3",
                         node_rank="${POD_INDEX}", dist_init_addr="kimi-k3-dist:20000",
                         draft_model="/mnt/models/models/RadixArk/Kimi-K3-DSpark")
    return cmd.argv


@pytest.mark.parametrize("flag,value", SEED_000_FLAGS, ids=[f for f, _ in SEED_000_FLAGS])
def test_sglang_has_every_flag_of_seed_000(flag: str, value: str | None) -> None:
    """gcp-a4-sglang (2 x A4, TP=16, DSPARK): each flag of 000's ``sglang serve`` with its value."""
    argv = _seed_command()
    assert flag in argv, f"{flag} missing from {argv}"
    if value is not None:
        assert option(argv, flag) == value


def test_sglang_flags_are_in_seed_000_order_and_nothing_else() -> None:
    argv = _seed_command()
    assert argv[:2] == ["sglang", "serve"]
    expected = [t for f, v in SEED_000_FLAGS for t in ((f,) if v is None else (f, v))]
    # issue 38: then the host-memory KV tier, 888 GiB of the node over its 8 ranks in decimal GB (sizing.offload)
    assert argv[2:] == expected + ["--enable-hierarchical-cache", "--hicache-size", "119"]


@pytest.mark.parametrize("name,value", sorted(SEED_000_ENV.items()))
def test_sglang_has_every_env_var_of_seed_000(name: str, value: str) -> None:
    cmd = sglang_command(config("gcp-a4-sglang"), model="m", node_rank="${POD_INDEX}", dist_init_addr="h:20000",
                         draft_model="d")
    assert cmd.env[name] == value


def test_sglang_env_is_exactly_seed_000s() -> None:
    cmd = sglang_command(config("gcp-a4-sglang"), model="m", node_rank="1", dist_init_addr="h:20000", draft_model="d")
    assert cmd.env == {**SEED_000_ENV, **BEYOND_000_ENV}
    assert cmd.role == Role.WORKER and cmd.port == 0 and cmd.extra_ports == {"dist": 20000}


def test_sglang_single_node_without_streamer_or_dspark() -> None:
    """One 8-GPU node (a3/a4 class) with safetensors: no rendezvous flags, no streamer config or env."""
    spec = EngineSpec.named("moonshotai/Kimi-K3", EngineName.SGLANG, nodes=1, tensor_parallel=8,
                            load_format="safetensors")
    cmd = sglang_command(spec, model="/m")
    for flag in ("--nnodes", "--node-rank", "--dist-init-addr", "--model-loader-extra-config",
                 "--speculative-algorithm", "--api-key"):
        assert flag not in cmd.args
    assert "RUNAI_STREAMER_MEMORY_LIMIT" not in cmd.env and "SGLANG_USE_RUNAI_MODEL_STREAMER" not in cmd.env
    assert option(cmd.args, "--tool-call-parser") == "kimi_k3"
    assert option(cmd.args, "--reasoning-parser") == "kimi_k3"
    assert cmd.role == Role.SINGLE and cmd.port == 30000


def test_sglang_requires_rendezvous_and_draft_model() -> None:
    cfg = config("gcp-a4-sglang")
    with pytest.raises(ValueError, match="dist_init_addr"):
        sglang_command(cfg, model="m", draft_model="d")
    with pytest.raises(ValueError, match="draft model"):
        sglang_command(cfg, model="m", dist_init_addr="h:1")
    with pytest.raises(ValueError, match="engine sglang"):
        sglang_command(config("aws-eks"), model="m")


def test_sglang_api_key_is_read_from_the_environment_at_start() -> None:
    cmd = sglang_command(config("gcp-a4-sglang"), model="m", node_rank="0", dist_init_addr="h:1", draft_model="d",
                         api_key_env="K3_API_KEY")
    assert option(cmd.args, "--api-key") == "${K3_API_KEY}"
    assert '--api-key "${K3_API_KEY}"' in cmd.script()


# ---------------------------------------------------------------------------------------------------------
# Shell composition


@pytest.mark.parametrize("token", ["plain", "--x=1", '{"memory_limit": 1}', "a b", "it's", "/p/a-b_c.d"])
def test_shell_word_round_trips(token: str) -> None:
    assert shlex.split(shell_word(token)) == [token]


def test_shell_word_keeps_variable_references_live() -> None:
    assert shell_word("${POD_INDEX}") == '"${POD_INDEX}"'
    assert shell_word("--addr=$(LWS_LEADER_ADDRESS)") == '"--addr=$(LWS_LEADER_ADDRESS)"'


def test_script_exec_line_parses_back_to_argv() -> None:
    cmd = vllm_command(config("azure-gb300"), model="az://c/models/moonshotai/Kimi-K3", role=Role.LEADER)
    exec_line = cmd.script().splitlines()[-1]
    assert shlex.split(exec_line) == ["exec", *cmd.argv]


def test_by_pod_index_runs_the_leader_on_pod_0_and_the_worker_elsewhere() -> None:
    cfg = config("azure-gb300", "workload=statefulset")
    leader = vllm_command(cfg, model="az://c/m", role=Role.LEADER, leader_address="k3-dist")
    worker = vllm_command(cfg, model="az://c/m", role=Role.WORKER, node_rank="${POD_INDEX}", leader_address="k3-dist")
    lines = by_pod_index(leader, worker, ["ldconfig || true"]).splitlines()
    check = ["  " + line for line in cuda_driver_check(cmd_engine(leader))]
    n = len(check)
    assert lines[:3 + n] == ["set -eo pipefail", "ldconfig || true", 'if [ "${POD_INDEX}" = "0" ]; then', *check]
    assert lines[3 + n].startswith("  exec vllm serve az://c/m ") and "--node-rank 0 --master-addr k3-dist" in lines[3 + n]
    assert lines[4 + n:5 + 2 * n] == ["else", *check]
    offload = cfg.sizing.offload.per_node_gib * cfg.nodes  # type: ignore[union-attr]
    assert lines[5 + 2 * n].endswith('--node-rank "${POD_INDEX}" --master-addr k3-dist --master-port 29501 --headless '
                                     f"--kv-offloading-size {offload} --kv-offloading-backend native")
    assert lines[6 + 2 * n:] == ["fi"]


def test_vllm_dspark_passes_the_recipes_speculative_config_with_the_synced_draft() -> None:
    cfg = config("aws-eks", "speculativeDecoding=dspark",
                 "weights={bucket: my-org-kimi-k3-weights, revision: main, draftRevision: main}")
    cmd = vllm_command(cfg, model="m", draft_model="/mnt/models/models/RedHatAI/Kimi-K3-speculator.dspark")
    assert json.loads(option(cmd.args, "--speculative-config") or "") == {
        "model": "/mnt/models/models/RedHatAI/Kimi-K3-speculator.dspark", "method": "dspark",
        "num_speculative_tokens": 8, "draft_sample_method": "probabilistic", "rejection_sample_method": "block"}
    with pytest.raises(ValueError, match="needs the model's vLLM draft model and its path"):
        vllm_command(cfg, model="m")
    pp = EngineSpec.named("moonshotai/Kimi-K3", EngineName.VLLM, nodes=3, tensor_parallel=8, pipeline_parallel=3,
                          speculative_decoding=True)
    with pytest.raises(ValueError, match="DSpark does not compose with pipeline parallelism"):
        vllm_command(pp, model="m", role=Role.LEADER, draft_model="d")

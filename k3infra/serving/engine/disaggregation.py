"""What a role of a disaggregated or wide-EP topology adds to an engine's command line (catalog/topologies.py).

vLLM (the recipe's ``pd_cluster`` and ``multi_node_dep``, llm-d's wide-ep-lws):

- every role: ``--kv-transfer-config`` with NixlConnector, the role's ``kv_role``, ``kv_load_failure_policy: fail`` and,
  off UCX, NIXL's backend (``{"backends": ["LIBFABRIC"]}`` on EFA, llm-d guides/pd-disaggregation aws patch);
  ``VLLM_NIXL_SIDE_CHANNEL_HOST`` (the pod's own address, set by the pod template from the downward API) and
  ``VLLM_NIXL_SIDE_CHANNEL_PORT``; ``UCX_TLS`` for the transport; the role's recipe flags and variables;
- a DEP group: ``--tensor-parallel-size 1``, ``--enable-expert-parallel``, ``--all2all-backend``, ``--moe-backend
  deep_gemm_mega_moe`` inside one NVLink domain, else ``auto`` (catalog.topologies.dep_moe_backend), ``--data-parallel-hybrid-lb``, ``--data-parallel-size`` (every GPU of the group),
  ``--data-parallel-size-local`` (the node's GPUs), ``--data-parallel-address $(LWS_LEADER_ADDRESS)``,
  ``--data-parallel-rpc-port 5555`` and ``--data-parallel-start-rank`` (the LeaderWorkerSet index x the node's GPUs,
  computed by the script before ``exec``, as llm-d's decode.yaml does); every pod serves HTTP for its own ranks.

SGLang 0.5.23 (``sglang/srt/arg_groups/fields/disagg.py``, ``fields/parallel.py``): ``--disaggregation-mode
prefill|decode``, ``--disaggregation-transfer-backend`` and, on a prefill server, ``--disaggregation-bootstrap-port``; a
DEP group adds ``--attn-dp-size N --ep-size N`` over its ``--tp-size N`` (0.5.23 deprecates the docs' ``--dp-size N
--enable-dp-attention`` spelling for ``--attn-dp-size``: server_args.py, arg_groups/parallel_hook.py
``handle_deprecated_dp_attention``).
"""

import json

from ...catalog.recipes import Flag
from ...catalog.topologies import (
    KV_LOAD_FAILURE_POLICY,
    NIXL_BACKENDS,
    SGLANG_BOOTSTRAP_PORT,
    SGLANG_HOST_ENV,
    SGLANG_TRANSFER_BACKEND,
    UCX_TLS,
    VLLM_DP_RPC_PORT,
    VLLM_ROLE_RECIPES,
    KvTransport,
    RoleName,
    dep_moe_backend,
)
from ...catalog import EngineName
from .spec import LWS_LEADER_ADDRESS, EngineSpec, Role

DP_START_RANK_ENV = "K3_DP_START_RANK"
"""The variable the script sets to a DEP pod's first data-parallel rank before ``exec`` (``--data-parallel-start-rank``)."""

NIXL_SIDE_CHANNEL_HOST_ENV = "VLLM_NIXL_SIDE_CHANNEL_HOST"
"""vLLM's NIXL handshake address: the pod's own IP (the pod template sets it from ``status.podIP``, llm-d decode.yaml)."""

ROLE_HOST_ENV = {EngineName.VLLM: NIXL_SIDE_CHANNEL_HOST_ENV, EngineName.SGLANG: SGLANG_HOST_ENV}
"""The variable each engine reads the address the other role reaches this pod's KV endpoint at from (the pod's IP):
vLLM's NIXL side channel, SGLang's KV manager (catalog.topologies ``SGLANG_HOST_ENV``)."""


def kv_transfer_config(role: RoleName, transport: KvTransport) -> str:
    """vLLM ``--kv-transfer-config`` of one role (recipes strategies/pd_cluster.yaml; llm-d's aws patch off UCX)."""
    recipe = VLLM_ROLE_RECIPES[role]
    config: dict[str, object] = {"kv_connector": "NixlConnector", "kv_role": recipe.kv_role,
                                 "kv_load_failure_policy": KV_LOAD_FAILURE_POLICY}
    if NIXL_BACKENDS[transport] != "UCX":
        config["kv_connector_extra_config"] = {"backends": [NIXL_BACKENDS[transport]]}
    return json.dumps(config, separators=(",", ":"))


def vllm_role_flags(spec: EngineSpec) -> list[Flag]:
    """The role's flags, after the recipe's hardware settings (last-wins: a role's value replaces theirs)."""
    role = spec.role
    if role is None:
        return []
    flags: list[Flag] = []
    if role.data_parallel:
        assert role.all2all is not None, "a DEP group has an all-to-all backend"
        assert spec.accelerator is not None, "a DEP group is sized on an accelerator"
        moe = dep_moe_backend(spec.data_parallel_size, spec.accelerator.nvlink_domain_gpus)
        flags += [("--all2all-backend", str(role.all2all)), ("--moe-backend", moe), ("--data-parallel-hybrid-lb",)]
    if role.name is not None:
        assert role.transport is not None, "a role of a disaggregated topology has a KV transport"
        flags += list(VLLM_ROLE_RECIPES[role.name].flags)
        flags.append(("--kv-transfer-config", kv_transfer_config(role.name, role.transport)))
    if spec.http_port != spec.engine.port:
        flags.append(("--port", str(spec.http_port)))
    return flags


def vllm_data_parallel_flags(spec: EngineSpec, role: Role, leader_address: str = LWS_LEADER_ADDRESS) -> list[Flag]:
    """A DEP group's data-parallel wiring from the LeaderWorkerSet (llm-d guides/wide-ep-lws decode.yaml)."""
    local = spec.local_gpus
    start = "0" if role in (Role.LEADER, Role.SINGLE) else f"${{{DP_START_RANK_ENV}}}"
    flags: list[Flag] = [("--data-parallel-size", str(spec.data_parallel_size)),
                         ("--data-parallel-size-local", str(local))]
    if spec.nodes > 1:
        flags += [("--data-parallel-address", leader_address), ("--data-parallel-rpc-port", str(VLLM_DP_RPC_PORT)),
                  ("--data-parallel-start-rank", start)]
    return flags


def dp_start_rank_line(spec: EngineSpec, role: Role) -> list[str]:
    """The shell line that sets a DEP worker's first rank from ``LWS_WORKER_INDEX`` (none for a leader)."""
    if spec.role is None or not spec.role.data_parallel or role != Role.WORKER:
        return []
    return [f"{DP_START_RANK_ENV}=$(( LWS_WORKER_INDEX * {spec.local_gpus} ))"]


def vllm_role_env(spec: EngineSpec) -> dict[str, str]:
    """The role's recipe variables, the NIXL side channel's port and the transport's ``UCX_TLS``."""
    role = spec.role
    if role is None or role.name is None:
        return {}
    recipe = VLLM_ROLE_RECIPES[role.name]
    env = dict(recipe.env)
    env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(recipe.side_channel_port)
    assert role.transport is not None
    if role.transport in UCX_TLS:
        env["UCX_TLS"] = UCX_TLS[role.transport]
    return env


def side_channel_port(spec: EngineSpec) -> int | None:
    """The NIXL side channel's port of a disaggregated role (the other role's pods connect to it), else None."""
    if spec.role is None or spec.role.name is None:
        return None
    return VLLM_ROLE_RECIPES[spec.role.name].side_channel_port


def sglang_role_args(spec: EngineSpec) -> list[str]:
    """SGLang's disaggregation and DP-attention + EP arguments of the role."""
    role = spec.role
    if role is None:
        return []
    args: list[str] = []
    if role.data_parallel:
        n = str(spec.data_parallel_size)
        args += ["--attn-dp-size", n] + ([] if spec.expert_parallel > 1 else ["--ep-size", n])  # else 000's set has it
    if role.name is not None:
        assert role.transport is not None
        args += ["--disaggregation-mode", str(role.name),
                 "--disaggregation-transfer-backend", SGLANG_TRANSFER_BACKEND[role.transport]]
        if role.name == RoleName.PREFILL:
            args += ["--disaggregation-bootstrap-port", str(SGLANG_BOOTSTRAP_PORT)]
    return args

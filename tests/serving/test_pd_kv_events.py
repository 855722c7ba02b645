"""KV events only where prefix caching runs (not on decode), and the NetworkPolicy admits every DP rank's publisher
port where a DEP group publishes (the independent review of the PD stacks, m2)."""

from typing import Any

from k3infra.catalog import ACCELERATORS, EngineName
from k3infra.catalog.topologies import All2AllBackend, KvTransport, Parallelism, RoleName
from k3infra.serving.engine import EngineSpec, RoleSpec
from k3infra.serving.engine.arguments import kv_events_flags
from k3infra.serving.server_network_policy import _events_port  # pyright: ignore[reportPrivateUsage]


def _spec(name: RoleName | None, par: Parallelism) -> EngineSpec:
    spec = EngineSpec.named("moonshotai/Kimi-K3", EngineName.VLLM, nodes=4, tensor_parallel=16,
                            accelerator=ACCELERATORS["gb300-nvl72"])
    role = RoleSpec(name, par, all2all=All2AllBackend.DEEPEP_V2 if par == Parallelism.DEP else None,
                    transport=KvTransport.UCX_RDMA if name else None)
    return EngineSpec(**{**spec.__dict__, "role": role, "kv_events": True})


def test_decode_publishes_no_kv_events() -> None:
    assert kv_events_flags(_spec(RoleName.DECODE, Parallelism.DEP)) == []
    assert [f[0] for f in kv_events_flags(_spec(RoleName.PREFILL, Parallelism.TEP))] == [
        "--enable-scale-out", "--kv-events-config"]
    assert [f[0] for f in kv_events_flags(_spec(None, Parallelism.DEP))][1] == "--kv-events-config"


def _args(role: str, par: str, events: bool = True) -> Any:
    return {"engine": "vllm", "kv_events": events, "tensor_parallel": 16,
            "role": {"name": role, "parallelism": par}}


def test_events_port_range_over_a_dep_groups_ranks() -> None:
    wide = _events_port(_args("wide-ep", "dep"))
    assert (wide.port, wide.end_port) == (5557, 5572)
    for args in (_args("prefill", "tep"), _args("decode", "dep"), _args("wide-ep", "dep", events=False)):
        port = _events_port(args)
        assert (port.port, port.end_port) == ("kv-events", None)

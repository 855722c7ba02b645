"""The listeners of one pod of a disaggregated role never overlap across its data-parallel ranks (the independent
review of the PD stacks, B1: NIXL's side channel at 5557 + DP rank collided with the KV-events publisher's)."""

import pytest

from k3infra.catalog import ACCELERATORS, EngineName
from k3infra.catalog.topologies import All2AllBackend, KvTransport, Parallelism, RoleName
from k3infra.serving.engine import EngineSpec, RoleSpec
from k3infra.serving.engine import disaggregation, vllm as vllm_module
from k3infra.serving.engine.vllm import listener_problems, pod_listeners


def _decode(events: bool = True) -> EngineSpec:
    spec = EngineSpec.named("moonshotai/Kimi-K3", EngineName.VLLM, nodes=4, tensor_parallel=16,
                            accelerator=ACCELERATORS["gb300-nvl72"])
    role = RoleSpec(RoleName.DECODE, Parallelism.DEP, all2all=All2AllBackend.DEEPEP_V2,
                    transport=KvTransport.UCX_RDMA, sidecar=True)
    return EngineSpec(**{**spec.__dict__, "role": role, "tensor_parallel": 1, "kv_events": events})


def test_side_channel_clear_of_every_listener() -> None:
    spec = _decode()
    assert spec.data_parallel_size == 16
    listeners = pod_listeners(spec)
    assert listeners["nixl"] == (5600, 5615)  # vllm 0.33.0 envs.py default, + data_parallel_index
    assert listener_problems(spec) == []


def test_planted_side_channel_at_the_events_port_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old behaviour: the role's side channel at 5557/5558, beside KV events at 5557 + DP rank."""
    spec = _decode(events=False)
    monkeypatch.setattr(disaggregation, "side_channel_port", lambda s: 5558)
    monkeypatch.setattr(vllm_module, "side_channel_port", lambda s: 5558)
    monkeypatch.setattr(vllm_module, "kv_events_flags", lambda s: [("--kv-events-config", "{}")])
    problems = listener_problems(spec)
    assert problems == ["listeners 'kv-events' 5557..5572 and 'nixl' 5558..5573 of one pod overlap across "
                        "16 data-parallel ranks"]
    assert problems == vllm_module.vllm_launch_problems(spec)

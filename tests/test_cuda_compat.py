"""CUDA forward compatibility: an engine built for CUDA 13 on a pool whose driver runs only 12.x."""

import pytest

from k3infra.catalog import ENGINES, EngineName
from k3infra.catalog.ack import ACK_NVIDIA_DRIVERS
from k3infra.catalog.cuda import driver_cuda_major, needs_forward_compatibility
from k3infra.serving.engine import forward_compatibility
from tests.support import plan


@pytest.mark.parametrize("driver,major", [("580.65.06", 13), ("580.159.04", 13), ("590.1", 13), ("575.51.03", 12),
                                          ("570.169", 12), ("535.161.07", 12), ("525.60.13", 12), ("520.1", 11)])
def test_driver_branches_map_to_nvidias_cuda_majors(driver: str, major: int) -> None:
    assert driver_cuda_major(driver) == major


def test_every_driver_ack_installs_needs_forward_compatibility_for_the_pinned_engines() -> None:
    """ACK lists no 580-branch driver, and both pinned engines are CUDA 13 builds."""
    assert {ENGINES[e].cuda_major for e in EngineName} == {13}
    assert all(needs_forward_compatibility(v, 13) for v in (*ACK_NVIDIA_DRIVERS.supported, ACK_NVIDIA_DRIVERS.default))


def test_vllm_turns_it_on_itself_and_sglang_gets_the_library_path() -> None:
    vllm = forward_compatibility(ENGINES[EngineName.VLLM], "570.169")
    sglang = forward_compatibility(ENGINES[EngineName.SGLANG], "570.169")
    assert vllm and vllm.env == {"VLLM_ENABLE_CUDA_COMPATIBILITY": "1"} and vllm.setup == []
    assert sglang and sglang.env == {} and sglang.setup == ['export LD_LIBRARY_PATH="/usr/local/cuda/compat:${LD_LIBRARY_PATH:-}"']
    assert forward_compatibility(ENGINES[EngineName.VLLM], "580.159.04") is None
    assert forward_compatibility(ENGINES[EngineName.VLLM], None) is None


def _engine_env(p) -> dict[str, str]:
    lws = next(r for r in p.recording.ordered() if r.type.endswith("LeaderWorkerSet") or
               r.inputs.get("kind") == "LeaderWorkerSet")
    containers = lws.inputs["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    return {e["name"]: e.get("value") for c in containers if c["name"] == "engine" for e in c.get("env", [])}


def test_ack_servers_run_on_forward_compatibility_and_the_plan_says_so() -> None:
    p = plan("alicloud-ack")
    assert _engine_env(p)["VLLM_ENABLE_CUDA_COMPATIBILITY"] == "1"
    assert any("570.169 runs CUDA 12.x" in w and "forward compatibility" in w for w in p.warnings)

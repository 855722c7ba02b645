"""CUDA forward compatibility: an engine built for CUDA 13 on a node whose driver runs only 12.x."""

import subprocess
from pathlib import Path

import pytest

from k3infra.catalog import ENGINES, EngineName
from k3infra.catalog.ack import ACK_NVIDIA_DRIVERS
from k3infra.catalog.cuda import driver_cuda_major, needs_forward_compatibility
from k3infra.serving.engine import cuda_driver_check, forward_compatibility_statement
from tests.support import plan

PROPRIETARY = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Thu Jul 10 21:05:53 UTC 2025\n"
               "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  {v}  Release Build  (dvs-builder@U16)  Mon\n"


@pytest.mark.parametrize("driver,major", [("580.65.06", 13), ("580.159.04", 13), ("590.1", 13), ("575.51.03", 12),
                                          ("570.169", 12), ("535.161.07", 12), ("525.60.13", 12), ("520.1", 11)])
def test_driver_branches_map_to_nvidias_cuda_majors(driver: str, major: int) -> None:
    assert driver_cuda_major(driver) == major


def test_every_driver_ack_installs_needs_forward_compatibility_for_the_pinned_engines() -> None:
    """ACK lists no 580-branch driver, and both pinned engines are CUDA 13 builds."""
    assert {ENGINES[e].cuda_major for e in EngineName} == {13}
    assert all(needs_forward_compatibility(v, 13) for v in (*ACK_NVIDIA_DRIVERS.supported, ACK_NVIDIA_DRIVERS.default))


def _run_check(engine: EngineName, tmp_path: Path, version_file: str | None) -> dict[str, str]:
    """The engine's driver check under the script's own shell options; the environment it leaves."""
    path = tmp_path / "version"
    if version_file is not None:
        path.write_text(version_file)
    script = "\n".join(["set -eo pipefail", *cuda_driver_check(ENGINES[engine]),
                        'echo "LD=${LD_LIBRARY_PATH:-}"', 'echo "VLLM=${VLLM_ENABLE_CUDA_COMPATIBILITY:-}"'])
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                       env={"PATH": "/usr/bin:/bin", "K3_NVIDIA_VERSION_FILE": str(path)})
    return dict(line.split("=", 1) for line in r.stdout.splitlines())


@pytest.mark.parametrize("text", [PROPRIETARY, OPEN])
def test_an_older_driver_turns_forward_compatibility_on_at_start(tmp_path: Path, text: str) -> None:
    assert _run_check(EngineName.VLLM, tmp_path, text.format(v="570.169")) == {
        "LD": "/usr/local/cuda/compat:", "VLLM": "1"}
    assert _run_check(EngineName.SGLANG, tmp_path, text.format(v="535.161.07")) == {
        "LD": "/usr/local/cuda/compat:", "VLLM": ""}


@pytest.mark.parametrize("text", [PROPRIETARY.format(v="580.159.04"), OPEN.format(v="590.44.01"), None, "garbage\n"])
def test_a_current_or_unreadable_driver_leaves_it_off(tmp_path: Path, text: str | None) -> None:
    """Compat libraries under a newer driver fail too (vllm PR #33116): only an older driver turns them on, and a
    node whose version cannot be read starts as it is."""
    assert _run_check(EngineName.VLLM, tmp_path, text) == {"LD": "", "VLLM": ""}


def test_every_engine_script_checks_the_driver_before_the_engine_starts() -> None:
    p = plan("alicloud-ack")
    lws = next(r for r in p.recording.ordered() if r.inputs.get("kind") == "LeaderWorkerSet")
    for role in ("leaderTemplate", "workerTemplate"):
        engine = next(c for c in lws.inputs["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"]
                      if c["name"] == "engine")
        script = engine["args"][0]
        assert script.index("/proc/driver/nvidia/version") < script.index("exec vllm serve")


def test_the_plan_says_when_the_pools_known_driver_is_older() -> None:
    assert forward_compatibility_statement(ENGINES[EngineName.VLLM], "580.159.04") is None
    assert forward_compatibility_statement(ENGINES[EngineName.VLLM], None) is None
    assert any("570.169 runs CUDA 12.x" in w and "forward compatibility" in w for w in plan("alicloud-ack").warnings)
    assert not any("forward compatibility" in w for w in plan("gcp-a4xmax").warnings)

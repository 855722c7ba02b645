"""CUDA forward compatibility, decided on the node: the engine script's driver check and what the plan says."""

from ...catalog import Engine, EngineName
from ...catalog.cuda import CUDA_MAJOR_MIN_DRIVER, driver_cuda_major, needs_forward_compatibility

CUDA_COMPAT_DIR = "/usr/local/cuda/compat"
"""Where NVIDIA's CUDA base images install the forward compatibility package (``cuda-compat-X-Y``; ``/usr/local/cuda``
links the image's toolkit)."""

NVIDIA_DRIVER_VERSION_FILE = "/proc/driver/nvidia/version"
"""The loaded kernel module's version (``NVRM version: ... Kernel Module  570.169  ...``), readable in any container."""


def cuda_driver_check(engine: Engine) -> list[str]:
    """Shell lines that turn CUDA forward compatibility on when, and only when, the node's driver is older than the
    engine's CUDA major needs (catalog/cuda.py).

    Decided on the node, not in the plan: a Lingjun or PAI-EAS node's driver is unpublished, and a cloud's default
    driver moves; loading the compat libraries under a newer driver fails too ("unsupported display driver / cuda
    driver combination", vllm-project/vllm PR #33116). The library path is exported before ``exec``, so every
    process the engine starts, forked or spawned, loads them; vLLM is also told through its own switch
    (vllm 0.33.0 ``vllm/env_override.py``: ``VLLM_ENABLE_CUDA_COMPATIBILITY``, ``VLLM_CUDA_COMPATIBILITY_PATH``).
    """
    floor = CUDA_MAJOR_MIN_DRIVER[engine.cuda_major]
    exports = f'export LD_LIBRARY_PATH="{CUDA_COMPAT_DIR}:${{LD_LIBRARY_PATH:-}}"'
    if engine.name == EngineName.VLLM:
        exports += f" VLLM_ENABLE_CUDA_COMPATIBILITY=1 VLLM_CUDA_COMPATIBILITY_PATH={CUDA_COMPAT_DIR}"
    return [
        f"driver=$(grep -oE '[0-9]{{3,}}\\.[0-9]+(\\.[0-9]+)?' "
        f'"${{K3_NVIDIA_VERSION_FILE:-{NVIDIA_DRIVER_VERSION_FILE}}}" 2>/dev/null | head -n 1) || driver=""',
        f'if [ -n "$driver" ] && [ "${{driver%%.*}}" -lt {floor} ]; then',
        f'  echo "k3infra: NVIDIA driver $driver predates CUDA {engine.cuda_major} (driver {floor} or later):'
        f' using the image\'s CUDA forward compatibility libraries" >&2',
        f"  {exports}",
        "fi",
    ]


def forward_compatibility_statement(engine: Engine, driver_version: str | None) -> str | None:
    """What the plan says when a pool's known driver is older than the engine's CUDA major needs; None otherwise."""
    if not driver_version or not needs_forward_compatibility(driver_version, engine.cuda_major):
        return None
    return (f"the nodes' NVIDIA driver {driver_version} runs CUDA {driver_cuda_major(driver_version)}.x and "
            f"{engine.name} {engine.release} is built for CUDA {engine.cuda_major}: the engine script turns on the "
            f"image's CUDA forward compatibility libraries ({CUDA_COMPAT_DIR}; data-center GPUs only). An image "
            f"without them stops at CUDA initialisation (\"CUDA driver version is insufficient for CUDA runtime "
            f"version\"); use a {CUDA_MAJOR_MIN_DRIVER[engine.cuda_major]}-branch driver as soon as the cloud offers one")

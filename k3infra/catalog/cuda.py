"""Which NVIDIA driver runs which CUDA major release, and what an older driver needs.

NVIDIA, "CUDA Compatibility: Minor Version Compatibility" (docs.nvidia.com/deploy/cuda-compatibility/
minor-version-compatibility.html, Table 1): an application built with CUDA 13.x needs a driver >= 580, one built
with 12.x a driver >= 525 (and < 580 is still 12.x's branch); within a major release, minor version
compatibility lets it run on any driver of that range. Across majors it needs the CUDA forward compatibility
package (``cuda-compat``, shipped in NVIDIA's CUDA base images under ``/usr/local/cuda-X.Y/compat``), which works
only on data-center GPUs ("Forward Compatibility", same site: "supported only on NVIDIA Data Center GPUs").
"""

CUDA_MAJOR_MIN_DRIVER: dict[int, int] = {13: 580, 12: 525, 11: 450}
"""The lowest driver branch of each CUDA major release (NVIDIA's minor version compatibility table)."""


def driver_cuda_major(driver_version: str) -> int:
    """The newest CUDA major release a driver runs without the forward compatibility package."""
    branch = int(driver_version.split(".")[0])
    return max((major for major, floor in CUDA_MAJOR_MIN_DRIVER.items() if branch >= floor), default=0)


def needs_forward_compatibility(driver_version: str, cuda_major: int) -> bool:
    """True when a build for ``cuda_major`` runs on ``driver_version`` only through ``cuda-compat``."""
    return driver_cuda_major(driver_version) < cuda_major

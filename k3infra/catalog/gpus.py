"""GPU configurations the seed's fit table (002 §2.2) lists, as inputs; sizing decides whether each fits."""

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuConfiguration:
    """A number of GPUs of one model, independent of any cloud."""

    label: str
    gpus: int
    gpu_memory_gb: float
    source: str


SEED_FIT_TABLE: tuple[GpuConfiguration, ...] = (
    GpuConfiguration("8x B300 (288GB)", 8, 288, "002 §2.2"),
    GpuConfiguration("8x AMD MI355X", 8, 288, "002 §2.2"),
    GpuConfiguration("16x H200 (141GB)", 16, 141, "002 §2.2"),
    GpuConfiguration("16x B200 (180GB)", 16, 180, "002 §2.2"),
    GpuConfiguration("32x H100 (80GB)", 32, 80, "002 §2.2"),
    GpuConfiguration("8x B200 (180GB)", 8, 180, "002 §2.2"),
    GpuConfiguration("8x H200 (141GB)", 8, 141, "002 §2.2"),
)
"""The rows of 002 §2.2, in the seed's order."""

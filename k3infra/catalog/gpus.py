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


@dataclass(frozen=True)
class GpuRates:
    """What one GPU computes and reads per second, the terms of the advisory prefill:decode ratio
    (sizing.workload): dense FP8 tensor throughput (prefill is compute-bound) and HBM bandwidth (decode reads its
    weights every step)."""

    fp8_dense_tflops: float
    """Dense (no 2:4 sparsity) FP8 tensor-core TFLOPS."""
    hbm_tbps: float
    """HBM bandwidth in TB/s."""
    source: str


_GB300_NVL72 = ("GB300 NVL72 as advertised: 360 PF dense FP8 and 576 TB/s HBM for 72 GPUs (glennklockwood.com/garden/"
                "processors/B300, from NVIDIA's GTC25 material): 5,000 TFLOPS and 8 TB/s per GPU")

GPU_RATES: dict[str, GpuRates] = {
    "B300": GpuRates(4500, 8.0, "HGX B300: FP8 4,500 TFLOPS dense (9,000 sparse), 288 GB HBM3e at up to 8 TB/s "
                                "(glennklockwood.com/garden/processors/B300; acecloud.ai/blog/nvidia-hgx-b300: "
                                "\"HBM bandwidth Up to 8 TB/s per GPU\")"),
    "GB300": GpuRates(5000, 8.0, _GB300_NVL72),
    "B200": GpuRates(4500, 8.0, "HGX B200: FP8/FP6 72 PFLOPS with sparsity for 8 GPUs (fibermall.com HGX B300 NVL16 "
                                "vs HGX B200 table), 4,500 TFLOPS dense per GPU; 8 TB/s HBM3e (ESTIMATE: B300's, the "
                                "same HBM3e generation)"),
    "GB200": GpuRates(5000, 8.0, "ESTIMATE: GB200 NVL72 as GB300's (" + _GB300_NVL72 + "); GB200 NVL72's own FP8 "
                                 "figure is not read here"),
    "H200": GpuRates(1979, 4.8, "ESTIMATE: H200 SXM datasheet figures as widely quoted (3,958 TFLOPS FP8 with "
                                "sparsity, 4.8 TB/s HBM3e); not read here: UNCONFIRMED"),
    "H20-class (96 GB)": GpuRates(296, 4.0, "ESTIMATE: H20 figures as widely quoted (296 TFLOPS FP8, 4.0 TB/s "
                                            "HBM3); not read here: UNCONFIRMED"),
}
"""Per GPU model (``Accelerator.gpu_model``)."""

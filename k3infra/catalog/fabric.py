"""Facts the fabric check compares a serving group's collectives with: NVLink bandwidth per GPU generation, the
default threshold, and how long the check takes.

The scale-out network of each machine type (NIC count x speed, EFA, RoCE, eRDMA, and whether the pods reach it) is
``Accelerator.fabric`` (accelerators.py); the front-end network is ``Accelerator.frontend_gbps``.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .accelerators import Accelerator


@dataclass(frozen=True)
class NvlinkBandwidth:
    """The NVLink bandwidth of one GPU."""

    generation: int
    bidirectional_gb_per_s: int
    """Every NVLink of the GPU together, both directions (the vendor's figure), GB/s."""
    source: str

    @property
    def per_direction_gb_per_s(self) -> float:
        """One direction: what a collective's bus bandwidth is compared with (nccl-tests ``doc/PERFORMANCE.md``: the
        bus bandwidth "should reflect the speed of the hardware bottleneck")."""
        return self.bidirectional_gb_per_s / 2


NVLINK_5 = NvlinkBandwidth(5, 1800, "nvidia.com/en-us/data-center/nvlink (fifth generation: a Blackwell GPU has 18 "
                                    "NVLink connections of 100 GB/s, 1.8 TB/s in all, bidirectional)")
NVLINK_4 = NvlinkBandwidth(4, 900, "nvidia.com/en-us/data-center/nvlink (fourth generation, Hopper: 18 links, "
                                   "900 GB/s per GPU, bidirectional)")

NVLINK_BY_GPU: Mapping[str, NvlinkBandwidth] = MappingProxyType({
    "B300": NVLINK_5,  # AWS P6-B300 launch blog: GPU-GPU 1800 GB/s (docs/catalog-research.md §1.1)
    "GB300": NVLINK_5,
    "B200": NVLINK_5,
    "GB200": NVLINK_5,
    "H200": NVLINK_4,
    "H20-class (96 GB)": NvlinkBandwidth(4, 900, "Alibaba ECS doc 'GPU-accelerated compute-optimized instance "
                                                 "families' (ebmgn8v: 96 GB HBM3 per GPU, 900 GB/s NVLink; "
                                                 "docs/catalog-research.md C1)"),
})
"""NVLink bandwidth by ``Accelerator.gpu_model``."""


def nvlink_of(accelerator: Accelerator) -> NvlinkBandwidth:
    """The NVLink bandwidth of the machine type's GPUs."""
    return NVLINK_BY_GPU[accelerator.gpu_model]


DEFAULT_MIN_BUSBW_FRACTION = 0.5
"""ESTIMATE: the share of the expected bus bandwidth a path must reach (``fabricCheck.minBusbwFraction``). The
failures it is there to catch land far below it: a socket fallback on a node of 8 x 400 Gb/s RDMA NICs runs over
the front-end network (400 Gb/s for the whole node on A4, 1/8 of the RDMA fabric), one NIC of eight in use is 1/8,
GPUDirect RDMA off typically halves it. nccl-tests' large-message figures on a healthy fabric sit well above it
(no page read here states a fraction to quote), and a check of 20 iterations of 256 MiB does not always reach the
plateau: half leaves that margin."""

CHECK_BYTES = 256 << 20
"""ESTIMATE: bytes per rank per collective. nccl-tests' bus bandwidth reaches its plateau from a few hundred MB per
rank on NVLink and RDMA fabrics; 256 MiB in float32 is 1 GiB of GPU memory per rank for the two buffers."""
CHECK_WARMUP = 5
CHECK_ITERS = 20

CHECK_SECONDS = 150
"""ESTIMATE of the check's length once its pods are scheduled on nodes holding the engine image: the container starts
and imports torch (10-30 s on these images), ``torch.distributed.run`` rendezvouses every node (seconds once all pods
run), NCCL builds each path's communicator with its log on (seconds; up to a minute with a network plugin and
multi-node NVLink), and 25 collectives of 256 MiB per path take under 5 s even on a socket fallback of 10 Gb/s
(1.3 GB each way: 25 x 0.27 GB / 1.25 GB/s). Rounded up to 150 s."""

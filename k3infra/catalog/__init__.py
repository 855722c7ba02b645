"""Facts as frozen data: models, GPU machine types, engines and images, and stated assumptions.

Every entry cites its source (a seed section, a vendor page, or an explicit ASSUMPTION / ESTIMATE).
Nothing here imports Pulumi or any other part of k3infra.
"""

from .accelerators import ACCELERATORS, Accelerator, Fabric, PriceRange, accelerators_of
from .assumptions import (
    CLUSTER_CREATE_MINUTES,
    GATEWAY_REQUEST_TIMEOUT_SECONDS,
    GPU_POOL_CREATE_MINUTES,
    HF_SYNC_GBPS,
    HOURS_PER_MONTH,
    LOADER_PROFILES,
    PIPELINE_INSTEAD_OF_MNNVL_THROUGHPUT,
    PIPELINE_INSTEAD_OF_MNNVL_TOKEN_LATENCY,
    PROBE_SAFETY_FACTOR,
    LoaderProfile,
)
from .engines import ENGINES, IMAGES, Engine, EngineImage
from .health_checks import HEALTH_CHECK_SOURCES, HealthCheckSource, pod_health_check_ranges
from .models import GB, KIMI_K3, MODELS, DraftModel, Model
from .sources import SEED_GCP, SEED_MULTICLOUD
from .types import (
    ENGINE_CACHE_BY_DEFAULT,
    IMAGE_PRE_PULL_PLATFORMS,
    KUBERNETES_PLATFORMS,
    NOTHING_TO_CREATE,
    PLATFORMS_BY_CLOUD,
    SYNC_POOL_PLATFORMS,
    AddonState,
    CapacityType,
    Cloud,
    CpuArch,
    EngineName,
    Exposure,
    Loader,
    ModelSource,
    Platform,
    WeightSource,
    Workload,
)

__all__ = [
    "ACCELERATORS",
    "CLUSTER_CREATE_MINUTES",
    "ENGINES",
    "GATEWAY_REQUEST_TIMEOUT_SECONDS",
    "GB",
    "GPU_POOL_CREATE_MINUTES",
    "HEALTH_CHECK_SOURCES",
    "HF_SYNC_GBPS",
    "HOURS_PER_MONTH",
    "IMAGES",
    "KIMI_K3",
    "ENGINE_CACHE_BY_DEFAULT",
    "IMAGE_PRE_PULL_PLATFORMS",
    "KUBERNETES_PLATFORMS",
    "NOTHING_TO_CREATE",
    "LOADER_PROFILES",
    "MODELS",
    "PIPELINE_INSTEAD_OF_MNNVL_THROUGHPUT",
    "PIPELINE_INSTEAD_OF_MNNVL_TOKEN_LATENCY",
    "SYNC_POOL_PLATFORMS",
    "PLATFORMS_BY_CLOUD",
    "PROBE_SAFETY_FACTOR",
    "SEED_GCP",
    "SEED_MULTICLOUD",
    "Accelerator",
    "AddonState",
    "CapacityType",
    "Cloud",
    "CpuArch",
    "DraftModel",
    "Engine",
    "EngineImage",
    "EngineName",
    "Exposure",
    "Fabric",
    "HealthCheckSource",
    "Loader",
    "ModelSource",
    "LoaderProfile",
    "Model",
    "Platform",
    "PriceRange",
    "WeightSource",
    "Workload",
    "accelerators_of",
    "pod_health_check_ranges",
]

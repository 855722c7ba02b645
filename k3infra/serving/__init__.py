"""Cloud-neutral serving on Kubernetes: engine command lines, ModelServer, WeightSync, InferenceGateway.

Takes only what ``contract`` describes from a cloud; never branches on the cloud.
"""

from .contract import (
    SERVER_SERVICE_ACCOUNT,
    SYNC_SERVICE_ACCOUNT,
    CopyTool,
    CsiVolume,
    GpuPool,
    HostPathMount,
    LoadBalancerSettings,
    ServiceAccountSpec,
    Toleration,
    WeightStore,
)

__all__ = [
    "SERVER_SERVICE_ACCOUNT",
    "SYNC_SERVICE_ACCOUNT",
    "CopyTool",
    "CsiVolume",
    "GpuPool",
    "HostPathMount",
    "LoadBalancerSettings",
    "ServiceAccountSpec",
    "Toleration",
    "WeightStore",
]

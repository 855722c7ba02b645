"""Azure: AKS with ND GB300 v6 on a Capacity Reservation Group, the quota gate, Blob weights (002 §4).

Components: ``AksCluster``, ``AksGpuNodePool``, ``BlobWeightBucket``; ``deployment.deploy(cfg)`` composes them
with serving. Importing this package loads the azure-native SDK.
"""

from .cluster import AksCluster, AksClusterArgs
from .gpu_pool import AksGpuNodePool, AksGpuNodePoolArgs, ClusterIdentity, GpuDriver
from .storage import BlobWeightBucket, BlobWeightBucketArgs

__all__ = [
    "AksCluster",
    "AksClusterArgs",
    "AksGpuNodePool",
    "AksGpuNodePoolArgs",
    "BlobWeightBucket",
    "BlobWeightBucketArgs",
    "ClusterIdentity",
    "GpuDriver",
]

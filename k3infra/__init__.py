"""k3infra: Pulumi components, program and stacks that deploy Kimi K3 on AWS, Azure, Google Cloud and Alibaba Cloud.

The components are imported lazily (``from k3infra import GkeGpuNodePool``) so that a program loads only
the cloud SDKs it uses.
"""

import importlib
from typing import Any

#: Public component name to the module that defines it.
COMPONENTS: dict[str, str] = {
    "ModelServer": "k3infra.serving.model_server",
    "WeightSync": "k3infra.serving.weight_sync",
    "InferenceGateway": "k3infra.serving.gateway",
    "GkeCluster": "k3infra.gcp.cluster",
    "GkeGpuNodePool": "k3infra.gcp.node_pool",
    "GcsWeightBucket": "k3infra.gcp.bucket",
    "AksCluster": "k3infra.azure.cluster",
    "AksGpuNodePool": "k3infra.azure.gpu_pool",
    "BlobWeightBucket": "k3infra.azure.storage",
    "AckCluster": "k3infra.alicloud.cluster",
    "AckGpuNodePool": "k3infra.alicloud.gpu_pool",
    "OssWeightBucket": "k3infra.alicloud.bucket",
    "PaiEasService": "k3infra.alicloud.pai",
    "EksCluster": "k3infra.aws.cluster",
    "EksGpuNodeGroup": "k3infra.aws.nodegroup",
    "S3WeightBucket": "k3infra.aws.bucket",
    "HyperPodCluster": "k3infra.aws.hyperpod",
    "HyperPodEndpoint": "k3infra.aws.hyperpod",
}

__all__ = ["COMPONENTS"]


def __getattr__(name: str) -> Any:
    module = COMPONENTS.get(name)
    if module is None:
        raise AttributeError(f"module 'k3infra' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

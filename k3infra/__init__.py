"""k3infra: Pulumi components, program and stacks that deploy Kimi K3 on AWS, Azure, Google Cloud and Alibaba Cloud.

The components are imported lazily (``from k3infra import GkeGpuNodePool``) so that a program loads only
the cloud SDKs it uses.
"""

import importlib
from typing import Any

#: Public component name to the module that defines it.
COMPONENTS: dict[str, str] = {
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

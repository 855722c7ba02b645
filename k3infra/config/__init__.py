"""The stack configuration: ``k3infra:*`` keys (plus the provider keys it needs) read into typed objects.

Validation runs before any resource is registered and reports every problem at once, each with its key,
the value given and what is allowed (``ConfigError``).
"""

from .keys import PROVIDER_KEYS, ROOT, SECRET_KEYS
from .model import (
    AlicloudConfig,
    AwsConfig,
    AzureConfig,
    CapacityConfig,
    ClusterConfig,
    EndpointConfig,
    GcpConfig,
    KubernetesConfig,
    StackConfig,
    WeightsConfig,
)
from .problems import ConfigError, Problem
from .runtime import from_pulumi
from .validate import parse_config

__all__ = [
    "PROVIDER_KEYS",
    "ROOT",
    "SECRET_KEYS",
    "AlicloudConfig",
    "AwsConfig",
    "AzureConfig",
    "CapacityConfig",
    "ClusterConfig",
    "ConfigError",
    "EndpointConfig",
    "GcpConfig",
    "KubernetesConfig",
    "Problem",
    "StackConfig",
    "WeightsConfig",
    "from_pulumi",
    "parse_config",
]

"""k3infra's components for other languages: the list ``components/__main__.py`` hosts through
``component_provider_host``, and the schema the analyzer infers from their annotations.

``pulumi package add <repo>/components`` runs ``components/__main__.py``, asks it for this schema and
generates an SDK (TypeScript, Go, C#, Java, YAML). The schema is also generated offline by the tests and
compared with the committed ``components/schema.json``, so a change to a component's public surface shows up
as a diff in review.
"""

import importlib
import json
from typing import Any

import pulumi
from pulumi.provider.experimental.component import ComponentProvider

from . import COMPONENTS

PACKAGE = "k3infra"
"""Package name: type tokens are ``k3infra:index:<Component>``."""

VERSION = "0.1.0"
"""Package version announced to ``pulumi package add`` (pyproject.toml's; a test keeps them equal)."""

DESIGN_COMPONENTS: tuple[str, ...] = (
    "EksCluster", "EksGpuNodeGroup", "S3WeightBucket", "HyperPodCluster", "HyperPodEndpoint",
    "AksCluster", "AksGpuNodePool", "BlobWeightBucket",
    "GkeCluster", "GkeGpuNodePool", "GcsWeightBucket",
    "AckCluster", "AckGpuNodePool", "OssWeightBucket", "PaiEasService",
    "ModelServer", "WeightSync", "InferenceGateway",
)
"""The public components DESIGN.md names."""


def hosted_components() -> list[type[pulumi.ComponentResource]]:
    """Every public component (``k3infra.COMPONENTS``), sorted by name."""
    return [getattr(importlib.import_module(COMPONENTS[name]), name) for name in sorted(COMPONENTS)]


def missing_components() -> list[str]:
    """Components DESIGN.md names that are not registered (yet) in ``k3infra.COMPONENTS``."""
    return [name for name in DESIGN_COMPONENTS if name not in COMPONENTS]


def provider(version: str = VERSION) -> ComponentProvider:
    """The provider ``component_provider_host`` would serve (the analyzer runs here)."""
    return ComponentProvider(hosted_components(), PACKAGE, version=version)


def schema(version: str = VERSION) -> dict[str, Any]:
    """The package schema (``pulumi package get-schema components``), as JSON data."""
    text = provider(version).schema
    if text is None:
        raise RuntimeError("the component provider produced no schema")
    return json.loads(text)


__all__ = ["DESIGN_COMPONENTS", "PACKAGE", "VERSION", "hosted_components", "missing_components", "provider", "schema"]

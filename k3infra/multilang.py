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
    """The package schema as ``pulumi package get-schema components`` prints it, as JSON data."""
    text = provider(version).schema
    if text is None:
        raise RuntimeError("the component provider produced no schema")
    return as_printed(json.loads(text))


def as_printed(spec: dict[str, Any]) -> dict[str, Any]:
    """The analyzer's schema as the CLI hands it on: ``pulumi package get-schema`` (and ``package add``, which
    generates SDKs from it) decodes a provider's schema into Go's ``schema.PackageSpec`` and encodes it again
    (pkg/cmd/pulumi/packagecmd/package_extract_schema.go). That keeps no description on a type reference (array
    items, map values, ``oneOf`` members: ``TypeSpec`` has no such field), drops an enum value's null description
    (``omitempty``) and always writes ``config``. tests/e2e/test_components.py holds this against the real CLI."""
    def type_ref(t: Any) -> Any:
        if not isinstance(t, dict):
            return t
        out = {k: v for k, v in t.items() if k != "description"}
        return _nested(out)

    def _nested(t: dict[str, Any]) -> dict[str, Any]:
        for key in ("items", "additionalProperties"):
            if key in t:
                t[key] = type_ref(t[key])
        if "oneOf" in t:
            t["oneOf"] = [type_ref(x) for x in t["oneOf"]]
        return t

    out = json.loads(json.dumps(spec))
    for section in ("types", "resources"):
        for token_spec in out.get(section, {}).values():
            for key in ("properties", "inputProperties"):
                for name, prop in token_spec.get(key, {}).items():
                    token_spec[key][name] = _nested(prop)
            for value in token_spec.get("enum", []):
                for k in [k for k, v in value.items() if v is None]:
                    del value[k]
    out.setdefault("config", {})
    return out


__all__ = ["DESIGN_COMPONENTS", "PACKAGE", "VERSION", "as_printed", "hosted_components", "missing_components", "provider",
           "schema"]

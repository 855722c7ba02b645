"""Validate custom resources against their real CRDs (../shared/schemas/crds/), strictly: an unknown field fails."""

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.support import shared_dir


def strict(schema: Any) -> Any:
    """A copy of an OpenAPI v3 schema where every object with declared properties rejects other fields
    (the API server prunes unknown fields silently; a test must not)."""
    s = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(s)
    return s


@functools.lru_cache(maxsize=None)
def _validator(crd_file: str, api_version: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(schema_for(crd_file, api_version))


def schema_for(crd_file: str, api_version: str) -> dict[str, Any]:
    """The strict schema of ``api_version`` in a CRD file."""
    crd = yaml.load((shared_dir() / crd_file).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    version = api_version.split("/")[-1]
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return strict(v["schema"]["openAPIV3Schema"])
    raise LookupError(f"{crd_file} serves no version {version}")


def errors(obj: dict[str, Any], crd_file: str) -> list[str]:
    """Every schema violation of ``obj`` (empty when it validates)."""
    validator = _validator(crd_file, obj["apiVersion"])
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]


def crd_path(crd_file: str) -> Path:
    """Path of a CRD file under ../shared."""
    return shared_dir() / crd_file

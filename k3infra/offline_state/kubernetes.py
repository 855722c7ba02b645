"""Computed outputs of Kubernetes resources."""

from typing import Any

from . import provider_default


@provider_default("kubernetes:")
def kubernetes_object(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Objects keep their metadata; a name the program left out is filled in from the resource name."""
    meta = dict(inputs.get("metadata") or {})
    if "metadata" in inputs or inputs.get("kind"):
        meta.setdefault("name", name)
        return {"metadata": meta}
    return {}

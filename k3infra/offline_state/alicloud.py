"""Computed outputs of Alibaba Cloud resources."""

from typing import Any

from . import provider_default


@provider_default("alicloud:")
def alicloud_resource(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Alibaba Cloud ids are opaque strings."""
    return {"id": f"{name}-id"}

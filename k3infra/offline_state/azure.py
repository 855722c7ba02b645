"""Computed outputs of Azure resources."""

from typing import Any

from . import FAKE_SUBSCRIPTION, provider_default


@provider_default("azure-native:")
def azure_resource(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Every Azure resource has a resource id under a resource group."""
    rg = inputs.get("resourceGroupName") or "offline-rg"
    return {"id": f"/subscriptions/{FAKE_SUBSCRIPTION}/resourceGroups/{rg}/providers/offline/{name}", "name": name}

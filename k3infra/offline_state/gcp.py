"""Computed outputs of Google Cloud resources and functions."""

from typing import Any

from . import FAKE_PROJECT_NUMBER, function, provider_default


@provider_default("gcp:")
def gcp_resource(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Every Google Cloud resource has a name and a self link."""
    res_name = inputs.get("name") or name
    project = inputs.get("project") or "offline-project"
    return {"name": res_name, "selfLink": f"https://www.googleapis.com/offline/projects/{project}/{res_name}"}


@function("gcp:organizations/getProject:getProject")
def get_project(args: dict[str, Any]) -> dict[str, Any]:
    """The project number is what IAM principals need; offline it is a fixed 12-digit number."""
    project = args.get("projectId") or "offline-project"
    return {"projectId": project, "number": FAKE_PROJECT_NUMBER, "name": project, "id": f"projects/{project}"}

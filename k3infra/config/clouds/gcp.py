"""Google Cloud configuration rules beyond the cloud-neutral ones.

The cloud-neutral checks already cover, for Google Cloud: a zone outside ``gcp:region``, an A4X Max stack
without a reservation (its only capacity type), a sub-block without its block, an A4X Max reservation
without block and sub-block (002 §5.2), an image without an arm64 build on Grace nodes, and more than 18
nodes in an NVL72 pool. This module adds what only Google Cloud enforces, and the control-plane rule every cloud
follows: the GKE endpoint is private (gcp.privateEndpoint) or limited to gcp.authorizedNetworks (cluster-toolkit
requires ``authorized_cidr``: examples/gke-a4x-max-bm/gke-a4x-max-bm.yaml).
"""

import re
from typing import Any, Mapping

from ...catalog import CapacityType
from ...catalog.gke import GKE_MACHINES, GkeVersion, floor
from ..model import GcpConfig
from ..problems import Problems
from .common import CheckContext, control_plane_access

K = "k3infra:"

NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
"""Compute Engine resource names (RFC 1035): reservations, blocks, sub-blocks."""

PROJECT_ID = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")
"""Google Cloud project ids: 6-30 characters, a lowercase letter first, no trailing hyphen."""

CLUSTER_NAME = re.compile(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?")
"""GKE cluster names: at most 40 characters, a lowercase letter first."""

GATEWAY_MIN_GKE = floor("1.32.3", "the GKE Inference Gateway needs GKE 1.32.3 or later")


def _name_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if "/" in value:
        return ("is a path; give the name only: the reservation in capacity.reservation, its block in capacity.block, "
                "its sub-block in capacity.subBlock and the owning project in capacity.project")
    if not NAME.fullmatch(value):
        return "is not a Compute Engine name (1-63 lowercase letters, digits and -, starting with a letter)"
    return None


def check(ctx: CheckContext, p: Problems, warnings: list[str]) -> None:
    """Report Google Cloud-specific problems in ``ctx``."""
    v = ctx.values
    capacity = v.get("capacity")
    if isinstance(capacity, dict) and capacity.get("type") == CapacityType.RESERVATION:
        for field in ("reservation", "block", "subBlock"):
            why = _name_problem(capacity.get(field))
            if why:
                p.add(f"{K}capacity.{field}", why, capacity.get(field),
                      "a name such as k3-a4xmax, k3-a4xmax-block-0001, k3-a4xmax-block-0001-subblock-0001")
        project = capacity.get("project")
        if isinstance(project, str) and not PROJECT_ID.fullmatch(project):
            why = ("is a project number; reservation paths name the project id" if project.isdigit()
                   else "is not a Google Cloud project id (6-30 lowercase letters, digits and -, starting with a letter)")
            p.add(f"{K}capacity.project", why, project, "a project id such as my-project (default: gcp:project)")
        gcp_project = ctx.raw.get("gcp:project")
        if (isinstance(project, str) and project != gcp_project and (capacity.get("block") or capacity.get("subBlock"))):
            warnings.append(f"capacity.project {project!r} shares the reservation from another project with a block or "
                            "sub-block: GKE has only recently accepted shared block reservations; check that "
                            "`gcloud container node-pools create --reservation projects/...` accepts it")

    gcp_project = ctx.raw.get("gcp:project")
    if isinstance(gcp_project, str) and not PROJECT_ID.fullmatch(gcp_project):
        p.add("gcp:project", "is not a Google Cloud project id (6-30 lowercase letters, digits and -, starting with a "
              "letter)" + ("; this looks like a project number" if gcp_project.isdigit() else ""), gcp_project,
              "a project id such as my-project")

    cluster = v.get("cluster")
    if isinstance(cluster, dict):
        name = cluster.get("name")
        if isinstance(name, str) and not CLUSTER_NAME.fullmatch(name):
            p.add(f"{K}cluster.name", "is not a GKE cluster name (at most 40 lowercase letters, digits and -, "
                  "starting with a letter)", name, "such as k3-gcp-a4xmax")
        version = cluster.get("kubernetesVersion")
        if isinstance(version, str):
            _check_version(ctx, version, p)

    settings = v.get("gcp")
    if isinstance(settings, dict):
        _control_plane(settings, p, warnings)
        if settings.get("gpuDriverVersion") == "INSTALLATION_DISABLED":
            warnings.append("gcp.gpuDriverVersion is INSTALLATION_DISABLED: GKE installs no NVIDIA driver; install one "
                            "yourself (NVIDIA GPU Operator / DRA driver) or the pods never see a GPU")
        exclusion = settings.get("upgradeExclusion")
        if exclusion == "none":
            warnings.append("gcp.upgradeExclusion is none: GKE upgrades the GPU pool's nodes on its own in any "
                            "maintenance window, recreating them (no spare reserved host to surge onto) and reloading "
                            f"{_weights(ctx)} of weights")
        elif exclusion == "NO_MINOR_UPGRADES":
            warnings.append("gcp.upgradeExclusion is NO_MINOR_UPGRADES: GKE still applies node patch upgrades in the "
                            "maintenance window, recreating the GPU nodes one at a time and reloading "
                            f"{_weights(ctx)} of weights; NO_MINOR_OR_NODE_UPGRADES holds them")
        if settings.get("checkReservation") is False:
            warnings.append("gcp.checkReservation is false: preview does not read the reservation, so a missing or "
                            "too small one shows up only when the node pool fails to create")


def _control_plane(settings: dict[str, Any], p: Problems, warnings: list[str]) -> None:
    """The GKE control plane: private, or reachable only from the authorized networks (well-formed CIDRs)."""
    key = K + "gcp.authorizedNetworks"
    networks = settings.get("authorizedNetworks")
    networks = networks if isinstance(networks, list) else None
    control_plane_access(p, warnings, plane="GKE control plane", cidrs_key="gcp.authorizedNetworks", cidrs=networks,
                         private_key="gcp.privateEndpoint", private=settings.get("privateEndpoint") is True)


def _weights(ctx: CheckContext) -> str:
    return f"{ctx.model.weight_bytes / 1e12:.2f} TB" if ctx.model else "the model's"


def _check_version(ctx: CheckContext, given: str, p: Problems) -> None:
    """``cluster.kubernetesVersion`` is a GKE version at or above every floor the stack needs."""
    key = f"{K}cluster.kubernetesVersion"
    version = GkeVersion.parse(given)
    if version is None:
        p.add(key, "is not a GKE version", given, "MAJOR.MINOR, MAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH-gke.BUILD, "
              "such as 1.34 or 1.34.3-gke.1318000")
        return
    machine = GKE_MACHINES.get(ctx.accelerator.sku) if ctx.accelerator else None
    floors = list(machine.min_gke_versions) if machine else []
    endpoint = ctx.values.get("endpoint")
    if isinstance(endpoint, dict) and endpoint.get("gateway"):
        floors.append(GATEWAY_MIN_GKE)
    failing = [f for f in floors if not f.admits(version)]
    if failing:
        f = max(failing, key=lambda f: f.minimum_for(version).lowest)
        minimum = f.minimum_for(version)
        prefix = len(version.parts) < len(minimum.parts) and minimum.parts[:len(version.parts)] == version.parts
        p.add(key, f"{f.why} ({given} also names older patches)" if prefix else f.why, given, f.requirement)


def settings(v: dict[str, Any], raw: Mapping[str, Any], region: str) -> GcpConfig:
    """The typed ``k3infra:gcp`` section (the project is the provider's ``gcp:project``)."""
    g = v["gcp"]
    exclusion = g["upgradeExclusion"]
    return GcpConfig(project=raw["gcp:project"], region=region, release_channel=g["releaseChannel"],
                     gpu_driver_version=g["gpuDriverVersion"], check_reservation=bool(g["checkReservation"]),
                     maintenance_window_start=g["maintenanceWindowStart"],
                     upgrade_exclusion=None if exclusion == "none" else exclusion,
                     upgrade_exclusion_start=g["upgradeExclusionStart"],
                     authorized_networks=tuple(g.get("authorizedNetworks") or ()),
                     private_endpoint=bool(g["privateEndpoint"]))

"""Google Cloud configuration rules beyond the cloud-neutral ones.

The cloud-neutral checks already cover, for Google Cloud: a zone outside ``gcp:region``, an A4X Max stack
without a reservation (its only capacity type), a sub-block without its block, an A4X Max reservation
without block and sub-block (002 §5.2), an image without an arm64 build on Grace nodes, and more than 18
nodes in an NVL72 pool. This module adds what only Google Cloud enforces.
"""

import re
from typing import Any

from ...catalog import CapacityType
from ..problems import Problems
from . import CheckContext

K = "k3infra:"

NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
"""Compute Engine resource names (RFC 1035): reservations, blocks, sub-blocks."""

PROJECT_ID = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")
"""Google Cloud project ids: 6-30 characters, a lowercase letter first, no trailing hyphen."""

CLUSTER_NAME = re.compile(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?")
"""GKE cluster names: at most 40 characters, a lowercase letter first."""

MIN_GKE: dict[str, tuple[str, str]] = {
    "a4x-maxgpu-4g-metal": (
        "1.34.3-gke.1318000",
        "A4X Max node pools need GKE 1.34.3-gke.1318000 or later: the first version that installs the 580.95.05 "
        "driver GB300 needs (cluster-toolkit examples/gke-a4x-max-bm README); it also serves resource.k8s.io/v1, "
        "which the NVIDIA DRA driver's ComputeDomains and managed DRANET (DeviceClasses from 1.34.1-gke.1829001) "
        "need"),
}
"""Oldest GKE version each machine type runs on, and why (issue 15 owns the table; A4X Max's DRA floor is here)."""

GATEWAY_MIN_GKE = ((1, 32), "the GKE Inference Gateway needs GKE 1.32.3 or later")


def _minor(version: str) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def gke_version(version: str) -> tuple[int, ...]:
    """``1.34.3-gke.1318000`` as (1, 34, 3, 1318000); a prefix such as ``1.34`` as far as it goes."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+)(?:-gke\.(\d+))?)?", version)
    return tuple(int(g) for g in m.groups() if g is not None) if m else ()


def below(version: str, floor: str) -> bool:
    """True when ``version`` is older than ``floor``, compared as far as ``version`` goes: GKE resolves a prefix
    such as ``1.34`` to a current patch of that minor."""
    given = gke_version(version)
    return bool(given) and given < gke_version(floor)[:len(given)]


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
        minor = _minor(version) if isinstance(version, str) else None
        if minor is not None:
            needs = MIN_GKE.get(ctx.accelerator.sku) if ctx.accelerator else None
            if needs and isinstance(version, str) and below(version, needs[0]):
                p.add(f"{K}cluster.kubernetesVersion", needs[1], version, f"{needs[0]} or later")
            endpoint = v.get("endpoint")
            if isinstance(endpoint, dict) and endpoint.get("gateway") and minor < GATEWAY_MIN_GKE[0]:
                p.add(f"{K}cluster.kubernetesVersion", GATEWAY_MIN_GKE[1], version, "1.32 or later")

    settings = v.get("gcp")
    if isinstance(settings, dict):
        if settings.get("gpuDriverVersion") == "INSTALLATION_DISABLED":
            warnings.append("gcp.gpuDriverVersion is INSTALLATION_DISABLED: GKE installs no NVIDIA driver; install one "
                            "yourself (NVIDIA GPU Operator / DRA driver) or the pods never see a GPU")
        if (ctx.accelerator is not None and ctx.accelerator.sku in MIN_GKE
                and settings.get("releaseChannel") in ("STABLE", "EXTENDED")
                and not (isinstance(cluster, dict) and cluster.get("kubernetesVersion"))):
            warnings.append(f"gcp.releaseChannel {settings['releaseChannel']}: {MIN_GKE[ctx.accelerator.sku][1]}; "
                            "check that the channel's default version in your region is at least that, or set "
                            "cluster.kubernetesVersion")
        if settings.get("checkReservation") is False:
            warnings.append("gcp.checkReservation is false: preview does not read the reservation, so a missing or "
                            "too small one shows up only when the node pool fails to create")

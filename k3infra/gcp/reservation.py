"""Compute Engine reservations: the path a node pool consumes, and the preview-time check that it can.

The node pool names its reservation with ``reservation_affinity.values``. Paths (GKE's own
``gceclient.ReservationRef``, docs/catalog-research.md §6; 002 §5.2):

- ``projects/P/reservations/R``
- ``projects/P/reservations/R/reservationBlocks/B``
- ``projects/P/reservations/R/reservationBlocks/B/reservationSubBlocks/S``

k3infra always writes the full ``projects/P/...`` form: it names the owning project, so the same path is
right for a reservation shared from another project (GKE's short form ``R/reservationBlocks/...`` only
works inside the cluster's project).

:func:`check_capacity` looks the reservation (and its block or sub-block) up with the provider's data
sources while the program runs, so ``pulumi preview`` fails before anything is created when the
reservation does not exist in the zone, holds another machine type, or has fewer hosts than the pool.
"""

from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_gcp as gcp


class ReservationRef(TypedDict):
    """A Compute Engine reservation (optionally one block or sub-block of it) that a node pool consumes."""

    project: str
    """Project that owns the reservation (the cluster's project, or the one that shares it)."""
    name: str
    """Reservation name."""
    block: NotRequired[str]
    """Reservation block. Default: none (the pool may land anywhere in the reservation)."""
    sub_block: NotRequired[str]
    """Reservation sub-block, within ``block``. Default: none. A4X Max pools pin one: multi-node NVLink
    spans one sub-block of 18 hosts (002 §5.2)."""


def reservation_path(ref: ReservationRef) -> str:
    """The full path of a reservation, block or sub-block, as ``reservation_affinity.values`` takes it."""
    path = f"projects/{ref['project']}/reservations/{ref['name']}"
    block = ref.get("block")
    sub_block = ref.get("sub_block")
    if sub_block and not block:
        raise pulumi.InputPropertyError("reservation.sub_block", "a sub-block is named within its block: set block too")
    if block:
        path += f"/reservationBlocks/{block}"
        if sub_block:
            path += f"/reservationSubBlocks/{sub_block}"
    return path


@dataclass(frozen=True)
class Capacity:
    """What a lookup found: hosts in the reservation (or block, or sub-block) and how many are in use."""

    path: str
    hosts: int
    in_use: int
    machine_type: str | None
    specific_required: bool | None
    status: str | None
    degraded: int
    """Degraded hosts (sub-block) or degraded sub-blocks (block) the health report counts."""
    degraded_unit: str

    @property
    def free(self) -> int:
        """Hosts not in use."""
        return max(self.hosts - self.in_use, 0)


class ReservationUnusable(pulumi.RunError):
    """The reservation cannot hold the pool: missing, another machine type, not ready, or too few hosts.

    Raised while the program runs (so at ``pulumi preview``), before the node pool is registered.
    """


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def lookup(ref: ReservationRef, zone: str, opts: pulumi.InvokeOptions | None = None) -> Capacity:
    """Read the reservation (and its block or sub-block) through the provider's data sources."""
    path = reservation_path(ref)
    project, name = ref["project"], ref["name"]
    block, sub_block = ref.get("block"), ref.get("sub_block")
    try:
        res = gcp.compute.get_reservation(name=name, project=project, zone=zone, opts=opts)
        specific = (res.specific_reservations or [None])[0]
        props = (_get(specific, "instance_properties") or [None])[0] if specific is not None else None
        machine_type = _get(props, "machine_type") if props is not None else None
        hosts = int(_get(specific, "count") or 0) if specific is not None else 0
        in_use = int(_get(specific, "in_use_count") or 0) if specific is not None else 0
        status = res.status
        degraded, degraded_unit = 0, "host"
        if block and sub_block:
            sb = gcp.compute.get_reservation_sub_block(name=sub_block, reservation_block=block, reservation=name,
                                                       project=project, zone=zone, opts=opts)
            hosts, in_use, status = int(sb.sub_block_count or 0), int(sb.in_use_count or 0), sb.status
            degraded = sum(int(_get(h, "degraded_host_count") or 0) for h in (sb.health_infos or []))
        elif block:
            b = gcp.compute.get_reservation_block(name=block, reservation=name, project=project, zone=zone, opts=opts)
            hosts, in_use, status = int(b.block_count or 0), int(b.in_use_count or 0), b.status
            degraded = sum(int(_get(h, "degraded_sub_block_count") or 0) for h in (b.health_infos or []))
            degraded_unit = "sub-block"
    except Exception as e:  # the provider's error names the API call; say which setting to fix
        raise ReservationUnusable(
            f"reservation {path} could not be read in zone {zone}: {e}. Check k3infra:capacity (reservation, block, "
            f"subBlock, project) and k3infra:zone: the reservation must exist in the pool's zone") from None
    return Capacity(path=path, hosts=hosts, in_use=in_use, machine_type=machine_type,
                    specific_required=res.specific_reservation_required, status=status, degraded=degraded,
                    degraded_unit=degraded_unit)


def check_capacity(ref: ReservationRef, *, zone: str, machine_type: str, nodes: int,
                   opts: pulumi.InvokeOptions | None = None) -> tuple[Capacity, list[str]]:
    """Fail when the reservation cannot hold ``nodes`` hosts of ``machine_type``; return what it found and warnings.

    Hosts already in use are a warning, not an error: on an update they are this stack's own nodes.
    """
    cap = lookup(ref, zone, opts)
    if cap.machine_type and cap.machine_type.rsplit("/", 1)[-1] != machine_type:
        raise ReservationUnusable(
            f"reservation {cap.path} holds {cap.machine_type.rsplit('/', 1)[-1]} hosts, and the pool needs {machine_type}: "
            "point k3infra:capacity.reservation at a reservation of that machine type")
    if cap.status and cap.status.upper() not in ("READY", "ACTIVE"):
        raise ReservationUnusable(
            f"reservation {cap.path} is {cap.status}, not READY: the pool cannot consume it yet "
            "(a future reservation becomes usable at its start time)")
    if cap.hosts < nodes:
        raise ReservationUnusable(
            f"reservation {cap.path} holds {cap.hosts} host(s), and the pool needs {nodes} {machine_type} nodes: "
            f"lower k3infra:nodes/replicas or grow the reservation")
    warnings: list[str] = []
    if cap.free < nodes:
        warnings.append(
            f"reservation {cap.path} has {cap.in_use} of {cap.hosts} hosts in use and the pool needs {nodes}: "
            "unless those are this stack's own nodes, the pool waits for hosts to be released")
    if cap.degraded:
        warnings.append(f"reservation {cap.path} reports {cap.degraded} degraded {cap.degraded_unit}(s)")
    if cap.specific_required is False:
        warnings.append(f"reservation {cap.path} does not require specific consumption: other VMs in the project "
                        "can take its hosts before the pool does")
    return cap, warnings

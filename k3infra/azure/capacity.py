"""Capacity Reservation Group ids and the checks an existing group must pass before a pool joins it.

A group id (``/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/capacityReservationGroups/NAME``)
says nothing about the group's region or zones, and AKS does not refuse a mismatched group at creation:
a group in another region or zone simply holds no capacity the pool can use, and a group without a
reservation is associated with only a warning (learn.microsoft.com aks/use-capacity-reservation-groups).
So ``AksGpuNodePool`` reads the group at preview (``compute.get_capacity_reservation_group``) and checks it
here; the pool's group id input waits on that check, so a mismatch stops the preview.
"""

from dataclasses import dataclass
from typing import Sequence

import pulumi

from ..config.clouds.azure import GROUP_ID


@dataclass(frozen=True)
class GroupRef:
    """The parts of a Capacity Reservation Group id."""

    subscription: str
    resource_group: str
    name: str

    @property
    def resource_group_id(self) -> str:
        """Id of the group's resource group: the scope the cluster identity needs Contributor on."""
        return f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"


def parse_group_id(group_id: str) -> GroupRef | None:
    """The parts of ``group_id``, or None when it is not a Capacity Reservation Group id."""
    m = GROUP_ID.fullmatch(group_id.strip())
    return GroupRef(m.group("sub"), m.group("rg"), m.group("name")) if m else None


def normalize_location(location: str) -> str:
    """``East US 2`` and ``eastus2`` name the same region."""
    return location.replace(" ", "").lower()


class CapacityGroupError(pulumi.RunError):
    """An existing Capacity Reservation Group cannot hold the pool (raised at preview)."""


def group_problems(
    group_id: str,
    *,
    group_location: str,
    group_zones: Sequence[str],
    reservations: int,
    location: str,
    zone: str | None,
) -> list[str]:
    """Why the group cannot hold a pool in ``location`` / ``zone``; empty when it can."""
    problems: list[str] = []
    if normalize_location(group_location) != normalize_location(location):
        problems.append(f"the group is in {group_location}, the cluster and pool in {location}: a reservation only "
                        "holds capacity in its own region")
    if zone is not None:
        if not group_zones:
            problems.append(f"the group is regional (no zones) and the pool is pinned to zone {zone}: create the group "
                            f"with zones [{zone}]")
        elif zone not in group_zones:
            problems.append(f"the group reserves zone(s) {', '.join(group_zones)}, the pool is in zone {zone}")
    if reservations == 0:
        problems.append("the group holds no capacity reservation: AKS would create the pool with only a warning and "
                        "no reserved capacity")
    return [f"capacity.groupId {group_id}: {p}" for p in problems]

"""Azure: the Capacity Reservation Group's reservations, listed with azure-mgmt-compute
(``CapacityReservationsOperations.list_by_capacity_reservation_group``) and ``DefaultAzureCredential``.

A capacity reservation has no end: it bills until deleted, so the line says ``no end``, unless it is a scheduled
reservation (``scheduleProfile.start``/``end``, its ``reservationStateInfo.reservationState``: Pending, Approved,
Committed, Live, Declined, FulfillmentFailed, PartiallyFulfilled; azure-mgmt-compute's ReservationState enum).
The responses are read as the REST JSON (the SDK models' ``as_dict()``), so tests record them as dicts.
"""

from collections.abc import Callable, Iterable
from typing import Any

from .window import Capacity

FAILED = ("Failed", "Declined", "FulfillmentFailed")
WAITING = ("Creating", "Updating", "Pending", "Approved", "Committed")
REMEDY = ("the reservation group holds no usable capacity: raise or recreate its capacity reservation "
          "(`az capacity reservation create`), or point k3infra:capacity.groupId at another group")

Lister = Callable[[str, str, str], Iterable[dict[str, Any]]]
"""``(subscription, resource group, group name)`` to the group's capacity reservations as REST JSON."""


def _list(subscription: str, resource_group: str, group: str) -> Iterable[dict[str, Any]]:
    from azure.identity import DefaultAzureCredential
    from azure.mgmt.compute import ComputeManagementClient

    client = ComputeManagementClient(DefaultAzureCredential(), subscription)
    return [r.as_dict() for r in client.capacity_reservations.list_by_capacity_reservation_group(
        resource_group, group)]


def parse_group_id(group_id: str) -> tuple[str, str, str] | None:
    """``/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/capacityReservationGroups/NAME``."""
    parts = group_id.strip("/").split("/")
    lower = [p.lower() for p in parts]
    try:
        return (parts[lower.index("subscriptions") + 1], parts[lower.index("resourcegroups") + 1],
                parts[lower.index("capacityreservationgroups") + 1])
    except (ValueError, IndexError):
        return None


def reservation_group(group_id: str | None, list_reservations: Lister = _list) -> Capacity:
    """The group's reservations: their SKU and capacity, provisioning state, and a scheduled one's window."""
    ids = parse_group_id(group_id or "")
    name = ids[2] if ids else (group_id or "(created by the stack)")
    base = Capacity(kind=f"capacity reservation group {name}", failed_states=FAILED, waiting_states=WAITING,
                    remedy=REMEDY)
    if ids is None:
        return Capacity(kind=base.kind, unreadable="the group's id is known once the stack has created it",
                        remedy=REMEDY)
    try:
        found = list(list_reservations(*ids))
    except ImportError as e:
        return Capacity(kind=base.kind, unreadable=f"azure-identity or azure-mgmt-compute missing ({e.name})",
                        remedy=REMEDY)
    except Exception as e:  # noqa: BLE001 - any SDK or sign-in failure: said, never raised
        text = str(e).strip().splitlines()
        return Capacity(kind=base.kind, unreadable=f"Azure capacity reservations: {type(e).__name__}: "
                        f"{text[0][:200] if text else ''}", remedy=REMEDY)
    if not found:
        return Capacity(kind=base.kind, state="Failed", detail="no capacity reservation in the group",
                        source="Azure Compute capacityReservations", failed_states=FAILED, remedy=REMEDY)
    states, starts, ends, parts = [], [], [], []
    for r in found:
        props = r.get("properties") or {}
        sku = r.get("sku") or {}
        state = ((props.get("reservationStateInfo") or {}).get("reservationState")
                 or props.get("provisioningState") or "")
        states.append(state)
        schedule = props.get("scheduleProfile") or {}
        starts += [schedule["start"]] if schedule.get("start") else []
        ends += [schedule["end"]] if schedule.get("end") else []
        used = len(props.get("virtualMachinesAssociated") or [])
        parts.append(f"{r.get('name')}: {sku.get('capacity', '?')} x {sku.get('name', '?')}, {used} VM(s) "
                     f"associated, {state or 'state unknown'}")
    worst = next((s for s in states if s in FAILED), None) or next((s for s in states if s in WAITING), None) \
        or states[0]
    return Capacity(kind=base.kind, state=worst, start=min(starts) if starts else None,
                    end=min(ends) if ends else None, detail="; ".join(parts),
                    source="Azure Compute capacityReservations", failed_states=FAILED, waiting_states=WAITING,
                    remedy=REMEDY)

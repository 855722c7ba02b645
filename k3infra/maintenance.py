"""The weekly maintenance window AKS and ACK clusters take, as a component argument, and its checks."""

import re
from datetime import date, timedelta
from typing import TypedDict

import pulumi

from .config.keys import MAINTENANCE_WINDOW, WEEKDAYS
from .config.model import MaintenanceWindow

_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d")

ANCHOR_MONDAY = date(2025, 1, 6)
"""A fixed Monday: ACK's window takes a first occurrence as an RFC 3339 time, and a fixed date keeps two plans
byte-identical (the weekday is what recurs)."""


class MaintenanceWindowSpec(TypedDict):
    """A weekly window, in UTC, in which the cloud may run the upgrades the cluster's channels allow."""

    day: str
    """Day of the week it opens: Monday ... Sunday."""
    start_time: str
    """Time it opens, ``HH:MM`` in UTC."""
    duration_hours: int
    """Length in hours: 4 to 24 (AKS asks for at least 4 for auto-upgrades, aks/planned-maintenance)."""


DEFAULT_WINDOW = MaintenanceWindowSpec(day=MAINTENANCE_WINDOW.by_name["day"].default,
                                       start_time=MAINTENANCE_WINDOW.by_name["startTime"].default,
                                       duration_hours=MAINTENANCE_WINDOW.by_name["durationHours"].default)
"""The stack default (k3infra.config.keys): Sundays 02:00 UTC for 4 hours, the AKS portal's recommended day and
AKS's documented minimum length for auto-upgrade windows."""


def checked(window: MaintenanceWindowSpec | None, prop: str = "maintenance_window") -> MaintenanceWindowSpec:
    """The window, or the default; raises InputPropertyError naming ``prop`` when it cannot be used."""
    if window is None:
        return DEFAULT_WINDOW
    day, start, hours = window.get("day"), window.get("start_time"), window.get("duration_hours")
    if day not in WEEKDAYS:
        raise pulumi.InputPropertyError(f"{prop}.day", f"{day!r}: one of {', '.join(WEEKDAYS)}")
    if not isinstance(start, str) or not _TIME.fullmatch(start):
        raise pulumi.InputPropertyError(f"{prop}.start_time", f"{start!r}: HH:MM in UTC, such as 02:00")
    if not isinstance(hours, int) or not 4 <= hours <= 24:
        raise pulumi.InputPropertyError(f"{prop}.duration_hours", f"{hours!r}: 4 to 24 hours")
    return window


def first_occurrence(window: MaintenanceWindowSpec) -> str:
    """The window's first opening as ACK's ``maintenance_time`` (RFC 3339 with milliseconds, UTC offset), e.g.
    ``2025-01-12T02:00:00.000+00:00`` for Sundays at 02:00 (the format cs.ManagedKubernetes documents)."""
    day = ANCHOR_MONDAY + timedelta(days=WEEKDAYS.index(window["day"]))
    return f"{day.isoformat()}T{window['start_time']}:00.000+00:00"


def from_config(window: MaintenanceWindow) -> MaintenanceWindowSpec:
    """The component argument for a stack's ``azure.maintenanceWindow`` or ``alicloud.maintenanceWindow``."""
    return MaintenanceWindowSpec(day=window.day, start_time=window.start_time, duration_hours=window.duration_hours)

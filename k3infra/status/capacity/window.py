"""A capacity's state and window, and the report's first line from it (pure: a function of the facts and the time).

The facts come from the stack's outputs (AWS stacks export ``capacityStartTime`` and ``capacityEndTime``) and from
the cloud's API with this machine's credentials (``capacity.aws``, ``azure``, ``gcp``, ``alicloud``); a window's
time left is counted from now at each refresh.
"""

from dataclasses import dataclass
from datetime import datetime

from ...clock import parse
from ..lines import FAILED, OK, PROGRESS, UNKNOWN, WARN, Line


@dataclass(frozen=True)
class Capacity:
    """What is known of the capacity the GPU nodes run on."""

    kind: str
    """What it is, with its id: ``capacity block cr-0abc``, ``training plan k3-plan``, ``on-demand``."""
    state: str = ""
    """The cloud's own state word (EC2 ``active``/``scheduled``/``expired``, SageMaker ``Active``, ...); empty when
    the cloud was not read."""
    start: str | None = None
    end: str | None = None
    """RFC 3339; None where the capacity has no end (Azure capacity reservations, GCP specific reservations) or it
    is not known."""
    detail: str = ""
    """Counts and the like, as the cloud gives them (``8 of 8 instances available``)."""
    source: str = ""
    """Where the facts come from (``EC2 DescribeCapacityReservations``, ``stack outputs``)."""
    unreadable: str = ""
    """Why the cloud could not be read (no SDK, no credentials, an API error), or empty."""
    failed_states: tuple[str, ...] = ()
    """The cloud's states that mean the capacity is gone (``expired``, ``cancelled``, ``Failed``...)."""
    waiting_states: tuple[str, ...] = ()
    """The cloud's states of a capacity not usable yet (``scheduled``, ``payment-pending``, ``Pending``...)."""
    windowless: bool = False
    """On-demand or existing nodes: nothing reserved, no window to watch."""
    remedy: str = ""
    """What to do once it has ended (buy or extend a block, another reservation)."""


GENERIC_REMEDY = "buy or extend the capacity, or move the stack to another reservation (its nodes go when it ends)"


def _left(seconds: float) -> str:
    s = int(seconds)
    days, rem = divmod(s, 86400)
    hours, rem = divmod(rem, 3600)
    return f"{days} d {hours} h" if days else f"{hours} h {rem // 60:02d} min" if hours else f"{rem // 60} min"


def capacity_line(cap: Capacity, now: datetime, margin_hours: int) -> Line:
    """``capacity``: ok (active, the window's end further than ``margin_hours``), warn (it ends within them),
    progress (its window has not started, or the cloud says it is pending), failed (ended: the line says what to
    do), unknown (not readable, and why: never fails the report)."""
    window = {"kind": cap.kind, "state": cap.state or None, "start": cap.start, "end": cap.end,
              "source": cap.source or None}
    if cap.windowless:
        return Line("capacity", cap.kind, OK, "no reservation", cap.detail, extra={"capacity": window})
    start, end = (parse(cap.start) if cap.start else None), (parse(cap.end) if cap.end else None)
    left = (end - now).total_seconds() if end else None
    window["secondsLeft"] = None if left is None else max(0, int(left))
    span = (f"{cap.start or '?'} to {cap.end}" if end else f"from {cap.start}" if start else "")
    base = ", ".join(p for p in (f"state {cap.state}" if cap.state else "", span, cap.detail) if p)
    extra = {"capacity": window}
    if cap.state in cap.failed_states or (left is not None and left <= 0):
        return Line("capacity", cap.kind, FAILED, "ended", base + (f" (from {cap.source})" if cap.source else ""),
                    look=cap.remedy or GENERIC_REMEDY, extra=extra)
    if not cap.state and start is None and end is None:
        return Line("capacity", cap.kind, UNKNOWN, "not readable", cap.unreadable or "the cloud was not read",
                    extra=extra | {"capacity": window | {"error": cap.unreadable or None}})
    note = f"; {cap.unreadable}" if cap.unreadable else ""
    if cap.state in cap.waiting_states or (start is not None and start > now):
        wait = f"starts in {_left((start - now).total_seconds())}" if start and start > now else "not started"
        return Line("capacity", cap.kind, PROGRESS, "waiting for its window", f"{wait}; {base}{note}",
                    int((start - now).total_seconds()) if start and start > now else None, extra=extra)
    if left is not None and left <= margin_hours * 3600:
        return Line("capacity", cap.kind, WARN, "ending soon", f"{_left(left)} left (within {margin_hours} h); "
                    f"{base}{note}", look=f"before it ends: {cap.remedy or GENERIC_REMEDY}", extra=extra)
    lasting = f"{_left(left)} left; " if left is not None else "no end; "
    return Line("capacity", cap.kind, OK, "active", f"{lasting}{base}{note}", extra=extra)

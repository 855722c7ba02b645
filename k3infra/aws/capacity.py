"""EC2 Capacity Blocks: look one up, find an offering to buy, and check either against the stack.

These run data-source lookups at preview (``pulumi preview`` and ``k3infra plan`` alike) so that a block in
another availability zone than the GPU subnet, of another instance type, too small or already over, stops
the stack before anything is created, let alone bought.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from enum import Enum

import pulumi_aws as aws

from ..clock import parse
from ..config.problems import Problem, show

EKS_SCALEDOWN_BEFORE_END = timedelta(minutes=40)
"""EKS scales a Capacity Block node group to zero 40 minutes before the block ends (EC2 starts shutting the
instances down 30 minutes before): scheduled action "Amazon EKS Node Group Capacity Scaledown Before Reservation
End" (EKS User Guide, capacity-blocks-mng)."""

NOT_STARTED_STATES = ("scheduled", "payment-pending")
"""Reservation states of a block that has not started (EC2 DescribeCapacityReservations)."""


@dataclass(frozen=True)
class BlockFacts:
    """What EC2 says about a Capacity Block (an existing reservation or an offering to buy)."""

    id: str
    """Reservation id (cr-...) or offering id (cb-...)."""
    availability_zone: str
    instance_type: str
    instance_count: int
    start_date: str
    """Reservations: when the block starts. Offerings: the earliest start of the requested window (EC2 sets
    the exact dates at purchase)."""
    end_date: str
    """Reservations: when the block ends. Offerings: the latest end of the requested window."""
    duration_hours: int | None = None
    """Offerings only: the block's length."""
    upfront_fee: str | None = None
    """Offerings only: the price of the whole block, paid at purchase."""
    currency: str | None = None
    state: str | None = None
    """Reservations only: scheduled, payment-pending, active, expired, ..."""


def rfc3339(date: str, end_of_day: bool = False) -> str:
    """``2026-12-01`` or ``2026-12-01T10:00Z`` as the RFC 3339 timestamp EC2 expects."""
    if "T" not in date:
        return f"{date}T23:59:59Z" if end_of_day else f"{date}T00:00:00Z"
    when = datetime.fromisoformat(date.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def lookup_reservation(reservation_id: str, region: str) -> BlockFacts:
    """The existing Capacity Block reservation ``reservation_id`` (data source, runs at preview)."""
    r = aws.ec2.get_capacity_block_reservation(id=reservation_id, region=region)
    return BlockFacts(
        id=reservation_id,
        availability_zone=r.availability_zone,
        instance_type=r.instance_type,
        instance_count=int(r.instance_count),
        start_date=r.start_date,
        end_date=r.end_date,
        state=r.state,
    )


def find_offering(instance_type: str, instance_count: int, duration_hours: int, start_after: str, end_before: str,
                  region: str) -> BlockFacts:
    """The Capacity Block offering EC2 proposes for the window (data source, runs at preview).

    Only one offering comes back; buying it is a separate, explicit resource.
    """
    start, end = rfc3339(start_after), rfc3339(end_before, end_of_day=True)
    o = aws.ec2.get_capacity_block_offering(
        capacity_duration_hours=duration_hours,
        instance_count=instance_count,
        instance_type=instance_type,
        start_date_range=start,
        end_date_range=end,
        region=region,
    )
    return BlockFacts(
        id=o.capacity_block_offering_id,
        availability_zone=o.availability_zone,
        instance_type=o.instance_type or instance_type,
        instance_count=int(o.instance_count or instance_count),
        start_date=o.start_date_range or start,
        end_date=o.end_date_range or end,
        duration_hours=int(o.capacity_duration_hours or duration_hours),
        upfront_fee=o.upfront_fee,
        currency=o.currency_code,
    )


def problems(block: BlockFacts, *, zone: str, instance_type: str, nodes: int, purchase: bool) -> list[Problem]:
    """Why ``block`` cannot hold this stack's GPU nodes (empty when it can).

    Keys are the stack's configuration keys, so the message says what to change.
    """
    key = "k3infra:capacity." + ("purchase" if purchase else "reservationId")
    what = f"the Capacity Block offering {block.id}" if purchase else f"Capacity Block {block.id}"
    out: list[Problem] = []
    if block.availability_zone != zone:
        out.append(Problem(
            key="k3infra:zone",
            reason=f"{what} is in {block.availability_zone}, and the GPU subnet is in {zone}: instances launch "
                   "only in the block's availability zone",
            given=show(zone),
            allowed=f"{block.availability_zone} (the block's zone)"
                    + ("" if purchase else ", or a reservationId of a block in " + zone),
        ))
    if block.instance_type != instance_type:
        out.append(Problem(
            key=key,
            reason=f"{what} holds {block.instance_type}, and the stack runs {instance_type}",
            given=show(block.id),
            allowed=f"a Capacity Block of {instance_type}",
        ))
    if block.instance_count < nodes:
        out.append(Problem(
            key=key,
            reason=f"{what} holds {block.instance_count} instance(s), and the stack needs {nodes}",
            given=show(block.id),
            allowed=f"a Capacity Block of at least {nodes} x {instance_type}",
        ))
    if block.state in ("expired", "cancelled", "failed", "payment-failed", "unsupported"):
        out.append(Problem(
            key=key,
            reason=f"{what} is {block.state} (it ended {block.end_date})",
            given=show(block.id),
            allowed="a scheduled or active Capacity Block",
        ))
    return out


class Phase(str, Enum):
    """Where the plan's moment falls in a capacity window."""

    NOT_STARTED = "not-started"
    """Before the start: no instance can launch yet."""
    ACTIVE = "active"
    DRAINING = "draining"
    """Inside the last 40 minutes of a Capacity Block: EKS has scaled the group to zero."""
    UNKNOWN = "unknown"
    """Not known at preview (a block bought by this `pulumi up`)."""


def phase(block: BlockFacts, now: datetime) -> Phase:
    """The phase of an existing reservation at ``now``: EC2's state first, then its dates."""
    if block.state in NOT_STARTED_STATES or (block.start_date and now < parse(block.start_date)):
        return Phase.NOT_STARTED
    if block.end_date and now >= parse(block.end_date) - EKS_SCALEDOWN_BEFORE_END:
        return Phase.DRAINING
    return Phase.ACTIVE


def ends_within(end: str | None, now: datetime, margin_hours: int) -> bool:
    """True when ``end`` is known and no more than ``margin_hours`` after ``now``."""
    return end is not None and parse(end) - now <= timedelta(hours=margin_hours)


def window(block: BlockFacts) -> str:
    """When a block runs, for messages: its dates, or an offering's length within the requested window."""
    if block.duration_hours is not None:
        return f"{block.duration_hours} hours between {block.start_date} and {block.end_date}"
    return f"{block.start_date} -> {block.end_date}"

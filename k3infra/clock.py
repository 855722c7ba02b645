"""The plan's date and time: what the time-dependent checks compare against (capacity windows, Kubernetes
support calendars).

``K3INFRA_PLAN_TIME`` (RFC 3339, e.g. ``2026-12-01T12:00:00Z``) fixes it, so a plan can be reviewed as of a given
moment and the tests' golden plans do not change with the calendar; otherwise it is now, in UTC.
"""

import os
from datetime import datetime, timezone

PLAN_TIME_ENV = "K3INFRA_PLAN_TIME"


def parse(value: str) -> datetime:
    """An RFC 3339 / ISO 8601 timestamp (``Z`` or an offset; naive means UTC) as an aware UTC datetime."""
    when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def plan_time() -> datetime:
    """``$K3INFRA_PLAN_TIME`` when set, else the current time (UTC)."""
    fixed = os.environ.get(PLAN_TIME_ENV)
    return parse(fixed) if fixed else datetime.now(timezone.utc)

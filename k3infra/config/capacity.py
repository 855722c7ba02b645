"""The capacity section: how the GPUs are obtained (a reservation, a Capacity Block, a training plan, a reservation
group, a private pool, Lingjun, on demand), the fields each type takes and needs, and a purchase's window."""

from datetime import date, datetime
from typing import Any

from ..catalog import Accelerator, CapacityType, Platform
from .keys import CAPACITY, CAPACITY_FIELDS, END_MARGIN_HOURS
from .model import CapacityConfig
from .problems import Problems
from .schema import K, is_given


def read_capacity(v: dict[str, Any], accel: Accelerator | None, region: str | None, platform: Platform | None,
                  p: Problems, warnings: list[str]) -> CapacityConfig | None:
    """The ``capacity`` section: the type the accelerator can be obtained by, the fields of that type only, the
    ones it needs, and the warnings of a purchase or of no capacity held."""
    c = v["capacity"]
    if not isinstance(c, dict) or not is_given(c.get("type")):
        return None
    ctype: CapacityType = c["type"]
    key = K + "capacity."
    if accel is not None and ctype not in accel.capacity_types:
        p.add(key + "type", f"{accel.sku} capacity cannot be obtained that way", str(ctype),
              ", ".join(accel.capacity_types))
    _other_types_fields(c, ctype, key, p)
    _required(c, ctype, accel, region, platform, key, p, warnings)
    if p.keys() & {key + f for f in c}:
        return None
    return CapacityConfig(
        type=ctype,
        reservation=c.get("reservation"),
        block=c.get("block"),
        sub_block=c.get("subBlock"),
        project=c.get("project"),
        reservation_id=c.get("reservationId"),
        purchase=bool(c.get("purchase")),
        duration_hours=c.get("durationHours"),
        start_after=c.get("startAfter"),
        end_before=c.get("endBefore"),
        training_plan_arn=c.get("trainingPlanArn"),
        group_id=c.get("groupId"),
        create=bool(c.get("create")),
        private_pool_id=c.get("privatePoolId"),
        lingjun_cluster_id=c.get("lingjunClusterId"),
        lingjun_node_group_id=c.get("lingjunNodeGroupId"),
        end_margin_hours=int(c.get("endMarginHours") or END_MARGIN_HOURS),
    )


def _other_types_fields(c: dict[str, Any], ctype: CapacityType, key: str, p: Problems) -> None:
    """A field another capacity type takes (a default value aside) is a problem naming the types that take it."""
    own = CAPACITY_FIELDS[ctype]
    defaults = {f.name: f.default for f in CAPACITY.fields if f.default is not None}
    for name, value in c.items():
        if name == "type" or not is_given(value) or defaults.get(name) == value or name in own:
            continue
        users = [str(t) for t, fields in CAPACITY_FIELDS.items() if name in fields]
        p.add(key + name, f"applies to capacity type {' or '.join(users)}, not {ctype}", value,
              "fields " + (", ".join(sorted(own)) or "none") + f" with type {ctype}")


def _required(c: dict[str, Any], ctype: CapacityType, accel: Accelerator | None, region: str | None,
              platform: Platform | None, key: str, p: Problems, warnings: list[str]) -> None:
    """The fields each capacity type needs, a purchase's window, and what a purchase or no held capacity means."""

    def need(name: str, why: str) -> None:
        # A value that failed its own check is MISSING and already reported: one problem per mistake.
        if c.get(name) is None:
            p.add(key + name, f"is required: {why}", None, "a string")

    if ctype == CapacityType.RESERVATION:
        need("reservation", "the pool consumes a specific reservation")
        if accel is not None and accel.nvlink_spans_nodes:
            need("block", f"{accel.sku} pools pin a reservation block and sub-block (002 §5.2)")
            need("subBlock", f"{accel.sku} pools pin a sub-block: multi-node NVLink spans one sub-block (002 §5.2)")
        elif is_given(c.get("subBlock")) != is_given(c.get("block")):
            missing = "block" if is_given(c.get("subBlock")) else "subBlock"
            need(missing, "a reservation path names both the block and its sub-block")
    elif ctype == CapacityType.CAPACITY_BLOCK:
        if c.get("purchase"):
            if is_given(c.get("reservationId")):
                p.add(key + "reservationId", "a stack either consumes a Capacity Block or buys one", c["reservationId"],
                      "reservationId, or purchase: true with an offering window")
            for name in ("durationHours", "startAfter", "endBefore"):
                need(name, "buying a Capacity Block needs the offering window (start, end, duration)")
            _window(c, key, p)
            warnings.append("capacity.purchase is true: `pulumi up` buys a Capacity Block, which is immediate and "
                            "non-refundable; `pulumi destroy` does not refund it")
        else:
            need("reservationId", "a Capacity Block is consumed by id (cr-...); set purchase: true to buy one")
    elif ctype == CapacityType.TRAINING_PLAN:
        need("trainingPlanArn", "HyperPod instance groups consume a Flexible Training Plan (002 §3.1)")
        arn = c.get("trainingPlanArn")
        if isinstance(arn, str) and region and arn.split(":")[3] != region:
            p.add(key + "trainingPlanArn", f"the training plan is in {arn.split(':')[3]}, the cluster in {region}", arn,
                  f"a training plan in {region}")
    elif ctype == CapacityType.CAPACITY_RESERVATION_GROUP:
        if c.get("create"):
            if is_given(c.get("groupId")):
                p.add(key + "groupId", "a stack either references a group or creates one", c["groupId"],
                      "groupId, or create: true")
            warnings.append("capacity.create is true: the Capacity Reservation Group and its reservation bill from "
                            "creation until they are deleted (002 §4.6)")
        else:
            need("groupId", "the pool joins an existing Capacity Reservation Group; set create: true to make one")
    elif ctype == CapacityType.PRIVATE_POOL:
        need("privatePoolId", "the pool draws on an ECS private pool")
    elif ctype == CapacityType.LINGJUN and platform != Platform.PAI_EAS:
        # PAI-EAS draws on a Lingjun resource quota instead (clouds/alicloud.py checks it).
        need("lingjunClusterId", "a Lingjun node pool joins an EFLO cluster")
        need("lingjunNodeGroupId", "a Lingjun node pool joins an EFLO node group")
    elif ctype == CapacityType.ON_DEMAND:
        warnings.append(f"capacity type on-demand: nothing holds {accel.sku if accel else 'the GPUs'} for this stack; "
                        "scale-up can fail when the zone has none free")


def _parse_when(s: str) -> datetime:
    if "T" in s:
        return datetime.fromisoformat(s.replace("Z", "+00:00"))
    return datetime.combine(date.fromisoformat(s), datetime.min.time())


def _window(c: dict[str, Any], key: str, p: Problems) -> None:
    start, end, hours = c.get("startAfter"), c.get("endBefore"), c.get("durationHours")
    if not (isinstance(start, str) and isinstance(end, str)):
        return
    try:
        s, e = _parse_when(start), _parse_when(end)
    except ValueError as err:
        p.add(key + "startAfter", f"is not a date: {err}", start, "an ISO date such as 2026-12-01")
        return
    if e.replace(tzinfo=None) <= s.replace(tzinfo=None):
        p.add(key + "endBefore", f"ends before the window starts ({start})", end, f"a date after {start}")
    elif isinstance(hours, int) and (e.replace(tzinfo=None) - s.replace(tzinfo=None)).total_seconds() < hours * 3600:
        p.add(key + "durationHours", f"a {hours}-hour block does not fit between {start} and {end}", hours,
              "a duration within the window")

"""The capacity the GPU nodes run on: one reader per cloud behind :func:`observe_capacity`, read once per command
(the time left is counted again at each refresh, ``window.capacity_line``).

Readers: ``aws`` (EC2 Capacity Block, SageMaker training plan), ``azure`` (Capacity Reservation Group), ``gcp``
(specific reservation), ``alicloud`` (ECS private pool, Lingjun). What the stack's outputs already say without cloud
credentials (AWS stacks export ``capacityStartTime``/``capacityEndTime`` and the block's ``capacity.reservationId``)
fills the window where the cloud cannot be read. A read is bounded by ``READ_TIMEOUT_SECONDS``; none raises.
"""

import concurrent.futures
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...catalog.types import CapacityType, Platform
from ...config import StackConfig
from . import alicloud, aws, azure, gcp
from .window import Capacity

READ_TIMEOUT_SECONDS = 20.0
"""An SDK looking for credentials or an unreachable endpoint retries for minutes; the report does not wait."""


def reader(cfg: StackConfig, outputs: dict[str, Any] | None) -> Callable[[], Capacity]:
    """The stack's capacity reader (by ``k3infra:capacity.type``)."""
    c, out = cfg.capacity, outputs or {}
    t = c.type
    if t == CapacityType.ON_DEMAND:
        return lambda: Capacity(kind="on-demand", windowless=True, detail="on-demand instances: no reservation, "
                                "no window (and no guarantee the GPUs are there)")
    if t == CapacityType.EXISTING:
        return lambda: Capacity(kind="existing nodes", windowless=True, detail="the cluster's own GPU nodes: "
                                "nothing reserved by the stack")
    if t == CapacityType.CAPACITY_BLOCK:
        block = c.reservation_id or (out.get("capacity") or {}).get("reservationId")
        return lambda: aws.capacity_block(block, cfg.region)
    if t == CapacityType.TRAINING_PLAN:
        return lambda: aws.training_plan(c.training_plan_arn, cfg.region)
    if t == CapacityType.CAPACITY_RESERVATION_GROUP:
        group = c.group_id or out.get("reservationGroup")
        return lambda: azure.reservation_group(group)
    if t == CapacityType.RESERVATION:
        project = c.project or (cfg.gcp.project if cfg.gcp else None)
        return lambda: gcp.reservation(project, cfg.zone, c.reservation)
    if t == CapacityType.PRIVATE_POOL:
        return lambda: alicloud.private_pool(c.private_pool_id, cfg.region)
    if cfg.platform == Platform.PAI_EAS:
        group = cfg.alicloud.pai_resource_group if cfg.alicloud else None
        return lambda: alicloud.pai_resource(group, t == CapacityType.LINGJUN)
    if t == CapacityType.LINGJUN:
        return lambda: alicloud.lingjun(c.lingjun_cluster_id, c.lingjun_node_group_id)
    return lambda: Capacity(kind=str(t), unreadable=f"capacity type {t} has no reader")


def with_outputs(cap: Capacity, outputs: dict[str, Any] | None) -> Capacity:
    """The window from the stack's outputs where the cloud gave none (``capacityStartTime``/``capacityEndTime``)."""
    out = outputs or {}
    start, end = out.get("capacityStartTime") or None, out.get("capacityEndTime") or None
    if cap.state or not (start or end):
        return cap
    return replace(cap, start=cap.start or start, end=cap.end or end, source="stack outputs")


def observe_capacity(cfg: StackConfig, outputs: dict[str, Any] | None,
                     timeout: float = READ_TIMEOUT_SECONDS) -> Capacity:
    """The stack's capacity as its cloud and outputs tell it, within ``timeout`` seconds."""
    read = reader(cfg, outputs)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="capacity")
    try:
        cap = pool.submit(read).result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        cap = Capacity(kind=str(cfg.capacity.type), unreadable=f"no answer from the cloud within {timeout:g} s")
    finally:
        pool.shutdown(wait=False)
    return with_outputs(cap, outputs)

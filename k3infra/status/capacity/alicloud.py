"""Alibaba Cloud: the ECS private pool the GPU node pool consumes: a capacity reservation
(``DescribeCapacityReservations``) or an elasticity assurance (``DescribeElasticityAssurances``), both ECS
2014-05-26 with ``PrivatePoolOptions.Ids``; and a Lingjun node group, contracted through sales, which no public API
reads. Statuses (ECS API reference): Pending, Preparing, Prepared, Active, Released; ``StartTime``/``EndTime``
(``EndTimeType`` Unlimited: no end); ``AllocatedResources.AllocatedResource[]`` with ``TotalAmount`` and
``UsedAmount``.

The ECS SDK (``alibabacloud-ecs20140526``) is not one of k3infra's dependencies; where it is missing the line says
what it would read. The responses are read as the REST JSON, so tests record them as dicts.
"""

from collections.abc import Callable
from typing import Any

from .window import Capacity

FAILED, WAITING = ("Released",), ("Pending", "Preparing", "Prepared")
REMEDY = ("the private pool has ended or been released: buy a new capacity reservation or elasticity assurance of "
          "the stack's instance type and zone, and set k3infra:capacity.privatePoolId to it")
ACTIONS = ("ecs:DescribeCapacityReservations", "ecs:DescribeElasticityAssurances")

Describer = Callable[[str, str], dict[str, Any]]
"""``(region, private pool id)`` to the first item of either answer (REST JSON), or {} when neither has it."""


def _describe(region: str, pool_id: str) -> dict[str, Any]:
    from alibabacloud_ecs20140526.client import Client  # type: ignore[import-not-found,unused-ignore]

    raise NotImplementedError(f"{Client.__module__}: the reading of a private pool through the ECS SDK is not "
                              "written yet")


def private_pool(pool_id: str | None, region: str, describe: Describer = _describe) -> Capacity:
    """The private pool ``pool_id`` (a capacity reservation's or an elasticity assurance's id)."""
    kind = f"private pool {pool_id or '(none)'}"
    if not pool_id:
        return Capacity(kind=kind, unreadable="no k3infra:capacity.privatePoolId", remedy=REMEDY)
    try:
        item = describe(region, pool_id)
    except ImportError:
        return Capacity(kind=kind, unreadable="the ECS SDK (alibabacloud-ecs20140526) is not installed: it would read "
                        f"{' or '.join(a.split(':')[1] for a in ACTIONS)} (Status, StartTime, EndTime, "
                        "TotalAmount and UsedAmount)", remedy=REMEDY)
    except Exception as e:  # noqa: BLE001 - any SDK or sign-in failure: said, never raised
        text = str(e).strip().splitlines()
        return Capacity(kind=kind, unreadable=f"ECS: {type(e).__name__}: {text[0][:200] if text else ''}",
                        remedy=REMEDY)
    if not item:
        return Capacity(kind=kind, unreadable=f"no capacity reservation or elasticity assurance {pool_id} in {region}",
                        remedy=REMEDY)
    allocated = ((item.get("AllocatedResources") or {}).get("AllocatedResource") or [])
    detail = "; ".join(f"{a.get('UsedAmount', '?')} of {a.get('TotalAmount', '?')} x {a.get('InstanceType', '?')} "
                       f"used in {a.get('zoneId') or a.get('ZoneId', '?')}" for a in allocated)
    unlimited = item.get("EndTimeType") == "Unlimited"
    return Capacity(kind=kind, state=str(item.get("Status") or ""), start=item.get("StartTime") or None,
                    end=None if unlimited else item.get("EndTime") or None, detail=detail,
                    source="ECS " + ("DescribeCapacityReservations" if "CapacityReservationId" in item
                                     else "DescribeElasticityAssurances"),
                    failed_states=FAILED, waiting_states=WAITING, remedy=REMEDY)


CONTRACTED = "contracted through sales, and no public API k3infra uses reads its term: see the contract"


def lingjun(cluster_id: str | None, node_group_id: str | None) -> Capacity:
    """An ACK Lingjun node group: contracted through sales; no public API here reads its term."""
    return Capacity(kind=f"Lingjun node group {node_group_id or '(none)'}",
                    unreadable=f"Lingjun cluster {cluster_id or '(none)'}: {CONTRACTED} or the Lingjun console")


def pai_resource(group: str | None, quota: bool) -> Capacity:
    """PAI-EAS: the Lingjun resource quota (contracted) or the EAS resource group (its machines bill until released;
    EAS DescribeResource would read them, through the EAS SDK this environment does not have)."""
    if quota:
        return Capacity(kind=f"Lingjun quota {group or '(none)'}", unreadable=f"{CONTRACTED} or the PAI console")
    return Capacity(kind=f"EAS resource group {group or '(none)'}", unreadable="the EAS SDK "
                    "(alibabacloud-eas20210701) is not installed: it would read DescribeResource (its machines and "
                    "their state); a resource group has no end of its own")

"""AWS: an EC2 Capacity Block (``DescribeCapacityReservations``) or a SageMaker Flexible Training Plan
(``DescribeTrainingPlan``), with botocore's default credential chain where credentials are evident
(``aws.training_plan.credentials_source``: instance metadata is not probed, so no credentials means no wait).

States: EC2 API reference, CapacityReservation.State (the enum in botocore's ec2 model); SageMaker
DescribeTrainingPlan Status (Pending, Active, Scheduled, Expired, Failed).
"""

import os
from collections.abc import Callable, Mapping
from typing import Any

from ...aws.training_plan import _when, credentials_source, plan_name
from .window import Capacity

BLOCK_FAILED = ("expired", "cancelled", "cancelling", "failed", "payment-failed", "unavailable", "unsupported")
BLOCK_WAITING = ("scheduled", "payment-pending", "pending", "assessing", "delayed")
PLAN_FAILED, PLAN_WAITING = ("Expired", "Failed"), ("Pending", "Scheduled")
BLOCK_REMEDY = ("buy a later Capacity Block (k3infra:capacity.purchase with a new window) or extend this one "
                "(`aws ec2 describe-capacity-block-extension-offerings`, then purchase-capacity-block-extension)")
PLAN_REMEDY = ("buy a new Flexible Training Plan (`aws sagemaker search-training-plan-offerings`) and set "
               "k3infra:capacity.trainingPlanArn to it")

Client = Callable[[str, str], Any]
"""``(service, region)`` to a botocore client."""


def _client(service: str, region: str) -> Any:
    import botocore.session

    return botocore.session.get_session().create_client(service, region_name=region)


def capacity_block(reservation_id: str | None, region: str, client: Client = _client,
                   env: Mapping[str, str] | None = None) -> Capacity:
    """The block ``reservation_id`` (cr-...) as EC2 describes it."""
    base = Capacity(kind=f"capacity block {reservation_id or '(bought by the stack)'}", failed_states=BLOCK_FAILED,
                    waiting_states=BLOCK_WAITING, remedy=BLOCK_REMEDY)
    if not reservation_id:
        return _unreadable(base, "the reservation id is known once the stack has bought the block (stack outputs)")
    why = _no_credentials(env)
    if why:
        return _unreadable(base, why)
    try:
        answer = client("ec2", region).describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    except Exception as e:  # noqa: BLE001 - any SDK or sign-in failure: said, never raised
        return _unreadable(base, f"EC2 DescribeCapacityReservations: {type(e).__name__}: {_first(e)}")
    found = answer.get("CapacityReservations") or []
    if not found:
        return _unreadable(base, f"EC2 DescribeCapacityReservations: no reservation {reservation_id} in {region}")
    r = found[0]
    return Capacity(
        kind=base.kind, state=str(r.get("State") or ""), start=_when(r.get("StartDate")), end=_when(r.get("EndDate")),
        detail=(f"{r.get('AvailableInstanceCount', '?')} of {r.get('TotalInstanceCount', '?')} x "
                f"{r.get('InstanceType', '?')} available in {r.get('AvailabilityZone', '?')}"),
        source="EC2 DescribeCapacityReservations", failed_states=BLOCK_FAILED, waiting_states=BLOCK_WAITING,
        remedy=BLOCK_REMEDY)


def training_plan(arn: str | None, region: str, client: Client = _client,
                  env: Mapping[str, str] | None = None) -> Capacity:
    """The Flexible Training Plan ``arn`` as SageMaker describes it."""
    name = plan_name(arn or "")
    base = Capacity(kind=f"training plan {name or '(none)'}", failed_states=PLAN_FAILED, waiting_states=PLAN_WAITING,
                    remedy=PLAN_REMEDY)
    if not name:
        return _unreadable(base, "no k3infra:capacity.trainingPlanArn")
    why = _no_credentials(env)
    if why:
        return _unreadable(base, why)
    try:
        r = client("sagemaker", region).describe_training_plan(TrainingPlanName=name)
    except Exception as e:  # noqa: BLE001
        return _unreadable(base, f"SageMaker DescribeTrainingPlan: {type(e).__name__}: {_first(e)}")
    detail = (f"{r.get('AvailableInstanceCount', '?')} of {r.get('TotalInstanceCount', '?')} instances available, "
              f"{r.get('InUseInstanceCount', 0)} in use")
    if r.get("StatusMessage"):
        detail += f": {r['StatusMessage']}"
    return Capacity(kind=base.kind, state=str(r.get("Status") or ""), start=_when(r.get("StartTime")),
                    end=_when(r.get("EndTime")), detail=detail, source="SageMaker DescribeTrainingPlan",
                    failed_states=PLAN_FAILED, waiting_states=PLAN_WAITING, remedy=PLAN_REMEDY)


def _no_credentials(env: Mapping[str, str] | None) -> str:
    return "" if credentials_source(os.environ if env is None else env) else \
        "no AWS credentials in the environment (AWS_PROFILE, keys, SSO or a credentials file)"


def _first(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:200] if lines else ""


def _unreadable(base: Capacity, why: str) -> Capacity:
    return Capacity(kind=base.kind, unreadable=why, failed_states=base.failed_states,
                    waiting_states=base.waiting_states, remedy=base.remedy)

"""The SageMaker Flexible Training Plan behind a HyperPod stack, checked at preview as Capacity Blocks are.

A training plan has no Pulumi resource or data source (pulumi-aws and aws-native have none), so the check calls
SageMaker ``DescribeTrainingPlan`` through botocore. It runs only where AWS credentials are evident in the
environment and never under the offline recording engine; otherwise it is skipped with a warning that says how
to check by hand. What it stops: a plan in another availability zone than the HyperPod subnet, of another
instance type, too small, or over (Expired, Failed). What it reports: the window (start, end), whether the plan
is active yet, and whether it ends within the stack's margin.

Statuses (SageMaker developer guide, training-plan-details-using-api-cli-sdk): Pending (payment), Scheduled
(paid, before its start; "you can utilize the capacity ... for HyperPod cluster workloads", the instance group is
InService once created), Active, Expired, Failed.
"""

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from ..config.problems import Problem, show

NOT_ACTIVE = ("Pending", "Scheduled")
"""The plan exists but its capacity has not started: the HyperPod cluster can be created, the endpoint cannot run."""
OVER = ("Expired", "Failed")


@dataclass(frozen=True)
class PlanFacts:
    """What SageMaker says about a training plan (for the instance type the stack runs)."""

    name: str
    status: str
    start: str | None
    """RFC 3339, UTC."""
    end: str | None
    availability_zones: tuple[str, ...]
    """Zones of the plan's reserved capacities of the stack's instance type."""
    instance_type: str | None
    """The stack's instance type when the plan reserves it, else the first type it reserves."""
    instance_count: int
    """Instances of ``instance_type`` the plan reserves (summed over its reserved capacities)."""
    target_resources: tuple[str, ...]


class PlanReader(Protocol):
    """Something that describes a training plan by name."""

    def describe(self, name: str) -> Mapping[str, Any]:
        """The ``DescribeTrainingPlan`` response."""
        ...


class SageMakerPlanReader:
    """:class:`PlanReader` over a botocore SageMaker client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def describe(self, name: str) -> Mapping[str, Any]:
        """``DescribeTrainingPlan(TrainingPlanName=name)``."""
        return self._client.describe_training_plan(TrainingPlanName=name)


def sagemaker_reader(region: str, endpoint_url: str | None = None) -> PlanReader:
    """A reader with botocore's default credential chain (environment, profile, SSO, web identity, container)."""
    import botocore.session

    client = botocore.session.get_session().create_client("sagemaker", region_name=region, endpoint_url=endpoint_url)
    return SageMakerPlanReader(client)


ReaderFactory = Callable[[str], PlanReader]


def credentials_source(env: Mapping[str, str], home: Path | None = None) -> str | None:
    """Where AWS credentials are evident without contacting AWS (a short description), or None.

    Looks at what botocore's chain reads first: access keys or a profile in the environment, a web identity
    token, container credentials, or a shared credentials/config file. Instance metadata is not probed.
    """
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return "AWS_ACCESS_KEY_ID"
    if env.get("AWS_PROFILE"):
        return f"AWS_PROFILE={env['AWS_PROFILE']}"
    if env.get("AWS_WEB_IDENTITY_TOKEN_FILE") and env.get("AWS_ROLE_ARN"):
        return "AWS_WEB_IDENTITY_TOKEN_FILE"
    if env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") or env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        return "container credentials"
    base = home or Path.home()
    for var, default in (("AWS_SHARED_CREDENTIALS_FILE", base / ".aws" / "credentials"),
                         ("AWS_CONFIG_FILE", base / ".aws" / "config")):
        path = Path(env[var]) if env.get(var) else default
        if path.is_file():
            return str(path)
    return None


def plan_name(arn: str) -> str:
    """``arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME`` -> NAME (DescribeTrainingPlan takes the name)."""
    return arn.rsplit("/", 1)[-1]


def _when(value: Any) -> str | None:
    """A timestamp as botocore parses it (datetime) or as the wire carries it (epoch seconds), in RFC 3339 UTC."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(value, tz=timezone.utc)
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return aware.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def facts(response: Mapping[str, Any], instance_type: str) -> PlanFacts:
    """The parts of a ``DescribeTrainingPlan`` response the stack depends on."""
    summaries = list(response.get("ReservedCapacitySummaries") or [])
    mine = [s for s in summaries if s.get("InstanceType") == instance_type]
    chosen = mine or summaries[:1]
    return PlanFacts(
        name=str(response.get("TrainingPlanName") or ""),
        status=str(response.get("Status") or ""),
        start=_when(response.get("StartTime")),
        end=_when(response.get("EndTime")),
        availability_zones=tuple(sorted({str(s["AvailabilityZone"]) for s in chosen if s.get("AvailabilityZone")})),
        instance_type=str(chosen[0].get("InstanceType")) if chosen else None,
        instance_count=sum(int(s.get("TotalInstanceCount") or 0) for s in mine),
        target_resources=tuple(str(t) for t in response.get("TargetResources") or ()),
    )


def problems(plan: PlanFacts, *, arn: str, zone: str, instance_type: str, nodes: int) -> list[Problem]:
    """Why ``plan`` cannot hold this stack's instances (empty when it can)."""
    key = "k3infra:capacity.trainingPlanArn"
    what = f"training plan {plan.name}"
    out: list[Problem] = []
    if plan.instance_type != instance_type:
        out.append(Problem(key=key, reason=f"{what} reserves {plan.instance_type or 'no instances'}, and the stack "
                           f"runs {instance_type}", given=show(arn), allowed=f"a training plan of {instance_type}"))
    elif plan.instance_count < nodes:
        out.append(Problem(key=key, reason=f"{what} reserves {plan.instance_count} x {instance_type}, and the stack "
                           f"needs {nodes}", given=show(arn), allowed=f"a training plan of at least {nodes} instance(s)"))
    if plan.availability_zones and zone not in plan.availability_zones:
        out.append(Problem(key="k3infra:zone", reason=f"{what} reserves its instances in "
                           f"{', '.join(plan.availability_zones)}, and the HyperPod subnet is in {zone}",
                           given=show(zone), allowed=f"{' or '.join(plan.availability_zones)} (the plan's zone)"))
    if plan.target_resources and "hyperpod-cluster" not in plan.target_resources:
        out.append(Problem(key=key, reason=f"{what} targets {', '.join(plan.target_resources)}, not HyperPod clusters",
                           given=show(arn), allowed="a training plan with TargetResources hyperpod-cluster"))
    if plan.status in OVER:
        out.append(Problem(key=key, reason=f"{what} is {plan.status} (it ended {plan.end})", given=show(arn),
                           allowed="a Scheduled or Active training plan"))
    return out


@dataclass(frozen=True)
class PlanCheck:
    """The outcome of the check."""

    facts: PlanFacts | None
    """None when nothing was looked up."""
    warnings: tuple[str, ...] = ()


def lookup(arn: str, region: str, instance_type: str, *, offline: bool, env: Mapping[str, str] | None = None,
           reader_factory: ReaderFactory = sagemaker_reader, home: Path | None = None) -> PlanCheck:
    """Describe the plan where credentials allow; a failed or impossible lookup is a warning, never a crash."""
    env = os.environ if env is None else env
    name = plan_name(arn)

    def skipped(why: str) -> PlanCheck:
        return PlanCheck(None, (f"training plan {name} not checked ({why}): its zone, instance type, count and "
                                f"window are unverified; check with `aws sagemaker describe-training-plan --region "
                                f"{region} --training-plan-name {name}`",))

    if offline:
        return skipped("offline plan: no AWS lookup")
    source = credentials_source(env, home)
    if source is None:
        return skipped("no AWS credentials in the environment")
    try:
        response = reader_factory(region).describe(name)
    except Exception as e:  # noqa: BLE001 - any SDK or sign-in failure degrades to a warning, never a crash
        return skipped(f"DescribeTrainingPlan with {source} failed: {type(e).__name__}: {e}")
    return PlanCheck(facts(response, instance_type))

"""The capacity line: each cloud's reader on recorded answers (botocore's Stubber for EC2 and SageMaker, the REST
JSON for Azure, Google Cloud and Alibaba Cloud), the window judged against the time (active, ending within the
margin, not started, ended), and no credentials or no SDK said, never failed on."""

from datetime import datetime, timezone

import botocore.session
import pytest
from botocore.stub import Stubber

from k3infra.status.capacity import aws, azure, gcp, alicloud, with_outputs
from k3infra.status.capacity.window import Capacity, capacity_line
from k3infra.status.lines import FAILED, OK, PROGRESS, UNKNOWN, WARN, Line, Report

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
CREDS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}
NO_CREDS = {"AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent"}


def stubbed(service: str, method: str, response: dict, params: dict):
    client = botocore.session.get_session().create_client(
        service, region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b")
    stub = Stubber(client)
    stub.add_response(method, response, params)
    stub.activate()
    return lambda svc, region: client


def block(state: str, end: str, start: str = "2026-11-30T11:30:00Z") -> Capacity:
    answer = {"CapacityReservations": [{
        "CapacityReservationId": "cr-0123456789abcdef0", "InstanceType": "p6-b300.48xlarge",
        "AvailabilityZone": "us-west-2a", "TotalInstanceCount": 1, "AvailableInstanceCount": 0, "State": state,
        "StartDate": datetime.fromisoformat(start), "EndDate": datetime.fromisoformat(end),
        "ReservationType": "capacity-block"}]}
    return aws.capacity_block("cr-0123456789abcdef0", "us-west-2", stubbed(
        "ec2", "describe_capacity_reservations", answer, {"CapacityReservationIds": ["cr-0123456789abcdef0"]}), CREDS)


def test_an_active_capacity_block_with_days_left() -> None:
    line = capacity_line(block("active", "2026-12-14T11:30:00Z"), NOW, 24)
    assert (line.state, line.phase, line.name) == (OK, "active", "capacity block cr-0123456789abcdef0")
    assert line.detail == ("12 d 23 h left; state active, 2026-11-30T11:30:00Z to 2026-12-14T11:30:00Z, 0 of 1 x "
                           "p6-b300.48xlarge available in us-west-2a")
    assert line.to_json()["capacity"] == {
        "kind": "capacity block cr-0123456789abcdef0", "state": "active", "start": "2026-11-30T11:30:00Z",
        "end": "2026-12-14T11:30:00Z", "source": "EC2 DescribeCapacityReservations", "secondsLeft": 1121400}


def test_a_block_ending_within_the_margin_warns_and_an_ended_one_fails() -> None:
    soon = capacity_line(block("active", "2026-12-01T20:00:00Z"), NOW, 24)
    assert (soon.state, soon.phase) == (WARN, "ending soon")
    assert soon.detail.startswith("8 h 00 min left (within 24 h); state active")
    assert soon.look.startswith("before it ends: buy a later Capacity Block")
    # warn leaves the verdict alone and is said in the summary
    rep = Report("aws-eks", "kimi-k3", (soon, Line("server", "group 0 rank 0", OK, "ready")))
    assert (rep.state, rep.exit_code) == (OK, 0)
    assert rep.summary.startswith("serving; warn: capacity capacity block cr-0123456789abcdef0: ending soon (8 h")
    ended = capacity_line(block("expired", "2026-12-01T10:00:00Z"), NOW, 24)
    assert (ended.state, ended.phase) == (FAILED, "ended")
    assert ended.look == aws.BLOCK_REMEDY
    # The planted mistake: an "active" state whose end has passed (the cloud not yet updated) is ended all the same.
    assert capacity_line(block("active", "2026-12-01T11:59:00Z"), NOW, 24).state == FAILED


def test_a_scheduled_block_waits_for_its_window() -> None:
    line = capacity_line(block("scheduled", "2026-12-15T11:30:00Z", start="2026-12-01T14:30:00Z"), NOW, 24)
    assert (line.state, line.phase, line.phase_seconds) == (PROGRESS, "waiting for its window", 9000)
    assert line.detail.startswith("starts in 2 h 30 min; state scheduled")


def test_a_training_plan_from_sagemaker() -> None:
    answer = {"TrainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/k3-p6-b300",
              "TrainingPlanName": "k3-p6-b300", "Status": "Active", "StartTime": datetime(2026, 11, 30),
              "EndTime": datetime(2026, 12, 30), "TotalInstanceCount": 1, "AvailableInstanceCount": 0,
              "InUseInstanceCount": 1}
    cap = aws.training_plan("arn:aws:sagemaker:us-west-2:123456789012:training-plan/k3-p6-b300", "us-west-2",
                            stubbed("sagemaker", "describe_training_plan", answer,
                                    {"TrainingPlanName": "k3-p6-b300"}), CREDS)
    line = capacity_line(cap, NOW, 24)
    assert (line.state, line.name, line.detail) == (
        OK, "training plan k3-p6-b300", "28 d 12 h left; state Active, 2026-11-30T00:00:00Z to 2026-12-30T00:00:00Z, "
        "0 of 1 instances available, 1 in use")


def test_without_credentials_the_outputs_window_stands_and_nothing_fails() -> None:
    def never(svc, region):
        raise AssertionError("no client without credentials")

    cap = aws.capacity_block("cr-0123456789abcdef0", "us-west-2", never, NO_CREDS)
    line = capacity_line(cap, NOW, 24)
    assert (line.state, line.phase, line.detail) == (UNKNOWN, "not readable", "no AWS credentials in the environment "
                                                     "(AWS_PROFILE, keys, SSO or a credentials file)")
    both = capacity_line(with_outputs(cap, {"capacityStartTime": "2026-11-30T11:30:00Z",
                                            "capacityEndTime": "2026-12-02T11:30:00Z"}), NOW, 24)
    assert (both.state, both.phase) == (WARN, "ending soon")
    assert both.to_json()["capacity"]["source"] == "stack outputs"


def test_an_api_error_is_said() -> None:
    client = botocore.session.get_session().create_client("ec2", region_name="us-west-2", aws_access_key_id="a",
                                                          aws_secret_access_key="b")
    stub = Stubber(client)
    stub.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", "You are not authorized")
    stub.activate()
    cap = aws.capacity_block("cr-1", "us-west-2", lambda s, r: client, CREDS)
    assert cap.unreadable == ("EC2 DescribeCapacityReservations: ClientError: An error occurred "
                              "(UnauthorizedOperation) when calling the DescribeCapacityReservations operation: You "
                              "are not authorized")


GROUP = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3-capacity/providers/"
         "Microsoft.Compute/capacityReservationGroups/crg-k3-gb300")


def test_an_azure_reservation_group_has_no_end() -> None:
    seen = []

    def listed(sub, rg, name):
        seen.append((sub, rg, name))
        return [{"name": "cr-gb300", "sku": {"name": "Standard_ND128isr_GB300_v6", "capacity": 2},
                 "properties": {"provisioningState": "Succeeded", "virtualMachinesAssociated": [{"id": "vm0"}]}}]

    line = capacity_line(azure.reservation_group(GROUP, listed), NOW, 24)
    assert seen == [("00000000-0000-0000-0000-000000000000", "rg-k3-capacity", "crg-k3-gb300")]
    assert (line.state, line.phase, line.detail) == (
        OK, "active", "no end; state Succeeded, cr-gb300: 2 x Standard_ND128isr_GB300_v6, 1 VM(s) associated, "
        "Succeeded")
    # The planted mistake: a declined scheduled reservation is no capacity.
    declined = lambda s, r, n: [{"name": "cr", "sku": {}, "properties": {  # noqa: E731
        "provisioningState": "Succeeded", "reservationStateInfo": {"reservationState": "Declined"}}}]
    assert capacity_line(azure.reservation_group(GROUP, declined), NOW, 24).state == FAILED


def test_gcp_and_alicloud_without_their_sdks_say_what_they_would_read() -> None:
    gline = capacity_line(gcp.reservation("my-project", "us-central1-b", "k3-a4xmax"), NOW, 24)
    assert (gline.state, gline.detail) == (UNKNOWN, "google-cloud-compute is not installed (pip install "
                                           "google-cloud-compute): it would read reservations.get status, count and "
                                           "inUseCount")
    aline = capacity_line(alicloud.private_pool("crp-k3ebmgn8v0001", "cn-wulanchabu"), NOW, 24)
    assert (aline.state, aline.detail) == (UNKNOWN, "the ECS SDK (alibabacloud-ecs20140526) is not installed: it would "
                                           "read DescribeCapacityReservations or DescribeElasticityAssurances (Status, "
                                           "StartTime, EndTime, TotalAmount and UsedAmount)")


def test_recorded_gcp_and_alicloud_answers() -> None:
    res = {"name": "k3-a4xmax", "status": "READY", "specificReservation": {
        "count": "2", "inUseCount": "2", "instanceProperties": {"machineType": "a4x-maxgpu-4g-metal"}}}
    line = capacity_line(gcp.reservation("p", "us-central1-b", "k3-a4xmax", lambda *a: res), NOW, 24)
    assert (line.state, line.detail) == (OK, "no end; state READY, 2 of 2 x a4x-maxgpu-4g-metal in use in "
                                         "us-central1-b")
    pool = {"CapacityReservationId": "crp-k3", "Status": "Active", "StartTime": "2026-11-01T00:00Z",
            "EndTime": "2026-12-01T06:00Z", "EndTimeType": "Limited", "AllocatedResources": {"AllocatedResource": [
                {"InstanceType": "ecs.ebmgn8v.48xlarge", "TotalAmount": 3, "UsedAmount": 3, "zoneId": "cn-wulanchabu-c"}]}}
    ended = capacity_line(alicloud.private_pool("crp-k3", "cn-wulanchabu", lambda *a: pool), NOW, 24)
    assert (ended.state, ended.phase, ended.look) == (FAILED, "ended", alicloud.REMEDY)
    assert ended.detail == ("state Active, 2026-11-01T00:00Z to 2026-12-01T06:00Z, 3 of 3 x ecs.ebmgn8v.48xlarge used "
                            "in cn-wulanchabu-c (from ECS DescribeCapacityReservations)")
    unlimited = capacity_line(alicloud.private_pool("crp-k3", "r", lambda *a: pool | {"EndTimeType": "Unlimited"}),
                              NOW, 24)
    assert (unlimited.state, unlimited.detail.split(";")[0]) == (OK, "no end")


@pytest.mark.parametrize(("kind", "phase"), [("on-demand", "no reservation"), ("existing nodes", "no reservation")])
def test_windowless_capacity(kind, phase) -> None:
    line = capacity_line(Capacity(kind=kind, windowless=True), NOW, 24)
    assert (line.state, line.phase) == (OK, phase)

"""The training plan check (SageMaker DescribeTrainingPlan): botocore against a SageMaker stand-in on loopback, the
credential gate, the problems it raises and what a HyperPod stack does with the answer."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from k3infra import planning
from k3infra.aws import deployment
from k3infra.aws import training_plan as tp
from k3infra.aws.hyperpod_chart import DEPENDENCIES_CHART_COMMIT
from k3infra.config import ConfigError
from tests.aws.test_deployment import iec_object
from tests.support import ROOT, plan

ARN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/k3-p6-b300"
SKU = "ml.p6-b300.48xlarge"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}


def response(**changes: Any) -> dict[str, Any]:
    """A DescribeTrainingPlan response as the API returns it (epoch-second timestamps, JSON 1.1)."""
    body: dict[str, Any] = {
        "TrainingPlanArn": ARN, "TrainingPlanName": "k3-p6-b300", "Status": "Active",
        "StartTime": 1764590400, "EndTime": 1765195200,  # 2025-12-01T12:00Z .. 2025-12-08T12:00Z
        "TotalInstanceCount": 1, "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [{
            "ReservedCapacityArn": "arn:aws:sagemaker:us-west-2:123456789012:reserved-capacity/rc-1",
            "InstanceType": SKU, "TotalInstanceCount": 1, "Status": "Active", "AvailabilityZone": "us-west-2a",
            "DurationHours": 168, "StartTime": 1764590400, "EndTime": 1765195200}],
    }
    body.update(changes)
    return body


class SageMakerStandIn(BaseHTTPRequestHandler):
    """Answers ``SageMaker.DescribeTrainingPlan`` (awsJson1_1) and records what botocore sent."""

    answer: dict[str, Any] = {}
    requests: list[tuple[str, dict[str, Any], str]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        type(self).requests.append((self.headers.get("X-Amz-Target", ""), body, self.headers.get("Authorization", "")))
        payload = json.dumps(type(self).answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def sagemaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The stand-in's URL; botocore signs with dummy keys (the stand-in does not check them)."""
    SageMakerStandIn.requests = []
    SageMakerStandIn.answer = response()
    server = ThreadingHTTPServer(("127.0.0.1", 0), SageMakerStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_botocore_describes_the_plan_by_name_and_the_answer_becomes_facts(sagemaker: str):
    check = tp.lookup(ARN, "us-west-2", SKU, offline=False, env=CREDENTIALS,
                      reader_factory=lambda region: tp.sagemaker_reader(region, endpoint_url=sagemaker))
    ((target, body, auth),) = SageMakerStandIn.requests
    assert target == "SageMaker.DescribeTrainingPlan" and body == {"TrainingPlanName": "k3-p6-b300"}
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") and "/us-west-2/sagemaker/" in auth
    assert check.warnings == ()
    assert check.facts == tp.PlanFacts(name="k3-p6-b300", status="Active", start="2025-12-01T12:00:00Z",
                                       end="2025-12-08T12:00:00Z", availability_zones=("us-west-2a",),
                                       instance_type=SKU, instance_count=1, target_resources=("hyperpod-cluster",))


def test_a_failing_lookup_is_a_warning_never_a_crash(sagemaker: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore would retry the refusal 4 times, with backoff
    check = tp.lookup(ARN, "us-west-2", SKU, offline=False, env=CREDENTIALS,
                      reader_factory=lambda region: tp.sagemaker_reader(region, endpoint_url="http://127.0.0.1:9"))
    assert check.facts is None
    (warning,) = check.warnings
    assert warning.startswith("training plan k3-p6-b300 not checked (DescribeTrainingPlan with AWS_ACCESS_KEY_ID failed:")
    assert "aws sagemaker describe-training-plan --region us-west-2 --training-plan-name k3-p6-b300" in warning


def test_no_lookup_offline_or_without_credentials(tmp_path: Path):
    def never(region: str) -> tp.PlanReader:
        raise AssertionError("no lookup may be made")

    offline = tp.lookup(ARN, "us-west-2", SKU, offline=True, env=CREDENTIALS, reader_factory=never)
    assert offline.facts is None and "(offline plan: no AWS lookup)" in offline.warnings[0]
    bare = tp.lookup(ARN, "us-west-2", SKU, offline=False, env={}, reader_factory=never, home=tmp_path)
    assert bare.facts is None and "(no AWS credentials in the environment)" in bare.warnings[0]


@pytest.mark.parametrize(("env", "files", "source"), [
    ({"AWS_PROFILE": "ml"}, (), "AWS_PROFILE=ml"),
    ({"AWS_WEB_IDENTITY_TOKEN_FILE": "/t", "AWS_ROLE_ARN": "arn:aws:iam::1:role/r"}, (), "AWS_WEB_IDENTITY_TOKEN_FILE"),
    ({"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials"}, (), "container credentials"),
    ({}, (".aws/config",), ".aws/config"),
    ({"AWS_ACCESS_KEY_ID": "AKID"}, (), None),  # a key without its secret is not credentials
])
def test_credentials_are_recognised_without_contacting_aws(tmp_path: Path, env, files, source):
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("[default]\n")
    found = tp.credentials_source(env, home=tmp_path)
    assert (found is None) if source is None else (found is not None and found.endswith(source))


def facts(**changes: Any) -> tp.PlanFacts:
    return tp.facts(response(**changes), SKU)


def test_a_plan_that_cannot_hold_the_stack_names_every_reason():
    plan = facts(Status="Expired", TargetResources=["training-job"], ReservedCapacitySummaries=[
        {"InstanceType": "ml.p5en.48xlarge", "TotalInstanceCount": 4, "AvailabilityZone": "us-west-2c"}])
    found = tp.problems(plan, arn=ARN, zone="us-west-2a", instance_type=SKU, nodes=1)
    assert [(p.key, p.reason) for p in found] == [
        ("k3infra:capacity.trainingPlanArn", "training plan k3-p6-b300 reserves ml.p5en.48xlarge, and the stack runs "
                                             "ml.p6-b300.48xlarge"),
        ("k3infra:zone", "training plan k3-p6-b300 reserves its instances in us-west-2c, and the HyperPod subnet is in "
                         "us-west-2a"),
        ("k3infra:capacity.trainingPlanArn", "training plan k3-p6-b300 targets training-job, not HyperPod clusters"),
        ("k3infra:capacity.trainingPlanArn", "training plan k3-p6-b300 is Expired (it ended 2025-12-08T12:00:00Z)"),
    ]
    small = tp.problems(facts(), arn=ARN, zone="us-west-2a", instance_type=SKU, nodes=2)
    assert [p.reason for p in small] == ["training plan k3-p6-b300 reserves 1 x ml.p6-b300.48xlarge, and the stack "
                                         "needs 2"]
    assert tp.problems(facts(), arn=ARN, zone="us-west-2a", instance_type=SKU, nodes=1) == []


# --- what the HyperPod stack does with the answer --------------------------------------------------------------


def answered(monkeypatch: pytest.MonkeyPatch, **changes: Any) -> None:
    monkeypatch.setattr(deployment.tp, "lookup", lambda arn, region, sku, offline: tp.PlanCheck(facts(**changes)))


def test_a_scheduled_plan_is_not_awaited_and_its_window_is_output(monkeypatch: pytest.MonkeyPatch):
    answered(monkeypatch, Status="Scheduled", StartTime=1766232000, EndTime=1766836800)  # 2025-12-20 .. 12-27
    p = planning.plan("aws-hyperpod", root=ROOT)
    # The operator's maxDeployTimeInSeconds runs from the InferenceEndpointConfig's creation: none is created
    # before the plan is active (the add-on and its roles are), and the plan says when to run `pulumi up` again.
    assert not p.recording.by_type("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig")
    assert p.recording.one("aws:eks/addon:Addon", "k3-endpoint-inference-operator")
    assert [w for w in p.warnings if w.startswith("training plan k3-p6-b300 is Scheduled")] == [
        "training plan k3-p6-b300 is Scheduled until 2025-12-20T12:00:00Z: the HyperPod cluster and the inference "
        "operator are created now and the instances start with the plan; the InferenceEndpointConfig is not, because "
        "the operator's deployment deadline (maxDeployTimeInSeconds, 3860 s) would run out before the plan starts: "
        "run `pulumi up` again once the plan is Active, which creates the endpoint and waits for it"]
    assert p.recording.outputs["endpoint"] == ""
    out = p.recording.outputs
    assert (out["capacityStartTime"], out["capacityEndTime"]) == ("2025-12-20T12:00:00Z", "2025-12-27T12:00:00Z")
    assert out["capacity"]["status"] == "Scheduled" and out["capacity"]["availabilityZones"] == ["us-west-2a"]


def test_an_active_plan_ending_within_the_margin_is_warned_about(monkeypatch: pytest.MonkeyPatch):
    answered(monkeypatch, EndTime=1764676800)  # 2025-12-02T12:00Z; the tests' plan date is 2026-12-01 -> already past
    monkeypatch.setenv("K3INFRA_PLAN_TIME", "2025-12-02T00:00:00Z")
    p = planning.plan("aws-hyperpod", root=ROOT)
    assert iec_object(p)["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == "3860"
    assert any(w.startswith("training plan k3-p6-b300 ends 2025-12-02T12:00:00Z, within capacity.endMarginHours (24 h)")
               for w in p.warnings)


def test_a_plan_in_another_zone_stops_the_stack(monkeypatch: pytest.MonkeyPatch):
    answered(monkeypatch, ReservedCapacitySummaries=[{"InstanceType": SKU, "TotalInstanceCount": 1,
                                                       "AvailabilityZone": "us-west-2b"}])
    with pytest.raises(ConfigError) as e:
        planning.plan("aws-hyperpod", root=ROOT)
    assert [p.key for p in e.value.problems] == ["k3infra:zone"]


# --- the dependencies chart is pinned to a commit --------------------------------------------------------------


def checkout(tmp_path: Path, commit: str) -> str:
    """A fake aws/sagemaker-hyperpod-cli checkout whose HEAD is a branch at ``commit`` (packed ref)."""
    root = tmp_path / "sagemaker-hyperpod-cli"
    chart = root / "helm_chart" / "HyperPodHelmChart"
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("name: hyperpod-helm-chart\nversion: 0.1.0\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "packed-refs").write_text(f"# pack-refs with: peeled\n{commit} refs/heads/main\n")
    return str(chart)


def test_a_checkout_at_another_commit_stops_the_stack(tmp_path: Path):
    chart = checkout(tmp_path, "0" * 40)
    with pytest.raises(ConfigError) as e:
        planning.plan("aws-hyperpod", (f"aws.hyperpodHelmChart={chart}",), root=ROOT)
    (problem,) = e.value.problems
    assert problem.key == "k3infra:aws.hyperpodHelmChart"
    assert problem.allowed == f"a checkout of aws/sagemaker-hyperpod-cli at {DEPENDENCIES_CHART_COMMIT}"


def test_a_checkout_at_the_pinned_commit_passes_and_a_missing_one_is_said(tmp_path: Path):
    chart = checkout(tmp_path, DEPENDENCIES_CHART_COMMIT)
    pinned = planning.plan("aws-hyperpod", (f"aws.hyperpodHelmChart={chart}",), root=ROOT)
    assert not [w for w in pinned.warnings if "dependencies chart" in w]
    missing = [w for w in plan("aws-hyperpod").warnings if "dependencies chart" in w]
    assert missing == ["the HyperPod dependencies chart sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart is not a git "
                       f"checkout here, so its commit is unchecked: `pulumi up` needs it at {DEPENDENCIES_CHART_COMMIT[:12]} "
                       "(git clone https://github.com/aws/sagemaker-hyperpod-cli && git -C sagemaker-hyperpod-cli "
                       f"checkout {DEPENDENCIES_CHART_COMMIT})"]

"""The managed platforms: HyperPod's InferenceEndpointConfig (its status as the vendored CRD defines it) read from the
EKS cluster with the read-only role's one extra rule, and PAI-EAS's DescribeService on recorded answers; without the
EAS SDK the service line says what it would read."""

import json
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from k3infra import cli
from k3infra.status import access
from k3infra.status.expected import expected
from k3infra.status.managed import eas
from k3infra.status.lines import FAILED, OK, PROGRESS, UNKNOWN
from k3infra.status.report import Snapshot, evaluate
from tests.support import plan

from .fake_api import fake_api, kubeconfig

NOW = datetime(2026, 12, 1, 1, 0, tzinfo=timezone.utc)
IEC_PATH = "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/kimi-k3/inferenceendpointconfigs/kimi-k3"


@pytest.fixture(scope="module")
def hp():
    return expected(plan("aws-hyperpod"))


def iec(state: str, available: int, **status) -> dict:
    return {"metadata": {"name": "kimi-k3", "namespace": "kimi-k3", "creationTimestamp": "2026-12-01T00:30:00Z"},
            "status": {"state": state, "deploymentStatus": {"status": {"replicas": 1, "readyReplicas": available,
                                                                       "availableReplicas": available}},
                       **status}}


def server_and_endpoint(exp, obj):
    snap = Snapshot(nodes=[], gpu_nodes=[], server_pods=[], job_pods={}, jobs={}, services={}, endpoint_config=obj)
    return [ln for ln in evaluate(exp, snap, NOW).lines if ln.section in ("server", "endpoint")]


def test_hyperpod_targets_the_endpoint_config(hp) -> None:
    assert (hp.server_kind, hp.endpoint_config, hp.load_budget_seconds) == ("InferenceEndpointConfig", IEC_PATH, 3860)
    assert hp.gpu_node_selector == {"node.kubernetes.io/instance-type": "ml.p6-b300.48xlarge"}
    assert access.role(hp)["rules"][-1] == {"apiGroups": ["inference.sagemaker.aws.amazon.com"],
                                            "resources": ["inferenceendpointconfigs"], "verbs": ["get"],
                                            "resourceNames": ["kimi-k3"]}


def test_hyperpod_phases(hp) -> None:
    server, endpoint = server_and_endpoint(hp, iec("DeploymentInProgress", 0))
    assert (server.state, server.phase, server.detail, server.phase_seconds, server.budget_seconds) == (
        PROGRESS, "DeploymentInProgress", "0 of 1 replicas available, 0 ready", 1800, 3860)
    assert (endpoint.state, endpoint.phase) == (PROGRESS, "no address yet")
    done = iec("DeploymentComplete", 1, endpoints={"sagemaker": {"state": "InService"}},
               tlsCertificate={"certificateDomainNames": ["k3-alb.us-west-2.elb.amazonaws.com"],
                               "certificateHealth": "Valid"})
    server, endpoint = server_and_endpoint(hp, done)
    assert (server.state, server.detail) == (OK, "1 of 1 replicas available, 1 ready; SageMaker endpoint InService")
    assert (endpoint.state, endpoint.detail) == (
        OK, "https://k3-alb.us-west-2.elb.amazonaws.com/v1/chat/completions (certificate Valid)")
    failed = iec("DeploymentFailed", 0, deploymentStatus={"reason": "ProgressDeadlineExceeded", "message":
                                                          "ReplicaSet has timed out progressing."})
    server, _ = server_and_endpoint(hp, failed)
    assert (server.state, server.detail) == (FAILED, "0 of 1 replicas available, 0 ready; ProgressDeadlineExceeded; "
                                             "ReplicaSet has timed out progressing.")
    assert server.look == "kubectl describe -n kimi-k3 inferenceendpointconfig/kimi-k3, and its Deployment's pods"
    # The planted mistake: Complete with no replica available (scaled to nothing) is not serving.
    server, _ = server_and_endpoint(hp, iec("DeploymentComplete", 0))
    assert server.state == PROGRESS
    assert server_and_endpoint(hp, None)[0].phase == "not created yet"


def test_hyperpod_through_the_command(monkeypatch, tmp_path) -> None:
    """--kubeconfig to a stand-in API answering the IEC: the report's server and endpoint lines are the operator's."""
    done = iec("DeploymentComplete", 1, tlsCertificate={"certificateDomainNames": ["k3.example"]})
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for var in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    p = plan("aws-hyperpod")
    monkeypatch.setattr(cli.planning, "plan", lambda *a, **k: p)
    with fake_api({"/api/v1/nodes": {"items": []}, "/api/v1/namespaces/kimi-k3/pods": {"items": []},
                   IEC_PATH: done}) as (url, seen):
        (tmp_path / "kc").write_text(json.dumps(kubeconfig(url, "t")))
        result = CliRunner().invoke(cli.app, ["status", "aws-hyperpod", "--kubeconfig", str(tmp_path / "kc"),
                                              "--format", "json"])
    doc = json.loads(result.stdout)
    assert [(ln["section"], ln["name"], ln["state"]) for ln in doc["lines"]] == [
        ("capacity", "training plan k3-p6-b300", "unknown"), ("nodes", "gpu", "progress"),
        ("nodes", "system", "progress"), ("weights", "k3-sync", "progress"),
        ("server", "InferenceEndpointConfig kimi-k3", "ok"),
        ("endpoint", "kimi-k3", "ok")]
    assert IEC_PATH in [path for path, _ in seen]
    assert result.exit_code == 3


RUNNING = {"ServiceName": "kimi_k3_alicloud_pai", "Status": "Running", "RunningInstance": 1, "TotalInstance": 1,
           "IntranetEndpoint": "http://123.vpc.ap-southeast-1.pai-eas.aliyuncs.com/api/predict/kimi_k3_alicloud_pai",
           "UpdateTime": "2026-12-01T00:10:00Z"}


def test_eas_service_states() -> None:
    server, endpoint = eas.lines(eas.Service(RUNNING), "kimi_k3_alicloud_pai", NOW, 3600)
    assert (server.state, server.phase, server.detail) == (OK, "running", "1 of 1 instances running")
    assert (endpoint.name, endpoint.state, endpoint.detail) == ("intranet", OK, RUNNING["IntranetEndpoint"] + "/v1")
    creating = RUNNING | {"Status": "Creating", "RunningInstance": 0, "PendingInstance": 1,
                          "Message": "instance is loading the model"}
    server, endpoint = eas.lines(eas.Service(creating), "kimi_k3_alicloud_pai", NOW, 3600)
    assert (server.state, server.phase, server.detail, server.phase_seconds) == (
        PROGRESS, "creating", "0 of 1 instances running, 1 pending; instance is loading the model", 3000)
    assert endpoint.state == PROGRESS
    late = eas.lines(eas.Service(creating), "kimi_k3_alicloud_pai", datetime(2026, 12, 1, 3, tzinfo=timezone.utc),
                     3600)[0]
    assert (late.state, late.phase) == (FAILED, "creating (over budget)")
    failed = eas.lines(eas.Service(RUNNING | {"Status": "Failed", "RunningInstance": 0, "Reason": "QuotaExceeded"}),
                       "kimi_k3_alicloud_pai", NOW, 3600)[0]
    assert (failed.state, failed.detail) == (FAILED, "0 of 1 instances running; QuotaExceeded")
    # The planted mistake: Running with fewer instances than asked is not serving yet.
    partial = eas.lines(eas.Service(RUNNING | {"TotalInstance": 2}), "s", NOW, 3600)[0]
    assert partial.state == PROGRESS


def test_pai_without_the_eas_sdk(monkeypatch) -> None:
    """The command on alicloud-pai with --kubeconfig given (no Pulumi CLI): the service is named from the stack,
    and the line says what it would read; the Lingjun quota has no public API."""
    p = plan("alicloud-pai")
    monkeypatch.setattr(cli.planning, "plan", lambda *a, **k: p)
    result = CliRunner().invoke(cli.app, ["status", "alicloud-pai", "--kubeconfig", "/dev/null", "--format", "json"])
    doc = json.loads(result.stdout)
    # Nothing read: not "serving" (exit 2, what could not be read); the planted mistake was exit 0 "ok: serving".
    assert (result.exit_code, doc["state"], doc["summary"].split(":")[0]) == (2, "unknown", "not readable")
    assert [(ln["section"], ln["state"], ln["phase"]) for ln in doc["lines"]] == [
        ("capacity", UNKNOWN, "not readable"), ("server", UNKNOWN, "not readable")]
    assert doc["lines"][1]["name"] == "EAS service kimi_k3_alicloud_pai"
    assert doc["lines"][1]["detail"].startswith("the EAS SDK (alibabacloud-eas20210701) is not installed: status would "
                                                "read DescribeService (eas:DescribeService)")

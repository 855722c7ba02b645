"""The in-stack verify Job's code (k3infra.observability.checklist + k3infra.verify, as the ConfigMap ships them)
against the same fake OpenAI-compatible server as ``k3infra verify``, with a fake Kubernetes API that receives
the report: one good server and several broken ones."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from k3infra.observability import checklist, verify_job
from k3infra.offline import unwrap
from tests.support import ROOT, plan

from .fake_openai import MODEL, FakeServer

TOKEN = "sa-token-for-the-test"
NAMESPACE, JOB = "kimi-k3", "k3-verify"


class FakeKubernetes:
    """The one API call the Job makes: a merge patch of its own Job's annotations."""

    def __init__(self, status: int = 200) -> None:
        self.patches: list[tuple[str, str, dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_PATCH(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.patches.append((self.path, self.headers.get("Content-Type", ""), body))
                ok = status == 200 and self.headers.get("Authorization") == f"Bearer {TOKEN}"
                self.send_response(200 if ok else status if status != 200 else 401)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def report(self) -> dict[str, Any]:
        (path, ctype, body), = self.patches
        assert path == f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{JOB}"
        assert ctype == "application/merge-patch+json"
        return json.loads(body["metadata"]["annotations"][checklist.ANNOTATION])

    def __enter__(self) -> "FakeKubernetes":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def shipped(tmp: Path) -> tuple[Path, dict[str, str]]:
    """The pod's view, built from a real plan: the ConfigMap's files at the Job's volume paths, and the Job's
    environment."""
    rec = plan("gcp-a4xmax").recording
    data = rec.one("kubernetes:core/v1:ConfigMap", "k3-verify-code").inputs["data"]
    job = rec.one("kubernetes:batch/v1:Job", "k3-verify-job").inputs
    pod = job["spec"]["template"]["spec"]
    (code_volume,) = [v for v in pod["volumes"] if v["name"] == "code"]
    root = tmp / "code"
    for item in code_volume["configMap"]["items"]:
        (root / item["path"]).parent.mkdir(parents=True, exist_ok=True)
        (root / item["path"]).write_text(data[item["key"]])
    (container,) = pod["containers"]
    env = {e["name"]: unwrap(e["value"]) for e in container["env"] if "value" in e}
    assert container["command"] == ["python3", "-m", "k3infra.observability.checklist"]
    assert env["PYTHONPATH"] == "/opt/k3infra-verify" and env["K3_JOB_NAME"] == JOB
    env["PYTHONPATH"] = str(root)
    return root, env


def job_env(tmp: Path, env: dict[str, str], srv: FakeServer, kube: FakeKubernetes, **extra: str) -> dict[str, str]:
    sa = tmp / "sa"
    sa.mkdir(exist_ok=True)
    (sa / "token").write_text(TOKEN)
    return {**env, "K3_BASE_URL": srv.url, "K3_KUBE_API": kube.url, "K3_SERVICE_ACCOUNT_DIR": str(sa),
            "K3_TERMINATION_LOG": str(tmp / "termination-log"), "K3_READY_SECONDS": "2",
            "K3_READY_POLL_SECONDS": "0.05", "K3_REQUEST_TIMEOUT": "10", "K3_LONG_CONTEXT_TOKENS": "20000", **extra}


def run_pod(tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m k3infra.observability.checklist`` from the shipped files only (the pod has no k3infra)."""
    return subprocess.run([sys.executable, "-m", "k3infra.observability.checklist"], cwd=tmp, env={
        "PATH": os.environ.get("PATH", ""), **env}, capture_output=True, text=True, timeout=120)


def test_the_configmap_ships_this_repositorys_verify_module_byte_for_byte() -> None:
    data = unwrap(plan("gcp-a4xmax").recording.one("kubernetes:core/v1:ConfigMap", "k3-verify-code").inputs["data"])
    assert data["verify.py"] == (ROOT / "k3infra" / "verify.py").read_text()
    assert data["checklist.py"] == (ROOT / "k3infra" / "observability" / "checklist.py").read_text()
    assert data["k3infra.init"] == data["observability.init"] == ""


def test_the_shipped_code_imports_nothing_else_of_k3infra(tmp_path: Path) -> None:
    root, env = shipped(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import k3infra.observability.checklist as c, k3infra.verify as v, "
                            "sys; print(c.__file__); print(v.__file__); "
                            "print(sorted(m for m in sys.modules if m.startswith('k3infra')))"],
                           cwd=tmp_path, env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root)},
                           capture_output=True, text=True, timeout=60)
    lines = probe.stdout.splitlines()
    assert probe.returncode == 0, probe.stderr
    assert lines[0].startswith(str(root)) and lines[1].startswith(str(root))
    assert lines[2] == "['k3infra', 'k3infra.observability', 'k3infra.observability.checklist', 'k3infra.verify']"


def test_a_correct_server_passes_and_the_report_lands_on_the_job(tmp_path: Path) -> None:
    root, env = shipped(tmp_path)
    with FakeServer(api_key="sk-in-cluster") as srv, FakeKubernetes() as kube:
        (tmp_path / "key").write_text("sk-in-cluster\n")
        proc = run_pod(tmp_path, job_env(tmp_path, env, srv, kube, K3_API_KEY_FILE=str(tmp_path / "key")))
        report = kube.report()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["status"] == "passed" and report["failed"] == []
    assert list(report["checks"]) == ["models", "health", "tool-calls", "reasoning", "long-context", "prefix-cache"]
    assert report["checks"]["models"]["evidence"] == "Kimi-K3 listed (max_model_len 262,144)"
    assert report["checks"]["prefix-cache"]["evidence"].startswith("vllm:prefix_cache_hits_total 0 → 19,9")
    assert report["readyAfterSeconds"] is not None and report["model"] == MODEL
    assert "sk-in-cluster" not in json.dumps(report)
    assert (tmp_path / "termination-log").read_text().splitlines()[0] == "Kimi K3 verification passed"
    # the stack output Pulumi builds from the Job it reads back
    out = verify_job.verification_output({checklist.ANNOTATION: json.dumps(report)}, f"{NAMESPACE}/{JOB}")
    assert out["status"] == "passed" and out["job"] == "kimi-k3/k3-verify"


def test_a_broken_server_fails_its_check_and_the_job_still_reports(tmp_path: Path) -> None:
    root, env = shipped(tmp_path)
    with FakeServer("tool-calls") as srv, FakeKubernetes() as kube:
        proc = run_pod(tmp_path, job_env(tmp_path, env, srv, kube))
        report = kube.report()
    assert proc.returncode == 0, proc.stderr
    assert report["status"] == "failed" and report["failed"] == ["tool-calls"]
    assert "check --enable-auto-tool-choice --tool-call-parser kimi_k3" in report["checks"]["tool-calls"]["evidence"]
    assert "FAIL tool-calls" in (tmp_path / "termination-log").read_text()


def test_a_report_that_cannot_be_published_fails_the_job(tmp_path: Path) -> None:
    root, env = shipped(tmp_path)
    with FakeServer() as srv, FakeKubernetes(status=403) as kube:
        proc = run_pod(tmp_path, job_env(tmp_path, env, srv, kube))
    assert proc.returncode == 2
    assert "cannot publish the report on Job kimi-k3/k3-verify" in proc.stdout


@pytest.mark.parametrize("fault", ["models", "reasoning", "long-context", "prefix-cache"])
def test_each_broken_server_is_reported_failed_with_its_evidence(tmp_path: Path, fault: str) -> None:
    _, env = shipped(tmp_path)
    with FakeServer(fault) as srv, FakeKubernetes() as kube:
        code = checklist.run(job_env(tmp_path, env, srv, kube), sleep=lambda _s: None, out=lambda _s: None)
        report = kube.report()
    assert code == 0
    assert report["status"] == "failed" and report["failed"] == [fault]
    out = verify_job.verification_output({checklist.ANNOTATION: json.dumps(report)}, f"{NAMESPACE}/{JOB}")
    assert out["failed"] == [fault]


def test_a_server_that_never_gets_ready_is_reported_with_every_check_not_run(tmp_path: Path) -> None:
    _, env = shipped(tmp_path)
    with FakeServer("health") as srv, FakeKubernetes() as kube:
        code = checklist.run(job_env(tmp_path, env, srv, kube, K3_READY_SECONDS="0.2"), out=lambda _s: None)
        report = kube.report()
    assert code == 0 and report["status"] == "failed" and report["readyAfterSeconds"] is None
    assert report["failed"] == ["models", "health", "tool-calls", "reasoning", "long-context", "prefix-cache"]
    assert "never answered 200" in report["checks"]["models"]["evidence"]
    assert "(last: HTTP 503)" in report["checks"]["health"]["evidence"]


def test_before_the_job_has_run_the_output_says_so() -> None:
    out = verify_job.verification_output({"pulumi.com/timeoutSeconds": "1"}, "kimi-k3/k3-verify")
    assert out["status"] == "pending" and "during `pulumi up`" in out["note"]
    assert plan("gcp-a4xmax").recording.outputs["verification"]["status"] == "pending"


def test_a_job_that_finished_without_a_report_says_where_to_read_the_result() -> None:
    """After `pulumi up` the output never stays `pending`: a completed Job with no report (kwok's pods run nothing)
    says so and points at `k3infra status`; the provider's JobStatus object and a plain mapping read alike."""
    complete = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
    assert verify_job.job_state(complete) == "complete"
    assert verify_job.job_state(type("JobStatus", (), {"conditions": [
        type("JobCondition", (), {"type": "Failed", "status": "True"})()]})()) == "failed"
    assert verify_job.job_state({"active": 1}) is None and verify_job.job_state(None) is None
    out = verify_job.verification_output({"pulumi.com/timeoutSeconds": "1"}, "kimi-k3/k3-verify", "complete")
    assert out == {"status": "no-report", "job": "kimi-k3/k3-verify", "note": (
        "Job kimi-k3/k3-verify completed without writing its report into annotation k3infra.dev/verification (on a "
        "GPU node the checklist writes it before it exits): read the result with `k3infra status <stack>` (its verify "
        "line) or `kubectl -n kimi-k3 logs job/k3-verify`")}
    assert verify_job.verification_output(None, "kimi-k3/k3-verify", "failed")["status"] == "failed"
    report = {"status": "passed", "failed": [], "checks": {}}
    assert verify_job.verification_output({checklist.ANNOTATION: json.dumps(report)}, "kimi-k3/k3-verify",
                                          "complete")["status"] == "passed"


def test_on_a_disaggregated_stack_every_request_crosses_both_roles(tmp_path: Path) -> None:
    """Issue 37: the Job talks to the decode Service (its routing sidecar) and names the prefill Service in the
    header the sidecar reads, so each checklist request is prefilled on the prefill role and decoded on the decode."""
    rec = plan("kubernetes-gb300-nvl72-pd").recording
    job = unwrap(rec.one("kubernetes:batch/v1:Job", "k3-verify-job").inputs)
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["K3_BASE_URL"], env["K3_PREFILL_HOST_PORT"]) == (
        "http://k3-decode.kimi-k3.svc.cluster.local:8000", "k3-prefill-pods.kimi-k3.svc.cluster.local:8000")
    verify = rec.one("k3infra:index:VerifyJob")
    assert {"k3-prefill-workload", "k3-decode-workload"} <= {d.split("::")[-1] for d in verify.dependencies}
    aggregated = unwrap(plan("kubernetes-gb300-nvl72").recording.one("kubernetes:batch/v1:Job", "k3-verify-job").inputs)
    assert "K3_PREFILL_HOST_PORT" not in {e["name"] for e in aggregated["spec"]["template"]["spec"]["containers"][0]["env"]}

    root, pod_env = shipped(tmp_path)
    with FakeServer() as srv, FakeKubernetes() as kube:
        proc = run_pod(tmp_path, job_env(tmp_path, pod_env, srv, kube, K3_PREFILL_HOST_PORT="k3-prefill.ns:8000"))
        report, prefillers = kube.report(), srv.state.prefillers
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["status"] == "passed"
    assert prefillers and set(prefillers) == {"k3-prefill.ns:8000"}

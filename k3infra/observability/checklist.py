"""The 002 §7 checklist inside the cluster: what the verify Job runs (``python -m k3infra.observability.checklist``).

The Job's image is the engine's own (it ships the ``openai`` client this module's ``k3infra.verify`` uses), and this
file and ``k3infra/verify.py`` arrive byte for byte through a ConfigMap: nothing is downloaded at start. Steps:

1. wait until ``GET /health`` on the internal Service answers 200 (``K3_READY_SECONDS``);
2. run every check of ``k3infra verify`` against the Service, with the API key from its Secret (a mounted file);
3. write the report (pass/fail per check, with the measured figures) as JSON into the annotation
   ``k3infra.dev/verification`` of the Job itself, through the Kubernetes API with the pod's service account (its
   Role may patch this one Job and nothing else), and a one-line summary into the termination message.

Pulumi awaits the Job; the Job object it reads back after completion carries the annotation, which becomes the
stack output ``verification``. The Job exits 0 whether the checks pass or fail (the verdict is the report); it
fails only when it cannot publish the report.

Imports only the standard library and ``k3infra.verify``: inside the pod, ``k3infra/__init__.py`` is empty.
"""

import dataclasses
import json
import os
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ..verify import CHECKS, CheckResult, Report, Settings, Verifier

ANNOTATION = "k3infra.dev/verification"
"""Annotation of the Job that carries the report."""
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TERMINATION_LOG = "/dev/termination-log"
TERMINATION_LIMIT = 4096
"""Kubernetes keeps at most 4096 bytes of a termination message."""
READY_POLL_SECONDS = 10


def settings_from_env(env: "os._Environ[str] | dict[str, str]") -> Settings:
    """The checklist's settings from the Job's environment."""
    key_file = env.get("K3_API_KEY_FILE")
    key = Path(key_file).read_text().strip() if key_file and Path(key_file).is_file() else None
    return Settings(
        base_url=env["K3_BASE_URL"],
        model=env["K3_MODEL"],
        api_key=key or None,
        long_context_tokens=int(env["K3_LONG_CONTEXT_TOKENS"]) if env.get("K3_LONG_CONTEXT_TOKENS") else None,
        timeout=float(env.get("K3_REQUEST_TIMEOUT", "300")),
        retries=int(env.get("K3_RETRIES", "1")),
        prefill_host_port=env.get("K3_PREFILL_HOST_PORT") or None,
    )


def pod_host_port(host_port: str | None,
                  resolve: Callable[[str], list[str]] | None = None) -> str | None:
    """``host:port`` with the host resolved to the first address it answers with (the prefill's headless Service:
    a ready prefill pod's IP), which the decode's routing sidecar accepts under SSRF protection, where it refuses a
    Service's name (catalog.topologies ``ROUTING_SIDECAR_SSRF_POOL_GROUP``); unchanged where it does not resolve (the
    requests then fail and say so)."""
    if not host_port:
        return host_port
    host, _, port = host_port.rpartition(":")
    lookup = resolve or (lambda h: [str(a[4][0]) for a in socket.getaddrinfo(h, None, type=socket.SOCK_STREAM)])
    try:
        addresses = lookup(host)
    except OSError:
        return host_port
    if not addresses:
        return host_port
    address = addresses[0]
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def wait_ready(s: Settings, deadline_seconds: float, sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic, poll: float = READY_POLL_SECONDS
               ) -> tuple[bool, float, str]:
    """Poll ``/health`` until it answers 200 or the deadline passes: (ready, seconds waited, last answer)."""
    start, last = clock(), "no answer yet"
    headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
    while True:
        try:
            with urllib.request.urlopen(urllib.request.Request(f"{s.root}/health", headers=headers),
                                        timeout=min(s.timeout, 30)) as r:
                if r.status == 200:
                    return True, round(clock() - start, 1), "HTTP 200"
                last = f"HTTP {r.status}"
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}"
        except (urllib.error.URLError, OSError) as e:
            last = f"cannot connect: {getattr(e, 'reason', e)}"
        if clock() - start >= deadline_seconds:
            return False, round(clock() - start, 1), last
        sleep(poll)


def report_document(report: Report, waited: float, ready: bool, finished: datetime) -> dict[str, Any]:
    """The report as the stack output shows it."""
    return {
        "status": "passed" if report.passed else "failed",
        "failed": report.failed,
        "model": report.model,
        "baseUrl": report.base_url,
        "readyAfterSeconds": waited if ready else None,
        "finishedAt": finished.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "checks": {c.name: {"passed": c.passed, "evidence": c.evidence, "seconds": c.seconds} for c in report.checks},
    }


def termination_message(doc: dict[str, Any]) -> str:
    """A short summary that fits Kubernetes' termination message."""
    lines = [f"Kimi K3 verification {doc['status']}"]
    lines += [f"{'PASS' if c['passed'] else 'FAIL'} {name}: {c['evidence']}" for name, c in doc["checks"].items()]
    return "\n".join(lines)[:TERMINATION_LIMIT]


class KubernetesApi:
    """The pieces of the Kubernetes API the Job uses, with the pod's own service account credentials."""

    def __init__(self, env: "os._Environ[str] | dict[str, str]") -> None:
        sa = Path(env.get("K3_SERVICE_ACCOUNT_DIR", SERVICE_ACCOUNT_DIR))
        self.base = env.get("K3_KUBE_API") or \
            f"https://{env['KUBERNETES_SERVICE_HOST']}:{env.get('KUBERNETES_SERVICE_PORT', '443')}"
        self.token = (sa / "token").read_text().strip()
        ca = sa / "ca.crt"
        self.context = ssl.create_default_context(cafile=str(ca)) if ca.is_file() else None

    def annotate_job(self, namespace: str, job: str, key: str, value: str) -> None:
        """Merge-patch one annotation onto a Job (RBAC: ``patch`` on that Job only)."""
        body = json.dumps({"metadata": {"annotations": {key: value}}}).encode()
        req = urllib.request.Request(f"{self.base}/apis/batch/v1/namespaces/{namespace}/jobs/{job}", data=body,
                                     method="PATCH", headers={"Authorization": f"Bearer {self.token}",
                                                              "Content-Type": "application/merge-patch+json"})
        with urllib.request.urlopen(req, timeout=30, context=self.context) as r:
            r.read()


def run(env: "os._Environ[str] | dict[str, str]", sleep: Callable[[float], None] = time.sleep,
        out: Callable[[str], None] = print) -> int:
    """The Job's whole run; returns the exit code."""
    s = settings_from_env(env)
    ready, waited, last = wait_ready(s, float(env.get("K3_READY_SECONDS", "900")), sleep,
                                     poll=float(env.get("K3_READY_POLL_SECONDS", READY_POLL_SECONDS)))
    if ready:
        report = Verifier(dataclasses.replace(s, prefill_host_port=pod_host_port(s.prefill_host_port)), sleep).run()
    else:
        report = Report(base_url=s.base_url, model=s.model, checks=[
            CheckResult(name, False, f"not run: GET {s.root}/health never answered 200 within {waited:g} s "
                                     f"(last: {last})", 0.0) for name in CHECKS])
    doc = report_document(report, waited, ready, datetime.now(timezone.utc))
    text = json.dumps(doc)
    out(text)
    summary = termination_message(doc)
    try:
        Path(env.get("K3_TERMINATION_LOG", TERMINATION_LOG)).write_text(summary)
    except OSError:
        pass
    try:
        KubernetesApi(env).annotate_job(env["K3_NAMESPACE"], env["K3_JOB_NAME"], ANNOTATION, text)
    except (urllib.error.URLError, OSError, KeyError) as e:
        out(f"cannot publish the report on Job {env.get('K3_NAMESPACE')}/{env.get('K3_JOB_NAME')}: {e}")
        return 2
    out(summary)
    return 0


if __name__ == "__main__":
    sys.exit(run(os.environ))

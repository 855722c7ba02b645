"""HyperPod: the InferenceEndpointConfig the stack creates on the EKS cluster, as the inference operator reports it.

Its status (schemas/crds/hyperpod-inferenceendpointconfigs.yaml, v1): ``state`` (DeploymentPending,
DeploymentInProgress, DeploymentComplete, DeploymentFailed, Deletion*), ``conditions``, ``deploymentStatus`` (the
operator's Deployment: ``status.replicas``, ``readyReplicas``, ``availableReplicas``, ``message``, ``reason``),
``endpoints.sagemaker.state`` (the SageMaker endpoint it registers), ``tlsCertificate.certificateDomainNames`` (the
load balancer's name, the endpoint) and ``tlsCertificate.certificateHealth``. What it does not expose: the weight
load inside a replica (the Deployment's pods are not ready until the start-up probe passes; the operator's pods
are read like any other only through its Deployment's counts) and restart counts.
"""

from datetime import datetime
from typing import Any

from ...clock import parse
from ..lines import FAILED, OK, PROGRESS, WARN, Line

COMPLETE, FAILED_STATES = "DeploymentComplete", ("DeploymentFailed", "DeletionFailed")

def _since(status: dict[str, Any], obj: dict[str, Any]) -> str | None:
    times = [c.get("lastTransitionTime") for c in status.get("conditions") or [] if c.get("lastTransitionTime")]
    return max(times) if times else (obj.get("metadata") or {}).get("creationTimestamp")


def lines(obj: dict[str, Any] | None, name: str, namespace: str, replicas: int, budget_seconds: int,
          now: datetime) -> list[Line]:
    """``server`` (the operator's state and the Deployment's replicas, against maxDeployTimeInSeconds) and
    ``endpoint`` (the load balancer's name once the certificate has it)."""
    what = f"InferenceEndpointConfig {name}"
    if obj is None:
        return [Line("server", what, PROGRESS, "not created yet", "the stack creates it once the training plan's "
                     "capacity is there and the operator runs", budget_seconds=budget_seconds)]
    st = obj.get("status") or {}
    state = str(st.get("state") or "")
    dep = st.get("deploymentStatus") or {}
    counts = dep.get("status") or {}
    ready, available = int(counts.get("readyReplicas") or 0), int(counts.get("availableReplicas") or 0)
    detail = f"{available} of {replicas} replicas available, {ready} ready"
    failing = [c for c in st.get("conditions") or [] if c.get("status") == "False" and c.get("message")]
    why = "; ".join(str(x) for x in (dep.get("reason"), dep.get("message"), *(c["message"] for c in failing)) if x)
    sagemaker = ((st.get("endpoints") or {}).get("sagemaker") or {}).get("state")
    detail += (f"; SageMaker endpoint {sagemaker}" if sagemaker else "") + (f"; {why}" if why else "")
    since = _since(st, obj)
    elapsed = max(0, int((now - parse(since)).total_seconds())) if since else None
    extra = {"hyperpod": {"state": state or None, "replicas": replicas, "readyReplicas": ready,
                          "availableReplicas": available, "sagemakerEndpoint": sagemaker,
                          "certificateHealth": (st.get("tlsCertificate") or {}).get("certificateHealth")}}
    look = f"kubectl describe -n {namespace} inferenceendpointconfig/{name}, and its Deployment's pods"
    if state in FAILED_STATES:
        server = Line("server", what, FAILED, state, detail, elapsed, budget_seconds, look, extra)
    elif state == COMPLETE and available >= replicas:
        server = Line("server", what, OK, state, detail, extra=extra)
    else:
        late = elapsed is not None and elapsed > budget_seconds
        server = Line("server", what, FAILED if late else PROGRESS, (state or "no state yet") +
                      (" (over budget)" if late else ""), detail, elapsed, budget_seconds, look if late else "",
                      extra)
    names = (st.get("tlsCertificate") or {}).get("certificateDomainNames") or []
    health = (st.get("tlsCertificate") or {}).get("certificateHealth")
    if not names:
        endpoint = Line("endpoint", name, PROGRESS, "no address yet", "the load balancer's name appears in "
                        "status.tlsCertificate once the operator has it")
    else:
        url = f"https://{names[0]}"
        state_ = OK if server.state == OK else PROGRESS
        endpoint = Line("endpoint", name, WARN if health in ("Expiring", "Expired") and state_ == OK else state_,
                        "serving" if server.state == OK else "not ready",
                        f"{url}/v1/chat/completions" + (f" (certificate {health})" if health else ""),
                        extra={"url": url})
    return [server, endpoint]

"""VerifyJob: the 002 §7 checklist run inside the cluster after the server is ready, its result a stack output.

The Job runs ``k3infra.observability.checklist`` (which runs ``k3infra.verify``) against the server's internal
Service with the API key from its Secret. Delivery, with no download at start:

- the code is a ConfigMap holding this repository's ``k3infra/verify.py`` and ``checklist.py`` byte for byte,
  mounted as a package (empty ``__init__.py`` files);
- the interpreter and the ``openai`` client come from the engine image itself (vLLM and SGLang both depend on
  ``openai``), which the GPU nodes already hold: the pod runs on the GPU pool (selector and tolerations), needs no
  GPU (``NVIDIA_VISIBLE_DEVICES=void``), and so has the engine's CPU architecture too.

How the result becomes an output: the pod writes its JSON report into the annotation ``k3infra.dev/verification`` of
its own Job (a Role lets it patch that one Job); pulumi-kubernetes awaits a Job until it completes and then returns
the live object it reads (``provider/pkg/await/await.go``, ``Creation``: "fall back to the last-seen live object"
only when that read fails), so the Job's ``metadata.annotations`` output carries the report on the first
``pulumi up`` with no second read (a ``ConfigMap.get`` would be read during preview, before the Job exists). In ``pulumi preview`` (and offline plans) the Job does not exist yet: the output says the check
runs during ``pulumi up``. A Job that finished without a report (its pod did not run the checklist, as on the local
try-out's kwok nodes, or its patch was refused) gives ``no-report`` (or ``failed``), never ``pending``, and names
where the result is read: ``k3infra status`` and the Job's log. A later ``pulumi up`` that changes nothing keeps the last report; any change to the
server (image, engine arguments, layout) or to this code changes the pod template's revision annotation, which
replaces the Job, which runs the checklist again. A failed check fails nothing: the output says ``failed`` with the
evidence, and ``pulumi up`` prints a warning.
"""

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, NotRequired, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..component_args import reject_unknown
from ..config import StackConfig
from ..serving import pods, scan
from ..serving.contract import GpuPool
from ..serving.fabric_report import job_state
from ..serving.options import child_options, parent_depends_on
from ..serving.stack import Serving, server_revision
from ..verify import long_context_tokens
from . import checklist

core = k8s.core.v1
meta = k8s.meta.v1
rbac = k8s.rbac.v1

CODE_MOUNT = "/opt/k3infra-verify"
API_KEY_MOUNT = "/var/run/k3infra/api-key"
RUN_AS = 10001
READY_SECONDS = 900
"""How long the Job waits for ``/health`` through the Service before checking (endpoints propagate after the
workload's own await)."""
REQUEST_TIMEOUT = 300
RETRIES = 1
REQUESTS = 9
"""HTTP requests of one run at most (models, health, tool call, reasoning, long context, the prefix-cache pair and
its /metrics reads)."""
REVISION_ANNOTATION = "k3infra.dev/revision"

SKIPS: Mapping[str, str] = {
    "CKV_K8S_38": "the Job patches its own report annotation through the Kubernetes API with this token; its Role "
                  "allows get/patch on that one Job only",
    "CKV_K8S_43": "the image is the engine image of k3infra:image, already on the GPU nodes; pin it by digest there",
    "CKV_K8S_15": "the engine image is already on the node the Job runs on (IfNotPresent); it is pinned in "
                  "k3infra:image, not by re-pulling",
}
"""checkov checks the verify Job does not satisfy, with the reason."""

CODE_FILES: Mapping[str, tuple[str, str]] = {
    "k3infra.init": ("k3infra/__init__.py", ""),
    "verify.py": ("k3infra/verify.py", "verify.py"),
    "observability.init": ("k3infra/observability/__init__.py", ""),
    "checklist.py": ("k3infra/observability/checklist.py", "observability/checklist.py"),
}
"""ConfigMap key to (path in the pod, source file under k3infra/; empty: an empty package marker)."""


def code() -> dict[str, str]:
    """The ConfigMap's data: this repository's verify module and checklist, byte for byte."""
    root = Path(__file__).resolve().parent.parent
    return {key: (root / src).read_text() if src else "" for key, (_, src) in CODE_FILES.items()}


def budget_seconds() -> int:
    """Worst case of one run: the readiness wait, then every request timing out on every attempt."""
    return READY_SECONDS + REQUESTS * REQUEST_TIMEOUT * (RETRIES + 1)


class VerifyJobArgs(TypedDict):
    """Arguments of VerifyJob."""

    namespace: str
    """Namespace of the server (the Job runs beside it; the server's NetworkPolicy admits the namespace)."""
    image: pulumi.Input[str]
    """The engine image (it has python and the ``openai`` client)."""
    base_url: pulumi.Input[str]
    """The internal Service, e.g. ``http://k3.kimi-k3.svc.cluster.local:8000``."""
    model: str
    """The served model name ``/v1/models`` must list."""
    pool: GpuPool
    """The GPU pool: the Job runs on its nodes (selector and tolerations), where the engine image already is."""
    revision: str
    """Identifies the server's rollout; a new value replaces the Job, which runs the checklist again."""
    api_key_secret: NotRequired[str]
    """Secret (key ``api-key``) with the API key. Default: none."""
    max_model_len: NotRequired[int]
    """The engine's max model length (``serving.engine.max_model_len``): the long-context check's prompt is sized
    below it (``k3infra.verify.long_context_tokens``). Default: the one the server lists in ``/v1/models``."""
    long_context_tokens: NotRequired[int]
    """Prompt length of the long-context check. Default: sized from ``max_model_len``."""
    prefill_host_port: NotRequired[pulumi.Input[str]]
    """A disaggregated server's prefill pods' headless Service (``host:port``, serving.server_services
    ``pods_service``), which the checklist resolves to one pod's IP: every checklist request sent to the decode
    Service names it to the routing sidecar (``k3infra.verify.PREFILLER_HEADER``), so each crosses both roles.
    Default: none (an aggregated server)."""


class VerifyJob(pulumi.ComponentResource):
    """A Job that runs the endpoint checklist against the server and reports into its own annotation."""

    job_name: pulumi.Output[str]
    """Name of the Job."""
    report: pulumi.Output[Any]
    """The stack output ``verification``: status, failed checks, and each check's evidence."""

    def __init__(self, name: str, args: VerifyJobArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:VerifyJob", name, None, opts)
        reject_unknown(args, VerifyJobArgs)
        ns = args["namespace"]
        inherited = parent_depends_on(opts)
        child = child_options(self, inherited)
        lbl = pods.labels(name, "verify")
        data = code()
        config = core.ConfigMap(f"{name}-code", metadata=meta.ObjectMetaArgs(name=f"{name}-code", namespace=ns,
                                                                             labels=lbl),
                                data=data, opts=child)
        account, role, binding = self._access(name, ns, lbl, child)
        revision = hashlib.sha256(json.dumps([args["revision"], data], sort_keys=True).encode()).hexdigest()[:16]
        timeout = budget_seconds()
        job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=meta.ObjectMetaArgs(
                name=name, namespace=ns, labels=lbl,
                annotations={"pulumi.com/timeoutSeconds": str(timeout + 600), **scan.skip_annotations(SKIPS)}),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=1,
                active_deadline_seconds=timeout,
                template=_pod_template(name, args, lbl, revision),
            ),
            opts=child_options(self, inherited, config, binding, role, account,
                               # A Job's template cannot change in place and its name is fixed: replace it by
                               # deleting first. A new revision is a new run.
                               delete_before_replace=True,
                               custom_timeouts=pulumi.CustomTimeouts(create=f"{timeout + 600}s",
                                                                     update=f"{timeout + 600}s")),
        )
        pods.deny_all_ingress(name, ns, "verify", child)  # the pod listens on nothing
        self.job = job
        self.job_name = job.metadata.apply(lambda m: m.name or name)
        where = f"{ns}/{name}"
        self.report = pulumi.Output.all(job.metadata, job.status).apply(
            lambda ms: verification_output(getattr(ms[0], "annotations", None), where, job_state(ms[1])))
        self.register_outputs({"job_name": self.job_name, "report": self.report})

    def _access(self, name: str, ns: str, lbl: dict[str, str],
                child: pulumi.ResourceOptions) -> tuple[core.ServiceAccount, rbac.Role, rbac.RoleBinding]:
        """The pod's service account, allowed to get and patch its own Job and nothing else."""
        account = core.ServiceAccount(f"{name}-account", metadata=meta.ObjectMetaArgs(name=name, namespace=ns,
                                                                                      labels=lbl),
                                      automount_service_account_token=False, opts=child)
        role = rbac.Role(f"{name}-role", metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=lbl),
                         rules=[rbac.PolicyRuleArgs(api_groups=["batch"], resources=["jobs"], verbs=["get", "patch"],
                                                    resource_names=[name])], opts=child)
        binding = rbac.RoleBinding(
            f"{name}-binding", metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=lbl),
            role_ref=rbac.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=name),
            subjects=[rbac.SubjectArgs(kind="ServiceAccount", name=name, namespace=ns)], opts=child)
        return account, role, binding


def _pod_template(name: str, args: VerifyJobArgs, lbl: dict[str, str], revision: str) -> core.PodTemplateSpecArgs:
    """The checklist's pod: the engine image on the GPU pool (no GPU), the code from the ConfigMap, the API key."""
    ns = args["namespace"]
    env: dict[str, pulumi.Input[str]] = {
        "K3_BASE_URL": args["base_url"], "K3_MODEL": args["model"], "K3_NAMESPACE": ns, "K3_JOB_NAME": name,
        "K3_READY_SECONDS": str(READY_SECONDS), "K3_REQUEST_TIMEOUT": str(REQUEST_TIMEOUT),
        "K3_RETRIES": str(RETRIES), "PYTHONPATH": CODE_MOUNT, "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp",
        # The engine images set NVIDIA_VISIBLE_DEVICES=all: without this the runtime would hand this
        # GPU-less pod every GPU of the node.
        "NVIDIA_VISIBLE_DEVICES": "void",
    }
    long_context = args.get("long_context_tokens") or (
        long_context_tokens(args.get("max_model_len")) if args.get("max_model_len") else None)
    if long_context:
        env["K3_LONG_CONTEXT_TOKENS"] = str(long_context)
    if args.get("prefill_host_port"):
        env["K3_PREFILL_HOST_PORT"] = args["prefill_host_port"]  # pyright: ignore[reportTypedDictNotRequiredAccess]
    mounts = [core.VolumeMountArgs(name="code", mount_path=CODE_MOUNT, read_only=True),
              core.VolumeMountArgs(name="tmp", mount_path="/tmp")]
    volumes = [
        core.VolumeArgs(name="code", config_map=core.ConfigMapVolumeSourceArgs(
            name=f"{name}-code", items=[core.KeyToPathArgs(key=k, path=p) for k, (p, _) in CODE_FILES.items()])),
        core.VolumeArgs(name="tmp", empty_dir=core.EmptyDirVolumeSourceArgs(size_limit="1Gi")),
    ]
    secret = args.get("api_key_secret")
    if secret:
        env["K3_API_KEY_FILE"] = f"{API_KEY_MOUNT}/api-key"
        mounts.append(core.VolumeMountArgs(name="api-key", mount_path=API_KEY_MOUNT, read_only=True))
        volumes.append(core.VolumeArgs(name="api-key", secret=core.SecretVolumeSourceArgs(secret_name=secret)))
    return core.PodTemplateSpecArgs(
        metadata=meta.ObjectMetaArgs(labels=lbl, annotations={REVISION_ANNOTATION: revision}),
        spec=core.PodSpecArgs(
            service_account_name=name,
            automount_service_account_token=True,
            enable_service_links=False,
            restart_policy="Never",
            node_selector=dict(args["pool"]["node_selector"]),
            tolerations=pods.tolerations(args["pool"]) or None,
            security_context=pods.pod_security(RUN_AS),
            containers=[core.ContainerArgs(
                name="checklist", image=args["image"], image_pull_policy="IfNotPresent",
                command=["python3", "-m", "k3infra.observability.checklist"],
                env=pods.env_list(env),
                resources=pods.small_resources("250m", "512Mi", "1", "1Gi"),
                security_context=pods.container_security(read_only_root=True),
                termination_message_policy="FallbackToLogsOnError",
                volume_mounts=mounts,
            )],
            volumes=volumes,
        ),
    )


def verification_output(annotations: Mapping[str, str] | None, job: str, state: str | None = None) -> dict[str, Any]:
    """The stack output from the Job's annotations and its state after ``pulumi up`` awaited it (or before it
    exists). Never ``pending`` once the Job has finished: a Job that completed or failed without writing its report
    (its pod did not run the checklist: the local try-out's kwok nodes; or its patch was refused) says so, and where
    the result is read instead (``k3infra status``, the Job's log)."""
    ns, name = job.split("/", 1)
    look = f"`k3infra status <stack>` (its verify line) or `kubectl -n {ns} logs job/{name}`"
    raw = (annotations or {}).get(checklist.ANNOTATION)
    if not raw and state is not None:
        return {"status": "no-report" if state == "complete" else "failed", "job": job,
                "note": f"Job {job} {'completed' if state == 'complete' else 'failed'} without writing its report into "
                        f"annotation {checklist.ANNOTATION} (on a GPU node the checklist writes it before it exits): "
                        f"read the result with {look}"}
    if not raw:
        return {"status": "pending", "job": job,
                "note": "the checklist runs in Job " + job + " once the server is ready, during `pulumi up`; "
                        f"its report (pass/fail per check with the figures) lands in this output; meanwhile {look}"}
    try:
        doc = json.loads(raw)
    except ValueError:
        return {"status": "unreadable", "job": job, "note": f"annotation {checklist.ANNOTATION} is not JSON: read "
                f"the result with {look}"}
    doc["job"] = job
    if doc.get("status") != "passed" and not pulumi.runtime.is_dry_run():
        pulumi.log.warn(f"Kimi K3 verification failed ({', '.join(doc.get('failed') or [])}): see the stack output "
                        f"`verification` or `kubectl -n {ns} logs job/{name}`")
    return doc


def with_checklist(cfg: StackConfig, serving: Serving) -> Serving:
    """``serving`` with the 002 §7 checklist Job that checks its server once ready (``k3infra:verifyAfterDeploy``,
    on by default), depending on the server, its namespace and Secrets; its report is the stack output
    ``verification``. Each cloud's deployment composes it with ``serve`` (serving never imports observability).

    Not while the GPU pool's capacity is pending (``GpuPool.capacity_pending``): the server is not awaited then, and
    a Job awaited on a pool without nodes could only fail (its deadline), and keep failing on every later ``pulumi
    up``. The output says ``deferred`` and why; the first ``pulumi up`` once the capacity is active creates the Job,
    which runs then (and a pool whose capacity ends deletes it, so the next window checks its server again)."""
    if not cfg.verify_after_deploy:
        return serving
    assert serving.pool is not None and serving.provider is not None, "serving comes from serve()"
    deferred = serving.pool.get("capacity_pending")
    if deferred:
        return dataclasses.replace(serving, verify_deferred=deferred, warnings=(
            *serving.warnings, f"the verification Job is not created while the GPU capacity is pending ({deferred}): "
            "run `pulumi up` again once it is active, which creates the Job and runs the checklist"))
    port, ns = cfg.engine.port, cfg.namespace
    args = VerifyJobArgs(
        namespace=ns, image=cfg.image, model=cfg.model.served_model_name, pool=serving.pool,
        base_url=serving.server.service_name.apply(lambda s: f"http://{s}.{ns}.svc.cluster.local:{port}"),
        revision=server_revision(cfg), max_model_len=serving.server.max_model_len)
    if serving.api_key_secret:
        args["api_key_secret"] = serving.api_key_secret
    prefill = serving.roles.get("prefill")
    if prefill is not None:  # issue 37: every request through the decode's sidecar, prefilled on the prefill role
        # The prefill's headless Service, which the checklist resolves to a ready prefill pod's IP: the decode's
        # sidecar sends prefills only to the pool's pods (SSRF protection), and SGLang's sends the decode to the
        # bootstrap server on that host, which must be the pod that prefills (connector_sglang.go bootstrap_host)
        args["prefill_host_port"] = prefill.service_name.apply(lambda s: f"{s}-pods.{ns}.svc.cluster.local:{port}")
    # After the servers' own awaits (ready), so the checklist runs against a loaded model.
    job = VerifyJob(f"{serving.name}-verify", args, opts=pulumi.ResourceOptions(
        parent=serving.parent, providers={"kubernetes": serving.provider},
        depends_on=[serving.namespace, serving.server, *(r for r in serving.roles.values() if r is not serving.server),
                    *serving.secrets]))
    return dataclasses.replace(serving, verify=job)


__all__ = ["VerifyJob", "VerifyJobArgs", "budget_seconds", "code", "job_state", "verification_output",
           "with_checklist"]

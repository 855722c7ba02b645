"""WeightSync: the one-time copy of a pinned model revision from Hugging Face into the weight bucket.

002 §2.1 and every cloud section: sync the weights to object storage once and load from there. 000 does it by
hand (``huggingface-cli download`` of the model and the DSPARK draft model, then ``gcloud storage cp``); here
a Kubernetes Job does the same on the CPU system nodes, under the bucket's writer identity (the only one
that can write), with the Hugging Face token from a Kubernetes Secret:

- init containers download each repository at its revision into a scratch volume (``snapshot_download``
  into a local directory skips the files already complete, so a retried pod resumes);
- containers upload each directory with the weight store's upload copy tool (an rsync-style copy that skips
  what the bucket already holds).

It depends only on the identities, so it runs while the GPU pool is created; the server waits for both.
"""

import math
from typing import Mapping, NotRequired, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..catalog import MODELS, EngineName
from . import pods, scan
from .options import child_options, parent_depends_on
from .contract import WeightStore
from .model_server import HF_TOKEN_SECRET_KEY, sibling, sibling_uri
from ..component_args import reject_unknown

core = k8s.core.v1
meta = k8s.meta.v1

DOWNLOADER_IMAGE = "docker.io/library/python:3.12.11-slim-bookworm"
"""Image of the download step (multi-arch; the Hugging Face client is installed at start, pinned)."""
HF_HUB_VERSION = "2.4.0"
"""huggingface_hub release the download step installs."""
SCRATCH = "/scratch"
RUN_AS = 10001
"""The Job's pods run as this non-root user and group, above the host's UID range (the scratch volume is owned
by it)."""
BACKOFF_LIMIT = 6
MIN_TIMEOUT_SECONDS = 3600
DOWNLOAD_WORKERS = 16

DOWNLOAD_SCRIPT = (
    "set -eu\n"
    f"python -m pip install --quiet --no-cache-dir --target /tmp/pip 'huggingface_hub=={HF_HUB_VERSION}'\n"
    "PYTHONPATH=/tmp/pip python -c \"import os; from huggingface_hub import snapshot_download; "
    "snapshot_download(repo_id=os.environ['REPO'], revision=os.environ['REVISION'], "
    f"local_dir=os.environ['DEST'], max_workers={DOWNLOAD_WORKERS})\"\n"
)
"""Download one repository at one revision into DEST (resumes: complete files are skipped)."""


class WeightSyncArgs(TypedDict):
    """Arguments of WeightSync."""

    namespace: str
    """Namespace of the Job (it must exist, with the writer service account in it)."""
    model: str
    """Hugging Face id of a catalog model."""
    revision: str
    """Revision of the model to copy: a commit SHA pins it (a branch or tag moves)."""
    store: WeightStore
    """The bucket: its URI is the destination, its writer the Job's identity, its upload tool the copy."""
    draft_model: NotRequired[bool]
    """Also copy the model's draft model (DSPARK) next to it: the one ``engine`` serves with. Default: false."""
    engine: NotRequired[EngineName]
    """The engine whose draft model is copied (the engines' recipes name different checkpoints). Default:
    sglang (000)."""
    draft_revision: NotRequired[str]
    """Revision of the draft model. Default: main."""
    hf_token_secret: NotRequired[str]
    """Kubernetes Secret (key ``HF_TOKEN``) holding the Hugging Face token. Default: anonymous download
    (fails for gated repositories)."""
    scratch_storage_class: NotRequired[str]
    """Storage class of the scratch volume. Default: the cluster's default class."""
    avoid_node_labels: NotRequired[Mapping[str, str]]
    """Node labels the Job must not run on (the GPU pool's selector): the copy belongs on CPU nodes.
    Default: none."""
    timeout_seconds: NotRequired[int]
    """How long ``pulumi up`` waits for the Job to finish. Default: an hour, or four times the estimate at
    10 Gbps when that is longer."""
    downloader_image: NotRequired[str]
    """Image of the download step. Default: python 3.12 slim."""


class WeightSync(pulumi.ComponentResource):
    """A Kubernetes Job that copies one pinned model revision (and its draft model) into the bucket."""

    job_name: pulumi.Output[str]
    """Name of the Job."""
    destination: pulumi.Output[str]
    """Bucket URI the model lands at."""

    def __init__(self, name: str, args: WeightSyncArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("k3infra:index:WeightSync", name, None, opts)
        reject_unknown(args, WeightSyncArgs)
        if args["model"] not in MODELS:
            raise pulumi.InputPropertyError("model", f"{args['model']!r} is not a catalog model ({', '.join(MODELS)})")
        if not args.get("revision"):
            raise pulumi.InputPropertyError("revision", "the sync copies one pinned revision; give a commit SHA")
        model = MODELS[args["model"]]
        engine = EngineName(args.get("engine") or EngineName.SGLANG)
        draft = model.draft_model_for(engine) if args.get("draft_model") else None
        if args.get("draft_model") and draft is None:
            raise pulumi.InputPropertyError("draft_model", f"{model.hf_id} has no draft model in the catalog")
        ns, store = args["namespace"], args["store"]
        inherited = parent_depends_on(opts)
        child = child_options(self, inherited)
        total = model.weight_bytes + (draft.weight_bytes if draft else 0)

        scratch = core.PersistentVolumeClaim(
            f"{name}-scratch",
            metadata=meta.ObjectMetaArgs(
                name=f"{name}-scratch", namespace=ns, labels=pods.labels(name, "weight-sync"),
                # With a WaitForFirstConsumer class the claim binds only when the Job's pod schedules: do not
                # wait for it here (the Job's own await covers the copy).
                annotations={"pulumi.com/skipAwait": "true"}),
            spec=core.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadWriteOnce"],
                storage_class_name=args.get("scratch_storage_class"),
                resources=core.VolumeResourceRequirementsArgs(requests={"storage": pods.gib(total * 1.1)}),
            ),
            opts=child,
        )

        token = args.get("hf_token_secret")
        repos: list[tuple[str, str, str, pulumi.Input[str]]] = [
            ("model", model.hf_id, args["revision"], store["uri"])]
        if draft is not None:
            repos.append(("draft", draft.hf_id, args.get("draft_revision") or "main",
                          sibling_uri(store["uri"], model.hf_id, draft.hf_id)))
        init, containers = [], []
        tmp = core.VolumeMountArgs(name="tmp", mount_path="/tmp")
        for role, repo, revision, dest in repos:
            local = f"{SCRATCH}/{repo}"
            env = [core.EnvVarArgs(name=k, value=v) for k, v in
                   (("REPO", repo), ("REVISION", revision), ("DEST", local), ("HOME", "/tmp"),
                    # the client's caches (xet chunks) on the scratch volume, not the small /tmp
                    ("HF_HOME", f"{SCRATCH}/.hf-home"))]
            if token:
                env.append(pods.secret_env("HF_TOKEN", token, HF_TOKEN_SECRET_KEY))
            init.append(core.ContainerArgs(
                name=f"download-{role}", image=args.get("downloader_image") or DOWNLOADER_IMAGE,
                image_pull_policy="Always", command=["/bin/sh", "-c", DOWNLOAD_SCRIPT], env=env,
                resources=pods.small_resources("4", "8Gi", "8", "16Gi"),
                security_context=pods.container_security(read_only_root=True),
                volume_mounts=[core.VolumeMountArgs(name="scratch", mount_path=SCRATCH), tmp],
            ))
            upload = store["upload"]
            upload_env: dict[str, pulumi.Input[str]] = {"SOURCE": local, "DEST": dest, "HOME": "/tmp"}
            upload_env.update(upload.get("env") or {})
            containers.append(core.ContainerArgs(
                name=f"upload-{role}", image=upload["image"], image_pull_policy="Always",
                command=list(upload["command"]), env=pods.env_list(upload_env),
                resources=pods.small_resources("4", "8Gi", "8", "16Gi"),
                security_context=pods.container_security(read_only_root=True),
                volume_mounts=[core.VolumeMountArgs(name="scratch", mount_path=SCRATCH, read_only=True), tmp],
            ))

        skips = dict(scan.SYNC_SKIPS)
        if token:
            skips[scan.SECRET_ENV] = scan.SECRET_ENV_REASON
        writer = store["writer"]
        pod_labels = {**pods.labels(name, "weight-sync"), **(writer.get("pod_labels") or {})}
        estimate = math.ceil(total * 8 / 10e9) * 2  # download + upload at 10 Gbps
        timeout = int(args.get("timeout_seconds") or max(MIN_TIMEOUT_SECONDS, 2 * estimate))
        job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=meta.ObjectMetaArgs(
                name=name, namespace=ns, labels=pods.labels(name, "weight-sync"),
                annotations={"pulumi.com/timeoutSeconds": str(timeout), **scan.skip_annotations(skips)}),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=BACKOFF_LIMIT,
                template=core.PodTemplateSpecArgs(
                    metadata=meta.ObjectMetaArgs(labels=pod_labels),
                    spec=core.PodSpecArgs(
                        service_account_name=writer["name"],
                        automount_service_account_token=False,
                        enable_service_links=False,
                        # In-place restarts keep the pod on its node with the scratch volume: a retry resumes.
                        restart_policy="OnFailure",
                        node_selector={"kubernetes.io/os": "linux"},
                        affinity=pods.avoid_nodes(args.get("avoid_node_labels") or {}),
                        security_context=pods.pod_security(RUN_AS),
                        init_containers=init,
                        containers=containers,
                        volumes=[
                            core.VolumeArgs(name="scratch", persistent_volume_claim=core.PersistentVolumeClaimVolumeSourceArgs(
                                claim_name=f"{name}-scratch")),
                            core.VolumeArgs(name="tmp", empty_dir=core.EmptyDirVolumeSourceArgs(size_limit="8Gi")),
                        ],
                    ),
                ),
            ),
            opts=child_options(
                self, inherited, scratch,
                # A Job's template cannot change in place, and its name is fixed: replace it by deleting first.
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create=f"{timeout}s", update=f"{timeout}s")),
        )
        # The pods listen on nothing: admit no ingress at all.
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=meta.ObjectMetaArgs(name=name, namespace=ns, labels=pods.labels(name, "weight-sync")),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=meta.LabelSelectorArgs(match_labels=pods.selector(name, "weight-sync")),
                policy_types=["Ingress"]),
            opts=child,
        )
        self.job = job
        self.job_name = job.metadata.apply(lambda m: m.name or name)
        self.destination = pulumi.Output.from_input(store["uri"])
        self.timeout_seconds = timeout
        self.register_outputs({"job_name": self.job_name, "destination": self.destination})


__all__ = ["WeightSync", "WeightSyncArgs", "sibling"]

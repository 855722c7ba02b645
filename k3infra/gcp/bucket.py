"""GcsWeightBucket: the private GCS bucket that holds the weights, readable by the server, writable by the sync Job.

Both grants go straight to Kubernetes service accounts as Workload Identity Federation principals
(no Google service account, no key):
``principal://iam.googleapis.com/projects/NUMBER/locations/global/workloadIdentityPools/POOL/subject/ns/NS/sa/KSA``.
The project number is looked up (``gcp.organizations.get_project``), never guessed, and POOL is the cluster's
own ``workloadIdentityConfig.workloadPool`` output: on a fresh project the pool exists only once the cluster
does, and a grant created before it fails with "Identity Pool does not exist"
(terraform-google-kubernetes-engine#916), so the grants wait for the cluster. The bucket has
uniform bucket-level access, public access prevention enforced, no versioning, and lives in the cluster's
region (002 §5.3). It is retained on ``pulumi destroy`` unless the stack opts out: 1.56 TB takes hours to
copy again.

It hands serving a :class:`~k3infra.serving.contract.WeightStore`: the ``gs://`` URI, the GCS FUSE CSI
mount with seed 000's options (parallel downloads, file cache, metadata prefetch, read-ahead), and
``gcloud storage rsync`` for the bucket-copy loader. The weight copier (k3infra.weightcopy) needs no settings:
gcsfs finds the pod's Workload Identity through the metadata server.
"""

from typing import Mapping, NotRequired, TypedDict

import pulumi
import pulumi_gcp as gcp

from ..catalog.assumptions import (GCS_FUSE_CACHE_FILE_FOR_RANGE_READ, GCS_FUSE_DOWNLOAD_CHUNK_MB,
                                   GCS_FUSE_MAX_PARALLEL_DOWNLOADS, GCS_FUSE_PARALLEL_DOWNLOADS_PER_FILE,
                                   GCS_FUSE_RANGE_READ_OPTION, GCS_FUSE_CACHE_SIZE_OPTION,
                                   GCS_FUSE_CACHE_SIZE_MB)
from ..catalog.transfer import GRANT_PROPAGATION
from ..catalog.types import Cloud
from ..serving.contract import SERVER_SERVICE_ACCOUNT, SYNC_SERVICE_ACCOUNT, CopyTool, CsiVolume, WeightStore
from ..component_args import reject_unknown

READER_ROLE = "roles/storage.objectViewer"
"""Read and list objects: all a read-only GCS FUSE mount needs (gcs-fuse-csi-driver issue #31)."""
WRITER_ROLE = "roles/storage.objectUser"
"""Create, overwrite and list objects, without IAM on them: what the weight copier's resumable uploads need."""

FUSE_DRIVER = "gcsfuse.csi.storage.gke.io"

FUSE_MOUNT_OPTIONS = (
    "implicit-dirs",
    "file-cache:enable-parallel-downloads:true",
    f"file-cache:parallel-downloads-per-file:{GCS_FUSE_PARALLEL_DOWNLOADS_PER_FILE}",
    f"file-cache:max-parallel-downloads:{GCS_FUSE_MAX_PARALLEL_DOWNLOADS}",
    f"file-cache:download-chunk-size-mb:{GCS_FUSE_DOWNLOAD_CHUNK_MB}",
    f"{GCS_FUSE_RANGE_READ_OPTION}:{str(GCS_FUSE_CACHE_FILE_FOR_RANGE_READ).lower()}",
    f"{GCS_FUSE_CACHE_SIZE_OPTION}:{GCS_FUSE_CACHE_SIZE_MB}",
    "read_ahead_kb=1024",
    "file-system:kernel-list-cache-ttl-secs:-1",
)
"""000's mount options for the model, without the ones for writing (the server's mount is read-only: 000 also
sets ``file-mode=777,dir-mode=777`` and ``write:enable-streaming-writes:true``), with the parallel-download settings
of gpu-recipes' A4X Max recipe (catalog.assumptions: 100 downloads of 50 MiB per file, no cap across files), from
which the FUSE load estimate follows. The file cache (``max-size-mb:-1``: all of it) lives in the sidecar's cache
volume, an emptyDir on the node's ephemeral storage, which the GPU pools put on the machine's Local SSDs
(``GkeGpuNodePool.local_ssd_count``), with no ephemeral-storage limit on the sidecar (``FUSE_POD_ANNOTATIONS``)."""

FUSE_POD_ANNOTATIONS = {
    "gke-gcsfuse/volumes": "true",
    # The sidecar streams a terabyte through its file cache: no CPU, memory or ephemeral-storage cap.
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}
"""000 (``gke-gcsfuse/volumes: "true"``) plus unlimited sidecar resources (GKE Cloud Storage FUSE guide)."""

GCLOUD_IMAGE = "gcr.io/google.com/cloudsdktool/google-cloud-cli:slim"
"""Google Cloud CLI image (the slim variant has ``gcloud storage``) that runs ``gcloud storage rsync``."""


class GcsWeightBucketArgs(TypedDict):
    """Arguments of :class:`GcsWeightBucket`."""

    bucket_name: str
    """Globally unique bucket name."""
    project: pulumi.Input[str]
    """Project that owns the bucket and the cluster's Workload Identity pool."""
    workload_pool: pulumi.Input[str]
    """The cluster's Workload Identity pool as the cluster reports it: pass ``GkeCluster.workload_pool`` (an
    output of the cluster), so the grants are created after the pool exists."""
    location: str
    """Bucket location: the cluster's region, so reads stay in-region and free of egress charges."""
    namespace: str
    """Kubernetes namespace of the server and the sync Job."""
    model_subpath: str
    """Model directory inside the bucket (PREFIX/<Hugging Face id>)."""
    reader_service_account: NotRequired[str]
    """Kubernetes service account of the server (read-only). Default: k3-server."""
    writer_service_account: NotRequired[str]
    """Kubernetes service account of the sync Job (the only writer). Default: k3-weight-sync."""
    retain_on_destroy: NotRequired[bool]
    """Keep the bucket (and the weights) when the stack is destroyed. Default: true."""
    labels: NotRequired[Mapping[str, str]]
    """Bucket labels. Default: none."""


def workload_identity_principal(project_number: str, workload_pool: str, namespace: str, service_account: str) -> str:
    """The IAM principal of a Kubernetes service account under GKE Workload Identity Federation."""
    return (f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
            f"{workload_pool}/subject/ns/{namespace}/sa/{service_account}")


class GcsWeightBucket(pulumi.ComponentResource):
    """A private, region-local GCS bucket for model weights with read-only and read-write Workload Identity grants."""

    bucket_name: pulumi.Output[str]
    """The bucket's name."""
    uri: pulumi.Output[str]
    """``gs://BUCKET/PREFIX/<Hugging Face id>``: the model directory."""
    bucket_uri: pulumi.Output[str]
    """``gs://BUCKET``."""
    reader_member: pulumi.Output[str]
    """IAM principal of the server's Kubernetes service account."""
    writer_member: pulumi.Output[str]
    """IAM principal of the sync Job's Kubernetes service account."""
    store: WeightStore
    """What serving needs to read and fill the bucket."""

    def __init__(self, name: str, args: GcsWeightBucketArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("k3infra:index:GcsWeightBucket", name, {}, opts)
        reject_unknown(args, GcsWeightBucketArgs)
        retain = args.get("retain_on_destroy", True)
        reader_sa = args.get("reader_service_account", SERVER_SERVICE_ACCOUNT)
        writer_sa = args.get("writer_service_account", SYNC_SERVICE_ACCOUNT)
        if reader_sa == writer_sa:
            raise pulumi.InputPropertyError("writer_service_account", "the writer must be another service account "
                                            "than the reader: the server only reads")
        namespace, subpath = args["namespace"], args["model_subpath"].strip("/")
        project = args["project"]

        bucket = gcp.storage.Bucket(
            f"{name}-bucket",
            gcp.storage.BucketArgs(
                name=args["bucket_name"],
                project=project,
                location=args["location"].upper(),
                storage_class="STANDARD",
                uniform_bucket_level_access=True,
                public_access_prevention="enforced",
                versioning=gcp.storage.BucketVersioningArgs(enabled=False),
                force_destroy=False,
                labels=args.get("labels"),
            ),
            pulumi.ResourceOptions(parent=self, retain_on_delete=retain))

        project_info = gcp.organizations.get_project_output(project_id=project,
                                                            opts=pulumi.InvokeOptions(parent=self))
        members = {
            role: pulumi.Output.all(project_info.number, args["workload_pool"]).apply(
                lambda a, sa=sa: workload_identity_principal(str(a[0]), str(a[1]), namespace, sa))
            for role, sa in (("reader", reader_sa), ("writer", writer_sa))
        }
        reader = gcp.storage.BucketIAMMember(
            f"{name}-reader",
            gcp.storage.BucketIAMMemberArgs(bucket=bucket.name, role=READER_ROLE, member=members["reader"]),
            pulumi.ResourceOptions(parent=self))
        writer = gcp.storage.BucketIAMMember(
            f"{name}-writer",
            gcp.storage.BucketIAMMemberArgs(bucket=bucket.name, role=WRITER_ROLE, member=members["writer"]),
            pulumi.ResourceOptions(parent=self))

        bucket_uri = pulumi.Output.concat("gs://", bucket.name)
        uri = pulumi.Output.concat(bucket_uri, "/", subpath)
        fuse: CsiVolume = {
            "driver": FUSE_DRIVER,
            "inline": True,
            "volume_attributes": {"bucketName": bucket.name, "gcsfuseMetadataPrefetchOnMount": "true"},
            "mount_options": list(FUSE_MOUNT_OPTIONS),
            "pod_annotations": dict(FUSE_POD_ANNOTATIONS),
        }
        rsync = 'gcloud storage rsync --recursive "$SOURCE" "$DEST"'
        download: CopyTool = {"image": GCLOUD_IMAGE, "command": ["/bin/sh", "-c", rsync]}
        self.store = {
            "uri": uri,
            "model_subpath": subpath,
            "reader": {"name": reader_sa},
            "writer": {"name": writer_sa},
            "fuse": fuse,
            "download": download,
            "grant_propagation_seconds": GRANT_PROPAGATION[Cloud.GCP].seconds,
        }
        self.bucket_name = bucket.name
        self.uri = uri
        self.bucket_uri = bucket_uri
        self.reader_member = members["reader"]
        self.writer_member = members["writer"]
        self._identity_resources: list[pulumi.Resource] = [reader, writer]
        self.register_outputs({"bucket_name": self.bucket_name, "uri": self.uri, "bucket_uri": self.bucket_uri,
                               "reader_member": self.reader_member, "writer_member": self.writer_member,
                               "store": self.store})

    @property
    def identity_resources(self) -> list[pulumi.Resource]:
        """The IAM grants: pods that use the bucket must start after them.

        A Python-side handle for ``serve(identity_resources=...)``; not a schema output."""
        return list(self._identity_resources)

"""S3WeightBucket: the private S3 bucket that holds the weights, and who may read or write it."""

import json
from enum import Enum
from typing import Callable, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_aws as aws

from ..catalog.capabilities import Capability
from ..catalog.eks_addons import EKS_ADDONS, MOUNTPOINT, cluster_addon, pod_identity_or_irsa
from ..catalog.eks_versions import EKS_DEFAULT_KUBERNETES
from ..catalog.loaders import MOUNTPOINT_THREADS
from ..catalog.transfer import GRANT_PROPAGATION
from ..catalog.types import Cloud
from ..catalog.tools import AWS_CLI_IMAGE, S3_SYNC_COMMAND as SYNC_COMMAND
from ..serving.contract import SERVER_SERVICE_ACCOUNT, SYNC_SERVICE_ACCOUNT, CopyTool, CsiVolume, WeightStore
from . import policies
from .iam import granted_arn
from ..component_args import reject_unknown
from ..serving.options import parent_depends_on

MOUNTPOINT_DRIVER = "s3.csi.aws.com"
MOUNTPOINT_ADDON = MOUNTPOINT
MOUNTPOINT_NAMESPACE = "kube-system"
MOUNTPOINT_SERVICE_ACCOUNT = "s3-csi-driver-sa"
"""The Mountpoint driver's service account in kube-system (EKS add-on)."""


class CsiCredentials(str, Enum):
    """Whose identity the Mountpoint mount uses."""

    POD = "pod"
    """The mounting pod's own service account (``authenticationSource: pod``): the server's read-only role.
    The driver itself holds no S3 permission."""
    DRIVER = "driver"
    """The driver's service account, with a read-only role: for mounts another controller creates
    (the HyperPod inference operator's S3 model source). The role reaches the driver the way its pinned version
    reads credentials (catalog.eks_addons.MOUNTPOINT_CAPABILITIES): an EKS Pod Identity association from v2, an IRSA
    role on v1, which reads no Pod Identity (mountpoint-s3-csi-driver v1.14.1 docs/CONFIGURATION.md)."""


def mountpoint_throughput_options(gbps: float | None) -> list[str]:
    """Mountpoint's client options for a node of ``gbps``: its throughput target (mount-s3 ``--maximum-throughput-gbps``,
    else auto-detected or 10 Gbps) and its FUSE threads (``--max-threads``, 16 by default), catalog.loaders."""
    if not gbps:
        return []
    return [f"maximum-throughput-gbps {gbps:g}", f"max-threads {MOUNTPOINT_THREADS}"]


class S3WeightBucketArgs(TypedDict):
    """Arguments of S3WeightBucket."""

    bucket_name: str
    """Name of the bucket to create (globally unique; no dots: Mountpoint and the RunAI streamer use
    virtual-hosted HTTPS)."""
    region: str
    """Region of the bucket: the cluster's, so weights never cross regions."""
    cluster_name: pulumi.Input[str]
    """EKS cluster whose service accounts get the roles (Pod Identity associations)."""
    namespace: str
    """Namespace of the server and sync service accounts."""
    model_subpath: str
    """The model directory inside the bucket: PREFIX/<Hugging Face id>."""
    retain_on_destroy: NotRequired[bool]
    """Keep the bucket, its weights and its protections on `pulumi destroy`. Default: true."""
    mount: NotRequired[bool]
    """Install the Mountpoint for Amazon S3 CSI driver add-on and describe the mount for serving.
    Default: true."""
    csi_credentials: NotRequired[CsiCredentials]
    """Whose identity the mount uses. Default: pod (the server's own read-only identity)."""
    mount_throughput_gbps: NotRequired[float]
    """Mountpoint's ``maximum-throughput-gbps``: the GPU node's front-end NIC (the sizing's
    ``LoadEstimate.mount_throughput_gbps``). Default: Mountpoint's own, auto-detected from a table of EC2 instance
    types, 10 Gbps for one it does not know."""
    mountpoint_addon_version: NotRequired[Optional[str]]
    """Version of the Mountpoint add-on, one catalog.eks_addons records (e.g. the one the HyperPod inference add-on
    is installed with). Default: the version pinned for EKS clusters of catalog.eks_versions.EKS_DEFAULT_KUBERNETES."""
    oidc_provider_arn: NotRequired[pulumi.Input[str]]
    """The cluster's IAM OIDC provider: required with driver credentials on a Mountpoint version that reads IRSA
    only (v1)."""
    oidc_issuer: NotRequired[pulumi.Input[str]]
    """The cluster's OIDC issuer URL, with ``oidc_provider_arn``."""


class S3WeightBucket(pulumi.ComponentResource):
    """The weights' bucket (002 §2.1: sync once to object storage, load from there).

    - Private: all four public-access-block switches on, object ownership enforced (no ACLs), TLS-only
      bucket policy, SSE-S3 encryption, versioning never enabled (a 1.56 TB checkpoint is re-synced from a
      pinned revision, not versioned).
    - Kept on `pulumi destroy` unless ``retain_on_destroy`` is false (its public access block, encryption
      and policy are kept with it, so a retained bucket stays private).
    - Two roles through EKS Pod Identity (trust ``pods.eks.amazonaws.com`` with ``sts:AssumeRole`` and
      ``sts:TagSession``): read-only for the server's service account, read-write (no delete) for the sync
      Job's.
    - The Mountpoint for Amazon S3 CSI driver add-on at a pinned version, where the loader mounts the bucket, with
      the identity mechanism that version reads. Give the component ``depends_on=[<a node group>]``: the add-on
      waits for it (its pods need a node).
    """

    bucket_name: pulumi.Output[str]
    """The bucket."""
    bucket_arn: pulumi.Output[str]
    """ARN of the bucket."""
    uri: pulumi.Output[str]
    """``s3://BUCKET/PREFIX/<Hugging Face id>``: what the RunAI streamer reads."""
    reader_role_arn: pulumi.Output[str]
    """Role of the server's service account (read-only), as an output that depends on its policy."""
    writer_role_arn: pulumi.Output[str]
    """Role of the sync Job's service account (read-write), as an output that depends on its policy."""

    def __init__(self, name: str, args: S3WeightBucketArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:S3WeightBucket", name, None, opts)
        reject_unknown(args, S3WeightBucketArgs)
        bucket_name, region, namespace = args["bucket_name"], args["region"], args["namespace"]
        subpath = args["model_subpath"].strip("/")
        if "." in bucket_name:
            raise pulumi.InputPropertyError("bucket_name", "bucket names with dots break virtual-hosted HTTPS "
                                            "(Mountpoint, the RunAI streamer)")
        retain = args.get("retain_on_destroy", True)
        credentials = CsiCredentials(args.get("csi_credentials", CsiCredentials.POD))
        child = pulumi.ResourceOptions(parent=self)
        bucket = self._bucket(name, bucket_name, region, retain)

        reader, reader_policy = _role(f"{name}-reader", json.dumps(policies.pod_identity_trust()), bucket.arn,
                                      policies.s3_read_only, child)
        writer, writer_policy = _role(f"{name}-writer", json.dumps(policies.pod_identity_trust()), bucket.arn,
                                      policies.s3_read_write, child)
        associations = [
            aws.eks.PodIdentityAssociation(f"{name}-{role}-identity", cluster_name=args["cluster_name"],
                                           namespace=namespace, service_account=account, role_arn=r.arn,
                                           opts=pulumi.ResourceOptions(parent=self, depends_on=[p]))
            for role, account, r, p in (("reader", SERVER_SERVICE_ACCOUNT, reader, reader_policy),
                                        ("writer", SYNC_SERVICE_ACCOUNT, writer, writer_policy))
        ]
        self.identity_resources: Sequence[pulumi.Resource] = associations
        """The Pod Identity associations (they depend on the role policies): pods using the two service
        accounts depend on them."""

        self.mount_resources: Sequence[pulumi.Resource] = []
        """The Mountpoint add-on (and its driver role with driver credentials)."""
        fuse: Optional[CsiVolume] = None
        if args.get("mount", True):
            # The add-on's controller pods need nodes: wait for what the component was told to wait for.
            self.mount_resources = [_mountpoint_addon(name, args, credentials, bucket.arn, parent_depends_on(opts),
                                                      pulumi.ResourceOptions(parent=self))]
            attributes: dict[str, pulumi.Input[str]] = {"bucketName": bucket.bucket}
            if credentials == CsiCredentials.POD:
                attributes.update(authenticationSource="pod", stsRegion=region)
            fuse = {
                "driver": MOUNTPOINT_DRIVER,
                "volume_attributes": attributes,
                "mount_options": [f"region {region}", "read-only", "allow-other",
                                  *mountpoint_throughput_options(args.get("mount_throughput_gbps"))],
                "inline": False,
                "volume_handle": f"{bucket_name}-weights",
                "capacity": "2Ti",
            }

        self.bucket_name = bucket.bucket
        self.bucket_arn = bucket.arn
        self.uri = bucket.bucket.apply(lambda b: f"s3://{b}/{subpath}")
        self.reader_role_arn = granted_arn(reader, [reader_policy])
        self.writer_role_arn = granted_arn(writer, [writer_policy])
        copy_env: dict[str, pulumi.Input[str]] = {"AWS_REGION": region, "AWS_DEFAULT_REGION": region}
        download: CopyTool = {"image": AWS_CLI_IMAGE, "command": ["/bin/sh", "-c", SYNC_COMMAND], "env": dict(copy_env)}
        store: WeightStore = {
            "uri": self.uri,
            "model_subpath": subpath,
            # Pod Identity binds roles through associations: the service accounts need no annotation.
            "reader": {"name": SERVER_SERVICE_ACCOUNT},
            "writer": {"name": SYNC_SERVICE_ACCOUNT},
            "streamer_env": {"AWS_REGION": region, "AWS_DEFAULT_REGION": region},
            # s3fs (botocore) finds the Pod Identity credentials itself; it needs the region.
            "copy_env": dict(copy_env),
            "download": download,
            "grant_propagation_seconds": GRANT_PROPAGATION[Cloud.AWS].seconds,
        }
        if fuse is not None:
            store["fuse"] = fuse
        self.store = store
        """What serving needs to read and fill the bucket."""
        self.register_outputs({
            "bucket_name": self.bucket_name,
            "bucket_arn": self.bucket_arn,
            "uri": self.uri,
            "reader_role_arn": self.reader_role_arn,
            "writer_role_arn": self.writer_role_arn,
        })

    def _bucket(self, name: str, bucket_name: str, region: str, retain: bool) -> aws.s3.Bucket:
        """The bucket, private, owner-enforced, encrypted and reachable over TLS only; kept on destroy with
        ``retain``."""
        kept = pulumi.ResourceOptions(parent=self, retain_on_delete=retain)

        bucket = aws.s3.Bucket(f"{name}-bucket", bucket=bucket_name, force_destroy=False, region=region, opts=kept)
        public_block = aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access-block", bucket=bucket.id, block_public_acls=True, block_public_policy=True,
            ignore_public_acls=True, restrict_public_buckets=True, opts=kept)
        aws.s3.BucketOwnershipControls(
            f"{name}-ownership", bucket=bucket.id,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"), opts=kept)
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption", bucket=bucket.id,
            rules=[aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                    sse_algorithm="AES256"))],
            opts=kept)
        aws.s3.BucketPolicy(
            f"{name}-tls-only", bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(policies.deny_insecure_transport(arn))),
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=retain, depends_on=[public_block]))
        return bucket


def _role(name: str, trust: pulumi.Input[str], bucket_arn: pulumi.Output[str],
          document: Callable[[str], policies.Document],
          opts: pulumi.ResourceOptions) -> tuple[aws.iam.Role, aws.iam.RolePolicy]:
    """A role with ``trust`` and an inline policy ``document`` on the bucket (``<name>-weights``)."""
    role = aws.iam.Role(name, assume_role_policy=trust, opts=opts)
    policy = aws.iam.RolePolicy(f"{name}-weights", role=role.id,
                                policy=bucket_arn.apply(lambda arn: json.dumps(document(arn))), opts=opts)
    return role, policy


def _mountpoint_addon(name: str, args: S3WeightBucketArgs, credentials: CsiCredentials,
                      bucket_arn: pulumi.Output[str], after: Sequence[pulumi.Resource],
                      child: pulumi.ResourceOptions) -> aws.eks.Addon:
    """The Mountpoint add-on at its pinned version. Pod credentials need a version that mounts with the pod's
    EKS Pod Identity; driver credentials get a read-only role the way the version reads it (Pod Identity or IRSA)."""
    version = args.get("mountpoint_addon_version") or cluster_addon(MOUNTPOINT_ADDON, EKS_DEFAULT_KUBERNETES)
    known = EKS_ADDONS.get((MOUNTPOINT_ADDON, version))
    if known is None:
        raise pulumi.InputPropertyError("mountpoint_addon_version", f"{version} is not in catalog.eks_addons: its "
                                        "credential mechanisms are unknown")
    def addon(depends_on: Sequence[pulumi.Resource],
              pod_identity: Optional[Sequence[aws.eks.AddonPodIdentityAssociationArgs]] = None,
              irsa_role: Optional[pulumi.Input[str]] = None) -> aws.eks.Addon:
        return aws.eks.Addon(f"{name}-mountpoint", cluster_name=args["cluster_name"], addon_name=MOUNTPOINT_ADDON,
                             addon_version=version, pod_identity_associations=pod_identity,
                             service_account_role_arn=irsa_role, resolve_conflicts_on_create="OVERWRITE",
                             opts=pulumi.ResourceOptions.merge(
                                 child, pulumi.ResourceOptions(depends_on=list(depends_on))))

    if credentials == CsiCredentials.POD:
        if Capability.POD_LEVEL_POD_IDENTITY not in known.facts.capabilities:
            raise pulumi.InputPropertyError("csi_credentials", f"Mountpoint {version} mounts with a pod's IRSA role "
                                            "only, and the bucket's readers use EKS Pod Identity: use driver "
                                            "credentials or a v2 driver")
        return addon(after)
    if pod_identity_or_irsa(MOUNTPOINT_ADDON, version) == Capability.EKS_POD_IDENTITY:
        role, policy = _role(f"{name}-mountpoint", json.dumps(policies.pod_identity_trust()), bucket_arn,
                             policies.s3_read_only, child)
        return addon([policy, *after], pod_identity=[aws.eks.AddonPodIdentityAssociationArgs(
            role_arn=role.arn, service_account=MOUNTPOINT_SERVICE_ACCOUNT)])
    oidc_arn, issuer = args.get("oidc_provider_arn"), args.get("oidc_issuer")
    if oidc_arn is None or issuer is None:
        raise pulumi.InputPropertyError("oidc_provider_arn", f"Mountpoint {version} reads driver credentials from IRSA "
                                        "only (not EKS Pod Identity): give the cluster's OIDC provider")
    trust = pulumi.Output.all(oidc_arn, issuer).apply(lambda v: json.dumps(policies.irsa_trust(
        v[0], v[1], MOUNTPOINT_NAMESPACE, MOUNTPOINT_SERVICE_ACCOUNT)))
    role, policy = _role(f"{name}-mountpoint", trust, bucket_arn, policies.s3_read_only, child)
    return addon([policy, *after], irsa_role=role.arn)

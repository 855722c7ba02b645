"""OssWeightBucket: the private, encrypted OSS bucket that holds the weights, and its RRSA identities."""

import hashlib
import json
from typing import Any, Mapping, NotRequired, Optional, Sequence, TypedDict

import pulumi
import pulumi_alicloud as alicloud

from ..catalog.transfer import GRANT_PROPAGATION
from ..catalog.types import Cloud
from ..serving.contract import (
    SERVER_SERVICE_ACCOUNT,
    SYNC_SERVICE_ACCOUNT,
    CopyTool,
    CsiVolume,
    ServiceAccountSpec,
    WeightStore,
)
from ..component_args import reject_unknown
from ..weightcopy.copier.marker import MARKER_PREFIX

OSS_CSI_DRIVER = "ossplugin.csi.alibabacloud.com"
"""ACK's OSS CSI driver (csi-plugin)."""

OSS_FUSE_TYPE = "ossfs2"
"""ossfs 2.0: built for sequential reads of large files (model loading); read-only use avoids its weak spot,
concurrent writes. Needs csi-plugin >= 1.33.1 (ACK doc "Mount a dynamic OSS volume using ossfs 2.0")."""

CSI_FUSE_SERVICE_ACCOUNT = "system:serviceaccount:ack-csi-fuse:csi-fuse-ossfs"
"""Who assumes the role of an RRSA-authenticated OSS volume: the ossfs pod the CSI driver starts in namespace
``ack-csi-fuse`` (kubernetes-sigs/alibaba-cloud-csi-driver pkg/mounter/fuse_pod_manager: FuseServiceAccountName;
ACK CSI 1.30.4 release note), not the pod that mounts the volume."""

RRSA_AUDIENCE = "sts.aliyuncs.com"
"""``oidc:aud`` of RRSA tokens (ACK RRSA docs)."""

ROLE_NAME_ANNOTATION = "pod-identity.alibabacloud.com/role-name"
"""Service account annotation naming the RAM role the ack-pod-identity-webhook injects (docs/catalog-research.md §3.5)."""

INJECTION_LABEL = "pod-identity.alibabacloud.com/injection"
"""Namespace (and pod) label that turns the webhook's injection on (ACK doc "ack-pod-identity-webhook": component,
namespace, service account and pod levels; the lowest level wins)."""

OSSUTIL_VERSION = "2.2.0"
OSSUTIL_URL = f"https://gosspublic.alicdn.com/ossutil/v2/{OSSUTIL_VERSION}/ossutil-{OSSUTIL_VERSION}-linux-amd64.zip"
OSSUTIL_SHA256 = "9e02837d806cfe976ae6c1fc22557d8e0a394ca6d298b45fb9f48a360d3a67f4"
"""SHA-256 the ossutil 2.0 overview page lists for linux-amd64 2.2.0 (alibabacloud.com/help/en/oss/developer-reference/
ossutil-overview). UNCONFIRMED that it is the zip's rather than the binary's: a mismatch stops the copy."""

COPY_IMAGE = "alpine:3.20"
"""Small image with wget, unzip and sha256sum (busybox) to fetch ossutil; ossutil has no official image."""

READ_ACTIONS = ("oss:GetObject",)
LIST_ACTIONS = ("oss:ListObjects", "oss:GetBucketInfo")
WRITE_ACTIONS = ("oss:PutObject", "oss:AbortMultipartUpload", "oss:ListParts")
"""PutObject also covers multipart initiate/upload/complete; no delete: the sync only adds objects."""
WRITE_LIST_ACTIONS = ("oss:ListMultipartUploads",)


class OssWeightBucketArgs(TypedDict):
    """Inputs of an OssWeightBucket."""

    bucket_name: str
    """OSS bucket name (globally unique), created in the stack's region."""
    region: str
    """Region of the bucket: the provider's region (alicloud:region). The CSI mount and the copy tools read it
    through ``oss-REGION-internal.aliyuncs.com``."""
    model_subpath: str
    """The model directory inside the bucket: PREFIX/<Hugging Face id>."""
    retain_on_destroy: NotRequired[bool]
    """Keep the bucket (and the 1.56 TB in it) on `pulumi destroy`. Default: true."""
    namespace: NotRequired[Optional[str]]
    """Kubernetes namespace of the server and sync service accounts. With the two OIDC inputs, the reader and
    writer RAM roles are created for RRSA (ACK); without them none are (PAI-EAS reads OSS with its own role)."""
    oidc_provider_arn: NotRequired[Optional[pulumi.Input[str]]]
    """The cluster's RAM OIDC provider (AckCluster.oidc_provider_arn). Default: no RRSA roles."""
    oidc_issuer_url: NotRequired[Optional[pulumi.Input[str]]]
    """The cluster's OIDC issuer (AckCluster.oidc_issuer_url). Default: no RRSA roles."""
    tags: NotRequired[Optional[Mapping[str, str]]]
    """Tags on the bucket and roles. Default: none."""


def role_name(bucket: str, role: str) -> str:
    """A RAM role name for ``bucket`` and ``role`` (reader, writer): at most 64 characters, unique per bucket."""
    name = f"{bucket}-{role}"
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(bucket.encode()).hexdigest()[:8]
    return f"{bucket[:64 - len(role) - 10]}-{digest}-{role}"


def trust_policy(provider_arn: str, issuer_url: str, subjects: Sequence[str]) -> str:
    """RRSA trust policy: tokens of ``subjects`` (system:serviceaccount:NS:NAME) from this cluster's issuer may
    assume the role (ACK doc "Use RRSA to authorize pods"; ack-ram-tool associate-role output)."""
    return json.dumps({
        "Version": "1",
        "Statement": [{
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Federated": [provider_arn]},
            "Condition": {"StringEquals": {
                "oidc:aud": RRSA_AUDIENCE,
                "oidc:iss": issuer_url,
                "oidc:sub": list(subjects) if len(subjects) > 1 else subjects[0],
            }},
        }],
    }, sort_keys=True)


def access_policy(bucket: str, write: bool) -> str:
    """Least-privilege OSS policy on one bucket: read (get, list) or read-write (plus put, multipart and deleting
    the completion markers)."""
    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Action": list(LIST_ACTIONS + (WRITE_LIST_ACTIONS if write else ())),
         "Resource": [f"acs:oss:*:*:{bucket}"]},
        {"Effect": "Allow", "Action": list(READ_ACTIONS + (WRITE_ACTIONS if write else ())),
         "Resource": [f"acs:oss:*:*:{bucket}/*"]},
    ]
    if write:  # delete nothing but the completion markers the sync retires (weightcopy.copier.marker)
        statements.append({"Effect": "Allow", "Action": ["oss:DeleteObject"],
                           "Resource": [f"acs:oss:*:*:{bucket}/*/{MARKER_PREFIX}*"]})
    return json.dumps({"Version": "1", "Statement": statements}, sort_keys=True)


def internal_endpoint(region: str) -> str:
    """OSS endpoint inside the region's VPCs (no internet traffic, no egress charge)."""
    return f"oss-{region}-internal.aliyuncs.com"


def copy_script(region: str, session: str) -> str:
    """Shell that fetches ossutil 2 (checksum verified), configures it from the RRSA variables the webhook
    injects (mode oidcRoleArn) and copies ``$SOURCE`` to ``$DEST`` recursively, skipping what is already there
    (a rerun resumes)."""
    endpoint = internal_endpoint(region)
    return "\n".join([
        "set -eu",
        "cd /tmp",
        f"wget -q -O ossutil.zip {OSSUTIL_URL}",
        f'echo "{OSSUTIL_SHA256}  ossutil.zip" | sha256sum -c -',
        "unzip -q -o ossutil.zip",
        "cat > /tmp/ossutilconfig <<EOF",
        "[default]",
        "mode = oidcRoleArn",
        "OIDCProviderArn = ${ALIBABA_CLOUD_OIDC_PROVIDER_ARN}",
        "OIDCTokenFilePath = ${ALIBABA_CLOUD_OIDC_TOKEN_FILE}",
        "roleArn = ${ALIBABA_CLOUD_ROLE_ARN}",
        f"roleSessionName = {session}",
        f"region = {region}",
        f"endpoint = {endpoint}",
        "EOF",
        f'exec /tmp/ossutil-{OSSUTIL_VERSION}-linux-amd64/ossutil --config-file /tmp/ossutilconfig '
        'cp --recursive --update "$SOURCE" "$DEST"',
    ]) + "\n"


def copy_tool(region: str, session: str) -> CopyTool:
    """An ossutil copy container: SOURCE and DEST come from the caller's environment (contract.CopyTool)."""
    return {"image": COPY_IMAGE, "command": ["/bin/sh", "-c", copy_script(region, session)]}


def _checked(args: OssWeightBucketArgs) -> bool:
    """Whether the bucket's identities are RRSA roles (ACK), once the arguments they need are checked."""
    bucket_name, region = args["bucket_name"], args["region"]
    if not bucket_name:
        raise pulumi.InputPropertyError("bucket_name", "an OSS bucket needs a name")
    if not region:
        raise pulumi.InputPropertyError("region", "the bucket's region decides its endpoints")
    namespace = args.get("namespace")
    provider_arn, issuer = args.get("oidc_provider_arn"), args.get("oidc_issuer_url")
    if (provider_arn is None) != (issuer is None):
        raise pulumi.InputPropertyError("oidc_issuer_url", "RRSA roles need both the OIDC provider ARN and the issuer URL")
    rrsa = provider_arn is not None and issuer is not None
    if rrsa and not namespace:
        raise pulumi.InputPropertyError("namespace", "RRSA roles trust service accounts of one namespace")
    return rrsa


def _weight_store(args: OssWeightBucketArgs, bucket_name_output: pulumi.Input[str], uri: pulumi.Input[str],
                  reader_sa: ServiceAccountSpec, writer_sa: ServiceAccountSpec,
                  reader_role_name: Optional[pulumi.Input[str]]) -> WeightStore:
    """What serving needs: the URI, the service accounts, the ossfs CSI mount (as the reader's role under RRSA), the
    copier's endpoint and tool."""
    bucket_name, region, subpath = args["bucket_name"], args["region"], args["model_subpath"].strip("/")
    fuse_attributes: dict[str, pulumi.Input[str]] = {
        "bucket": bucket_name_output,
        "url": internal_endpoint(region),
        "path": "/",
        "fuseType": OSS_FUSE_TYPE,
    }
    if reader_role_name is not None:
        fuse_attributes.update(authType="rrsa", roleName=reader_role_name)
    fuse: CsiVolume = {
        "driver": OSS_CSI_DRIVER,
        "volume_attributes": fuse_attributes,
        "inline": False,
        "volume_handle": f"{bucket_name}-weights",
        "capacity": "2Ti",
    }
    store: WeightStore = {
        "uri": uri,
        "model_subpath": subpath,
        "reader": reader_sa,
        "writer": writer_sa,
        "fuse": fuse,
        # The copier writes through the OSS SDK at the in-region endpoint, as the RRSA role of its pod.
        "copy_env": {"K3_COPY_STORAGE_OPTIONS": json.dumps(
            {"region": region, "endpoint": internal_endpoint(region)}, sort_keys=True)},
        "download": copy_tool(region, "k3infra-weight-copy"),
        "grant_propagation_seconds": GRANT_PROPAGATION[Cloud.ALICLOUD].seconds,
    }
    return store


class OssWeightBucket(pulumi.ComponentResource):
    """The weight bucket of 002 §6: private (oss.BucketAcl), public access blocked
    (oss.BucketPublicAccessBlock), encrypted at rest (AES256), versioning off, kept on `pulumi destroy` unless
    opted out; on ACK, two RAM roles through RRSA: read-only for the server (and the ossfs pod that mounts the
    bucket for it) and read-write for the sync Job, each trusting only its service account.

    ``weight_store`` is what serving needs (contract.WeightStore): the ``oss://`` URI, the service accounts, the
    OSS CSI mount as a static PersistentVolume, the copier's settings, and an ossutil copy tool (the bucket-copy
    loader)."""

    bucket_name: pulumi.Output[str]
    """The bucket."""
    uri: pulumi.Output[str]
    """``oss://BUCKET/PREFIX/<Hugging Face id>``."""
    reader_role_name: Optional[pulumi.Output[str]]
    """RAM role of the server (RRSA; ACK only)."""
    writer_role_name: Optional[pulumi.Output[str]]
    """RAM role of the sync Job (RRSA; ACK only)."""
    reader_role_arn: Optional[pulumi.Output[str]]
    """ARN of the server's role (ACK only)."""
    writer_role_arn: Optional[pulumi.Output[str]]
    """ARN of the sync Job's role (ACK only)."""

    def __init__(self, name: str, args: OssWeightBucketArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("k3infra:index:OssWeightBucket", name, None, opts)
        reject_unknown(args, OssWeightBucketArgs)
        rrsa = _checked(args)
        bucket = self._bucket(name, args)
        subpath = args["model_subpath"].strip("/")
        self.bucket = bucket
        self.bucket_name = bucket.bucket
        self.uri = bucket.bucket.apply(lambda b: f"oss://{b}/{subpath}")
        self.identity_resources: list[pulumi.Resource] = []
        self.reader_role_name = self.writer_role_name = self.reader_role_arn = self.writer_role_arn = None
        reader_sa: ServiceAccountSpec = {"name": SERVER_SERVICE_ACCOUNT}
        writer_sa: ServiceAccountSpec = {"name": SYNC_SERVICE_ACCOUNT}
        outputs: dict[str, Any] = {"bucket_name": self.bucket_name, "uri": self.uri}
        if rrsa:
            reader_sa, writer_sa = self._rrsa_roles(name, args, bucket, outputs)
        self.weight_store: WeightStore = _weight_store(args, bucket.bucket, self.uri, reader_sa, writer_sa,
                                                       self.reader_role_name)
        if rrsa:
            self.weight_store["namespace_labels"] = {INJECTION_LABEL: "on"}
        self.register_outputs(outputs)

    def _bucket(self, name: str, args: OssWeightBucketArgs) -> alicloud.oss.Bucket:
        """The bucket (server-side encrypted), private, its public access blocked; kept on ``pulumi destroy`` unless
        ``retain_on_destroy`` is false."""
        bucket_name = args["bucket_name"]
        tags = dict(args.get("tags") or {})
        keep = pulumi.ResourceOptions(parent=self, retain_on_delete=bool(args.get("retain_on_destroy", True)))
        bucket = alicloud.oss.Bucket(f"{name}-bucket", alicloud.oss.BucketArgs(
            bucket=bucket_name,
            storage_class="Standard",
            redundancy_type="LRS",
            server_side_encryption_rule=alicloud.oss.BucketServerSideEncryptionRuleArgs(sse_algorithm="AES256"),
            force_destroy=False,
            tags=tags,
        ), opts=keep)
        # Retained with the bucket: deleting these resources would lift the protection of a bucket left behind.
        self.acl = alicloud.oss.BucketAcl(f"{name}-acl", alicloud.oss.BucketAclArgs(bucket=bucket.bucket, acl="private"),
                                          opts=keep)
        self.public_access_block = alicloud.oss.BucketPublicAccessBlock(
            f"{name}-public-access-block",
            alicloud.oss.BucketPublicAccessBlockArgs(bucket=bucket.bucket, block_public_access=True), opts=keep)
        return bucket

    def _rrsa_roles(self, name: str, args: OssWeightBucketArgs, bucket: alicloud.oss.Bucket,
                    outputs: dict[str, Any]) -> tuple[ServiceAccountSpec, ServiceAccountSpec]:
        """The reader's and the writer's RAM roles, trusting the cluster's OIDC provider for one service account
        each (the CSI driver's too for the reader); the service accounts that assume them."""
        bucket_name, namespace = args["bucket_name"], args.get("namespace")
        provider_arn, issuer = args.get("oidc_provider_arn"), args.get("oidc_issuer_url")
        tags = dict(args.get("tags") or {})
        assert provider_arn is not None and issuer is not None and namespace
        reader = self._role(name, "reader", bucket_name, write=False, provider_arn=provider_arn, issuer=issuer,
                            subjects=[f"system:serviceaccount:{namespace}:{SERVER_SERVICE_ACCOUNT}",
                                      CSI_FUSE_SERVICE_ACCOUNT], tags=tags, depends_on=[bucket])
        writer = self._role(name, "writer", bucket_name, write=True, provider_arn=provider_arn, issuer=issuer,
                            subjects=[f"system:serviceaccount:{namespace}:{SYNC_SERVICE_ACCOUNT}"], tags=tags,
                            depends_on=[bucket])
        self.reader_role_name, self.reader_role_arn = reader.role_name, reader.arn
        self.writer_role_name, self.writer_role_arn = writer.role_name, writer.arn
        reader_sa: ServiceAccountSpec = {"name": SERVER_SERVICE_ACCOUNT,
                                         "annotations": {ROLE_NAME_ANNOTATION: reader.role_name},
                                         "pod_labels": {INJECTION_LABEL: "on"}}
        writer_sa: ServiceAccountSpec = {"name": SYNC_SERVICE_ACCOUNT,
                                         "annotations": {ROLE_NAME_ANNOTATION: writer.role_name},
                                         "pod_labels": {INJECTION_LABEL: "on"}}
        outputs.update(reader_role_name=reader.role_name, writer_role_name=writer.role_name,
                       reader_role_arn=reader.arn, writer_role_arn=writer.arn)
        return reader_sa, writer_sa

    def _role(self, name: str, role: str, bucket_name: str, *, write: bool, provider_arn: pulumi.Input[str],
              issuer: pulumi.Input[str], subjects: list[str], tags: dict[str, str],
              depends_on: list[pulumi.Resource]) -> alicloud.ram.Role:
        rname = role_name(bucket_name, role)
        document = pulumi.Output.all(provider_arn, issuer).apply(
            lambda v: trust_policy(str(v[0]), str(v[1]), subjects))
        ram_role = alicloud.ram.Role(f"{name}-{role}", alicloud.ram.RoleArgs(
            role_name=rname,
            assume_role_policy_document=document,
            description=f"k3infra: {'read-write' if write else 'read-only'} access to oss://{bucket_name} through RRSA",
            max_session_duration=3600,
            tags=tags,
        ), opts=pulumi.ResourceOptions(parent=self))
        policy = alicloud.ram.Policy(f"{name}-{role}-policy", alicloud.ram.PolicyArgs(
            policy_name=f"{rname}-oss",
            policy_document=access_policy(bucket_name, write),
            description=f"k3infra: {'read-write' if write else 'read-only'} on oss://{bucket_name}",
            tags=tags,
        ), opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on))
        attachment = alicloud.ram.RolePolicyAttachment(f"{name}-{role}-attachment", alicloud.ram.RolePolicyAttachmentArgs(
            role_name=ram_role.role_name, policy_name=policy.policy_name, policy_type="Custom",
        ), opts=pulumi.ResourceOptions(parent=self))
        self.identity_resources += [ram_role, policy, attachment]
        return ram_role

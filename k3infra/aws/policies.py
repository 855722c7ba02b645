"""IAM policy documents as plain data: trust policies and the least-privilege S3 policies.

Pure functions (no Pulumi) so that tests can read every action a role gets. Documents are dicts; callers
``json.dumps`` them (inside an ``apply`` when an ARN is an Output).
"""

import json
from pathlib import Path
from typing import Any

from ..weightcopy.copier.marker import MARKER_PREFIX

Document = dict[str, Any]

VERSION = "2012-10-17"

#: What the model server may do with the weight bucket: list it and read objects. Nothing else.
S3_READ_BUCKET_ACTIONS = ("s3:ListBucket",)
S3_READ_OBJECT_ACTIONS = ("s3:GetObject",)

#: What the sync Job may do: list, read (to compare), write and clean up its own multipart uploads; delete only
#: the completion markers (``S3_WRITER_DELETES``). No bucket configuration.
S3_WRITE_BUCKET_ACTIONS = ("s3:ListBucket", "s3:ListBucketMultipartUploads")
S3_WRITE_OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")

S3_WRITER_DELETES = f"*/{MARKER_PREFIX}*"
"""The only objects the sync Job may delete, relative to the bucket: the completion markers it retires before it
changes a model directory (k3infra.weightcopy.copier.marker.retire_markers). S3 resource ARNs match ``*`` across
``/`` (IAM user guide, "Amazon S3 resources": ARN wildcards)."""

MANAGED = "arn:aws:iam::aws:policy/"
"""Prefix of AWS managed policy ARNs."""


def _principal(services: tuple[str, ...]) -> str | list[str]:
    return services[0] if len(services) == 1 else list(services)


def service_trust(*services: str) -> Document:
    """Trust policy letting AWS services assume a role (``sts:AssumeRole``)."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": _principal(services)},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def pod_identity_trust() -> Document:
    """Trust policy of a role bound to a Kubernetes service account through EKS Pod Identity.

    EKS Pod Identity assumes the role as ``pods.eks.amazonaws.com`` and tags the session (namespace,
    service account, cluster), so both ``sts:AssumeRole`` and ``sts:TagSession`` are required
    (EKS User Guide, pod-id-role).
    """
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
            }
        ],
    }


def irsa_trust(oidc_provider_arn: str, issuer: str, namespace: str, service_account: str,
               also_services: tuple[str, ...] = ()) -> Document:
    """Trust policy for IAM roles for service accounts (IRSA): one service account of one cluster.

    ``issuer`` is the cluster's OIDC issuer URL (with or without ``https://``). ``also_services`` adds
    AWS services that may assume the role too (the HyperPod inference operator's role is also assumed by
    ``sagemaker.amazonaws.com``).
    """
    host = issuer.removeprefix("https://")
    statements: list[dict[str, Any]] = [
        {
            "Effect": "Allow",
            "Principal": {"Federated": oidc_provider_arn},
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    f"{host}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                    f"{host}:aud": "sts.amazonaws.com",
                }
            },
        }
    ]
    if also_services:
        statements.append({
            "Effect": "Allow",
            "Principal": {"Service": _principal(also_services)},
            "Action": "sts:AssumeRole",
        })
    return {"Version": VERSION, "Statement": statements}


def s3_read_only(bucket_arn: str, prefix: str = "") -> Document:
    """List the bucket and read its objects, or only those under ``prefix``: the model server's (and the mount's) only
    access; with ``prefix``, the HyperPod endpoint pod's node fill (its IRSA role), the scoped policy of SageMaker's
    NVMe page (sagemaker-hyperpod-model-deployment-deploy-nvme, "Scope IRSA IAM roles": ``s3:ListBucket`` on the
    bucket, ``s3:GetObject`` on ``BUCKET/PREFIX/*``). The listing carries no prefix condition: a HEAD of a missing key
    answers 404 only to a caller that may list (403 otherwise), and the copier tells a missing marker by it."""
    objects = f"{bucket_arn}/{prefix.strip('/')}/*" if prefix.strip("/") else f"{bucket_arn}/*"
    return {
        "Version": VERSION,
        "Statement": [
            {"Sid": "ListWeights", "Effect": "Allow", "Action": list(S3_READ_BUCKET_ACTIONS), "Resource": bucket_arn},
            {"Sid": "ReadWeights", "Effect": "Allow", "Action": list(S3_READ_OBJECT_ACTIONS), "Resource": objects},
        ],
    }


def s3_read_write(bucket_arn: str) -> Document:
    """The sync Job's access: upload the weights, delete nothing but the completion markers."""
    return {
        "Version": VERSION,
        "Statement": [
            {"Sid": "ListWeights", "Effect": "Allow", "Action": list(S3_WRITE_BUCKET_ACTIONS), "Resource": bucket_arn},
            {"Sid": "WriteWeights", "Effect": "Allow", "Action": list(S3_WRITE_OBJECT_ACTIONS), "Resource": f"{bucket_arn}/*"},
            {"Sid": "RetireMarkers", "Effect": "Allow", "Action": ["s3:DeleteObject"],
             "Resource": f"{bucket_arn}/{S3_WRITER_DELETES}"},
        ],
    }


def deny_insecure_transport(bucket_arn: str) -> Document:
    """Bucket policy refusing every request that is not over TLS."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


def tls_bucket_access(bucket_arn: str) -> Document:
    """The HyperPod inference operator's access to its TLS certificate bucket (SageMaker developer guide,
    model-deployment-setup: get, put, tag and delete certificate objects)."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "TlsCertificates",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging", "s3:DeleteObject"],
                "Resource": f"{bucket_arn}/*",
            },
            {"Sid": "TlsBucket", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": bucket_arn},
        ],
    }


def keda_operator() -> Document:
    """KEDA's read access to CloudWatch and Amazon Managed Prometheus metrics (the HyperPod inference
    add-on's autoscaler; SageMaker developer guide, model-deployment-setup)."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["cloudwatch:GetMetricData", "cloudwatch:GetMetricStatistics", "cloudwatch:ListMetrics"],
                "Resource": "*",
            },
            {
                "Effect": "Allow",
                "Action": ["aps:QueryMetrics", "aps:GetLabels", "aps:GetSeries", "aps:GetMetricMetadata"],
                "Resource": "*",
            },
        ],
    }


def amp_query(workspace_arn: str) -> Document:
    """Querying one Amazon Managed Service for Prometheus workspace, what KEDA's Prometheus scaler does with
    SigV4 (AMP user guide, "IAM permissions": ``aps:QueryMetrics`` on the workspace)."""
    return {
        "Version": VERSION,
        "Statement": [{"Effect": "Allow", "Action": ["aps:QueryMetrics"], "Resource": workspace_arn}],
    }


VENDOR = Path(__file__).parent / "vendor"
"""Upstream files read at run time, byte for byte (``vendor/SOURCES.md`` names each one's ref and sha256)."""


def load_balancer_controller_policy_file(version: str) -> Path:
    """kubernetes-sigs/aws-load-balancer-controller ``docs/install/iam_policy.json`` at tag ``version``, vendored."""
    return VENDOR / f"aws-load-balancer-controller-{version}-iam-policy.json"


def load_balancer_controller(version: str) -> Document:
    """The AWS Load Balancer Controller's own IAM policy, exactly as upstream publishes it for ``version`` (per-tag
    conditions included: the controller may only change load balancers and security groups it tagged). The version
    is the one the HyperPod inference add-on runs (``hyperpod.INFERENCE_ADDON_ALB_CONTROLLER``)."""
    document: Document = json.loads(load_balancer_controller_policy_file(version).read_text(encoding="utf-8"))
    return document


#: ENI actions a HyperPod instance performs in the customer's VPC (its interfaces live there while the instance
#: runs in a service account): awslabs/awsome-distributed-training 1.architectures/7.sagemaker-hyperpod-eks,
#: ``terraform-modules/hyperpod-eks-tf/modules/sagemaker_iam_role/main.tf`` (policies ExecutionRolePolicy,
#: Subnet_Policy, SG_Policy) and ``cfn-templates/nested-stacks/sagemaker-iam-role-stack.yaml``.
HYPERPOD_ENI_SCOPED_ACTIONS = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:UnassignPrivateIpAddresses",
)
"""Granted on the account's instances and interfaces in the region, the cluster's VPC, its subnets and its
security groups only (the Terraform module's scoping)."""
HYPERPOD_ENI_UNSCOPED_ACTIONS = (
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeVpcs",
    "ec2:DetachNetworkInterface",
)
"""Granted on ``*`` as both references do (Describe* take no resource; the module grants Detach on ``*``)."""


def hyperpod_instance_eni(*, partition: str, region: str, account: str, vpc_id: str, subnet_ids: list[str],
                          security_group_ids: list[str]) -> Document:
    """The HyperPod instance role's inline ENI policy, scoped where the reference Terraform module scopes it."""
    ec2 = f"arn:{partition}:ec2:{region}:{account}"
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "InterfacesInTheClusterVpc",
                "Effect": "Allow",
                "Action": list(HYPERPOD_ENI_SCOPED_ACTIONS),
                "Resource": [f"{ec2}:instance/*", f"{ec2}:network-interface/*", f"{ec2}:vpc/{vpc_id}",
                             *(f"{ec2}:subnet/{s}" for s in subnet_ids),
                             *(f"{ec2}:security-group/{g}" for g in security_group_ids)],
            },
            {"Sid": "DescribeNetwork", "Effect": "Allow", "Action": list(HYPERPOD_ENI_UNSCOPED_ACTIONS), "Resource": "*"},
            {"Sid": "TagInterfaces", "Effect": "Allow", "Action": "ec2:CreateTags",
             "Resource": f"arn:{partition}:ec2:*:*:network-interface/*"},
        ],
    }


#: What a key administrator may do and a key user may do, as terraform-aws-modules/kms writes its key policy
#: (``main.tf``, statements KeyAdministration and KeyUsage; KMS developer guide, key-policy-default). Administration
#: holds no cryptographic action: administering the key does not decrypt the cluster's Secrets.
KMS_KEY_ADMIN_ACTIONS = ("kms:Create*", "kms:Describe*", "kms:Enable*", "kms:List*", "kms:Put*", "kms:Update*",
                         "kms:Revoke*", "kms:Disable*", "kms:Get*", "kms:Delete*", "kms:TagResource",
                         "kms:UntagResource", "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion")
KMS_KEY_USER_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey")

#: What the EKS cluster role does with its Secrets key (terraform-aws-modules/eks ``main.tf``,
#: ``aws_iam_policy.cluster_encryption``).
EKS_CLUSTER_ENCRYPTION_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey")


def secrets_key_policy(cluster_role_arn: str, administrators: list[str] | None = None) -> Document:
    """Key policy of the key that envelope-encrypts an EKS cluster's Secrets: only the cluster role uses it; the
    ``administrators`` (default: the account, so that its IAM policies decide who, and the key never depends on
    one identity that may go away) administer it without being able to decrypt with it. ``ReplicateKey`` and
    ``ImportKeyMaterial`` are left out of terraform-aws-modules/kms's list: the key is single-region with KMS
    material."""
    partition, _, account = arn_parts(cluster_role_arn)
    admins = administrators or [f"arn:{partition}:iam::{account}:root"]
    return {
        "Version": VERSION,
        "Statement": [
            {"Sid": "KeyAdministration", "Effect": "Allow", "Principal": {"AWS": _principal(tuple(admins))},
             "Action": list(KMS_KEY_ADMIN_ACTIONS), "Resource": "*"},
            {"Sid": "KeyUsage", "Effect": "Allow", "Principal": {"AWS": cluster_role_arn},
             "Action": list(KMS_KEY_USER_ACTIONS), "Resource": "*"},
        ],
    }


def cluster_encryption(key_arn: str) -> Document:
    """The EKS cluster role's permission on its Secrets key (and nothing else)."""
    return {"Version": VERSION, "Statement": [
        {"Effect": "Allow", "Action": list(EKS_CLUSTER_ENCRYPTION_ACTIONS), "Resource": key_arn}]}


def arn_parts(arn: str) -> tuple[str, str, str]:
    """(partition, region, account) of an ARN such as ``arn:aws:eks:us-west-2:123456789012:cluster/k3``."""
    parts = arn.split(":")
    if len(parts) < 6 or parts[0] != "arn":
        raise ValueError(f"{arn!r} is not an ARN")
    return parts[1], parts[3], parts[4]


def actions_of(document: Document) -> set[str]:
    """Every action an ``Allow`` statement grants (for tests and reviews)."""
    out: set[str] = set()
    for st in document["Statement"]:
        if st["Effect"] != "Allow":
            continue
        acts = st["Action"]
        out.update([acts] if isinstance(acts, str) else acts)
    return out

"""IAM policy documents as plain data: trust policies and the least-privilege S3 policies.

Pure functions (no Pulumi) so that tests can read every action a role gets. Documents are dicts; callers
``json.dumps`` them (inside an ``apply`` when an ARN is an Output).
"""

from typing import Any

Document = dict[str, Any]

VERSION = "2012-10-17"

#: What the model server may do with the weight bucket: list it and read objects. Nothing else.
S3_READ_BUCKET_ACTIONS = ("s3:ListBucket",)
S3_READ_OBJECT_ACTIONS = ("s3:GetObject",)

#: What the sync Job may do: ``aws s3 sync`` without ``--delete`` lists, reads (to compare), writes and
#: cleans up its own multipart uploads. No DeleteObject, no bucket configuration.
S3_WRITE_BUCKET_ACTIONS = ("s3:ListBucket", "s3:ListBucketMultipartUploads")
S3_WRITE_OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")

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


def s3_read_only(bucket_arn: str) -> Document:
    """List the bucket and read its objects: the model server's (and the mount's) only access."""
    return {
        "Version": VERSION,
        "Statement": [
            {"Sid": "ListWeights", "Effect": "Allow", "Action": list(S3_READ_BUCKET_ACTIONS), "Resource": bucket_arn},
            {"Sid": "ReadWeights", "Effect": "Allow", "Action": list(S3_READ_OBJECT_ACTIONS), "Resource": f"{bucket_arn}/*"},
        ],
    }


def s3_read_write(bucket_arn: str) -> Document:
    """What ``aws s3 sync`` needs to upload the weights, without delete: the sync Job's access."""
    return {
        "Version": VERSION,
        "Statement": [
            {"Sid": "ListWeights", "Effect": "Allow", "Action": list(S3_WRITE_BUCKET_ACTIONS), "Resource": bucket_arn},
            {"Sid": "WriteWeights", "Effect": "Allow", "Action": list(S3_WRITE_OBJECT_ACTIONS), "Resource": f"{bucket_arn}/*"},
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


def load_balancer_controller() -> Document:
    """A condensed AWS Load Balancer Controller policy for the HyperPod inference add-on's ALB.

    The upstream ``iam_policy.json`` of kubernetes-sigs/aws-load-balancer-controller is the reference;
    this keeps its action families (load balancers, target groups, listeners and their tags; the security
    groups the controller creates; certificate and WAF/Shield lookups) without the per-tag conditions.
    """
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "ServiceLinkedRole",
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": "*",
                "Condition": {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
            },
            {
                "Sid": "Describe",
                "Effect": "Allow",
                "Action": [
                    "ec2:Describe*", "ec2:GetCoipPoolUsage", "ec2:GetSecurityGroupsForVpc",
                    "elasticloadbalancing:Describe*", "acm:ListCertificates", "acm:DescribeCertificate",
                    "cognito-idp:DescribeUserPoolClient", "wafv2:GetWebACL", "wafv2:GetWebACLForResource",
                    "shield:GetSubscriptionState", "shield:DescribeProtection", "tag:GetResources",
                ],
                "Resource": "*",
            },
            {
                "Sid": "SecurityGroups",
                "Effect": "Allow",
                "Action": [
                    "ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup", "ec2:AuthorizeSecurityGroupIngress",
                    "ec2:RevokeSecurityGroupIngress", "ec2:CreateTags", "ec2:DeleteTags",
                ],
                "Resource": "*",
            },
            {
                "Sid": "LoadBalancers",
                "Effect": "Allow",
                "Action": [
                    "elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:DeleteLoadBalancer",
                    "elasticloadbalancing:ModifyLoadBalancerAttributes", "elasticloadbalancing:SetSecurityGroups",
                    "elasticloadbalancing:SetSubnets", "elasticloadbalancing:SetIpAddressType",
                    "elasticloadbalancing:CreateTargetGroup", "elasticloadbalancing:DeleteTargetGroup",
                    "elasticloadbalancing:ModifyTargetGroup", "elasticloadbalancing:ModifyTargetGroupAttributes",
                    "elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets",
                    "elasticloadbalancing:CreateListener", "elasticloadbalancing:DeleteListener",
                    "elasticloadbalancing:ModifyListener", "elasticloadbalancing:CreateRule",
                    "elasticloadbalancing:DeleteRule", "elasticloadbalancing:ModifyRule",
                    "elasticloadbalancing:AddListenerCertificates", "elasticloadbalancing:RemoveListenerCertificates",
                    "elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags",
                    "wafv2:AssociateWebACL", "wafv2:DisassociateWebACL",
                    "shield:CreateProtection", "shield:DeleteProtection",
                ],
                "Resource": "*",
            },
        ],
    }


def actions_of(document: Document) -> set[str]:
    """Every action an ``Allow`` statement grants (for tests and reviews)."""
    out: set[str] = set()
    for st in document["Statement"]:
        if st["Effect"] != "Allow":
            continue
        acts = st["Action"]
        out.update([acts] if isinstance(acts, str) else acts)
    return out

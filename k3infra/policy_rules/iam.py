"""``least-privilege-iam``: IAM k3infra-style programs create is scoped: no ``*`` or ``service:*`` actions, no
object writes on ``*``, no owner/administrator/basic roles or administrator managed policies, nothing
granted to ``allUsers``. (AWS's own controller policies that need ``Resource: "*"`` for named control-plane
actions pass: the rule targets wildcards in actions and data writes.)

``role-permissions-before-use``: whatever takes an IAM role (a node group, an add-on, a pod identity association,
an EKS or HyperPod cluster) depends, directly or through others, on every policy attached to that role, so the
role's permissions exist before it is used and are removed only after it is gone (pulumi-aws ``eks.NodeGroup``:
"Ensure that IAM Role permissions are created before and deleted after EKS Node Group handling").
"""

import json
import re
from typing import Any, Iterator, Mapping, Sequence

from .base import Resource, as_list, get


BROAD_AWS_POLICIES = ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess", "AmazonS3FullAccess",
                      "AmazonEC2FullAccess", "AmazonSageMakerFullAccess")
"""AWS managed policies that grant a whole service (or everything)."""

BROAD_GCP_ROLES = ("roles/owner", "roles/editor", "roles/viewer", "roles/storage.admin", "roles/iam.securityAdmin",
                   "roles/resourcemanager.projectIamAdmin")
"""Basic roles, and roles that administer storage or IAM."""

PUBLIC_GCP_MEMBERS = ("allUsers", "allAuthenticatedUsers")

BROAD_AZURE_ROLES = {
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner",
    "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9": "User Access Administrator",
    "b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
}
"""Azure built-in roles that can grant access or own data."""

AZURE_CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"

_DATA_WRITES = re.compile(r"^(s3|oss):(Put|Delete|Abort|Restore|Copy)", re.I)


def _statements(document: Any) -> list[Mapping[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    if not isinstance(document, Mapping):
        return []
    statements = document.get("Statement") or []
    return [st for st in (statements if isinstance(statements, list) else [statements]) if isinstance(st, Mapping)]


def _strings(v: Any) -> list[str]:
    """IAM documents give one action, resource or member as a string and several as a list."""
    return [v] if isinstance(v, str) else [str(x) for x in as_list(v)]


def _policy_findings(label: str, document: Any) -> Iterator[str]:
    for st in _statements(document):
        if st.get("Effect", "Allow") != "Allow":
            continue
        actions, resources = _strings(st.get("Action")), _strings(st.get("Resource"))
        wide = [a for a in actions if a == "*" or a.endswith(":*")]
        if wide:
            yield f"{label} allows every action of a service ({', '.join(wide)}): name the actions it needs"
        writes = [a for a in actions if _DATA_WRITES.match(a)]
        if writes and "*" in resources:
            yield f"{label} allows {', '.join(writes)} on every resource: scope object writes to the weight bucket"


def check_least_privilege(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``least-privilege-iam``."""
    for r in resources:
        p = r.props
        if r.type in ("aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy", "alicloud:ram/policy:Policy"):
            document = get(p, "policy") or get(p, "policyDocument") or get(p, "document")
            for message in _policy_findings(r.name, document):
                yield message, r.urn
        elif r.type in ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:iam/policyAttachment:PolicyAttachment"):
            arn = str(get(p, "policyArn") or "")
            if arn.rsplit("/", 1)[-1] in BROAD_AWS_POLICIES:
                yield f"{r.name} attaches {arn}, which grants a whole service: attach a policy scoped to the task", r.urn
        elif r.type.startswith("gcp:") and "IAM" in r.type:
            role = str(get(p, "role") or "")
            members = _strings(get(p, "member")) + _strings(get(p, "members"))
            if role in BROAD_GCP_ROLES:
                yield f"{r.name} grants {role}: grant a predefined role scoped to the task", r.urn
            public = [m for m in members if m in PUBLIC_GCP_MEMBERS]
            if public:
                yield f"{r.name} grants {role} to {', '.join(public)}: that is anyone", r.urn
        elif r.type == "azure-native:authorization:RoleAssignment":
            role = str(get(p, "roleDefinitionId") or "").rsplit("/", 1)[-1].lower()
            scope = str(get(p, "scope") or "")
            if role in BROAD_AZURE_ROLES:
                yield f"{r.name} assigns {BROAD_AZURE_ROLES[role]}: assign a role scoped to the task", r.urn
            elif role == AZURE_CONTRIBUTOR and re.fullmatch(r"/subscriptions/[^/]+/?", scope):
                yield f"{r.name} assigns Contributor on a whole subscription: scope it to a resource group", r.urn


ROLE_TYPE = "aws:iam/role:Role"
ROLE_GRANT_TYPES = ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:iam/rolePolicy:RolePolicy",
                    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive",
                    "aws:iam/rolePoliciesExclusive:RolePoliciesExclusive")
"""What gives an IAM role its permissions: a grant belongs to the role it depends on."""
NOT_ROLE_USERS = ("aws:iam/", "aws:eks/accessEntry:AccessEntry", "aws:kms/", "aws:s3/bucketPolicy:BucketPolicy")
"""Type prefixes that name a role without acting with its permissions: IAM documents (a trust or ``iam:PassRole``
naming it), EKS access entries (which map the role to a Kubernetes user), and resource policies that grant it
something (a KMS key policy or grant, a bucket policy), which the role's own policies may in turn name."""


def _closure(urn: str, by_urn: Mapping[str, Resource], memo: dict[str, frozenset[str]]) -> frozenset[str]:
    """Every URN ``urn`` depends on, directly or through other resources."""
    if urn in memo:
        return memo[urn]
    memo[urn] = frozenset()  # a cycle (which the engine refuses anyway) ends here
    found: set[str] = set()
    for d in by_urn[urn].dependencies if urn in by_urn else ():
        found.add(d)
        found |= _closure(d, by_urn, memo)
    memo[urn] = frozenset(found)
    return memo[urn]


def check_role_permissions(resources: Sequence[Resource], _config: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """Rule ``role-permissions-before-use``: over the dependency graph, each resource that depends on a role
    depends on all of that role's grants."""
    by_urn = {r.urn: r for r in resources}
    roles = {r.urn: r for r in resources if r.type == ROLE_TYPE}
    grants: dict[str, list[Resource]] = {urn: [] for urn in roles}
    for r in resources:
        if r.type in ROLE_GRANT_TYPES:
            for d in r.dependencies:
                if d in grants:
                    grants[d].append(r)
    memo: dict[str, frozenset[str]] = {}
    for r in resources:
        if r.type.startswith(NOT_ROLE_USERS) or r.type.startswith("pulumi:"):
            continue
        for d in r.dependencies:
            if d not in roles:
                continue
            missing = sorted(g.name for g in grants[d] if g.urn not in _closure(r.urn, by_urn, memo))
            if missing:
                yield (f"{r.name} ({r.type}) uses IAM role {roles[d].name} but does not depend on its "
                       f"{', '.join(missing)}: it may be created before them (or they deleted first); depend on every "
                       "policy of the role"), r.urn

"""Both AWS stacks over their dependency graph: whatever uses an IAM role waits for that role's policies
(pulumi-aws ``eks.NodeGroup``: "Ensure that IAM Role permissions are created before and deleted after EKS Node
Group handling"), which the pack's ``role-permissions-before-use`` rule checks."""

import pytest

from k3infra import policy_rules as pr
from tests.ecosystem import policy_programs as pp
from tests.support import plan


@pytest.mark.parametrize("stack", ["aws-eks", "aws-hyperpod"])
def test_every_role_user_depends_on_the_roles_policies(stack: str) -> None:
    res = pp.resources(plan(stack).recording)
    assert list(pr.check_role_permissions(res, {})) == []
    # the rule did look: the node groups, add-ons, pod identities and clusters that take a role
    roles = {r.urn for r in res if r.type == pr.ROLE_TYPE}
    users = {r.name for r in res if roles & set(r.dependencies) and not r.type.startswith(pr.NOT_ROLE_USERS)}
    assert {"k3-eks", "k3-system", "k3-ebs-csi", "k3-weights-reader-identity"} <= users
    assert ("k3-gpu-nodes" in users) == (stack == "aws-eks")


@pytest.mark.parametrize("stack", ["aws-eks", "aws-hyperpod"])
def test_dropping_a_dependency_on_a_policy_is_caught(stack: str) -> None:
    """A planted mistake: the system node group without its role's attachments."""
    res = pp.resources(plan(stack).recording)
    grants = {r.urn for r in res if r.type in pr.ROLE_GRANT_TYPES}
    planted = [pr.Resource(r.type, r.name, r.urn, r.props, tuple(d for d in r.dependencies if d not in grants))
               if r.name == "k3-system" else r for r in res]
    (message,) = [m for m, _ in pr.check_role_permissions(planted, {})]
    assert message.startswith("k3-system (aws:eks/nodeGroup:NodeGroup) uses IAM role k3-node-role but does not depend "
                              "on its k3-node-cni, k3-node-ecr, k3-node-worker")

"""IAM roles handed on together with their permissions."""

from typing import Sequence

import pulumi
import pulumi_aws as aws


def granted_arn(role: aws.iam.Role, grants: Sequence[pulumi.Resource]) -> pulumi.Output[str]:
    """The role's ARN as an output that depends on ``grants`` (its policy attachments and inline policies).

    Whatever takes it (a node group, an add-on, a pod identity) is then created after the role's permissions exist
    and deleted before they are removed, without having to be told: pulumi-aws ``eks.NodeGroup`` ("Ensure that IAM
    Role permissions are created before and deleted after EKS Node Group handling"); the policy pack's
    ``role-permissions-before-use`` checks it over the whole graph.
    """
    return pulumi.Output.all(role.arn, *[g.urn for g in grants]).apply(lambda v: str(v[0]))

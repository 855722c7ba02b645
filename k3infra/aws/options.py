"""Resource-option helpers shared by the AWS components."""

from typing import Optional

import pulumi


def forwarded_depends_on(opts: Optional[pulumi.ResourceOptions]) -> list[pulumi.Resource]:
    """The resources a component was told to depend on.

    Pulumi does not pass a component's ``depends_on`` to its children; children that must wait (EKS
    add-ons whose pods need nodes) get these explicitly.
    """
    if opts is None or opts.depends_on is None:
        return []
    deps = opts.depends_on
    if isinstance(deps, pulumi.Resource):
        return [deps]
    if isinstance(deps, (list, tuple)):
        return [d for d in deps if isinstance(d, pulumi.Resource)]
    return []

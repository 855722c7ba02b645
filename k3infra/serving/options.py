"""Resource-option helpers shared by the serving components."""

from typing import Optional

import pulumi


def parent_depends_on(opts: Optional[pulumi.ResourceOptions]) -> list[pulumi.Resource]:
    """The resources a component was told to depend on, for its children.

    A child does not wait for its component's ``depends_on`` by itself; the components pass it on so that,
    e.g., the server's pods wait for the GPU pool and the weight sync, and everything waits for the namespace.
    """
    deps = opts.depends_on if opts is not None else None
    if deps is None:
        return []
    if isinstance(deps, pulumi.Resource):
        return [deps]
    if isinstance(deps, (list, tuple)):
        return [d for d in deps if isinstance(d, pulumi.Resource)]
    return []


def child_options(parent: pulumi.Resource, inherited: list[pulumi.Resource], *extra: pulumi.Resource,
                  **kwargs: object) -> pulumi.ResourceOptions:
    """Options of a component's child: parented, depending on what the component depends on (and ``extra``)."""
    return pulumi.ResourceOptions(parent=parent, depends_on=[*inherited, *extra], **kwargs)  # type: ignore[arg-type]

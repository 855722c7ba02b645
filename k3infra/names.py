"""Logical names of the resources a stack's deployment creates.

Pulumi identifies a resource by its logical name (in its URN), so these never derive from configuration:
renaming the cluster (``k3infra:cluster.name``, a physical name) must not replace everything. Every cloud uses
the same roles, so plans of different clouds read alike and ``k3infra diff`` lines up.
"""

PREFIX = "k3"
"""The stack's own resources: the cluster component, and serving (``serve(name=PREFIX)``)."""

GPU = f"{PREFIX}-gpu"
"""The GPU node pool component."""

WEIGHTS = f"{PREFIX}-weights"
"""The weight bucket component."""

ENDPOINT = f"{PREFIX}-endpoint"
"""A managed serving endpoint (HyperPod, PAI-EAS), which stands where serving's ModelServer would."""

"""The guardrails of the policy pack (``policies/``), as plain functions over resources.

A platform team enforces these on any program, whether it uses k3infra's components or not:

- ``gpu-pool-consumes-reservation``: a GPU pool on a reservation-only or quota-gated SKU (the catalog's
  ``capacity_types`` / ``quota_family``) consumes a named reservation; a pool that says it runs on reserved
  capacity (EKS ``CAPACITY_BLOCK``, a ``capacity-block`` launch template) names it.
- ``weight-bucket-private-encrypted``: buckets cannot be read anonymously and are encrypted at rest.
- ``public-endpoint-restricted``: a public LoadBalancer Service has allowed source CIDRs (not the whole
  internet) and the pods behind it require an API key.
- ``startup-budget-covers-load``: an inference server is not killed before its weights can have loaded: the
  start-up probe's budget (or the liveness probe's, without one) is at least the catalog's load estimate at the
  optimistic end of the loader's stated range plus the engine's warm-up. (The rule sees a manifest, not the
  machine: k3infra's own budgets come from the machine's NIC and the bucket's limits, catalog.loaders, which the
  rule cannot read; below the loader's fastest stated rate any budget kills every load.)
- ``nvl72-pool-within-rack``: a pool of an NVL72-rack SKU (A4X Max, ND GB300 v6) holds at most one rack's
  nodes (18), and on GKE is pinned to one reservation sub-block or a compact placement.
- ``least-privilege-iam``: IAM k3infra-style programs create is scoped: no ``*`` or ``service:*`` actions, no
  object writes on ``*``, no owner/administrator/basic roles or administrator managed policies, nothing
  granted to ``allUsers``. (AWS's own controller policies that need ``Resource: "*"`` for named control-plane
  actions pass: the rule targets wildcards in actions and data writes.)
- ``role-permissions-before-use``: whatever takes an IAM role (a node group, an add-on, a pod identity association,
  an EKS or HyperPod cluster) depends, directly or through others, on every policy attached to that role, so the
  role's permissions exist before it is used and are removed only after it is gone (pulumi-aws ``eks.NodeGroup``:
  "Ensure that IAM Role permissions are created before and deleted after EKS Node Group handling").
- ``capacity-purchase-flagged``: an EC2 Capacity Block purchase (non-refundable) or an Azure capacity
  reservation (billed from creation) is flagged (advisory: the stack asked for it explicitly).

Each rule sees :class:`Resource` values: built by ``policies/__main__.py`` from pulumi-policy's arguments,
and by the tests from the recording engine's registrations. Properties are the engine's camelCase names.
A rule returns violations; it never raises for a missing property.

One module per family of rules: ``reservations``, ``buckets``, ``endpoints``, ``startup``, ``racks``, ``iam``
(least privilege and role permissions), ``purchases``; ``base`` is what a rule sees and returns, ``workloads``
what the Kubernetes rules read of a workload.
"""

from typing import Any, Mapping, Sequence

from .base import UNKNOWN, Enforcement, Resource, Rule, Violation, get
from .buckets import check_buckets
from .endpoints import check_public_endpoints
from .iam import NOT_ROLE_USERS, ROLE_GRANT_TYPES, ROLE_TYPE, check_least_privilege, check_role_permissions
from .purchases import check_capacity_purchases
from .racks import check_rack_size, rack_skus
from .reservations import check_gpu_reservation, gated_skus
from .startup import check_startup_budget, probe_budget, servers_of
from .workloads import PodTemplate, pod_templates


RULES: tuple[Rule, ...] = (
    Rule("gpu-pool-consumes-reservation",
         "GPU pools on reservation-only or quota-gated SKUs consume a named reservation",
         Enforcement.MANDATORY, check_gpu_reservation,
         {"extraSkus": {"type": "array", "items": {"type": "string"},
                        "description": "More machine types that must consume a reservation (e.g. p6-b300.48xlarge)"}}),
    Rule("weight-bucket-private-encrypted",
         "Buckets (model weights) are not publicly readable and are encrypted at rest",
         Enforcement.MANDATORY, check_buckets),
    Rule("public-endpoint-restricted",
         "A public inference endpoint has allowed source CIDRs and requires an API key",
         Enforcement.MANDATORY, check_public_endpoints,
         {"allowedGateways": {"type": "array", "items": {"type": "string"},
                              "description": "Public Gateways (metadata.name) whose clients a cloud policy restricts"}}),
    Rule("startup-budget-covers-load",
         "An inference server's start-up probe budget covers the estimated weight load plus warm-up",
         Enforcement.MANDATORY, check_startup_budget),
    Rule("nvl72-pool-within-rack",
         "A pool of an NVL72-rack SKU (A4X Max, ND GB300 v6) stays within one rack and is pinned to it",
         Enforcement.MANDATORY, check_rack_size),
    Rule("least-privilege-iam",
         "Identities get scoped permissions: no service-wide actions, no object writes on every resource, no "
         "owner, admin or basic roles, nothing granted to the public",
         Enforcement.MANDATORY, check_least_privilege),
    Rule("role-permissions-before-use",
         "Whatever uses an IAM role depends on every policy attached to the role (created before, deleted after)",
         Enforcement.MANDATORY, check_role_permissions),
    Rule("capacity-purchase-flagged",
         "Purchases of GPU capacity that cannot be undone (EC2 Capacity Blocks, Azure capacity reservations)",
         Enforcement.ADVISORY, check_capacity_purchases),
)
"""Every policy of the pack, in the order ``pulumi preview`` reports them."""


def evaluate(resources: Sequence[Resource], config: Mapping[str, Mapping[str, Any]] | None = None,
             rules: Sequence[Rule] = RULES) -> list[Violation]:
    """Run ``rules`` over ``resources``; ``config`` maps a policy name to its configuration."""
    out: list[Violation] = []
    for rule in rules:
        for message, urn in rule.check(resources, (config or {}).get(rule.name, {})):
            out.append(Violation(rule.name, message, urn))
    return out


__all__ = ["NOT_ROLE_USERS", "ROLE_GRANT_TYPES", "ROLE_TYPE", "RULES", "UNKNOWN", "Enforcement", "PodTemplate",
           "Resource", "Rule", "Violation", "check_buckets", "check_capacity_purchases", "check_gpu_reservation",
           "check_least_privilege", "check_public_endpoints", "check_rack_size", "check_role_permissions",
           "check_startup_budget", "evaluate", "gated_skus", "get", "pod_templates", "probe_budget", "rack_skus",
           "servers_of"]

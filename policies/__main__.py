"""The k3infra policy pack: the rules of ``k3infra/policy_rules/`` as pulumi-policy policies.

Each rule checks the whole stack (several rules relate resources: a bucket and its public-access block, a
Service and the pods it selects), so each becomes a ``StackValidationPolicy``. ``pulumi preview
--policy-pack policies`` runs this file; the tests import :func:`policies` without starting the pack.
"""

import sys
from pathlib import Path
from typing import Any

from pulumi_policy import proxy
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

# From a checkout, the rules are importable without installing k3infra into the pack's virtualenv.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from k3infra import policy_rules  # noqa: E402

PACK_NAME = "k3infra-guardrails"

LEVELS = {
    policy_rules.Enforcement.MANDATORY: EnforcementLevel.MANDATORY,
    policy_rules.Enforcement.ADVISORY: EnforcementLevel.ADVISORY,
}


UNKNOWN_SENTINELS = {proxy.UNKNOWN_BOOLEAN_VALUE, proxy.UNKNOWN_NUMBER_VALUE, proxy.UNKNOWN_STRING_VALUE,
                     proxy.UNKNOWN_ARRAY_VALUE, proxy.UNKNOWN_ASSET_VALUE, proxy.UNKNOWN_ARCHIVE_VALUE,
                     proxy.UNKNOWN_OBJECT_VALUE}


def plain(value: Any) -> Any:
    """Props as plain dicts and lists, values unknown until apply as ``policy_rules.UNKNOWN``: pulumi-policy's
    proxies raise on an unknown value, which would abort a stack policy for every resource at once."""
    if isinstance(value, str) and value in UNKNOWN_SENTINELS:
        return policy_rules.UNKNOWN
    if isinstance(value, (proxy._DictProxy, proxy._ListProxy)):  # noqa: SLF001 - the raw target
        value = value["__target"]
    if isinstance(value, dict) or hasattr(value, "items"):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def resource_of(r: PolicyResource) -> policy_rules.Resource:
    """What a rule sees of a pulumi-policy resource."""
    deps = {d.urn for d in r.dependencies}
    for ds in r.property_dependencies.values():
        deps |= {d.urn for d in ds}
    return policy_rules.Resource(type=r.resource_type, name=r.name, urn=r.urn, props=plain(r.props),
                                 dependencies=tuple(sorted(deps)))


def _validate(rule: policy_rules.Rule) -> Any:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [resource_of(r) for r in args.resources]
        for message, urn in rule.check(resources, args.get_config()):
            report_violation(message, urn)

    return validate


def policies() -> list[StackValidationPolicy]:
    """One pulumi-policy policy per rule."""
    return [
        StackValidationPolicy(
            name=rule.name,
            description=rule.description,
            validate=_validate(rule),
            enforcement_level=LEVELS[rule.enforcement],
            config_schema=PolicyConfigSchema(properties=dict(rule.config_schema)) if rule.config_schema else None,
        )
        for rule in policy_rules.RULES
    ]


if __name__ == "__main__":
    PolicyPack(name=PACK_NAME, policies=list(policies()), enforcement_level=EnforcementLevel.MANDATORY)

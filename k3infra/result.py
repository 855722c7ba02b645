"""What a cloud's deployment hands back to the program."""

from dataclasses import dataclass, field
from typing import Any, Mapping

import pulumi


@dataclass(frozen=True)
class DeploymentResult:
    """Stack outputs a cloud's ``deploy(cfg)`` produces, and what the program should tell the user."""

    outputs: Mapping[str, pulumi.Input[Any]] = field(default_factory=dict)
    """Exported as stack outputs (endpoint, kubeconfig as a secret, bucket URI, capacity in use...)."""
    warnings: tuple[str, ...] = ()
    billing_after_destroy: tuple[str, ...] = ()
    """What keeps billing after `pulumi destroy` (reservations, retained buckets, quota contracts)."""

"""Cloud-specific configuration rules, one module per cloud, run after the cloud-neutral checks.

Each module defines ``check(ctx, p, warnings)``. A rule that needs a value another check rejected sees
None for it and stays silent, so one mistake is reported once.
"""

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...catalog import Accelerator, Cloud, Engine, Model, Platform
from ...sizing import Sizing
from ..model import CapacityConfig, ClusterConfig, EndpointConfig, WeightsConfig
from ..problems import Problems


@dataclass(frozen=True)
class CheckContext:
    """What the cloud-neutral checks accepted (None where they found a problem)."""

    values: Mapping[str, Any]
    """Every ``k3infra`` key after type checks (defaults filled; MISSING where a type check failed)."""
    raw: Mapping[str, Any]
    """The raw configuration, provider keys included."""
    cloud: Cloud
    platform: Platform | None
    region: str | None
    zone: str | None
    accelerator: Accelerator | None
    model: Model | None
    engine: Engine | None
    sizing: Sizing | None
    capacity: CapacityConfig | None
    weights: WeightsConfig | None
    endpoint: EndpointConfig | None
    cluster: ClusterConfig | None = None


Check = Callable[[CheckContext, Problems, list[str]], None]


def checks() -> dict[Cloud, Check]:
    """The check of each cloud."""
    from . import alicloud, aws, azure, gcp

    return {Cloud.GCP: gcp.check, Cloud.AWS: aws.check, Cloud.AZURE: azure.check, Cloud.ALICLOUD: alicloud.check}


def given(ctx: CheckContext, section: str, key: str) -> bool:
    """Whether the stack itself sets ``k3infra:SECTION.KEY`` (not a default filled in by the schema)."""
    raw = ctx.raw.get(f"k3infra:{section}")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return False
    return isinstance(raw, dict) and raw.get(key) is not None


def window_text(window: Any) -> str:
    """``Sundays 02:00 UTC for 4 h`` for a ``maintenanceWindow`` value."""
    if isinstance(window, dict) and all(isinstance(window.get(k), (str, int)) for k in ("day", "startTime",
                                                                                           "durationHours")):
        return f"{window['day']}s {window['startTime']} UTC for {window['durationHours']} h"
    return "the maintenance window"

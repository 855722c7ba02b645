"""What every cloud's configuration rules share: the context the cloud-neutral checks hand them, and the rules more
than one cloud keeps (a managed control plane's access, a maintenance window's text)."""

import ipaddress
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ...catalog import Accelerator, Cloud, Engine, Model, Platform
from ...sizing import Sizing
from ..model import CapacityConfig, ClusterConfig, EndpointConfig, MaintenanceWindow, WeightsConfig
from ..naming import cidr_problem
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


def maintenance_window(w: dict[str, Any]) -> MaintenanceWindow:
    """A ``maintenanceWindow`` value (AKS, ACK) as typed settings."""
    return MaintenanceWindow(day=w["day"], start_time=w["startTime"], duration_hours=w["durationHours"])



OPEN_TO_EVERY_ADDRESS = "0.0.0.0/0"
"""The CIDR a stack lists to open a control plane to the internet on purpose."""

DOCUMENTATION_RANGES = ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
"""TEST-NET-1, -2 and -3 (RFC 5737 §3: "for use in documentation"; "MUST NOT be used" on the internet). No deployer
connects from them: a control plane limited to one answers nobody, so the first `pulumi up` would create the (billed)
cluster and then fail at its first Kubernetes object."""

EXAMPLE_CIDR = "A.B.C.D/32"
"""How messages show a CIDR to list: the deployer's own egress address (no real or documentation range)."""


def documentation_range(cidr: str) -> str | None:
    """The RFC 5737 range ``cidr`` lies in, or None (``cidr`` is a well-formed IPv4 network; 0.0.0.0/0 holds them
    but is not one)."""
    net = ipaddress.IPv4Network(cidr)
    return next((r for r in DOCUMENTATION_RANGES if net.subnet_of(ipaddress.IPv4Network(r))), None)


def control_plane_access(p: Problems, warnings: list[str], *, plane: str, cidrs_key: str, cidrs: Sequence[str] | None,
                         private_key: str, private: bool) -> None:
    """The rule every managed Kubernetes control plane follows (GKE, EKS, AKS; ACK keeps its API server on the
    VPC unless alicloud.publicApiServer): it is private, or limited to CIDRs the stack states, each a well-formed
    IPv4 network. A stack with neither is a configuration problem naming both keys; an explicit 0.0.0.0/0 opens
    it on purpose, with a warning. Neither is a problem for a real run only (``Problems.add_before_up``).

    ``cidrs_key`` and ``private_key`` are the keys under ``k3infra:`` (``gcp.authorizedNetworks``...); ``cidrs`` is
    what the stack lists (None when unset), ``private`` whether it asks for the private endpoint."""
    key = f"k3infra:{cidrs_key}"
    for i, cidr in enumerate(cidrs or ()):
        why = cidr_problem(cidr)
        if why:
            p.add(f"{key}[{i}]", f"is not a network address: {why}", cidr,
                  f"an IPv4 network such as {EXAMPLE_CIDR} (your egress address)")
        elif documentation_range(cidr):
            p.add(f"{key}[{i}]", f"is in the documentation range {documentation_range(cidr)} (RFC 5737), which no "
                  f"deployer connects from: the {plane} would answer nobody, and the first `pulumi up` would create "
                  "the cluster and then fail to reach it", cidr,
                  f"the CIDRs `pulumi up` and kubectl connect from ({EXAMPLE_CIDR}); or {private_key}: true; or "
                  f"[{OPEN_TO_EVERY_ADDRESS}]")
    if any(k == key or k.startswith(key + "[") for k in p.keys()):
        return  # the list is wrong already: one mistake, one problem
    if OPEN_TO_EVERY_ADDRESS in (cidrs or ()):
        warnings.append(f"{cidrs_key} lists {OPEN_TO_EVERY_ADDRESS}: the {plane} answers every internet address "
                        "(callers still need the cluster's credentials)")
    if cidrs or private:
        return
    # The stack templates leave it unset (only the deployer knows the address `pulumi up` runs from): the offline
    # plan warns, a real run stops before anything is created, so nothing billed starts open or unreachable.
    p.add_before_up(key, f"is not set: the {plane} would answer every internet address; a control plane is private "
                    "or limited to the CIDRs the stack states", cidrs,
                    f"the CIDRs `pulumi up` and kubectl connect from, such as [{EXAMPLE_CIDR}]; or {private_key}: "
                    f"true; or [{OPEN_TO_EVERY_ADDRESS}] to open it to every address on purpose")

"""Address plans for the VPCs k3infra creates on Alibaba Cloud (pure functions)."""

import ipaddress

VSWITCH_MIN_PREFIX = 16
"""Alibaba Cloud vSwitch CIDRs are /16 to /29."""

SERVICE_CIDRS = ("192.168.0.0/16", "172.21.0.0/20")
"""Kubernetes service CIDR candidates (ACK's documented examples); the first that does not overlap the VPC wins."""


def vswitch_cidrs(vpc_cidr: str, count: int) -> list[str]:
    """The first ``count`` vSwitch CIDRs carved from ``vpc_cidr``: each a quarter of the VPC, at most a /16.

    10.0.0.0/8 gives 10.0.0.0/16, 10.1.0.0/16, ...; 192.168.0.0/16 gives 192.168.0.0/18, 192.168.64.0/18, ...
    """
    net = ipaddress.IPv4Network(vpc_cidr)
    prefix = max(VSWITCH_MIN_PREFIX, net.prefixlen + 2)
    if prefix > 29:
        raise ValueError(f"{vpc_cidr} is too small to hold {count} vSwitches")
    subnets = net.subnets(new_prefix=prefix)
    out = [str(next(subnets)) for _ in range(count)]
    return out


def service_cidr(vpc_cidr: str) -> str:
    """A Kubernetes service CIDR that does not overlap the VPC (ACK requires that)."""
    net = ipaddress.IPv4Network(vpc_cidr)
    for candidate in SERVICE_CIDRS:
        if not net.overlaps(ipaddress.IPv4Network(candidate)):
            return candidate
    raise ValueError(f"no service CIDR among {', '.join(SERVICE_CIDRS)} stays clear of the VPC {vpc_cidr}")

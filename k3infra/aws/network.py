"""The VPC layout of an EKS cluster for GPU capacity in one availability zone (pure functions).

EKS needs subnets in two availability zones for its control plane; the GPU capacity (a Capacity Block
or a training plan) lives in exactly one. So the VPC gets a private subnet in the capacity's zone (GPU
nodes, HyperPod instances, the system pool) and one in a second zone (the control plane's second leg and
the rest of the system pool), plus a small public subnet in each for the NAT gateway and public load
balancers. Private subnets take a quarter of the VPC each: every pod takes a VPC address with the VPC
CNI, and HyperPod instances take many.
"""

import ipaddress
from dataclasses import dataclass

MAX_VPC_PREFIX = 20
"""Smallest VPC k3infra lays out (/20: private subnets of /22, 1,019 usable addresses each)."""


@dataclass(frozen=True)
class SubnetPlan:
    """CIDRs of the four subnets."""

    private_capacity: str
    """Private subnet in the capacity's zone."""
    private_other: str
    """Private subnet in the second zone."""
    public_capacity: str
    """Public subnet in the capacity's zone (NAT gateway)."""
    public_other: str


def subnet_plan(vpc_cidr: str) -> SubnetPlan:
    """Split ``vpc_cidr``: two private quarters, then two public /(prefix+6) blocks from the third quarter."""
    net = ipaddress.IPv4Network(vpc_cidr, strict=True)
    if net.prefixlen > MAX_VPC_PREFIX:
        raise ValueError(f"{vpc_cidr} is smaller than /{MAX_VPC_PREFIX}")
    quarters = list(net.subnets(prefixlen_diff=2))
    public = list(quarters[2].subnets(new_prefix=min(net.prefixlen + 8, 28)))
    return SubnetPlan(
        private_capacity=str(quarters[0]),
        private_other=str(quarters[1]),
        public_capacity=str(public[0]),
        public_other=str(public[1]),
    )


def other_zone(zone: str, available: list[str]) -> str:
    """The second zone: the first available zone of the region that is not ``zone``."""
    for z in sorted(available):
        if z != zone:
            return z
    raise ValueError(f"the region offers no availability zone besides {zone}")

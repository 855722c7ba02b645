"""What the weight bucket takes in and serves, as the stack states it or as the catalog has it, and the time bytes
take at a rate."""

import math

from ..catalog import Cloud, loaders
from ..catalog.transfer import Gbps, bucket_ingress


def seconds_for(nbytes: float, gbps: float) -> int:
    """Whole seconds ``nbytes`` take at ``gbps`` (decimal gigabits per second), rounded up."""
    return math.ceil(nbytes * 8 / (gbps * 1e9))


EGRESS_KEY = "k3infra:weights.bucketEgressGbps"
"""The setting that states what the bucket serves to the loaders."""
INGRESS_KEY = "k3infra:weights.bucketIngressGbps"
"""The setting that states what the bucket takes in from the sync."""


def _stated(key: str, gbps: float) -> Gbps:
    return Gbps(gbps, gbps, f"stack setting: {key} {gbps:g} Gbps")


def load_egress(cloud: Cloud, region: str | None, stated: float | None) -> Gbps:
    """What the bucket serves to the loaders: the stack's stated figure, else the catalog's (loaders.storage_egress)."""
    return _stated(EGRESS_KEY, stated) if stated is not None else loaders.storage_egress(cloud, region)


def sync_ingress(cloud: Cloud, region: str | None, stated: float | None) -> Gbps:
    """What the bucket takes in from the sync: the stack's stated figure, else the catalog's (bucket_ingress)."""
    return _stated(INGRESS_KEY, stated) if stated is not None else bucket_ingress(cloud, region)


def egress_term(gbps: float, nodes: int, stated: bool) -> str:
    """The load rate's term for a node's share of the bucket's egress, naming the setting where the stack states it."""
    return f"its share of the bucket's egress: {gbps:g} Gbps / {nodes} node(s)" + (f" ({EGRESS_KEY})" if stated else "")


def ingress_term(gbps: float, stated: bool) -> str:
    """The sync rate's term for the bucket's ingress, naming the setting where the stack states it."""
    return f"bucket ingress {gbps:g} Gbps" + (f" ({INGRESS_KEY})" if stated else "")


def stated_bucket_warnings(cloud: Cloud, region: str | None, ingress_gbps: float | None,
                           egress_gbps: float | None) -> tuple[str, ...]:
    """A stated bucket figure above the catalog's is trusted, and the budgets that follow from it say so."""
    where = f", {region}" if region else ""
    return tuple(
        f"{key.removeprefix('k3infra:')} {stated:g} is above the catalog's {catalog.low:g} Gbps ({cloud}{where}): "
        f"{what} trust it, so a bucket that carries less fails them; state only what the provider "
        "granted the account or the store was measured to carry"
        for key, stated, catalog, what in (
            (INGRESS_KEY, ingress_gbps, bucket_ingress(cloud, region), "the sync estimate and its Job's timeout"),
            (EGRESS_KEY, egress_gbps, loaders.storage_egress(cloud, region),
             "the load estimate and the start-up probe's budget"))
        if stated is not None and stated > catalog.low)
